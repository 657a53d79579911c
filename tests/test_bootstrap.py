"""capfront.bootstrap: identical replicates everywhere, agreement with scipy, strata,
two-level, statistics and bad input."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest
from scipy import stats

import capfront
from capfront import bootstrap as bootstrap_fn
from capfront.bootstrap import BootstrapResult, bootstrap, replicate_counts


def _small(seed: int = 1, n: int = 300, **kw) -> capfront.EvalResults:
    return capfront.simulate(n, 6, 8, n_topics=3, seed=seed, **kw)


def _with_benchmarks(res: capfront.EvalResults) -> capfront.EvalResults:
    n = res.n_prompts
    bench = np.array(["math", "code", "chat"])[np.arange(n) * 7 % 3]
    return capfront.EvalResults.from_counts(
        np.rint(res.successes).astype(np.int64),
        res.n_draws,
        cost=res.mean_cost,
        benchmark=bench,
        topic=res.topic,
    )


def _graded(seed: int = 2) -> capfront.EvalResults:
    rng = np.random.default_rng(seed)
    scores = rng.beta(2, 3, size=(150, 4, 5))
    mask = rng.random((150, 4, 5)) < 0.8
    mask[:, :, 0] = True
    return capfront.EvalResults.from_arrays(scores, mask=mask, cost=np.ones(4))


# --------------------------------------------------------------------------- identity
@pytest.mark.parametrize(
    ("statistic", "kwargs"),
    [
        ("naive_oracle", {}),
        ("oracle_gain", {}),
        ("best_single", {"stratify": "benchmark"}),
        ("oracle_gain", {"two_level": True}),
        ("naive_oracle", {"two_level": True, "stratify": "topic"}),
    ],
)
def test_replicates_identical_across_backends_and_threads(statistic, kwargs, threads):
    res = _with_benchmarks(_small())
    ref = None
    for name in capfront.available_backends():
        for n_threads in (1, 2):
            threads(n_threads)
            out = bootstrap(
                res,
                statistic,
                n_resamples=150,
                seed=11,
                keep_replicates=True,
                backend=name,
                **kwargs,
            )
            if ref is None:
                ref = out.replicates
            np.testing.assert_array_equal(
                out.replicates, ref, err_msg=f"{name}, {n_threads} threads"
            )


def test_fixed_point_columns_identical(threads):
    """Graded, ragged data: fixed-point columns, still identical everywhere."""
    res = _graded()
    ref = None
    for name in capfront.available_backends():
        for n_threads in (1, 2):
            threads(n_threads)
            out = bootstrap(
                res,
                "oracle_gain",
                n_resamples=100,
                seed=3,
                keep_replicates=True,
                backend=name,
            )
            ref = out.replicates if ref is None else ref
            np.testing.assert_array_equal(out.replicates, ref)
    p = np.where(res.observed, res.p_hat, np.nan)
    assert out.estimate == pytest.approx(
        np.nanmax(p, axis=1).mean() - np.nanmax(np.nanmean(p, axis=0)), abs=1e-12
    )


def test_counts_identical_and_sum_to_n(backend):
    ref = replicate_counts(500, 20, seed=9, backend="numpy")
    got = replicate_counts(500, 20, seed=9, backend=backend)
    np.testing.assert_array_equal(got, ref)
    assert got.dtype == np.uint8
    assert (got.sum(axis=1) == 500).all()
    # a later block of replicates is the same as slicing a longer run
    np.testing.assert_array_equal(
        replicate_counts(500, 5, seed=9, start=7, backend=backend), ref[7:12]
    )


# --------------------------------------------------------------------------- estimates
def test_estimates_match_baselines():
    res = _small()
    naive = capfront.naive_oracle(res).value
    best = capfront.best_single(res)[1]

    def est(name: str) -> float:
        return bootstrap(res, name, n_resamples=50).estimate

    assert est("naive_oracle") == pytest.approx(naive, abs=1e-14)
    assert est("best_single") == pytest.approx(best, abs=1e-14)
    assert est("oracle_gain") == pytest.approx(naive - best, abs=1e-14)
    assert est("naive") == pytest.approx(naive, abs=1e-14)


def test_incomplete_data_best_single():
    res = _small(n=200)
    G = res.n_draws.copy()
    G[::3, 0] = 0
    S = np.where(G > 0, np.rint(res.successes), 0).astype(np.int64)
    inc = capfront.EvalResults.from_counts(S, G)
    out = bootstrap(inc, "oracle_gain", n_resamples=64, keep_replicates=True)
    naive = capfront.naive_oracle(inc).value
    best = capfront.best_single(inc)[1]
    assert out.estimate == pytest.approx(naive - best, abs=1e-12)
    # a replicate equals the statistic of the resampled data: with incomplete
    # coverage, of the prompts every model ran (the rule of capfront.baselines)
    keep = np.flatnonzero(inc.common_prompts)
    assert 0 < keep.size < inc.n_prompts
    counts = replicate_counts(keep.size, 1, seed=0)[0]
    idx = keep[np.repeat(np.arange(keep.size), counts)]
    sub = capfront.EvalResults.from_counts(S[idx], G[idx])
    want = capfront.naive_oracle(sub).value - capfront.best_single(sub)[1]
    assert out.replicates[0] == pytest.approx(want, abs=1e-12)


def test_class_counts_path_has_the_bootstrap_distribution():
    """naive_oracle (one code column) draws class counts, not prompt counts: same
    distribution as the prompt-count path (oracle via a two-column statistic)."""
    res = _small(seed=3, n=400)
    B = 3000
    a = bootstrap(res, "naive_oracle", n_resamples=B, keep_replicates=True, seed=1)
    codes = np.rint(np.nanmax(res.p_hat, axis=1) * 8).astype(int)
    counts = replicate_counts(res, B, seed=1)
    b = counts @ codes / (8 * res.n_prompts)
    assert stats.ks_2samp(a.replicates, b).pvalue > 1e-3
    assert a.se == pytest.approx(b.std(ddof=1), rel=0.08)
    # the class draws keep every stratum's size: constant strata give constant sums
    one = capfront.EvalResults.from_counts(
        np.full((30, 2), 4), 8, benchmark=["a"] * 10 + ["b"] * 20
    )
    out = bootstrap(
        one, "naive_oracle", n_resamples=20, stratify="benchmark", keep_replicates=True
    )
    assert (out.replicates == 0.5).all()


@pytest.mark.parametrize(
    ("n", "a", "b"),
    [
        (0, 1, 2),
        (5, 0, 3),
        (7, 3, 3),
        (1, 1, 2),
        (40, 1, 1000),
        (40, 999, 1000),
        (1000, 300, 700),
        (400_000, 20_000, 400_000),
        (12, 5, 6),
    ],
)
def test_binomial_sampler(n, a, b):
    from capfront._kernels.bootstrap import binomial_ratio_nb
    from capfront._kernels.bootstrap import binomial_ratio_np as _binomial_ratio_np
    from capfront._kernels.bootstrap import uniform53 as _uniform53

    rng = np.random.default_rng(n + a)
    us = [_uniform53(int(x), int(y)) for x, y in rng.integers(0, 2**32, (400, 2))]
    w = np.empty(n + 2)
    got = np.array([_binomial_ratio_np(n, a, b, u) for u in us])
    nb = np.array([binomial_ratio_nb(n, a, b, u, w) for u in us])
    np.testing.assert_array_equal(got, nb)
    assert ((got >= 0) & (got <= n)).all()
    # inversion: got is the quantile of U (up to the dropped 1e-17 tails)
    if 0 < a < b and n > 0:
        F = stats.binom.cdf(got, n, a / b)
        F_below = stats.binom.cdf(got - 1, n, a / b)
        assert ((F_below <= np.array(us) + 1e-9) & (np.array(us) <= F + 1e-9)).all()


def test_replicate_is_statistic_of_resample():
    res = _small(n=120)
    out = bootstrap(res, "oracle_gain", n_resamples=5, seed=4, keep_replicates=True)
    counts = replicate_counts(res, 5, seed=4)
    for b in range(5):
        idx = np.repeat(np.arange(res.n_prompts), counts[b])
        sub = capfront.EvalResults.from_counts(
            np.rint(res.successes[idx]), res.n_draws[idx]
        )
        want = capfront.naive_oracle(sub).value - capfront.best_single(sub)[1]
        assert out.replicates[b] == pytest.approx(want, abs=1e-12)


def test_callable_slow_path_matches_builtin():
    res = _small(n=100)

    def gain(r: capfront.EvalResults) -> float:
        return capfront.naive_oracle(r).value - capfront.best_single(r)[1]

    fast = bootstrap(res, "oracle_gain", n_resamples=40, keep_replicates=True)
    slow = bootstrap(res, gain, n_resamples=40, keep_replicates=True)
    np.testing.assert_allclose(slow.replicates, fast.replicates, rtol=0, atol=1e-12)
    assert slow.statistic == "gain"

    def oracle(r: capfront.EvalResults) -> float:
        return capfront.naive_oracle(r).value

    slow2 = bootstrap(res, oracle, n_resamples=40, keep_replicates=True, two_level=True)
    fast2 = bootstrap(
        res, "naive_oracle", n_resamples=40, keep_replicates=True, two_level=True
    )
    np.testing.assert_allclose(slow2.replicates, fast2.replicates, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- scipy
def test_percentile_and_bca_agree_with_scipy_mean():
    res = _small(seed=5, n=400)
    v = np.nanmax(res.p_hat, axis=1)
    B = 4000
    for method in ("percentile", "bca", "basic"):
        ours = bootstrap(res, "naive_oracle", n_resamples=B, method=method, seed=1)
        ref = stats.bootstrap(
            (v,),
            np.mean,
            n_resamples=B,
            method=method,
            rng=np.random.default_rng(0),
            vectorized=True,
        )
        se = ref.standard_error
        assert ours.se == pytest.approx(se, rel=0.08)
        assert ours.ci[0] == pytest.approx(ref.confidence_interval.low, abs=0.25 * se)
        assert ours.ci[1] == pytest.approx(ref.confidence_interval.high, abs=0.25 * se)


def test_bca_nonlinear_statistic_agrees_with_scipy():
    """oracle_gain (a max of means): our influence-function acceleration against
    scipy's full jackknife, BCa endpoints within Monte Carlo error."""
    res = _small(seed=6, n=250)
    p = res.p_hat
    B = 3000

    def gain(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        sub = p[idx.astype(np.int64)]  # (..., n, L)
        return sub.max(axis=-1).mean(axis=-1) - sub.mean(axis=-2).max(axis=-1)

    ours = bootstrap(res, "oracle_gain", n_resamples=B, method="bca", seed=2)
    ref = stats.bootstrap(
        (np.arange(res.n_prompts),),
        gain,
        n_resamples=B,
        method="BCa",
        rng=np.random.default_rng(1),
        vectorized=True,
    )
    se = ref.standard_error
    assert ours.ci[0] == pytest.approx(ref.confidence_interval.low, abs=0.3 * se)
    assert ours.ci[1] == pytest.approx(ref.confidence_interval.high, abs=0.3 * se)
    # acceleration: influence-function value against scipy's jackknife formula
    n = res.n_prompts
    jack = np.array([gain(np.delete(np.arange(n), i)[None, :])[0] for i in range(n)])
    d = jack.mean() - jack
    a_jack = (d**3).sum() / (6 * (d @ d) ** 1.5)
    assert ours.acceleration == pytest.approx(a_jack, abs=0.01)


def test_interval_from_replicates():
    res = _small()
    out = bootstrap(res, "oracle_gain", n_resamples=300, keep_replicates=True)
    lo, hi = np.percentile(out.replicates, [2.5, 97.5])
    assert out.ci == (pytest.approx(lo), pytest.approx(hi))
    assert out.se == pytest.approx(out.replicates.std(ddof=1))
    assert out.bias == pytest.approx(out.replicates.mean() - out.estimate)
    basic = bootstrap(res, "oracle_gain", n_resamples=300, method="basic")
    assert basic.ci == (
        pytest.approx(2 * out.estimate - hi),
        pytest.approx(2 * out.estimate - lo),
    )
    assert bootstrap(res, "oracle_gain", n_resamples=300).replicates is None
    assert isinstance(out, BootstrapResult)
    assert (out.method, out.level, out.n_resamples) == ("percentile", 0.95, 300)
    assert out.low <= out.estimate <= out.high
    assert float(out) == out.estimate


# --------------------------------------------------------------------------- strata
@pytest.mark.parametrize("stratify", ["benchmark", "topic"])
def test_stratified_keeps_stratum_sizes(stratify, backend):
    res = _with_benchmarks(_small(n=257))
    labels = (res.benchmark if stratify == "benchmark" else res.topic).astype(str)
    counts = replicate_counts(res, 30, seed=2, stratify=stratify, backend=backend)
    for lab in np.unique(labels):
        sel = labels == lab
        assert (counts[:, sel].sum(axis=1) == sel.sum()).all()
    out = bootstrap(
        res, "naive_oracle", n_resamples=200, stratify=stratify, backend=backend
    )
    assert out.stratify == stratify


def test_stratified_tiny_strata():
    res = _small(n=40)
    bench = np.array(["a"] + ["b"] * 2 + ["c"] * 37)
    data = capfront.EvalResults.from_counts(
        np.rint(res.successes), res.n_draws, benchmark=bench
    )
    counts = replicate_counts(data, 50, stratify="benchmark")
    assert (counts[:, 0] == 1).all()
    assert (counts[:, 1:3].sum(axis=1) == 2).all()


# --------------------------------------------------------------------------- two-level
def test_two_level_replicate_mean():
    """Two-level replicates average mean_n E[max_l Bin(G, p_hat_nl) / G], the
    parametric bootstrap's expectation (design §4c), not the plug-in value."""
    res = _small(seed=8, n=300)
    B = 800
    two = bootstrap(
        res, "naive_oracle", n_resamples=B, seed=1, two_level=True, keep_replicates=True
    )
    want = capfront.expected_max_binomial(res.p_hat, res.n_draws).mean()
    assert two.replicates.mean() == pytest.approx(want, abs=4 * two.se / np.sqrt(B))
    assert two.bias > 0
    # binary with S in {0, G}: the cell redraw is deterministic -> same replicates
    S = np.where(res.successes > 4, 8, 0)
    det = capfront.EvalResults.from_counts(S, 8)
    a = bootstrap(det, "oracle_gain", n_resamples=50, keep_replicates=True)
    b = bootstrap(
        det, "oracle_gain", n_resamples=50, keep_replicates=True, two_level=True
    )
    np.testing.assert_allclose(a.replicates, b.replicates, atol=1e-12)


def test_two_level_binomial_draws():
    """S* ~ Bin(G, p_hat): a one-prompt data set redraws a binomial."""
    data = capfront.EvalResults.from_counts(np.array([[3, 7]]), 10)
    out = bootstrap(
        data, "best_single", n_resamples=4000, two_level=True, keep_replicates=True
    )
    # best_single of one prompt is max(S1*, S2*) / 10 with S1* ~ Bin(10, .3),
    # S2* ~ Bin(10, .7) independent
    k = np.arange(11)
    F = stats.binom.cdf(k, 10, 0.3) * stats.binom.cdf(k, 10, 0.7)
    pmf = np.diff(np.concatenate([[0], F]))
    obs = np.bincount(np.rint(out.replicates * 10).astype(int), minlength=11)
    assert (
        stats.chisquare(
            obs[pmf > 1e-3],
            pmf[pmf > 1e-3] / pmf[pmf > 1e-3].sum() * obs[pmf > 1e-3].sum(),
        ).pvalue
        > 1e-3
    )


def test_two_level_ragged_uses_slow_path(backend):
    res = _small(n=60)
    G = res.n_draws.copy()
    G[::2, 1] = 4
    S = np.minimum(np.rint(res.successes), G).astype(np.int64)
    data = capfront.EvalResults.from_counts(S, G)
    out = bootstrap(
        data,
        "oracle_gain",
        n_resamples=30,
        two_level=True,
        keep_replicates=True,
        backend=backend,
    )
    ref = bootstrap(
        data,
        "oracle_gain",
        n_resamples=30,
        two_level=True,
        keep_replicates=True,
        backend="numpy",
    )
    np.testing.assert_array_equal(out.replicates, ref.replicates)


# --------------------------------------------------------------------------- frontier
def test_frontier_statistics(backend):
    res = _small(n=150)
    table = capfront.frontier(res).versus_best_single()
    for stat, col in (
        ("frontier_error_reduction", "error_reduction"),
        ("frontier_cost_reduction", "cost_reduction"),
        ("aiq", "aiq"),
    ):
        out = bootstrap(
            res,
            stat,
            n_resamples=40,
            keep_replicates=True,
            backend=backend,
            method="bca",
        )
        assert out.estimate == pytest.approx(float(table[col].iloc[0]), abs=1e-12)
        assert np.isfinite(out.replicates).all()
        assert out.ci[0] <= out.ci[1]
        ref = bootstrap(
            res, stat, n_resamples=40, keep_replicates=True, backend="numpy"
        )
        np.testing.assert_array_equal(out.replicates, ref.replicates)


def test_frontier_replicate_equals_reweighted_frontier():
    res = _small(n=80)
    out = bootstrap(res, "aiq", n_resamples=3, keep_replicates=True, seed=5)
    counts = replicate_counts(res, 3, seed=5)
    idx = np.repeat(np.arange(res.n_prompts), counts[1])
    sub = capfront.EvalResults.from_counts(
        np.rint(res.successes[idx]), res.n_draws[idx], cost=res.mean_cost[idx]
    )
    assert out.replicates[1] == pytest.approx(capfront.frontier(sub).aiq(), abs=1e-12)


# --------------------------------------------------------------------------- debias
def test_debiased_methods():
    try:
        from capfront.debias import decomposition  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="capfront.debias"):
            bootstrap(_small(), "bootstrap_bc", n_resamples=10)
        return
    res = _small(n=200)
    for method in ("bootstrap_bc", "crossfit"):
        a = bootstrap(res, method, n_resamples=60, keep_replicates=True, method="bca")
        assert np.isfinite(a.replicates).all() and a.ci[0] <= a.ci[1]
        b = bootstrap(
            res, method, n_resamples=60, keep_replicates=True, backend="numpy"
        )
        np.testing.assert_array_equal(a.replicates, b.replicates)


