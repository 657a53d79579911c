"""The frontier's kernels (``cpp/include/capfront/frontier.hpp``,
``src/register_frontier.cpp``): the NumPy reference and the Numba port of each,
side by side, registered with the C++ binding.

Kernels (the segments are dicts of arrays, see :class:`capfront.HullSegments`):

- ``hull_segments_dense(option_cost, option_quality) -> segments``: every
  prompt's upper-left hull of its ``M`` options (a NaN or infinite cost or
  quality is an unavailable option), the hull steps merged by slope, descending
  (ties by prompt, then position along the prompt's hull).
- ``hull_segments_cells(qnum, n_draws, cnum, divide_quality, divide_cost)``: the
  same for the prehoc options of ``(N, L)`` per-cell statistics: cell ``(n, l)``
  has quality ``qnum / n_draws`` (or ``qnum``) and cost ``cnum / n_draws`` (or
  ``cnum``); it is available where ``n_draws > 0`` and both are finite.
- ``hull_segments_posthoc(successes, n_draws, cell_cost, max_k, divide_cost=False)``:
  the same for the best-of-k options of binary counts (option ``l * K + k - 1``:
  quality the unbiased pass@k, cost ``k`` times the cost of one generation,
  ``cell_cost`` or ``cell_cost / n_draws`` with ``divide_cost``), built per
  prompt, never as ``(N, L*K)`` arrays; the C++ kernel reads the counts as stored
  (uint8/uint16/int32/int64, any strides).
- ``frontier_vertices(x0, y0, w, prompt, dcost, dquality) -> (M, 2)``: the running
  points ``(x0 + cumsum(w[prompt] dcost), y0 + cumsum(w[prompt] dquality))`` over
  the segments with ``w[prompt] > 0``, after the start ``(x0, y0)``; interior
  points of equal-slope runs (slopes equal to a relative 1e-12) removed.

The Numba ports are line-for-line ports of frontier.hpp (same float operations in
the same order, so all three backends give identical arrays).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._backend import core
from .._jit import njit, prange
from . import Kernel, register

_NUMPY_CHUNK = 16384  # prompts per block of the NumPy reference


# ------------------------------------------------------------------ NumPy reference
def _prompt_hulls_np(c: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, ...]:
    """Reference: the monotone chain of frontier.hpp run for a block of prompts at
    once (same comparisons and float operations, so identical hulls).

    Returns (hull option indices (R, M), hull costs, hull qualities, lengths (R,)).
    """
    R, M = c.shape
    avail = np.isfinite(c) & np.isfinite(q)
    order = np.argsort(np.where(avail, c, np.inf), axis=1, kind="stable")
    cs = np.take_along_axis(c, order, axis=1)
    qs = np.take_along_axis(q, order, axis=1)
    av = np.take_along_axis(avail, order, axis=1)
    hull = np.zeros((R, M), dtype=np.int64)
    hc = np.zeros((R, M))
    hq = np.zeros((R, M))
    h = np.zeros(R, dtype=np.int64)
    rows = np.arange(R)
    with np.errstate(invalid="ignore", divide="ignore"):
        for j in range(M):
            act = av[:, j].copy()
            if not act.any():
                break  # unavailable options sort last
            co, qo = cs[:, j], qs[:, j]
            top = np.maximum(h - 1, 0)
            has = h > 0
            act &= ~(has & (qo <= hq[rows, top]))
            replace = act & has & (co == hc[rows, top])
            h -= replace
            while True:
                r = rows[act & (h >= 2)]
                if r.size == 0:
                    break
                hh = h[r]
                ac, aq = hc[r, hh - 2], hq[r, hh - 2]
                bc, bq = hc[r, hh - 1], hq[r, hh - 1]
                pop = (bq - aq) / (bc - ac) <= (qo[r] - bq) / (co[r] - bc)
                if not pop.any():
                    break
                h[r[pop]] -= 1
            r = rows[act]
            hull[r, h[r]] = order[r, j]
            hc[r, h[r]] = co[r]
            hq[r, h[r]] = qo[r]
            h[r] += 1
    return hull, hc, hq, h


def _hull_segments_np(option_cost: np.ndarray, option_quality: np.ndarray) -> dict:
    return _hull_segments_chunked_np(
        option_cost.shape[0], lambda a, b: (option_cost[a:b], option_quality[a:b])
    )


def _hull_segments_chunked_np(N: int, options: Any) -> dict:
    """Reference hull merge; ``options(start, stop)`` returns the (cost, quality)
    option rows of those prompts, so the ``(N, M)`` arrays never need to exist."""
    base_cost = np.full(N, np.nan)
    base_quality = np.full(N, np.nan)
    base_option = np.full(N, -1, dtype=np.int64)
    parts: list[tuple[np.ndarray, ...]] = []
    for start in range(0, N, _NUMPY_CHUNK):
        sl = slice(start, min(N, start + _NUMPY_CHUNK))
        hull, hc, hq, h = _prompt_hulls_np(*options(sl.start, sl.stop))
        got = np.flatnonzero(h > 0)
        base_option[start + got] = hull[got, 0]
        base_cost[start + got] = hc[got, 0]
        base_quality[start + got] = hq[got, 0]
        for i in range(1, int(h.max(initial=0))):
            r = np.flatnonzero(h > i)
            parts.append(
                (
                    start + r,
                    np.full(r.size, i),
                    hull[r, i - 1],
                    hull[r, i],
                    hc[r, i] - hc[r, i - 1],
                    hq[r, i] - hq[r, i - 1],
                )
            )
    if parts:
        prompt, pos, frm, to, dc, dq = (
            np.concatenate(a) for a in zip(*parts, strict=True)
        )
    else:
        prompt = pos = frm = to = np.zeros(0, dtype=np.int64)
        dc = dq = np.zeros(0)
    canonical = np.lexsort((pos, prompt))
    order = canonical[np.argsort(-(dq[canonical] / dc[canonical]), kind="stable")]
    return {
        "base_cost": base_cost,
        "base_quality": base_quality,
        "base_option": base_option,
        "prompt": prompt[order],
        "dcost": dc[order],
        "dquality": dq[order],
        "option_from": frm[order],
        "option_to": to[order],
    }


def _binary_pass_at_k(S: np.ndarray, G: np.ndarray, K: int) -> np.ndarray:
    """(N, L, K) unbiased pass@k: ``S/G`` for ``k = 1``, then ``1 - r_k`` with
    ``r_k = r_{k-1} (G-S-k+1)/(G-k+1)``, ``r_1 = (G-S)/G`` (as in frontier.hpp, same
    float operations); NaN where ``k > G``."""
    out = np.full((*S.shape, K), np.nan)
    Sf, Gf = S.astype(np.float64), G.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out[:, :, 0] = np.where(G >= 1, Sf / Gf, np.nan)
        r = (Gf - Sf) / Gf
        for k in range(2, K + 1):
            num = G - S - k + 1
            r = np.where(
                num > 0,
                r * (num.astype(np.float64) / (G - k + 1).astype(np.float64)),
                0.0,
            )
            out[:, :, k - 1] = np.where(k <= G, 1.0 - r, np.nan)
    return out


def _best_of_k_arrays(cbar: np.ndarray, qk: np.ndarray) -> tuple[np.ndarray, ...]:
    """(N, L*K) option cost ``k * cbar`` and quality, NaN where either is missing."""
    N, L, K = qk.shape
    ks = np.arange(1, K + 1, dtype=np.float64)
    ck = ks[None, None, :] * cbar[:, :, None]
    bad = ~(np.isfinite(qk) & np.isfinite(ck))
    ck[bad] = np.nan
    qk = np.where(bad, np.nan, qk)
    return ck.reshape(N, L * K), qk.reshape(N, L * K)


def frontier_vertices_np(x0, y0, w, prompt, dcost, dquality) -> np.ndarray:
    """Reference of ``frontier_vertices``: NumPy's sequential ``cumsum``."""
    w = np.asarray(w, dtype=np.float64)
    prompt = np.asarray(prompt, dtype=np.int64)
    dcost = np.asarray(dcost, dtype=np.float64)
    dquality = np.asarray(dquality, dtype=np.float64)
    ws = w[prompt]
    use = ws > 0
    x = float(x0) + np.cumsum(ws[use] * dcost[use])
    y = float(y0) + np.cumsum(ws[use] * dquality[use])
    pts = np.column_stack([np.r_[float(x0), x], np.r_[float(y0), y]])
    slope = dquality[use] / dcost[use]
    if slope.size <= 1:
        return pts
    keep = np.ones(len(pts), dtype=bool)
    keep[1:-1] = ~np.isclose(slope[:-1], slope[1:], rtol=1e-12, atol=0.0)
    return pts[keep]


