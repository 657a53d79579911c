"""Type-checker view of capfront's lazily loaded public names (kept in step with
``_EXPORTS`` in ``__init__.py`` by tests/test_lazy_import.py)."""

from . import studies as studies
from ._backend import BACKENDS as BACKENDS
from ._backend import available_backends as available_backends
from ._backend import get_num_threads as get_num_threads
from ._backend import resolve_backend as resolve_backend
from ._backend import set_num_threads as set_num_threads
from .baselines import OracleResult as OracleResult
from .baselines import best_single as best_single
from .baselines import naive_oracle as naive_oracle
from .baselines import single_models as single_models
from .bootstrap import BootstrapResult as BootstrapResult
from .bootstrap import bootstrap as bootstrap
from .compare import Comparison as Comparison
from .compare import TiedSet as TiedSet
from .compare import compare as compare
from .compare import tied_with_best as tied_with_best
from .debias import AuditResult as AuditResult
from .debias import DebiasResult as DebiasResult
from .debias import GapDecomposition as GapDecomposition
from .debias import audit as audit
from .debias import bias_curve as bias_curve
from .debias import debiased_oracle as debiased_oracle
from .debias import gap_decomposition as gap_decomposition
from .errors import CapfrontWarning as CapfrontWarning
from .errors import NotEvalResultsError as NotEvalResultsError
from .errors import OutsideFrontierWarning as OutsideFrontierWarning
from .expected_max import expected_max_binomial as expected_max_binomial
from .expected_max import pass_at_k as pass_at_k
from .expected_max import subsample_curve as subsample_curve
from .frontier import Frontier as Frontier
from .frontier import HullSegments as HullSegments
from .frontier import frontier as frontier
from .frontier import frontier_metrics as frontier_metrics
from .frontier import frontier_options as frontier_options
from .frontier import hull_segments as hull_segments
from .io import from_count_frame as from_count_frame
from .io import from_frame as from_frame
from .io import read as read
from .pareto import LatencyFrontier as LatencyFrontier
from .pareto import latency_frontier as latency_frontier
from .pareto import pareto_3d as pareto_3d
from .plan import Plan as Plan
from .plan import plan as plan
from .results import EvalResults as EvalResults
from .router import RouterResult as RouterResult
from .router import RouterTable as RouterTable
from .router import evaluate_router as evaluate_router
from .simulate import simulate as simulate
from .suffstats import SufficientStats as SufficientStats
from .suffstats import sufficient_stats as sufficient_stats

__version__: str
__all__: list[str]
