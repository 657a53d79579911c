"""Router-gap decomposition (design §5)."""

from __future__ import annotations

import numpy as np
import pytest

import capfront as cf


@pytest.fixture(scope="module")
def data():
    return cf.simulate(
        1500, 5, 30, n_topics=3, specialisation=1.0, seed=21, as_counts=True
    )


def test_decomposition_brackets_truth(data):
    g = cf.gap_decomposition(data, router_accuracy=0.6)
    p = data.truth_p
    o_repro = p.max(axis=1).mean()
    o_exp = (1 - np.prod(1 - p, axis=1)).mean()
    assert g.o_exp == pytest.approx(o_exp, abs=0.01)
    assert g.o_repro_crossfit < o_repro < g.o_repro_plugin
    assert g.o_repro_lower <= g.o_repro_crossfit
    assert g.delta_upper >= g.delta_crossfit >= g.delta_plugin
    assert g.delta_upper >= o_exp - o_repro
    assert set(g.noise_share) == {"plugin", "crossfit", "upper_bound"}
    assert 0 < g.noise_share["plugin"] < g.noise_share["crossfit"] < 1
    # clusters from the topic labels by default
    assert g.n_clusters == 3 and "cluster" in g.bound_method
    assert "O_repro" in g.summary()


def test_best_of_k_dominates_union(data):
    g = cf.gap_decomposition(data)
    assert g.best_of_k_equal_draws >= g.o_exp - 0.01
    assert np.isfinite(g.best_of_k_equal_cost) and g.union_cost > g.committed_cost


def test_prompt_level_bounds_without_clusters(data):
    g = cf.gap_decomposition(data, clusters=None, level=0.9)
    assert g.n_clusters == data.n_prompts and "prompt-level" in g.bound_method
    g99 = cf.gap_decomposition(data, clusters=None, level=0.99)
    assert g99.o_repro_lower < g.o_repro_lower and g99.delta_upper > g.delta_upper


def test_bounds_hold_under_correlation():
    # within-cell correlation: the one-sided bounds still cover in most repetitions
    hits_lo = hits_up = 0
    for seed in range(10):
        r = cf.simulate(
            800, 4, 20, within_cell_correlation=0.3, seed=seed, as_counts=True
        )
        p = r.truth_p
        g = cf.gap_decomposition(r, clusters=None)
        o_repro = p.max(axis=1).mean()
        delta = (1 - np.prod(1 - p, axis=1)).mean() - o_repro
        hits_lo += g.o_repro_lower <= o_repro
        hits_up += g.delta_upper >= delta
    assert hits_lo >= 9 and hits_up >= 9


def test_few_draws_plugin_only():
    r = cf.simulate(300, 4, 10, seed=1, as_counts=True)
    g = cf.gap_decomposition(r)
    assert g.o_repro_lower is None and g.delta_upper is None
    assert "plug-in only" in g.label and "20" in g.label
    assert "plug-in only" in g.summary()


def test_bad_input(data):
    with pytest.raises(ValueError, match="router_accuracy"):
        cf.gap_decomposition(data, router_accuracy=0.9999)
    with pytest.raises(ValueError, match="level"):
        cf.gap_decomposition(data, level=1.5)
    with pytest.raises(ValueError, match="one label per prompt"):
        cf.gap_decomposition(data, clusters=np.zeros(3))
    graded = cf.EvalResults.from_arrays(np.full((3, 2, 4), 0.5))
    with pytest.raises(ValueError, match="graded"):
        cf.gap_decomposition(graded)
    one = cf.EvalResults.from_counts(np.array([[1, 0], [0, 1]]), 1)
    with pytest.raises(ValueError, match="at least 2 draws"):
        cf.gap_decomposition(one)


