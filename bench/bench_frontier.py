"""Benchmarks of the exact frontier (hull merge) and of the 3-D Pareto sweep.

Groups:
- ``frontier-prehoc`` / ``frontier-posthoc``: ``capfront.frontier`` on each backend,
  and a NumPy lambda sweep (per prompt ``argmax_j q - lambda c``, mean over prompts,
  for ``N_LAMBDA`` lambdas: the approximate method the exact merge replaces);
- ``pareto3d``: ``capfront.pareto_3d`` on each backend, ``moocore.is_nondominated``
  and ``paretoset.paretoset`` (bench-only, skipped when not installed) on a
  front-heavy point set (a third of the points are non-dominated).

Default sizes run in seconds (CI, ``--benchmark-disable``). ``CAPFRONT_BENCH_LARGE=1``
runs N = 400,000 prompts, L = 33 models, G = 20 (posthoc k up to 20) and 1,000,000
points, with 5 timed rounds (after a warm-up) for the C++ and numba frontiers and the
prehoc NumPy path, 3 for ``pareto_3d``, 1 for the slow NumPy references. At that
size the posthoc NumPy lambda sweep is timed on 10 lambdas only (already slower than
the exact frontier), and paretoset on 20,000 points (``test_pareto_3d_small`` times
capfront on the same points).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import capfront
from capfront.frontier import frontier, frontier_options, hull_segments
from conftest import LARGE, alternative, kernel_backends, kernel_cases, run

N_PROMPTS = 400_000 if LARGE else 3_000
N_MODELS = 33 if LARGE else 8
N_DRAWS = 20 if LARGE else 6
N_POINTS = 1_000_000 if LARGE else 20_000
N_LAMBDA = 1000
PARETOSET_POINTS = 20_000 if LARGE else 1_000  # paretoset is O(M * front size)
# lambdas timed: all 1,000 prehoc; posthoc at the large size only 10, which already
# take longer than the exact frontier (the sweep's cost grows with the lambdas)
SWEEP_TIMED = {False: 1000 if LARGE else 100, True: 10 if LARGE else 100}
# the registry kernels a frontier runs on: per-cell hulls (prehoc) or the
# best-of-k options (posthoc), then the vertices at the prompt weights
FRONTIER_KERNELS = {
    "prehoc": ("hull_segments_cells", "frontier_vertices"),
    "posthoc": ("hull_segments_posthoc", "frontier_vertices"),
}


def _workload(n_prompts: int, n_models: int, n_draws: int, seed: int = 0):
    """Logit model with prompt difficulty and model-prompt specialisation; costs
    log-spaced from 0.1 to 10 per generation."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(1.0, 0.7, n_models)
    difficulty = rng.normal(0.0, 1.5, n_prompts)
    logit = (
        skill[None] - difficulty[:, None] + 0.8 * rng.normal(size=(n_prompts, n_models))
    )
    successes = rng.binomial(n_draws, 1.0 / (1.0 + np.exp(-logit)))
    return capfront.EvalResults.from_counts(
        successes, n_draws, cost=np.logspace(-1, 1, n_models)
    )


@pytest.fixture(scope="module")
def results():
    return _workload(N_PROMPTS, N_MODELS, N_DRAWS)


def _lambda_sweep(results, posthoc: bool, n_lambda: int) -> np.ndarray:
    """(n_lambda, 2) mean (cost, quality) of the policies argmax_j q - lambda c,
    in blocks of prompts (the (N, L*K) option arrays would need gigabytes)."""
    N = results.n_prompts
    lams = np.logspace(-4, 2, N_LAMBDA)[:n_lambda]
    total = np.zeros((n_lambda, 2))
    for start in range(0, N, 20_000):
        part = results.select(np.arange(start, min(N, start + 20_000)))
        c, q, _, _ = frontier_options(part, posthoc=posthoc)
        ok = np.isfinite(c) & np.isfinite(q)
        c = np.where(ok, c, 0.0)
        q = np.where(ok, q, -np.inf)
        rows = np.arange(c.shape[0])
        for i, lam in enumerate(lams):
            j = np.argmax(q - lam * c, axis=1)
            total[i] += c[rows, j].sum(), q[rows, j].sum()
    return total / N


