"""Compatibility: the Numba ports of the frontier kernels moved to
:mod:`capfront._kernels.frontier` (beside their NumPy references), the 3-D Pareto
port to :mod:`capfront._kernels.pareto3d`."""

from __future__ import annotations

from ._kernels.frontier import (  # noqa: F401
    frontier_vertices_nb,
    hull_segments_dense_nb,
    hull_segments_posthoc_nb,
)
from ._kernels.pareto3d import pareto_minima_3d_nb  # noqa: F401
