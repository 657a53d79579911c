"""The logit Student-t cell effect (``family="logit_t"``), pgm's family choice,
and the posterior world's joint posterior from the registry E-steps."""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit, logsumexp

import capfront as cf
from capfront.debias import classes, latent
from capfront.debias.posterior_world import _joint_posterior


def _t_counts(N: int, L: int, G: int, seed: int, df: float = 2.5, tau: float = 0.6):
    """Counts of ``logit p = b_l - d_n + tau t_df`` (heavy-tailed cell effects)."""
    r = np.random.default_rng(seed)
    b = r.normal(1.0, 0.7, L)
    d = r.normal(0.0, 1.2, N)
    p = expit(b[None, :] - d[:, None] + tau * r.standard_t(df, (N, L)))
    Gm = np.full((N, L), G, np.int64)
    return r.binomial(Gm, p), Gm, p


def _backends() -> list[str]:
    return [b for b in ("cpp", "numba", "numpy") if b in cf.available_backends()]


def test_t_cell_likelihood_is_the_binomial_t_mixture():
    # the tabulated marginal probability of a count, against quadrature of
    # Binomial(G, sigma(eta + tau e)) over the t_3 density of e
    tables = latent.Tables(np.array([6]))
    tau = 0.8
    logh = tables.logh("logit_t", tau)  # (7 counts, n_eta)
    e = np.linspace(-300, 300, 120_001)
    dens = stats.t.pdf(e, latent.LOGIT_T_DF)
    for eta_i in (60, 140, 200, 260):  # eta = -8, 0, 6, 12
        eta = latent.ETA_GRID[eta_i]
        p = expit(eta + tau * e)
        exact = [np.trapezoid(stats.binom.pmf(s, 6, p) * dens, e) for s in range(7)]
        np.testing.assert_allclose(np.exp(logh[:, eta_i]), exact, rtol=2e-3, atol=1e-9)
    # the cell effect's mass below, above and inside the t grid sums to one
    tails = latent.grid_tails("logit_t", tau, latent.ETA_GRID, -16.025, 16.025)
    np.testing.assert_allclose(tails.sum(axis=-1), 1.0, atol=1e-12)
    assert tails[-1, 1] > 0.01  # eta = 14: a real atom at p = 1


def test_t_posterior_max_agrees_across_backends_and_strides():
    S, G, _ = _t_counts(40, 5, 6, seed=1)
    f = latent.fit_latent(S, G, family="logit_t", max_iter=20)
    assert f.family == "logit_t" and f.scale > 0.2
    out = {b: latent.posterior_max(f, b) for b in _backends()}
    ref = out[_backends()[0]]
    for b, o in out.items():
        for x, y in zip(ref, o, strict=True):
            np.testing.assert_allclose(x, y, atol=1e-8, rtol=0, err_msg=b)
    # the auto stride (coarse t grid) against every node on the full grid
    fine = latent.posterior_max(f, _backends()[0], stride=1)[0]
    np.testing.assert_allclose(ref[0], fine, atol=2e-6, rtol=0)


def test_auto_family_picks_the_t_on_heavy_tails_and_the_normal_on_normal_cells():
    S, G, p = _t_counts(1500, 8, 10, seed=2, df=2.0, tau=0.7)
    fit = classes.fit_pgm(S, G, latent_classes=1)
    assert fit.family == "logit_t"
    ll = fit.family_loglik
    assert ll["logit_t"] > ll["logitnormal"] + classes.FAMILY_MARGIN
    # the scale of a t_2 cell effect seen through a t_3 (robust: 0.7 +- 0.15)
    assert 0.5 < fit.scale < 0.9
    # the posterior maximum is closer to the truth than the normal's
    truth = p.max(axis=1).mean()
    e_t = classes.posterior_max(fit)[0].mean()
    f_n = classes.fit_pgm(S, G, latent_classes=1, family="logitnormal")
    e_n = classes.posterior_max(f_n)[0].mean()
    assert abs(e_t - truth) < abs(e_n - truth)
    res = cf.simulate(1500, 8, 10, seed=3)  # logit-normal cells
    assert classes.fit_pgm(*_counts(res), latent_classes=1).family == "logitnormal"


def _beta_class_counts(N: int, L: int, G: int, seed: int, c: float = 3.0):
    """Counts of latent prompt classes whose cells' rates are Beta: ``p[n, l] ~
    Beta(m[k_n, l] c, (1 - m[k_n, l]) c)``, independently per cell."""
    r = np.random.default_rng(seed)
    m = r.uniform(0.3, 0.9, (3, L))
    q = m[r.integers(0, 3, N)]
    p = r.beta(q * c, (1.0 - q) * c)
    Gm = np.full((N, L), G, np.int64)
    return r.binomial(Gm, p), Gm, p