def _cells_options(qnum, n_draws, cnum, divide_quality, divide_cost):
    """The ``(N, L)`` option cost and quality of ``hull_segments_cells`` (NaN where
    a cell was not run); ``ValueError`` for a negative cost."""
    G = np.asarray(n_draws)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.asarray(qnum, dtype=np.float64)
        c = np.asarray(cnum, dtype=np.float64)
        q = q / G if divide_quality else q
        c = c / G if divide_cost else c
    if (c < 0).any():
        raise ValueError("option_cost must be >= 0 (NaN/inf mark unavailable options)")
    run = G > 0
    return (
        np.ascontiguousarray(np.where(run, c, np.nan)),
        np.ascontiguousarray(np.where(run, q, np.nan)),
    )


def hull_segments_cells_np(qnum, n_draws, cnum, divide_quality, divide_cost) -> dict:
    # the options of one block of prompts at a time: no (N, L) float copies
    return _hull_segments_chunked_np(
        qnum.shape[0],
        lambda a, b: _cells_options(
            qnum[a:b], n_draws[a:b], cnum[a:b], divide_quality, divide_cost
        ),
    )


def _posthoc_inputs(successes, n_draws, cell_cost, divide_cost):
    """Contiguous int64 counts and the float64 cost of one generation
    (``cell_cost / n_draws`` with ``divide_cost``: the division of frontier.hpp),
    for the NumPy and Numba ports, which do not read compact or strided arrays."""
    S = np.ascontiguousarray(successes, dtype=np.int64)
    G = np.ascontiguousarray(n_draws, dtype=np.int64)
    cbar = np.asarray(cell_cost, dtype=np.float64)
    if divide_cost:
        with np.errstate(divide="ignore", invalid="ignore"):
            cbar = cbar / G  # cells with G = 0 have no option whatever this holds
    return S, G, np.ascontiguousarray(cbar)


