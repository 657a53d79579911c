"""The exact frontier (design §6): brute-force lambda sweeps, oracles, backends,
edges."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capfront
from capfront import available_backends
from capfront.frontier import (
    frontier,
    frontier_metrics,
    frontier_options,
    frontier_vertices,
    hull_segments,
)

BACKENDS = available_backends()
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SEG_FIELDS = (
    "base_cost",
    "base_quality",
    "base_option",
    "prompt",
    "dcost",
    "dquality",
    "option_from",
    "option_to",
)


@st.composite
def count_tables(draw, max_n=6, max_l=4, G=4, missing=True):
    N = draw(st.integers(1, max_n))
    L = draw(st.integers(1, max_l))
    S = np.array(draw(st.lists(st.integers(0, G), min_size=N * L, max_size=N * L)))
    S = S.reshape(N, L)
    costs = [0.0, 0.5, 1.0, 2.0, 3.0]
    c = np.array(
        draw(st.lists(st.sampled_from(costs), min_size=N * L, max_size=N * L))
    ).reshape(N, L)
    n_draws = np.full((N, L), G)
    if missing:
        miss = np.array(
            draw(st.lists(st.booleans(), min_size=N * L, max_size=N * L))
        ).reshape(N, L)
        miss[:, 0] &= ~miss.all(axis=1)  # every prompt keeps a model
        miss[miss.all(axis=1), 0] = False
        n_draws = np.where(miss, 0, G)
        S = np.where(miss, 0, S)
    return capfront.EvalResults.from_counts(S, n_draws, cost=c)


def _sweep_point(c, q, lam, pick="cheap"):
    """Mean (cost, quality) of a policy maximising q - lam * c per prompt."""
    ok = np.isfinite(c) & np.isfinite(q)
    score = np.where(ok, q - lam * np.where(ok, c, 0.0), -np.inf)
    best = score.max(axis=1, keepdims=True)
    tied = ok & (score >= best - 1e-12)
    cc = np.where(tied, c, np.inf if pick == "cheap" else -np.inf)
    j = cc.argmin(axis=1) if pick == "cheap" else cc.argmax(axis=1)
    n = np.arange(c.shape[0])
    return c[n, j].mean(), q[n, j].mean()


@settings(max_examples=80, deadline=None)
@given(count_tables(), st.booleans())
def test_matches_bruteforce_lambda_sweep(results, posthoc):
    fr = frontier(results, posthoc=posthoc)
    c, q, _, _ = frontier_options(results, posthoc=posthoc)
    v = fr.vertices
    # every swept point lies on or below the frontier
    for lam in np.r_[0.0, np.logspace(-3, 3, 60)]:
        for pick in ("cheap", "dear"):
            x, y = _sweep_point(c, q, lam, pick)
            assert x >= v[0, 0] - 1e-9
            assert y <= fr.quality_at(x) + 1e-9
    # every vertex is attained by some lambda (between consecutive edge slopes)
    slopes = np.diff(v[:, 1]) / np.diff(v[:, 0]) if len(v) > 1 else np.zeros(0)
    lams = np.r_[
        slopes[0] + 1.0 if slopes.size else 1.0,
        (slopes[:-1] + slopes[1:]) / 2,
        slopes[-1] / 2 if slopes.size else [],
    ]
    lams = lams[: len(v)]
    if len(v) == 1:
        lams = np.array([1e6])
    for vert, lam in zip(v, lams, strict=True):
        x, y = _sweep_point(c, q, lam)
        np.testing.assert_allclose([x, y], vert, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(count_tables(missing=False))
def test_dominates_single_models_and_reaches_oracles(results):
    fr = frontier(results)
    table = capfront.single_models(results)
    for acc, cost in zip(table["accuracy"], table["mean_cost"], strict=True):
        assert fr.quality_at(cost) >= acc - 1e-12
        assert fr.cost_at(acc) <= cost + 1e-12
    oracle = capfront.naive_oracle(results, "prehoc")
    np.testing.assert_allclose(fr.vertices[-1], [oracle.cost, oracle.value], atol=1e-12)
    post = frontier(results, posthoc=True)
    assert post.max_quality == pytest.approx(
        capfront.naive_oracle(results, "posthoc").value, abs=1e-12
    )
    assert post.quality_at(fr.vertices[-1, 0]) >= fr.max_quality - 1e-12


@settings(max_examples=60, deadline=None)
@given(count_tables(), st.booleans())
def test_concave_nondecreasing_and_backends_agree(results, posthoc):
    segs = {b: frontier(results, posthoc=posthoc, backend=b).segments for b in BACKENDS}
    for b in BACKENDS[1:]:
        for f in SEG_FIELDS:
            np.testing.assert_array_equal(
                getattr(segs[b], f), getattr(segs[BACKENDS[0]], f)
            )
    v = frontier(results, posthoc=posthoc).vertices
    dx, dy = np.diff(v[:, 0]), np.diff(v[:, 1])
    assert (dx > 0).all() and (dy > 0).all()
    slope = dy / dx
    assert (np.diff(slope) <= 1e-9 * np.abs(slope[1:]).clip(1)).all()
    s = segs[BACKENDS[0]]
    assert (s.dcost > 0).all() and (s.dquality > 0).all()
    assert (np.diff(s.slope) <= 0).all()


@settings(max_examples=40, deadline=None)
@given(count_tables(max_n=5), st.data())
def test_weights_equal_repeated_prompts(results, data):
    """The bootstrap contract: vertices for integer weights w equal the frontier of
    the data with prompt n repeated w[n] times."""
    N = results.n_prompts
    w = np.array(data.draw(st.lists(st.integers(0, 3), min_size=N, max_size=N)))
    if w.sum() == 0:
        w[0] = 1
    seg = frontier(results).segments
    idx = np.repeat(np.arange(N), w)
    rep = capfront.EvalResults.from_counts(
        np.rint(results.successes[idx]).astype(int),
        results.n_draws[idx],
        cost=np.nan_to_num(results.mean_cost[idx]),
    )
    want = frontier(rep).vertices
    np.testing.assert_allclose(frontier_vertices(seg, w), want, atol=1e-12)


def test_posthoc_quality_is_pass_at_k():
    rng = np.random.default_rng(3)
    S = rng.integers(0, 8, size=(40, 3))
    G = np.full((40, 3), 7)
    r = capfront.EvalResults.from_counts(S, G, cost=[1.0, 2.0, 0.5])
    c, q, om, ok = frontier_options(r, posthoc=True, max_k=5)
    assert c.shape == (40, 15)
    for j in range(15):
        want = capfront.pass_at_k(G[:, om[j]], S[:, om[j]], ok[j])
        np.testing.assert_allclose(q[:, j], want, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(c[:, j], ok[j] * np.array([1.0, 2.0, 0.5])[om[j]])


def test_graded_posthoc_expected_max():
    rng = np.random.default_rng(4)
    scores = rng.random((5, 2, 4)).round(2)
    r = capfront.EvalResults.from_arrays(scores, cost=np.ones((5, 2, 4)))
    _, q, _, ok = frontier_options(r, posthoc=True)
    from itertools import combinations

    for n in range(5):
        for l in range(2):
            for k in range(1, 5):
                subsets = [max(s) for s in combinations(scores[n, l], k)]
                assert q[n, l * 4 + k - 1] == pytest.approx(np.mean(subsets))
    fr = frontier(r, posthoc=True)
    assert fr.max_quality == pytest.approx(scores.max(axis=(1, 2)).mean())


def test_ties_zero_cost_and_missing_cells():
    # all options free: one vertex at the best quality
    c = np.zeros((3, 4))
    q = np.array([[0.1, 0.5, 0.5, 0.2], [0.0, 0.0, 0.0, 0.0], [1.0, 0.3, 1.0, 1.0]])
    seg = hull_segments(c, q)
    assert seg.n_segments == 0
    np.testing.assert_array_equal(seg.base_option, [1, 0, 0])
    np.testing.assert_allclose(frontier_vertices(seg), [[0.0, 0.5]])
    # identical options: first index wins; a free option starts the hull
    c = np.array([[0.0, 1.0, 1.0, 2.0], [np.nan, 1.0, np.inf, 1.0]])
    q = np.array([[0.2, 0.6, 0.6, 0.6], [0.9, 0.4, 0.9, 0.7]])
    for b in BACKENDS:
        seg = hull_segments(c, q, backend=b)
        np.testing.assert_array_equal(seg.base_option, [0, 3])
        np.testing.assert_array_equal(seg.prompt, [0])
        np.testing.assert_array_equal(seg.option_to, [1])
    # collinear options: the middle one is dropped
    seg = hull_segments(np.array([[0.0, 1.0, 2.0]]), np.array([[0.0, 0.5, 1.0]]))
    np.testing.assert_array_equal(seg.option_to, [2])
    with pytest.raises(ValueError, match="no available option"):
        hull_segments(np.array([[np.nan, 1.0]]), np.array([[0.5, np.nan]]))
    with pytest.raises(ValueError, match=">= 0"):
        hull_segments(np.array([[-1.0]]), np.array([[0.5]]))


def test_cost_choices_and_errors():
    S = np.array([[1, 0], [0, 1], [1, 1]])
    r = capfront.EvalResults.from_counts(S, 1)
    with pytest.raises(ValueError, match="cost='unit'"):
        frontier(r)
    fr = frontier(r, cost="unit")
    np.testing.assert_allclose(fr.vertices, [[1.0, 1.0]])
    fr = frontier(r, cost=[1.0, 3.0])
    np.testing.assert_allclose(fr.vertices, [[1.0, 2 / 3], [5 / 3, 1.0]])
    with pytest.raises(ValueError, match="shaped"):
        frontier(r, cost=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="max_k"):
        frontier(r, cost="unit", max_k=2)
    with pytest.raises(ValueError, match="unknown backend"):
        frontier(r, cost="unit", backend="fortran")
    with pytest.raises(ValueError, match="not supported"):
        frontier(r, cost="unit", quality="crossfit")
    q = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    fr = frontier(r, cost=[1.0, 1.0], quality=q)
    assert fr.max_quality == pytest.approx((0.9 + 0.8 + 0.5) / 3)


def test_metrics_policy_and_comparison():
    # two prompts, two models: cheap model right on prompt 0 only
    S = np.array([[1, 1], [0, 1]])
    r = capfront.EvalResults.from_counts(S, 1, cost=[1.0, 3.0], benchmark=["a", "b"])
    fr = frontier(r)
    np.testing.assert_allclose(fr.vertices, [[1.0, 0.5], [2.0, 1.0]])
    assert fr.aiq() == pytest.approx(0.75)
    m = frontier_metrics(fr.vertices, best_cost=3.0, best_accuracy=1.0)
    assert np.isnan(m["error_reduction"])  # best single has no errors
    assert m["cost_reduction"] == pytest.approx(1 - 2.0 / 3.0)
    m = frontier_metrics(fr.vertices, best_cost=1.5, best_accuracy=0.6)
    assert m["error_reduction"] == pytest.approx((0.4 - 0.25) / 0.4)
    assert m["cost_reduction"] == pytest.approx(1 - 1.2 / 1.5)
    pol = fr.policy_at(1.5)
    assert pol.quality == pytest.approx(0.75)
    assert pol.randomised["prompt"] == 1
    assert pol.randomised["p_to"] == pytest.approx(0.5)
    assert pol.randomised["to"] == ("model_1", 1)
    np.testing.assert_allclose(pol.share.to_numpy(), [0.75, 0.25])
    assert fr.policy_at(5.0).randomised is None
    with pytest.raises(ValueError, match="below"):
        fr.policy_at(0.5)
    with pytest.warns(capfront.OutsideFrontierWarning, match="below the cheapest"):
        assert np.isnan(fr.quality_at(0.5))
    with pytest.warns(
        capfront.OutsideFrontierWarning, match="above the frontier's top"
    ):
        assert np.isnan(fr.cost_at(1.1))
    assert fr.quality_at(9.0) == 1.0 and fr.cost_at(0.0) == 1.0
    with pytest.warns(capfront.OutsideFrontierWarning, match="1 quality value"):
        got = fr.cost_at(np.array([0.5, 1.1, np.nan]))  # NaN in, NaN out: not counted
    assert got[0] == pytest.approx(1.0) and np.isnan(got[1:]).all()
    table = fr.versus_best_single()
    assert list(table.index) == ["a", "b", "mean", "all"]
    assert table.loc["all", "best_model"] == "model_1"
    assert table.loc["all", "cost_reduction"] == pytest.approx(1 - 2.0 / 3.0)
    assert table.loc["b", "best_model"] == "model_1"
    only_a = frontier(r, benchmark="a")
    np.testing.assert_allclose(only_a.vertices, [[1.0, 1.0]])


@settings(max_examples=30, deadline=None)
@given(count_tables(), st.floats(0, 1))
def test_policy_at_matches_quality_at(results, t):
    fr = frontier(results, posthoc=True)
    budget = fr.vertices[0, 0] + t * (fr.vertices[-1, 0] - fr.vertices[0, 0])
    pol = fr.policy_at(budget)
    assert pol.quality == pytest.approx(fr.quality_at(budget), abs=1e-9)
    assert pol.share.sum() == pytest.approx(1.0)
    c, q, _, _ = frontier_options(results, posthoc=True)
    n = np.arange(results.n_prompts)
    det_q = q[n, pol.option].mean()
    assert det_q <= pol.quality + 1e-12


def test_versus_best_single_ci_and_band_and_plot(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    r = capfront.simulate(n_prompts=300, n_models=4, n_draws=5, seed=1)
    if not r.has_cost:
        r = capfront.EvalResults.from_counts(
            np.rint(r.successes).astype(int), r.n_draws, cost=[1.0, 2.0, 3.0, 4.0]
        )
    fr = frontier(r, posthoc=True, max_k=3).with_band(n_resamples=20)
    ax = fr.plot()
    ax.figure.savefig(tmp_path / "f.png")
    assert fr.band["lower"].shape == (200,)
    table = fr.versus_best_single()
    assert table.loc["all", "error_reduction"] > 0
    if importlib.util.find_spec("capfront.bootstrap") is None:
        with pytest.raises(NotImplementedError, match="bootstrap"):
            fr.versus_best_single(ci=0.95)
        return
    small = r.select(np.arange(60))
    for f in (frontier(small), frontier(small, posthoc=True, max_k=2)):
        t = f.versus_best_single(ci=0.9, n_resamples=30)
        lo, hi = t.loc["all", "cost_reduction_low"], t.loc["all", "cost_reduction_high"]
        assert lo <= t.loc["all", "cost_reduction"] + 1e-9 <= hi + 2e-9


def test_pgm_quality_posterior_means():
    if not hasattr(capfront, "debiased_oracle"):
        pytest.skip("capfront.debiased_oracle not available")
    r = capfront.simulate(400, 4, 5, seed=2, as_counts=True)
    if not r.has_cost:
        r = capfront.EvalResults.from_counts(
            np.rint(r.successes).astype(int), r.n_draws, cost=[1.0, 2.0, 3.0, 4.0]
        )
    fr = frontier(r, quality="pgm")
    naive = frontier(r)
    t = fr.versus_best_single(ci=0.9, n_resamples=100)  # conditional on the fit
    assert t.loc["all", "cost_reduction_low"] <= t.loc["all", "cost_reduction_high"]
    diag = capfront.debiased_oracle(r, "pgm").diagnostics
    assert fr.max_quality == pytest.approx(diag["max_of_posterior_means"])
    assert fr.max_quality < naive.max_quality  # shrinkage removes optimism


def test_latency_frontier():
    rng = np.random.default_rng(0)
    S = rng.integers(0, 2, size=(200, 3))
    lat = np.array([1.0, 5.0, 2.0])
    r = capfront.EvalResults.from_counts(S, 1, cost=[1.0, 0.5, 3.0], latency=lat)
    lf = capfront.latency_frontier(r)
    pol = lf.policies
    pts = pol[["quality", "cost", "latency_mean"]].to_numpy()
    for i in np.flatnonzero(pol["pareto_mean"]):
        better = (
            (pts[:, 0] >= pts[i, 0])
            & (pts[:, 1] <= pts[i, 1])
            & (pts[:, 2] <= pts[i, 2])
        )
        strict = (
            (pts[:, 0] > pts[i, 0]) | (pts[:, 1] < pts[i, 1]) | (pts[:, 2] < pts[i, 2])
        )
        assert not (better & strict).any()
    assert pol["hull_mean"].any() and pol["pareto_p95"].any()
    assert (pol["source"] == "single").sum() == 3


def _real(name):
    path = DATA / name
    if not path.exists():
        pytest.skip(f"{path} not available (shared real data)")
    return path


def test_real_swebench():
    path = _real("swebench_verified_bash_only") / "swebench_verified_bash_only.csv"
    r = capfront.read(path, cost="cost_usd")
    fr = frontier(r)
    oracle = capfront.naive_oracle(r, "prehoc")
    assert fr.max_quality == pytest.approx(oracle.value)
    table = fr.versus_best_single()
    assert 0 < table.loc["all", "error_reduction"] < 1
    assert 0 < table.loc["all", "cost_reduction"] < 1
    segs = {b: frontier(r, backend=b).segments for b in BACKENDS}
    for b in BACKENDS[1:]:
        np.testing.assert_array_equal(segs[b].prompt, segs[BACKENDS[0]].prompt)


def test_real_bfcl_tokens():
    import pandas as pd

    path = _real("bfcl_v1_2024-08-11") / "bfcl_v1_2024-08-11.csv"
    df = pd.read_csv(path)
    df["tokens"] = df["input_tokens"] + df["output_tokens"]
    df = df[df.groupby("model")["tokens"].transform(lambda s: s.notna().all())]
    r = capfront.from_frame(
        df, cost="tokens", latency="latency_s", benchmark="category"
    )
    fr = frontier(r)
    table = fr.versus_best_single()
    assert "mean" in table.index and len(table) == 14
    assert fr.max_quality == pytest.approx(capfront.naive_oracle(r, "prehoc").value)


def test_large_merge_threads_and_backends_identical():
    """Enough segments for the C++ chunked parallel sort; 1 and 2 threads agree."""
    rng = np.random.default_rng(7)
    N, M = 60_000, 8
    c = rng.choice([0.0, 0.1, 0.5, 1.0, 2.0, 4.0], size=(N, M))
    q = rng.integers(0, 5, size=(N, M)) / 4
    c[rng.random((N, M)) < 0.1] = np.nan
    c[:, 0] = 1.0  # every prompt keeps an option
    q[:, 0] = rng.integers(0, 5, size=N) / 4
    ref = hull_segments(c, q, backend="numpy")
    assert ref.n_segments > 1 << 15
    threads = capfront.get_num_threads()
    try:
        for n_threads in (1, 2):
            capfront.set_num_threads(n_threads)
            for b in BACKENDS:
                got = hull_segments(c, q, backend=b)
                for f in SEG_FIELDS:
                    np.testing.assert_array_equal(getattr(got, f), getattr(ref, f))
    finally:
        capfront.set_num_threads(threads)


def test_without_numba_pure_python_kernels_agree():
    """With numba hidden the numba kernels run as plain Python (``_jit`` fallback):
    they must still import and give the same segments and Pareto set."""
    import hiding

    code = """
