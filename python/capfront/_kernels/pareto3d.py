"""Non-dominated rows of ``(M, 3)`` points (``cpp/include/capfront/pareto3d.hpp``).

Kernel ``pareto_minima_3d(points, maximize) -> int64 row indices, ascending``:
column ``d`` is negated first where ``maximize[d]``, then every coordinate is
minimised. Row ``a`` dominates row ``b`` when ``a <= b`` everywhere and ``a < b``
somewhere; exact duplicates do not dominate each other (every copy of a
non-dominated point is kept); ``-0.0`` and ``0.0`` are one value. ``ValueError`` on
NaN. The caller checks the dtype and shape.

All three backends sweep the rows in lexicographic order against a staircase of
the 2-D minima seen so far (Kung, Luccio & Preparata 1975). The compiled ones first
drop, in one pass, every row dominated by a few "pivot" rows chosen on a strided
sample (exact: a dominated row stays dominated by some non-dominated row, and those
are never dropped); see pareto3d.hpp.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

from .._backend import core
from .._jit import njit, prange
from . import Kernel, register

# pre-filter constants, as in pareto3d.hpp
_PREFILTER_MIN = 16384  # fewer rows: sweep only
_SAMPLE = 4096  # sample rows for the pivots
_MAX_CANDIDATES = 256  # more sample maxima: front-heavy, no filter
_PIVOTS = 8


def _minimised(points: np.ndarray, maximize: Sequence[bool]) -> np.ndarray:
    """A float64 copy with the maximised columns negated and ``-0.0`` made ``0.0``;
    ``ValueError`` on NaN."""
    pts = np.array(points, dtype=np.float64)
    if np.isnan(pts).any():
        raise ValueError("points contain NaN")
    for d, flag in enumerate(maximize):
        if flag:
            pts[:, d] = -pts[:, d]
    pts += 0.0  # -0.0 -> 0.0 so that 0 and -0 form one duplicate run everywhere
    return pts


def _sweep_np(points: np.ndarray) -> np.ndarray:
    """Reference sweep (pareto3d.hpp) with the staircase in Python lists."""
    M = points.shape[0]
    order = np.lexsort((np.arange(M), points[:, 2], points[:, 1], points[:, 0]))
    rows = points[order].tolist()
    ys: list[float] = []
    zs: list[float] = []
    keep: list[int] = []
    i = 0
    while i < M:
        x, y, z = rows[i]
        j = i + 1
        while j < M and rows[j] == rows[i]:
            j += 1
        pos = bisect.bisect_right(ys, y)
        if not (pos > 0 and zs[pos - 1] <= z):
            keep.extend(int(t) for t in order[i:j])
            lo = bisect.bisect_left(ys, y)
            hi = lo
            while hi < len(ys) and zs[hi] >= z:
                hi += 1
            ys[lo:hi] = [y]
            zs[lo:hi] = [z]
        i = j
    return np.sort(np.asarray(keep, dtype=np.int64))


def pareto_minima_3d_np(points: np.ndarray, maximize: Sequence[bool]) -> np.ndarray:
    """NumPy reference: the plain sweep, no pre-filter."""
    return _sweep_np(_minimised(points, maximize))


# ------------------------------------------------------------------ numba port
@njit
def _sweep_nb(points, rows):
    """Non-dominated rows among ``points[rows]`` (``rows`` ascending), as row
    indices in sweep order; the staircase is kept in sorted arrays (binary search
    plus a shift per insertion instead of a balanced tree)."""
    M = rows.shape[0]
    order = rows.copy()
    for d in (2, 1, 0):  # lexicographic (x, y, z), ties by index: stable passes
        order = order[np.argsort(points[order, d], kind="mergesort")]
    sy = np.empty(M)
    sz = np.empty(M)
    size = 0
    keep = np.empty(M, dtype=np.int64)
    n_keep = 0
    i = 0
    while i < M:
        r = order[i]
        x = points[r, 0]
        y = points[r, 1]
        z = points[r, 2]
        j = i + 1
        while (
            j < M
            and points[order[j], 0] == x
            and points[order[j], 1] == y
            and points[order[j], 2] == z
        ):
            j += 1
        # first staircase position with sy > y
        pos = np.searchsorted(sy[:size], y, side="right")
        dominated = pos > 0 and sz[pos - 1] <= z
        if not dominated:
            for t in range(i, j):
                keep[n_keep] = order[t]
                n_keep += 1
            lo = np.searchsorted(sy[:size], y, side="left")
            hi = lo
            while hi < size and sz[hi] >= z:
                hi += 1
            # replace [lo, hi) by the single entry (y, z)
            shift = 1 - (hi - lo)
            if shift > 0:
                for t in range(size - 1, hi - 1, -1):
                    sy[t + shift] = sy[t]
                    sz[t + shift] = sz[t]
            elif shift < 0:
                for t in range(hi, size):
                    sy[t + shift] = sy[t]
                    sz[t + shift] = sz[t]
            sy[lo] = y
            sz[lo] = z
            size += shift
        i = j
    return keep[:n_keep]


@njit
def _dominates_nb(p, a, b):
    return (
        p[a, 0] <= p[b, 0]
        and p[a, 1] <= p[b, 1]
        and p[a, 2] <= p[b, 2]
        and (p[a, 0] < p[b, 0] or p[a, 1] < p[b, 1] or p[a, 2] < p[b, 2])
    )


@njit
def _pivots_nb(points):
    """Rows of the strided sample's maxima chosen greedily to dominate the most
    sample rows (pareto3d.hpp ``choose_pivots``); empty when not worth a pass."""
    M = points.shape[0]
    S = _SAMPLE
    sample = (np.arange(S) * M) // S
    front = _sweep_nb(points, sample)
    F = front.shape[0]
    none = np.empty(0, dtype=np.int64)
    if F > _MAX_CANDIDATES:
        return none
    dom = np.zeros((F, S), dtype=np.bool_)
    for f in range(F):
        for s in range(S):
            dom[f, s] = _dominates_nb(points, front[f], sample[s])
    covered = np.zeros(S, dtype=np.bool_)
    pivots = np.empty(_PIVOTS, dtype=np.int64)
    n_piv = 0
    n_covered = 0
    min_gain = max(1, S // 512)
    while n_piv < _PIVOTS:
        best = F
        best_gain = 0
        for f in range(F):
            gain = 0
            for s in range(S):
                if dom[f, s] and not covered[s]:
                    gain += 1
            if gain > best_gain:
                best_gain = gain
                best = f
        if best == F or best_gain < min_gain:
            break
        covered |= dom[best]
        n_covered += best_gain
        pivots[n_piv] = front[best]
        n_piv += 1
    if 16 * n_covered < S:
        return none
    return pivots[:n_piv]


@njit(parallel=True)
def _survivors_nb(points, pivots):
    M = points.shape[0]
    alive = np.empty(M, dtype=np.bool_)
    for i in prange(M):
        ok = True
        for k in range(pivots.shape[0]):
            if _dominates_nb(points, pivots[k], i):
                ok = False
                break
        alive[i] = ok
    return np.flatnonzero(alive)


@njit
def pareto_minima_3d_nb(points):
    """Non-dominated rows of already-minimised, NaN-free ``(M, 3)`` float64 points,
    ascending: the pivot pre-filter then the sweep, as in pareto3d.hpp."""
    M = points.shape[0]
    rows = np.arange(M)
    if M >= _PREFILTER_MIN:
        pivots = _pivots_nb(points)
        if pivots.shape[0] > 0:
            rows = _survivors_nb(points, pivots)
    return np.sort(_sweep_nb(points, rows))


def pareto_minima_3d_numba(points: np.ndarray, maximize: Sequence[bool]) -> np.ndarray:
    return pareto_minima_3d_nb(_minimised(points, maximize))


def pareto_minima_3d_cpp(points: np.ndarray, maximize: Sequence[bool]) -> np.ndarray:
    # the binding negates, reads -0.0 as 0.0 and checks NaN itself: no copy here
    pts = np.asarray(points, dtype=np.float64)
    return np.asarray(core().pareto_minima_3d(pts, tuple(bool(f) for f in maximize)))


register(
    Kernel(
        "pareto_minima_3d",
        numpy=pareto_minima_3d_np,
        numba=pareto_minima_3d_numba,
        cpp=pareto_minima_3d_cpp,
        family="pareto3d",
    )
)
