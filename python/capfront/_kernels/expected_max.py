"""Expected maxima of binomial proportions and the exact subsample curve
(``cpp/include/capfront/expected_max.hpp``).

Kernels (the caller validates; arrays are C-contiguous native float64 / int64):

- ``expected_max_binomial_rows(p, n_draws) -> (R,)``: per row of ``p`` (R, L),
  ``E[max_l Y_l / G_l]`` with ``Y_l ~ Bin(G_l, p_l)`` independent, a cell with
  ``G_l <= 0`` left out; ``n_draws`` is (R, L), or (1, L) when every row has the
  same draws (no (R, L) copy of a broadcast count). With one ``G`` per row this
  is ``(1/G) sum_{k=1..G} [1 - prod_l F(k - 1; G, p_l)]``; with ragged ``G_l`` the
  max lives on the union of the grids ``j / G_l``.
- ``subsample_curve_mean(successes, n_draws, sizes) -> (len(sizes),)``: the mean
  over rows of ``(1/g) sum_{k=1..g} [1 - prod_l P(X_l <= k - 1)]``,
  ``X_l ~ Hypergeom(G_l, S_l, g)``, for each size ``g``.

The NumPy references use SciPy's binomial and hypergeometric CDFs (imported on
first use: SciPy's stats module takes over a second to import). The Numba port
and the C++ kernel compute the CDFs by ratio recursion (exact to ``O(G eps)``);
they agree with each other bit for bit and with the references to 1e-12.
"""

from __future__ import annotations

import numpy as np

from .._backend import core
from .._numba_kernels import (
    DENSE_MAX_DRAWS,
    binomial_window_nb,
    expected_max_binomial_nb,
    subsample_curve_nb,
)
from . import Kernel, register

_NUMPY_CHUNK = 8192


def _stats():
    """``scipy.stats``, imported when a NumPy reference first runs."""
    from scipy import stats

    return stats


# ------------------------------------------------------------------ NumPy reference
def expected_max_binomial_rows_np(p: np.ndarray, n_draws: np.ndarray) -> np.ndarray:
    """Reference: SciPy's binomial CDF on the union grid of each row (windowed
    above ``DENSE_MAX_DRAWS`` draws)."""
    stats = _stats()
    n_draws = np.broadcast_to(n_draws, p.shape)
    out = np.empty(p.shape[0])
    huge = n_draws.max(axis=1) > DENSE_MAX_DRAWS
    for r in np.flatnonzero(huge):
        out[r] = _expected_max_windowed_np(p[r], n_draws[r])
    equal = (n_draws == n_draws[:, :1]) | (n_draws <= 0)
    fast = equal.all(axis=1) & (n_draws > 0).any(axis=1) & ~huge
    rows = np.flatnonzero(fast)
    for start in range(0, len(rows), _NUMPY_CHUNK):
        idx = rows[start : start + _NUMPY_CHUNK]
        present = n_draws[idx] > 0
        G = n_draws[idx].max(axis=1)
        gmax = int(G.max())
        k = np.arange(gmax)[:, None, None]  # k - 1 = 0..gmax-1
        cdf = stats.binom.cdf(k, G[None, :, None], p[idx][None])
        cdf = np.where(present[None], cdf, 1.0)
        tail = 1.0 - cdf.prod(axis=2)  # (gmax, rows): P(max >= k)
        tail = np.where(k[:, :, 0] < G[None, :], tail, 0.0)
        out[idx] = tail.sum(axis=0) / G
    for r in np.flatnonzero(~fast & ~huge):
        out[r] = _expected_max_ragged_np(p[r], n_draws[r])
    return out


