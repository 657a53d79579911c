"""The honest audit: several worlds, posterior predictive checks, one quoted number
and interval."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest

import capfront as cf
from capfront.debias import checks
from capfront.debias.audit import BIAS_FACTOR, CORRELATED_WORLDS
from capfront.debias.latent import FAMILIES
from test_latent_classes import _topics


def _unlabelled(N, L, G, seed):
    """Unlabelled latent topics, strongly specialised (no labels passed)."""
    S, _, _ = _topics(N, L, G, seed, K=4, spec=2.0)
    return cf.EvalResults.from_counts(S, G)


def test_eig_share_sees_shared_specialisation():
    own = cf.simulate(1500, 8, 10, seed=2, as_counts=True)
    spec = _unlabelled(1500, 8, 10, seed=2)
    s0 = checks.eig_share(np.asarray(own.successes), np.asarray(own.n_draws))
    s1 = checks.eig_share(np.asarray(spec.successes), np.asarray(spec.n_draws))
    assert s1 > s0 + 0.05
    assert 1 / 8 <= s0 <= 1 and s1 <= 1


def test_checks_flag_a_misspecified_world_and_pass_a_well_specified_one():
    """The one-class latent world against data from its own model (passes) and
    from unlabelled topics (fails: the residual correlation is far off)."""
    kw = dict(n_sims=6, seed=1, methods=("naive", "pgm"), latent_classes=1)
    own = cf.simulate(1500, 8, 10, seed=4, as_counts=True)
    a = cf.audit(own, worlds=("latent",), **kw)
    assert a.world_weights == {"latent": 1.0} and a.trusted
    assert a.checks["passed"].all()
    res = _unlabelled(1500, 8, 10, seed=4)
    bad = cf.audit(res, worlds=("latent",), **kw)
    assert bad.world_weights == {"latent": 0.0} and not bad.trusted
    row = bad.checks.set_index("check").loc["eig_share"]
    assert not row["passed"] and row["z"] > checks.Z_PASS
    # nothing trusted: the quoted interval is the cross-fit / naive bracket
    lo, hi = bad.quoted["ci"]
    assert lo <= bad.bracket[0] and hi >= bad.bracket[1]
    assert "cross-fit" in bad.quoted["how"]
    d = cf.debiased_oracle(res, bad.recommended, audit=bad, latent_classes=1)
    assert d.value == bad.quoted["value"] and d.ci == pytest.approx(bad.quoted["ci"])
    assert d.ci_method == bad.quoted["how"]


def test_quoted_number_is_debiased_oracle_with_the_audit():
    res = _unlabelled(800, 5, 8, seed=3)
    a = cf.audit(res, n_sims=4, seed=2)
    known = {"latent", "classes", "resampled", "posterior", "means"}
    assert set(a.world_weights) <= known
    cols = {"check", "world", "statistic", "data", "sim_mean", "sim_sd", "passed"}
    assert cols <= set(a.checks.columns)
    d = cf.debiased_oracle(res, a.recommended, audit=a)
    assert d.value == pytest.approx(a.quoted["value"], abs=1e-12)
    assert d.ci == pytest.approx(a.quoted["ci"], abs=1e-12)
    assert d.level == a.quoted["level"] == 0.95
    for note in (d.ci_method, d.ci_note, a.quoted["how"]):
        assert "audit" in note or "cross-fit" in note
        assert "SPEC" not in note and "seed 003" not in note
    # the half-width: the worst sampling SD over the passing worlds plus the
    # worst bias there, or pgm's spread under the neighbouring models
    m = a.recommended
    passing = [w for w, v in a.world_weights.items() if v > 0]
    sd = max(a.world_table.loc[(w, m), "sd"] for w in passing)
    bias = max(abs(a.world_table.loc[(w, m), "bias"]) for w in passing)
    spread = a.sensitivity["difference"].abs().max() if m == "pgm" else 0.0
    # twice the classes, and each other cell-effect family with the same classes
    assert len(a.sensitivity) == 3
    assert set(a.sensitivity["family"]) == set(FAMILIES)
    same_k = a.sensitivity["latent_classes"] == a.latent_classes
    assert set(a.sensitivity.loc[same_k, "family"]) == set(FAMILIES) - {a.family}
    # each rival's fit to the same prompts: its log-likelihood and size relative
    # to the fitted model's (twice the classes has more parameters)
    assert np.isfinite(a.sensitivity["loglik_difference"]).all()
    assert (a.sensitivity.loc[~same_k, "params_difference"] > 0).all()
    half = 1.959964 * sd + BIAS_FACTOR * max(bias, spread)
    if a.trusted and not a.corrected and 0 < d.ci[0] and d.ci[1] < 1:
        assert (d.ci[1] - d.ci[0]) / 2 == pytest.approx(half, rel=1e-5)
    assert d.ci[0] < d.value < d.ci[1]
    # without audit= (and without ci=) there is no interval: (nan, nan)
    assert all(np.isnan(cf.debiased_oracle(res, m).ci))
    # the result protocol: the audit's value / ci are the quoted ones
    assert a.value == d.value and a.ci == d.ci and a.level == d.level
    frame = a.to_frame()
    assert list(frame.index) == list(a.table.index) and "rmse" in frame
    as_dict = a.to_dict()
    assert as_dict["value"] == pytest.approx(a.value)
    json.dumps(as_dict)  # JSON-ready


def test_audit_corrected_estimate_subtracts_the_measured_bias():
    res = _unlabelled(600, 4, 8, seed=5)
    a = cf.audit(res, n_sims=4, seed=1, correct=True, methods=("naive", "jackknife"))
    if a.trusted:
        b = a.table.loc["jackknife", "bias"]
        d = cf.debiased_oracle(res, "jackknife", audit=a)
        assert d.value == pytest.approx(d.raw_value - b)
        assert d.ci == pytest.approx(a.interval(d.value, method="jackknife"))


# repeatability across calls, workers, threads and processes: tests/test_determinism.py


def test_audit_argument_errors():
    res = cf.simulate(200, 3, 5, seed=1, as_counts=True)
    with pytest.raises(ValueError, match="worlds"):
        cf.audit(res, n_sims=2, worlds=("mars",))
    with pytest.raises(ValueError, match="sim_prompts"):
        cf.audit(res, n_sims=2, sim_prompts=1)


def test_simulated_refits_skip_pairs_below_the_audit_class_threshold(monkeypatch):
    """The simulated pgm refits' posterior maximum skips (prompt, class) pairs
    below ``AUDIT_CLASS_MIN_RESP`` (1e-4; 1e-6 elsewhere): the estimates move by
    far less than 1e-5, and a large threshold does change them (it is used)."""
    import importlib

    audit_mod = importlib.import_module("capfront.debias.audit")
    res = _unlabelled(800, 6, 10, seed=3)
    kw = dict(
        n_sims=3,
        seed=1,
        methods=("naive", "pgm"),
        latent_classes=4,
        sensitivity=False,
        worlds=("classes",),
    )
    assert audit_mod.AUDIT_CLASS_MIN_RESP == 1e-4
    est = {}
    for v in (1e-6, 1e-4, 0.3):
        monkeypatch.setattr(audit_mod, "AUDIT_CLASS_MIN_RESP", v)
        a = cf.audit(res, **kw)
        est[v] = a.estimates["worlds"]["classes"]["estimates"]["pgm"]
    np.testing.assert_allclose(est[1e-4], est[1e-6], rtol=0, atol=1e-5)
    assert np.abs(est[0.3] - est[1e-6]).max() > 1e-6


def _correlated_counts(seed: int, N: int = 600, L: int = 4, G: int = 8):
    r = np.random.default_rng(seed)
    A = r.normal(0.0, 1.0, (L, 2))
    Sigma = A @ A.T + 0.3 * np.eye(L) + 0.5
    eta = (
        r.normal(0.0, 0.7, L) + r.standard_normal((N, L)) @ np.linalg.cholesky(Sigma).T
    )
    return r.binomial(G, 1.0 / (1.0 + np.exp(-eta))), G


def test_correlated_world_samples_the_fitted_covariance():
    from capfront.debias.audit import correlated_sampler
    from capfront.debias.correlated import fit_correlated

    S, G = _correlated_counts(3)
    Gm = np.full(S.shape, G)
    topic = np.arange(S.shape[0]) % 3
    fit = fit_correlated(S, Gm)
    sample = correlated_sampler(fit, topic)
    p, tp = sample(200_000, np.random.default_rng(0))
    eta = np.log(p / (1 - p))
    np.testing.assert_allclose(eta.mean(axis=0), fit.mu, atol=0.02)
    np.testing.assert_allclose(np.cov(eta.T), fit.Sigma, atol=0.05 * fit.Sigma.max())
    # topic codes of data prompts, in their proportions
    assert set(np.unique(tp)) == {0, 1, 2}
    assert np.allclose(np.bincount(tp) / len(tp), 1 / 3, atol=0.01)


def _named_audit(res, worlds: tuple, methods: tuple):
    """A two-simulation audit of the named worlds and methods (no rivals)."""
    return cf.audit(
        res, n_sims=2, seed=0, worlds=worlds, methods=methods, sensitivity=False
    )


def test_audit_with_the_correlated_world_and_method():
    S, G = _correlated_counts(4, N=400)
    res = cf.EvalResults.from_counts(S, G)
    a = _named_audit(res, ("latent", "correlated"), ("naive", "correlated"))
    assert "correlated" in a.world_weights
    assert set(a.table.index) == {"naive", "correlated"}
    assert np.isfinite(a.table.loc["correlated", "bias"])
    with pytest.raises(ValueError, match="worlds must be"):
        cf.audit(res, n_sims=2, worlds=("correlated_typo",))


def test_auto_scores_the_correlated_model_where_the_data_prefer_it():
    """``correlated="auto"``: fitted to the data; its world is simulated and its
    method scored (as pgm's rival too) only when its AIC beats pgm's and its
    world is among those refitted to; ``False`` leaves it out."""
    S, G = _correlated_counts(5, N=500, L=4, G=8)
    res = cf.EvalResults.from_counts(S, G)
    a = cf.audit(res, n_sims=4, seed=0)
    info = a.correlated
    assert info is not None and info["aic_prompts"] == 500
    assert info["preferred"] == (info["aic_difference"] < 0)
    # a covariance with a shared factor: the correlated model wins by AIC
    assert info["preferred"]
    assert "correlated" in a.world_weights
    refitted = [w for w, v in a.world_weights.items() if v > 0]
    # either world of the correlated model passing scores it
    assert info["scored"] == any(w in refitted for w in CORRELATED_WORLDS)
    if info["scored"]:
        assert "correlated" in a.table.index
        assert "correlated" in set(a.sensitivity["family"])
        d = a.data_estimates["value"]["correlated"]
        from capfront.debias.correlated import fit_correlated

        assert d == pytest.approx(fit_correlated(S, np.full(S.shape, G)).value)
    off = cf.audit(res, n_sims=4, seed=0, correlated=False)
    assert off.correlated is None and "correlated" not in off.world_weights
    assert "correlated" not in off.table.index
    assert "correlated" not in set(off.sensitivity["family"])
    with pytest.raises(ValueError, match="correlated must be"):
        cf.audit(res, n_sims=2, correlated="yes")
    with pytest.raises(ValueError, match="correlated_sims"):
        cf.audit(res, n_sims=2, correlated_sims=1)


def _cov(ev, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A covariance with eigenvalues ``ev`` and random eigenvectors ``Q``."""
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((len(ev),) * 2))
    return (Q * np.asarray(ev)) @ Q.T, Q


