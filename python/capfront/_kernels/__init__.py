"""Kernel registry: every compiled kernel as one entry with its three backends.

A :class:`Kernel` names one computation and holds the same function three times:
the NumPy reference (always there), its Numba port and the C++ binding
(``capfront._core``). Each family module ``_kernels/<family>.py`` (same stem as
``cpp/include/capfront/<family>.hpp`` and ``src/register_<family>.cpp``) keeps the
NumPy reference and the Numba port side by side and registers its kernels when it
is imported. Callers never branch on a backend name: they call
``dispatch(name, backend)(...)``, which resolves ``backend`` (argument, else
``$CAPFRONT_BACKEND``, else the fastest available) and returns that backend's
function. All three functions of a kernel take the same arguments and return the
same values (the parity tests check it on edge cases).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._backend import BACKENDS, resolve_backend

__all__ = ["Kernel", "dispatch", "kernel", "kernels", "register"]

# family module -> the kernels it registers (imported on first use, so importing
# capfront does not import every family)
_FAMILIES = {
    "bootstrap": (
        "philox_words",
        "bootstrap_counts",
        "bootstrap_sums",
        "bootstrap_two_level_sums",
        "bootstrap_class_counts",
        "bootstrap_class_sums",
        "poisson_sums",
        "row_max_counts",
    ),
    "correlated": ("correlated_estep",),
    "crossfit": ("crossfit_rows",),
    "expected_max": ("expected_max_binomial_rows", "subsample_curve_mean"),
    "frontier": (
        "hull_segments_dense",
        "hull_segments_cells",
        "hull_segments_posthoc",
        "frontier_vertices",
    ),
    "graded": ("graded_crossfit_rows", "graded_curve_rows"),
    "latent": (
        "pgm_estep",
        "pgm_stats",
        "pgm_estep_stats",
        "pgm_mstep_scores",
        "pgm_mstep_scores_window",
        "pgm_emax",
        "pgm_class_estep",
    ),
    "oracle": ("naive_oracle_rows", "union_oracle_rows"),
    "pareto3d": ("pareto_minima_3d",),
    "subsample": ("subsample_curve_rows",),
    "suffstats": ("sufficient_stats",),
}

_REGISTRY: dict[str, Kernel] = {}


@dataclass(frozen=True)
class Kernel:
    """One computation with its NumPy reference, Numba port and C++ binding.

    Attributes
    ----------
    name : registry key
    numpy, numba, cpp : the three implementations, same signature and results
    family : the module (``_kernels/<family>.py``) that defines it
    """

    name: str
    numpy: Callable[..., Any]
    numba: Callable[..., Any]
    cpp: Callable[..., Any]
    family: str = ""

    def for_backend(self, backend: str) -> Callable[..., Any]:
        """The implementation for a backend name from ``BACKENDS``."""
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; valid: {BACKENDS}")
        return getattr(self, backend)


def register(k: Kernel) -> Kernel:
    """Add ``k`` to the registry (a family module calls this at import)."""
    if k.name in _REGISTRY and _REGISTRY[k.name] is not k:
        raise ValueError(f"kernel {k.name!r} is registered twice")
    _REGISTRY[k.name] = k
    return k


def kernel(name: str) -> Kernel:
    """The registry entry ``name`` (importing its family module if needed)."""
    if name not in _REGISTRY:
        for family, names in _FAMILIES.items():
            if name in names:
                importlib.import_module(f"{__name__}.{family}")
                break
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown kernel {name!r}; known: {', '.join(sorted(kernels()))}"
        ) from None


def kernels() -> dict[str, Kernel]:
    """Every kernel, by name (imports all family modules)."""
    for family in _FAMILIES:
        importlib.import_module(f"{__name__}.{family}")
    return dict(_REGISTRY)


def dispatch(name: str, backend: str | None = None) -> Callable[..., Any]:
    """The implementation of kernel ``name`` for ``backend`` (resolved as
    :func:`capfront.resolve_backend` does: argument, environment, fastest)."""
    return kernel(name).for_backend(resolve_backend(backend))
