"""Fused per-cell statistics of a score tensor (``cpp/include/capfront/suffstats.hpp``,
``src/register_suffstats.cpp``): the NumPy reference and the Numba port side by side.

Kernel ``sufficient_stats(scores, mask, cost, latency) -> dict``: ``scores``
shaped ``(N, L, G)`` (any numeric dtype, any layout), ``mask`` (uint8 of the same
shape, 1 = a draw, or ``None``), ``cost`` and ``latency`` (native contiguous
float64 of the same shape, or ``None``). Per cell over the valid draws: the sum
``successes`` and ``sum_sq`` of the scores, ``n_draws``, ``max_score`` (NaN
without a draw), ``cost_sum``, ``latency_sum`` and ``latency_max``; and counts of
bad values (``nonfinite_scores``, ``out_of_range_scores`` outside [0, 1],
``nonbinary_scores``, ``bad_cost`` and ``bad_latency``: negative or non-finite).
"""

from __future__ import annotations

import numpy as np

from .._backend import core
from .._jit import njit, prange
from . import Kernel, register


# ------------------------------------------------------------------ NumPy reference
def suffstats_np(scores, mask, cost, latency) -> dict:
    """Plain NumPy reference."""
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: flagged
        return _suffstats_np(scores, mask, cost, latency)


def _suffstats_np(scores, mask, cost, latency) -> dict:
    x = np.asarray(scores, dtype=np.float64)
    valid = np.ones(x.shape, bool) if mask is None else np.asarray(mask, bool)
    xv = np.where(valid, x, 0.0)
    finite = np.isfinite(x) & valid
    out = {
        "successes": xv.sum(axis=-1),
        "sum_sq": (xv * xv).sum(axis=-1),
        "n_draws": valid.sum(axis=-1).astype(np.int64),
        "max_score": np.where(valid, x, -np.inf).max(axis=-1, initial=-np.inf),
        "nonfinite_scores": int((valid & ~np.isfinite(x)).sum()),
        "out_of_range_scores": int((finite & ((x < 0) | (x > 1))).sum()),
        "nonbinary_scores": int((finite & (x != 0) & (x != 1)).sum()),
        "cost_sum": None,
        "latency_sum": None,
        "latency_max": None,
        "bad_cost": 0,
        "bad_latency": 0,
    }
    out["max_score"][out["n_draws"] == 0] = np.nan
    if cost is not None:
        c = np.asarray(cost, dtype=np.float64)
        out["cost_sum"] = np.where(valid, c, 0.0).sum(axis=-1)
        out["bad_cost"] = int((valid & ~(np.isfinite(c) & (c >= 0))).sum())
    if latency is not None:
        t = np.asarray(latency, dtype=np.float64)
        out["latency_sum"] = np.where(valid, t, 0.0).sum(axis=-1)
        out["latency_max"] = np.where(valid, t, 0.0).max(axis=-1, initial=0.0)
        out["bad_latency"] = int((valid & ~(np.isfinite(t) & (t >= 0))).sum())
    return out