def _expected_max_windowed_np(p: np.ndarray, n_draws: np.ndarray) -> float:
    """Reference for large G: SciPy's CDF on the grid points inside the windows.

    Each ``Bin(G_l, p_l)`` CDF is 0 below ``lo_l`` and 1 from ``hi_l`` on to within
    1e-40 (:func:`binomial_window_nb`). With ``x_lo = max_l lo_l / G_l`` and ``x_hi
    = max_l hi_l / G_l``, ``E[max] = x_lo + integral_{x_lo}^{x_hi} P(max > x) dx``
    and ``P(max > x)`` only changes at grid points ``j / G_l`` inside the windows.
    """
    stats = _stats()
    keep = n_draws > 0
    p, g = p[keep], n_draws[keep]
    win = np.array(
        [binomial_window_nb(int(gl), float(pl)) for pl, gl in zip(p, g, strict=True)]
    )
    lo, hi = win[:, 0], win[:, 1]
    ia = int(np.argmax(lo / g))
    ib = int(np.argmax(hi / g))
    a_num, a_den, b_num, b_den = lo[ia], g[ia], hi[ib], g[ib]
    num, den = [np.array([a_num, b_num])], [np.array([a_den, b_den])]
    for lo_l, hi_l, g_l in zip(lo, hi, g, strict=True):
        j = np.arange(lo_l + 1, hi_l + 1, dtype=np.int64)
        inside = (j * a_den > a_num * g_l) & (j * b_den < b_num * g_l)
        num.append(j[inside])
        den.append(np.full(int(inside.sum()), g_l, dtype=np.int64))
    num, den = np.concatenate(num), np.concatenate(den)
    order = np.argsort(num / den, kind="stable")
    num, den = num[order], den[order]
    # distinct values, exactly (values closer than a double's spacing keep their
    # order of insertion; the width they span is below 1e-16)
    new_value = np.concatenate([[True], num[1:] * den[:-1] != num[:-1] * den[1:]])
    num, den = num[new_value], den[new_value]
    below = np.ones(len(num) - 1)  # P(max <= v_i) for every v_i but the last
    for p_l, g_l in zip(p, g, strict=True):
        below *= stats.binom.cdf((num[:-1] * g_l) // den[:-1], g_l, p_l)
    widths = np.diff(num / den)
    return float(num[0] / den[0] + np.sum(widths * (1.0 - below)))


def _expected_max_ragged_np(p: np.ndarray, n_draws: np.ndarray) -> float:
    stats = _stats()
    present = n_draws > 0
    if not present.any():
        return float("nan")
    grid = np.unique(
        np.concatenate([np.arange(1, g + 1) / g for g in n_draws[present]])
    )
    prev = np.concatenate([[0.0], grid[:-1]])
    below = np.ones(len(grid))
    for pl, g in zip(p[present], n_draws[present], strict=True):
        below *= stats.binom.cdf(np.floor(prev * g + 1e-9), g, pl)
    return float(np.sum((grid - prev) * (1.0 - below)))


def subsample_curve_mean_np(
    successes: np.ndarray, n_draws: np.ndarray, sizes: np.ndarray
) -> np.ndarray:
    """Reference: SciPy's hypergeometric CDF, vectorised over prompts and models."""
    stats = _stats()
    N = successes.shape[0]
    present = n_draws > 0
    curve = np.empty(len(sizes))
    for j, g in enumerate(sizes):
        total = 0.0
        for start in range(0, N, _NUMPY_CHUNK):
            sl = slice(start, start + _NUMPY_CHUNK)
            k = np.arange(g)[:, None, None]
            cdf = stats.hypergeom.cdf(k, n_draws[sl][None], successes[sl][None], g)
            cdf = np.where(present[sl][None], cdf, 1.0)
            total += (1.0 - cdf.prod(axis=2)).sum() / g
        curve[j] = total / N
    return curve


# ------------------------------------------------------------------ C++
def expected_max_binomial_rows_cpp(p: np.ndarray, n_draws: np.ndarray) -> np.ndarray:
    return core().expected_max_binomial(p, n_draws)


def subsample_curve_mean_cpp(
    successes: np.ndarray, n_draws: np.ndarray, sizes: np.ndarray
) -> np.ndarray:
    return core().subsample_curve(successes, n_draws, sizes)


# The Numba ports live in _numba_kernels.py with the other foundation kernels
# (the debiasing kernels share their CDF recursions).
for _name, _np, _nb, _cpp in (
    (
        "expected_max_binomial_rows",
        expected_max_binomial_rows_np,
        expected_max_binomial_nb,
        expected_max_binomial_rows_cpp,
    ),
    (
        "subsample_curve_mean",
        subsample_curve_mean_np,
        subsample_curve_nb,
        subsample_curve_mean_cpp,
    ),
):
    register(Kernel(_name, numpy=_np, numba=_nb, cpp=_cpp, family="expected_max"))
