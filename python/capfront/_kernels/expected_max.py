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
they agree with the references to 1e-12 and with each other to rounding: bit for
bit up to ``G = 1000`` draws; above it the C++ binomial CDF keeps running sums
and the Numba one does not, a difference of at most about 1e-15 (measured
6.7e-16 at G up to 65,536).
"""

from __future__ import annotations

import math

import numpy as np

from .._backend import core
from .._jit import njit, prange
from . import Kernel, register

_NUMPY_CHUNK = 8192

#: above this many draws the windowed path runs (as ``kDenseMaxDraws`` in C++)
DENSE_MAX_DRAWS = 1 << 16
#: Bernstein exponent of the window: the CDF is 0 / 1 outside it to within e^-92
_WINDOW_EXPONENT = 92.0


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


# ------------------------------------------------------------------ Numba port
# Line-for-line ports of ``expected_max.hpp`` (the debiasing ports in
# ``_numba_debias.py`` share the CDF recursions and the per-prompt curve rows).
@njit
def _masses_to_cdf_nb(cdf, lo, m, hi, n):
    """Unnormalised masses ``cdf[lo..hi]`` (1 at the mode ``m``, 0 outside the
    support) into the CDF ``cdf[0..n]``: the total summed from the small tails
    inward (``lo..m - 1``, then ``hi`` down to ``m``), the running sum of
    ``mass / total`` clipped at 1, and ``cdf[n] = 1`` (``expected_max.hpp``,
    ``hypergeom_cdf``)."""
    total = 0.0
    for k in range(lo, m):
        total += cdf[k]
    for k in range(hi, m - 1, -1):
        total += cdf[k]
    acc = 0.0
    for k in range(n + 1):
        acc += cdf[k] / total
        cdf[k] = min(acc, 1.0)
    cdf[n] = 1.0


@njit
def binomial_cdf_nb(G, p, cdf):
    """Bin(G, p) CDF into cdf[0..G] by ratio recursion from the mode."""
    if not (p > 0.0):
        for k in range(G + 1):
            cdf[k] = 1.0
        return
    if not (p < 1.0):
        for k in range(G):
            cdf[k] = 0.0
        cdf[G] = 1.0
        return
    m = int(math.floor((G + 1) * p))
    m = min(max(m, 0), G)
    r = p / (1.0 - p)
    cdf[m] = 1.0
    for k in range(m, G):
        cdf[k + 1] = cdf[k] * ((G - k) / (k + 1)) * r
    for k in range(m, 0, -1):
        cdf[k - 1] = cdf[k] * (k / (G - k + 1)) / r
    _masses_to_cdf_nb(cdf, 0, m, G, G)


@njit
def hypergeom_cdf_nb(G, S, g, cdf):
    """P(X <= k), k = 0..g, X ~ Hypergeom(G, S, g)."""
    lo = max(0, g - (G - S))
    hi = min(g, S)
    for k in range(g + 1):
        cdf[k] = 0.0
    m = int(math.floor(((g + 1) * (S + 1)) / (G + 2)))
    m = min(max(m, lo), hi)
    cdf[m] = 1.0
    for k in range(m, hi):
        cdf[k + 1] = cdf[k] * ((S - k) * (g - k)) / ((k + 1) * (G - S - g + k + 1))
    for k in range(m, lo, -1):
        cdf[k - 1] = cdf[k] * (k * (G - S - g + k)) / ((S - k + 1) * (g - k + 1))
    _masses_to_cdf_nb(cdf, lo, m, hi, g)


@njit
def binomial_window_nb(G, p):
    """``(lo, hi)``: Bin(G, p) has F(k) = 0 for k < lo and F(k) = 1 for k >= hi to
    within 1e-40 (Bernstein's inequality with exponent 92)."""
    if not (p > 0.0):
        return 0, 0
    if not (p < 1.0):
        return G, G
    E = _WINDOW_EXPONENT
    mu = G * p
    v = mu * (1.0 - p)
    t = E / 3.0 + math.sqrt(E * E / 9.0 + 2.0 * E * v)
    lo = max(0, int(math.floor(mu - t)))
    hi = min(G, int(math.ceil(mu + t)))
    return lo, max(lo, hi)


@njit
def binomial_cdf_window_nb(G, p, lo, hi, cdf):
    """``cdf[i] = F(lo + i; G, p)``, i = 0..hi - lo, from the masses inside the
    window (ratio recursion from the mode, normalised by their sum). 0 < p < 1."""
    m = int(math.floor((G + 1) * p))
    m = min(max(m, lo), hi)
    r = p / (1.0 - p)
    rinv = (1.0 - p) / p
    cdf[m - lo] = 1.0
    for k in range(m, hi):
        cdf[k + 1 - lo] = cdf[k - lo] * ((G - k) / (k + 1) * r)
    for k in range(m, lo, -1):
        cdf[k - 1 - lo] = cdf[k - lo] * (k / (G - k + 1) * rinv)
    for i in range(1, hi - lo + 1):
        cdf[i] += cdf[i - 1]
    inv = 1.0 / cdf[hi - lo]
    for i in range(hi - lo):
        cdf[i] = min(cdf[i] * inv, 1.0)
    cdf[hi - lo] = 1.0


@njit
def _window_cdf_at(cdfs, off, lo, hi, k):
    if k < lo:
        return 0.0
    if k >= hi:
        return 1.0
    return cdfs[off + k - lo]


@njit
def _expected_max_windowed_row(p, nd, equal, G):
    """E[max] from windowed CDFs: with x_lo = max lo_l / G_l and x_hi = max
    hi_l / G_l, P(max > x) is 1 below x_lo and 0 from x_hi on."""
    L = p.shape[0]
    lo = np.zeros(L, np.int64)
    hi = np.zeros(L, np.int64)
    offset = np.zeros(L + 1, np.int64)
    for l in range(L):
        need = 0
        if nd[l] > 0:
            lo[l], hi[l] = binomial_window_nb(nd[l], p[l])
            need = hi[l] - lo[l] + 1
        offset[l + 1] = offset[l] + need
    cdfs = np.empty(offset[L])
    for l in range(L):
        if nd[l] > 0 and p[l] > 0.0 and p[l] < 1.0:
            binomial_cdf_window_nb(
                nd[l], p[l], lo[l], hi[l], cdfs[offset[l] : offset[l + 1]]
            )
    if equal:
        A = -1
        B = -1
        for l in range(L):
            if nd[l] > 0:
                A = max(A, lo[l])
                B = max(B, hi[l])
        prod = np.ones(B - A)
        for l in range(L):
            if nd[l] <= 0:
                continue
            for k in range(A, B):
                prod[k - A] *= _window_cdf_at(cdfs, offset[l], lo[l], hi[l], k)
        s = 0.0
        for k in range(A, B):
            s += 1.0 - prod[k - A]
        return (A + s) / G
    Aa, Ab, Ba, Bb = 0, 1, 0, 1
    for l in range(L):
        if nd[l] <= 0:
            continue
        if Aa * nd[l] < lo[l] * Ab:
            Aa, Ab = lo[l], nd[l]
        if Ba * nd[l] < hi[l] * Bb:
            Ba, Bb = hi[l], nd[l]
    count = 2
    for l in range(L):
        if nd[l] > 0:
            count += hi[l] - lo[l]
    num = np.empty(count, np.int64)
    den = np.empty(count, np.int64)
    num[0], den[0], num[1], den[1] = Aa, Ab, Ba, Bb
    i = 2
    for l in range(L):
        if nd[l] <= 0:
            continue
        for j in range(lo[l] + 1, hi[l] + 1):
            if Aa * nd[l] < j * Ab and j * Bb < Ba * nd[l]:
                num[i] = j
                den[i] = nd[l]
                i += 1
    return _walk_support(num[:i], den[:i], nd, cdfs, offset, lo, hi, Aa, Ab)


@njit
def _walk_support(num, den, nd, cdfs, offset, lo, hi, pa, pb):
    """sum over the sorted distinct grid values v > pa / pb of
    (v - prev) P(max > prev), plus pa / pb."""
    L = nd.shape[0]
    order = np.argsort(num / den, kind="mergesort")
    s = pa / pb
    for idx in order:
        a = num[idx]
        b = den[idx]
        if a * pb <= pa * b:
            continue
        below = 1.0
        for l in range(L):
            if nd[l] <= 0:
                continue
            below *= _window_cdf_at(cdfs, offset[l], lo[l], hi[l], (pa * nd[l]) // pb)
        s += (a / b - pa / pb) * (1.0 - below)
        pa = a
        pb = b
    return s


@njit
def _expected_max_row(p, nd):
    L = p.shape[0]
    G = -1
    g_max = 0
    equal = True
    present = 0
    for l in range(L):
        if nd[l] <= 0:
            continue
        present += 1
        g_max = max(g_max, nd[l])
        if G < 0:
            G = nd[l]
        elif nd[l] != G:
            equal = False
    if present == 0:
        return np.nan
    if g_max > DENSE_MAX_DRAWS:
        return _expected_max_windowed_row(p, nd, equal, G)
    if equal:
        cdf = np.empty(G + 1)
        prod = np.ones(G)
        for l in range(L):
            if nd[l] <= 0:
                continue
            binomial_cdf_nb(G, p[l], cdf)
            for k in range(G):
                prod[k] *= cdf[k]
        s = 0.0
        for k in range(G):
            s += 1.0 - prod[k]
        return s / G
    # ragged row: walk the distinct values of the union grid {j / G_l}
    offset = np.zeros(L + 1, np.int64)
    total = 0
    for l in range(L):
        offset[l + 1] = offset[l] + (nd[l] + 1 if nd[l] > 0 else 0)
        if nd[l] > 0:
            total += nd[l]
    cdfs = np.empty(offset[L])
    num = np.empty(total, np.int64)
    den = np.empty(total, np.int64)
    i = 0
    for l in range(L):
        if nd[l] <= 0:
            continue
        binomial_cdf_nb(nd[l], p[l], cdfs[offset[l] : offset[l + 1]])
        for j in range(1, nd[l] + 1):
            num[i] = j
            den[i] = nd[l]
            i += 1
    order = np.argsort(num / den, kind="mergesort")
    s = 0.0
    pa = 0
    pb = 1
    for idx in order:
        a = num[idx]
        b = den[idx]
        if a * pb == pa * b:
            continue
        below = 1.0
        for l in range(L):
            if nd[l] <= 0:
                continue
            below *= cdfs[offset[l] + (pa * nd[l]) // pb]
        s += (a / b - pa / pb) * (1.0 - below)
        pa = a
        pb = b
    return s


#: largest G of the lane-parallel path (``kLaneMaxDraws``): masses stay below 2^G
LANE_MAX_DRAWS = 1000
#: rows per lane block (``kLanes``)
LANES = 16
#: rows per parallel block (as in expected_max.hpp)
_EM_BLOCK = 256


@njit
def _lane_draws(nd):
    """The common ``n_draws`` of the row's observed cells if the row can take the
    lane path (1 <= G <= LANE_MAX_DRAWS), else -1."""
    G = -1
    for l in range(nd.shape[0]):
        g = nd[l]
        if g <= 0:
            continue
        if G < 0:
            G = g
        elif g != G:
            return -1
    return G if G <= LANE_MAX_DRAWS else -1


@njit
def _expected_max_lanes(p, nd, step, r0, w, G, c, e, prod, out):
    """E[max] of rows ``r0 .. r0 + w - 1`` (``w <= LANES``, one ``G``), one row per
    lane (expected_max.hpp, ``expected_max_lanes_body``): per cell, with ``q =
    min(p, 1 - p)`` and ``r = q / (1 - q)``, masses ``e[0] = 1``, ``e[i] = e[i-1]
    (c_i r)``, ``c_i = (G - i + 1) / i``; ``F(k)`` is the running sum of ``e[0..k]``
    (``p <= 1/2``) or of ``e[G], ..., e[G-k]`` (``p > 1/2``) over the total.
    Row ``r`` of ``n_draws`` is ``nd[r * step]`` (``step = 0``: one row for all)."""
    W = LANES
    L = p.shape[1]
    r = np.empty(W)
    inv = np.empty(W)
    tot = np.empty(W)
    acc = np.empty(W)
    flip = np.empty(W, np.bool_)
    for k in range(G):
        for j in range(W):
            prod[k, j] = 1.0
    for l in range(L):
        for j in range(W):
            pj = 0.0
            if j < w and nd[(r0 + j) * step, l] > 0:
                pj = p[r0 + j, l]
            flip[j] = pj > 0.5
            q = 1.0 - pj if pj > 0.5 else pj  # exact for pj in [1/2, 1]
            r[j] = q / (1.0 - q)
            e[0, j] = 1.0
            tot[j] = 1.0
            acc[j] = 0.0
        for i in range(1, G + 1):
            ci = c[i]
            for j in range(W):
                x = e[i - 1, j] * (ci * r[j])
                e[i, j] = x
                tot[j] += x
        for j in range(W):
            inv[j] = 1.0 / tot[j]
        for k in range(G):
            for j in range(W):
                acc[j] += e[G - k, j] if flip[j] else e[k, j]
                f = acc[j] * inv[j]
                prod[k, j] *= 1.0 if f > 1.0 else f
    for j in range(w):
        s = 0.0
        for k in range(G):
            s += 1.0 - prod[k, j]
        out[r0 + j] = s / G


@njit(parallel=True)
def expected_max_binomial_nb(p, n_draws):
    """Rows in blocks of 256 (expected_max.hpp): runs of rows with one lane-path G
    go ``LANES`` at a time through :func:`_expected_max_lanes`, the others (ragged,
    huge G) one at a time through :func:`_expected_max_row`. ``n_draws`` has the
    shape of ``p`` or one row, shared by every row."""
    R = p.shape[0]
    out = np.empty(R)
    step = 0 if n_draws.shape[0] == 1 else 1
    for b in prange((R + _EM_BLOCK - 1) // _EM_BLOCK):
        r1 = min(R, (b + 1) * _EM_BLOCK)
        r = b * _EM_BLOCK
        c_for = -1
        c = np.empty(0)
        e = np.empty((0, LANES))
        prod = np.empty((0, LANES))
        while r < r1:
            G = _lane_draws(n_draws[r * step])
            if G < 0:
                out[r] = _expected_max_row(p[r], n_draws[r * step])
                r += 1
                continue
            w = 1
            while (
                w < LANES
                and r + w < r1
                and (step == 0 or _lane_draws(n_draws[r + w]) == G)
            ):
                w += 1
            if G != c_for:
                c_for = G
                c = np.zeros(G + 1)
                for i in range(1, G + 1):
                    c[i] = (G - i + 1) / i
                e = np.empty((G + 1, LANES))
                prod = np.empty((G, LANES))
            _expected_max_lanes(p, n_draws, step, r, w, G, c, e, prod, out)
            r += w
    return out


@njit(parallel=True)
def _subsample_rows_nb(successes, n_draws, sizes):
    N, L = successes.shape
    out = np.empty((N, sizes.shape[0]))
    for n in prange(N):
        for j in range(sizes.shape[0]):
            g = sizes[j]
            cdf = np.empty(g + 1)
            prod = np.ones(g)
            any_cell = False
            for l in range(L):
                if n_draws[n, l] <= 0:
                    continue
                any_cell = True
                hypergeom_cdf_nb(n_draws[n, l], successes[n, l], g, cdf)
                for k in range(g):
                    prod[k] *= cdf[k]
            s = 0.0
            for k in range(g):
                s += 1.0 - prod[k]
            out[n, j] = s / g if any_cell else np.nan
    return out


def subsample_curve_nb(successes, n_draws, sizes):
    return _subsample_rows_nb(successes, n_draws, sizes).mean(axis=0)


# ------------------------------------------------------------------ C++
def expected_max_binomial_rows_cpp(p: np.ndarray, n_draws: np.ndarray) -> np.ndarray:
    return core().expected_max_binomial(p, n_draws)


def subsample_curve_mean_cpp(
    successes: np.ndarray, n_draws: np.ndarray, sizes: np.ndarray
) -> np.ndarray:
    return core().subsample_curve(successes, n_draws, sizes)


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