def test_auto_family_takes_the_beta_on_beta_rates_as_the_audit_does():
    S, G, p = _beta_class_counts(600, 5, 10, seed=7)
    fit = classes.fit_pgm(S, G)
    assert fit.family == "betabinomial"
    ll = fit.family_loglik
    assert set(ll) == set(classes.AUTO_FAMILIES)
    logit = max(ll[f] for f in classes.LOGIT_FAMILIES)
    assert ll["betabinomial"] > logit + classes.FAMILY_MARGIN
    # the logit families alone (what the audit asks for: it fits the Beta itself)
    fam, _, ll2 = classes.choose_family(S, G, None, families=classes.LOGIT_FAMILIES)
    assert fam in classes.LOGIT_FAMILIES and set(ll2) == set(classes.LOGIT_FAMILIES)
    with pytest.raises(ValueError, match="families"):
        classes.choose_family(S, G, None, families=("normal",))
    # debiased_oracle's pgm and the audit's pgm: the same family, the same number
    res = cf.EvalResults.from_arrays(
        scores=(np.arange(10)[None, None, :] < S[:, :, None]).astype(np.uint8)
    )
    d = cf.debiased_oracle(res, "pgm")
    assert d.diagnostics["fit"].family == "betabinomial"
    a = cf.audit(res, n_sims=4, seed=0)
    assert a.family == "betabinomial"
    # one rule (the package exports the function audit under the module's name)
    audit_module = importlib.import_module("capfront.debias.audit")
    assert audit_module.AUTO_MARGIN == classes.FAMILY_MARGIN
    assert a.data_estimates["value"]["pgm"] == pytest.approx(d.value, abs=1e-9)
    # the Beta fit is nearer the truth than the logit family's on these data
    truth = p.max(axis=1).mean()
    f_logit = classes.fit_pgm(S, G, family=fam)
    e_logit = classes.posterior_max(f_logit)[0].mean()
    assert abs(d.value - truth) < abs(e_logit - truth)


def _counts(res):
    from capfront.debias._input import counts

    return counts(res, "test")


def test_t_fit_recovers_its_own_simulation():
    # the simulated cell effect is tau t_3: its share beyond 4 tau, exactly
    r = np.random.default_rng(5)
    p = latent._draw_cell("logit_t", 0.9, np.zeros(200_000), r)
    far = ((p > expit(3.6)) | (p < expit(-3.6))).mean()
    assert far == pytest.approx(2 * stats.t.sf(4.0, latent.LOGIT_T_DF), abs=2e-3)
    # data simulated from a t fit: the refit recovers its scale
    S, G, _ = _t_counts(600, 6, 8, seed=4)
    f = dataclasses.replace(latent.fit_latent(S, G, family="logit_t"), scale=0.9)
    p, _ = f.simulate_p(4000, r, np.array([1.0]))
    S2 = r.binomial(np.full(p.shape, 8), p)
    f2 = latent.fit_latent(S2, np.full(p.shape, 8), family="logit_t")
    assert f2.scale == pytest.approx(0.9, abs=0.12)


def test_unknown_family_is_refused():
    S, G, _ = _t_counts(20, 2, 3, seed=0)
    with pytest.raises(ValueError, match="family"):
        classes.fit_pgm(S, G, family="student")
    with pytest.raises(ValueError, match="family"):
        latent.fit_latent(S, G, family="auto")


def _joint_posterior_reference(fit, rows):
    """``P(k, d_j | S_n)`` by brute force over the table (NumPy)."""
    K, J = fit.n_classes, len(latent.D_GRID)
    table = latent._cell_table(fit.tables.logh(fit.family, fit.scale), fit.theta)
    log_w = np.log(np.maximum(fit.weights, 1e-300))
    log_pi = (
        np.log(np.maximum(fit.class_weights, 1e-300))
        if K > 1
        else np.zeros((int(fit.topic.max()) + 1, 1))
    )
    out = np.empty((len(rows), K * J))
    for i, n in enumerate(rows):
        lp = np.empty((K, J))
        for k in range(K):
            col = fit.topic[n] * K + k
            cells = [
                table[l, col, fit.cell_row[n, l]]
                for l in range(fit.cell_row.shape[1])
                if fit.cell_row[n, l] >= 0
            ]
            lp[k] = log_w + np.sum(cells, axis=0) + log_pi[fit.topic[n], k]
        out[i] = np.exp(lp.reshape(-1) - logsumexp(lp))
    return out


@pytest.mark.parametrize("K", [1, 2])
def test_joint_posterior_is_the_brute_force_posterior(K):
    S, G, _ = _t_counts(80, 4, 5, seed=6)
    G[3, 1] = 0
    S[3, 1] = 0
    fit = classes.fit_pgm(S, G, latent_classes=K, family="logit_t", max_iter=5)
    assert fit.n_classes == K
    rows = np.array([0, 3, 7, 79])
    got = _joint_posterior(fit, rows)
    ref = _joint_posterior_reference(fit, rows)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-9)
    # (the E-step kernels set posteriors below 1e-12 to 0)
    np.testing.assert_allclose(got, ref, atol=1e-11, rtol=1e-9)


def test_class_fit_from_a_lean_one_class_fit(monkeypatch):
    """Many prompts: the one-class fit keeps no posteriors; the class fit's first
    M-step recomputes them in blocks and lands where the stored ones do."""
    S, G, _ = _t_counts(700, 4, 6, seed=7)
    base = latent.fit_latent(S, G, max_iter=6)
    ref = classes.fit_classes(S, G, None, 2, base=base, max_iter=3)
    monkeypatch.setattr(latent, "LEAN_ABOVE", 0)
    monkeypatch.setattr(latent, "LEAN_BLOCK", 256)
    lean = latent.fit_latent(S, G, max_iter=6)
    assert lean.resp is None
    got = classes.fit_classes(S, G, None, 2, base=lean, max_iter=3)
    np.testing.assert_allclose(got.theta, ref.theta, atol=1e-9)
    assert got.loglik == pytest.approx(ref.loglik, rel=1e-12)
