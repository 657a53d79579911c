"""THE best single model (``capfront.oracles``): one tie rule on every path."""

from __future__ import annotations

import numpy as np
import pytest

import capfront as cf
from capfront.frontier import frontier_metrics, frontier_vertices
from capfront.oracles import TIE_ATOL, best_model, best_models


def test_best_models_rule() -> None:
    q = np.array(
        [
            [0.5, 0.7, 0.7 - TIE_ATOL / 2, 0.1],  # tie within 1e-12: the cheaper
            [0.5, 0.7, 0.7 - 10 * TIE_ATOL, 0.1],  # a real difference: the higher
            [0.7, 0.7, 0.7, np.nan],  # equal costs of the tied: the first
            [-np.inf, -np.inf, 0.2, 0.2],  # -inf cannot be chosen
        ]
    )
    c = np.array(
        [
            [1.0, 3.0, 2.0, 0.0],
            [1.0, 3.0, 2.0, 0.0],
            [5.0, 4.0, 4.0, 0.0],
            [0.0, 0.0, np.nan, 1.0],  # NaN cost counts as the highest
        ]
    )
    np.testing.assert_array_equal(best_models(q, c), [2, 1, 1, 3])
    np.testing.assert_array_equal(best_models(q), [1, 1, 0, 2])
    assert best_model(q[0], c[0]) == 2
    assert best_model(np.array([np.nan, 0.3])) == 1


def _near_tie() -> cf.EvalResults:
    """Models a and b have the same mean up to floating rounding (0.1 + 0.2 + 0.3
    != 0.3 + 0.2 + 0.1); a, first in model order, is the dearer: the ``==`` rule
    picks a, the tie rule b."""
    a = [0.1, 0.2, 0.3]
    b = [0.3, 0.2, 0.1]
    c = [0.0, 0.0, 0.0]
    scores = np.array([a, b, c], dtype=np.float64).T[:, :, None]
    assert np.mean(a) != np.mean(b) and abs(np.mean(a) - np.mean(b)) < TIE_ATOL
    cost = np.broadcast_to(np.array([2.0, 1.0, 0.5]), (3, 3))[:, :, None].copy()
    return cf.EvalResults.from_arrays(scores, cost=cost, models=["a", "b", "c"])


def test_every_path_picks_the_same_best_single_on_a_near_tie() -> None:
    res = _near_tie()
    name, acc, cost = cf.best_single(res)
    assert (name, cost) == ("b", 1.0)
    fr = cf.frontier(res)
    assert fr.best_single() == (name, pytest.approx(acc, abs=1e-15), cost)
    # the frontier's replicates (bootstrap intervals of versus_best_single) on the
    # original weights choose the same model
    q1, c1, ok = fr._single_arrays()
    got = fr._replicate_metrics(fr.weights[None, :], q1, c1, ok)[0]
    v = frontier_vertices(fr.segments, fr.weights)
    want = frontier_metrics(v, cost, acc)
    np.testing.assert_allclose(got, [want["error_reduction"], want["cost_reduction"]])
    # the report's single-model section
    from capfront.report import _oracle_section, _single_section

    assert _single_section(res)["best"]["model"] == name
    assert _oracle_section(res)["prehoc"]["gain_over_best_single"] == pytest.approx(
        cf.naive_oracle(res).value - acc
    )
    # routers are compared with the same model
    router = cf.evaluate_router(
        res, np.array(["c"] * 3), oracle="naive", n_resamples=20
    )
    assert router.best_single == name
