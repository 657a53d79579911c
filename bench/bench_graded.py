"""Graded-score Monte Carlo (capfront.debias.graded): the cross-fit oracle and the
subsample curve over ``n_splits`` seeded orderings of each cell's draws, C++ against
Numba and the NumPy reference path, one group per kernel.

Default size N = 300 prompts, L = 5 models, G = 6 graded draws, 8 splits (CI runs it
with ``--benchmark-disable`` as a correctness check). ``CAPFRONT_BENCH_LARGE=1``:
N = 10,000, L = 20, G = 10, 32 splits. Every benchmark asserts that its result
equals the NumPy reference (bit for bit up to 1e-12) and that the oracle is
bracketed: cross-fit <= true oracle <= naive oracle, up to noise.
"""

from __future__ import annotations

import numpy as np
import pytest

import capfront as cf
from capfront.debias import graded
from conftest import LARGE, kernel_backends, run

N, L, G, SPLITS = (10_000, 20, 10, 32) if LARGE else (300, 5, 6, 8)
SIZES = np.arange(max(1, G // 2), G)  # up to the fewest draws of a cell, G - 1


@pytest.fixture(scope="module")
def data():
    """Graded scores ~ Beta with cell mean mu = sigmoid(skill_l - difficulty_n)."""
    rng = np.random.default_rng(11)
    mu = 1.0 / (1.0 + np.exp(-(rng.normal(1, 0.7, L) - rng.normal(0, 1.5, (N, 1)))))
    conc = 4.0
    scores = rng.beta(mu[..., None] * conc, (1 - mu[..., None]) * conc, (N, L, G))
    valid = np.ones(scores.shape, dtype=bool)
    valid[::7, ::3, G - 1] = False  # some ragged cells
    truth = float(mu.max(axis=1).mean())
    kw = {"n_splits": SPLITS, "seed": 1}
    ref = {
        "crossfit": graded.graded_crossfit_rows(scores, valid, backend="numpy", **kw),
        "curve": graded.graded_curve_rows(scores, valid, SIZES, backend="numpy", **kw),
    }
    for b in cf.available_backends():  # compile Numba outside the timings
        graded.graded_crossfit_rows(scores[:2], valid[:2], n_splits=2, backend=b)
        graded.graded_curve_rows(scores[:2], valid[:2], [1], n_splits=2, backend=b)
    naive = float(
        (np.where(valid, scores, 0).sum(axis=2) / valid.sum(axis=2)).max(axis=1).mean()
    )
    return scores, valid, truth, naive, ref


@pytest.mark.parametrize("backend", kernel_backends("graded_crossfit_rows"))
def test_graded_crossfit(benchmark, data, backend):
    scores, valid, truth, naive, ref = data
    benchmark.group = f"graded crossfit N={N} L={L} G={G} n_splits={SPLITS}"
    rows = run(
        benchmark,
        graded.graded_crossfit_rows,
        scores,
        valid,
        n_splits=SPLITS,
        seed=1,
        backend=backend,
        rounds=1 if LARGE and backend == "numpy" else 3,
    )
    np.testing.assert_allclose(rows, ref["crossfit"], rtol=0, atol=1e-12)
    assert rows.mean() <= truth + 0.02 and truth <= naive + 0.02


@pytest.mark.parametrize("backend", kernel_backends("graded_curve_rows"))
def test_graded_curve(benchmark, data, backend):
    scores, valid, truth, naive, ref = data
    benchmark.group = (
        f"graded curve N={N} L={L} G={G} n_splits={SPLITS} sizes={len(SIZES)}"
    )
    rows = run(
        benchmark,
        graded.graded_curve_rows,
        scores,
        valid,
        SIZES,
        n_splits=SPLITS,
        seed=1,
        backend=backend,
        rounds=1 if LARGE and backend == "numpy" else 3,
    )
    np.testing.assert_allclose(rows, ref["curve"], rtol=0, atol=1e-12)
    curve = rows.mean(axis=0)
    assert curve[0] > curve[-1] >= naive - 0.02  # the max of fewer draws is larger
    assert curve[-1] >= truth - 0.02