import numpy as np
import capfront
from capfront._kernels import frontier as nbf
from capfront._kernels import pareto3d as nbp
assert "numba" not in capfront.available_backends()
rng = np.random.default_rng(0)
c = rng.choice([0.0, 0.5, 1.0, 2.0], size=(40, 5)); q = rng.integers(0, 5, (40, 5)) / 4
got = nbf.hull_segments_dense_nb(c, q)
ref = capfront.hull_segments(c, q, backend="numpy")
for k, v in got.items():
    assert np.array_equal(v, getattr(ref, k)), k
S = rng.integers(0, 4, (30, 3)); G = np.full((30, 3), 3)
got = nbf.hull_segments_posthoc_nb(S, G, np.ones((30, 3)), 3)
r = capfront.EvalResults.from_counts(S, G, cost=np.ones((30, 3)))
ref = capfront.frontier(r, posthoc=True, backend="numpy").segments
for k, v in got.items():
    assert np.array_equal(v, getattr(ref, k)), k
pts = rng.integers(0, 3, (60, 3)).astype(float)
assert np.array_equal(nbp.pareto_minima_3d_nb(pts),
                      capfront.pareto_3d(pts, maximize=(False,) * 3, backend="numpy"))
print("ok")
"""
    out = hiding.run_hidden(code, "numba")
    assert out.strip().endswith("ok")


def test_single_points_match_single_models():
    rng = np.random.default_rng(5)
    S = rng.integers(0, 6, size=(80, 3))
    r = capfront.EvalResults.from_counts(S, 5, cost=[1.0, 2.0, 0.5])
    pts = frontier(r, posthoc=True, max_k=3).single_points()
    table = capfront.single_models(r, best_of_k=[2, 3])
    for k, col in ((1, "accuracy"), (2, "pass@2"), (3, "pass@3")):
        got = pts[pts["k"] == k].set_index("model")
        np.testing.assert_allclose(
            got.loc[table.index, "quality"], table[col], rtol=1e-12
        )
        np.testing.assert_allclose(
            got.loc[table.index, "cost"], k * table["mean_cost"], rtol=1e-12
        )


def _assert_same_segments(got, ref):
    for f in SEG_FIELDS:
        np.testing.assert_array_equal(getattr(got, f), getattr(ref, f), err_msg=f)


@settings(max_examples=60, deadline=None)
@given(count_tables(max_n=8, max_l=5), st.sampled_from(["cells", "unit", "model"]))
def test_fused_prehoc_kernel_matches_dense_options(results, cost_kind):
    """The C++ prehoc path reads the per-cell arrays in place (any strides, int32
    successes, a read-only broadcast n_draws): identical segments and vertices to the
    numpy path on the dense option arrays."""
    if "cpp" not in BACKENDS:
        pytest.skip("no C++ extension")
    L = results.n_models
    cost = {"cells": None, "unit": "unit", "model": np.linspace(0.0, 1.0, L)}[cost_kind]
    ref = frontier(results, cost=cost, backend="numpy")
    got = frontier(results, cost=cost, backend="cpp")
    _assert_same_segments(got.segments, ref.segments)
    np.testing.assert_array_equal(got.vertices, ref.vertices)
    # the data model may hold int32 successes and a read-only broadcast n_draws
    st_ = results.stats
    G = np.asarray(st_.n_draws)
    if (G == G.max()).all() or (G == 0).any():
        st_.n_draws = np.broadcast_to(G[0], G.shape) if (G == G[0]).all() else G
    st_.successes = np.asarray(st_.successes).astype(np.int32)
    got = frontier(results, cost=cost, backend="cpp")
    _assert_same_segments(got.segments, ref.segments)
    # given per-cell quality arrays (prehoc) go through the same kernel
    q = np.sqrt(np.asarray(ref.results.p_hat))
    a = frontier(results, cost=cost, quality=q, backend="cpp")
    b = frontier(results, cost=cost, quality=q, backend="numpy")
    _assert_same_segments(a.segments, b.segments)
    np.testing.assert_array_equal(a.vertices, b.vertices)


def test_fused_kernel_strided_inputs_and_errors():
    if "cpp" not in BACKENDS:
        pytest.skip("no C++ extension")
    core = capfront._backend.core()
    rng = np.random.default_rng(3)
    N, L = 500, 6
    S = rng.integers(0, 5, size=(N, L))
    G = np.broadcast_to(np.int64(4), (N, L))  # strides (0, 0), read-only
    cost = np.broadcast_to(np.linspace(0.5, 3.0, L), (N, L))  # strides (0, 8)
    d = core.hull_segments_cells(S, G, cost, True, False)
    ref = hull_segments(cost, S / 4.0, backend="numpy")
    for f in SEG_FIELDS:
        np.testing.assert_array_equal(d[f], getattr(ref, f))
    # a column slice (non-contiguous rows) and int32 counts
    wide = rng.integers(0, 5, size=(N, 2 * L)).astype(np.int32)
    d = core.hull_segments_cells(wide[:, ::2], G, cost, True, False)
    ref = hull_segments(cost, wide[:, ::2] / 4.0, backend="numpy")
    for f in SEG_FIELDS:
        np.testing.assert_array_equal(d[f], getattr(ref, f))
    with pytest.raises(ValueError, match="option_cost must be >= 0"):
        core.hull_segments_cells(S, G, -np.ones((N, L)), True, False)
    with pytest.raises(ValueError, match="quality must be float64, int64, int32"):
        core.hull_segments_cells(S.astype(np.int8), G, cost, True, False)
    r = capfront.EvalResults.from_counts(S, 4, cost=np.linspace(0.5, 3.0, L))
    r.stats.cost_sum = -r.stats.cost_sum
    for b in BACKENDS:
        with pytest.raises(ValueError, match="must be >= 0"):
            frontier(r, backend=b)


@pytest.mark.parametrize("G", [20, 300])
def test_prehoc_reads_compact_counts_in_place(G):
    """Counts stored compact (uint8, uint16 above 255 draws; uint8 draw numbers
    where cells differ) give the segments of the same counts as int64 in every
    backend, and no widened (N, L) copy is made and kept on the results."""
    rng = np.random.default_rng(5)
    N, L = 400, 7
    n_draws = np.where(rng.random((N, L)) < 0.1, 0, G)
    n_draws[:, 0] = G
    S = np.minimum(rng.integers(0, G + 1, size=(N, L)), n_draws)
    cost = rng.choice([0.5, 1.0, 2.0], size=(N, L))
    r = capfront.EvalResults.from_counts(S, n_draws, cost=cost)
    assert r.stats.successes.dtype == (np.uint8 if G < 256 else np.uint16)
    ref = hull_segments(
        np.where(n_draws > 0, cost, np.nan),
        np.where(n_draws > 0, S / np.maximum(n_draws, 1), np.nan),
        backend="numpy",
    )
    for b in BACKENDS:
        got = frontier(r, backend=b)
        _assert_same_segments(got.segments, ref)
        assert r._wide == {}  # the compact counts were read as they are
    d = capfront._backend.core().hull_segments_cells(
        S.astype(np.uint16),
        n_draws.astype(np.uint8 if G < 256 else np.uint16),
        cost * n_draws,
        True,
        True,
    )
    for f in SEG_FIELDS:
        np.testing.assert_array_equal(d[f], getattr(ref, f))


@pytest.mark.parametrize("G", [20, 300])
@pytest.mark.parametrize("cost_kind", ["sums", "unit", "model", "cells"])
def test_posthoc_reads_compact_counts_in_place(G, cost_kind, monkeypatch):
    """The posthoc frontier hands the kernel the counts, draw numbers and cost
    sums as stored (uint8/uint16 counts, a broadcast n_draws where every cell has
    G draws): segments bit-identical to the dense best-of-k options in every
    backend, for every kind of cost."""
    rng = np.random.default_rng(6)
    N, L, K = 300, 5, 4
    n_draws = np.full((N, L), G)
    if cost_kind == "sums":  # some cells not run: n_draws stored per cell
        n_draws = np.where(rng.random((N, L)) < 0.1, 0, G)
        n_draws[:, 0] = G
    S = np.minimum(rng.integers(0, G + 1, size=(N, L)), n_draws)
    S[rng.random((N, L)) < 0.2] = 0
    cell = rng.choice([0.5, 1.0, 2.0], size=(N, L))
    r = capfront.EvalResults.from_counts(S, n_draws, cost=cell)
    assert r.stats.successes.dtype == (np.uint8 if G < 256 else np.uint16)
    cost = {
        "sums": None,
        "unit": "unit",
        "model": np.linspace(0.5, 2.0, L),
        "cells": cell,
    }[cost_kind]
    c, q, _, _ = frontier_options(r, posthoc=True, max_k=K, cost=cost)
    ref = hull_segments(c, q, backend="numpy")
    seen = []
    module = importlib.import_module("capfront.frontier")
    real = module.dispatch

    def spy(name, backend):
        run = real(name, backend)
        if name != "hull_segments_posthoc":
            return run
        return lambda *args: seen.append(args) or run(*args)

    monkeypatch.setattr(module, "dispatch", spy)
    vertices = []
    for b in BACKENDS:
        got = frontier(r, posthoc=True, max_k=K, cost=cost, backend=b)
        _assert_same_segments(got.segments, ref)
        vertices.append(got.vertices)
    for v in vertices[1:]:
        np.testing.assert_array_equal(v, vertices[0])
    for args in seen:  # the stored arrays themselves, not widened copies
        assert args[0] is r.stats.successes
        assert args[1] is r.stats.n_draws
        if cost_kind == "sums":
            assert args[2] is r.stats.cost_sum and args[4] is True
    assert r._wide == {}


def test_posthoc_kernel_strided_compact_inputs_and_errors():
    """The C++ posthoc kernel on uint8/uint16/int32 counts of any strides equals
    the kernel on contiguous int64 copies (cost given, or sums divided by n_draws);
    other dtypes are refused by name."""
    if "cpp" not in BACKENDS:
        pytest.skip("no C++ extension")
    core = capfront._backend.core()
    rng = np.random.default_rng(8)
    N, L, K = 400, 6, 5
    wide = rng.integers(0, 9, size=(N, 2 * L))
    G = np.broadcast_to(np.uint8(8), (N, L))  # strides (0, 0)
    cost = np.broadcast_to(np.linspace(0.5, 3.0, L), (N, L))  # strides (0, 8)
    S64 = np.ascontiguousarray(wide[:, ::2])
    G64 = np.full((N, L), 8, dtype=np.int64)
    ref = core.hull_segments_posthoc(S64, G64, np.ascontiguousarray(cost), K)
    sums = np.ascontiguousarray(cost) * 8
    for dt in (np.uint8, np.uint16, np.int32, np.int64):
        S = wide.astype(dt)[:, ::2]  # a column slice: non-contiguous rows
        for d in (
            core.hull_segments_posthoc(S, G, cost, K),
            core.hull_segments_posthoc(S, G.astype(np.uint16), sums, K, True),
        ):
            for f in SEG_FIELDS:
                np.testing.assert_array_equal(d[f], ref[f], err_msg=f"{dt} {f}")
        for b in ("numpy", "numba"):
            if b in BACKENDS:
                got = capfront._kernels.dispatch("hull_segments_posthoc", b)(
                    S, G, sums, K, True
                )
                for f in SEG_FIELDS:
                    np.testing.assert_array_equal(got[f], ref[f], err_msg=f"{b} {f}")
    with pytest.raises(ValueError, match="successes must be int64, int32"):
        core.hull_segments_posthoc(S64.astype(np.int8), G64, cost, K)
    with pytest.raises(ValueError, match="n_draws must be int64, int32"):
        core.hull_segments_posthoc(S64, G64.astype(np.float64), cost, K)
    with pytest.raises(ValueError, match="cell_cost must be float64"):
        core.hull_segments_posthoc(S64, G64, cost.astype(np.float32), K)


def test_large_prehoc_threads_and_cost_orders():
    """Enough segments for the parallel radix sort (16 blocks); prompts that share
    their models' cost order (the cached-order path) and prompts that do not (the
    sorting path) give the numpy segments and vertices for 1 and 2 threads."""
    rng = np.random.default_rng(11)
    N, L = 70_000, 9
    S = rng.integers(0, 9, size=(N, L))
    cell_cost = np.tile(np.linspace(0.1, 2.0, L), (N, 1))
    shuffled = rng.random(N) < 0.3  # some prompts with their own cost order
    cell_cost[shuffled] = rng.permutation(cell_cost[shuffled].T).T
    cell_cost[rng.random((N, L)) < 0.05] = 1.0  # ties
    G = np.where(rng.random((N, L)) < 0.05, 0, 8)
    G[:, 0] = 8
    r = capfront.EvalResults.from_counts(np.minimum(S, G), G, cost=cell_cost)
    ref = frontier(r, backend="numpy")
    assert ref.segments.n_segments > 1 << 16
    threads = capfront.get_num_threads()
    try:
        for n_threads in (1, 2):
            capfront.set_num_threads(n_threads)
            for b in BACKENDS:
                got = frontier(r, backend=b)
                _assert_same_segments(got.segments, ref.segments)
                np.testing.assert_array_equal(got.vertices, ref.vertices)
    finally:
        capfront.set_num_threads(threads)


@st.composite
def latency_tables(draw):
    N = draw(st.integers(1, 5))
    L = draw(st.integers(1, 3))
    S = np.array(draw(st.lists(st.integers(0, 2), min_size=N * L, max_size=N * L)))
    vals = st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0])
    c = np.array(draw(st.lists(vals, min_size=N * L, max_size=N * L)))
    t = np.array(draw(st.lists(vals, min_size=N * L, max_size=N * L)))
    return capfront.EvalResults.from_counts(
        S.reshape(N, L), 2, cost=c.reshape(N, L), latency=t.reshape(N, L)
    )


def _brute_force_hull(results):
    """All L^N deterministic policies and the vertices of their upper hull."""
    import itertools as it

    from capfront.pareto import _upper_hull_flags

    q = results.p_hat
    c = results.mean_cost
    t = results.mean_latency
    N, L = q.shape
    n = np.arange(N)
    pts = np.array(
        [
            [q[n, j].mean(), c[n, j].mean(), t[n, j].mean()]
            for j in map(list, it.product(range(L), repeat=N))
        ]
    )
    return pts, pts[_upper_hull_flags(pts)]


def _as_set(pts):
    return {tuple(np.round(p, 9)) for p in pts}


@settings(max_examples=80, deadline=None)
@given(latency_tables())
def test_latency_frontier_hull_matches_brute_force(results):
    """The supported (mean-latency hull) policies equal the vertices of the 3-D
    upper hull of all L^N deterministic policies."""
    lf = capfront.latency_frontier(results)
    assert lf.exact
    pts, want = _brute_force_hull(results)
    hull = lf.hull()[["quality", "cost", "latency_mean"]].to_numpy()
    assert _as_set(hull) == _as_set(want)
    supported = lf.policies[lf.policies["source"] == "supported"]
    got = supported[["quality", "cost", "latency_mean"]].to_numpy()
    assert _as_set(got) == _as_set(want)
    # every policy is on or below the hull: no weight prefers a brute-force point
    rng = np.random.default_rng(0)
    for w in rng.random((20, 3)):
        score = pts @ (w * [1, -1, -1])
        assert score.max() <= (got @ (w * [1, -1, -1])).max() + 1e-9
    # per-prompt choices reproduce the table
    q, c = results.p_hat, results.mean_cost
    n = np.arange(results.n_prompts)
    for i, ch in enumerate(lf.choices):
        row = lf.policies.iloc[i]
        assert q[n, ch].mean() == pytest.approx(row["quality"], abs=1e-12)
        assert c[n, ch].mean() == pytest.approx(row["cost"], abs=1e-12)


def test_latency_frontier_cap_and_p95_flags():
    rng = np.random.default_rng(4)
    N, L = 60, 5
    r = capfront.EvalResults.from_counts(
        rng.integers(0, 5, size=(N, L)),
        4,
        cost=rng.random((N, L)),
        latency=rng.random((N, L)),
    )
    full = capfront.latency_frontier(r)
    assert full.exact and full.n_solves > 0
    assert (full.policies["source"] == "single").sum() == L
    with pytest.warns(RuntimeWarning, match="max_policies"):
        capped = capfront.latency_frontier(r, max_policies=3)
    assert not capped.exact
    assert (capped.policies["source"] == "supported").sum() <= 3
    with pytest.raises(ValueError, match="max_policies"):
        capfront.latency_frontier(r, max_policies=0)
    # P95 flags: no candidate dominates a flagged one
    pol = full.policies
    pts = pol[["quality", "cost", "latency_p95"]].to_numpy()
    for i in np.flatnonzero(pol["pareto_p95"]):
        ge = (
            (pts[:, 0] >= pts[i, 0])
            & (pts[:, 1] <= pts[i, 1])
            & (pts[:, 2] <= pts[i, 2])
        )
        gt = (pts[:, 0] > pts[i, 0]) | (pts[:, 1] < pts[i, 1]) | (pts[:, 2] < pts[i, 2])
        assert not (ge & gt).any()
    share = full.policy(0)
    assert list(share.columns) == ["model", "k"] and len(share) == N


def _ci_width(table, col, row="all"):
    return table.loc[row, f"{col}_high"] - table.loc[row, f"{col}_low"]


def test_versus_best_single_ci_fixed_per_cell_estimates():
    """Per-cell quality / cost arrays: intervals conditional on the per-cell values
    (prompts resampled); they contain the estimate, narrow with N, and agree with
    the engine's naive intervals when the array equals p_hat."""

    def make(n, seed):
        rng = np.random.default_rng(seed)
        L = 4
        skill = np.array([0.0, 0.5, 1.0, 1.5])
        p = 1 / (1 + np.exp(-(skill - rng.normal(0, 1.5, (n, 1)))))
        S = rng.binomial(6, p)
        cost = np.array([1.0, 2.0, 4.0, 8.0]) * rng.uniform(0.8, 1.2, (n, L))
        return capfront.EvalResults.from_counts(S, 6, cost=cost)

    small, large = make(150, 0), make(1500, 0)
    widths = []
    for r in (small, large):
        q = r.p_hat.copy()
        fr = frontier(r, quality=q, cost=r.mean_cost)
        t = fr.versus_best_single(ci=0.9, n_resamples=300, seed=1)
        for col in ("error_reduction", "cost_reduction"):
            lo, hi = t.loc["all", f"{col}_low"], t.loc["all", f"{col}_high"]
            assert lo <= t.loc["all", col] <= hi
        widths.append(_ci_width(t, "error_reduction"))
        # same seed -> same interval; other seeds move it a little
        t2 = fr.versus_best_single(ci=0.9, n_resamples=300, seed=1)
        pd_cols = ["error_reduction_low", "cost_reduction_high"]
        np.testing.assert_array_equal(t[pd_cols].to_numpy(), t2[pd_cols].to_numpy())
    assert widths[1] < 0.6 * widths[0]  # ~ 1 / sqrt(10)
    # p_hat given as an array = the naive frontier: close to the engine's interval
    r = small
    naive = frontier(r).versus_best_single(ci=0.9, n_resamples=400)
    fixed = frontier(r, quality=r.p_hat.copy()).versus_best_single(
        ci=0.9, n_resamples=400
    )
    for col in ("error_reduction", "cost_reduction"):
        assert fixed.loc["all", col] == pytest.approx(naive.loc["all", col])
        for end in ("low", "high"):
            assert fixed.loc["all", f"{col}_{end}"] == pytest.approx(
                naive.loc["all", f"{col}_{end}"], abs=0.35 * _ci_width(naive, col)
            )
    with pytest.raises(ValueError, match="refit"):
        frontier(r, quality=r.p_hat.copy()).versus_best_single(ci=0.9, refit=True)
    with pytest.raises(ValueError, match="n_resamples and seed"):
        frontier(r, quality=r.p_hat.copy()).versus_best_single(ci=0.9, method="bca")


