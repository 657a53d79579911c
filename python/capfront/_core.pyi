"""Type stubs for the compiled extension ``capfront._core`` (keep in step with src/)."""

from typing import Any

import numpy as np
import numpy.typing as npt

def num_threads() -> int: ...
def set_num_threads(n: int) -> None: ...

# register_stats.cpp
def sufficient_stats(
    scores: npt.NDArray[Any],
    mask: npt.NDArray[np.uint8] | None = None,
    cost: npt.NDArray[np.float64] | None = None,
    latency: npt.NDArray[np.float64] | None = None,
) -> dict[str, Any]: ...

# register_expected_max.cpp
def expected_max_binomial(
    p: npt.NDArray[np.float64], n_draws: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]: ...
def subsample_curve(
    successes: npt.NDArray[np.int64],
    n_draws: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]: ...
