"""Numba versions of the expected-max kernels, line-for-line ports of
``cpp/include/capfront/expected_max.hpp``. The sufficient-statistics port moved to
:mod:`capfront._kernels.suffstats` (re-exported here)."""

from __future__ import annotations

import math

import numpy as np

from ._jit import njit, prange
from ._kernels.suffstats import suffstats_nb  # noqa: F401  (moved there)


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
    total = 0.0
    for k in range(m):
        total += cdf[k]
    for k in range(G, m - 1, -1):
        total += cdf[k]
    acc = 0.0
    for k in range(G + 1):
        acc += cdf[k] / total
        cdf[k] = min(acc, 1.0)
    cdf[G] = 1.0


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
    total = 0.0
    for k in range(lo, m):
        total += cdf[k]
    for k in range(hi, m - 1, -1):
        total += cdf[k]
    acc = 0.0
    for k in range(g + 1):
        acc += cdf[k] / total
        cdf[k] = min(acc, 1.0)
    cdf[g] = 1.0


#: above this many draws the windowed path runs (as ``kDenseMaxDraws`` in C++)
DENSE_MAX_DRAWS = 1 << 16
#: Bernstein exponent of the window: the CDF is 0 / 1 outside it to within e^-92
_WINDOW_EXPONENT = 92.0


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
