"""Evaluate a real router from its per-prompt decisions.

``capfront.evaluate_router(results, choices)`` scores the cells a router chose
(model ``c_n`` and ``k_n`` draws per prompt ``n``) and places the router against
what is reachable:

- accuracy ``R = mean_n q_n`` with ``q_n = p_hat[n, c_n]`` (``k_n = 1``) or the
  unbiased pass@k of the chosen cell (best-of-``k``); it is unbiased for the
  router's true accuracy when its decisions do not look at these draws (a
  pre-hoc router), so it needs no debiasing; mean cost ``mean_n k_n
  cost[n, c_n]`` and mean latency (of one generation of the chosen cell);
- the best single model ``B = max_l mean_n p_hat[n, l]``, the gain ``R - B`` and
  the share of the oracle gain ``(R - B) / (O - B)`` with ``O`` the debiased
  oracle (:func:`capfront.debiased_oracle`);
- its position against the exact frontier: the frontier's quality at the
  router's cost and the least cost at which the frontier reaches ``R``;
- the decomposition ``R <= O_repro <= O_exp`` (see
  :func:`capfront.gap_decomposition`) from the router's own choices: the noise
  share ``Delta / (O_exp - R)`` at both ends of ``O_repro`` and a one-sided upper
  bound of the cross-fit end, with the uncertainty of ``R`` included (delta method
  on the per-prompt ratio, cluster-robust like the scalar version);
- a regret table per model: how often the router picks a model whose per-prompt
  estimate is strictly below the best model's on that prompt.

Intervals come from one paired prompt bootstrap (:mod:`capfront.paired`): every
quantity is a function of column means of per-prompt values, all resampled with
the same prompt draw counts as :func:`capfront.bootstrap` (same Philox stream and
seed), so differences and ratios keep their pairing.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ._protocol import plain
from .oracles import best_model
from .paired import percentile_ci, replicate_means
from .results import EvalResults
from .routing_choices import read_choices

__all__ = ["RouterResult", "RouterTable", "evaluate_router", "plot_routers"]

_SCALARS = (
    "value",
    "ci_low",
    "ci_high",
    "se",
    "cost",
    "cost_low",
    "cost_high",
    "latency",
    "latency_low",
    "latency_high",
    "mean_k",
    "best_single",
    "best_accuracy",
    "gain_vs_best",
    "gain_low",
    "gain_high",
    "oracle",
    "oracle_method",
    "oracle_gain_share",
    "share_low",
    "share_high",
    "frontier_quality_at_cost",
    "frontier_cost_at_quality",
    "strictly_worse_share",
)


@dataclass
class RouterResult:
    """One router's evaluation (see the module docstring for the formulas).

    Attributes
    ----------
    name : the router's label.
    value, ci, level, se : accuracy ``R``, its paired-bootstrap percentile interval,
        the level and the bootstrap standard error.
    cost, cost_ci, latency, latency_ci : mean cost / latency per prompt (NaN
        without them) and their intervals.
    mean_k : mean draws per prompt.
    best_single, best_accuracy : the best single model and its accuracy ``B``.
    gain_vs_best, gain_ci : ``R - B`` (``B`` re-maximised in every replicate).
    oracle, oracle_method : the debiased oracle ``O`` and its estimator.
    oracle_gain_share, share_ci : ``(R - B) / (O - B)``.
    frontier_quality_at_cost, frontier_cost_at_quality : the frontier's quality at
        the router's mean cost; the least mean cost reaching ``R`` (NaN without
        costs or above the frontier's top).
    gap : ``o_exp``, ``o_repro_plugin``, ``o_repro_crossfit``, ``delta_*``,
        ``noise_share_plugin``, ``noise_share_crossfit``, ``noise_share_upper``
        (one-sided ``level`` bound), ``bound_method``; ``None`` when the data do
        not allow it (graded scores, one draw per cell).
    regret : per picked model: ``picks``, ``pick_share``, ``strictly_worse``,
        ``worse_share`` (of its picks), ``mean_regret`` (best minus chosen
        estimate), ``most_often_better`` (the model most often best where it was
        worse).
    choice, k : the parsed decisions (model index, draws) per prompt.
    quality : ``q_n``, the chosen cell's estimate per prompt.
    """

    name: str
    value: float
    ci: tuple[float, float]
    level: float
    se: float
    cost: float
    cost_ci: tuple[float, float]
    latency: float
    latency_ci: tuple[float, float]
    mean_k: float
    best_single: str
    best_accuracy: float
    gain_vs_best: float
    gain_ci: tuple[float, float]
    oracle: float
    oracle_method: str | None
    oracle_gain_share: float
    share_ci: tuple[float, float]
    frontier_quality_at_cost: float
    frontier_cost_at_quality: float
    gap: dict[str, Any] | None
    regret: pd.DataFrame
    n_resamples: int
    seed: int
    choice: np.ndarray = field(repr=False)
    k: np.ndarray = field(repr=False)
    quality: np.ndarray = field(repr=False)
    notes: list[str] = field(default_factory=list)

    def __float__(self) -> float:
        return self.value

    @property
    def strictly_worse_share(self) -> float:
        r = self.regret
        return float(r["strictly_worse"].sum() / max(int(r["picks"].sum()), 1))

    def _row(self) -> dict[str, Any]:
        row: dict[str, Any] = {}
        pairs = {
            "ci": self.ci,
            "cost": self.cost_ci,
            "latency": self.latency_ci,
            "gain": self.gain_ci,
            "share": self.share_ci,
        }
        for key in _SCALARS:
            if key.endswith(("_low", "_high")):
                base, end = key.rsplit("_", 1)
                row[key] = pairs[base][0 if end == "low" else 1]
            else:
                row[key] = getattr(self, key)
        for key, v in (self.gap or {}).items():
            if key != "bound_method":
                row[f"gap_{key}"] = v
        return row

    def to_frame(self) -> pd.DataFrame:
        """One row (index: the router's name) of the scalar results."""
        return pd.DataFrame([self._row()], index=pd.Index([self.name], name="router"))

    def to_dict(self) -> dict[str, Any]:
        """Scalars, the gap decomposition and the regret table (records)."""
        out = {"name": self.name, "level": self.level, **self._row()}
        out["ci"] = list(self.ci)
        out["gap"] = self.gap
        out["regret"] = self.regret.reset_index().to_dict(orient="records")
        out["n_resamples"] = self.n_resamples
        out["seed"] = self.seed
        out["notes"] = list(self.notes)
        return plain(out)


@dataclass
class RouterTable:
    """Several routers evaluated on the same bootstrap resamples.

    ``value``: accuracy per router (a Series), ``ci``: interval per router,
    ``routers``: the :class:`RouterResult` objects; :meth:`to_frame` is one row
    per router.
    """

    routers: dict[str, RouterResult]
    level: float

    @property
    def value(self) -> pd.Series:
        return pd.Series({k: r.value for k, r in self.routers.items()}, name="accuracy")

    @property
    def ci(self) -> dict[str, tuple[float, float]]:
        return {k: r.ci for k, r in self.routers.items()}

    def __getitem__(self, name: str) -> RouterResult:
        return self.routers[name]

    def to_frame(self) -> pd.DataFrame:
        return pd.concat([r.to_frame() for r in self.routers.values()])

    def to_dict(self) -> dict[str, Any]:
        return plain(
            {
                "level": self.level,
                "routers": {k: r.to_dict() for k, r in self.routers.items()},
            }
        )

    def plot(self, ax: Any = None, frontier: Any = None) -> Any:
        """Routers as points (with their intervals) on the frontier figure."""
        if frontier is not None:
            ax = frontier.plot(ax=ax)
        return plot_routers(self, ax)


# not the frontier's blue nor the single models' red
_ROUTER_COLORS = ("tab:green", "tab:purple", "tab:orange", "tab:brown", "tab:pink")


def plot_routers(routers: Any, ax: Any = None) -> Any:
    """Draw routers as labelled points at (mean cost, accuracy) with their
    bootstrap intervals on both axes. ``routers``: a :class:`RouterTable`, a
    :class:`RouterResult` or a list of dicts with ``name``, ``cost``, ``value``
    and optionally ``ci``, ``cost_low``, ``cost_high`` (the report's JSON rows).
    Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 5.5))
    if isinstance(routers, RouterResult):
        rows = [routers.to_dict()]
    elif isinstance(routers, RouterTable):
        rows = [r.to_dict() for r in routers.routers.values()]
    else:
        rows = list(routers)
    for i, r in enumerate(rows):
        x, y = r.get("cost"), r.get("value")
        if x is None or y is None or not np.isfinite([x, y]).all():
            continue
        lo, hi = (r.get("ci") or [y, y])[:2]
        xlo = r.get("cost_low", x)
        xhi = r.get("cost_high", x)
        xerr = None
        if xlo is not None and xhi is not None and np.isfinite([xlo, xhi]).all():
            xerr = [[x - xlo], [xhi - x]]
        ax.errorbar(
            [x],
            [y],
            yerr=[[y - lo], [hi - y]],
            xerr=xerr,
            fmt="D",
            ms=6,
            color=_ROUTER_COLORS[i % len(_ROUTER_COLORS)],
            capsize=2,
            zorder=4,
            label=f"router: {r['name']}",
        )
        ax.annotate(
            str(r["name"]),
            (x, y),
            fontsize=7,
            xytext=(4, -8),
            textcoords="offset points",
        )
    ax.legend(loc="lower right", fontsize=8)
    return ax


# --------------------------------------------------------------------------- values
def _chosen_quality(
    results: EvalResults, choice: np.ndarray, k: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(q_n, best_n)``: the chosen cell's estimate and the best model's estimate
    at the same ``k`` on each prompt (p_hat for ``k = 1``, pass@k otherwise)."""
    from .expected_max import pass_at_k

    N = results.n_prompts
    rows = np.arange(N)
    obs = results.observed
    p = np.where(obs, results.p_hat, -np.inf)
    q = p[rows, choice].astype(np.float64)
    best = p.max(axis=1)
    many = np.flatnonzero(k > 1)
    if many.size:
        S = np.rint(results.successes[many]).astype(np.int64)
        G = results.n_draws[many].astype(np.int64)
        kk = k[many][:, None]
        ok = obs[many] & (kk <= G)
        pk = np.full(S.shape, -np.inf)
        pk[ok] = pass_at_k(G[ok], S[ok], np.broadcast_to(kk, S.shape)[ok])
        q[many] = pk[np.arange(many.size), choice[many]]
        best[many] = pk.max(axis=1)
    return q, best


def _cell_cost(results: EvalResults, cost: Any) -> np.ndarray | None:
    N, L = results.n_prompts, results.n_models
    if cost is None:
        return results.mean_cost
    if isinstance(cost, str):
        if cost != "unit":
            raise ValueError(f"cost must be None, 'unit' or an array, not {cost!r}")
        return np.ones((N, L))
    c = np.asarray(cost, dtype=np.float64)
    if c.shape == (L,):
        c = np.broadcast_to(c, (N, L))
    if c.shape != (N, L):
        raise ValueError(
            f"cost must be shaped ({L},) or ({N}, {L}) (per generation), got {c.shape}"
        )
    if not np.isfinite(c[results.observed]).all() or (c[results.observed] < 0).any():
        raise ValueError("cost must be finite and >= 0 on every run cell")
    return c


def _regret_table(
    results: EvalResults, choice: np.ndarray, q: np.ndarray, best: np.ndarray
) -> pd.DataFrame:
    regret = best - q
    worse = regret > 1e-12
    obs = results.observed
    p = np.where(obs, results.p_hat, -np.inf)
    top = p.argmax(axis=1)
    L = results.n_models
    picks = np.bincount(choice, minlength=L)
    n_worse = np.bincount(choice, weights=worse, minlength=L)
    reg_sum = np.bincount(choice, weights=regret, minlength=L)
    rows = []
    for m in np.flatnonzero(picks):
        sel = (choice == m) & worse
        better = ""
        if sel.any():
            better = str(results.models[np.bincount(top[sel], minlength=L).argmax()])
        rows.append(
            {
                "model": str(results.models[m]),
                "picks": int(picks[m]),
                "pick_share": picks[m] / choice.size,
                "strictly_worse": int(n_worse[m]),
                "worse_share": n_worse[m] / picks[m],
                "mean_regret": reg_sum[m] / picks[m],
                "most_often_better": better,
            }
        )
    table = pd.DataFrame(rows).set_index("model")
    return table.sort_values("picks", ascending=False, kind="stable")


def _oracle_parts(
    results: EvalResults, oracle: Any, options: Mapping[str, Any], backend: str | None
) -> tuple[np.ndarray | None, Any, float, str | None]:
    """(per-prompt values, finalize, value, method) of the debiased oracle."""
    if oracle is None:
        return None, None, float("nan"), None
    if isinstance(oracle, str):
        from .debias import decomposition

        dec = decomposition(results, oracle, backend=backend, **dict(options))
        return (
            np.asarray(dec.values, dtype=np.float64),
            dec.finalize,
            dec.estimate(),
            oracle,
        )
    value = getattr(oracle, "value", oracle)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(
            "oracle must be a debiasing method name, a number, a DebiasResult or "
            f"None, not {type(oracle).__name__}"
        ) from None
    return None, None, value, getattr(oracle, "method", "given")


def _gap_rows(
    results: EvalResults, p_hat: np.ndarray, backend: str | None
) -> dict[str, np.ndarray] | None:
    """Per-prompt union, plug-in and cross-fit values (binary, >= 2 draws)."""
    if not results.is_binary or results.min_draws < 2:
        return None
    from .debias._input import counts
    from .debias.crossfit import crossfit_rows

    S, G = counts(results, "the router's gap decomposition")
    obs = G > 0
    p = np.where(obs, p_hat, 0.0)
    return {
        "union": 1.0 - np.where(obs, 1.0 - p, 1.0).prod(axis=1),
        "plug": np.where(obs, p, -np.inf).max(axis=1),
        "cf": np.asarray(crossfit_rows(S, G, backend), dtype=np.float64),
    }


def _gap_for_router(
    rows: dict[str, np.ndarray],
    q: np.ndarray,
    means: np.ndarray,
    idx: dict[str, int],
    r_col: int,
    min_draws: int,
    level: float,
    clusters: np.ndarray | None,
) -> dict[str, Any]:
    from .debias.gap import MIN_DRAWS_FOR_BOUNDS, _cluster_se

    U, P, C = (float(rows[k].mean()) for k in ("union", "plug", "cf"))
    R = float(q.mean())
    gap = U - R
    out: dict[str, Any] = {
        "o_exp": U,
        "o_repro_plugin": P,
        "o_repro_crossfit": C,
        "delta_plugin": U - P,
        "delta_crossfit": U - C,
    }
    with np.errstate(divide="ignore", invalid="ignore"):
        out["noise_share_plugin"] = (U - P) / gap if gap > 0 else float("nan")
        out["noise_share_crossfit"] = (U - C) / gap if gap > 0 else float("nan")
        reps = (means[:, idx["union"]] - means[:, idx["cf"]]) / (
            means[:, idx["union"]] - means[:, r_col]
        )
    reps = np.where(means[:, idx["union"]] - means[:, r_col] > 0, reps, np.nan)
    out["noise_share_ci"] = list(percentile_ci(reps, level))
    if min_draws < MIN_DRAWS_FOR_BOUNDS or not gap > 0:
        out["noise_share_upper"] = None
        out["bound_method"] = (
            f"no bound: needs >= {MIN_DRAWS_FOR_BOUNDS} draws per cell, the data "
            f"has {min_draws}"
            if gap > 0
            else "no bound: the router is not below O_exp"
        )
        return out
    # share = D / E with D = mean(union - cf), E = mean(union - q): influence
    # (d_n - share e_n) / E, the router's own noise included.
    d = rows["union"] - rows["cf"]
    e = rows["union"] - q
    share = float(d.mean() / e.mean())
    se, n_cl = _cluster_se((d - share * e) / e.mean(), clusters)
    out["noise_share_upper"] = share + float(stats.norm.ppf(level)) * se
    out["bound_method"] = (
        f"one-sided normal bound (delta method on the per-prompt ratio), "
        f"cluster-robust SE over {n_cl} clusters"
        if clusters is not None
        else "one-sided normal bound (delta method on the per-prompt ratio), "
        "prompt-level SE"
    )
    return out


def _best_and_contenders(
    results: EvalResults, p0: np.ndarray, obs: np.ndarray, complete: bool
) -> tuple[str, float, np.ndarray]:
    """The best single model (:func:`capfront.oracles.best_model`) and
    the models that can be best in a bootstrap replicate: those within 8 paired
    standard errors of it (a replicate moves a difference by 8 SE with probability
    ~1e-15). All models when cells are missing."""
    n_run = obs.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        acc = np.where(n_run > 0, p0.sum(axis=0) / n_run, -np.inf)
    cost = None
    if results.has_cost:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a model run nowhere
            cost = np.nanmean(results.mean_cost, axis=0)
    top = best_model(acc, cost)
    if not complete:
        return str(results.models[top]), float(acc[top]), np.arange(results.n_models)
    N = p0.shape[0]
    d = p0[:, [top]] - p0
    se = d.std(axis=0, ddof=1) / np.sqrt(N) if N > 1 else np.zeros(p0.shape[1])
    keep = (acc[top] - acc) <= 8.0 * se + 1e-12
    keep[top] = True
    return str(results.models[top]), float(acc[top]), np.flatnonzero(keep)


def _parse_many(
    results: EvalResults, choices: Any, k: Any
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    if isinstance(choices, Mapping) and not isinstance(choices, pd.Series):
        if not choices:
            raise ValueError("choices: an empty dict of routers")
        ks = k if isinstance(k, Mapping) else dict.fromkeys(choices, k)
        return {
            str(n): read_choices(results, c, ks.get(n), where=f"router {n!r}")
            for n, c in choices.items()
        }
    return {"router": read_choices(results, choices, k)}


def evaluate_router(
    results: EvalResults,
    choices: Any,
    *,
    k: Any = None,
    cost: Any = None,
    oracle: Any = "pgm",
    oracle_options: Mapping[str, Any] | None = None,
    level: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    stratify: str | None = None,
    clusters: Any = None,
    frontier: Any = None,
    gap: bool = True,
    name: str | None = None,
    backend: str | None = None,
) -> RouterResult | RouterTable:
    """Evaluate a router from its per-prompt choices (formulas: module docstring).

    Parameters
    ----------
    results : EvalResults
    choices : the model picked per prompt: a label array (names or indices, in the
        order of ``results.prompts``), a Series indexed by prompt id, a DataFrame
        or CSV/JSON/JSONL/Parquet file with columns ``prompt_id, model[, k]``, or
        ``(long_frame, column)``; a dict ``{name: choices}`` evaluates several
        routers on the same resamples and returns a :class:`RouterTable`.
    k : draws of best-of-``k`` per prompt (int or per-prompt array; a dict per
        router); default: the file's ``k`` column, else 1.
    cost : per-generation cost: None (the results' mean cost per cell),
        ``"unit"``, or an ``(L,)`` / ``(N, L)`` array.
    oracle : debiased-oracle method for ``O`` (default ``"pgm"``; its per-prompt
        values join the paired bootstrap), a number or a DebiasResult (held fixed
        in the bootstrap), or None (no share of the oracle gain).
    oracle_options : options of the method (e.g. ``{"family": ...}``).
    level, n_resamples, seed, stratify : the paired prompt bootstrap (the resamples
        of ``capfront.bootstrap(results, ..., seed=seed, stratify=stratify)``).
    clusters : clusters of the noise-share bound: None (prompts), ``"auto"``
        (topic, else benchmark labels), ``"benchmark"``, ``"topic"`` or one label
        per prompt.
    frontier : a :class:`capfront.Frontier` to position the router against
        (default: the prehoc frontier, or the posthoc one up to the largest ``k``).
    gap : compute the decomposition ``R <= O_repro <= O_exp`` (binary scores,
        >= 2 draws per cell).
    name : label of a single router.

    Returns
    -------
    RouterResult, or RouterTable for a dict of routers.
    """
    if not isinstance(results, EvalResults):
        raise ValueError(
            f"results must be an EvalResults, got {type(results).__name__}"
        )
    if not 0 < float(level) < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    level = float(level)
    parsed = _parse_many(results, choices, k)
    single = not (isinstance(choices, Mapping) and not isinstance(choices, pd.Series))
    if single and name is not None:
        parsed = {str(name): parsed["router"]}
    cell_cost = _cell_cost(results, cost)
    lat = results.mean_latency
    N = results.n_prompts
    rows = np.arange(N)
    obs = results.observed
    complete = bool(obs.all())
    cols: list[np.ndarray] = []
    p_hat = results.p_hat
    p0 = np.where(obs, p_hat, 0.0)
    b_name, b_acc, contenders = _best_and_contenders(results, p0, obs, complete)
    cols += [p0[:, m] for m in contenders]
    n_cont = len(contenders)
    if not complete:
        cols += [obs[:, m].astype(np.float64) for m in contenders]
    o_vals, o_fin, o_value, o_method = _oracle_parts(
        results, oracle, oracle_options or {}, backend
    )
    o_slice = None
    if o_vals is not None:
        o_slice = slice(len(cols), len(cols) + o_vals.shape[1])
        cols += [o_vals[:, j] for j in range(o_vals.shape[1])]
    grows = _gap_rows(results, p_hat, backend) if gap else None
    gidx: dict[str, int] = {}
    if grows is not None:
        for key in ("union", "cf"):
            gidx[key] = len(cols)
            cols.append(grows[key])
    per: dict[str, dict[str, Any]] = {}
    for rname, (choice, kk) in parsed.items():
        q, best = _chosen_quality(results, choice, kk)
        entry: dict[str, Any] = {"choice": choice, "k": kk, "q": q, "best": best}
        entry["q_col"] = len(cols)
        cols.append(q)
        if cell_cost is not None:
            c = cell_cost[rows, choice] * kk
            entry["c"] = c
            entry["c_col"] = len(cols)
            cols.append(c)
        if lat is not None:
            entry["lat"] = lat[rows, choice]
            entry["lat_col"] = len(cols)
            cols.append(entry["lat"])
        per[rname] = entry
    means = replicate_means(
        results,
        np.column_stack(cols),
        n_resamples=n_resamples,
        seed=seed,
        stratify=stratify,
        backend=backend,
    )
    del cols
    acc = means[:, :n_cont]
    if not complete:
        share_obs = means[:, n_cont : 2 * n_cont]
        with np.errstate(divide="ignore", invalid="ignore"):
            acc = np.where(share_obs > 0, acc / share_obs, -np.inf)
    B_rep = acc.max(axis=1)
    if o_slice is not None:
        O_rep = np.array([float(o_fin(m)) for m in means[:, o_slice]])
    else:
        O_rep = np.full(means.shape[0], o_value)
    fr = frontier
    max_k = max(int(e["k"].max()) for e in per.values())
    if fr is None and cell_cost is not None:
        from .frontier import frontier as build_frontier

        fr = build_frontier(
            results,
            posthoc=max_k > 1,
            max_k=max_k if max_k > 1 else None,
            cost=None if cost is None else cell_cost,
            backend=backend,
        )
    clusters_arr = None
    if isinstance(clusters, str) and clusters == "auto":
        clusters_arr = results.topic if results.topic is not None else results.benchmark
    elif clusters is not None:
        from .paired import cluster_codes

        clusters_arr = cluster_codes(results, clusters)
    out: dict[str, RouterResult] = {}
    for rname, e in per.items():
        q = e["q"]
        R = float(q.mean())
        R_rep = means[:, e["q_col"]]
        notes: list[str] = []
        cst = float(e["c"].mean()) if "c" in e else float("nan")
        cst_ci = (
            percentile_ci(means[:, e["c_col"]], level)
            if "c" in e
            else (float("nan"),) * 2
        )
        la = float(e["lat"].mean()) if "lat" in e else float("nan")
        la_ci = (
            percentile_ci(means[:, e["lat_col"]], level)
            if "lat" in e
            else (float("nan"),) * 2
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            share = (R - b_acc) / (o_value - b_acc) if o_value > b_acc else np.nan
            share_rep = np.where(
                O_rep > B_rep, (R_rep - B_rep) / (O_rep - B_rep), np.nan
            )
        fq = fc = float("nan")
        if fr is not None and np.isfinite(cst):
            fq = float(fr.quality_at(cst))
            fc = float(fr.cost_at(R))
        elif fr is None:
            notes.append("no cost: no frontier position (pass cost='unit' for one)")
        if (e["k"] > 1).any():
            notes.append(
                "best-of-k prompts: quality is the unbiased pass@k of the chosen "
                "cell, cost k generations, latency one generation's"
            )
        gap = None
        if grows is not None:
            gap = _gap_for_router(
                grows,
                q,
                means,
                gidx,
                e["q_col"],
                results.min_draws,
                level,
                clusters_arr,
            )
        out[rname] = RouterResult(
            name=rname,
            value=R,
            ci=percentile_ci(R_rep, level),
            level=level,
            se=float(R_rep.std(ddof=1)) if R_rep.size > 1 else float("nan"),
            cost=cst,
            cost_ci=cst_ci,
            latency=la,
            latency_ci=la_ci,
            mean_k=float(e["k"].mean()),
            best_single=b_name,
            best_accuracy=b_acc,
            gain_vs_best=R - b_acc,
            gain_ci=percentile_ci(R_rep - B_rep, level),
            oracle=o_value,
            oracle_method=o_method,
            oracle_gain_share=float(share),
            share_ci=percentile_ci(share_rep, level),
            frontier_quality_at_cost=fq,
            frontier_cost_at_quality=fc,
            gap=gap,
            regret=_regret_table(results, e["choice"], q, e["best"]),
            n_resamples=int(n_resamples),
            seed=int(seed),
            choice=e["choice"],
            k=e["k"],
            quality=q,
            notes=notes,
        )
    if single:
        return next(iter(out.values()))
    return RouterTable(out, level)