# ------------------------------------------------------------------ Numba port
@njit(parallel=True)
def _suffstats_loop(
    scores,
    mask,
    has_mask,
    cost,
    has_cost,
    latency,
    has_lat,
    successes,
    sum_sq,
    n_draws,
    max_score,
    cost_sum,
    lat_sum,
    lat_max,
    flags,
):
    N, L, G = scores.shape
    for n in prange(N):
        f0 = 0
        f1 = 0
        f2 = 0
        f3 = 0
        f4 = 0
        for l in range(L):
            s = 0.0
            s2 = 0.0
            mx = -np.inf
            cs = 0.0
            ls = 0.0
            lm = 0.0
            cnt = 0
            for g in range(G):
                if has_mask and mask[n, l, g] == 0:
                    continue
                v = np.float64(scores[n, l, g])  # float() keeps float32
                cnt += 1
                if not np.isfinite(v):
                    f0 += 1
                else:
                    if v < 0.0 or v > 1.0:
                        f1 += 1
                    if v != 0.0 and v != 1.0:
                        f2 += 1
                s += v
                s2 += v * v
                if v > mx:
                    mx = v
                if has_cost:
                    c = cost[n, l, g]
                    if not (c >= 0.0) or not np.isfinite(c):
                        f3 += 1
                    cs += c
                if has_lat:
                    t = latency[n, l, g]
                    if not (t >= 0.0) or not np.isfinite(t):
                        f4 += 1
                    ls += t
                    if t > lm:
                        lm = t
            successes[n, l] = s
            sum_sq[n, l] = s2
            n_draws[n, l] = cnt
            max_score[n, l] = mx if cnt > 0 else np.nan
            if has_cost:
                cost_sum[n, l] = cs
            if has_lat:
                lat_sum[n, l] = ls
                lat_max[n, l] = lm
        flags[n, 0] = f0
        flags[n, 1] = f1
        flags[n, 2] = f2
        flags[n, 3] = f3
        flags[n, 4] = f4


def suffstats_nb(scores, mask, cost, latency) -> dict:
    N, L, G = scores.shape
    dummy3 = np.zeros((1, 1, 1))
    successes = np.empty((N, L))
    sum_sq = np.empty((N, L))
    n_draws = np.empty((N, L), np.int64)
    max_score = np.empty((N, L))
    cost_sum = np.empty((N, L)) if cost is not None else np.empty((1, 1))
    lat_sum = np.empty((N, L)) if latency is not None else np.empty((1, 1))
    lat_max = np.empty((N, L)) if latency is not None else np.empty((1, 1))
    flags = np.zeros((N, 5), np.int64)
    _suffstats_loop(
        scores,
        mask if mask is not None else np.zeros((1, 1, 1), np.uint8),
        mask is not None,
        cost if cost is not None else dummy3,
        cost is not None,
        latency if latency is not None else dummy3,
        latency is not None,
        successes,
        sum_sq,
        n_draws,
        max_score,
        cost_sum,
        lat_sum,
        lat_max,
        flags,
    )
    tot = flags.sum(axis=0)
    return {
        "successes": successes,
        "sum_sq": sum_sq,
        "n_draws": n_draws,
        "max_score": max_score,
        "cost_sum": cost_sum if cost is not None else None,
        "latency_sum": lat_sum if latency is not None else None,
        "latency_max": lat_max if latency is not None else None,
        "nonfinite_scores": tot[0],
        "out_of_range_scores": tot[1],
        "nonbinary_scores": tot[2],
        "bad_cost": tot[3],
        "bad_latency": tot[4],
    }


def suffstats_numba(scores, mask, cost, latency) -> dict:
    """The Numba port on bool/uint8/float32 scores as they are, others as
    float64 (native, contiguous)."""
    s = (
        scores
        if scores.dtype in (np.bool_, np.uint8, np.float32)
        else scores.astype(np.float64)
    )
    s = _native(s)
    if s.dtype == np.bool_:
        s = s.view(np.uint8)
    return suffstats_nb(s, mask, cost, latency)


def suffstats_cpp(scores, mask, cost, latency) -> dict:
    """The C++ kernel on bool/uint8/float scores as they are, others as float64."""
    s = (
        scores
        if scores.dtype.kind in "bf" or scores.dtype == np.uint8
        else scores.astype(np.float64)
    )
    raw = core().sufficient_stats(_native(s), mask, cost, latency)
    if raw["sum_sq"] is None and raw["out_of_range_scores"]:
        # bytes > 1 (an error for EvalResults): exact sums of the values
        raw = core().sufficient_stats(scores.astype(np.float64), mask, cost, latency)
    return raw


def _native(arr: np.ndarray) -> np.ndarray:
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return np.ascontiguousarray(arr)


register(
    Kernel(
        "sufficient_stats",
        numpy=suffstats_np,
        numba=suffstats_numba,
        cpp=suffstats_cpp,
        family="suffstats",
    )
)