def test_gap_rank_finds_the_leading_block_of_a_low_rank_spectrum():
    from capfront.debias.correlated import GAP, gap_rank

    # rank 3 and a floor of small eigenvalues (a low-rank fit's spectrum)
    assert gap_rank(_cov(np.r_[60.0, 20.0, 6.0, np.full(9, 0.15)])[0]) == 3
    # smooth (independent per-cell variation): no gap
    assert gap_rank(_cov(np.geomspace(50.0, 0.5, 12))[0]) == 0
    # the difficulty alone is not structure
    assert gap_rank(_cov(np.r_[60.0, np.full(11, 0.5)])[0]) == 0
    # a gap that leaves fewer than L / 2 eigenvalues out is not a tail
    assert gap_rank(_cov(np.r_[np.geomspace(60, 20, 7), np.full(5, 0.1)])[0]) == 0
    # the factor: just above and just below it
    for f, want in ((1.01, 2), (0.99, 0)):
        ev = np.r_[60.0, 20.0, np.full(10, 20.0 / (GAP * f))]
        assert gap_rank(_cov(ev)[0]) == want
    # the first gap counts (a second, lower one does not)
    ev = np.r_[60.0, 20.0, 1.0, 0.9, np.full(8, 0.01)]
    assert gap_rank(_cov(ev)[0]) == 2