def _run(benchmark, fn, *args, rounds: int = 1, **kwargs):
    """At the large size ``rounds`` timed calls, after a warm-up when
    ``rounds > 1`` (numba compiles on first use); calibrated rounds otherwise."""
    return run(
        benchmark,
        fn,
        *args,
        rounds=rounds if LARGE else None,
        warmup=rounds > 1,
        **kwargs,
    )


@pytest.mark.parametrize(
    "kind, backend",
    kernel_cases(FRONTIER_KERNELS),
)
def test_frontier(benchmark, results, kind, backend):
    posthoc = kind == "posthoc"
    benchmark.group = f"frontier-{kind}"
    # the posthoc NumPy path takes minutes at the large size: one round
    rounds = (1 if backend == "numpy" else 3) if posthoc else 5
    fr = _run(
        benchmark, frontier, results, posthoc=posthoc, backend=backend, rounds=rounds
    )
    assert fr.max_quality == pytest.approx(
        capfront.naive_oracle(results, kind).value, abs=1e-9
    )
    slope = np.diff(fr.vertices[:, 1]) / np.diff(fr.vertices[:, 0])
    assert (np.diff(slope) <= 1e-9).all()


@pytest.mark.parametrize("posthoc", [False, True], ids=["prehoc", "posthoc"])
def test_numpy_lambda_sweep(benchmark, results, posthoc):
    benchmark.group = f"frontier-{'posthoc' if posthoc else 'prehoc'}"
    alternative(benchmark, "NumPy lambda sweep")
    benchmark.extra_info["lambdas_timed"] = SWEEP_TIMED[posthoc]
    benchmark.extra_info["lambdas_target"] = N_LAMBDA
    pts = _run(benchmark, _lambda_sweep, results, posthoc, SWEEP_TIMED[posthoc])
    fr = frontier(results, posthoc=posthoc)
    assert (pts[:, 1] <= fr.quality_at(pts[:, 0]) + 1e-9).all()


@pytest.fixture(scope="module")
def options(results):
    """Dense option arrays: the posthoc options (k = 1..G generations of each
    model; at the large size the prehoc ones, (N, L): the posthoc would take GBs)."""
    c, q, _, _ = frontier_options(results, posthoc=not LARGE)
    return c, q, hull_segments(c, q, backend="numpy")


