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
    fit_prompts : prompts the fitted oracle and the gap's cross-fit end were
        computed on (all of them unless above ``subsample_prompts``).
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
    fit_prompts: int | None = None

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
        out["fit_prompts"] = self.fit_prompts
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
_ROWS = 1 << 15  # prompts per chunk of the per-prompt pass: no (N, L) float arrays
# Above this many prompts the pgm oracle and the gap's cross-fit rows are computed
# on an evenly spaced subsample of this size (see evaluate_router's notes).
SUBSAMPLE_PROMPTS = 20_000


@dataclass
class _Scan:
    """One chunked pass over the cells: what every router shares."""

    acc_sum: np.ndarray  # (L,) sum_n p_hat[n, l] over the prompts l ran
    n_run: np.ndarray  # (L,) prompts each model ran
    top: np.ndarray  # (N,) argmax_l p_hat[n, l] (first of ties)
    best: np.ndarray  # (N,) max_l p_hat[n, l]
    union: np.ndarray | None  # (N,) 1 - prod_l (1 - p_hat[n, l])


def _scan(results: EvalResults, union: bool) -> _Scan:
    st = results.stats
    S_all, G_all = st.successes, st.n_draws
    N, L = S_all.shape
    acc_sum = np.zeros(L)
    n_run = np.zeros(L, dtype=np.int64)
    top = np.empty(N, dtype=np.int64)
    best = np.empty(N)
    un = np.empty(N) if union else None
    for r0 in range(0, N, _ROWS):
        r1 = min(N, r0 + _ROWS)
        G = np.asarray(G_all[r0:r1])
        obs = G > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.asarray(S_all[r0:r1], dtype=np.float64) / G
        p0 = np.where(obs, p, 0.0)
        acc_sum += p0.sum(axis=0)
        n_run += obs.sum(axis=0)
        pm = np.where(obs, p0, -np.inf)
        t = pm.argmax(axis=1)
        top[r0:r1] = t
        best[r0:r1] = pm[np.arange(r1 - r0), t]
        if un is not None:
            un[r0:r1] = 1.0 - np.where(obs, 1.0 - p0, 1.0).prod(axis=1)
    return _Scan(acc_sum, n_run, top, best, un)


def _chosen(total: np.ndarray, G: np.ndarray, choice: np.ndarray) -> np.ndarray:
    """``total[n, c_n] / G[n, c_n]``: a per-cell mean at the chosen cells only."""
    rows = np.arange(choice.size)
    return np.asarray(total[rows, choice], dtype=np.float64) / G[rows, choice]


def _p_column(results: EvalResults, m: int) -> np.ndarray:
    """``p_hat[:, m]`` with 0 where model ``m`` was not run."""
    st = results.stats
    G = np.asarray(st.n_draws[:, m])
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.asarray(st.successes[:, m], dtype=np.float64) / G
    return np.where(G > 0, p, 0.0)


