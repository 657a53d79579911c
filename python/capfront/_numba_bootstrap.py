"""Compatibility names: the Numba ports of the bootstrap kernels live in
:mod:`capfront._kernels.bootstrap` (next to their NumPy references)."""

from __future__ import annotations

from ._kernels.bootstrap import (
    binomial_ratio_nb,
    bootstrap_class_counts_nb,
    bootstrap_class_sums_nb,
    bootstrap_counts_nb,
    bootstrap_sums_nb,
    bootstrap_two_level_sums_nb,
    poisson_sums_nb,
    stream_words_nb,
    uniform53_nb,
)

__all__ = [
    "binomial_ratio_nb",
    "bootstrap_class_counts_nb",
    "bootstrap_class_sums_nb",
    "bootstrap_counts_nb",
    "bootstrap_sums_nb",
    "bootstrap_two_level_sums_nb",
    "poisson_sums_nb",
    "stream_words_nb",
    "uniform53_nb",
]