def test_truncated_covariance_keeps_the_leading_eigenpairs():
    from capfront.debias.correlated import EIGEN_RANGE, truncated_covariance

    ev = np.r_[60.0, 20.0, 6.0, np.full(9, 0.15)]
    Sig, Q = _cov(ev, seed=1)
    T = truncated_covariance(Sig, 3)
    np.testing.assert_allclose(T, T.T)
    w = np.linalg.eigvalsh(T)[::-1]
    np.testing.assert_allclose(w[:3], ev[:3], rtol=1e-10)
    np.testing.assert_allclose(w[3:], EIGEN_RANGE[0], rtol=1e-6)
    np.testing.assert_allclose(T @ Q[:, :3], Q[:, :3] * ev[:3], atol=1e-9)
    # nothing of the rest: orthogonal directions keep only the floor
    np.testing.assert_allclose(T @ Q[:, 3:], Q[:, 3:] * EIGEN_RANGE[0], atol=1e-9)


def _low_rank_counts(seed: int, N: int = 800, L: int = 8, G: int = 10):
    """``logit p = b + A z - d``: rank 2 plus the difficulty, no other variation
    (continuous specialisation; the robustness battery's ``lowrank``)."""
    r = np.random.default_rng(seed)
    A = r.normal(0.0, 1.2, (L, 2))
    eta = (
        r.normal(1.0, 0.7, L)
        + r.standard_normal((N, 2)) @ A.T
        - r.normal(0.0, 1.5, N)[:, None]
    )
    return r.binomial(G, 1.0 / (1.0 + np.exp(-eta))), G


