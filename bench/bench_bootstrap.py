"""Benchmarks of the streaming bootstrap (``capfront.bootstrap``).

Groups ``<statistic>-<method>`` for ``naive_oracle`` and ``oracle_gain`` with the
percentile and BCa intervals: the ``cpp`` path, the ``numba`` and ``numpy`` paths
and ``scipy.stats.bootstrap`` on the same statistic.

Default sizes run in seconds (CI, ``--benchmark-disable``). ``CAPFRONT_BENCH_LARGE=1``
runs N = 400,000 prompts, L = 33 models, G = 20, B = 10,000 replicates. At that
size only ``cpp`` runs all B replicates; numba, numpy and scipy are timed on fewer
replicates (``B_TIMED``; their cost is linear in B) and reported scaled to B in
bench/README.md. scipy cannot hold B x N resampled indices (32 GB) nor run its
O(N^2) jackknife at N = 400,000: its percentile path is timed at full N with
batches of one replicate, its BCa path at ``N_SCIPY_BCA`` prompts, both scaled
linearly (a lower bound for BCa, whose jackknife is quadratic in N).
``test_peak_memory`` measures the extra resident memory of a cpp run.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from scipy import stats

import capfront
from capfront.bootstrap import bootstrap
from conftest import LARGE, alternative, kernel_backends, kernel_cases, run, timed

N_PROMPTS = 400_000 if LARGE else 3_000
N_MODELS = 33 if LARGE else 8
N_DRAWS = 20
B = 10_000 if LARGE else 200
B_TIMED = (
    {"numba": 200, "numpy": 10, "scipy": 4}
    if LARGE
    else {"numba": B, "numpy": 20, "scipy": 20}
)
N_SCIPY_BCA = 4_000 if LARGE else 1_000
ROUNDS = 1 if LARGE else None  # one round of the size
STATISTICS = ["naive_oracle", "oracle_gain"]
METHODS = ["percentile", "bca"]
# the registry kernel each statistic's replicates run on: the naive oracle's
# per-prompt maxima take few values (multinomial class counts), the gain's rows many
# (prompt sums)
KERNEL = {"naive_oracle": "bootstrap_class_counts", "oracle_gain": "bootstrap_sums"}


@pytest.fixture(scope="module")
def results() -> capfront.EvalResults:
    return capfront.simulate(
        N_PROMPTS, N_MODELS, N_DRAWS, n_topics=4, seed=0, as_counts=True
    )


@pytest.fixture(scope="module")
def reference(results):
    """numpy replicates of the first B_TIMED["numpy"] resamples, per statistic."""
    return {
        s: bootstrap(
            results,
            s,
            n_resamples=B_TIMED["numpy"],
            backend="numpy",
            keep_replicates=True,
        ).replicates
        for s in STATISTICS
    }


def _p_hat(results) -> np.ndarray:
    return results.successes / results.n_draws


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "statistic, backend",
    kernel_cases(KERNEL),
)
def test_capfront(benchmark, results, reference, statistic, method, backend):
    benchmark.group = f"{statistic}-{method}"
    n = B if backend == "cpp" else B_TIMED[backend]
    benchmark.extra_info.update(n_resamples=n, scale_to=B)
    out = run(
        benchmark,
        bootstrap,
        results,
        statistic,
        n_resamples=n,
        method=method,
        backend=backend,
        keep_replicates=True,
        rounds=ROUNDS,
    )
    ref = reference[statistic]
    k = min(ref.size, n)
    np.testing.assert_array_equal(out.replicates[:k], ref[:k])
    naive = capfront.naive_oracle(results).value
    best = capfront.best_single(results)[1]
    want = naive if statistic == "naive_oracle" else naive - best
    # ours sums integer codes exactly; the baselines' float means differ by ~1e-12
    assert out.estimate == pytest.approx(want, abs=1e-9)
    assert out.ci[0] < out.ci[1]


@pytest.mark.parametrize("backend", kernel_backends("bootstrap_two_level_sums"))
def test_two_level(benchmark, results, backend):
    """``two_level=True``: each drawn prompt's cells redrawn ``S* ~ Bin(G, p_hat)``
    (no library does this; against the NumPy reference path, replicate for
    replicate)."""
    benchmark.group = "naive_oracle-two_level"
    n = B if backend == "cpp" else B_TIMED[backend]
    benchmark.extra_info.update(n_resamples=n, scale_to=B)
    kw = dict(n_resamples=n, two_level=True, keep_replicates=True)
    out = run(
        benchmark,
        bootstrap,
        results,
        "naive_oracle",
        backend=backend,
        **kw,
        rounds=ROUNDS,
    )
    k = min(n, B_TIMED["numpy"])
    ref = bootstrap(
        results, "naive_oracle", **{**kw, "n_resamples": k}, backend="numpy"
    ).replicates
    np.testing.assert_array_equal(out.replicates[:k], ref)
    assert out.estimate == pytest.approx(capfront.naive_oracle(results).value, abs=1e-9)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("statistic", STATISTICS)
def test_scipy(benchmark, results, statistic, method):
    benchmark.group = f"{statistic}-{method}"
    p = _p_hat(results)
    if method == "bca":
        p = p[:N_SCIPY_BCA]
    n_res = B_TIMED["scipy"]
    # batch=: as many replicates at once as fit in ~200 MB of resampled data (the
    # per-prompt maxima for naive_oracle; oracle_gain resamples (N, L) rows, so one
    # replicate is already ~100 MB at the large size)
    per_replicate = p.shape[0] * (1 if statistic == "naive_oracle" else p.shape[1]) * 8
    batch = max(1, min(1000, (200 << 20) // per_replicate))
    if statistic == "naive_oracle":
        n_res = max(n_res, min(B, 2 * batch))
    benchmark.extra_info.update(
        n_resamples=n_res,
        n_prompts=p.shape[0],
        scale_to=B,
        scale_prompts_to=N_PROMPTS,
        batch=batch,
    )
    if statistic == "naive_oracle":
        data = (p.max(axis=1),)

        def stat(x, axis=-1):
            return x.mean(axis=axis)
    else:
        data = (np.arange(p.shape[0]),)

        def stat(idx, axis=-1):
            sub = p[idx]
            return sub.max(axis=-1).mean(axis=-1) - sub.mean(axis=-2).max(axis=-1)

    alternative(benchmark, f"scipy.stats.bootstrap (batch={batch})")
    res = run(
        benchmark,
        stats.bootstrap,
        data,
        stat,
        n_resamples=n_res,
        method="BCa" if method == "bca" else "percentile",
        batch=batch,
        vectorized=True,
        rng=np.random.default_rng(0),
        rounds=ROUNDS,
    )
    assert res.confidence_interval.low <= res.confidence_interval.high


def test_peak_memory(results):
    """Extra memory of a cpp run: VmHWM after resetting it (Linux clear_refs),
    and tracemalloc's peak of NumPy allocations. Must stay under 100 MB."""
    if "cpp" not in capfront.available_backends():
        pytest.skip("cpp not available")

    def status(key: str) -> float:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) / 1024.0
        return float("nan")

    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pytest.skip("cannot reset VmHWM here")
    base = status("VmRSS")
    tracemalloc.start()

    def both() -> None:
        for statistic in STATISTICS:
            bootstrap(
                results,
                statistic,
                n_resamples=min(B, 2_000),
                method="bca",
                backend="cpp",
            )

    _, elapsed = timed(both)
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    extra = status("VmHWM") - base
    print(
        f"\nextra peak RSS {extra:.1f} MB, numpy peak {traced / 2**20:.1f} MB, "
        f"{elapsed:.1f} s"
    )
    assert extra < 100 and traced / 2**20 < 100
