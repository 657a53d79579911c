"""The frontier metrics as statistics of :func:`capfront.bootstrap`:
``"frontier_error_reduction"``, ``"frontier_cost_reduction"`` and ``"aiq"`` of the
prehoc naive frontier on all prompts against the best single model.

A weighted statistic of the resampling engine: the hull segments are sorted once
(their slopes do not change under prompt re-weighting); a replicate with prompt
weights ``w`` takes the running sums of ``w[prompt] * dcost`` and
``w[prompt] * dquality`` over the segments -- ``O(segments)`` -- and the best
single model from the weighted column means ``A_l = sum_n w_n p_hat[n, l] /
sum_n w_n o[n, l]`` (most accurate, then cheapest), one matrix product per chunk
of replicates. With ``two_level=True`` the segments change with ``p_hat*``: the
frontier is rebuilt per replicate (a resampled statistic).
"""

from __future__ import annotations

import numpy as np

from .baselines import on_common_prompts
from .frontier import _cell_cost, frontier_metrics, frontier_segments
from .resampling.statistics import (
    ResampledStatistic,
    WeightedStatistic,
    register_statistic,
)
from .results import EvalResults

__all__ = ["frontier_statistic"]

METRICS = {
    "frontier_error_reduction": "error_reduction",
    "frontier_cost_reduction": "cost_reduction",
    "aiq": "aiq",
}


def frontier_statistic(results: EvalResults, name: str) -> WeightedStatistic:
    """The :class:`WeightedStatistic` of frontier metric ``name`` on ``results``."""
    key = METRICS[name]
    seg = frontier_segments(results)[0]
    cost = np.asarray(_cell_cost(results, None), dtype=np.float64)
    obs = results.observed
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(obs, results.successes / results.n_draws, 0.0)
    c = np.where(obs, cost, 0.0)
    o = obs.astype(np.float64)
    prompt, dcost, dquality = seg.prompt, seg.dcost, seg.dquality

    def batch(W: np.ndarray) -> np.ndarray:
        W = W / W.sum(axis=1, keepdims=True)
        share = W @ o
        with np.errstate(invalid="ignore", divide="ignore"):
            acc = np.where(share > 0, (W @ p) / share, -np.inf)
            cst = np.where(share > 0, (W @ c) / share, np.inf)
        x0 = W @ seg.base_cost
        y0 = W @ seg.base_quality
        out = np.empty(W.shape[0])
        for r in range(W.shape[0]):
            top = acc[r].max()
            cand = np.flatnonzero(acc[r] == top)
            i = int(cand[np.argmin(cst[r, cand])])
            # zero-weight segments add repeated points, which the metrics allow
            ws = W[r, prompt]
            x = np.concatenate([[x0[r]], x0[r] + np.cumsum(ws * dcost)])
            y = np.concatenate([[y0[r]], y0[r] + np.cumsum(ws * dquality)])
            out[r] = frontier_metrics(
                np.column_stack([x, y]), float(cst[r, i]), float(acc[r, i])
            )[key]
        return out

    def value(w: np.ndarray) -> float:
        return float(batch(np.asarray(w, dtype=np.float64)[None, :])[0])

    N = results.n_prompts
    return WeightedStatistic(value, value(np.full(N, 1.0 / N)), batch, data=results)


def _build(
    results: EvalResults, name: str, two_level: bool
) -> WeightedStatistic | ResampledStatistic:
    data = results if results.is_complete else on_common_prompts(results)
    if two_level:

        def value(res: EvalResults) -> float:
            return frontier_statistic(res, name).estimate

        return ResampledStatistic(
            value, frontier_statistic(data, name).estimate, data=data
        )
    return frontier_statistic(data, name)


for _name in METRICS:
    register_statistic(_name, _build)
