"""The robustness battery's world generators (docs/scripts/worlds.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.special import logit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "scripts"))
from worlds import WORLDS, World, available, data_file, world  # noqa: E402

N, L, G = 300, 5, 8


def _need(family: str) -> None:
    if not available(family):
        pytest.skip(f"the {family} family reads {data_file(family)} (../shared absent)")


@pytest.mark.parametrize("family", sorted(WORLDS))
def test_world_shapes_truth_and_determinism(family: str) -> None:
    _need(family)
    w = WORLDS[family](N, L, G, seed=3, pop=2000)
    assert isinstance(w, World) and w.family == family
    S = w.results.successes
    assert S.shape == (N, L) and w.p.shape == (N, L)
    assert (S >= 0).all() and (S <= G).all()
    assert np.isfinite(w.p).all() and (w.p >= 0).all() and (w.p <= 1).all()
    assert w.oracle == pytest.approx(w.p.max(axis=1).mean())
    assert w.results.true_oracle == pytest.approx(w.oracle)
    assert 0.0 <= w.oracle <= 1.0
    if w.population_oracle is not None:
        assert 0.0 <= w.population_oracle <= 1.0
        # the same pool's prompt population: close to the sample's oracle
        assert abs(w.population_oracle - w.oracle) < 0.06
    # no labels except in pgm's own family (the control)
    assert (w.results.topic is not None) == (family == "pgm_own")
    again = WORLDS[family](N, L, G, seed=3, pop=2000)
    np.testing.assert_array_equal(again.results.successes, S)
    np.testing.assert_array_equal(again.p, w.p)
    assert again.population_oracle == w.population_oracle
    other = WORLDS[family](N, L, G, seed=4, pop=0)
    assert not np.array_equal(other.p, w.p)
    assert other.population_oracle is None


@pytest.mark.parametrize("family", sorted(WORLDS))
def test_naive_oracle_biased_upward(family: str) -> None:
    _need(family)
    # mean_n max_l p_hat over-estimates mean_n max_l p (Jensen); over 4 seeds
    worlds = [WORLDS[family](800, 6, 5, s, pop=0) for s in range(4)]
    bias = [w.naive - w.oracle for w in worlds]
    assert np.mean(bias) > 0.002


def test_families_differ() -> None:
    worlds = {f: WORLDS[f](N, L, G, seed=1, pop=0) for f in WORLDS if available(f)}
    # summary of the truth: mean rate, share near the ceiling, between-model
    # correlation; no two families give the same truth
    keys = {}
    for f, w in worlds.items():
        p = w.p
        keys[f] = (round(float(p.mean()), 4), round(float((p > 0.95).mean()), 4))
    assert len(set(keys.values())) == len(keys)
    ceiling = worlds["near_ceiling"].p
    assert (ceiling > 0.95).mean() > 0.4  # most cells near 1 (or near 0)


def test_cell_shocks_overdispersed() -> None:
    # counts vary more than Binomial(G, p) around the true p
    w = WORLDS["cell_shocks"](3000, 4, 20, seed=0, pop=0, rho=0.2)
    S, p = w.results.successes, w.p
    ratio = ((S - 20 * p) ** 2).mean() / (20 * p * (1 - p)).mean()
    assert ratio > 1.5
    base = WORLDS["topics"](3000, 4, 20, seed=0, pop=0)
    S, p = base.results.successes, base.p
    assert ((S - 20 * p) ** 2).mean() / (20 * p * (1 - p)).mean() < 1.15


def test_evalperf_sub_pools() -> None:
    for L_ in (4, 30):
        w = WORLDS["evalperf"](500, L_, 5, seed=2, pop=0)
        assert w.p.shape == (500, L_)
        assert 0.0 < w.p.min() and w.p.max() < 1.0  # shrunk


def test_bad_sizes() -> None:
    with pytest.raises(ValueError, match="G must be"):
        WORLDS["topics"](10, 2, 0)


def test_stress_variants() -> None:
    from worlds import VARIANTS, world

    for name, (base, kw) in VARIANTS.items():
        w = world(name)(N, L, G, seed=3, pop=0)
        assert w.family == base and all(w.params[k] == v for k, v in kw.items())
        # away from the family's defaults: other rates or other counts (the
        # shock options change only the draws) for the same seed
        d = WORLDS[base](N, L, G, seed=3, pop=0)
        assert not (
            np.array_equal(w.p, d.p)
            and np.array_equal(w.results.successes, d.results.successes)
        )
        np.testing.assert_array_equal(world(name)(N, L, G, seed=3, pop=0).p, w.p)
    assert world("topics") is WORLDS["topics"]
    with pytest.raises(KeyError, match="unknown world"):
        world("no_such_world")


def test_guessing_floors() -> None:
    # every rate sits above its prompt's guessing floor 1 / k (k in {4, 5, 10}),
    # and on the hardest prompts the weakest model is near it
    w = WORLDS["guessing"](4000, 6, 10, seed=1, pop=0)
    floor = w.p.min(axis=1)
    assert (floor >= 0.1 - 1e-12).all()
    hardest = np.argsort(w.p.max(axis=1))[:40]
    lo = w.p[hardest].min(axis=1)
    floors = np.array([0.1, 0.2, 0.25])
    above = lo[:, None] - floors[None, :]
    gap = np.where(above >= 0, above, np.inf).min(axis=1)  # to the floor below
    assert (gap < 0.05).mean() >= 0.8  # most within 5 points of a floor
    assert w.p.min() < 0.11  # ten-option prompts every model fails


def test_format_failures_cap_each_model_at_its_own_ceiling() -> None:
    # every model's rates stay below its own ceiling 1 - phi_l, and its easiest
    # prompts come close to it: the ceilings differ between models
    w = WORLDS["format_failures"](4000, 8, 10, seed=2, pop=0)
    top = w.p.max(axis=0)
    assert (top < 1.0).all() and (top > 0.88).all()
    assert top.max() - top.min() > 0.02
    easy = np.argsort(w.p.mean(axis=1))[-200:]
    assert np.allclose(w.p[easy].max(axis=0), top, atol=0.01)


def test_mmlu_pro_rates_are_smoothed_real_answers() -> None:
    # each rate is (own answer + 8 neighbours' + 1 pseudo-answer at the model's
    # subject rate) / 10: strictly inside (0, 1), and the rates keep the real
    # data's ordering of models (gemini-1.5-pro best, Llama-2-7b worst) and
    # their strong positive correlation across questions
    _need("mmlu_pro")
    from worlds import mmlu_pro_rates

    r = mmlu_pro_rates()
    assert r.shape == (10_326, 29)
    assert 0.0 < r.min() and r.max() < 1.0
    means = r.mean(axis=0)
    assert means.max() > 0.65 and means.min() < 0.2
    C = np.corrcoef(r.T)
    assert (C.sum() - 29) / (29 * 28) > 0.4
    # a draw beyond 29 models clones some with extra jitter; the pool is real
    w = WORLDS["mmlu_pro"](500, 31, 5, seed=2, pop=0)
    assert w.p.shape == (500, 31)


@pytest.mark.parametrize(
    ("family", "shape", "best", "worst"),
    [("bfcl", (1700, 71), 0.85, 0.2), ("swebench", (500, 24), 0.7, 0.15)],
)
def test_real_rates_keep_the_real_pools(family, shape, best, worst) -> None:
    # BFCL (71 models, 12 categories) and SWE-bench Verified (24 models; the
    # model whose flags the leaderboard mis-records left out), smoothed like
    # MMLU-Pro: the real spread of the models' rates and their positive
    # correlation over questions stay; the worlds' rates are capped inside (0, 1)
    _need(family)
    from worlds import real_rates

    r = real_rates(family)
    assert r.shape == shape
    assert 0.0 <= r.min() and r.max() <= 1.0
    means = r.mean(axis=0)
    assert means.max() > best and means.min() < worst
    C = np.corrcoef(r.T)
    assert (C.sum() - shape[1]) / (shape[1] * (shape[1] - 1)) > 0.2
    w = WORLDS[family](600, shape[1] + 2, 5, seed=2, pop=0)
    assert 0.0 < w.p.min() and w.p.max() < 1.0
    # a naive oracle over the whole pool well above its best model (the
    # specialisation the routing oracle exists for)
    assert w.oracle > w.p.mean(axis=0).max() + 0.03


def test_model_families_share_their_cells_deviations() -> None:
    # given the prompt (its mean logit over models removed), the logits of two
    # models of one family move together; of two families, hardly
    w = WORLDS["model_families"](4000, 6, 10, seed=2, pop=0)
    lp = logit(w.p)
    dev = lp - lp.mean(axis=1, keepdims=True)
    c = np.corrcoef(dev.T)
    within = [c[0, 1], c[0, 2], c[3, 4], c[3, 5]]  # families {0, 1, 2}, {3, 4, 5}
    between = [c[0, 3], c[1, 4], c[2, 5]]
    assert min(within) > 0.3 and max(between) < min(within) - 0.3


def test_prompt_discrimination_spreads_models_differently_per_prompt() -> None:
    # the spread of the models' logits on a prompt varies between prompts far
    # beyond what the cell noise alone gives (sd 0.4 over 8 models)
    w = WORLDS["prompt_discrimination"](4000, 8, 10, seed=2, pop=0)
    sd = logit(w.p).std(axis=1)
    lo, hi = np.quantile(sd, [0.1, 0.9])
    assert hi > 3.0 * lo and hi > 1.5


def test_mixed_decoding_has_greedy_models_with_all_or_nothing_cells() -> None:
    # half the models are greedy: their rates are 0 or 1 and their counts all
    # or nothing; the sampled models' rates are strictly inside (0, 1)
    w = WORLDS["mixed_decoding"](3000, 6, 10, seed=3, pop=0)
    binary = ((w.p == 0.0) | (w.p == 1.0)).all(axis=0)
    assert binary.sum() == 3
    inside = (w.p[:, ~binary] > 0.0) & (w.p[:, ~binary] < 1.0)
    assert inside.all()
    S = w.results.successes[:, binary]
    assert np.isin(S, [0, 10]).all() and 0.2 < (S == 10).mean() < 0.8
    # at least one greedy model even when the share rounds to none
    one = WORLDS["mixed_decoding"](200, 4, 5, seed=1, pop=0, greedy=0.01)
    assert ((one.p == 0.0) | (one.p == 1.0)).all(axis=0).sum() == 1


def test_greedy_once_gives_the_greedy_models_one_draw() -> None:
    w = world("greedy_once")(500, 4, 5, 2, pop=0)
    G = np.asarray(w.results.n_draws)
    greedy = ((w.p == 0.0) | (w.p == 1.0)).all(axis=0)
    assert greedy.sum() == 2
    assert (G[:, greedy] == 1).all() and (G[:, ~greedy] == 5).all()
