"""Single models and the naive (plug-in) oracles.

Incomplete coverage (a model not run on every prompt) follows one rule: single
models, the best single model and the naive oracles are compared on the prompts
every model ran (the complete-case prompt set, ``EvalResults.common_prompts``).
A model run only on an easy subset would otherwise look best on numbers from other
prompts, and an oracle over all prompts minus a best model over a subset can even
be negative. Each model's accuracy on all the prompts it ran stays available as
``accuracy_own`` (and with ``on="all"``); ``EvalResults.coverage_note`` names the
models and their coverage for reports. Without a prompt that every model ran the
comparison is refused with that note.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._backend import resolve_backend
from .expected_max import pass_at_k
from .results import EvalResults

ORACLE_KINDS = ("prehoc", "posthoc", "union")
COMPARE_ON = ("common", "all")


def common_prompts(results: EvalResults) -> np.ndarray:
    """``(N,)`` bool: the prompts every model ran, on which single models and
    naive oracles are compared (all ``True`` with complete coverage)."""
    return EvalResults._require(results, "common_prompts").common_prompts


def on_common_prompts(results: EvalResults, on: str = "common") -> EvalResults:
    """``results`` restricted to :func:`common_prompts` (itself when coverage is
    complete or ``on="all"``); refuses, naming the models and their coverage, when
    no prompt was run by every model."""
    results = EvalResults._require(results, "on_common_prompts")
    if on not in COMPARE_ON:
        raise ValueError(f"on must be one of {COMPARE_ON}, got {on!r}")
    if on == "all" or results.is_complete:
        return results
    keep = results.common_prompts
    if not keep.any():
        raise ValueError(str(results.coverage_note))
    return results.select(np.flatnonzero(keep))


@dataclass(frozen=True)
class OracleResult:
    """A naive oracle: ``value`` (mean quality) and ``cost`` (mean cost per prompt,
    NaN without costs); ``choice`` is the routed model per prompt (prehoc only);
    ``n_prompts`` the prompts averaged (fewer than N with incomplete coverage)."""

    kind: str
    value: float
    cost: float
    choice: np.ndarray | None = None
    n_prompts: int | None = None

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
    results: EvalResults,
    kind: str = "prehoc",
    *,
    on: str = "common",
    backend: str | None = None,
) -> OracleResult:
    """Plug-in oracle quality and cost.

    - ``prehoc``: ``mean_n max_l p_hat[n, l]``, cost of the routed (cheapest tied)
      model's mean generation (the paper's eq. 5, biased upward).
    - ``posthoc``: ``mean_n max_{l, g} phi[n, l, g]``, every generation paid.
    - ``union``: single-draw union oracle ``mean_n [1 - prod_l (1 - p_hat[n, l])]``
      (LLMRouterBench; binary scores), one generation of every model paid.

    With incomplete coverage the mean is over the prompts every model ran
    (``on="common"``, the module's rule, so the oracle and the best single model
    refer to the same prompts; ``n_prompts`` says how many); ``on="all"`` averages
    over every prompt, each prompt's max over the models that ran it. ``choice``
    is per averaged prompt. ``prehoc`` and ``union`` run a fused per-prompt kernel
    (``backend``: ``cpp``, ``numba`` or ``numpy``, default the fastest; the
    results are bit-identical).
    """
    from ._kernels import dispatch

    results = EvalResults._require(results, "naive_oracle")
    resolve_backend(backend)
    if kind not in ORACLE_KINDS:
        raise ValueError(f"unknown oracle kind {kind!r}; use one of {ORACLE_KINDS}")
    results = on_common_prompts(results, on)
    st = results.stats
    nan = float("nan")
    if kind == "prehoc":
        run = dispatch("naive_oracle_rows", backend)
        choice, value, cost = run(st.successes, st.n_draws, st.cost_sum)
        c = float(cost.mean()) if cost is not None else nan
        return OracleResult(kind, float(value.mean()), c, choice, results.n_prompts)
    if kind == "posthoc":
        value = float(np.nanmax(results.max_score, axis=1).mean())
        c = float(st.cost_sum.sum(axis=1).mean()) if st.cost_sum is not None else nan
        return OracleResult(kind, value, c, None, results.n_prompts)
    results.require_binary("the union oracle")
    miss, cost = dispatch("union_oracle_rows", backend)(
        st.successes, st.n_draws, st.cost_sum
    )
    c = float(cost.mean()) if cost is not None else nan
    return OracleResult(kind, float((1.0 - miss).mean()), c, None, results.n_prompts)


def single_models(
    results: EvalResults,
    best_of_k: Sequence[int] | None = None,
    *,
    on: str = "common",
    backend: str | None = None,
) -> pd.DataFrame:
    """One row per model, most accurate first (ties in model order).

    Columns: ``accuracy = mean_n p_hat[n, l]``, ``mean_cost``, ``mean_latency``,
    ``p95_latency`` (over prompts of the cell mean), ``pass@k`` for each ``k`` in
    ``best_of_k`` (unbiased, Chen et al. 2021; binary scores), all over the
    compared prompts: with incomplete coverage the prompts every model ran
    (``on="common"``, see the module docstring), else every prompt. ``n_prompts``
    is the number of prompts the model ran and ``accuracy_own`` its accuracy on
    them (equal to ``accuracy`` with complete coverage). ``on="all"`` computes every
    column on each model's own prompts (not comparable across models with
    incomplete coverage). ``backend`` is accepted (and checked) for a uniform API.
    """
    results = EvalResults._require(results, "single_models")
    resolve_backend(backend)
    compared = on_common_prompts(results, on)
    with warnings.catch_warnings():
        # a model run on none of the prompts gets NaN, not "Mean of empty slice"
        warnings.simplefilter("ignore", RuntimeWarning)
        table = _single_models(compared, best_of_k)
        obs = results.observed
        table.insert(1, "n_prompts", obs.sum(axis=0))
        table.insert(
            2,
            "accuracy_own",
            np.nanmean(np.where(obs, results.p_hat, np.nan), axis=0),
        )
    return table.sort_values(
        "accuracy", ascending=False, kind="stable", na_position="last"
    )


def _single_models(
    results: EvalResults, best_of_k: Sequence[int] | None
) -> pd.DataFrame:
    obs = results.observed
    p = results.p_hat
    table = pd.DataFrame(
        {"accuracy": np.nanmean(np.where(obs, p, np.nan), axis=0)},
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


def best_single(
    results: EvalResults, *, on: str = "common"
) -> tuple[str, float, float]:
    """(model, accuracy, mean cost) of the most accurate model; ties -> cheapest,
    then the first in model order. With incomplete coverage, accuracy and cost are
    over the prompts every model ran (``on="common"``, see the module docstring)."""
    # back in model order, so that exact ties go to the first model
    table = single_models(results, on=on).reindex(results.models.astype(str))
    acc = table["accuracy"].to_numpy()
    cand = np.flatnonzero(acc == np.nanmax(acc))
    if "mean_cost" in table:
        cand = cand[np.argsort(table["mean_cost"].to_numpy()[cand], kind="stable")]
    i = int(cand[0])
    cost = float(table["mean_cost"].iloc[i]) if "mean_cost" in table else float("nan")
    return str(table.index[i]), float(acc[i]), cost
