"""The latent difficulty model's kernels (``cpp/include/capfront/debias.hpp``,
``debias_classes.hpp``): NumPy references beside the Numba ports
(:mod:`capfront._numba_debias`) and the C++ bindings, all three with the same
arguments and results (see :mod:`capfront.debias.latent` for the model).

Kernels (``table`` is ``T[l, k, row, j] = log h(row, theta[l, k] - D_j)``, shaped
``(L, K, R, J)``; ``cell_row`` ``(N, L)`` table rows, ``-1``: no draws, in any
signed integer dtype (the fits keep the smallest that holds them; C++ reads
int8/int16/int32/int64 in place, Numba widens each call's to int64);
``topic`` ``(N,)`` int64 theta columns; ``log_w`` ``(J,)`` the log prior):

- ``pgm_estep(table, cell_row, topic, log_w, resp, ll_out=None) -> ll``: fills
  ``resp[n, j]``, prompt ``n``'s posterior of ``d = D_j``
  (``~ w_j prod_l h(row, eta)``; entries below 1e-12 set to 0), and, if given,
  ``ll_out[n]`` its log marginal likelihood; returns their sum.
- ``pgm_stats(resp, cell_row, topic, n_topics, n_rows) -> C (L, K, R, J)``: the
  M-step statistics ``C[l, topic[n], cell_row[n, l], j] += resp[n, j]``.
- ``pgm_estep_stats(table, cell_row, topic, log_w, resp, n_topics, n_rows) ->
  (ll, C)``: both in one pass (C++: fused, in blocks of :func:`block_rows`
  prompts; NumPy and Numba: the two kernels above, block by block, with the
  fused kernel's weights: the same bits).
- ``pgm_mstep_scores(C3, logh, cand) -> (LK, n_cand)``: per (model, topic) row
  ``sum_{r, j} C3[a, r, j] logh[r, cand[j, c]]``, the expected complete
  log-likelihood of candidate ``theta_c``; ``pgm_mstep_scores_window(C3, logh,
  cand, lo, width)`` the same on candidates ``lo[a] .. lo[a] + width - 1``
  (NumPy: :func:`pgm_mstep_scores_window_np`, on the non-zero statistics in
  the C++ kernel's order; Numba: its full scores' window).
- ``pgm_emax(resp, ..., edge_loglik, t_df=3) -> (E[max], E[max^2], E[p] (N,
  L))``: the posterior maximum (arguments as :func:`pgm_emax_np`; ``t_df`` the
  Student t's degrees of freedom).
- ``pgm_class_estep(table, cell_row, topic, n_classes, log_w, log_pi, prev_r,
  sparse_r, keep_r, block_rows, stats, want_resp, want_ll) -> (ll, r, C, wsum,
  resp, ll_pair)``: the latent-class E-step over (prompt, class) pairs (pair
  ``(n, k)`` uses theta column ``topic[n] K + k``): each pair's E-step, the class
  responsibilities ``r[n, k] ~ pi[topic[n], k] exp(ll_pair)``, ``ll`` the sum of
  their log normalisers; pairs with ``prev_r < sparse_r`` are skipped (``r = 0``,
  ``ll_pair = -inf``, ``resp = 0``); with ``stats`` the M-step statistics of the
  ``r``-weighted pair posteriors of pairs with ``r > keep_r`` and
  ``wsum = sum_{n, k} r resp``, else ``None``; ``resp`` ``(N K, J)`` and
  ``ll_pair`` ``(N K,)`` only when asked. C++: one fused pass storing no pair
  posteriors; NumPy and Numba: composed from their one-class E-step and
  statistics kernels.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import expit, logsumexp

from .._backend import core
from .._numba_debias import (
    LOGIT_T_DF,
    block_ordered_sum,
    pgm_emax_nb,
    pgm_estep_nb,
    pgm_mstep_scores_nb,
    pgm_stats_nb,
)
from . import Kernel, register

# the fused kernels' per-block partial statistics stay below this many doubles
PARTIAL_MAX = 1 << 25


def block_rows(N: int, n_stats: int) -> int:
    """Prompts per block of the fused E-step kernels: a function of the data's
    shape only (not of the thread count), so that their block-ordered sums are
    thread-count independent; at most 16 blocks, and few enough that the blocks'
    partial statistics (``n_stats`` doubles each) stay below ``PARTIAL_MAX``."""
    n_blocks = max(1, min(16, PARTIAL_MAX // max(int(n_stats), 1)))
    return max(4096, -(-int(N) // n_blocks))


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # einsum's own loop, not BLAS: OpenBLAS threads stall badly on a loaded machine
    return np.einsum("ij,jk->ik", a, b, optimize=False)


def log_mixing(
    family: int,
    scale: float,
    eta: np.ndarray,
    t_grid: np.ndarray,
    t_df: float = LOGIT_T_DF,
) -> np.ndarray:
    """``log m(t | eta)`` on ``t_grid`` up to a constant, ``(len(eta), n_t)``:
    family 0 ``N(eta, scale^2)``, 1 ``Beta(q c, (1 - q) c)`` in ``p = sigma(t)``
    (``q = sigma(eta)``, ``c = (1 - scale) / scale``), 2 ``eta + scale t_nu``
    (Student t, ``nu = t_df``): ``-(nu + 1) / 2 log(1 + (t - eta)^2 / (nu
    scale^2))``."""
    t = np.asarray(t_grid)[None, :]
    eta = np.asarray(eta, dtype=np.float64)[:, None]
    if family == 0:
        return -0.5 * ((t - eta) / scale) ** 2
    if family == 2:
        nu = float(t_df)
        return -0.5 * (nu + 1.0) * np.log1p(((t - eta) / scale) ** 2 / nu)
    c = (1.0 - scale) / scale
    q = expit(eta)
    return q * c * (-np.logaddexp(0, -t)) + (1 - q) * c * (-np.logaddexp(0, t))


# ------------------------------------------------------------------ NumPy references
def pgm_mstep_scores_window_np(C3, logh, cand, lo, width) -> np.ndarray:
    """The windowed M-step scores on the non-zero statistics only (as the C++
    kernel skips the zero ones, in its order: rows, then grid points): ``O(nnz
    width)`` instead of every candidate on every row and grid point."""
    LK = C3.shape[0]
    width = int(width)
    out = np.empty((LK, width))
    for a in range(LK):
        r, j = np.nonzero(C3[a])  # (row-major: the C++ kernel's order)
        cols = cand[j][:, int(lo[a]) : int(lo[a]) + width]  # (nnz, width)
        vals = logh[r[:, None], cols]
        out[a] = _matmul(C3[a][r, j][None, :], vals)[0]
    return out


def pgm_estep_np(
    table, cell_row, topic, log_w, resp, ll_out=None, fused=False
) -> float:
    """Sums in the C++ kernel's order (so that the backends agree bit for bit):
    ``log_w`` plus the cells in model order, the normaliser over ``j`` in order
    (``cumsum``, not NumPy's pairwise ``sum``), the prompts' terms in order
    within blocks and the blocks in order (:func:`block_ordered_sum`).
    ``fused``: the weights as the C++ fused E-step and statistics kernel makes
    them."""
    N, L = cell_row.shape
    J = len(log_w)
    lln_all = np.empty(N) if ll_out is None else ll_out
    for start in range(0, N, 4096):
        sl = slice(start, start + 4096)
        rows = cell_row[sl]
        tk = topic[sl]
        logpost = np.repeat(log_w[None, :], rows.shape[0], axis=0)
        for l in range(L):  # (a missing cell adds 0.0: exact)
            v = table[l, tk, np.maximum(rows[:, l], 0)]  # (n, J)
            logpost += np.where((rows[:, l] >= 0)[:, None], v, 0.0)
        mx = logpost.max(axis=1, keepdims=True)
        v = logpost - mx
        if fused:  # as the C++ fused E-step: no exp below -30, one reciprocal
            e = np.where(v < -30.0, 0.0, np.exp(np.maximum(v, -30.0)))
            tot = np.cumsum(e, axis=1)[:, J - 1 :]
            r = e * (1.0 / tot)
        else:
            e = np.exp(v)
            tot = np.cumsum(e, axis=1)[:, J - 1 :]
            r = e / tot
        resp[sl] = np.where(r < 1e-12, 0.0, r)  # as the C++ kernel
        lln_all[sl] = mx[:, 0] + np.log(tot[:, 0])
    return block_ordered_sum(lln_all)


def pgm_stats_np(resp, cell_row, topic, n_topics, n_rows) -> np.ndarray:
    N, L = cell_row.shape
    C = np.zeros((L, n_topics, n_rows, resp.shape[1]))
    for l in range(L):
        ok = cell_row[:, l] >= 0
        np.add.at(C[l], (topic[ok], cell_row[ok, l]), resp[ok])
    return C


def pgm_mstep_scores_np(C3, logh, cand) -> np.ndarray:
    LK = C3.shape[0]
    A = logh[:, cand].reshape(-1, cand.shape[1])  # (R*J, n_cand)
    return _matmul(C3.reshape(LK, -1), A)


def pgm_emax_np(
    resp, cell_row, topic, theta, d_grid, loglik, t_grid, family, scale, cut, w1,
    w2, min_resp, eps, tails, edge_loglik, t_df=LOGIT_T_DF,
):  # fmt: skip
    """Reference: per prompt and active difficulty point, every cell's posterior on
    the full t grid in log space (plus the atoms at ``p = 0`` and ``p = 1`` that
    hold the cell effect's mass beyond the grid), its CDF at the nodes, the
    trapezoid of ``1 - prod_l F_l`` (``t_df``: the Student t's degrees of
    freedom, family 2)."""
    N, L = cell_row.shape
    p_t = expit(t_grid)
    emax = np.empty(N)
    emax2 = np.empty(N)
    pmean = np.zeros((N, L))
    for n in range(N):
        k = topic[n]
        obs = np.flatnonzero(cell_row[n] >= 0)
        rows = cell_row[n, obs]
        active = np.flatnonzero(resp[n] >= min_resp)
        r = resp[n, active]
        s1 = np.empty(len(active))
        s2 = np.empty(len(active))
        for i, j in enumerate(active):
            eta = theta[obs, k] - d_grid[j]
            if not scale > 0:
                sig = expit(eta)
                s1[i], s2[i] = sig.max(), sig.max() ** 2
                pmean[n, obs] += r[i] * sig
                continue
            lm = log_mixing(family, scale, eta, t_grid, t_df)  # (Lo, T)
            down, up, inside = tails[obs, k, j].T
            with np.errstate(divide="ignore"):
                # density scaled to the mass inside; atoms in the same units
                lz = logsumexp(lm, axis=1) - np.log(
                    np.where(inside > 1e-300, inside, 1)
                )
                lz = np.where(inside > 1e-300, lz, 0.0)
                lm = np.where((inside > 1e-300)[:, None], lm, -np.inf)
                la_lo = edge_loglik[rows, 0] + np.log(down) + lz
                la_hi = edge_loglik[rows, 1] + np.log(up) + lz
            lw = loglik[rows] + lm
            mx = np.maximum(lw.max(axis=1), np.maximum(la_lo, la_hi))
            w = np.exp(lw - mx[:, None])
            a_lo, a_hi = np.exp(la_lo - mx), np.exp(la_hi - mx)
            tot = w.sum(axis=1) + a_lo + a_hi
            cum = np.concatenate([np.zeros((len(obs), 1)), np.cumsum(w, axis=1)], 1)
            cum += a_lo[:, None]  # (the atom at p = 1: F(1-) at the node x = 1)
            wp = np.pad(w, ((0, 0), (1, 1)))  # wp[:, i + 1] = w[:, i], 0 outside
            # partial sums with the end correction (w[cut] - w[cut - 1]) / 24
            corr = (wp[:, cut + 1] - wp[:, cut]) / 24.0
            F = np.clip((cum[:, cut] + corr) / tot[:, None], 0.0, 1.0)
            tail = 1.0 - F.prod(axis=0)
            s1[i] = tail @ w1
            s2[i] = tail @ w2
            pmean[n, obs] += r[i] * (w @ p_t + a_hi) / tot
        emax[n] = (r @ s1) / r.sum()
        emax2[n] = (r @ s2) / r.sum()
        pmean[n] /= r.sum()
    return emax, emax2, pmean


# ------------------------------------------------------------------ C++ bindings
def pgm_estep_cpp(table, cell_row, topic, log_w, resp, ll_out=None) -> float:
    return float(core().pgm_estep(table, cell_row, topic, log_w, resp, ll_out))


def pgm_stats_cpp(resp, cell_row, topic, n_topics, n_rows) -> np.ndarray:
    return core().pgm_stats(resp, cell_row, topic, n_topics, n_rows)


def pgm_estep_stats_cpp(table, cell_row, topic, log_w, resp, n_topics, n_rows):
    _check_table(table, n_topics, n_rows)
    block = block_rows(cell_row.shape[0], table.size)
    ll, C = core().pgm_estep_stats(table, cell_row, topic, log_w, resp, block)
    return float(ll), C


def pgm_mstep_scores_cpp(C3, logh, cand) -> np.ndarray:
    return core().pgm_mstep_scores(C3, logh, cand)


def pgm_mstep_scores_window_cpp(C3, logh, cand, lo, width) -> np.ndarray:
    return core().pgm_mstep_scores_window(C3, logh, cand, lo, width)


def pgm_emax_cpp(*args):
    return core().pgm_emax(*args)


def pgm_class_estep_cpp(*args):
    return core().pgm_class_estep(*args)


# ------------------------------------------------------------------ Numba
def _int64_rows(kernel: Callable) -> Callable:
    """A Numba kernel taking ``cell_row`` (its second argument) in any integer
    dtype, widened to int64 (one compiled version; the fits call the kernels on
    blocks of prompts, so the copy is one block's)."""

    def run(first, cell_row, *args, **kwargs):
        rows = np.ascontiguousarray(cell_row, dtype=np.int64)
        return kernel(first, rows, *args, **kwargs)

    run.__name__ = run.__qualname__ = kernel.__name__
    run.__doc__ = kernel.__doc__
    return run


pgm_estep_nb64 = _int64_rows(pgm_estep_nb)
pgm_stats_nb64 = _int64_rows(pgm_stats_nb)
pgm_emax_nb64 = _int64_rows(pgm_emax_nb)


# ------------------------------------------------------------------ composed
def _check_table(table, n_topics, n_rows) -> None:
    if table.ndim != 4 or table.shape[1:3] != (n_topics, n_rows):
        raise ValueError(
            f"table must be shaped (L, n_topics={n_topics}, n_rows={n_rows}, J), "
            f"got {table.shape}"
        )


def _estep_stats_of(estep: Callable, stats: Callable) -> Callable:
    """The fused E-step and statistics as the E-step kernel (with the fused
    kernel's weights), then the statistics kernel on its posteriors, both in
    the C++ kernel's blocks of prompts: each block's log-likelihood terms and
    statistics summed in order, then the blocks in order (bit-identical)."""

    def estep_stats(table, cell_row, topic, log_w, resp, n_topics, n_rows):
        _check_table(table, n_topics, n_rows)
        N = cell_row.shape[0]
        block = block_rows(N, table.size)
        ll, C = 0.0, None
        lln = np.empty(N)
        for a in range(0, max(N, 1), block):
            sl = slice(a, min(N, a + block))
            rows = np.ascontiguousarray(cell_row[sl])
            estep(table, rows, topic[sl], log_w, resp[sl], lln[sl], fused=True)
            ll += float(np.cumsum(lln[sl])[-1]) if sl.stop > a else 0.0
            C_b = stats(resp[sl], rows, topic[sl], n_topics, n_rows)
            C = C_b if C is None else C + C_b
        return ll, C

    return estep_stats


def _window_of(scores: Callable) -> Callable:
    """The windowed M-step scores as the full scores' window (Numba: its
    compiled full scores skip the zero statistics, faster than gathering the
    window's terms in NumPy)."""

    def window(C3, logh, cand, lo, width):
        cols = np.asarray(lo)[:, None] + np.arange(int(width))[None, :]
        return scores(C3, logh, cand)[np.arange(C3.shape[0])[:, None], cols]

    return window


def _class_estep_of(estep: Callable, stats: Callable) -> Callable:
    """The latent-class E-step composed from a one-class E-step and statistics
    kernel (every prompt carried once per class)."""

    def class_estep(
        table, cell_row, topic, n_classes, log_w, log_pi, prev_r, sparse_r,
        keep_r, block_rows, stats_, want_resp, want_ll,
    ):  # fmt: skip
        K = int(n_classes)
        N = len(topic)
        J = len(log_w)
        rows = np.ascontiguousarray(np.repeat(cell_row, K, axis=0))
        grp = np.ascontiguousarray(
            np.repeat(topic, K) * K + np.tile(np.arange(K, dtype=np.int64), N)
        )
        active = None if prev_r is None else prev_r.reshape(-1) >= sparse_r
        if active is None or active.all():
            resp = np.empty((N * K, J))
            ll_pair = np.empty(N * K)
            estep(table, rows, grp, log_w, resp, ll_pair)
        else:
            idx = np.flatnonzero(active)
            resp = np.zeros((N * K, J))
            ll_pair = np.full(N * K, -np.inf)
            part = np.empty((len(idx), J))
            ll_part = np.empty(len(idx))
            estep(
                table,
                np.ascontiguousarray(rows[idx]),
                np.ascontiguousarray(grp[idx]),
                log_w,
                part,
                ll_part,
            )
            resp[idx] = part
            ll_pair[idx] = ll_part
        lr = ll_pair.reshape(N, K) + log_pi[topic]
        lse = logsumexp(lr, axis=1)
        r = np.exp(lr - lse[:, None])
        C = wsum = None
        if stats_:
            w = resp * r.reshape(-1, 1)  # (prompt, class) weights of the statistics
            wsum = w.reshape(N, K, -1).sum(axis=1).sum(axis=0)
            keep = r.reshape(-1) > keep_r
            C = stats(
                np.ascontiguousarray(w[keep]),
                np.ascontiguousarray(rows[keep]),
                np.ascontiguousarray(grp[keep]),
                table.shape[1],
                table.shape[2],
            )
        return (
            float(lse.sum()),
            r,
            C,
            wsum,
            resp if want_resp else None,
            ll_pair if want_ll else None,
        )

    return class_estep


def _register(name: str, numpy, numba, cpp) -> None:
    register(Kernel(name, numpy=numpy, numba=numba, cpp=cpp, family="latent"))


_register("pgm_estep", pgm_estep_np, pgm_estep_nb64, pgm_estep_cpp)
_register("pgm_stats", pgm_stats_np, pgm_stats_nb64, pgm_stats_cpp)
_register(
    "pgm_estep_stats",
    _estep_stats_of(pgm_estep_np, pgm_stats_np),
    _estep_stats_of(pgm_estep_nb64, pgm_stats_nb64),
    pgm_estep_stats_cpp,
)
_register(
    "pgm_mstep_scores", pgm_mstep_scores_np, pgm_mstep_scores_nb, pgm_mstep_scores_cpp
)
_register(
    "pgm_mstep_scores_window",
    pgm_mstep_scores_window_np,
    _window_of(pgm_mstep_scores_nb),
    pgm_mstep_scores_window_cpp,
)
_register("pgm_emax", pgm_emax_np, pgm_emax_nb64, pgm_emax_cpp)
_register(
    "pgm_class_estep",
    _class_estep_of(pgm_estep_np, pgm_stats_np),
    _class_estep_of(pgm_estep_nb64, pgm_stats_nb64),
    pgm_class_estep_cpp,
)
