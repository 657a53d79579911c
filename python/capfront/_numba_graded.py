"""Compatibility: the Numba kernels of the graded-score Monte Carlo moved to
:mod:`capfront._kernels.graded`, beside their NumPy reference."""

from __future__ import annotations

from ._kernels.graded import (  # noqa: F401
    graded_crossfit_rows_nb,
    graded_curve_rows_nb,
)
