"""EvalResults builders and checks, chunk merging, naive oracles, single models,
and the simulator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capfront as cf
import naive
from capfront import EvalResults, SufficientStats

# Hand-made example: 3 prompts x 3 models x 2 generations, per-model cost [1, 3, 2].
#   prompt 0: m0 [1, 0]  m1 [1, 1]  m2 [1, 1]   -> m1, m2 tie at 1.0: cheaper m2
#   prompt 1: m0 [0, 0]  m1 [0, 1]  m2 [0, 0]   -> m1 (0.5)
#   prompt 2: m0 [1, 1]  m1 [0, 0]  m2 [1, 0]   -> m0 (1.0)
SCORES = np.array(
    [
        [[1, 0], [1, 1], [1, 1]],
        [[0, 0], [0, 1], [0, 0]],
        [[1, 1], [0, 0], [1, 0]],
    ],
    dtype=np.uint8,
)
MODEL_COST = np.array([1.0, 3.0, 2.0])


@pytest.fixture
def hand(backend) -> EvalResults:
    return EvalResults.from_arrays(
        SCORES, cost=MODEL_COST, models=["m0", "m1", "m2"], backend=backend
    )


# ------------------------------------------------------------------ builders


def test_from_arrays_basic(hand):
    assert (hand.n_prompts, hand.n_models) == (3, 3)
    assert list(hand.models) == ["m0", "m1", "m2"]
    assert list(hand.prompts) == ["0", "1", "2"]
    np.testing.assert_array_equal(hand.successes, SCORES.sum(axis=2))
    np.testing.assert_array_equal(hand.n_draws, np.full((3, 3), 2))
    assert hand.n_draws.dtype == np.int32  # compact: a broadcast view of G
    assert hand.successes.dtype == np.int32
    np.testing.assert_array_equal(hand.p_hat, SCORES.mean(axis=2))
    np.testing.assert_array_equal(hand.mean_cost, np.tile(MODEL_COST, (3, 1)))
    assert hand.mean_latency is None
    assert hand.is_binary and hand.is_complete
    assert (hand.min_draws, hand.max_draws) == (2, 2)
    assert hand.scores is not None and hand.scores.shape == (3, 3, 2)
    assert "N=3, L=3, G=2, binary, cost" in repr(hand)


def test_from_arrays_two_dimensional_scores(backend):
    res = EvalResults.from_arrays(SCORES[:, :, 0], backend=backend)
    np.testing.assert_array_equal(res.n_draws, np.ones((3, 3)))
    np.testing.assert_array_equal(res.successes, SCORES[:, :, 0])


@pytest.mark.parametrize("shape", ["like_scores", "cell", "model"])
def test_cost_and_latency_shapes_agree(shape, backend):
    rng = np.random.default_rng(0)
    per_model = np.array([0.5, 2.0, 1.0])
    cell = rng.uniform(1, 2, size=(3, 3))
    full = {
        "like_scores": np.repeat(cell[:, :, None], 2, axis=2),
        "cell": cell,
        "model": per_model,
    }[shape]
    want = per_model[None, :] * np.ones((3, 3)) if shape == "model" else cell
    res = EvalResults.from_arrays(SCORES, cost=full, latency=full, backend=backend)
    np.testing.assert_allclose(res.mean_cost, want, rtol=1e-15)
    np.testing.assert_allclose(res.mean_latency, want, rtol=1e-15)
    np.testing.assert_allclose(res.stats.latency_max, want, rtol=1e-15)
    assert res.latency is not None and res.latency.shape == SCORES.shape


def test_from_arrays_ragged_mask(backend):
    mask = np.ones(SCORES.shape, bool)
    mask[0, 0, 1] = False  # one generation fewer
    mask[1, 2, :] = False  # model 2 not run on prompt 1
    cost = np.arange(18, dtype=float).reshape(SCORES.shape)
    res = EvalResults.from_arrays(SCORES, mask=mask, cost=cost, backend=backend)
    np.testing.assert_array_equal(res.n_draws, [[1, 2, 2], [2, 2, 0], [2, 2, 2]])
    assert res.p_hat[0, 0] == 1.0
    assert np.isnan(res.p_hat[1, 2]) and np.isnan(res.mean_cost[1, 2])
    assert res.mean_cost[0, 0] == 0.0  # only generation 0 counts
    assert not res.is_complete and res.min_draws == 1
    with pytest.raises(ValueError, match="missing"):
        res.require_complete("this estimator")
    with pytest.raises(ValueError, match="at least 2 generations"):
        res.require_draws(2, "this estimator")


def test_from_counts():
    S = np.array([[3, 0], [10, 7]])
    res = EvalResults.from_counts(S, 10, cost=[1.0, 2.0], models=["a", "b"])
    np.testing.assert_array_equal(res.n_draws, np.full((2, 2), 10))
    np.testing.assert_allclose(res.p_hat, S / 10)
    np.testing.assert_array_equal(res.max_score, [[1, 0], [1, 1]])
    assert res.is_binary and res.scores is None
    ragged = EvalResults.from_counts(S, np.array([[5, 0], [10, 7]]))
    assert not ragged.observed[0, 1]
    for bad, match in (
        ((S, 2), "between 0 and n_draws"),
        ((-S, 10), "between 0 and n_draws"),
        ((S, np.array([10, 10, 10])), "does not match"),
        ((S[0], 10), r"shaped \(N, L\)"),
        ((np.zeros((0, 2)), 1), "empty"),
        ((S + 0.5, 10), "whole numbers"),
        ((S, -1), "n_draws must be >= 0"),
        ((S.astype(str), 10), "integers"),
    ):
        with pytest.raises(ValueError, match=match):
            EvalResults.from_counts(*bad)


def test_graded_scores_are_kept(backend):
    graded = np.array([[[0.25, 0.75], [1.0, 0.5]]])
    res = EvalResults.from_arrays(graded, backend=backend)
    assert not res.is_binary
    np.testing.assert_allclose(res.p_hat, [[0.5, 0.75]])
    np.testing.assert_allclose(res.max_score, [[0.75, 1.0]])
    assert cf.naive_oracle(res, "prehoc").value == 0.75
    assert cf.naive_oracle(res, "posthoc").value == 1.0
    with pytest.raises(ValueError, match="binary"):
        cf.naive_oracle(res, "union")
    with pytest.raises(ValueError, match="binary"):
        cf.single_models(res, best_of_k=[1])


BAD_INPUTS = [
    ({"scores": np.array([[[np.nan, 1.0]]])}, "NaN or inf"),
    ({"scores": np.array([[[np.inf, 1.0]]])}, "NaN or inf"),
    ({"scores": np.array([[[1.5, 1.0]]])}, r"outside|\[0, 1\]"),
    ({"scores": np.array([[[-0.5, 1.0]]])}, r"outside|\[0, 1\]"),
    ({"scores": np.array([[[2, 1]]], np.uint8)}, r"outside|\[0, 1\]"),
    ({"cost": np.array([[[-1.0, 1.0]]])}, "cost"),
    ({"cost": np.array([[[np.nan, 1.0]]])}, "cost"),
    ({"latency": np.array([-1.0])}, "latency"),
    ({"latency": np.array([[[1.0, np.inf]]])}, "latency"),
    ({"cost": np.ones(3)}, r"cost must be shaped"),
    ({"latency": np.ones((1, 1, 3))}, r"latency must be shaped"),
    ({"mask": np.ones((1, 1, 3), bool)}, "mask must be shaped"),
    ({"mask": np.ones((1, 1, 2), int)}, "mask must be boolean"),
    ({"mask": np.zeros((1, 1, 2), bool)}, "no result for any model"),
    ({"models": ["a", "b"]}, "models must have 1 entries"),
    ({"prompts": ["p", "q"]}, "prompts must have 1 entries"),
    ({"benchmark": ["x", "y"]}, "benchmark must have 1 entries"),
    ({"scores": np.zeros((0, 3, 2))}, "empty"),
    ({"scores": np.zeros((2, 0, 2))}, "empty"),
    ({"scores": np.array([[["a", "b"]]])}, "dtype"),
    ({"scores": np.array([[["0", "1"]]], dtype=object)}, "dtype"),
    ({"scores": np.zeros((1, 1, 1, 2))}, r"shaped \(N, L, G\)"),
    ({"cost": np.array([["x", "y"]])}, "cost must be numeric"),
]


@pytest.mark.parametrize(("kwargs", "match"), BAD_INPUTS)
def test_bad_input_names_the_problem(kwargs, match, backend):
    kwargs = {"scores": np.array([[[0, 1]]], np.uint8), **kwargs}
    scores = kwargs.pop("scores")
    with pytest.raises(ValueError, match=match):
        EvalResults.from_arrays(scores, backend=backend, **kwargs)


def test_duplicate_labels_rejected():
    with pytest.raises(ValueError, match="models has duplicate"):
        EvalResults.from_arrays(SCORES, models=["a", "a", "b"])
    with pytest.raises(ValueError, match="prompts has duplicate"):
        EvalResults.from_arrays(SCORES, prompts=["p", "q", "p"])


def test_select_and_by_benchmark(hand):
    sub = hand.select([2, 0], models=["m2", "m0"])
    assert list(sub.models) == ["m2", "m0"] and list(sub.prompts) == ["2", "0"]
    np.testing.assert_array_equal(sub.successes, [[1, 2], [2, 1]])
    assert sub.scores.shape == (2, 2, 2)
    with pytest.raises(ValueError, match="unknown model"):
        hand.select(models=["nope"])
    res = EvalResults.from_arrays(SCORES, benchmark=["a", "b", "a"])
    parts = res.by_benchmark()
    assert sorted(parts) == ["a", "b"] and parts["a"].n_prompts == 2


# ------------------------------------------------------------ chunk merging


def stats_of(scores, mask, latency, prompts, models, backend):
    return cf.sufficient_stats(
        scores,
        mask,
        np.ones(scores.shape) * 2.0,
        latency,
        prompts=np.asarray(prompts, dtype=object),
        models=np.asarray(models, dtype=object),
        backend=backend,
    )


@settings(max_examples=30)
@given(seed=st.integers(0, 2**32 - 1), n_chunks=st.integers(1, 4))
def test_merge_of_chunks_equals_the_whole(seed, n_chunks):
    rng = np.random.default_rng(seed)
    N, L, G = 7, 3, 4
    scores = (rng.random((N, L, G)) < 0.5).astype(np.float64)
    mask = rng.random((N, L, G)) < 0.8
    mask[:, 0, 0] = True  # every prompt has a result
    prompts = [f"p{i}" for i in range(N)]
    models = ["a", "b", "c"]
    backend = cf.available_backends()[0]
    latency = rng.exponential(size=(N, L, G))
    whole = stats_of(scores, mask, latency, prompts, models, backend)
    # split the draws of every cell at random into n_chunks parts, and give each
    # chunk a random subset of prompts and models: a prompt (and a cell) can be
    # split across chunks, and a chunk may lack models
    owner = rng.integers(0, n_chunks, size=(N, L, G))
    parts = []
    for c in range(n_chunks):
        keep_p = np.flatnonzero((owner == c).any(axis=(1, 2)))
        keep_m = np.flatnonzero((owner == c).any(axis=(0, 2)))
        if len(keep_p) == 0:
            continue
        sub = np.ix_(keep_p, keep_m, np.arange(G))
        parts.append(
            stats_of(
                scores[sub],
                (mask & (owner == c))[sub],
                latency[sub],
                [prompts[i] for i in keep_p],
                [models[i] for i in keep_m],
                backend,
            )
        )
    merged = parts[0]
    for part in parts[1:]:
        merged = merged.merge(part)
    concat = SufficientStats.concat(parts)
    for combined in (merged, concat):
        order_p = [list(combined.prompts).index(p) for p in prompts]
        order_m = [list(combined.models).index(m) for m in models]
        for name in whole.arrays():
            want = getattr(whole, name)  # derived sum_sq / max_score included
            got = getattr(combined, name)[np.ix_(order_p, order_m)]
            np.testing.assert_allclose(got, want, rtol=1e-14, err_msg=name)
        assert combined.flags == whole.flags
        res = EvalResults.from_stats(combined)
        assert cf.naive_oracle(res).value == pytest.approx(
            cf.naive_oracle(EvalResults.from_stats(whole)).value, abs=1e-15
        )


def test_merge_needs_labels_and_matching_columns():
    x = np.ones((2, 2, 2))
    a = cf.sufficient_stats(x)
    b = cf.sufficient_stats(x, prompts=["p", "q"], models=["a", "b"])
    with pytest.raises(ValueError, match="labels"):
        a.merge(b)
    c = cf.sufficient_stats(x, cost=x, prompts=["p", "q"], models=["a", "b"])
    with pytest.raises(ValueError, match="cost"):
        b.merge(c)
    bad = cf.sufficient_stats(x * np.nan, prompts=["r", "s"], models=["a", "b"])
    with pytest.raises(ValueError, match="NaN"):
        EvalResults.from_stats(b.merge(bad))


# --------------------------------------------------------------- naive oracles


def test_naive_oracles_by_hand(hand):
    pre = cf.naive_oracle(hand, "prehoc")
    assert pre.value == pytest.approx(2.5 / 3, abs=1e-15)
    assert list(pre.choice) == [2, 1, 0]  # tie on prompt 0 goes to cheaper m2
    assert pre.cost == pytest.approx((2 + 3 + 1) / 3)
    assert float(pre) == pre.value
    post = cf.naive_oracle(hand, "posthoc")
    assert post.value == 1.0
    assert post.cost == pytest.approx(2 * MODEL_COST.sum())  # every generation paid
    union = cf.naive_oracle(hand, "union")
    assert union.value == pytest.approx((1 + 0.5 + 1) / 3, abs=1e-15)
    assert union.cost == pytest.approx(MODEL_COST.sum())
    with pytest.raises(ValueError, match="unknown oracle kind"):
        cf.naive_oracle(hand, "oracle")


def test_prehoc_ties_without_cost_go_to_the_first_model(backend):
    res = EvalResults.from_arrays(SCORES, backend=backend)
    pre = cf.naive_oracle(res, "prehoc")
    assert list(pre.choice) == [1, 1, 0]
    assert np.isnan(pre.cost)


def test_oracles_skip_models_not_run(backend):
    mask = np.ones(SCORES.shape, bool)
    mask[1, 1, :] = False  # the only model that solved prompt 1 was not run on it
    res = EvalResults.from_arrays(SCORES, mask=mask, cost=MODEL_COST, backend=backend)
    pre = cf.naive_oracle(res, "prehoc", on="all")
    assert pre.value == pytest.approx(2 / 3) and pre.n_prompts == 3
    assert pre.choice[1] == 0  # tie at 0 between m0 and m2: m0 is cheaper
    post = cf.naive_oracle(res, "posthoc", on="all")
    assert post.value == pytest.approx(2 / 3)
    assert post.cost == pytest.approx((12 + 6 + 12) / 3)
    assert cf.naive_oracle(res, "union", on="all").value == pytest.approx(2 / 3)
    # the default compares on the prompts every model ran (0 and 2)
    common = cf.naive_oracle(res, "prehoc")
    both = res.select([0, 2])
    assert common.n_prompts == 2 and len(common.choice) == 2
    assert common.value == cf.naive_oracle(both, "prehoc").value
    for kind in ("posthoc", "union"):
        got = cf.naive_oracle(res, kind)
        assert (got.value, got.cost) == pytest.approx(
            (cf.naive_oracle(both, kind).value, cf.naive_oracle(both, kind).cost)
        )


@settings(max_examples=30)
@given(seed=st.integers(0, 2**32 - 1))
def test_naive_oracles_match_the_loops(seed):
    rng = np.random.default_rng(seed)
    N, L, G = rng.integers(1, 6), rng.integers(1, 5), rng.integers(1, 5)
    scores = (rng.random((N, L, G)) < rng.random()).astype(np.uint8)
    mask = rng.random((N, L, G)) < 0.8
    mask[:, rng.integers(0, L), 0] = True
    cost = rng.choice([1.0, 2.0], size=(N, L))  # ties in p_hat and in cost
    res = EvalResults.from_arrays(scores, mask=mask, cost=cost)
    value, spent, choice = naive.prehoc_oracle(res.p_hat, res.mean_cost)
    pre = cf.naive_oracle(res, "prehoc", on="all")
    assert pre.value == pytest.approx(value, abs=1e-15)
    assert pre.cost == pytest.approx(spent, abs=1e-15)
    assert list(pre.choice) == choice
    post = cf.naive_oracle(res, "posthoc", on="all").value
    assert post == pytest.approx(naive.posthoc_oracle(scores, mask), abs=1e-15)
    union = cf.naive_oracle(res, "union", on="all").value
    assert union == pytest.approx(naive.union_oracle(res.p_hat), abs=1e-15)
    # on="common": the same loops on the prompts every model (with a result) ran
    ran = res.observed[:, res.observed.any(axis=0)]
    keep = ran.all(axis=1)
    if keep.any():
        value, _, _ = naive.prehoc_oracle(res.p_hat[keep], res.mean_cost[keep])
        assert cf.naive_oracle(res).value == pytest.approx(value, abs=1e-15)
    else:
        with pytest.raises(ValueError, match="no prompt was run by every model"):
            cf.naive_oracle(res)


@settings(max_examples=25)
@given(seed=st.integers(0, 2**32 - 1))
def test_naive_oracles_permutation_invariant(seed):
    rng = np.random.default_rng(seed)
    res = cf.simulate(30, 5, 4, n_topics=2, seed=int(rng.integers(1000)))
    pp = rng.permutation(res.n_prompts)
    pm = rng.permutation(res.n_models)
    shuffled = EvalResults.from_arrays(
        res.scores[pp][:, pm],
        cost=res.mean_cost[pp][:, pm],
        latency=res.mean_latency[pp][:, pm],
        models=res.models[pm],
        prompts=res.prompts[pp],
    )
    for kind in ("prehoc", "posthoc", "union"):
        a, b = cf.naive_oracle(res, kind), cf.naive_oracle(shuffled, kind)
        assert a.value == pytest.approx(b.value, abs=1e-14), kind
        assert a.cost == pytest.approx(b.cost, rel=1e-14), kind
    a = cf.single_models(res)
    b = cf.single_models(shuffled).loc[a.index]
    pd.testing.assert_frame_equal(a, b, rtol=1e-14)


# --------------------------------------------------------------- single models


def test_single_models_table(backend):
    rng = np.random.default_rng(4)
    N, L, G = 40, 3, 6
    scores = (rng.random((N, L, G)) < np.array([0.2, 0.5, 0.8])[:, None]).astype(
        np.uint8
    )
    latency = rng.exponential(size=(N, L, G))
    cost = rng.uniform(0.5, 1.5, size=(N, L))
    res = EvalResults.from_arrays(
        scores, cost=cost, latency=latency, models=["x", "y", "z"], backend=backend
    )
    table = cf.single_models(res, best_of_k=[1, 3, 6])
    assert list(table.index) == ["z", "y", "x"]  # most accurate first
    table = table.loc[["x", "y", "z"]]
    np.testing.assert_allclose(table["accuracy"], scores.mean(axis=(0, 2)))
    np.testing.assert_array_equal(table["accuracy_own"], table["accuracy"])
    np.testing.assert_allclose(table["mean_cost"], cost.mean(axis=0))
    cell_latency = latency.mean(axis=2)
    np.testing.assert_allclose(table["mean_latency"], cell_latency.mean(axis=0))
    np.testing.assert_allclose(
        table["p95_latency"], np.percentile(cell_latency, 95, axis=0)
    )
    np.testing.assert_array_equal(table["n_prompts"], [N] * 3)
    np.testing.assert_allclose(table["pass@1"], table["accuracy"], atol=1e-15)
    S = scores.sum(axis=2)
    for k in (3, 6):
        want = [
            np.mean([float(naive.pass_at_k(G, int(S[n, l]), k)) for n in range(N)])
            for l in range(L)
        ]
        np.testing.assert_allclose(table[f"pass@{k}"], want, atol=1e-14)
    # pass@G: the prompt is solved when any draw was right
    np.testing.assert_allclose(table["pass@6"], (S > 0).mean(axis=0))
    with pytest.raises(ValueError, match="at least 7 generations"):
        cf.single_models(res, best_of_k=[7])
    name, acc, c = cf.best_single(res)
    assert name == "z" and acc == table.loc["z", "accuracy"]
    assert c == table.loc["z", "mean_cost"]


def test_single_models_ragged_and_best_single_ties(backend):
    mask = np.ones(SCORES.shape, bool)
    mask[1, 1, :] = False
    res = EvalResults.from_arrays(
        SCORES, mask=mask, cost=MODEL_COST, models=["m0", "m1", "m2"], backend=backend
    )
    table = cf.single_models(res, on="all")
    np.testing.assert_array_equal(table["n_prompts"], [3, 2, 3])
    np.testing.assert_allclose(table["accuracy"], [0.5, 0.5, 0.5])
    # all tie at 0.5 on their own prompts: the cheapest wins
    assert cf.best_single(res, on="all") == ("m0", 0.5, 1.0)
    # on the prompts every model ran (0 and 2): m0 and m2 0.75, m1 0.5
    table = cf.single_models(res)
    np.testing.assert_allclose(table["accuracy"], [0.75, 0.75, 0.5])
    assert list(table.index) == ["m0", "m2", "m1"]
    assert cf.best_single(res) == ("m0", 0.75, 1.0)
    np.testing.assert_array_equal(table.loc[["m0", "m1", "m2"], "n_prompts"], [3, 2, 3])
    np.testing.assert_allclose(
        table.loc[["m0", "m1", "m2"], "accuracy_own"], [0.5, 0.5, 0.5]
    )
    both = cf.single_models(res.select([0, 2]))
    pd.testing.assert_series_equal(table["accuracy"], both["accuracy"].loc[table.index])
    assert cf.best_single(res) == cf.best_single(res.select([0, 2]))


# ------------------------------------------------------------------ simulate


def test_simulate_shapes_truth_and_seed():
    res = cf.simulate(50, 4, 6, n_topics=3, seed=7)
    assert (res.n_prompts, res.n_models, res.max_draws, res.min_draws) == (50, 4, 6, 6)
    assert res.scores.shape == (50, 4, 6) and res.is_binary
    assert res.truth_p.shape == (50, 4)
    assert np.all((res.truth_p > 0) & (res.truth_p < 1))
    assert res.has_cost and res.has_latency
    assert np.all(res.mean_cost > 0) and np.all(res.mean_latency > 0)
    assert res.topic is not None and set(res.topic) <= {0, 1, 2}
    assert res.true_oracle == pytest.approx(res.truth_p.max(axis=1).mean())
    again = cf.simulate(50, 4, 6, n_topics=3, seed=7)
    np.testing.assert_array_equal(again.scores, res.scores)
    np.testing.assert_array_equal(again.truth_p, res.truth_p)
    other = cf.simulate(50, 4, 6, n_topics=3, seed=8)
    assert not np.array_equal(other.truth_p, res.truth_p)
    # the draws follow the truth: pooled z-score of successes is small
    z = (res.successes - 6 * res.truth_p).sum() / np.sqrt(
        (6 * res.truth_p * (1 - res.truth_p)).sum()
    )
    assert abs(z) < 5


def test_simulate_as_counts():
    counts = cf.simulate(300, 3, 20, seed=3, as_counts=True)
    draws = cf.simulate(300, 3, 20, seed=3, as_counts=False)
    assert counts.scores is None and draws.scores is not None
    np.testing.assert_array_equal(counts.truth_p, draws.truth_p)  # same truth
    np.testing.assert_array_equal(counts.n_draws, np.full((300, 3), 20))
    # both are Binomial(20, p): their means agree within noise
    diff = counts.successes.mean() - draws.successes.mean()
    assert abs(diff) < 5 * np.sqrt(2 * 20 * 0.25 / (300 * 3))


def test_simulate_naive_oracle_is_biased_upward():
    gaps = []
    for seed in range(5):
        res = cf.simulate(400, 8, 5, n_topics=4, specialisation=0.5, seed=seed)
        gaps.append(cf.naive_oracle(res, "prehoc").value - res.true_oracle)
    # measured before capfront: +0.4 to +14 points at G = 5..20 (largest for
    # similar models)
    assert np.mean(gaps) > 0.02
    assert min(gaps) > 0
    # and the bias shrinks with more draws
    big = cf.simulate(400, 8, 50, n_topics=4, specialisation=0.5, seed=0)
    assert cf.naive_oracle(big, "prehoc").value - big.true_oracle < gaps[0]


def test_simulate_bad_arguments():
    for kwargs, match in (
        ({"n_prompts": 0}, "n_prompts"),
        ({"within_cell_correlation": 1.0}, "within_cell_correlation"),
        ({"specialisation": -1.0}, "specialisation"),
        ({"topic_weights": np.array([0.5, 0.6])}, "topic_weights"),
    ):
        args = {"n_prompts": 10, "n_models": 2, "n_draws": 3, "n_topics": 2, **kwargs}
        with pytest.raises(ValueError, match=match):
            cf.simulate(**args)


def test_a_model_run_on_no_prompt():
    S = np.array([[1, 0], [2, 0]])
    res = EvalResults.from_counts(
        S, np.array([[2, 0], [2, 0]]), cost=[1.0, 2.0], latency=[1.0, 2.0]
    )
    table = cf.single_models(res, best_of_k=[1, 2])  # NaN, and no warning
    assert table.loc["model_1"].drop("n_prompts").isna().all()
    assert list(table.index) == ["model_0", "model_1"]  # NaN last
    assert res.coverage_note == (
        "model(s) ['model_1'] ran no prompt: left out of the single models and "
        "the oracles"
    )
    assert table.loc["model_1", "n_prompts"] == 0
    assert cf.best_single(res) == ("model_0", 0.75, 1.0)
    assert cf.naive_oracle(res).value == 0.75
    assert cf.naive_oracle(res, "union").cost == 1.0


def test_valid_draws_is_the_mask_or_all_draws():
    scores = np.zeros((3, 2, 4), dtype=np.uint8)
    mask = np.ones((3, 2, 4), dtype=bool)
    mask[0, 1, 2:] = False
    assert cf.EvalResults.from_arrays(scores).valid_draws.all()
    np.testing.assert_array_equal(
        cf.EvalResults.from_arrays(scores, mask=mask).valid_draws, mask
    )
    assert cf.EvalResults.from_counts(np.zeros((3, 2)), 4).valid_draws is None