@pytest.mark.parametrize("backend", kernel_backends("hull_segments_dense"))
def test_hull_segments(benchmark, options, backend):
    """``hull_segments`` of given (N, M) option arrays, against the NumPy
    reference path: identical segments."""
    c, q, want = options
    benchmark.group = f"hull_segments (N, M) = {c.shape}"
    got = _run(benchmark, hull_segments, c, q, backend=backend, rounds=3)
    for field in ("base_option", "prompt", "option_from", "option_to", "dcost"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
    np.testing.assert_array_equal(got.dquality, want.dquality)


def _front_heavy(n: int, seed: int = 0) -> np.ndarray:
    """Quality close to a linear function of cost and latency: about a third of the
    points are non-dominated (quality up, cost and latency down)."""
    rng = np.random.default_rng(seed)
    pts = rng.random((n, 3))
    pts[:, 0] = pts[:, 1] + pts[:, 2] + 0.01 * rng.random(n)
    return pts


@pytest.fixture(scope="module")
def points():
    return _front_heavy(N_POINTS)


@pytest.fixture(scope="module")
def pareto_reference(points):
    return capfront.pareto_3d(points)


@pytest.mark.benchmark(group="pareto3d")
@pytest.mark.parametrize("backend", kernel_backends("pareto_minima_3d"))
def test_pareto_3d(benchmark, points, pareto_reference, backend):
    rounds = 1 if backend == "numpy" else 3
    got = _run(benchmark, capfront.pareto_3d, points, backend=backend, rounds=rounds)
    np.testing.assert_array_equal(got, pareto_reference)
    assert got.size > 0.1 * points.shape[0]  # front-heavy


@pytest.mark.benchmark(group="pareto3d")
def test_pareto_3d_moocore(benchmark, points, pareto_reference):
    got = _moocore_front(benchmark, points, rounds=1)
    np.testing.assert_array_equal(got, pareto_reference)


def _moocore_front(benchmark, pts: np.ndarray, rounds: int) -> np.ndarray:
    """moocore's non-dominated rows (quality up, cost and latency down), timed."""
    if importlib.util.find_spec("moocore") is None:
        pytest.skip("moocore not installed (bench-only: pip install moocore)")
    import moocore

    alternative(benchmark, "moocore")
    mask = _run(
        benchmark,
        moocore.is_nondominated,
        pts,
        maximise=[True, False, False],
        keep_weakly=True,
        rounds=rounds,
    )
    return np.flatnonzero(mask)


@pytest.mark.benchmark(group="pareto3d-paretoset-size")
def test_pareto_3d_paretoset(benchmark, points, pareto_reference):
    if importlib.util.find_spec("paretoset") is None:
        pytest.skip("paretoset not installed (bench-only: pip install paretoset)")
    from paretoset import paretoset

    n = PARETOSET_POINTS
    alternative(benchmark, "paretoset")
    benchmark.extra_info["points_timed"] = n
    sense = ["max", "min", "min"]
    # its numba kernels compile on first use: warm up (the default size skips numba)
    paretoset(points[:50], sense=sense, distinct=False, use_numba=LARGE)
    mask = _run(
        benchmark, paretoset, points[:n], sense=sense, distinct=False, use_numba=LARGE
    )
    want = pareto_reference if n == points.shape[0] else capfront.pareto_3d(points[:n])
    np.testing.assert_array_equal(np.flatnonzero(mask), want)


@pytest.mark.benchmark(group="pareto3d-paretoset-size")
@pytest.mark.parametrize(
    "backend", kernel_backends("pareto_minima_3d", backends=("cpp",))
)
def test_pareto_3d_small(benchmark, points, backend):
    """capfront at paretoset's size, for the ratio."""
    pts = points[:PARETOSET_POINTS]
    got = benchmark(capfront.pareto_3d, pts, backend=backend)
    assert got.size > 0.1 * pts.shape[0]


# ---------------------------------------------- 3-D Pareto: few maxima / all maxima
# Uniform points (about 100 of 1,000,000 non-dominated: the pivot pre-filter drops
# most rows in one pass) and points on a plane (every row non-dominated: the sweep
# alone). Each group times capfront's backends against moocore and paretoset on the
# same points (paretoset only where it is fast: few maxima).
N_UNIFORM = 1_000_000 if LARGE else 50_000
N_PLANE = 100_000 if LARGE else 5_000


def _pareto_sets() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    plane = rng.random((N_PLANE, 3))
    plane[:, 0] = plane[:, 1] + plane[:, 2]  # quality = cost + latency: all maxima
    return {"uniform": rng.random((N_UNIFORM, 3)), "plane": plane}


@pytest.fixture(scope="module")
def pareto_sets():
    sets = _pareto_sets()
    return {k: (v, capfront.pareto_3d(v, backend="numpy")) for k, v in sets.items()}


def _pareto_group(benchmark, pareto_sets, kind: str):
    pts, want = pareto_sets[kind]
    benchmark.group = f"pareto3d-{kind} M={len(pts)}"
    return pts, want


@pytest.mark.parametrize("kind", ["uniform", "plane"])
@pytest.mark.parametrize("backend", kernel_backends("pareto_minima_3d"))
def test_pareto_3d_vs_libraries(benchmark, pareto_sets, kind, backend):
    pts, want = _pareto_group(benchmark, pareto_sets, kind)
    if backend == "numpy" and LARGE and kind == "uniform":
        pytest.skip("the NumPy reference sweep has no pre-filter (minutes)")
    capfront.pareto_3d(pts[:100], backend=backend)  # compile numba
    got = _run(benchmark, capfront.pareto_3d, pts, backend=backend, rounds=5)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", ["uniform", "plane"])
@pytest.mark.parametrize("who", ["moocore", "paretoset"])
def test_pareto_3d_libraries(benchmark, pareto_sets, kind, who):
    pts, want = _pareto_group(benchmark, pareto_sets, kind)
    if who == "moocore":
        got = _moocore_front(benchmark, pts, rounds=5)
    else:
        if importlib.util.find_spec("paretoset") is None:
            pytest.skip("paretoset not installed (bench-only: pip install paretoset)")
        if kind == "plane":
            pytest.skip("paretoset is O(M x maxima): hours with every row a maximum")
        from paretoset import paretoset

        alternative(benchmark, "paretoset")
        opts = dict(sense=["max", "min", "min"], distinct=False, use_numba=True)
        paretoset(pts[:50], **opts)  # compile its numba kernels
        got = np.flatnonzero(_run(benchmark, paretoset, pts, **opts, rounds=5))
    np.testing.assert_array_equal(got, want)
