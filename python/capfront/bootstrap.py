"""Compatibility module: ``from capfront.bootstrap import bootstrap, BootstrapResult,
replicate_counts, PerPrompt``.

The engine lives in :mod:`capfront.resampling` (:mod:`.resampling.engine` for the
streams, drivers and intervals, :mod:`.resampling.statistics` for the statistic
objects and the registry of named statistics, :mod:`.resampling.result` for
:class:`BootstrapResult`). The package attribute ``capfront.bootstrap`` is the
function.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._kernels import dispatch
from ._kernels.bootstrap import replicate_chunk as _chunk_size
from .resampling.columns import _Columns as _Columns
from .resampling.engine import METHODS, STRATIFY, bootstrap, replicate_counts
from .resampling.engine import _check_int as _check_int
from .resampling.engine import make_strata as _strata
from .resampling.result import BootstrapResult
from .resampling.statistics import PerPrompt
from .resampling.statistics import common_draws as _common_draws

__all__ = [  # noqa: F822 - BUILTIN_STATISTICS is a lazy module attribute
    "BUILTIN_STATISTICS",
    "METHODS",
    "STRATIFY",
    "BootstrapResult",
    "PerPrompt",
    "bootstrap",
    "replicate_counts",
]


def _sums(
    offsets: np.ndarray,
    seed: int,
    b0: int,
    nb: int,
    z8: np.ndarray,
    z64: np.ndarray,
    backend: str,
) -> np.ndarray:
    """Exact integer sums ``sum_n c_bn Z[k, n]`` (the ``bootstrap_sums`` kernel)."""
    return dispatch("bootstrap_sums", backend)(offsets, seed, b0, nb, z8, z64)


# _check_int, _strata, _Columns, _common_draws, _chunk_size and _sums are the
# private names capfront.paired reads from this module (to move to
# capfront.resampling.engine.replicate_means)
_PAIRED_NAMES = (_check_int, _strata, _Columns, _common_draws, _chunk_size, _sums)


def __getattr__(name: str) -> Any:
    # the registered names, computed on first use: listing them imports their
    # owners (debias, frontier), which importing this module must not
    if name == "BUILTIN_STATISTICS":
        from .resampling.statistics import known_statistics

        return known_statistics()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
