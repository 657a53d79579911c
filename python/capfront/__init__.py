"""capfront: the capability frontier of a pool of LLMs.

Oracle routing, debiased oracle estimates, exact cost-quality frontiers and fast
bootstrap intervals from evaluation results shaped ``[N prompts, L models,
G generations]``.

``import capfront`` is cheap: the public names below are loaded on first use
(PEP 562 module ``__getattr__``), so a command-line call or a worker process pays
for NumPy, pandas, SciPy and Numba only when it needs them. ``__init__.pyi`` lists
the same names for type checkers (a test keeps the two in step).

Docstrings cite the formulas of ``docs/design.md`` as "design §n".
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__version__ = "0.1.0"

#: public name -> the submodule that defines it
_EXPORTS: dict[str, str] = {
    "BACKENDS": "_backend",
    "available_backends": "_backend",
    "get_num_threads": "_backend",
    "resolve_backend": "_backend",
    "set_num_threads": "_backend",
    "OracleResult": "baselines",
    "best_single": "baselines",
    "naive_oracle": "baselines",
    "single_models": "baselines",
    "BootstrapResult": "bootstrap",
    "bootstrap": "bootstrap",
    "AuditResult": "debias",
    "DebiasResult": "debias",
    "GapDecomposition": "debias",
    "audit": "debias",
    "bias_curve": "debias",
    "debiased_oracle": "debias",
    "gap_decomposition": "debias",
    "expected_max_binomial": "expected_max",
    "pass_at_k": "expected_max",
    "subsample_curve": "expected_max",
    "Frontier": "frontier",
    "HullSegments": "frontier",
    "frontier": "frontier",
    "frontier_metrics": "frontier",
    "frontier_options": "frontier",
    "hull_segments": "frontier",
    "from_count_frame": "io",
    "from_frame": "io",
    "read": "io",
    "LatencyFrontier": "pareto",
    "latency_frontier": "pareto",
    "pareto_3d": "pareto",
    "EvalResults": "results",
    "simulate": "simulate",
    "SufficientStats": "suffstats",
    "sufficient_stats": "suffstats",
    "CapfrontWarning": "errors",
    "OutsideFrontierWarning": "errors",
    "NotEvalResultsError": "errors",
    "Comparison": "compare",
    "TiedSet": "compare",
    "compare": "compare",
    "tied_with_best": "compare",
    "Plan": "plan",
    "plan": "plan",
    "RouterResult": "router",
    "RouterTable": "router",
    "evaluate_router": "router",
}
#: submodules reachable as attributes (``capfront.io.load``, ``capfront.studies``)
_SUBMODULES = frozenset(
    {"adapters", "dask", "debias", "io", "report", "studies", "results", "cli"}
)
#: names that are both a function and the submodule defining it: the package
#: attribute is the function, also after the submodule is imported directly
_SHADOWED = frozenset(
    name for name, mod in _EXPORTS.items() if name == mod and not name[0].isupper()
)

__all__ = sorted([*_EXPORTS, "studies"])


def _load(name: str) -> Any:
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return _load(name)
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_SUBMODULES})


class _Package(types.ModuleType):
    """The package's module type: importing ``capfront.bootstrap`` (the module)
    binds the package attribute to the function of the same name, as the eager
    ``from .bootstrap import bootstrap`` did, whichever is imported first."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
