"""``naive_oracle`` (the fused per-prompt kernel) against the NumPy lines a user
would write for the same value and cost.

Groups ``naive_oracle-prehoc`` and ``naive_oracle-union``: capfront on each backend
and the NumPy alternative, on ``EvalResults.from_counts`` data (int32 counts, one
draw count for every cell, per-model costs), N = 1,000,000 prompts, L = 33 models,
G = 20 with ``CAPFRONT_BENCH_LARGE=1`` (20,000 x 8 by default). Every benchmark
checks the value and cost against capfront's, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

import capfront as cf
from conftest import LARGE, alternative, kernel_cases, run

N, L, G = (1_000_000, 33, 20) if LARGE else (20_000, 8, 20)
KERNEL = {"prehoc": "naive_oracle_rows", "union": "union_oracle_rows"}


@pytest.fixture(scope="module")
def results() -> cf.EvalResults:
    rng = np.random.default_rng(0)
    S = rng.binomial(G, rng.beta(0.7, 0.5, (N, L)))  # many ties at 0 and G
    return cf.EvalResults.from_counts(S, G, cost=np.logspace(-1, 1, L))


def _numpy_prehoc(S, n_draws, cost_sum):
    """Max p_hat per prompt, the cheapest of the tied, its mean cost."""
    p = S / n_draws
    j = np.argmin(np.where(p == p.max(1, keepdims=True), cost_sum / n_draws, np.inf), 1)
    rows = np.arange(len(j))
    return p[rows, j].mean(), (cost_sum[rows, j] / n_draws[rows, j]).mean()


def _numpy_union(S, n_draws, cost_sum):
    return (1 - np.prod(1 - S / n_draws, axis=1)).mean(), (cost_sum / n_draws).sum(
        1
    ).mean()


def _want(benchmark, results, kind: str):
    benchmark.group = f"naive_oracle-{kind} N={N} L={L} G={G}"
    return cf.naive_oracle(results, kind, backend="numpy")


@pytest.mark.parametrize("kind, backend", kernel_cases(KERNEL))
def test_naive_oracle(benchmark, results, kind, backend):
    want = _want(benchmark, results, kind)
    cf.naive_oracle(results, kind, backend=backend)  # compile numba
    out = run(benchmark, cf.naive_oracle, results, kind, backend=backend, rounds=5)
    assert (out.value, out.cost) == (want.value, want.cost)


@pytest.mark.parametrize("kind", list(KERNEL))
def test_numpy_lines(benchmark, results, kind):
    want = _want(benchmark, results, kind)
    alternative(benchmark, "NumPy lines")
    fn = _numpy_prehoc if kind == "prehoc" else _numpy_union
    args = (results.successes, results.n_draws, results.stats.cost_sum)
    value, cost = run(benchmark, fn, *args, rounds=5)
    assert (value, cost) == (want.value, want.cost)
