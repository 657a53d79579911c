"""The resampling engine: statistic objects and the registry, one Philox stream
for every resampling path (with_band, versus_best_single(ci=), debiased_oracle(ci=)),
the kernel registry entries and the automatic value-class path."""

from __future__ import annotations

import numpy as np
import pytest

import capfront as cf
from capfront._kernels import dispatch, kernels
from capfront.bootstrap import PerPrompt, bootstrap, replicate_counts
from capfront.resampling import (
    Codes,
    LinearStatistic,
    ResampledStatistic,
    WeightedStatistic,
    count_chunks,
    engine,
    known_statistics,
    register_statistic,
)
from capfront.resampling.oracle_statistics import oracle_statistic


def _res(n: int = 200, seed: int = 3) -> cf.EvalResults:
    return cf.simulate(n, 5, 6, seed=seed)


def _binary(n: int, seed: int = 0, L: int = 2) -> cf.EvalResults:
    rng = np.random.default_rng(seed)
    S = rng.random((n, L)) < rng.beta(2, 2, size=(n, 1))
    return cf.EvalResults.from_counts(S.astype(np.int64), np.ones((n, L), np.int64))


def _ragged(n: int, seed: int = 0, L: int = 3) -> cf.EvalResults:
    """Binary scores with G in {4, 8}: the naive oracle's values are fixed point,
    few distinct ones (multiples of 1/8)."""
    rng = np.random.default_rng(seed)
    G = np.where(rng.random((n, L)) < 0.5, 4, 8)
    p = rng.beta(2, 2, size=(n, 1))
    return cf.EvalResults.from_counts(rng.binomial(G, p), G)


# ----------------------------------------------------------------- one stream
def test_with_band_resamples_the_bootstrap_prompts():
    """with_band's replicate b re-weights the hull by the counts of replicate b of
    cf.bootstrap's stream (replicate_counts) for the same seed."""
    res = _res()
    fr = cf.frontier(res).with_band(n_resamples=30, seed=7, n_grid=25)
    counts = replicate_counts(res, 30, seed=7)
    grid = fr.band["cost"]
    reps = np.empty((30, grid.size))
    for b in range(30):
        v = fr.segments.vertices(counts[b].astype(np.float64))
        reps[b] = np.interp(grid, v[:, 0], v[:, 1], left=np.nan, right=v[-1, 1])
    lower, upper = np.nanquantile(reps, [0.025, 0.975], axis=0)
    np.testing.assert_array_equal(fr.band["lower"], lower)
    np.testing.assert_array_equal(fr.band["upper"], upper)


def test_same_seed_same_prompts_in_bootstrap_and_band():
    """A weighted statistic of cf.bootstrap sees the same draw counts as with_band
    and replicate_counts."""
    res = _res()
    seen = []

    def value(w: np.ndarray) -> float:
        seen.append(np.rint(w * res.n_prompts).astype(np.int64))
        return float(w @ res.p_hat[:, 0])

    stat = WeightedStatistic(value, value(np.full(res.n_prompts, 1 / res.n_prompts)))
    seen.clear()
    out = bootstrap(res, stat, n_resamples=12, seed=9, keep_replicates=True)
    counts = replicate_counts(res, 12, seed=9)
    np.testing.assert_array_equal(np.array(seen), counts)
    np.testing.assert_allclose(
        out.replicates, counts @ res.p_hat[:, 0] / res.n_prompts, atol=1e-15
    )
    chunks = np.concatenate([c for _, c in count_chunks(res.n_prompts, 9, 12)])
    np.testing.assert_array_equal(chunks, counts)


def test_versus_best_single_fixed_ci_uses_the_stream():
    res = _res(150)
    fr = cf.frontier(res, quality=res.p_hat.copy())
    t = fr.versus_best_single(ci=0.8, n_resamples=40, seed=2)
    q1, c1, ok = fr._single_arrays()
    W = replicate_counts(res, 40, seed=2).astype(np.float64)
    W /= W.sum(axis=1, keepdims=True)
    reps = fr._replicate_metrics(W, q1, c1, ok)
    want = np.quantile(reps[:, 0], [0.1, 0.9])
    got = t[["error_reduction_low", "error_reduction_high"]].to_numpy()[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=0)


def test_debiased_oracle_ci_is_the_engine_interval():
    res = _res(150)
    d = cf.debias.debiased_oracle(res, "jackknife", ci=0.9, n_resamples=200, seed=4)
    b = bootstrap(res, "jackknife", level=0.9, n_resamples=200, seed=4)
    assert d.ci == b.ci


# ----------------------------------------------------------------- statistic objects
def test_statistic_objects_and_per_prompt_agree():
    res = _res()
    V = res.p_hat[:, :2]
    pp = bootstrap(
        res,
        PerPrompt(V, lambda m: float(m[0] - m[1])),
        n_resamples=50,
        seed=1,
        keep_replicates=True,
    )
    # binary scores, G = 6: PerPrompt stores the values as codes of 1 / 6
    lin = LinearStatistic(
        [V[:, 0], V[:, 1]], lambda m: m[:, 0] - m[:, 1], denominator=6
    )
    out = bootstrap(res, lin, n_resamples=50, seed=1, keep_replicates=True)
    np.testing.assert_array_equal(out.replicates, pp.replicates)
    assert out.estimate == pytest.approx(V[:, 0].mean() - V[:, 1].mean(), abs=1e-12)


