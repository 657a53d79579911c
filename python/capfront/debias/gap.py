"""How much of the router-to-oracle gap is real (design §5)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from .._protocol import ResultProtocol
from ..results import EvalResults

MIN_DRAWS_FOR_BOUNDS = 20


@dataclass
class GapDecomposition(ResultProtocol):
    """``R <= O_repro <= O_exp`` with ``Delta = O_exp - O_repro`` (design §5).

    Attributes
    ----------
    o_exp : ``mean_n [1 - prod_l (1 - p_hat)]``, unbiased for the single-draw union
        oracle (draws independent across models).
    o_repro_plugin : ``mean_n max_l p_hat`` (biased up: an upper end).
    o_repro_crossfit : exact expected cross-fit value (biased down: a lower end).
    delta_plugin, delta_crossfit : ``o_exp`` minus each end (``delta_crossfit`` is
        the larger).
    o_repro_lower : one-sided ``level`` lower confidence bound of ``O_repro``.
    delta_upper : one-sided ``level`` upper confidence bound of ``Delta``.
    bound_method : how the bounds were computed.
    noise_share : ``Delta / (O_exp - R)`` for the plug-in and cross-fit ends and for
        the bound (upper), when ``router_accuracy`` is given.
    best_of_k_equal_draws : mean pass@L of the committed (argmax ``p_hat``) model, L
        draws, the same number the union oracle uses.
    best_of_k_equal_cost : pass@K with ``K`` the draws of the committed model that the
        union oracle's cost buys (NaN without costs).
    union_cost, committed_cost : mean cost per prompt of the union oracle and of one
        draw of the committed model.
    """

    o_exp: float
    o_repro_plugin: float
    o_repro_crossfit: float
    delta_plugin: float
    delta_crossfit: float
    o_repro_lower: float | None
    delta_upper: float | None
    level: float
    bound_method: str
    router_accuracy: float | None
    noise_share: dict | None
    best_of_k_equal_draws: float
    best_of_k_equal_cost: float
    union_cost: float
    committed_cost: float
    n_clusters: int
    label: str

    @property
    def value(self) -> float:
        """The result protocol's headline: ``Delta`` (plug-in), the single-draw
        noise floor no committing router can reach."""
        return self.delta_plugin

    @property
    def ci(self) -> tuple[float, float]:
        """One-sided ``level`` interval of ``Delta``: ``(0, delta_upper)``
        (``Delta >= 0`` always); NaN when no bound could be computed."""
        if self.delta_upper is None:
            return (float("nan"), float("nan"))
        return (0.0, float(self.delta_upper))

    def summary(self) -> str:
        lines = [
            f"O_exp (single-draw union oracle) = {self.o_exp:.4f}",
            f"O_repro in [{self.o_repro_crossfit:.4f} (cross-fit), "
            f"{self.o_repro_plugin:.4f} (plug-in)]",
            f"Delta in [{self.delta_plugin:.4f}, {self.delta_crossfit:.4f}]",
        ]
        if self.o_repro_lower is not None:
            lines.append(
                f"{self.level:.0%} lower bound O_repro >= {self.o_repro_lower:.4f};"
                f" upper bound Delta <= {self.delta_upper:.4f} "
                f"({self.bound_method})"
            )
        else:
            lines.append(f"bounds: {self.label}")
        if self.router_accuracy is not None:
            lines.append(
                f"R = {self.router_accuracy:.4f} <= O_repro <= O_exp; noise "
                f"share {self.noise_share}"
            )
        lines.append(
            f"best-of-L on the committed "
            f"model = {self.best_of_k_equal_draws:.4f} vs union "
            f"{self.o_exp:.4f} (equal draws); equal cost: "
            f"{self.best_of_k_equal_cost:.4f}"
        )
        return "\n".join(lines)


def _cluster_se(values: np.ndarray, clusters: np.ndarray | None) -> tuple[float, int]:
    """Standard error of the mean of ``values``; cluster-robust (CR1 over cluster
    totals) when ``clusters`` are given."""
    N = len(values)
    if clusters is None:
        return float(values.std(ddof=1) / np.sqrt(N)), N
    _, codes = np.unique(np.asarray(clusters).astype(str), return_inverse=True)
    codes = codes.ravel()
    C = int(codes.max()) + 1
    if C < 2:
        raise ValueError("clustered bounds need at least 2 clusters")
    resid = values - values.mean()
    tot = np.bincount(codes, weights=resid, minlength=C)
    var = C / (C - 1) * (tot**2).sum() / N**2
    return float(np.sqrt(var)), C


def _gap_rows(results: EvalResults, backend: str | None) -> dict:
    """The per-prompt values of :func:`gap_decomposition`, computed over blocks of
    prompts (no ``(N, L)`` float64 or int64 copies of the counts; N = 2e6, L = 33:
    528 MB each): ``union = 1 - prod_l (1 - p_hat)``, ``plug = max_l p_hat``, the
    expected cross-fit value, pass@K of the committed model (argmax ``p_hat``,
    ties to the first) with ``K`` the prompt's run models (capped at its draws)
    and, with costs, ``K`` the committed model's draws the union's cost buys,
    the union's cost and the committed draw's cost; ``g_min`` the fewest draws of
    a run cell."""
    from ..expected_max import pass_at_k
    from ._input import count_blocks
    from .crossfit import crossfit_rows

    N = results.n_prompts
    names = ["union", "plug", "crossfit", "bok"]
    cost_sum = results._stats.cost_sum
    if cost_sum is not None:
        names += ["bok_cost", "union_cost", "c_commit"]
    out = {k: np.empty(N) for k in names}
    g_min = np.iinfo(np.int64).max
    for sl, S, G in count_blocks(results, "gap_decomposition"):
        obs = G > 0
        if obs.any():
            g_min = min(g_min, int(G[obs].min()))
        if g_min < 2:  # refused by the caller (the cross-fit needs 2 draws)
            return {"g_min": g_min}
        p_hat = np.where(obs, S / np.maximum(G, 1), 0.0)
        out["union"][sl] = 1.0 - np.where(obs, 1.0 - p_hat, 1.0).prod(axis=1)
        masked = np.where(obs, p_hat, -np.inf)
        out["plug"][sl] = masked.max(axis=1)
        out["crossfit"][sl] = crossfit_rows(S, G, backend)
        rows = np.arange(len(S))
        choice = masked.argmax(axis=1)
        Gc, Sc = G[rows, choice], S[rows, choice]
        k_eq = np.minimum(obs.sum(axis=1), Gc)
        out["bok"][sl] = pass_at_k(Gc, Sc, np.maximum(k_eq, 1))
        if cost_sum is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                cost = np.where(obs, cost_sum[sl] / G, 0.0)
            union_cost = cost.sum(axis=1)
            c_commit = cost[rows, choice]
            with np.errstate(divide="ignore", invalid="ignore"):
                k_cost = np.floor(np.where(c_commit > 0, union_cost / c_commit, Gc))
            k_cost = np.clip(k_cost, 1, Gc).astype(np.int64)
            out["bok_cost"][sl] = pass_at_k(Gc, Sc, k_cost)
            out["union_cost"][sl] = union_cost
            out["c_commit"][sl] = c_commit
    out["g_min"] = int(g_min)
    return out


def gap_decomposition(
    results: EvalResults,
    router_accuracy: float | None = None,
    *,
    level: float = 0.95,
    clusters: np.ndarray | str | None = "auto",
    backend: str | None = None,
    bound: str = "normal",
    n_resamples: int = 2000,
    seed: int = 0,
) -> GapDecomposition:
    """Decompose the router-to-oracle gap (design §5): ``O_exp = O_repro + Delta``.

    ``O_exp = mean_n [1 - prod_l (1 - p[n, l])]`` (estimated without bias by the
    product of ``1 - p_hat``), ``O_repro = mean_n max_l p[n, l]`` bracketed by the
    cross-fit value (below in expectation) and the plug-in (above).

    One-sided bounds (need >= 20 draws per cell; otherwise plug-in only, labelled):
    ``O_repro >= mean(cf_n) - z * se`` and ``Delta <= mean(union_n - cf_n) + z * se``,
    ``z`` the one-sided normal quantile, ``se`` from the per-prompt values. Each
    prompt's value is a function of its own cells' counts, so the bound stays valid
    whatever the correlation of draws within a cell (the cell goes into the prompt's
    unit whole); with ``clusters`` (prompt labels; ``"auto"``: ``results.topic`` or
    ``results.benchmark`` when present) the standard error is cluster-robust over
    cluster totals, valid when prompts cluster. The cross-fit value is biased down
    for ``O_repro``, so the bounds are conservative.
    """

    if not 0.5 < level < 1:
        raise ValueError("level must lie in (0.5, 1)")
    if bound not in ("normal", "bootstrap"):
        raise ValueError(f"bound must be 'normal' or 'bootstrap', got {bound!r}")
    rows = _gap_rows(results, backend)
    g_min = rows.pop("g_min")
    if g_min < 2:
        raise ValueError("gap_decomposition needs at least 2 draws per cell")
    union, plug, cf = rows["union"], rows["plug"], rows["crossfit"]
    o_exp = float(union.mean())
    o_plug = float(plug.mean())
    o_cf = float(cf.mean())
    if isinstance(clusters, str) and clusters == "auto":
        clusters = results.topic if results.topic is not None else results.benchmark
    elif isinstance(clusters, str):
        raise ValueError("clusters must be 'auto', None or one label per prompt")
    if clusters is not None and len(clusters) != len(union):
        raise ValueError("clusters needs one label per prompt")
    few = g_min < MIN_DRAWS_FOR_BOUNDS
    z = float(stats.norm.ppf(level))
    if few:
        lower = upper = None
        method = "none"
        label = (
            f"plug-in only: bounds need >= {MIN_DRAWS_FOR_BOUNDS} draws per cell, "
            f"the data has {g_min}"
        )
        n_cl = len(union)
    elif bound == "bootstrap":
        from ..resampling import PerPrompt, bootstrap

        two_sided = 2.0 * level - 1.0
        common = {"level": two_sided, "n_resamples": n_resamples, "seed": seed}
        lower = float(
            bootstrap(results, PerPrompt(cf, name="o_repro_crossfit"), **common).ci[0]
        )
        upper = float(
            bootstrap(
                results, PerPrompt(union - cf, name="delta_crossfit"), **common
            ).ci[1]
        )
        n_cl = len(union)
        method = (
            f"one-sided bootstrap percentile bound (capfront.bootstrap, "
            f"B={n_resamples}, prompts resampled whole)"
        )
        label = "bounds from cross-fit (conservative)"
    else:
        se_cf, n_cl = _cluster_se(cf, clusters)
        se_d, _ = _cluster_se(union - cf, clusters)
        lower = o_cf - z * se_cf
        upper = float((union - cf).mean() + z * se_d)
        method = (
            f"one-sided normal bound, cluster-robust SE over {n_cl} clusters"
            if clusters is not None
            else "one-sided normal bound, prompt-level SE (cells whole per prompt)"
        )
        label = "bounds from cross-fit (conservative)"
    share = None
    if router_accuracy is not None:
        r = float(router_accuracy)
        if not 0 <= r <= 1:
            raise ValueError("router_accuracy must lie in [0, 1]")
        gap = o_exp - r
        if gap <= 0:
            raise ValueError(f"router_accuracy {r} is not below O_exp = {o_exp:.4f}")
        share = {"plugin": (o_exp - o_plug) / gap, "crossfit": (o_exp - o_cf) / gap}
        if upper is not None:
            share["upper_bound"] = upper / gap
    # best-of-K on the committed model
    bok = float(np.mean(rows["bok"]))
    if results.has_cost:
        bok_cost = float(np.mean(rows["bok_cost"]))
        uc, cc = float(rows["union_cost"].mean()), float(rows["c_commit"].mean())
    else:
        bok_cost, uc, cc = float("nan"), float("nan"), float("nan")
    return GapDecomposition(
        o_exp=o_exp,
        o_repro_plugin=o_plug,
        o_repro_crossfit=o_cf,
        delta_plugin=o_exp - o_plug,
        delta_crossfit=o_exp - o_cf,
        o_repro_lower=lower,
        delta_upper=upper,
        level=level,
        bound_method=method,
        router_accuracy=router_accuracy,
        noise_share=share,
        best_of_k_equal_draws=bok,
        best_of_k_equal_cost=bok_cost,
        union_cost=uc,
        committed_cost=cc,
        n_clusters=n_cl,
        label=label,
    )
