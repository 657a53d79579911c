"""The debiased oracle estimators as statistics of :func:`capfront.bootstrap`.

Each method of :data:`capfront.debias.METHODS` is registered under its name. Its
statistic is the decomposition of :func:`capfront.debias.decomposition`: per-prompt
values ``V (N, K)`` and ``finalize``, ``theta = finalize(mean_n V[n])``, a linear
statistic of the resampling engine (the fast streaming path). ``"naive"`` is the
naive oracle ``mean_n max_l p_hat`` on all prompts. With ``two_level=True`` the
decomposition is refitted on every replicate (``S* ~ Bin(G, p_hat)`` changes the
fitted values): a resampled statistic.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..resampling.oracle_statistics import oracle_statistic
from ..resampling.statistics import (
    LinearStatistic,
    ResampledStatistic,
    register_statistic,
    values_statistic,
)
from ..results import EvalResults
from . import METHODS, decomposition

__all__: list[str] = []


def _refit_value(name: str) -> Any:
    def value(res: EvalResults) -> float:
        d = decomposition(res, name)
        return (
            float(d.estimate())
            if hasattr(d, "estimate")
            else float(d[1](np.asarray(d[0]).mean(axis=0)))
        )

    return value


def _build(
    results: EvalResults, name: str, two_level: bool
) -> LinearStatistic | ResampledStatistic:
    if name == "naive":
        return oracle_statistic(results, "naive_oracle")
    dec = decomposition(results, name)
    values, fin = dec
    diag = getattr(dec, "diagnostics", {}) or {}
    stat = values_statistic(results, values, fin, name, diag)
    if two_level:
        return ResampledStatistic(_refit_value(name), float(stat.estimate))
    return stat


for _name in METHODS:
    register_statistic(_name, _build)
