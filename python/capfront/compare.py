"""Paired (and clustered) comparisons of models and routers on the same prompts.

``capfront.compare(results, a, b)`` takes two operands -- model names, router
names (``routers=``), choice arrays, :class:`~capfront.router.RouterResult`
objects, or ``"best"`` for the best single model -- reduces each to its
per-prompt estimate ``x_n`` (``p_hat`` of the chosen cell, pass@k for best-of-k)
and reports the paired difference ``D = mean_n (x_n - y_n)``:

- ``.ci``: paired prompt-bootstrap percentile interval (the resamples of
  :func:`capfront.bootstrap` with the same seed), or with ``cluster=`` a cluster
  bootstrap (whole clusters resampled);
- ``.se``: ``sd_n(x_n - y_n) / sqrt(N)``. Each prompt's value averages its own
  draws, so the draws within a prompt (correlated through the prompt's
  difficulty) stay in one unit: with ``G > 1`` this is the right standard error,
  whereas treating the ``N G`` draws as independent (``.se_unpaired``, shown for
  contrast: an unpaired two-sample SE over draws) is not. With ``cluster=`` the
  SE is cluster-robust (CR1 over cluster totals);
- ``.p_value``: for binary single-draw data (every compared cell has ``G = 1``),
  the exact two-sided mid-p McNemar test on the discordant pairs ``n01, n10``:
  ``p = 2 P(X < m) + P(X = m)``, ``X ~ Bin(n01 + n10, 1/2)``, ``m = min(n01,
  n10)``, capped at 1; otherwise a two-sided normal test of ``D / se``.

:func:`tied_with_best` names the best single model and the models that are
statistically tied with it: paired tests of the top model against every other,
Holm-adjusted (step-down: the ``i``-th smallest p-value times ``m - i + 1``,
running maximum, capped at 1), tied when the adjusted p-value is at least
``alpha = 1 - level``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ._protocol import plain
from .paired import (
    cluster_codes,
    cluster_replicate_means,
    percentile_ci,
    replicate_means,
)
from .results import EvalResults

FEW_CLUSTERS = 20

__all__ = [
    "Comparison",
    "TiedSet",
    "compare",
    "holm",
    "mcnemar_midp",
    "tied_with_best",
]


def mcnemar_midp(n01: int, n10: int) -> float:
    """Exact two-sided mid-p McNemar test of ``n01`` vs ``n10`` discordant pairs:
    ``min(1, 2 P(X < m) + P(X = m))`` with ``X ~ Bin(n01 + n10, 1/2)`` and
    ``m = min(n01, n10)`` (1 when there is no discordant pair)."""
    n01, n10 = int(n01), int(n10)
    if n01 < 0 or n10 < 0:
        raise ValueError("discordant counts must be >= 0")
    n = n01 + n10
    if n == 0:
        return 1.0
    m = min(n01, n10)
    p = 2.0 * stats.binom.cdf(m - 1, n, 0.5) + stats.binom.pmf(m, n, 0.5)
    return float(min(1.0, p))


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values (same order as the input)."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out


@dataclass
class Comparison:
    """The paired difference ``a - b`` (see the module docstring).

    Attributes: ``value``, ``ci``, ``level``, ``se``, ``se_unpaired`` (draws
    treated as independent, for contrast), ``p_value``, ``p_value_method``,
    ``a``, ``b``, ``mean_a``, ``mean_b``, ``n_prompts``, ``n_clusters``,
    ``discordant`` (``(n01, n10)`` for binary single-draw data), ``ci_method``.
    """

    a: str
    b: str
    value: float
    ci: tuple[float, float]
    level: float
    se: float
    se_unpaired: float
    p_value: float
    p_value_method: str
    mean_a: float
    mean_b: float
    n_prompts: int
    n_clusters: int | None
    discordant: tuple[int, int] | None
    ci_method: str
    n_resamples: int
    seed: int

    def __float__(self) -> float:
        return self.value

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["ci"] = list(self.ci)
        out["discordant"] = None if self.discordant is None else list(self.discordant)
        return plain(out)

    def to_frame(self) -> pd.DataFrame:
        row = self.to_dict()
        row["ci_low"], row["ci_high"] = self.ci
        del row["ci"]
        return pd.DataFrame([row], index=pd.Index([f"{self.a} - {self.b}"]))


@dataclass
class TiedSet:
    """The best single model and the models statistically tied with it.

    ``value``: the best model's accuracy, ``ci`` its prompt-bootstrap interval,
    ``best``: its name, ``tied``: names (the best first) whose Holm-adjusted paired
    p-value against it is at least ``alpha``; ``table``: per model ``accuracy``,
    ``difference`` (best minus model), ``p_value``, ``p_holm``, ``tied``.
    """

    best: str
    value: float
    ci: tuple[float, float]
    level: float
    alpha: float
    tied: list[str]
    table: pd.DataFrame
    p_value_method: str
    notes: list[str] = field(default_factory=list)

    @property
    def distinguishable(self) -> bool:
        """Whether the best model beats every other one (nothing tied)."""
        return len(self.tied) == 1

    def __float__(self) -> float:
        return self.value

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        return plain(
            {
                "best": self.best,
                "value": self.value,
                "ci": list(self.ci),
                "level": self.level,
                "alpha": self.alpha,
                "tied": list(self.tied),
                "distinguishable": self.distinguishable,
                "p_value_method": self.p_value_method,
                "table": self.table.reset_index().to_dict(orient="records"),
                "notes": list(self.notes),
            }
        )


# --------------------------------------------------------------------------- operands
@dataclass
class _Operand:
    name: str
    values: np.ndarray  # (N,), NaN where not run
    single_draw_binary: bool
    draws: np.ndarray  # (N,) draws behind each value


def _model_operand(results: EvalResults, m: int) -> _Operand:
    # one column of the stored counts, not the (N, L) p_hat
    st = results.stats
    G = np.asarray(st.n_draws[:, m])
    obs = G > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        v = np.where(obs, np.asarray(st.successes[:, m], dtype=np.float64) / G, np.nan)
    single = bool(results.is_binary and (G[obs] == 1).all())
    return _Operand(str(results.models[m]), v, single, G.astype(np.float64))


def _operand(
    results: EvalResults, x: Any, routers: Mapping[str, Any], k: Any
) -> _Operand:
    from .router import RouterResult, _chosen_quality
    from .routing_choices import read_choices

    models = [str(m) for m in results.models]
    if isinstance(x, str) and x == "best":
        from .router import _best_and_contenders, _scan

        name = _best_and_contenders(results, _scan(results, union=False))[0]
        return _model_operand(results, models.index(name))
    if isinstance(x, str) and x in routers:
        x_choices, name = routers[x], x
    elif isinstance(x, str) and x in models:
        return _model_operand(results, models.index(x))
    elif isinstance(x, str) and x not in routers:
        raise ValueError(
            f"{x!r} is neither a model of the results, nor 'best', nor a router "
            f"name of routers= ({sorted(routers)})"
        )
    elif isinstance(x, RouterResult):
        choice, kk, name = x.choice, x.k, x.name
        x_choices = None
    else:
        x_choices, name = x, "router"
    if x_choices is not None:
        if isinstance(x_choices, RouterResult):
            choice, kk = x_choices.choice, x_choices.k
        else:
            choice, kk = read_choices(results, x_choices, k, where=f"operand {name!r}")
    q, _ = _chosen_quality(results, choice, kk)
    rows = np.arange(results.n_prompts)
    G = results.n_draws[rows, choice]
    single = bool(results.is_binary and (G == 1).all() and (kk == 1).all())
    return _Operand(name, q, single, G.astype(np.float64))


# --------------------------------------------------------------------------- tests
def _paired_test(
    x: np.ndarray, y: np.ndarray, binary_single: bool, codes: np.ndarray | None
) -> tuple[float, float, float, str, tuple[int, int] | None, int | None]:
    """(difference, se, p-value, method, discordant counts, clusters)."""
    from .debias.gap import _cluster_se

    d = x - y
    N = d.size
    value = float(d.mean())
    if N < 2:
        raise ValueError("a paired comparison needs at least 2 prompts")
    se, n_cl = _cluster_se(d, codes)
    n_cl = n_cl if codes is not None else None
    if binary_single and codes is None:
        n01 = int(((x == 1) & (y == 0)).sum())
        n10 = int(((x == 0) & (y == 1)).sum())
        return (
            value,
            se,
            mcnemar_midp(n01, n10),
            "exact two-sided mid-p McNemar",
            (n01, n10),
            None,
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        z = value / se if se > 0 else (0.0 if value == 0 else np.inf)
    p = float(2.0 * stats.norm.sf(abs(z)))
    method = (
        f"two-sided normal test, cluster-robust SE over {n_cl} clusters"
        if codes is not None
        else "two-sided normal test, prompt-level SE (draws within a prompt "
        "kept together)"
    )
    return value, se, p, method, None, n_cl


def _unpaired_se(a: _Operand, b: _Operand, keep: np.ndarray) -> float:
    """SE of the difference if every draw were an independent observation and the
    two sides independent (the unpaired test over draws), for contrast."""
    out = 0.0
    for op in (a, b):
        v, G = op.values[keep], op.draws[keep]
        m = float(v.mean())
        if np.all((v == 0) | (v == 1)) or op.single_draw_binary:
            out += m * (1.0 - m) / G.sum()
        else:
            out += float(v.var(ddof=1)) / v.size
    return float(np.sqrt(out))


def compare(
    results: EvalResults,
    a: Any,
    b: Any = "best",
    *,
    routers: Mapping[str, Any] | None = None,
    cluster: Any = None,
    k: Any = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    backend: str | None = None,
) -> Comparison:
    """Paired comparison ``a - b`` on the prompts where both were run.

    Parameters
    ----------
    results : EvalResults
    a, b : model name, ``"best"`` (the best single model of these results, held
        fixed: its selection noise is what :func:`tied_with_best` reports), a
        name in ``routers``,
        a choice array / file / table (see :func:`capfront.evaluate_router`) or a
        :class:`~capfront.router.RouterResult`.
    routers : ``{name: choices}`` for router names.
    cluster : None, ``"benchmark"``, ``"topic"`` or one label per prompt: a
        cluster bootstrap interval and a cluster-robust SE and test.
    k : best-of-``k`` for choice operands.
    level, n_resamples, seed : interval level and the (paired) bootstrap.

    Returns
    -------
    Comparison
    """
    if not isinstance(results, EvalResults):
        raise ValueError(
            f"results must be an EvalResults, got {type(results).__name__}"
        )
    if not 0 < float(level) < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    routers = dict(routers or {})
    A = _operand(results, a, routers, k)
    Bop = _operand(results, b, routers, k)
    keep = np.isfinite(A.values) & np.isfinite(Bop.values)
    if keep.sum() < 2:
        raise ValueError(
            f"{A.name!r} and {Bop.name!r} share fewer than 2 prompts with results"
        )
    codes = cluster_codes(results, cluster)
    sub = results if keep.all() else results.select(np.flatnonzero(keep))
    x, y = A.values[keep], Bop.values[keep]
    if codes is not None:
        codes = np.unique(codes[keep], return_inverse=True)[1].ravel()
        if codes.max() < 1:
            raise ValueError("cluster: need at least 2 clusters among the prompts")
    value, se, p, method, disc, n_cl = _paired_test(
        x, y, A.single_draw_binary and Bop.single_draw_binary, codes
    )
    V = np.column_stack([x, y])
    if codes is None:
        means = replicate_means(
            sub, V, n_resamples=n_resamples, seed=seed, backend=backend
        )
        ci_method = "paired prompt bootstrap (percentile)"
    else:
        means = cluster_replicate_means(
            V, codes, n_resamples=n_resamples, seed=seed, backend=backend
        )
        ci_method = f"paired cluster bootstrap over {n_cl} clusters (percentile)"
        if n_cl < FEW_CLUSTERS:
            ci_method += (
                f"; only {n_cl} clusters: cluster-robust SEs and cluster "
                "bootstraps are unreliable with so few"
            )
    return Comparison(
        a=A.name,
        b=Bop.name,
        value=value,
        ci=percentile_ci(means[:, 0] - means[:, 1], float(level)),
        level=float(level),
        se=se,
        se_unpaired=_unpaired_se(A, Bop, keep),
        p_value=p,
        p_value_method=method,
        mean_a=float(x.mean()),
        mean_b=float(y.mean()),
        n_prompts=int(keep.sum()),
        n_clusters=n_cl,
        discordant=disc,
        ci_method=ci_method,
        n_resamples=int(n_resamples),
        seed=int(seed),
    )


def tied_with_best(
    results: EvalResults,
    *,
    level: float = 0.95,
    cluster: Any = None,
    n_resamples: int = 1000,
    seed: int = 0,
    backend: str | None = None,
) -> TiedSet:
    """The best single model and the set statistically tied with it.

    Paired tests (as :func:`compare`: exact mid-p McNemar for binary single-draw
    data, else a normal test with the prompt-level or cluster-robust SE) of the
    top model against every other model on their common prompts; Holm-adjusted
    over the ``L - 1`` comparisons; a model is tied when its adjusted p-value is
    at least ``alpha = 1 - level``.
    """
    if not isinstance(results, EvalResults):
        raise ValueError(
            f"results must be an EvalResults, got {type(results).__name__}"
        )
    level = float(level)
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    alpha = 1.0 - level
    codes_all = cluster_codes(results, cluster)
    top = _operand(results, "best", {}, None)
    rows = []
    method = ""
    notes: list[str] = []
    for m in range(results.n_models):
        op = _model_operand(results, m)
        keep = np.isfinite(top.values) & np.isfinite(op.values)
        acc = float(np.nanmean(op.values)) if np.isfinite(op.values).any() else np.nan
        if op.name == top.name:
            rows.append((op.name, acc, 0.0, np.nan))
            continue
        if keep.sum() < 2:
            notes.append(f"{op.name}: fewer than 2 common prompts, not tested")
            rows.append((op.name, acc, np.nan, np.nan))
            continue
        codes = None
        if codes_all is not None:
            codes = np.unique(codes_all[keep], return_inverse=True)[1].ravel()
        diff, _, p, method, _, _ = _paired_test(
            top.values[keep],
            op.values[keep],
            top.single_draw_binary and op.single_draw_binary,
            codes,
        )
        rows.append((op.name, acc, diff, p))
    table = pd.DataFrame(
        rows, columns=["model", "accuracy", "difference", "p_value"]
    ).set_index("model")
    tested = table["p_value"].notna().to_numpy()
    table["p_holm"] = np.nan
    if tested.any():
        table.loc[tested, "p_holm"] = holm(table["p_value"].to_numpy()[tested])
    table["tied"] = (table["p_holm"] >= alpha) | (table.index == top.name)
    table = table.sort_values("accuracy", ascending=False, kind="stable")
    tied = [top.name] + [n for n in table.index[table["tied"]] if n != top.name]
    col = np.where(np.isfinite(top.values), top.values, 0.0)
    obs = np.isfinite(top.values).astype(np.float64)
    reps = replicate_means(
        results,
        np.column_stack([col, obs]),
        n_resamples=n_resamples,
        seed=seed,
        backend=backend,
    )
    ci = percentile_ci(reps[:, 0] / reps[:, 1], level)
    return TiedSet(
        best=top.name,
        value=float(table.loc[top.name, "accuracy"]),
        ci=ci,
        level=level,
        alpha=alpha,
        tied=tied,
        table=table,
        p_value_method=method + ", Holm-adjusted",
        notes=notes,
    )
