"""Models whose counts are all or nothing (greedy decoding): their cells are
taken as known (capfront.debias.known), in the estimators and in the audit."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import expit

import capfront as cf
from capfront.debias import decomposition, known
from capfront.debias.audit import _ERROR_COLUMNS
from capfront.debias.classes import fit_pgm, posterior_max


def _mixed(N: int, L: int, G: int, seed: int, n_greedy: int):
    """``n_greedy`` greedy models (rate 0 or 1: ``Bernoulli(q)``) and ``L -
    n_greedy`` sampled ones (rate ``q``), ``q = expit(b_l - d_n + u)``."""
    r = np.random.default_rng(seed)
    b = r.normal(0.5, 1.0, L)
    q = expit(b - r.normal(0.0, 1.5, N)[:, None] + r.normal(0.0, 0.8, (N, L)))
    p = q.copy()
    p[:, :n_greedy] = r.random((N, n_greedy)) < q[:, :n_greedy]
    S = r.binomial(G, p)
    res = cf.EvalResults.from_counts(S, G, models=[f"m{i}" for i in range(L)])
    return res, float(p.max(axis=1).mean())


def test_known_models_are_the_all_or_nothing_ones():
    res, _ = _mixed(400, 5, 6, seed=1, n_greedy=2)
    S, G = res.successes, np.full(res.successes.shape, 6)
    assert known.known_models(S, G).tolist() == [True, True, False, False, False]
    # one draw per cell says nothing: no model is known
    assert not known.known_models(np.minimum(S, 1), np.ones_like(G)).any()
    # too few observed cells
    G_few = G.copy()
    G_few[known.MIN_KNOWN_CELLS - 1 :, 0] = 0
    assert known.known_models(np.where(G_few > 0, S, 0), G_few).tolist()[:2] == [
        False,
        True,
    ]
    split = known.split_known(S, G)
    solved = (S[:, :2] == 6).any(axis=1)
    np.testing.assert_array_equal(split.solved, solved)
    assert split.share_solved == pytest.approx(solved.mean())
    assert known.split_known(S[:, 2:], G[:, 2:]) is None


@pytest.mark.parametrize(
    "method", ["naive", "bootstrap_bc", "double_bc", "jackknife", "extrapolation"]
)
def test_count_methods_already_split_exactly(method):
    # the identity the audit's mapping rests on: for these estimators a known
    # model's 0 or G cells are exact, so the estimate on all prompts is
    # s1 + s0 x the estimate of the other models on the unsolved prompts
    res, _ = _mixed(600, 5, 6, seed=2, n_greedy=2)
    split = known.split_known(res.successes, np.full(res.successes.shape, 6))
    sub = res.select(prompts=split.rest_prompts, models=split.rest_models)
    s1 = split.share_solved
    full = cf.debiased_oracle(res, method).value
    part = cf.debiased_oracle(sub, method).value
    assert full == pytest.approx(s1 + (1 - s1) * part, abs=1e-9)


def test_pgm_takes_the_known_cells_and_gets_closer_to_the_truth():
    errs_split, errs_plain = [], []
    for seed in range(3):
        res, truth = _mixed(1500, 4, 5, seed=10 + seed, n_greedy=2)
        d = cf.debiased_oracle(res, "pgm")
        assert d.diagnostics["known_models"] == ["m0", "m1"]
        split = known.split_known(res.successes, np.full(res.successes.shape, 5))
        values = decomposition(res, "pgm").values[:, 0]
        assert (values[split.solved] == 1.0).all()
        sub = res.select(prompts=split.rest_prompts, models=split.rest_models)
        np.testing.assert_allclose(
            values[~split.solved], decomposition(sub, "pgm").values[:, 0]
        )
        # the plain fit of every model (what pgm did before)
        plain = posterior_max(
            fit_pgm(res.successes, np.full(res.successes.shape, 5)),
            None,
            cell_means=False,
        )[0].mean()
        errs_split.append(abs(d.value - truth))
        errs_plain.append(abs(plain - truth))
    assert np.mean(errs_split) < np.mean(errs_plain)
    assert np.mean(errs_split) < 0.004


def test_audit_maps_the_reduced_audit_back():
    res, truth = _mixed(800, 4, 6, seed=4, n_greedy=2)
    a = cf.audit(res, n_sims=3, seed=1)
    assert a.known_models == ("m0", "m1") and "all or nothing" in a.note
    split = known.split_known(res.successes, np.full(res.successes.shape, 6))
    s0 = 1.0 - split.share_solved
    inner = cf.audit(
        res.select(prompts=split.rest_prompts, models=split.rest_models),
        n_sims=3,
        seed=1,
    )
    assert a.recommended == inner.recommended
    for c in _ERROR_COLUMNS:
        np.testing.assert_allclose(a.table[c], s0 * inner.table[c])
    for m, v in inner.data_estimates["value"].items():
        assert a.data_estimates["value"][m] == pytest.approx(1 - s0 + s0 * v)
    lo, hi = inner.ci
    assert a.ci == pytest.approx((1 - s0 + s0 * lo, 1 - s0 + s0 * hi))
    # one number, one interval: debiased_oracle with the audit quotes them
    d = cf.debiased_oracle(res, a.recommended, audit=a)
    assert d.value == pytest.approx(a.value, abs=1e-12)
    assert d.ci == pytest.approx(a.ci, abs=1e-12)
    assert a.ci[0] <= truth <= a.ci[1]
    json.dumps(a.to_dict())


def test_audit_of_known_models_only_is_the_exact_naive_oracle():
    res, truth = _mixed(300, 3, 4, seed=5, n_greedy=3)
    a = cf.audit(res, n_sims=2)
    assert a.n_sims == 0 and "naive oracle is exact" in a.note
    assert a.value == pytest.approx(truth) and a.ci[1] - a.ci[0] < 0.2
    assert cf.debiased_oracle(res, "pgm").value == pytest.approx(truth)


def test_the_pgm_frontier_reads_every_cell_with_known_models():
    # quality="pgm" reads the posterior means of every cell: the reduced fit's
    # where it was fitted, the counts' rates elsewhere
    res, _ = _mixed(500, 4, 6, seed=6, n_greedy=1)
    d = cf.debiased_oracle(res, "pgm")
    pm = d.diagnostics["posterior_mean_p"]
    assert pm.shape == (500, 4) and np.isfinite(pm).all()
    split = known.split_known(res.successes, np.full((500, 4), 6))
    np.testing.assert_array_equal(pm[:, 0], res.successes[:, 0] / 6)
    assert d.diagnostics["max_of_posterior_means"] == pytest.approx(pm.max(1).mean())
    solved = split.solved
    np.testing.assert_array_equal(pm[solved, 1:], res.successes[solved, 1:] / 6)
    front = cf.frontier(res, quality="pgm", cost="unit")
    assert front.to_frame()["quality"].max() == pytest.approx(pm.max(1).mean())


def _greedy_once(N: int, L: int, G: int, seed: int):
    """One greedy run (one draw: its rate is 0 or 1) of model ``m0`` beside
    ``L - 1`` sampled models of ``G`` draws."""
    r = np.random.default_rng(seed)
    q = expit(r.normal(0.5, 1.0, L) - r.normal(0.0, 1.5, N)[:, None])
    p = q.copy()
    p[:, 0] = r.random(N) < q[:, 0]
    Gc = np.full((N, L), G)
    Gc[:, 0] = 1
    S = r.binomial(Gc, p)
    res = cf.EvalResults.from_counts(S, Gc, models=[f"m{i}" for i in range(L)])
    return res, float(p.max(axis=1).mean())


def test_declared_known_models_of_one_draw():
    # one draw cannot show that a model is greedy: the user says so, and the
    # oracle is then 1 wherever it solved the prompt
    res, truth = _greedy_once(1200, 4, 6, seed=7)
    with pytest.warns(UserWarning, match=r"known_models=\['m0'\]"):
        plain = cf.debiased_oracle(res, "pgm")
    assert plain.diagnostics.get("known_models") is None
    d = cf.debiased_oracle(res, "pgm", known_models=["m0"])
    assert d.diagnostics["known_models"] == ["m0"]
    assert abs(d.value - truth) < 0.01
    # every method splits the same way; the audit too, and quotes them
    jk = cf.debiased_oracle(res, "jackknife", known_models="m0")
    split = known.split_known(
        res.successes, res.n_draws, known.declared_known(res, ["m0"])
    )
    sub = res.select(prompts=split.rest_prompts, models=split.rest_models)
    s1 = split.share_solved
    assert jk.value == pytest.approx(
        s1 + (1 - s1) * cf.debiased_oracle(sub, "jackknife").value, abs=1e-12
    )
    a = cf.audit(res, n_sims=2, seed=0, known_models=["m0"])
    assert a.known_models == ("m0",)
    q = cf.debiased_oracle(res, a.recommended, audit=a)
    assert q.value == pytest.approx(a.value, abs=1e-12)
    with pytest.raises(ValueError, match="at least 2 generations.*run greedily"):
        cf.audit(res, n_sims=2)
    # a bootstrap interval of the split estimate
    b = cf.debiased_oracle(res, "pgm", known_models=["m0"], ci=0.9, n_resamples=50)
    assert b.ci[0] <= d.value <= b.ci[1]


def test_declared_known_models_are_checked():
    res, _ = _greedy_once(200, 3, 5, seed=8)
    with pytest.raises(ValueError, match="no model 'zz'"):
        cf.debiased_oracle(res, "pgm", known_models=["zz"])
    with pytest.raises(ValueError, match=r"model 'm1' has counts strictly between"):
        cf.debiased_oracle(res, "pgm", known_models=["m0", "m1"])
    with pytest.raises(ValueError, match="leave it out of known_models"):
        cf.audit(res, known_models=["m2"])
