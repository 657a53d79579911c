"""Benchmarks of the simulation studies (capfront.studies).

The studies' inner loop is the exact expected naive oracle of one workload at every
``G`` of the grid (``expected_max_binomial``); it is timed on every backend of the
registry entry in one group. The whole default studies run only with
``CAPFRONT_BENCH_LARGE=1`` (or ``-m large``).
"""

from __future__ import annotations

import numpy as np
import pytest

import capfront
from capfront.studies import bias_decay, topic_entropy
from conftest import LARGE, kernel_backends

DRAWS = (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200)


def _bias_curve(p: np.ndarray, draws, backend: str) -> np.ndarray:
    o_true = p.max(axis=1).mean()
    return np.array(
        [
            capfront.expected_max_binomial(p, g, backend=backend).mean() - o_true
            for g in draws
        ]
    )


@pytest.fixture(scope="module")
def workload() -> np.ndarray:
    n_prompts = 1000 if LARGE else 200
    return capfront.simulate(n_prompts, 8, 1, n_topics=4, seed=0).truth_p


@pytest.fixture(scope="module")
def reference(workload) -> np.ndarray:
    return _bias_curve(workload, DRAWS, "numpy")


@pytest.mark.benchmark(group="study-bias-curve")
@pytest.mark.parametrize("backend", kernel_backends("expected_max_binomial_rows"))
def test_bias_curve(benchmark, workload, reference, backend):
    capfront.expected_max_binomial(workload[:2], 2, backend=backend)  # compile numba
    curve = benchmark(_bias_curve, workload, DRAWS, backend)
    np.testing.assert_allclose(curve, reference, rtol=1e-9, atol=1e-12)
    assert (np.diff(curve) < 0).all()


@pytest.mark.benchmark(group="study-default")
def test_bias_decay_study(benchmark):
    kwargs = (
        {}
        if LARGE
        else dict(
            n_models=4,
            draws=(1, 2, 5, 10, 20),
            n_reps=3,
            n_prompts=100,
            n_boot=100,
            correlation=0.5,
        )
    )
    res = benchmark.pedantic(bias_decay, kwargs=kwargs, rounds=1, iterations=1)
    assert (res.table["bias"] > 0).all()


@pytest.mark.benchmark(group="study-default")
def test_topic_entropy_study(benchmark):
    kwargs = (
        {}
        if LARGE
        else dict(
            n_topics=3,
            n_models=4,
            alphas=(0.05, 1.0, 50.0),
            n_reps=3,
            n_prompts=200,
            n_boot=100,
        )
    )
    res = benchmark.pedantic(topic_entropy, kwargs=kwargs, rounds=1, iterations=1)
    assert (res.table["gain_true"] >= -1e-12).all()
