"""3-D Pareto maxima in ``O(M log M)`` and the (quality, cost, latency) frontier of
routing policies (SPEC 6, "Latency")."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._backend import core, resolve_backend
from ._numba_frontier import pareto_minima_3d_nb
from .results import EvalResults

__all__ = ["LatencyFrontier", "latency_frontier", "pareto_3d"]


def _pareto_minima_np(points: np.ndarray) -> np.ndarray:
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


def pareto_3d(
    points: np.ndarray,
    *,
    maximize: Sequence[bool] = (True, False, False),
    backend: str | None = None,
) -> np.ndarray:
    """Indices of the non-dominated rows of an ``(M, 3)`` array.

    Row ``a`` dominates row ``b`` when ``a`` is at least as good in every column and
    strictly better in one ("good" = larger where ``maximize`` is true, smaller
    elsewhere; default: quality up, cost down, latency down). Exact duplicates do not
    dominate each other: **every copy of a non-dominated point is kept**.

    Sweep in lexicographic order with a balanced-tree staircase of the 2-D minima
    (Kung, Luccio & Preparata 1975): ``O(M log M)`` time, ``O(M)`` memory.

    Returns
    -------
    int64 array of row indices, ascending.
    """
    name = resolve_backend(backend)
    pts = np.asarray(points)
    if pts.dtype.kind not in "biuf":
        raise ValueError(f"points must be numeric, got dtype {pts.dtype}")
    pts = np.array(pts, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f"points must be shaped (M, 3), got {pts.shape}")
    if np.isnan(pts).any():
        raise ValueError("points contain NaN")
    flags = [bool(f) for f in maximize]
    if len(flags) != 3:
        raise ValueError("maximize must have 3 entries")
    for d, f in enumerate(flags):
        if f:
            pts[:, d] = -pts[:, d]
    pts += 0.0  # -0.0 -> 0.0 so that 0 and -0 form one duplicate run everywhere
    if pts.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    if name == "cpp":
        return np.asarray(core().pareto_minima_3d(np.ascontiguousarray(pts)))
    if name == "numba":
        return pareto_minima_3d_nb(pts)
    return _pareto_minima_np(pts)


# --------------------------------------------------------------------------- latency
@dataclass
class LatencyFrontier:
    """Candidate routing policies in (quality, cost, latency) and their Pareto sets.

    Attributes
    ----------
    policies : DataFrame
        One row per candidate: ``quality``, ``cost``, ``latency_mean``,
        ``latency_p95`` (over prompts of the chosen option's latency),
        ``lambda_cost``, ``lambda_latency`` (the scalarisation that produced it, NaN
        for single models), ``source`` ("scalarised" / "single"), and the flags
        ``pareto_mean``, ``pareto_p95`` (non-dominated with mean / P95 latency) and
        ``hull_mean`` (a vertex of the upper convex hull of the mean-latency set).
    """

    policies: pd.DataFrame

    def pareto(self, latency: str = "mean") -> pd.DataFrame:
        if latency not in ("mean", "p95"):
            raise ValueError("latency must be 'mean' or 'p95'")
        return self.policies[self.policies[f"pareto_{latency}"]]

    def hull(self) -> pd.DataFrame:
        return self.policies[self.policies["hull_mean"]]


def _latency_options(results: EvalResults, posthoc: bool, K: int) -> np.ndarray:
    """(N, L*K) latency of each option: the cell mean for k = 1; for best-of-k run
    in parallel, the unbiased expected max of k of the cell's latency draws."""
    if not results.has_latency:
        raise ValueError("these results have no latency")
    N, L = results.n_prompts, results.n_models
    lat = np.where(results.observed, results.mean_latency, np.nan)
    if not posthoc or K == 1:
        return lat[:, :, None].repeat(K, axis=2).reshape(N, L * K)
    if results.latency is None:
        raise ValueError(
            "posthoc latency (max of k parallel draws) needs the per-draw latency "
            "(build the results with keep_scores=True)"
        )
    from scipy.special import comb

    draws = np.asarray(results.latency, dtype=np.float64)
    valid = results.valid_draws
    srt = np.sort(np.where(valid, draws, np.inf), axis=2)
    G = results.n_draws
    out = np.full((N, L, K), np.nan)
    for g in np.unique(G[G > 0]):
        cells = G == g
        vals = srt[cells][:, :g]
        i = np.arange(1, g + 1)
        for k in range(1, min(K, g) + 1):
            out[cells, k - 1] = vals @ (comb(i - 1, k - 1) / comb(g, k))
    return out.reshape(N, L * K)


def latency_frontier(
    results: EvalResults,
    *,
    posthoc: bool = False,
    max_k: int | None = None,
    cost: str | np.ndarray | None = None,
    n_lambda: int = 24,
    backend: str | None = None,
) -> LatencyFrontier:
    """(quality, cost, latency) frontier of routing policies (SPEC 6, "Latency").

    Candidates: every single model (and its best-of-k with ``posthoc``), and the
    policies that route each prompt to ``argmax_j q - lambda_c * c - lambda_t * t``
    over a log-spaced grid of ``(lambda_c, lambda_t)`` (``n_lambda`` values each,
    plus 0), scaled by the data's cost and latency ranges. With latency taken as the
    mean over prompts, every vertex of the reachable set's upper hull is such a
    scalarised policy, so the grid approximates that hull from inside (it is not
    exact, unlike :func:`capfront.frontier`). A policy's latency is the mean or the
    P95 over prompts of its chosen option's latency; best-of-k runs in parallel and
    waits for the slowest of ``k`` draws. Ties go to the cheaper, then faster, then
    first option.

    Returns
    -------
    LatencyFrontier
        with the non-dominated candidates for mean and P95 latency
        (:func:`pareto_3d`, quality up, cost and latency down) and the vertices of the
        upper convex hull of the mean-latency set.
    """
    from .frontier import _resolve_max_k, frontier_options

    K = _resolve_max_k(results, posthoc, max_k)
    c, q, om, ok = frontier_options(
        results, posthoc=posthoc, max_k=K if posthoc else None, cost=cost
    )
    t = _latency_options(results, posthoc, K)
    avail = np.isfinite(c) & np.isfinite(q) & np.isfinite(t)
    if not avail.any(axis=1).all():
        raise ValueError("some prompts have no option with quality, cost and latency")
    c_scale = float(np.nanmax(np.where(avail, c, np.nan))) or 1.0
    t_scale = float(np.nanmax(np.where(avail, t, np.nan))) or 1.0
    grid = np.r_[0.0, np.logspace(-3, 2, n_lambda)]
    rows: list[dict] = []
    qa = np.where(avail, q, -np.inf)
    for lc in grid:
        for lt in grid:
            score = (
                qa
                - (lc / c_scale) * np.where(avail, c, 0.0)
                - (lt / t_scale) * np.where(avail, t, 0.0)
            )
            best = score.max(axis=1, keepdims=True)
            tied = score >= best
            # ties: cheaper, then faster, then first option
            tc = np.where(tied, c, np.inf)
            tied &= tc <= tc.min(axis=1, keepdims=True)
            tt = np.where(tied, t, np.inf)
            tied &= tt <= tt.min(axis=1, keepdims=True)
            j = np.argmax(tied, axis=1)
            rows.append(_policy_row(c, q, t, j, lc, lt, "scalarised"))
    scalarised = pd.DataFrame(rows).drop_duplicates(
        subset=["quality", "cost", "latency_mean", "latency_p95"]
    )
    singles = [
        _policy_row(
            c,
            q,
            t,
            np.full(c.shape[0], j),
            np.nan,
            np.nan,
            "single",
            f"{results.models[om[j]]}@{ok[j]}",
        )
        for j in range(c.shape[1])
        if avail[:, j].all()
    ]
    table = pd.concat(
        [scalarised, pd.DataFrame(singles, columns=scalarised.columns)],
        ignore_index=True,
    )
    for kind in ("mean", "p95"):
        pts = table[["quality", "cost", f"latency_{kind}"]].to_numpy()
        flag = np.zeros(len(table), dtype=bool)
        flag[pareto_3d(pts, backend=backend)] = True
        table[f"pareto_{kind}"] = flag
    table["hull_mean"] = _upper_hull_flags(
        table[["quality", "cost", "latency_mean"]].to_numpy()
    )
    return LatencyFrontier(table)


def _policy_row(c, q, t, j, lc, lt, source, label=""):
    n = np.arange(c.shape[0])
    tj = t[n, j]
    return {
        "quality": float(q[n, j].mean()),
        "cost": float(c[n, j].mean()),
        "latency_mean": float(tj.mean()),
        "latency_p95": float(np.percentile(tj, 95)),
        "lambda_cost": float(lc),
        "lambda_latency": float(lt),
        "source": source,
        "label": label,
    }


def _upper_hull_flags(pts: np.ndarray) -> np.ndarray:
    """Vertices of the convex hull of (quality, cost, latency) that lie on a facet
    facing quality up / cost down / latency down (the "upper" hull)."""
    flags = np.zeros(len(pts), dtype=bool)
    if len(pts) < 5:
        flags[:] = True
        return flags
    from scipy.spatial import ConvexHull, QhullError

    span = pts.max(axis=0) - pts.min(axis=0)
    span[span == 0] = 1.0
    z = (pts - pts.min(axis=0)) / span
    try:
        hull = ConvexHull(z)
    except QhullError:
        flags[:] = True  # flat set: every point is extreme in its plane
        return flags
    for eq, simplex in zip(hull.equations, hull.simplices, strict=True):
        nrm = eq[:3]
        if nrm[0] >= 0 and nrm[1] <= 0 and nrm[2] <= 0 and nrm.any():
            flags[simplex] = True
    return flags
