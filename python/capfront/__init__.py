"""capfront: the capability frontier of a pool of LLMs.

Oracle routing, debiased oracle estimates, exact cost-quality frontiers and fast
bootstrap intervals from evaluation results shaped ``[N prompts, L models,
G generations]``.
"""

from __future__ import annotations

from . import studies
from ._backend import (
    BACKENDS,
    available_backends,
    get_num_threads,
    resolve_backend,
    set_num_threads,
)
from .baselines import OracleResult, best_single, naive_oracle, single_models
from .bootstrap import BootstrapResult, bootstrap  # the function shadows the module
from .compare import Comparison, TiedSet, compare, tied_with_best
from .debias import (
    AuditResult,
    DebiasResult,
    GapDecomposition,
    audit,
    bias_curve,
    debiased_oracle,
    gap_decomposition,
)
from .expected_max import expected_max_binomial, pass_at_k, subsample_curve
from .frontier import (
    Frontier,
    HullSegments,
    frontier,
    frontier_metrics,
    frontier_options,
    hull_segments,
)
from .io import from_count_frame, from_frame, read
from .pareto import LatencyFrontier, latency_frontier, pareto_3d
from .plan import Plan, plan  # the function shadows the module
from .results import EvalResults
from .router import RouterResult, RouterTable, evaluate_router
from .simulate import simulate
from .suffstats import SufficientStats, sufficient_stats

__version__ = "0.1.0"

__all__ = [
    "BACKENDS",
    "AuditResult",
    "DebiasResult",
    "GapDecomposition",
    "audit",
    "bias_curve",
    "debiased_oracle",
    "gap_decomposition",
    "BootstrapResult",
    "EvalResults",
    "Frontier",
    "HullSegments",
    "LatencyFrontier",
    "OracleResult",
    "SufficientStats",
    "available_backends",
    "best_single",
    "bootstrap",
    "expected_max_binomial",
    "from_count_frame",
    "from_frame",
    "frontier",
    "frontier_metrics",
    "frontier_options",
    "get_num_threads",
    "hull_segments",
    "latency_frontier",
    "naive_oracle",
    "pareto_3d",
    "pass_at_k",
    "read",
    "resolve_backend",
    "set_num_threads",
    "simulate",
    "single_models",
    "studies",
    "subsample_curve",
    "sufficient_stats",
    "Comparison",
    "Plan",
    "RouterResult",
    "RouterTable",
    "TiedSet",
    "compare",
    "evaluate_router",
    "plan",
    "tied_with_best",
]