def test_lowrank_world_samples_the_truncated_covariance():
    from capfront.debias.audit import correlated_sampler
    from capfront.debias.correlated import (
        EIGEN_RANGE,
        fit_correlated,
        gap_rank,
        truncated_covariance,
    )

    S, G = _low_rank_counts(6)
    fit = fit_correlated(S, np.full(S.shape, G))
    rank = gap_rank(fit.Sigma)
    assert rank == 3  # two skills and the difficulty
    low = truncated_covariance(fit.Sigma, rank)
    p, _ = correlated_sampler(fit, np.zeros(S.shape[0], np.int64), low)(
        200_000, np.random.default_rng(0)
    )
    eta = np.log(p / (1 - p))
    np.testing.assert_allclose(eta.mean(axis=0), fit.mu, atol=0.03)
    np.testing.assert_allclose(np.cov(eta.T), low, atol=0.02 * low.max())
    # the fit's small eigenvalues are gone from the world's covariance
    small = np.linalg.eigvalsh(fit.Sigma)[: S.shape[1] - rank].sum()
    floor = (S.shape[1] - rank) * EIGEN_RANGE[0]
    assert np.trace(fit.Sigma) - np.trace(low) == pytest.approx(small - floor)
    assert small > 0.05


def test_auto_adds_the_lowrank_world_on_low_rank_logits():
    """``correlated="auto"`` on continuous specialisation: the correlated fit's
    spectrum has a gap, so both worlds of the correlated model are simulated;
    naming ``correlated_lowrank`` simulates it alone."""
    S, G = _low_rank_counts(6)
    res = cf.EvalResults.from_counts(S, G)
    a = cf.audit(res, n_sims=4, seed=0, correlated_sims=2)
    assert a.correlated["preferred"] and a.correlated["gap_rank"] == 3
    assert {"correlated", "correlated_lowrank"} <= set(a.world_weights)
    wt = a.world_table["n_sims"]
    assert wt[("correlated_lowrank", "naive")] == 4
    # correlated_sims: that many refits in each passing world (the default
    # split would give min(n_sims, 5) = 4 each)
    passing = [w for w, v in a.world_weights.items() if v > 0]
    assert len(passing) >= 2
    assert all(wt[(w, "correlated")] == 2 for w in passing)
    named = _named_audit(res, ("latent", "correlated_lowrank"), ("naive", "correlated"))
    assert set(named.world_weights) == {"latent", "correlated_lowrank"}
    # no gap (a full covariance): the named world is left out
    S2, G2 = _correlated_counts(4, N=400)
    res2 = cf.EvalResults.from_counts(S2, G2)
    none = _named_audit(res2, ("latent", "correlated_lowrank"), ("naive",))
    assert none.correlated["gap_rank"] == 0  # (7.1, 2.0, 0.44, 0.23)
    assert set(none.world_weights) == {"latent"}