def hull_segments_posthoc_np(
    successes, n_draws, cell_cost, max_k, divide_cost=False
) -> dict:
    S, G, cbar = _posthoc_inputs(successes, n_draws, cell_cost, divide_cost)
    K = int(max_k)
    return _hull_segments_chunked_np(
        S.shape[0],
        lambda a, b: _best_of_k_arrays(cbar[a:b], _binary_pass_at_k(S[a:b], G[a:b], K)),
    )


# ------------------------------------------------------------------ Numba port
_BLOCK = 512  # prompts per parallel block


@njit
def _prompt_hull_nb(c, q, hull, keep):
    """Upper-left hull of one prompt's options; returns its length (frontier.hpp).
    ``keep`` is scratch of size M."""
    M = c.shape[0]
    c_min = np.inf
    q_max = -np.inf
    for j in range(M):
        if not (np.isfinite(c[j]) and np.isfinite(q[j])):
            continue
        c_min = min(c_min, c[j])
        q_max = max(q_max, q[j])
    if not (c_min < np.inf):
        return 0
    c_star = np.inf
    q_base = -np.inf
    for j in range(M):
        if not (np.isfinite(c[j]) and np.isfinite(q[j])):
            continue
        if q[j] == q_max:
            c_star = min(c_star, c[j])
        if c[j] == c_min:
            q_base = max(q_base, q[j])
    m = 0
    for j in range(M):
        if not (np.isfinite(c[j]) and np.isfinite(q[j])):
            continue
        if c[j] <= c_star and q[j] >= q_base:
            keep[m] = j
            m += 1
    cand = keep[:m]
    order = cand[np.argsort(c[cand], kind="mergesort")]
    h = 0
    for i in range(m):
        o = order[i]
        co = c[o]
        qo = q[o]
        if h > 0:
            t = hull[h - 1]
            if qo <= q[t]:
                continue
            if co == c[t]:
                h -= 1
        while h >= 2:
            a = hull[h - 2]
            b = hull[h - 1]
            s_ab = (q[b] - q[a]) / (c[b] - c[a])
            s_bo = (qo - q[b]) / (co - c[b])
            if s_ab <= s_bo:
                h -= 1
            else:
                break
        hull[h] = o
        h += 1
    return h


