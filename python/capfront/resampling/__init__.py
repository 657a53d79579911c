"""Resampling: the bootstrap engine and the statistic objects it takes.

- :mod:`.engine`: the Philox stream layout, chunked replicate drivers, progress,
  Ctrl-C; :func:`bootstrap`, :func:`replicate_counts`, :func:`count_chunks`;
- :mod:`.columns`: strata, columns as exact integers, value classes;
- :mod:`.intervals`: percentile, basic and BCa intervals;
- :mod:`.statistics`: :class:`LinearStatistic`, :class:`WeightedStatistic`,
  :class:`ResampledStatistic`, :class:`PerPrompt` and the registry of named
  statistics (:func:`register_statistic`);
- :mod:`.result`: :class:`BootstrapResult`;
- :mod:`.oracle_statistics`: the oracle statistics (registered on first use).
"""

from __future__ import annotations

from .engine import bootstrap, count_chunks, replicate_counts
from .result import BootstrapResult
from .statistics import (
    Codes,
    LinearStatistic,
    PerPrompt,
    ResampledStatistic,
    TwoLevel,
    WeightedStatistic,
    known_statistics,
    register_statistic,
)

__all__ = [
    "BootstrapResult",
    "Codes",
    "LinearStatistic",
    "PerPrompt",
    "ResampledStatistic",
    "TwoLevel",
    "WeightedStatistic",
    "bootstrap",
    "count_chunks",
    "known_statistics",
    "register_statistic",
    "replicate_counts",
]