# --------------------------------------------------------------------------- misc
def test_package_attribute_is_the_function():
    assert capfront.bootstrap is bootstrap
    assert bootstrap_fn is bootstrap
    assert bootstrap.bootstrap is bootstrap


def test_progress_bar_only_on_terminal(monkeypatch, capsys):
    res = _small(n=50)
    bootstrap(res, "naive_oracle", n_resamples=100)
    assert capsys.readouterr().err == ""

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    fake = Tty()
    monkeypatch.setattr(sys, "stderr", fake)
    monkeypatch.setattr(
        sys.modules["capfront.resampling.engine"], "_PROGRESS_AFTER", -1.0
    )
    out = bootstrap(res, "naive_oracle", n_resamples=100, backend="numpy")
    assert np.isfinite(out.estimate)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_resamples": 1}, "n_resamples"),
        ({"n_resamples": 2.5}, "n_resamples"),
        ({"level": 1.0}, "level"),
        ({"level": "x"}, "level"),
        ({"method": "bc"}, "method"),
        ({"seed": -1}, "seed"),
        ({"stratify": "model"}, "stratify"),
        ({"stratify": "benchmark"}, "benchmark labels"),
        ({"backend": "fortran"}, "backend"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bootstrap(_small(n=30), "naive_oracle", **kwargs)


def test_bad_statistic_and_results():
    res = _small(n=30)
    with pytest.raises(ValueError, match="unknown statistic"):
        bootstrap(res, "oracle", n_resamples=10)
    with pytest.raises(ValueError, match="statistic must be"):
        bootstrap(res, 3, n_resamples=10)
    with pytest.raises(ValueError, match="EvalResults"):
        bootstrap(np.zeros((3, 3)), "naive_oracle")
    with pytest.raises(ValueError, match="binary"):
        bootstrap(_graded(), "naive_oracle", n_resamples=10, two_level=True)
    with pytest.raises(ValueError, match="not finite"):
        bootstrap(res, lambda r: float("nan"), n_resamples=10)


def test_numba_bodies_as_python():
    """The Numba kernels' Python bodies (``py_func``, as without numba) agree with
    the compiled kernels and the NumPy reference."""
    from capfront._kernels import bootstrap as nbk

    if not hasattr(nbk.bootstrap_sums_nb, "py_func"):
        pytest.skip("numba not installed: the kernels already are Python")
    from capfront._kernels.bootstrap import bootstrap_sums_np as _sums_np
    from capfront._kernels.bootstrap import (
        bootstrap_two_level_sums_np as _two_level_sums_np,
    )
    from capfront.resampling.engine import _binomial_thresholds

    offsets = np.array([0, 7, 20], dtype=np.int64)
    rng = np.random.default_rng(0)
    z8 = rng.integers(-5, 9, (2, 20)).astype(np.int8)
    z64 = rng.integers(-1000, 1000, (1, 20)).astype(np.int64)
    lo, hi = 5, 1
    seed = lo | (hi << 32)
    want = _sums_np(offsets, seed, 3, 4, z8, z64)
    np.testing.assert_array_equal(
        nbk.bootstrap_sums_nb.py_func(offsets, lo, hi, 3, 4, z8, z64), want
    )
    S = rng.integers(0, 5, (20, 3)).astype(np.uint8)
    T = _binomial_thresholds(4)
    want2 = _two_level_sums_np(offsets, seed, 0, 3, S, T, True, True)
    np.testing.assert_array_equal(
        nbk.bootstrap_two_level_sums_nb.py_func(
            offsets, lo, hi, 0, 3, S, T, True, True
        ),
        want2,
    )
    cls = (np.array([0, 2, 3]), np.array([3, 4, 13]), np.array([1, 2, 5]))
    from capfront._kernels.bootstrap import bootstrap_class_sums_np as _class_sums_np

    np.testing.assert_array_equal(
        nbk.bootstrap_class_sums_nb.py_func(*cls, lo, hi, 0, 5),
        _class_sums_np(*cls, seed, 0, 5),
    )
