"""Type stubs for the compiled extension ``capfront._core`` (keep in step with src/)."""

from typing import Any

import numpy as np
import numpy.typing as npt

def num_threads() -> int: ...
def set_num_threads(n: int) -> None: ...

# register_suffstats.cpp
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

# register_debias.cpp
# the cells' table rows (-1: no draws): int8/16/32/64 read in place, else cast
Rows = npt.NDArray[np.int8 | np.int16 | np.int32 | np.int64]

def subsample_curve_rows(
    successes: npt.NDArray[np.int64],
    n_draws: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]: ...
def crossfit_rows(
    successes: npt.NDArray[np.int64],
    n_draws: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]: ...
def correlated_estep(
    successes: npt.NDArray[np.float64],
    n_draws: npt.NDArray[np.float64],
    mu: npt.NDArray[np.float64],
    precision: npt.NDArray[np.float64],
    logdet: float,
    m0: npt.NDArray[np.float64],
    z: npt.NDArray[np.float64],
    log_q: npt.NDArray[np.float64],
    inflate: float,
    newton_iters: int,
    moments: bool = True,
) -> tuple[
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
]: ...
def pgm_estep(
    table: npt.NDArray[np.float64],
    cell_row: Rows,
    topic: npt.NDArray[np.int64],
    log_w: npt.NDArray[np.float64],
    resp: npt.NDArray[np.float64],
    ll_out: npt.NDArray[np.float64] | None = None,
) -> float: ...
def pgm_estep_stats(
    table: npt.NDArray[np.float64],
    cell_row: Rows,
    topic: npt.NDArray[np.int64],
    log_w: npt.NDArray[np.float64],
    resp: npt.NDArray[np.float64],
    block_rows: int,
) -> tuple[float, npt.NDArray[np.float64]]: ...
def pgm_stats(
    resp: npt.NDArray[np.float64],
    cell_row: Rows,
    topic: npt.NDArray[np.int64],
    n_topics: int,
    n_rows: int,
) -> npt.NDArray[np.float64]: ...
def pgm_mstep_scores(
    stats: npt.NDArray[np.float64],
    logh: npt.NDArray[np.float64],
    cand: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]: ...
def pgm_mstep_scores_window(
    stats: npt.NDArray[np.float64],
    logh: npt.NDArray[np.float64],
    cand: npt.NDArray[np.int64],
    lo: npt.NDArray[np.int64],
    width: int,
) -> npt.NDArray[np.float64]: ...
def pgm_emax(
    resp: npt.NDArray[np.float64],
    cell_row: Rows,
    topic: npt.NDArray[np.int64],
    theta: npt.NDArray[np.float64],
    d_grid: npt.NDArray[np.float64],
    loglik: npt.NDArray[np.float64],
    t_grid: npt.NDArray[np.float64],
    family: int,
    scale: float,
    cut: npt.NDArray[np.int64],
    w1: npt.NDArray[np.float64],
    w2: npt.NDArray[np.float64],
    min_resp: float,
    eps: float,
    tails: npt.NDArray[np.float64],
    edge_loglik: npt.NDArray[np.float64],
    t_df: float = 3.0,
) -> tuple[
    npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]
]: ...
def pgm_class_estep(
    table: npt.NDArray[np.float64],
    cell_row: Rows,
    topic: npt.NDArray[np.int64],
    n_classes: int,
    log_w: npt.NDArray[np.float64],
    log_pi: npt.NDArray[np.float64],
    prev_r: npt.NDArray[np.float64] | None,
    sparse_r: float,
    keep_r: float,
    block_rows: int,
    stats: bool,
    want_resp: bool,
    want_ll: bool,
) -> tuple[
    float,
    npt.NDArray[np.float64],
    npt.NDArray[np.float64] | None,
    npt.NDArray[np.float64] | None,
    npt.NDArray[np.float64] | None,
    npt.NDArray[np.float64] | None,
]: ...

