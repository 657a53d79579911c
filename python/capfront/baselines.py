"""Single models and the best single model (the naive oracles live in
:mod:`capfront.oracles` and are re-exported here).

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
from typing import TYPE_CHECKING

import numpy as np

from ._backend import resolve_backend
from .oracles import (  # noqa: F401  (re-exported: capfront.naive_oracle, ...)
    COMPARE_ON,
    ORACLE_KINDS,
    OracleResult,
    best_model,
    common_prompts,
    naive_oracle,
    on_common_prompts,
    prehoc_choice,
)
from .results import EvalResults

if TYPE_CHECKING:  # pandas and the pass@k kernels load on the first table, not on
    # import: the naive oracles re-exported here need neither
    import pandas as pd


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
    import pandas as pd

    from .expected_max import pass_at_k

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
    """(model, accuracy, mean cost) of the most accurate model; ties (within
    1e-12) -> cheapest, then the first in model order (the one rule of
    :func:`capfront.oracles.best_model`). With incomplete coverage, accuracy and
    cost are over the prompts every model ran (``on="common"``, see the module
    docstring)."""
    # back in model order, so that ties go to the first model
    table = single_models(results, on=on).reindex(results.models.astype(str))
    acc = table["accuracy"].to_numpy()
    cost = table["mean_cost"].to_numpy() if "mean_cost" in table else None
    i = best_model(acc, cost)
    return str(table.index[i]), float(acc[i]), float("nan" if cost is None else cost[i])
