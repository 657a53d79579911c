"""pgm with a floor and a ceiling on the rates, ``p = f + (c - f) sigma(t)``:
the posterior maximum against numerical integration in every backend, the
choice of ``(f, c)`` by likelihood on data with and without them, and the
errors for bounds that make no sense."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import trapezoid
from scipy.special import expit

import capfront as cf
from capfront._backend import available_backends
from capfront.debias import classes, latent
from capfront.debias.posterior_world import posterior_sampler


def _bounded_world(N, L, G, seed, floor, ceiling, tau=0.6):
    """``p = f + (c - f) expit(b_l - d_n + u)``: every model guesses at the
    floor on the hardest prompts and none is sure above the ceiling."""
    r = np.random.default_rng(seed)
    b = 1.0 + 0.6 * r.standard_normal(L)
    d = 2.0 * r.standard_normal(N)
    u = tau * r.standard_normal((N, L))
    p = floor + (ceiling - floor) * expit(b[None] - d[:, None] + u)
    S = r.binomial(G, p)
    return S, np.full((N, L), G), float(p.max(axis=1).mean())


@pytest.mark.parametrize("backend", available_backends())
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (0.07, 0.95)])
def test_bounded_posterior_max_matches_numerical_integration(backend, bounds):
    """With the difficulty known, each cell's posterior of ``t`` is its normal
    prior times the Binomial likelihood at ``p(t)``; ``E[max_l p] = f + (c - f)
    int (1 - prod_l F_l) dx`` with ``x = sigma(t)``, and ``E[p]`` the posterior
    mean, both on a fine grid."""
    rng = np.random.default_rng(3)
    N, L, G = 6, 3, 10
    S = rng.integers(0, G + 1, (N, L))
    S[0], S[1], S[2] = G, [G, G - 1, 0], 0
    Gm = np.full_like(S, G)
    fit = latent.fit_latent(
        S, Gm, np.zeros(N, np.int64), family="logitnormal", max_iter=1, bounds=bounds
    )
    assert fit.bounds == bounds
    j = int(np.argmin(abs(latent.D_GRID + 1.0)))
    resp = np.zeros((N, len(latent.D_GRID)))
    resp[:, j] = 1.0
    t = np.linspace(-30, 30, 120001)
    x = expit(t)
    f, c = bounds
    p_t = f + (c - f) * x
    for tau, th in [(0.5, [3.0, 1.0, -1.0]), (1.5, [6.0, 0.5, 2.0])]:
        theta = np.array(th)[:, None]
        fi = dataclasses.replace(fit, theta=theta, scale=tau, resp=resp)
        eta = theta[:, 0] - latent.D_GRID[j]
        want_max, want_mean = [], []
        for n in range(N):
            cdfs, means = [], []
            for m in range(L):
                w = stats.norm.pdf(t, eta[m], tau) * stats.binom.pmf(S[n, m], G, p_t)
                w /= w.sum()
                cdfs.append(np.cumsum(w))
                means.append(float((w * p_t).sum()))
            prod = np.prod(cdfs, axis=0)
            want_max.append(f + (c - f) * trapezoid((1 - prod) * x * (1 - x), t))
            want_mean.append(means)
        # the t grid's discretisation (step 0.05) costs about 3e-5 with or
        # without bounds; a floor or ceiling misapplied would cost ~f = 0.07
        emax, emax2, pmean = latent.posterior_max(fi, backend)
        np.testing.assert_allclose(emax, want_max, atol=1e-4)
        np.testing.assert_allclose(pmean, want_mean, atol=1e-5)
        assert np.all(emax2 >= emax**2 - 1e-12)
        assert np.all((emax > f) & (emax < c))


def test_bounds_are_chosen_on_bounded_data_and_cut_the_error():
    """Data with a floor of 0.05 and a ceiling of 0.96 (no model reaches 1):
    the walk lands within a grid step of them, and pgm with the chosen bounds
    is far closer to the truth than without (which reads the compressed ends
    as a wide cell effect and overshoots the maximum)."""
    S, G, truth = _bounded_world(2000, 8, 20, seed=5, floor=0.05, ceiling=0.96)
    b, fit, ll = classes.choose_bounds(S, G, None, family="logitnormal")
    assert 0.03 <= b[0] <= 0.08 and 0.95 <= b[1] <= 0.97, b
    assert fit.bounds == b and ll[b] > ll[latent.UNBOUNDED] + 50
    auto = classes.pgm_decomposition(S, G, latent_classes=1, family="logitnormal")
    plain = classes.pgm_decomposition(
        S, G, latent_classes=1, family="logitnormal", bounds=(0, 1)
    )
    assert auto.diagnostics["bounds"] == b
    err_auto = abs(auto.estimate() - truth)
    err_plain = abs(plain.estimate() - truth)
    assert err_auto < 0.002 < err_plain, (err_auto, err_plain)


def test_bounds_stay_at_zero_and_one_on_logistic_data():
    """pgm's own model (rates reach 0 and 1): no floor or ceiling pays, and
    the estimate is bit for bit the unbounded one."""
    res = cf.simulate(1500, 6, 10, n_topics=1, cell_sd=0.5, seed=2, as_counts=True)
    S = np.rint(res.successes).astype(np.int64)
    G = np.broadcast_to(res.n_draws, S.shape).astype(np.int64)
    b, _, ll = classes.choose_bounds(S, G, None, family="logitnormal")
    assert b == latent.UNBOUNDED and len(ll) >= 3
    auto = classes.pgm_decomposition(S, G, latent_classes=1, family="logitnormal")
    plain = classes.pgm_decomposition(
        S, G, latent_classes=1, family="logitnormal", bounds=(0.0, 1.0)
    )
    assert auto.estimate() == plain.estimate()


def test_bounded_worlds_stay_within_the_bounds():
    """The fitted model's fresh prompts and the posterior world's draws are
    rates between the floor and the ceiling, and a refit warm-started at the
    fit keeps its bounds."""
    S, G, _ = _bounded_world(800, 5, 10, seed=1, floor=0.1, ceiling=0.9)
    fit = classes.fit_pgm(
        S, G, latent_classes=1, family="logitnormal", bounds=(0.1, 0.9)
    )
    rng = np.random.default_rng(0)
    p, _ = fit.simulate_p(5000, rng, np.array([1.0]))
    assert p.min() >= 0.1 and p.max() <= 0.9 and p.max() - p.min() > 0.7
    draw = posterior_sampler(fit, S, G, np.arange(len(S)))
    q, _, _ = draw(3000, rng)
    assert q.min() >= 0.1 and q.max() <= 0.9
    refit = classes.fit_pgm(S[:400], G[:400], init=fit, max_iter=3)
    assert refit.bounds == (0.1, 0.9)
    # the pgm_own-style simulated counts average to the fitted rates
    assert abs(p.mean() - S.mean() / 10) < 0.03


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"bounds": (0.5, 0.4)}, "0 <= floor < ceiling <= 1"),
        ({"bounds": (-0.1, 1.0)}, "0 <= floor < ceiling <= 1"),
        ({"bounds": (0.0, 1.2)}, "0 <= floor < ceiling <= 1"),
        ({"bounds": "high"}, "bounds must be 'auto'"),
        ({"bounds": (0.1,)}, "pair"),
    ],
)
def test_bad_bounds_are_refused(kw, match):
    S, G, _ = _bounded_world(200, 3, 5, seed=0, floor=0.0, ceiling=1.0)
    kw = {"latent_classes": 1, "family": "logitnormal", **kw}
    with pytest.raises(ValueError, match=match):
        classes.fit_pgm(S, G, **kw)


def test_bounded_beta_fits_estimate_but_have_no_posterior_world():
    """The Beta family takes explicit bounds (the audit's rival fits), stays
    unbounded under ``"auto"``, and its posterior world, conjugate only without
    bounds, says so instead of drawing wrong rates."""
    S, G, _ = _bounded_world(600, 4, 10, seed=4, floor=0.05, ceiling=0.95)
    auto = classes.fit_pgm(S, G, latent_classes=1, family="betabinomial")
    assert auto.bounds == latent.UNBOUNDED
    fit = classes.fit_pgm(
        S, G, latent_classes=1, family="betabinomial", bounds=(0.05, 0.95)
    )
    e = classes.posterior_max(fit)[0]
    assert np.all((e > 0.05) & (e < 0.95))
    draw = posterior_sampler(fit, S, G, np.arange(len(S)))
    with pytest.raises(ValueError, match="needs bounds"):
        draw(10, np.random.default_rng(0))


def test_debiased_oracle_takes_bounds():
    """The public option: ``debiased_oracle(res, "pgm", bounds=...)`` and the
    chosen bounds in the result's diagnostics."""
    S, G, _ = _bounded_world(1500, 6, 20, seed=2, floor=0.05, ceiling=0.95)
    res = cf.EvalResults.from_counts(S, G)
    r = cf.debiased_oracle(res, "pgm", bounds=(0.05, 0.95), latent_classes=1)
    assert r.diagnostics["bounds"] == (0.05, 0.95)
    auto = cf.debiased_oracle(res, "pgm", latent_classes=1)
    assert auto.diagnostics["bounds"] != latent.UNBOUNDED


def test_bounds_reach_every_prompt_when_hyperparameters_come_from_a_subsample(
    monkeypatch,
):
    """Above ``SUBSAMPLE_ABOVE`` prompts the class fit's hyperparameters come
    from a subsample and the tables are rebuilt for all prompts: at the
    chosen bounds, not at (0, 1)."""
    monkeypatch.setattr(classes, "SUBSAMPLE_ABOVE", 1000)
    monkeypatch.setattr(classes, "SUBSAMPLE_SIZE", 800)
    S, G, _ = _bounded_world(1500, 6, 10, seed=7, floor=0.05, ceiling=0.94)
    fit = classes.fit_pgm(
        S, G, latent_classes=2, family="logitnormal", bounds=(0.05, 0.94)
    )
    assert fit.cell_row.shape[0] == 1500
    assert fit.bounds == (0.05, 0.94)
    e = classes.posterior_max(fit)[0]
    assert np.all((e > 0.05) & (e < 0.94))


def test_bounds_the_classes_do_not_need_are_dropped():
    """Three latent classes of prompts with very different aptitudes and no
    bounds: the one-class walk reads their mixture as a floor, the class fit
    does not gain from it, and the fit is unbounded."""
    r = np.random.default_rng(8)
    N, L, G = 2000, 4, 5
    cls = r.integers(0, 3, N)
    skill = np.stack([r.normal(m, 2.0, L) for m in (2.5, -0.5, 1.0)])
    d = r.normal(-1.0, 1.5, N)
    p = expit(skill[cls] - d[:, None] + 0.3 * r.standard_normal((N, L)))
    S = r.binomial(G, p)
    fit = classes.fit_pgm(S, np.full_like(S, G), family="logitnormal")
    assert fit.bounds == latent.UNBOUNDED and fit.n_classes > 1
    ll = fit.bounds_loglik
    (b, l_b), (_, l_0) = ll["classes"].items()
    # the one-class walk proposed bounds it had gained from ...
    assert b != latent.UNBOUNDED
    assert ll[b] > ll[latent.UNBOUNDED] + classes.BOUNDS_MARGIN
    # ... and the classes gave them back
    assert not l_b > l_0 + classes.BOUNDS_MARGIN


def test_audit_carries_the_bounds_into_its_worlds_and_note():
    """The audit's pgm fit takes the data's floor and ceiling, names them in
    its note, and quotes an interval that covers the truth of this data set."""
    S, G, truth = _bounded_world(1500, 6, 20, seed=11, floor=0.05, ceiling=0.95)
    res = cf.EvalResults.from_counts(S, G)
    a = cf.audit(res, n_sims=10, seed=0)
    assert a.bounds != latent.UNBOUNDED
    assert "floor" in a.note and "ceiling" in a.note
    q = cf.debiased_oracle(res, a.recommended, audit=a)
    assert q.ci[0] <= truth <= q.ci[1], (q.ci, truth)
    # the same model without the bounds is a rival at half weight
    sens = a.sensitivity.set_index("bounds")
    row = sens.loc["0:1"]
    assert row["weight"] == 0.5 and row["latent_classes"] == a.latent_classes
    assert a.model_spread("pgm") >= 0.5 * abs(row["difference"])