def test_bootstrap_bound_uses_the_engine_and_agrees_with_normal_bound():
    res = cf.simulate(1500, 5, 24, n_topics=3, seed=11)
    normal = cf.gap_decomposition(res, clusters=None)
    boot = cf.gap_decomposition(res, bound="bootstrap", n_resamples=1000)
    assert "bootstrap" in boot.bound_method
    assert boot.o_repro_crossfit == normal.o_repro_crossfit
    se = (normal.o_repro_crossfit - normal.o_repro_lower) / 1.6449
    assert abs(boot.o_repro_lower - normal.o_repro_lower) < 0.25 * se
    assert boot.o_repro_lower < boot.o_repro_crossfit
    assert boot.delta_upper > boot.delta_crossfit
    with pytest.raises(ValueError, match="bound must be"):
        cf.gap_decomposition(res, bound="exact")


def test_per_prompt_statistic_matches_builtin_replicates():
    from capfront.bootstrap import PerPrompt

    res = cf.simulate(800, 4, 10, seed=2)
    values = np.nanmax(res.p_hat, axis=1)
    a = cf.bootstrap(
        res, PerPrompt(values), n_resamples=300, seed=3, keep_replicates=True
    )
    b = cf.bootstrap(res, "naive_oracle", n_resamples=300, seed=3, keep_replicates=True)
    np.testing.assert_allclose(a.replicates, b.replicates, rtol=0, atol=1e-12)
    assert a.estimate == pytest.approx(values.mean())
    with pytest.raises(ValueError, match="two_level"):
        cf.bootstrap(res, PerPrompt(values), two_level=True, n_resamples=10)


# ------------------------------------------------------------------ memory
def _traced_peak(fn) -> int:
    """Peak bytes NumPy and Python allocated during ``fn()`` (tracemalloc)."""
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _uint8_counts(N: int, L: int, G: int, seed: int = 0) -> cf.EvalResults:
    rng = np.random.default_rng(seed)
    S = rng.binomial(G, rng.beta(0.7, 0.5, (N, L))).astype(np.uint8)
    return cf.EvalResults.from_counts(S, G, cost=np.geomspace(0.1, 10.0, L))


def test_per_prompt_loops_hold_blocks_not_copies_of_the_table(monkeypatch):
    """gap_decomposition and the audit's data statistics and count estimators
    work over blocks of prompts: their peak is far below one (N, L) float64
    array (the old code held several; at N = 2e6, L = 33 each is 528 MB)."""
    from capfront.debias import _input, bias_correction, checks

    N, L, G = 60_000, 33, 20
    res = _uint8_counts(N, L, G)
    S, Gs = res._stats.successes, res._stats.n_draws  # compact, broadcast draws
    table = N * L * 8
    monkeypatch.setattr(_input, "ROW_BLOCK", 2048)
    blocked = {
        "gap": lambda: cf.gap_decomposition(res),
        "eig_share": lambda: checks.eig_share(S, Gs),
        "naive_rows": lambda: bias_correction.naive_rows(S, Gs),
        "bootstrap_bc": lambda: bias_correction.bootstrap_bc_decomposition(S, Gs),
    }
    out: dict = {}
    peaks = {
        k: _traced_peak(lambda k=k, f=f: out.__setitem__(k, f()))
        for k, f in blocked.items()
    }
    assert max(peaks.values()) < 0.5 * table, peaks
    # the blocks change no number: one block of all prompts gives the same
    monkeypatch.setattr(_input, "ROW_BLOCK", N)
    gap, whole = out["gap"], cf.gap_decomposition(res)
    for f in ("o_exp", "o_repro_plugin", "o_repro_crossfit", "delta_upper"):
        assert getattr(gap, f) == getattr(whole, f), f
    assert gap.best_of_k_equal_cost == whole.best_of_k_equal_cost
    np.testing.assert_array_equal(bias_correction.naive_rows(S, Gs), out["naive_rows"])
    assert out["bootstrap_bc"].estimate() == (
        bias_correction.bootstrap_bc_decomposition(S, Gs).estimate()
    )
    # the Gram matrix is summed block by block: equal up to rounding
    assert checks.eig_share(S, Gs) == pytest.approx(out["eig_share"], rel=1e-12)
