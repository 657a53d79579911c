"""Single models and the naive (plug-in) oracles of SPEC 2."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .expected_max import pass_at_k
from .results import EvalResults

ORACLE_KINDS = ("prehoc", "posthoc", "union")


@dataclass(frozen=True)
class OracleResult:
    """A naive oracle: ``value`` (mean quality) and ``cost`` (mean cost per prompt,
    NaN without costs); ``choice`` is the routed model per prompt (prehoc only)."""

    kind: str
    value: float
    cost: float
    choice: np.ndarray | None = None

    def __float__(self) -> float:
        return self.value


def prehoc_choice(results: EvalResults) -> np.ndarray:
    """Per prompt, the model with the highest ``p_hat``; ties go to the lowest mean
    cost (RouterBench), then to the first model."""
    p = np.where(results.observed, results.p_hat, -np.inf)
    best = p.max(axis=1, keepdims=True)
    tied = p == best
    if results.has_cost:
        c = np.where(tied, results.mean_cost, np.inf)
        return np.argmin(c, axis=1)
    return np.argmax(tied, axis=1)


def naive_oracle(
    results: EvalResults, kind: str = "prehoc", backend: str | None = None
) -> OracleResult:
    """Plug-in oracle quality and cost (SPEC 2).

    - ``prehoc``: ``mean_n max_l p_hat[n, l]``, cost of the routed (cheapest tied)
      model's mean generation (the paper's eq. 5, biased upward).
    - ``posthoc``: ``mean_n max_{l, g} phi[n, l, g]``, every generation paid.
    - ``union``: single-draw union oracle ``mean_n [1 - prod_l (1 - p_hat[n, l])]``
      (LLMRouterBench; binary scores), one generation of every model paid.
    Models not run on a prompt are left out of its max.

    ``prehoc`` and ``union`` run a fused per-prompt kernel (``backend``: ``cpp``,
    ``numba`` or ``numpy``, default the fastest; the results are bit-identical).
    """
    from ._kernels import dispatch

    if kind not in ORACLE_KINDS:
        raise ValueError(f"unknown oracle kind {kind!r}; use one of {ORACLE_KINDS}")
    st = results.stats
    nan = float("nan")
    if kind == "prehoc":
        run = dispatch("naive_oracle_rows", backend)
        choice, value, cost = run(st.successes, st.n_draws, st.cost_sum)
        c = float(cost.mean()) if cost is not None else nan
        return OracleResult(kind, float(value.mean()), c, choice)
    if kind == "posthoc":
        value = float(np.nanmax(results.max_score, axis=1).mean())
        c = float(st.cost_sum.sum(axis=1).mean()) if st.cost_sum is not None else nan
        return OracleResult(kind, value, c)
    results.require_binary("the union oracle")
    miss, cost = dispatch("union_oracle_rows", backend)(
        st.successes, st.n_draws, st.cost_sum
    )
    c = float(cost.mean()) if cost is not None else nan
    return OracleResult(kind, float((1.0 - miss).mean()), c)


def single_models(
    results: EvalResults, best_of_k: Sequence[int] | None = None
) -> pd.DataFrame:
    """One row per model: ``accuracy = mean_n p_hat[n, l]`` (over the prompts it was
    run on), ``mean_cost``, ``mean_latency``, ``p95_latency`` (over prompts of the
    cell mean), ``n_prompts``, and ``pass@k`` columns for each ``k`` in ``best_of_k``
    (unbiased, Chen et al. 2021; binary scores). Sorted as in ``results.models``."""
    with warnings.catch_warnings():
        # a model run on none of the prompts gets NaN, not "Mean of empty slice"
        warnings.simplefilter("ignore", RuntimeWarning)
        return _single_models(results, best_of_k)


def _single_models(
    results: EvalResults, best_of_k: Sequence[int] | None
) -> pd.DataFrame:
    obs = results.observed
    n_run = obs.sum(axis=0)
    p = results.p_hat
    table = pd.DataFrame(
        {
            "accuracy": np.nanmean(np.where(obs, p, np.nan), axis=0),
            "n_prompts": n_run,
        },
        index=pd.Index(results.models.astype(str), name="model"),
    )
    if results.has_cost:
        table["mean_cost"] = np.nanmean(results.mean_cost, axis=0)
    if results.has_latency:
        lat = results.mean_latency
        table["mean_latency"] = np.nanmean(lat, axis=0)
        table["p95_latency"] = np.nanpercentile(lat, 95, axis=0)
    for k in best_of_k or ():
        results.require_binary("pass@k")
        if k > results.min_draws:
            raise ValueError(
                f"pass@{k} needs at least {k} generations per cell; the data has as "
                f"few as {results.min_draws}"
            )
        S = results.successes.astype(np.int64)
        G = np.maximum(results.n_draws, k)
        vals = np.where(obs, pass_at_k(G, np.minimum(S, G), k), np.nan)
        table[f"pass@{k}"] = np.nanmean(vals, axis=0)
    return table


def best_single(results: EvalResults) -> tuple[str, float, float]:
    """(model, accuracy, mean cost) of the most accurate model; ties -> cheapest."""
    table = single_models(results)
    acc = table["accuracy"].to_numpy()
    cand = np.flatnonzero(acc == np.nanmax(acc))
    if "mean_cost" in table:
        cand = cand[np.argsort(table["mean_cost"].to_numpy()[cand], kind="stable")]
    i = int(cand[0])
    cost = float(table["mean_cost"].iloc[i]) if "mean_cost" in table else float("nan")
    return str(table.index[i]), float(acc[i]), cost
