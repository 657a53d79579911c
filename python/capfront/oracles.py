"""The naive (plug-in) oracles and THE best single model.

The comparison rule: single models, the best single model and the naive oracles
are compared on the prompts every model ran (:func:`on_common_prompts`; see
:mod:`capfront.baselines`).

The best single model, wherever capfront needs it (``capfront.best_single``,
``Frontier.best_single``, the frontier's bootstrap replicates, the report), is
chosen by :func:`best_model` with one tie rule: the highest mean quality; means
within ``TIE_ATOL = 1e-12`` (absolute) of the highest are tied (qualities lie in
[0, 1], so 1e-12 only absorbs the rounding of a mean, never a real difference);
among tied models the lowest mean cost wins (a missing cost counts as the
highest), then the first in model order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._backend import resolve_backend
from ._protocol import ResultProtocol
from .results import EvalResults

ORACLE_KINDS = ("prehoc", "posthoc", "union")
COMPARE_ON = ("common", "all")
#: mean qualities this close (absolute) to the highest are tied
TIE_ATOL = 1e-12


def best_models(quality: np.ndarray, cost: np.ndarray | None = None) -> np.ndarray:
    """Index of the best single model in each row of ``quality`` (``(R, L)`` mean
    qualities, e.g. one row per bootstrap replicate; ``-inf`` or NaN for a model
    that cannot be chosen): the highest mean, ties (within :data:`TIE_ATOL`) to
    the lowest ``cost`` (``(R, L)`` or ``(L,)`` mean costs; NaN counts as the
    highest), then to the first model."""
    q = np.atleast_2d(np.asarray(quality, dtype=np.float64))
    q = np.where(np.isnan(q), -np.inf, q)
    top = q.max(axis=1, keepdims=True)
    tied = q >= top - TIE_ATOL
    if cost is None:
        return np.argmax(tied, axis=1)
    c = np.broadcast_to(np.asarray(cost, dtype=np.float64), q.shape)
    c = np.where(tied, np.where(np.isnan(c), np.inf, c), np.inf)
    low = c.min(axis=1, keepdims=True)
    # argmax of the first True: the first of the cheapest tied models (all-inf
    # costs leave every tied model "cheapest", so the first tied one wins)
    return np.argmax(tied & (c <= low), axis=1)


def best_model(quality: np.ndarray, cost: np.ndarray | None = None) -> int:
    """Index of the best single model from ``(L,)`` mean qualities and costs (the
    rule of :func:`best_models`)."""
    return int(best_models(np.asarray(quality)[None, :], cost)[0])


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
class OracleResult(ResultProtocol):
    """A naive oracle: ``value`` (mean quality) and ``cost`` (mean cost per prompt,
    NaN without costs); ``choice`` is the routed model per prompt (prehoc only;
    left out of ``to_dict``); ``n_prompts`` the prompts averaged (fewer than N with
    incomplete coverage). A plug-in estimate: ``ci`` is ``(nan, nan)`` (bootstrap
    it with ``capfront.bootstrap(results, "naive_oracle")``)."""

    kind: str
    value: float
    cost: float
    choice: np.ndarray | None = field(default=None, repr=False)
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
