"""Benchmarks of the value-class path of the resampling engine against the best
alternative a user would write: ``rng.multinomial`` over the value classes.

When a linear statistic's per-prompt rows take few distinct values, a replicate
only needs the multinomial counts of the classes; the engine detects this and
draws them as conditional binomials (exact BTRD binomials, O(classes) expected per
replicate). Groups
``classes-<case>``:

- ``naive_oracle_ragged``: naive oracle with G in {10, 20} (21 value classes, fixed
  point columns; the engine's cost model sends it to the class path);
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
from capfront._kernels import dispatch
from capfront.bootstrap import bootstrap
from capfront.resampling.oracle_statistics import oracle_statistic
from capfront.resampling.statistics import Codes
from conftest import LARGE, alternative, kernel_cases, run

N = 400_000 if LARGE else 20_000
B = 10_000 if LARGE else 500
ROUNDS = 3 if LARGE else None
# each case with the registry kernel its replicates run on (the engine's choice)
CASES = {
    "naive_oracle_ragged": "bootstrap_class_counts",
    "oracle_gain_3": "bootstrap_sums",
    # one G: the classes are counted from the uint8 table (no column built)
    "naive_oracle": ("row_max_counts", "bootstrap_class_counts"),
}


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


@pytest.fixture(scope="module")
def cases():
    """Each case's data, built on first use: ``(results, statistic, class values,
    class sizes)``."""
    built: dict = {}

    def get(name: str):
        if name not in built:
            res = _results(name)
            stat = oracle_statistic(res, _statistic(name))
            V = np.column_stack(
                [c.z * c.scale if isinstance(c, Codes) else c for c in stat.columns]
            )
            values, sizes = np.unique(V, axis=0, return_counts=True)
            built[name] = res, stat, values, sizes
        return built[name]

    return get


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


@pytest.mark.parametrize(
    "name, backend",
    kernel_cases(CASES),
)
def test_capfront(benchmark, cases, name, backend):
    res, stat, values, sizes = cases(name)
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


@pytest.mark.parametrize("name", list(CASES))
def test_numpy_multinomial(benchmark, cases, name):
    _, stat, values, sizes = cases(name)
    benchmark.group = f"classes-{name}"
    alternative(benchmark, "rng.multinomial over classes")
    reps = run(benchmark, _multinomial, stat, values, sizes, rounds=ROUNDS)
    assert np.isfinite(reps).all() and reps.size == B


# ----------------------------------------- resampling kernels timed through dispatch
# Kernels no public-call group above reaches on its own: the prompt path's draw
# counts (``with_band``, the intervals of ``versus_best_single``), the raw Philox
# words (the two-level prompt path), the class sums and the keyed Poisson sums of
# ``capfront.dask.bootstrap``. Each is timed as ``dispatch(name, backend)(*args)``
# on one input against the NumPy reference, whose output it must equal.
N_KERNEL = 200_000 if LARGE else 5_000
B_KERNEL = 200 if LARGE else 20


def _direct_inputs(name: str) -> tuple:
    rng = np.random.default_rng(1)
    offsets = np.array([0, N_KERNEL // 3, N_KERNEL], dtype=np.int64)
    if name == "philox_words":
        return (7, 3, 1, 0, 4 * N_KERNEL)
    if name == "bootstrap_counts":
        return (offsets, 7, 0, B_KERNEL)
    if name == "bootstrap_class_sums":
        class_offsets = np.array([0, 21, 42], dtype=np.int64)  # 2 strata x 21 values
        size = rng.multinomial(N_KERNEL // 2, np.full(21, 1 / 21), size=2).ravel()
        value = rng.integers(0, 21, 42).astype(np.int64)
        return (class_offsets, size.astype(np.int64), value, 7, 0, B_KERNEL)
    keys = rng.choice(2**40, N_KERNEL, replace=False).astype(np.int64)
    values = rng.integers(0, 21, (N_KERNEL, 3)).astype(np.int64)
    return (keys, values, 7, B_KERNEL)


DIRECT = ("philox_words", "bootstrap_counts", "bootstrap_class_sums", "poisson_sums")


@pytest.fixture(scope="module")
def direct():
    """Each direct kernel's input and NumPy reference output, built on first use."""
    built: dict = {}

    def get(name: str):
        if name not in built:
            args = _direct_inputs(name)
            built[name] = args, dispatch(name, "numpy")(*args)
        return built[name]

    return get


@pytest.mark.parametrize("name, backend", kernel_cases({k: k for k in DIRECT}))
def test_kernel(benchmark, direct, name, backend):
    args, want = direct(name)
    benchmark.group = f"kernel-{name}"
    fn = dispatch(name, backend)
    got = run(benchmark, fn, *args, rounds=ROUNDS, warmup=True)
    np.testing.assert_array_equal(got, want)