def test_correlated_refits_split_over_the_passing_worlds(monkeypatch):
    """By default the correlated model is refitted to ``CORRELATED_SIMS`` data
    sets split evenly over the passing worlds, at least ``CORRELATED_MIN_SIMS``
    in each (at most ``n_sims``); ``correlated_sims`` sets the number per world
    (test_auto_adds_the_lowrank_world_on_low_rank_logits)."""
    from capfront.debias.audit import correlated_refits

    # (the module: capfront.debias.audit the attribute is the function)
    audit_mod = importlib.import_module("capfront.debias.audit")

    assert [correlated_refits(k) for k in (1, 2, 3, 4)] == [10, 5, 5, 5]
    assert correlated_refits(0) == 10
    monkeypatch.setattr(audit_mod, "CORRELATED_SIMS", 6)
    monkeypatch.setattr(audit_mod, "CORRELATED_MIN_SIMS", 2)
    assert [correlated_refits(k) for k in (1, 2, 3, 4)] == [6, 3, 2, 2]
    S, G = _low_rank_counts(6)
    res = cf.EvalResults.from_counts(S, G)
    a = cf.audit(res, n_sims=4, seed=0)
    assert a.correlated["scored"]
    passing = [w for w, v in a.world_weights.items() if v > 0]
    wt = a.world_table["n_sims"]
    for w in a.world_weights:
        want = min(4, correlated_refits(len(passing))) if w in passing else 0
        assert wt[(w, "correlated")] == want, (w, passing)
        assert wt[(w, "pgm")] == (4 if w in passing else 0)


def test_models_are_refitted_only_in_worlds_that_pass_the_checks():
    """pgm (and the correlated model) are refitted only to the data sets of the
    worlds that pass the checks, or of the nearest world when none passes; the
    cheap methods are scored in every world."""
    from capfront.debias.audit import _worst_z

    for res in (_unlabelled(800, 6, 10, seed=3), _unlabelled(1500, 8, 10, seed=2)):
        a = cf.audit(res, n_sims=6, seed=1, correlated=False)
        wt = a.world_table["n_sims"]
        passing = [w for w, v in a.world_weights.items() if v > 0]
        if not passing:
            rows = a.checks.to_dict("records")
            passing = [min(a.world_weights, key=lambda w: _worst_z(rows, w))]
        for w in a.world_weights:
            assert wt[(w, "naive")] == 6
            assert wt[(w, "pgm")] == (6 if w in passing else 0)
            if w not in passing:
                assert np.isnan(a.world_table.loc[(w, "pgm"), "bias"])
        # the table's pgm row is made of the refitted worlds only
        assert a.table.loc["pgm", "worst_world"] in passing


def _one_class_audit(spec: float, seed: int):
    """The one-class world alone on 2,400 unlabelled-topic prompts (weak
    specialisation ``spec``), simulated data sets of 300 prompts."""
    S, _, _ = _topics(2400, 6, 8, seed, K=4, spec=spec)
    res = cf.EvalResults.from_counts(S, 8)
    kw = dict(n_sims=8, seed=3, methods=("naive",), sim_prompts=300)
    kw.update(worlds=("latent",), latent_classes=1, sensitivity=False)
    return S, cf.audit(res, **kw)


@pytest.mark.parametrize(
    "spec, seed, tier",
    [(0.3, 2, "data"), (0.3, 1, "simulations"), (0.8, 1, "none")],
)
def test_checks_judge_worlds_at_the_simulations_size_where_none_pass_at_n(
    spec, seed, tier
):
    """With more prompts than a simulated data set, a world is judged at the
    data's N (its check's spread the simulations' times sqrt(N_sim / N)); where
    none passes there, at the simulations' own size (``checks_at``), where it
    measures the errors; where none passes either, the bracket."""
    from capfront.debias.bias_correction import naive_rows

    S, a = _one_class_audit(spec, seed)
    # the naive oracle's SD over 300 prompts (the curve_G check's statistic)
    expect = naive_rows(S, np.full_like(S, 8)).std() / np.sqrt(300)
    row = a.checks.set_index("check").loc["curve_G"]
    scale = np.sqrt(300 / 2400) if tier != "simulations" else 1.0
    # eight simulations: their SD within a factor 1.6 of the expected one
    assert 0.6 * expect * scale < row["sim_sd"] < 1.6 * expect * scale
    spread = row["sim_sd"] * np.sqrt(1 + 1 / 8)
    assert row["z"] == pytest.approx((row["data"] - row["sim_mean"]) / spread)
    assert a.trusted == (tier != "none")
    assert a.checks_at == ("simulations" if tier == "simulations" else "data")
    judged = "judged at 300 prompts"
    assert (judged in a.quoted["how"]) == (tier == "simulations")
    assert (judged in a.note) == (tier == "simulations")
    if tier == "none":  # the eig_share check fails at either size
        assert abs(a.checks.set_index("check").loc["eig_share", "z"]) > 3 / scale
        assert "cross-fit" in a.quoted["how"]