def test_codes_columns_are_exact():
    res = _res()
    z = np.rint(res.successes[:, 0]).astype(np.int8)
    stat = LinearStatistic([Codes(z, 1 / 6)], lambda m: m[:, 0], grad=np.ones(1))
    out = bootstrap(res, stat, n_resamples=20, seed=0, keep_replicates=True)
    assert out.estimate == pytest.approx(res.p_hat[:, 0].mean(), abs=1e-15)


def test_registry_builds_named_statistics():
    names = known_statistics()
    for name in ("naive_oracle", "best_single", "oracle_gain", "pgm", "naive", "aiq"):
        assert name in names
    assert {"frontier_error_reduction", "jackknife"} <= set(names)

    def build(results, name, two_level):  # noqa: ANN001, ANN202
        return ResampledStatistic(lambda r: float(r.p_hat.max()), 1.0)

    register_statistic("_test_max_p", build)
    register_statistic("_test_max_p", build)  # the same builder again: fine
    out = bootstrap(_res(), "_test_max_p", n_resamples=5)
    assert out.statistic == "_test_max_p" and out.estimate == 1.0
    with pytest.raises(ValueError, match="registered twice"):
        register_statistic("_test_max_p", lambda *a: None)
    with pytest.raises(ValueError, match="unknown statistic 'nope'.*pgm"):
        bootstrap(_res(), "nope", n_resamples=5)
    with pytest.raises(TypeError, match="non-empty string"):
        register_statistic("", build)


def test_builtin_statistics_compat_name():
    import sys

    import capfront.bootstrap as mod  # the function (package attribute) ...

    module = sys.modules["capfront.bootstrap"]  # ... and the module
    assert mod is bootstrap
    assert "pgm" in module.BUILTIN_STATISTICS
    assert "frontier_cost_reduction" in module.BUILTIN_STATISTICS


# ----------------------------------------------------------------- kernels
def test_bootstrap_kernels_in_the_registry():
    family = {n for n, k in kernels().items() if k.family == "bootstrap"}
    assert {"philox_words", "bootstrap_counts", "bootstrap_class_counts"} <= family
    assert len(family) == 8


@pytest.mark.parametrize("nb", [0, 1, 7])
def test_class_counts_identical_and_keep_strata(nb):
    offsets = np.array([0, 3, 5], dtype=np.int64)  # two strata, 3 and 2 classes
    size = np.array([10, 1, 400, 7, 9], dtype=np.int64)
    value = np.array([-3, 0, 5, 1, 2], dtype=np.int64)
    ref = dispatch("bootstrap_class_counts", "numpy")(offsets, size, 11, 2, nb)
    assert ref.shape == (nb, 5)
    if nb:
        np.testing.assert_array_equal(ref[:, :3].sum(axis=1), 411)
        np.testing.assert_array_equal(ref[:, 3:].sum(axis=1), 16)
    for b in cf.available_backends():
        got = dispatch("bootstrap_class_counts", b)(offsets, size, 11, 2, nb)
        np.testing.assert_array_equal(got, ref, err_msg=b)
        sums = dispatch("bootstrap_class_sums", b)(offsets, size, value, 11, 2, nb)
        np.testing.assert_array_equal(sums, ref @ value, err_msg=b)


# ----------------------------------------------------------------- class path
def test_class_path_chosen_for_few_value_classes():
    big = _ragged(200_000)
    strata = engine.Strata.single(big.n_prompts)
    coded = engine._code(oracle_statistic(big, "naive_oracle"), big.n_prompts, strata)
    assert coded.z8.shape[0] == 0  # unequal G: fixed point, not int8 codes
    tables = engine._class_tables(coded, strata.offsets)
    assert tables is not None and tables[0][-1] <= 9  # multiples of 1/8
    # the gain of two models with one generation: rows (max, s_1, s_2), 4 classes
    two = _binary(100_000)
    gain = engine._code(
        oracle_statistic(two, "oracle_gain"), 100_000, engine.Strata.single(100_000)
    )
    tables = engine._class_tables(gain, np.array([0, 100_000]))
    assert tables is not None and tables[2].shape == (4, 3)
    # 5,000 prompts: 3 binomials (O(1) each) are far cheaper than 5,000 prompts
    mid = engine._code(oracle_statistic(_binary(5000), "oracle_gain"), 5000, None)
    assert engine._class_tables(mid, np.array([0, 5000])) is not None
    # 500 prompts: the binomials cost about as much as the prompts
    small = engine._code(oracle_statistic(_binary(500), "oracle_gain"), 500, None)
    assert engine._class_tables(small, np.array([0, 500])) is None
    # many distinct rows: the prompt path
    res = cf.simulate(2000, 8, 20, seed=1)
    many = engine._code(oracle_statistic(res, "best_single"), 2000, None)
    assert engine._class_tables(many, np.array([0, 2000])) is None