def test_versus_best_single_ci_per_benchmark_and_pgm():
    rng = np.random.default_rng(8)
    N, L = 240, 3
    S = rng.integers(0, 5, size=(N, L))
    bench = np.repeat(["a", "b", "c"], N // 3)
    r = capfront.EvalResults.from_counts(S, 4, cost=[1.0, 2.0, 3.0], benchmark=bench)
    q = np.sqrt(r.p_hat)
    t = frontier(r, quality=q).versus_best_single(ci=0.8, n_resamples=100)
    assert list(t.index) == ["a", "b", "c", "mean", "all"]
    assert np.isnan(t.loc["mean", "cost_reduction_low"])
    for b in ("a", "b", "c", "all"):
        assert t.loc[b, "cost_reduction_low"] <= t.loc[b, "cost_reduction_high"]
    if not hasattr(capfront, "debiased_oracle"):
        return
    small = capfront.EvalResults.from_counts(S[:90], 4, cost=[1.0, 2.0, 3.0])
    fr = frontier(small, quality="pgm")
    t = fr.versus_best_single(ci=0.9, n_resamples=200)
    for col in ("error_reduction", "cost_reduction"):
        lo, hi = t.loc["all", f"{col}_low"], t.loc["all", f"{col}_high"]
        if np.isfinite(t.loc["all", col]):
            assert lo - 1e-9 <= t.loc["all", col] <= hi + 1e-9
    # refit=True: the per-cell fit redone on every replicate (slow path, tiny data)
    tiny = frontier(small.select(np.arange(40)), quality="pgm")
    t = tiny.versus_best_single(ci=0.9, refit=True, n_resamples=3)
    assert t.loc["all", "cost_reduction_low"] <= t.loc["all", "cost_reduction_high"]


def test_cost_sum_check_reads_distinct_cells_only():
    """The frontier's check of the stored cost sums: a per-model row broadcast to
    (N, L) is checked once per model yet reports the cells; NaN sums alone pass
    (only an overflow to inf is refused), an inf anywhere raises in every backend."""
    from capfront._validate import check_sum_finite

    row = np.array([1.0, np.inf, 2.0])
    with pytest.raises(ValueError, match="overflows float64 at 500 cell"):
        check_sum_finite(np.broadcast_to(row, (500, 3)), "cost")
    check_sum_finite(np.array([[1.0, np.nan], [2.0, 3.0]]), "cost")
    with pytest.raises(ValueError, match="at 1 cell"):
        check_sum_finite(np.array([[1.0, np.nan], [np.inf, 3.0]]), "cost")
    r = capfront.EvalResults.from_counts(np.ones((4, 2), int), 3, cost=[1.0, 2.0])
    r.stats.cost_sum = np.where(np.eye(4, 2) > 0, np.inf, 1.0)
    for b in BACKENDS:
        with pytest.raises(ValueError, match="overflows float64 at 2 cell"):
            frontier(r, backend=b)


def test_band_without_cost_is_defined_at_the_cheapest_point():
    # unit costs: the cheapest cost is a mean of ones that can round to
    # 1 - 4e-16; the band must not be all-NaN (and warn) there
    r = np.random.default_rng(5)
    S = r.binomial(5, r.uniform(0.05, 0.95, (1500, 6)))
    res = capfront.EvalResults.from_counts(S, 5)
    fr = capfront.frontier(res, cost="unit", posthoc=True)
    fr.with_band(n_resamples=40, seed=0)
    assert np.isfinite(fr.band["lower"][0]) and np.isfinite(fr.band["upper"][0])
    assert (fr.band["lower"] <= fr.band["upper"]).all()