def _chosen_quality(
    results: EvalResults, choice: np.ndarray, k: np.ndarray, scan: _Scan | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(q_n, best_n)``: the chosen cell's estimate and the best model's estimate
    at the same ``k`` on each prompt (p_hat for ``k = 1``, pass@k otherwise;
    ``best_n`` NaN at ``k = 1`` without a ``scan``)."""
    from .expected_max import pass_at_k

    st = results.stats
    q = _chosen(st.successes, st.n_draws, choice)
    best = scan.best.copy() if scan is not None else np.full(choice.size, np.nan)
    many = np.flatnonzero(k > 1)
    if many.size:
        S = np.rint(np.asarray(st.successes[many])).astype(np.int64)
        G = np.asarray(st.n_draws[many]).astype(np.int64)
        kk = k[many][:, None]
        ok = (G > 0) & (kk <= G)
        pk = np.full(S.shape, -np.inf)
        pk[ok] = pass_at_k(G[ok], S[ok], np.broadcast_to(kk, S.shape)[ok])
        q[many] = pk[np.arange(many.size), choice[many]]
        best[many] = pk.max(axis=1)
    return q, best


@dataclass
class _Cost:
    """Per-generation cost: ``chosen(choice)`` is ``cost[n, c_n]`` per prompt;
    ``frontier`` the frontier's ``cost=`` argument; ``tie(cand)`` the mean cost of
    candidate models (the best single model's tie-break)."""

    kind: str  # "results", "unit" or "given"
    array: np.ndarray | None = None

    def chosen(self, results: EvalResults, choice: np.ndarray) -> np.ndarray:
        if self.kind == "results":
            st = results.stats
            return _chosen(st.cost_sum, st.n_draws, choice)
        if self.kind == "unit":
            return np.ones(choice.size)
        a = self.array
        if a.ndim == 1:
            return a[choice].astype(np.float64)
        return a[np.arange(choice.size), choice].astype(np.float64)

    @property
    def frontier(self) -> Any:
        return {"results": None, "unit": "unit"}.get(self.kind, self.array)


def _cell_cost(results: EvalResults, cost: Any) -> _Cost | None:
    N, L = results.n_prompts, results.n_models
    if cost is None:
        return _Cost("results") if results.has_cost else None
    if isinstance(cost, str):
        if cost != "unit":
            raise ValueError(f"cost must be None, 'unit' or an array, not {cost!r}")
        return _Cost("unit")
    c = np.asarray(cost, dtype=np.float64)
    if c.shape not in ((L,), (N, L)):
        raise ValueError(
            f"cost must be shaped ({L},) or ({N}, {L}) (per generation), got {c.shape}"
        )
    ran = results.n_draws > 0
    run = c[ran.any(axis=0)] if c.ndim == 1 else c[ran]
    if not np.isfinite(run).all() or (run < 0).any():
        raise ValueError("cost must be finite and >= 0 on every run cell")
    return _Cost("given", c)


def _regret_table(
    results: EvalResults,
    choice: np.ndarray,
    q: np.ndarray,
    best: np.ndarray,
    top: np.ndarray,
) -> pd.DataFrame:
    regret = best - q
    worse = regret > 1e-12
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


def _subsample(n: int, size: int | None) -> np.ndarray | None:
    """Evenly spaced prompt indices (``size`` of them) when ``n > size``, else None
    (all prompts)."""
    if size is None or n <= size:
        return None
    return np.unique(np.linspace(0, n - 1, size).round().astype(np.int64))


@dataclass
class _Oracle:
    """The debiased oracle's per-prompt values (``None``: held fixed), on the
    prompts ``rows`` (``None``: all), its ``finalize``, value and method."""

    values: np.ndarray | None
    finalize: Any
    value: float
    method: str | None
    rows: np.ndarray | None = None


def _oracle_parts(
    results: EvalResults,
    oracle: Any,
    options: Mapping[str, Any],
    backend: str | None,
    sub: np.ndarray | None,
) -> _Oracle:
    """The debiased oracle: a method name is fitted on the subsample ``sub`` (all
    prompts when None); a Decomposition (per-prompt values of all prompts) is used
    as given; a number or DebiasResult is held fixed."""
    from .debias.result import Decomposition

    if oracle is None:
        return _Oracle(None, None, float("nan"), None)
    if isinstance(oracle, str):
        from .debias import decomposition

        on = results if sub is None else results.select(sub)
        dec = decomposition(on, oracle, backend=backend, **dict(options))
        vals = np.asarray(dec.values, dtype=np.float64).reshape(on.n_prompts, -1)
        return _Oracle(vals, dec.finalize, dec.estimate(), oracle, sub)
    if isinstance(oracle, Decomposition):
        vals = np.asarray(oracle.values, dtype=np.float64)
        vals = vals.reshape(vals.shape[0], -1)
        if vals.shape[0] != results.n_prompts:
            raise ValueError(
                f"oracle: a Decomposition needs one row per prompt "
                f"({results.n_prompts}), got {vals.shape[0]}"
            )
        method = oracle.diagnostics.get("method", "given decomposition")
        return _Oracle(vals, oracle.finalize, oracle.estimate(), str(method))
    value = getattr(oracle, "value", oracle)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(
            "oracle must be a debiasing method name, a Decomposition, a number, a "
            f"DebiasResult or None, not {type(oracle).__name__}"
        ) from None
    return _Oracle(None, None, value, getattr(oracle, "method", "given"))


def _gap_rows(
    results: EvalResults, scan: _Scan, sub: np.ndarray | None, backend: str | None
) -> dict[str, Any] | None:
    """Per-prompt union values (all prompts) and ``d_n = union_n - crossfit_n`` on
    the subsample ``sub`` (all prompts when None); binary, >= 2 draws."""
    if scan.union is None:
        return None
    from .debias.crossfit import crossfit_rows

    st = results.stats
    sel = slice(None) if sub is None else sub
    S = np.ascontiguousarray(np.rint(np.asarray(st.successes[sel])).astype(np.int64))
    G = np.ascontiguousarray(np.asarray(st.n_draws[sel]).astype(np.int64))
    cf = np.asarray(crossfit_rows(S, G, backend), dtype=np.float64)
    return {
        "union": scan.union,
        "plug": float(scan.best.mean()),
        "d": scan.union[sel] - cf,
        "rows": sub,
    }


def _gap_for_router(
    rows: dict[str, Any],
    q: np.ndarray,
    means: np.ndarray,
    idx: dict[str, int],
    r_col: int,
    min_draws: int,
    level: float,
    clusters: np.ndarray | None,
) -> dict[str, Any]:
    """The decomposition ``R <= O_repro <= O_exp`` for one router. ``d_n = union_n
    - crossfit_n`` may be known on a subsample only: ``Delta`` is then its mean
    there (a difference estimator, ``O_repro = O_exp - Delta``)."""
    from .debias.gap import MIN_DRAWS_FOR_BOUNDS, _cluster_se

    union, d, sub = rows["union"], rows["d"], rows["rows"]
    U, P, D = float(union.mean()), rows["plug"], float(d.mean())
    C = U - D
    R = float(q.mean())
    gap = U - R
    out: dict[str, Any] = {
        "o_exp": U,
        "o_repro_plugin": P,
        "o_repro_crossfit": C,
        "delta_plugin": U - P,
        "delta_crossfit": D,
    }
    d_rep = means[:, idx["d"]]
    if "s" in idx:
        d_rep = d_rep / means[:, idx["s"]]
    e_rep = means[:, idx["union"]] - means[:, r_col]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["noise_share_plugin"] = (U - P) / gap if gap > 0 else float("nan")
        out["noise_share_crossfit"] = D / gap if gap > 0 else float("nan")
        reps = np.where(e_rep > 0, d_rep / e_rep, np.nan)
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
    # share = D / E with E = mean(union - q): influence (d_n - D - share (e_n - E))
    # / E, the router's own noise included; with d on a subsample of n of the N
    # prompts its part is (N / n) (d_n - D) on those prompts.
    e = union - q
    share = D / gap
    infl = -share * (e - gap)
    if sub is None:
        infl += d - D
    else:
        infl[sub] += (union.size / sub.size) * (d - D)
    se, n_cl = _cluster_se(infl / gap, clusters)
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
    results: EvalResults, scan: _Scan
) -> tuple[str, float, np.ndarray]:
    """The best single model (:func:`capfront.oracles.best_model`) and
    the models that can be best in a bootstrap replicate: those within 8 paired
    standard errors of it (a replicate moves a difference by 8 SE with probability
    ~1e-15). All models when cells are missing."""
    with np.errstate(divide="ignore", invalid="ignore"):
        acc = np.where(scan.n_run > 0, scan.acc_sum / scan.n_run, -np.inf)
    cost = None
    # the costs only break ties (an (N, L) pass otherwise not needed)
    tied = np.count_nonzero(np.abs(acc - acc.max()) <= 1e-12) > 1
    if results.has_cost and tied:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a model run nowhere
            cost = np.nanmean(results.mean_cost, axis=0)
    top = best_model(acc, cost)
    if not results.is_complete:
        return str(results.models[top]), float(acc[top]), np.arange(results.n_models)
    st = results.stats
    N = results.n_prompts
    diff = acc[top] - acc
    # var_n(p_top - p_l), in row chunks (a BLAS Gram matrix needs fewer flops but
    # stalls on a loaded machine)
    sq = np.zeros(acc.size)
    for r0 in range(0, N, _ROWS):
        G = np.asarray(st.n_draws[r0 : r0 + _ROWS])
        dv = np.asarray(st.successes[r0 : r0 + _ROWS], dtype=np.float64) / G
        dv = dv[:, [top]] - dv
        sq += np.einsum("nl,nl->l", dv, dv)
    var = np.maximum(sq / N - diff**2, 0.0)
    se = np.sqrt(var / (N - 1)) if N > 1 else np.zeros(acc.size)
    keep = diff <= 8.0 * se + 1e-12
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
    subsample_prompts: int | None = SUBSAMPLE_PROMPTS,
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
        values join the paired bootstrap), a
        :class:`capfront.debias.result.Decomposition` of these results (e.g.
        ``capfront.debias.decomposition(results, "pgm")`` computed once and passed
        to several calls; its values join the bootstrap), a number or a
        DebiasResult (held fixed in the bootstrap), or None (no share of the
        oracle gain).
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
    subsample_prompts : above this many prompts (default 20,000), a method-name
        ``oracle`` and the gap's cross-fit rows are computed on an evenly spaced
        subsample of this many prompts; None: on all prompts. The subsample's
        values enter the same paired resamples as ratios (the replicate mean over
        the drawn subsample prompts), so the intervals carry the subsampling
        error. Why: at 400,000 prompts the ``pgm`` fit and posterior maxima take
        ~20 CPU s and the exact cross-fit ~2 s, while ``O`` only enters the
        share's denominator ``O - B`` and ``Delta`` the noise share, whose
        subsampling SE at 20,000 prompts (~0.1 points) is far below the bias a
        cheaper debiasing method would bring (several points at ``G = 5``).

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
    if subsample_prompts is not None and (
        isinstance(subsample_prompts, bool)
        or not isinstance(subsample_prompts, (int, np.integer))
        or subsample_prompts < 100
    ):
        raise ValueError(
            "subsample_prompts must be an int >= 100 or None, got "
            f"{subsample_prompts!r}"
        )
    parsed = _parse_many(results, choices, k)
    single = not (isinstance(choices, Mapping) and not isinstance(choices, pd.Series))
    if single and name is not None:
        parsed = {str(name): parsed["router"]}
    cell_cost = _cell_cost(results, cost)
    st = results.stats
    N = results.n_prompts
    complete = results.is_complete
    want_gap = bool(gap) and results.is_binary and results.min_draws >= 2
    scan = _scan(results, union=want_gap)
    b_name, b_acc, contenders = _best_and_contenders(results, scan)
    cols: list[np.ndarray] = [_p_column(results, m) for m in contenders]
    n_cont = len(contenders)
    if not complete:
        cols += [
            (np.asarray(st.n_draws[:, m]) > 0).astype(np.float64) for m in contenders
        ]
    sub = _subsample(N, subsample_prompts)
    orc = _oracle_parts(
        results,
        oracle,
        oracle_options or {},
        backend,
        sub if isinstance(oracle, str) else None,
    )
    grows = _gap_rows(results, scan, sub, backend) if want_gap else None
    gidx: dict[str, int] = {}
    if sub is not None and (orc.rows is not None or grows is not None):
        # prompt n is in the subsample: replicate means over it are ratios
        gidx["s"] = len(cols)
        ind = np.zeros(N)
        ind[sub] = 1.0
        cols.append(ind)
    o_slice = None
    if orc.values is not None:
        o_slice = slice(len(cols), len(cols) + orc.values.shape[1])
        for j in range(orc.values.shape[1]):
            if orc.rows is None:
                cols.append(orc.values[:, j])
            else:
                col = np.zeros(N)
                col[orc.rows] = orc.values[:, j]
                cols.append(col)
    if grows is not None:
        gidx["union"] = len(cols)
        cols.append(grows["union"])
        gidx["d"] = len(cols)
        if sub is None:
            cols.append(grows["d"])
        else:
            col = np.zeros(N)
            col[sub] = grows["d"]
            cols.append(col)
    per: dict[str, dict[str, Any]] = {}
    for rname, (choice, kk) in parsed.items():
        q, best = _chosen_quality(results, choice, kk, scan)
        entry: dict[str, Any] = {"choice": choice, "k": kk, "q": q, "best": best}
        entry["q_col"] = len(cols)
        cols.append(q)
        if cell_cost is not None:
            c = cell_cost.chosen(results, choice) * kk
            entry["c"] = c
            entry["c_col"] = len(cols)
            cols.append(c)
        if results.has_latency:
            entry["lat"] = _chosen(st.latency_sum, st.n_draws, choice)
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
    o_value = orc.value
    if o_slice is not None:
        m_o = means[:, o_slice]
        if orc.rows is not None:
            m_o = m_o / means[:, [gidx["s"]]]
        O_rep = np.array([float(orc.finalize(m)) for m in m_o])
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
            cost=cell_cost.frontier,
            backend=backend,
        )
    clusters_arr = None
    if isinstance(clusters, str) and clusters == "auto":
        clusters_arr = results.topic if results.topic is not None else results.benchmark
    elif clusters is not None:
        from .paired import cluster_codes

        clusters_arr = cluster_codes(results, clusters)
    n_fit = N if sub is None else int(sub.size)
    sub_note = None
    if sub is not None and (orc.rows is not None or grows is not None):
        what = " and ".join(
            w
            for w, on in (
                (f"the {orc.method} oracle", orc.rows is not None),
                ("the gap's cross-fit end", grows is not None),
            )
            if on
        )
        sub_note = (
            f"{what} computed on an evenly spaced subsample of {n_fit:,} of the "
            f"{N:,} prompts (their subsampling error is in the intervals); "
            "subsample_prompts=None uses all prompts"
        )
    out: dict[str, RouterResult] = {}
    for rname, e in per.items():
        q = e["q"]
        R = float(q.mean())
        R_rep = means[:, e["q_col"]]
        notes: list[str] = [sub_note] if sub_note else []
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
            oracle_method=orc.method,
            oracle_gain_share=float(share),
            share_ci=percentile_ci(share_rep, level),
            frontier_quality_at_cost=fq,
            frontier_cost_at_quality=fc,
            gap=gap,
            regret=_regret_table(results, e["choice"], q, e["best"], scan.top),
            n_resamples=int(n_resamples),
            seed=int(seed),
            choice=e["choice"],
            k=e["k"],
            quality=q,
            notes=notes,
            fit_prompts=n_fit,
        )
    if single:
        return next(iter(out.values()))
    return RouterTable(out, level)