@njit
def _posthoc_row_nb(S, G, cell_cost, K, c, q):
    L = S.shape[0]
    for l in range(L):
        r = 1.0
        for k in range(1, K + 1):
            j = l * K + (k - 1)
            if k > G[l]:
                c[j] = np.nan
                q[j] = np.nan
                continue
            num = G[l] - S[l] - k + 1
            if k == 1:
                q[j] = float(S[l]) / float(G[l])
                r = float(num) / float(G[l])
            else:
                if num > 0:
                    r = r * (float(num) / float(G[l] - k + 1))
                else:
                    r = 0.0
                q[j] = 1.0 - r
            c[j] = float(k) * cell_cost[l]


@njit
def _fill_row_nb(kind, n, a, b, d, K, c, q):
    if kind == 0:
        c[:] = a[n]
        q[:] = b[n]
    else:
        _posthoc_row_nb(a[n], b[n], d[n], K, c, q)


@njit(parallel=True)
def _hull_pass_nb(
    kind,
    a,
    b,
    d,
    K,
    N,
    M,
    counts,
    offsets,
    fill_out,
    out,
):
    # Pass 1 (fill_out False): hull lengths; pass 2: write the segments at offsets
    # into ``out`` (the arrays of :func:`_segment_arrays`; pass 1 gets empty ones).
    # Blocks of prompts share scratch buffers.
    base_cost, base_quality, base_option, prompt, dcost, dquality = out[:6]
    option_from, option_to = out[6:]
    n_blocks = (N + _BLOCK - 1) // _BLOCK
    for blk in prange(n_blocks):
        c = np.empty(M)
        q = np.empty(M)
        hull = np.empty(M, dtype=np.int64)
        keep = np.empty(M, dtype=np.int64)
        for n in range(blk * _BLOCK, min(N, (blk + 1) * _BLOCK)):
            _fill_row_nb(kind, n, a, b, d, K, c, q)
            h = _prompt_hull_nb(c, q, hull, keep)
            if not fill_out:
                counts[n] = max(h - 1, 0)
                continue
            if h == 0:
                continue
            base_option[n] = hull[0]
            base_cost[n] = c[hull[0]]
            base_quality[n] = q[hull[0]]
            s = offsets[n]
            for i in range(1, h):
                x = hull[i - 1]
                z = hull[i]
                prompt[s] = n
                option_from[s] = x
                option_to[s] = z
                dcost[s] = c[z] - c[x]
                dquality[s] = q[z] - q[x]
                s += 1


def _segment_arrays(N: int, S: int) -> tuple[np.ndarray, ...]:
    """``(base_cost, base_quality, base_option, prompt, dcost, dquality,
    option_from, option_to)`` for ``N`` prompts and ``S`` segments, unfilled (a
    prompt without a hull keeps NaN bases and option -1)."""
    return (
        np.full(N, np.nan),
        np.full(N, np.nan),
        np.full(N, -1, dtype=np.int64),
        np.empty(S, dtype=np.int64),
        np.empty(S),
        np.empty(S),
        np.empty(S, dtype=np.int64),
        np.empty(S, dtype=np.int64),
    )


def _hull_segments_nb(kind, a, b, d, K, N, M):
    counts = np.zeros(N, dtype=np.int64)
    offsets = np.zeros(N, dtype=np.int64)
    _hull_pass_nb(kind, a, b, d, K, N, M, counts, offsets, False, _segment_arrays(0, 0))
    offsets[1:] = np.cumsum(counts)[:-1]
    out = _segment_arrays(N, int(counts.sum()))
    _hull_pass_nb(kind, a, b, d, K, N, M, counts, offsets, True, out)
    base_cost, base_quality, base_option, prompt, dcost, dquality = out[:6]
    option_from, option_to = out[6:]
    order = _slope_order_nb(dquality, dcost)
    return {
        "base_cost": base_cost,
        "base_quality": base_quality,
        "base_option": base_option,
        "prompt": prompt[order],
        "dcost": dcost[order],
        "dquality": dquality[order],
        "option_from": option_from[order],
        "option_to": option_to[order],
    }


