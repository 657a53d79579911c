"""3-D Pareto maxima in ``O(M log M)`` and the (quality, cost, latency) frontier of
routing policies (design §6, "Latency")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._kernels import dispatch
from ._protocol import ResultProtocol, plain
from ._validate import bool_flags, real_number, require_results, whole_number
from .results import EvalResults

__all__ = ["LatencyFrontier", "latency_frontier", "pareto_3d"]


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
    (Kung, Luccio & Preparata 1975): ``O(M log M)`` time, ``O(M)`` memory. On large
    inputs the compiled backends first drop, in one pass, the rows dominated by a
    few pivot rows picked on a sample (exact: the result is the same set).

    Returns
    -------
    int64 array of row indices, ascending.
    """
    run = dispatch("pareto_minima_3d", backend)
    pts = np.asarray(points)
    if pts.dtype.kind not in "biuf":
        raise ValueError(f"points must be numeric, got dtype {pts.dtype}")
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f"points must be shaped (M, 3), got {pts.shape}")
    flags = tuple(bool_flags(maximize, 3, "maximize"))
    if pts.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return run(pts, flags)  # raises ValueError on NaN


# --------------------------------------------------------------------------- latency
@dataclass
class LatencyFrontier(ResultProtocol):
    """Routing policies in (quality, cost, latency) and their Pareto sets.

    Attributes
    ----------
    policies : DataFrame
        One row per candidate policy: ``quality``, ``cost``, ``latency_mean``,
        ``latency_p95`` (over prompts of the chosen option's latency),
        ``lambda_cost``, ``lambda_latency`` (the scalarisation
        ``q - lambda_cost * c - lambda_latency * t`` that the policy maximises, in the
        data's units; ``inf`` when the quality weight is 0; NaN for single models),
        ``source`` (``"supported"``: a vertex of the upper convex hull of the
        mean-latency set, found by :func:`latency_frontier`; ``"single"``: one model,
        or one model's best-of-k, on every prompt), ``label``, and the flags
        ``pareto_mean``, ``pareto_p95`` (non-dominated among the candidates with mean
        / P95 latency) and ``hull_mean`` (a vertex of the upper convex hull of the
        mean-latency set).
    choices : (n_policies, N) int array
        Option chosen per prompt by each policy (row of ``policies``); option
        ``j = l * K + (k - 1)`` is model ``option_model[j]`` with ``option_k[j]``
        draws.
    option_model, option_k : (M,) int
    models : model names
    exact : bool
        False when ``max_policies`` stopped the search before every hull facet was
        confirmed (a warning was raised).
    n_solves : int
        Weighted problems solved (one ``O(N M)`` argmax each).
    """

    policies: pd.DataFrame
    choices: np.ndarray | None = None
    option_model: np.ndarray | None = None
    option_k: np.ndarray | None = None
    models: np.ndarray | None = None
    exact: bool = True
    n_solves: int = 0

    @property
    def value(self) -> float:
        """The result protocol's headline: the highest quality of any candidate
        policy (the quality end of the frontier); no interval."""
        q = self.policies["quality"].to_numpy(dtype=np.float64)
        return float(q.max()) if q.size else float("nan")

    def to_dict(self) -> dict[str, Any]:
        """``value``, ``exact``, ``n_solves``, the models and the ``policies``
        table as records (the per-prompt ``choices`` are left out)."""
        d = self._protocol_head()
        d.update(
            exact=bool(self.exact),
            n_solves=int(self.n_solves),
            models=plain(None if self.models is None else np.asarray(self.models)),
            policies=plain(self.policies),
        )
        return d

    def to_frame(self) -> pd.DataFrame:
        """The candidate policies (:attr:`policies`), one row each."""
        return self.policies

    def pareto(self, latency: str = "mean") -> pd.DataFrame:
        if latency not in ("mean", "p95"):
            raise ValueError("latency must be 'mean' or 'p95'")
        return self.policies[self.policies[f"pareto_{latency}"]]

    def hull(self) -> pd.DataFrame:
        return self.policies[self.policies["hull_mean"]]

    def policy(self, i: int) -> pd.DataFrame:
        """Per prompt: the model and ``k`` that policy ``i`` (a row position of
        ``policies``) routes it to."""
        if self.choices is None or self.option_model is None:
            raise ValueError("this LatencyFrontier keeps no per-prompt choices")
        j = self.choices[int(i)]
        names = np.asarray(self.models).astype(str)
        return pd.DataFrame(
            {"model": names[self.option_model[j]], "k": self.option_k[j]}
        )

    def plot(self, ax=None, latency: str = "mean"):  # type: ignore[no-untyped-def]
        """Cost (x) against quality (y) of the candidates, coloured by latency; the
        non-dominated ones ringed. Returns the Axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6.5, 5))
        pol = self.policies
        col = f"latency_{latency}"
        sc = ax.scatter(pol["cost"], pol["quality"], c=pol[col], s=10, cmap="viridis")
        on = pol[f"pareto_{latency}"]
        ax.scatter(
            pol.loc[on, "cost"],
            pol.loc[on, "quality"],
            s=30,
            facecolors="none",
            edgecolors="k",
            lw=0.5,
            label=f"non-dominated ({latency} latency)",
        )
        ax.figure.colorbar(sc, ax=ax, label=f"{latency} latency")
        ax.set_xlabel("mean cost per prompt")
        ax.set_ylabel("mean quality")
        ax.legend(loc="lower right", fontsize=8)
        return ax


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


_SOLVE_CELLS = 1 << 22  # (weights x prompts x options) per vectorised chunk


def _argmax_policies(z: np.ndarray, avail: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``(F, N)`` option per prompt maximising ``W[f] . z[n, j]`` (``z`` shaped
    ``(N, M, 3)``, every column to be maximised). Ties: the higher quality, then
    the lower cost, the lower latency, the first option (lexicographic, so a tie
    picks a vertex of the optimal face)."""
    N, M, _ = z.shape
    F = W.shape[0]
    out = np.empty((F, N), dtype=np.int64)
    step = max(1, _SOLVE_CELLS // max(1, N * M))
    neg = np.where(avail[None], 0.0, -np.inf)
    # tie rank per prompt: quality desc, then (all columns maximised) -cost desc,
    # -latency desc, option index asc
    keys = (
        np.broadcast_to(np.arange(M), (N, M)),
        -z[:, :, 2],
        -z[:, :, 1],
        -z[:, :, 0],
    )
    rank = np.empty((N, M), dtype=np.int64)
    for n0 in range(0, N, 4096):
        sl = slice(n0, n0 + 4096)
        o = np.lexsort(tuple(k[sl] for k in keys), axis=-1)
        np.put_along_axis(rank[sl], o, np.arange(M)[None, :], axis=1)
    for a in range(0, F, step):
        w = W[a : a + step]
        score = np.einsum("nmd,fd->fnm", z, w) + neg
        tied = score >= score.max(axis=2, keepdims=True)
        out[a : a + step] = np.argmin(np.where(tied, rank[None], M), axis=2)
    return out


def _policy_means(z: np.ndarray, choices: np.ndarray) -> np.ndarray:
    """``(F, 3)`` mean over prompts of ``z[n, choices[f, n]]``."""
    N = z.shape[0]
    out = np.empty((choices.shape[0], 3))
    step = max(1, _SOLVE_CELLS // max(1, 3 * N))
    for a in range(0, choices.shape[0], step):
        out[a : a + step] = z[np.arange(N)[None, :], choices[a : a + step]].mean(axis=1)
    return out


def _prune_options(
    z: np.ndarray, avail: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per prompt, drop options that no weighted problem picks (with its tie rule):
    those weakly dominated by another option (all columns maximised), and later
    copies of equal options. Returns (original index (N, M'), z (N, M', 3),
    available (N, M')) with ``M'`` the most options any prompt keeps."""
    N, M, _ = z.shape
    keep = np.zeros((N, M), dtype=bool)
    step = max(1, _SOLVE_CELLS // max(1, M * M))
    later = np.triu(np.ones((M, M), dtype=bool), 1)  # [i, j]: i before j
    for a in range(0, N, step):
        zz, av = z[a : a + step], avail[a : a + step]
        ge = (zz[:, :, None, :] >= zz[:, None, :, :]).all(axis=3)  # [n, i, j]: i >= j
        gt = (zz[:, :, None, :] > zz[:, None, :, :]).any(axis=3)
        beats = ge & (gt | later[None]) & av[:, :, None] & av[:, None, :]
        keep[a : a + step] = av & ~beats.any(axis=1)
    width = max(1, int(keep.sum(axis=1).max()))
    order = np.argsort(~keep, axis=1, kind="stable")[:, :width]
    ok = np.take_along_axis(keep, order, axis=1)
    zr = np.take_along_axis(z, order[:, :, None], axis=1)
    return order, zr, ok


def _augmented_hull(x: np.ndarray) -> Any:
    """Qhull of ``x`` (``(P, 3)``, all columns maximised) together with
    ``x - B e_i`` (free disposal, truncated): every facet whose outward normal is
    componentwise >= 0 is a facet (or, when it holds a shifted point, the truncation
    of an unbounded facet) of ``conv(x) - orthant``; any ``B > 0`` works."""
    from scipy.spatial import ConvexHull

    span = float(np.ptp(x, axis=0).max()) if len(x) > 1 else 0.0
    B = max(span, 1.0)
    shifted = [x - B * np.eye(3)[i] for i in range(3)]
    return ConvexHull(np.vstack([x, *shifted]))


def _upper_facets(hull: Any, tol: float = 1e-12) -> np.ndarray:
    """Rows of ``hull.equations`` with an outward normal >= 0 (up to ``tol``)."""
    return np.flatnonzero((hull.equations[:, :3] >= -tol).all(axis=1))


def _supported_points(
    z: np.ndarray, avail: np.ndarray, max_policies: int, tol: float
) -> tuple[np.ndarray, np.ndarray, bool, int]:
    """All vertices of the upper convex hull of the mean-latency set, by adaptive
    facet refinement (NISE / Benson outer approximation). Returns (choices (P, N),
    weights (P, 3), exact, number of weighted solves)."""
    start = np.array(
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]
    )
    choices = _argmax_policies(z, avail, start)
    pts = _policy_means(z, choices)
    _, first = np.unique(pts, axis=0, return_index=True)
    first = np.sort(first)
    first = first[:max_policies]
    choices, pts, weights = choices[first], pts[first], start[first]
    solves = len(start)
    tried: set[tuple[float, ...]] = set()
    seen = {tuple(np.round(p / tol)) for p in pts}
    pts_l, choices_l, weights_l = list(pts), list(choices), list(weights)
    exact = True
    while True:
        pts = np.asarray(pts_l)
        hull = _augmented_hull(pts)
        todo = []
        for f in _upper_facets(hull):
            n = np.clip(hull.equations[f, :3], 0.0, None)
            key = tuple(np.round(n / n.sum(), 12))
            if key in tried:
                continue
            tried.add(key)
            todo.append(f)
        if not todo:
            break
        W = np.clip(hull.equations[todo, :3], 0.0, None)
        new = _argmax_policies(z, avail, W)
        solves += len(todo)
        means = _policy_means(z, new)
        eqs = hull.equations[todo]
        gaps = np.einsum("fd,fd->f", eqs[:, :3], means) + eqs[:, 3]
        cand = [  # (distance beyond the facet, point, choice, weight)
            (float(g), p, c, w)
            for g, p, c, w in zip(gaps, means, new, W, strict=True)
            if g > tol  # else the facet supports the reachable set: confirmed
        ]
        cand.sort(key=lambda item: -item[0])  # farthest first (matters when capped)
        added = False
        for _gap, p, c, w in cand:
            key = tuple(np.round(p / tol))
            if key in seen:
                continue
            if len(pts_l) >= max_policies:
                exact = False
                break
            seen.add(key)
            pts_l.append(p)
            choices_l.append(c)
            weights_l.append(w)
            added = True
        if not exact or not added:
            break
    choices, weights = np.asarray(choices_l), np.asarray(weights_l)
    return choices, weights, exact, solves


def latency_frontier(
    results: EvalResults,
    *,
    posthoc: bool = False,
    max_k: int | None = None,
    cost: str | np.ndarray | None = None,
    max_policies: int = 5_000,
    tol: float = 1e-10,
    backend: str | None = None,
) -> LatencyFrontier:
    """(quality, cost, latency) frontier of routing policies (design §6, "Latency").

    A deterministic policy picks one option per prompt (a model, or with
    ``posthoc`` a model's best-of-k run in parallel, waiting for the slowest of the
    ``k`` draws); its point is ``(mean_n q, mean_n c, mean_n t)`` with ``t`` the
    chosen option's latency. Randomised policies fill the convex hull of these
    points, the Minkowski average of the prompts' option sets.

    **Mean latency (exact).** The supported policies, i.e. the vertices of the upper
    convex hull of the reachable set (quality up, cost and latency down), are found
    exactly by adaptive facet refinement (NISE / Benson outer approximation): start
    from the policies maximising quality, minimising cost, minimising latency and
    an equal-weight trade-off; take the convex hull of the points found, extended
    by free disposal (qhull, ``scipy.spatial.ConvexHull``); for every facet with
    outward normal ``w >= 0`` solve the weighted problem
    ``argmax_j w_q q[n, j] - w_c c[n, j] - w_t t[n, j]`` per prompt (``O(N M)``, on
    cost and latency scaled by their largest option value); add the policy when it
    lies beyond the facet by more than ``tol``; stop when every facet is confirmed.
    Then every facet supports the reachable set, so the hull found is the hull of
    all ``M^N`` policies. Ties in a weighted problem go to the higher quality, then
    the lower cost, the lower latency, the first option, which picks a vertex of
    the optimal face.

    **P95 latency (heuristic).** P95 over prompts is not additive, so the P95 set
    is not searched over all policies: ``pareto_p95`` marks the candidates (the
    supported policies and the single models) that no other candidate dominates
    with P95 latency. It is exact relative to those candidates only; a policy
    outside them may dominate some.

    Parameters
    ----------
    results : EvalResults
        With latency (and cost, or pass ``cost``).
    posthoc : bool
        Add best-of-k options (quality = unbiased pass@k, cost = ``k`` times the
        cell's mean cost, latency = the unbiased expected max of ``k`` draws).
    max_k : int, optional
    cost : None | ``"unit"`` | array, as in :func:`capfront.frontier`.
    max_policies : int
        Safety cap on the supported policies kept; when reached the search stops
        with a ``RuntimeWarning`` and ``exact=False`` (each round adds the points
        farthest beyond their facets first). The hull of a 3-D Minkowski sum can
        have ``O((N m)^2)`` vertices (``m`` edges per prompt), so large data sets
        reach the cap: e.g. BFCL, 1,700 entries x 56 models, has more than 20,000.
    tol : float
        A point must lie beyond a facet by more than ``tol`` (scaled units) to count.
    backend : passed to :func:`pareto_3d`.

    Returns
    -------
    LatencyFrontier
    """
    import warnings

    from .frontier import _resolve_max_k, frontier_options

    require_results(results)
    max_policies = whole_number(max_policies, "max_policies", minimum=1)
    tol = real_number(tol, "tol", positive=True)
    K = _resolve_max_k(results, posthoc, max_k)
    c, q, om, ok = frontier_options(
        results, posthoc=posthoc, max_k=K if posthoc else None, cost=cost
    )
    t = _latency_options(results, posthoc, K)
    avail = np.isfinite(c) & np.isfinite(q) & np.isfinite(t)
    if not avail.any(axis=1).all():
        raise ValueError("some prompts have no option with quality, cost and latency")
    if (np.where(avail, t, 0.0) < 0).any():
        raise ValueError("latency must be >= 0")
    c_scale = float(np.max(np.where(avail, np.abs(c), 0.0))) or 1.0
    t_scale = float(np.max(np.where(avail, t, 0.0))) or 1.0
    z = np.stack(
        [
            np.where(avail, q, 0.0),
            -np.where(avail, c, 0.0) / c_scale,
            -np.where(avail, t, 0.0) / t_scale,
        ],
        axis=2,
    )
    keep_idx, zr, ar = _prune_options(z, avail)
    choices, weights, exact, solves = _supported_points(
        zr, ar, int(max_policies), float(tol)
    )
    choices = np.take_along_axis(keep_idx, choices.T, axis=1).T
    if not exact:
        warnings.warn(
            f"latency_frontier stopped at max_policies={max_policies} supported "
            "policies before every hull facet was confirmed: the mean-latency hull "
            "is incomplete (raise max_policies)",
            RuntimeWarning,
            stacklevel=2,
        )
    N = c.shape[0]
    singles = [j for j in range(c.shape[1]) if avail[:, j].all()]
    all_choices = np.vstack(
        [choices, np.tile(np.asarray(singles, dtype=np.int64)[:, None], (1, N))]
    )
    rows: list[dict] = []
    for i, ch in enumerate(all_choices):
        if i < len(choices):
            wq, wc, wt = weights[i]
            with np.errstate(divide="ignore", invalid="ignore"):
                lc = wc / c_scale / wq if wq > 0 else np.inf
                lt = wt / t_scale / wq if wq > 0 else np.inf
            row = _policy_row(c, q, t, ch, lc, lt, "supported")
        else:
            j = singles[i - len(choices)]
            row = _policy_row(
                c,
                q,
                t,
                ch,
                np.nan,
                np.nan,
                "single",
                f"{results.models[om[j]]}@{ok[j]}",
            )
        rows.append(row)
    table = pd.DataFrame(rows)
    hull_mean = _upper_hull_flags(table[["quality", "cost", "latency_mean"]].to_numpy())
    if exact:  # a tie may have found a point inside a hull face: not supported
        keep = ~((table["source"] == "supported").to_numpy() & ~hull_mean)
        if not keep.all():
            table = table[keep].reset_index(drop=True)
            all_choices, hull_mean = all_choices[keep], hull_mean[keep]
    for kind in ("mean", "p95"):
        pts = table[["quality", "cost", f"latency_{kind}"]].to_numpy()
        flag = np.zeros(len(table), dtype=bool)
        flag[pareto_3d(pts, backend=backend)] = True
        table[f"pareto_{kind}"] = flag
    table["hull_mean"] = hull_mean
    return LatencyFrontier(
        table,
        choices=all_choices,
        option_model=om,
        option_k=ok,
        models=np.asarray(results.models),
        exact=exact,
        n_solves=solves,
    )


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


def _upper_hull_flags(pts: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """Rows of ``(quality, cost, latency)`` points that are vertices of the upper
    convex hull (quality up, cost and latency down): vertices of a facet of
    ``conv(pts)`` extended by free disposal whose outward normal is >= 0. Equal
    points are flagged together."""
    pts = np.asarray(pts, dtype=np.float64)
    flags = np.zeros(len(pts), dtype=bool)
    if len(pts) == 0:
        return flags
    span = np.ptp(pts, axis=0)
    span[span == 0] = 1.0
    x = (pts - pts.min(axis=0)) / span * np.array([1.0, -1.0, -1.0])
    uniq, inverse = np.unique(x, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    hull = _augmented_hull(uniq)
    vert = np.zeros(len(uniq), dtype=bool)
    for f in _upper_facets(hull, tol):
        s = hull.simplices[f]
        vert[s[s < len(uniq)]] = True
    # qhull's triangulation may put a point of a flat facet in a simplex without it
    # being a vertex: keep only points that are extreme (not inside the hull of the
    # others on that facet) -- re-hull without each candidate would be O(P^2), so use
    # qhull's vertex list, which holds extreme points only
    extreme = np.zeros(len(uniq) + 3 * len(uniq), dtype=bool)
    extreme[hull.vertices] = True
    vert &= extreme[: len(uniq)]
    return vert[inverse]
