"""Benchmarks of the value-class path of the resampling engine against the best
alternative a user would write: ``rng.multinomial`` over the value classes.

When a linear statistic's per-prompt rows take few distinct values, a replicate
only needs the multinomial counts of the classes; the engine detects this and
draws them as conditional binomials (O(classes sqrt(N)) per replicate). Groups
``classes-<case>``:

- ``naive_oracle_ragged``: naive oracle with G in {10, 20} (21 value classes, fixed
  point columns: the prompt path before the automatic choice);
- ``oracle_gain_3``: oracle gain of 3 models with G = 4 (rows ``(max, S_1, S_2,
  S_3)``, at most 125 classes);
- ``naive_oracle``: naive oracle with one G = 20 (21 int8 classes).

capfront's time is end to end (``cf.bootstrap``: columns, class detection,
replicates, interval). The alternative is given the classes (``np.unique`` is not
timed) and draws ``rng.multinomial(N, n_c / N, size=B) @ values_c`` in chunks,
then the same finalize. Both are checked to agree: same estimate, replicate mean
and spread within Monte-Carlo error. ``CAPFRONT_BENCH_LARGE=1``: N = 400,000,
B = 10,000 (the issue's size; the NumPy reference path is skipped there, it draws
the classes in Python); default sizes run in seconds.

Reproduce: ``CAPFRONT_BENCH_LARGE=1 PYTHONPATH=python python -m pytest -p
no:cacheprovider bench/bench_resampling.py --benchmark-enable``.
"""

from __future__ import annotations

import numpy as np
import pytest

import capfront
from capfront.bootstrap import bootstrap
from capfront.resampling.oracle_statistics import oracle_statistic
from capfront.resampling.statistics import Codes
from conftest import LARGE, alternative, run

N = 400_000 if LARGE else 20_000
B = 10_000 if LARGE else 500
ROUNDS = 3 if LARGE else None
CASES = ["naive_oracle_ragged", "oracle_gain_3", "naive_oracle"]


def _results(case: str) -> capfront.EvalResults:
    rng = np.random.default_rng(0)
    if case == "naive_oracle_ragged":
        G = np.where(rng.random((N, 8)) < 0.5, 10, 20)
        p = rng.beta(2, 3, size=(N, 1)) * rng.uniform(0.6, 1.0, size=(1, 8))
        return capfront.EvalResults.from_counts(rng.binomial(G, p), G)
    if case == "oracle_gain_3":
        G = np.full((N, 3), 4)
        p = rng.beta(2, 2, size=(N, 1)) * np.array([[1.0, 0.9, 0.8]])
        return capfront.EvalResults.from_counts(rng.binomial(G, p), G)
    return capfront.simulate(N, 8, 20, seed=0, as_counts=True)


def _statistic(case: str) -> str:
    return "oracle_gain" if case == "oracle_gain_3" else "naive_oracle"


@pytest.fixture(scope="module", params=CASES)
def case(request):
    res = _results(request.param)
    stat = oracle_statistic(res, _statistic(request.param))
    V = np.column_stack(
        [c.z * c.scale if isinstance(c, Codes) else c for c in stat.columns]
    )
    values, sizes = np.unique(V, axis=0, return_counts=True)
    return request.param, res, stat, values, sizes


def _multinomial(stat, values, sizes, seed: int = 0) -> np.ndarray:
    """The alternative: class counts by numpy's multinomial, chunked."""
    rng = np.random.default_rng(seed)
    p = sizes / sizes.sum()
    out = np.empty(B)
    chunk = 1000
    for b0 in range(0, B, chunk):
        nb = min(chunk, B - b0)
        M = rng.multinomial(int(sizes.sum()), p, size=nb)
        out[b0 : b0 + nb] = stat.finalize((M @ values) / sizes.sum())
    return out


def _agree(ours: np.ndarray, theirs: np.ndarray) -> None:
    sd = theirs.std()
    assert abs(ours.mean() - theirs.mean()) < 5 * sd / np.sqrt(B) * np.sqrt(2)
    assert ours.std() == pytest.approx(sd, rel=0.15)


@pytest.mark.parametrize("backend", ["cpp", "numba", "numpy"])
def test_capfront(benchmark, case, backend):
    name, res, stat, values, sizes = case
    if backend not in capfront.available_backends():
        pytest.skip(f"{backend} not available")
    if LARGE and backend == "numpy":
        pytest.skip("the NumPy reference draws the classes in Python: minutes")
    benchmark.group = f"classes-{name}"
    out = run(
        benchmark,
        bootstrap,
        res,
        _statistic(name),
        n_resamples=B,
        backend=backend,
        keep_replicates=True,
        rounds=ROUNDS,
        warmup=True,
    )
    assert out.estimate == pytest.approx(
        float(stat.finalize((sizes @ values)[None, :] / sizes.sum())[0]), abs=1e-12
    )
    _agree(out.replicates, _multinomial(stat, values, sizes))


def test_numpy_multinomial(benchmark, case):
    name, _, stat, values, sizes = case
    benchmark.group = f"classes-{name}"
    alternative(benchmark, "rng.multinomial over classes")
    reps = run(benchmark, _multinomial, stat, values, sizes, rounds=ROUNDS)
    assert np.isfinite(reps).all() and reps.size == B