def test_class_path_has_the_bootstrap_distribution():
    """The class path and the prompt path (replicate_counts) sample the same
    distribution: means and spreads agree; each backend gives the same replicates."""
    big = _binary(100_000, seed=4)
    B = 1000
    ref = None
    for b in cf.available_backends():
        out = bootstrap(
            big, "oracle_gain", n_resamples=B, seed=3, keep_replicates=True, backend=b
        )
        if ref is None:
            ref = out.replicates
        np.testing.assert_array_equal(out.replicates, ref, err_msg=b)
    stat = oracle_statistic(big, "oracle_gain")
    V = np.column_stack([c.z * c.scale for c in stat.columns])  # int8 codes
    w = (
        np.concatenate(
            [replicate_counts(big, 500, seed=5, start=s) for s in range(0, B, 500)]
        ).astype(np.float64)
        / big.n_prompts
    )
    prompt_path = stat.finalize(w @ V)
    assert ref.mean() == pytest.approx(prompt_path.mean(), abs=3 * ref.std() / 30)
    assert ref.std() == pytest.approx(prompt_path.std(), rel=0.1)


def test_poisson_kernel_identical_in_every_backend():
    """The keyed Poisson weights of capfront.dask: the same sums everywhere, keys up
    to 2^62 (both counter words used), mean weight 1."""
    rng = np.random.default_rng(0)
    keys = np.concatenate(
        [rng.integers(0, 2**62, 40), [0, 2**32 - 1, 2**32, 2**61, 2**62 - 1]]
    ).astype(np.int64)
    values = rng.integers(-20, 20, (keys.size, 2)).astype(np.int64)
    ref = dispatch("poisson_sums", "numpy")(keys, values, 2**40 + 3, 30)
    assert ref.shape == (30, 3)
    assert abs(ref[:, 2].mean() / keys.size - 1) < 0.1
    for b in cf.available_backends():
        got = dispatch("poisson_sums", b)(keys, values, 2**40 + 3, 30)
        np.testing.assert_array_equal(got, ref, err_msg=b)


@pytest.mark.parametrize("stratify", [None, "benchmark"])
def test_naive_oracle_classes_counted_without_the_column(stratify):
    """The naive oracle of compact counts takes its value classes from one pass over
    the uint8 table (``row_max_counts``); its column is never built, and the
    replicates, estimate and interval are those of the column path bit for bit."""
    rng = np.random.default_rng(8)
    n, L, G = 3000, 5, 7
    S = rng.binomial(G, rng.beta(0.7, 0.5, (n, 1)) * rng.uniform(0.3, 1, (1, L)))
    bench = np.array(["b", "a", "c"])[rng.integers(0, 3, n)]
    res = cf.EvalResults.from_counts(S.astype(np.uint8), G, benchmark=bench)
    assert res.stats.successes.dtype == np.uint8
    stat = oracle_statistic(res, "naive_oracle")
    assert stat.classes is not None
    columns_path = LinearStatistic(stat.columns, stat.finalize, grad=stat.grad)
    for b in cf.available_backends():
        kw = dict(n_resamples=300, seed=4, stratify=stratify, backend=b)
        lazy = oracle_statistic(res, "naive_oracle")
        fast = bootstrap(res, lazy, keep_replicates=True, **kw)
        assert lazy.columns._cols is None, b  # the column was never built
        slow = bootstrap(res, columns_path, keep_replicates=True, **kw)
        np.testing.assert_array_equal(fast.replicates, slow.replicates, err_msg=b)
        assert (fast.estimate, fast.ci) == (slow.estimate, slow.ci), b
        named = bootstrap(res, "naive_oracle", method="basic", **kw)
        assert named.ci == bootstrap(res, columns_path, method="basic", **kw).ci, b
    # BCa needs the influence values of the column: it is built then
    kw = dict(method="bca", n_resamples=300, seed=4)
    bca = bootstrap(res, "naive_oracle", **kw)
    assert bca.ci == bootstrap(res, columns_path, **kw).ci


def test_row_max_counts_refuses_bad_input():
    """The class counts of the per-prompt maximum: uint8 tables only, a maximum at
    or above ``n_values`` refused, one row per stratum."""
    S = np.array([[0, 3], [2, 1], [3, 3]], dtype=np.uint8)
    empty = np.empty(0, np.int64)
    for b in cf.available_backends():
        run = dispatch("row_max_counts", b)
        np.testing.assert_array_equal(
            run(S, empty, np.array([0, 3]), 4), [[0, 0, 1, 2]], err_msg=b
        )
        got = run(S, np.array([1, 0, 2]), np.array([0, 1, 3]), 5)
        np.testing.assert_array_equal(got, [[0, 0, 1, 0, 0], [0, 0, 0, 2, 0]])
        with pytest.raises(ValueError, match="n_values"):
            run(S, empty, np.array([0, 3]), 3)
        with pytest.raises(ValueError, match="uint8"):
            run(S.astype(np.int32), empty, np.array([0, 3]), 4)
        with pytest.raises(ValueError, match="order"):
            run(S, np.array([0, 5, 1]), np.array([0, 3]), 4)