@njit
def _slope_order_nb(dquality, dcost):
    # stable sort of -slope: ties keep (prompt, hull position) order
    return np.argsort(-(dquality / dcost), kind="mergesort")


def hull_segments_dense_nb(option_cost: np.ndarray, option_quality: np.ndarray) -> dict:
    N, M = option_cost.shape
    dummy = np.empty((N, 0))
    return _hull_segments_nb(0, option_cost, option_quality, dummy, 1, N, M)


def hull_segments_posthoc_nb(
    successes: np.ndarray,
    n_draws: np.ndarray,
    cell_cost: np.ndarray,
    max_k: int,
    divide_cost: bool = False,
) -> dict:
    S, G, cbar = _posthoc_inputs(successes, n_draws, cell_cost, divide_cost)
    N, L = S.shape
    return _hull_segments_nb(1, S, G, cbar, int(max_k), N, L * int(max_k))


@njit
def _vertices_close_nb(a, b):
    if np.isfinite(a) and np.isfinite(b):
        return abs(a - b) <= 0.0 + 1e-12 * abs(b)
    return a == b


@njit
def _frontier_vertices_nb(x0, y0, w, prompt, dcost, dquality, out):
    m = 0
    out[m, 0] = x0
    out[m, 1] = y0
    m += 1
    ax = 0.0
    ay = 0.0
    have_prev = False
    prev_slope = 0.0
    px = 0.0
    py = 0.0
    for s in range(prompt.shape[0]):
        ws = w[prompt[s]]
        if not ws > 0:
            continue
        slope = dquality[s] / dcost[s]
        if have_prev and not _vertices_close_nb(prev_slope, slope):
            out[m, 0] = px
            out[m, 1] = py
            m += 1
        ax += ws * dcost[s]
        ay += ws * dquality[s]
        px = x0 + ax
        py = y0 + ay
        prev_slope = slope
        have_prev = True
    if have_prev:
        out[m, 0] = px
        out[m, 1] = py
        m += 1
    return m


def frontier_vertices_nb(x0, y0, w, prompt, dcost, dquality):
    """frontier.hpp ``frontier_vertices``: sequential running sums, collinear
    points (slopes equal to a relative 1e-12) removed."""
    out = np.empty((prompt.shape[0] + 1, 2))
    m = _frontier_vertices_nb(
        float(x0),
        float(y0),
        np.ascontiguousarray(w, dtype=np.float64),
        np.ascontiguousarray(prompt, dtype=np.int64),
        np.ascontiguousarray(dcost, dtype=np.float64),
        np.ascontiguousarray(dquality, dtype=np.float64),
        out,
    )
    return out[:m].copy()


def hull_segments_cells_nb(qnum, n_draws, cnum, divide_quality, divide_cost) -> dict:
    return hull_segments_dense_nb(
        *_cells_options(qnum, n_draws, cnum, divide_quality, divide_cost)
    )


# ------------------------------------------------------------------ registry
def _cpp(name: str) -> Any:
    def run(*args: Any) -> Any:
        out = getattr(core(), name)(*args)
        return np.asarray(out) if name == "frontier_vertices" else out

    run.__name__ = f"{name}_cpp"
    return run


for _name, _np, _nb in (
    ("hull_segments_dense", _hull_segments_np, hull_segments_dense_nb),
    ("hull_segments_cells", hull_segments_cells_np, hull_segments_cells_nb),
    ("hull_segments_posthoc", hull_segments_posthoc_np, hull_segments_posthoc_nb),
    ("frontier_vertices", frontier_vertices_np, frontier_vertices_nb),
):
    register(Kernel(_name, numpy=_np, numba=_nb, cpp=_cpp(_name), family="frontier"))