# register_graded.cpp
def graded_crossfit_rows(
    scores: npt.NDArray[np.float64],
    valid: npt.NDArray[np.bool_],
    prompt_key: npt.NDArray[np.uint32],
    model_key: npt.NDArray[np.uint32],
    seed: int,
    n_splits: int,
) -> npt.NDArray[np.float64]: ...
def graded_curve_rows(
    scores: npt.NDArray[np.float64],
    valid: npt.NDArray[np.bool_],
    sizes: npt.NDArray[np.int64],
    prompt_key: npt.NDArray[np.uint32],
    model_key: npt.NDArray[np.uint32],
    seed: int,
    n_splits: int,
) -> npt.NDArray[np.float64]: ...

# register_bootstrap.cpp
def philox_words(
    seed: int, rep: int, stream: int, start: int, count: int
) -> npt.NDArray[np.uint32]: ...
def bootstrap_sums(
    offsets: npt.NDArray[np.int64],
    seed: int,
    b0: int,
    n_replicates: int,
    z8: npt.NDArray[np.int8],
    z64: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]: ...
def bootstrap_counts(
    offsets: npt.NDArray[np.int64], seed: int, b0: int, n_replicates: int
) -> npt.NDArray[np.uint8]: ...
def bootstrap_class_sums(
    class_offsets: npt.NDArray[np.int64],
    class_size: npt.NDArray[np.int64],
    class_value: npt.NDArray[np.int64],
    seed: int,
    b0: int,
    n_replicates: int,
) -> npt.NDArray[np.int64]: ...
def bootstrap_class_counts(
    class_offsets: npt.NDArray[np.int64],
    class_size: npt.NDArray[np.int64],
    seed: int,
    b0: int,
    n_replicates: int,
) -> npt.NDArray[np.int64]: ...
def row_max_counts(
    successes: npt.NDArray[np.uint8],
    order: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    n_values: int,
) -> npt.NDArray[np.int64]: ...
def binomial_draws(
    n: npt.NDArray[np.int64],
    a: npt.NDArray[np.int64],
    b: npt.NDArray[np.int64],
    rep: npt.NDArray[np.int64],
    j: npt.NDArray[np.int64],
    seed: int,
) -> npt.NDArray[np.int64]: ...
def poisson_sums(
    keys: npt.NDArray[np.int64],
    values: npt.NDArray[np.int64],
    seed: int,
    n_replicates: int,
) -> npt.NDArray[np.int64]: ...
def bootstrap_two_level_sums(
    offsets: npt.NDArray[np.int64],
    seed: int,
    b0: int,
    n_replicates: int,
    successes: npt.NDArray[np.uint8],
    thresholds: npt.NDArray[np.uint64],
    with_max: bool,
    with_cells: bool,
) -> npt.NDArray[np.int64]: ...

# register_frontier.cpp (dict keys: base_cost, base_quality, base_option, prompt,
# dcost, dquality, option_from, option_to)
def hull_segments_dense(
    option_cost: npt.NDArray[np.float64], option_quality: npt.NDArray[np.float64]
) -> dict[str, npt.NDArray[Any]]: ...
def hull_segments_posthoc(
    successes: npt.NDArray[Any],
    n_draws: npt.NDArray[Any],
    cell_cost: npt.NDArray[np.float64],
    max_k: int,
    divide_cost: bool = False,
) -> dict[str, npt.NDArray[Any]]: ...
def hull_segments_cells(
    quality: npt.NDArray[Any],
    n_draws: npt.NDArray[Any],
    cost: npt.NDArray[np.float64],
    divide_quality: bool,
    divide_cost: bool,
) -> dict[str, npt.NDArray[Any]]: ...
def frontier_vertices(
    x0: float,
    y0: float,
    weights: npt.NDArray[np.float64],
    prompt: npt.NDArray[np.int64],
    dcost: npt.NDArray[np.float64],
    dquality: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]: ...

# register_pareto3d.cpp
def pareto_minima_3d(
    points: npt.NDArray[np.float64],
    maximize: tuple[bool, bool, bool] = (False, False, False),
) -> npt.NDArray[np.int64]: ...

# register_oracle.cpp
def prehoc_oracle_rows(
    successes: npt.NDArray[Any],
    n_draws: npt.NDArray[Any] | None,
    g_const: int,
    cost_sum: npt.NDArray[np.float64] | None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
def union_oracle_rows(
    successes: npt.NDArray[Any],
    n_draws: npt.NDArray[Any] | None,
    g_const: int,
    cost_sum: npt.NDArray[np.float64] | None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
