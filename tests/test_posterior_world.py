"""The audit's ``posterior`` world: the data's prompts, cell rates drawn from
their posterior under the fitted model."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import capfront as cf
from capfront.debias._input import counts
from capfront.debias.latent import _cells, fit_latent
from capfront.debias.posterior_world import (
    E_GRID,
    _cell_draws,
    _QuantileTable,
    posterior_sampler,
)


@pytest.mark.parametrize("family", ["logitnormal", "betabinomial", "logit_t"])
def test_posterior_draws_of_data_from_the_model_have_the_models_distribution(family):
    # data drawn from the fitted model itself: a posterior draw given each
    # prompt's counts is then a draw from the prior (the model's own prompts)
    S, G = counts(cf.simulate(800, 4, 8, seed=2), "test")
    f = fit_latent(S, G, None, family=family)
    floor = 0.05 if family == "betabinomial" else 0.3  # a real cell effect
    f = dataclasses.replace(f, scale=max(f.scale, floor))
    r = np.random.default_rng(1)
    p, _ = f.simulate_p(800, r, np.array([1.0]))
    S2 = r.binomial(G, p)
    tables, cell_row = _cells(S2, G)
    f2 = dataclasses.replace(
        f, tables=tables, cell_row=cell_row, topic=np.zeros(800, np.int64)
    )
    q, label, Gq = posterior_sampler(f2, S2, G, np.arange(800))(
        20000, np.random.default_rng(3)
    )
    assert q.shape == (20000, 4) and Gq.shape == q.shape and (label == 0).all()
    assert ((q >= 0) & (q <= 1)).all()
    # averaged over the source prompts, a posterior draw is centred on the
    # prompts' true rates (posterior SD per prompt ~0.1: ~0.004 over 800)
    assert q.max(axis=1).mean() == pytest.approx(p.max(axis=1).mean(), abs=0.012)
    np.testing.assert_allclose(q.mean(axis=0), p.mean(axis=0), atol=0.012)
    # a posterior draw follows its prompt's counts: more successes, higher rate
    src_rate = (S2 / G).mean(axis=1)
    assert np.corrcoef(src_rate, p.mean(axis=1))[0, 1] > 0.5


def test_tabulated_cell_posterior_matches_the_direct_grid():
    s = np.array([[0.0, 3.0, 8.0, 5.0]])
    g = np.array([[8.0, 8.0, 8.0, 10.0]])
    eta = np.array([[0.37, -1.23, 2.05, 0.0]])
    f = dataclasses.make_dataclass("F", ["family", "scale"])("logitnormal", 1.2)
    n = 15000
    rep = lambda a: np.repeat(a, n, axis=0)  # noqa: E731
    table = _QuantileTable(1.2, rep(s).astype(np.int64), rep(g).astype(np.int64))
    a = _cell_draws(f, rep(eta), rep(s), rep(g), np.random.default_rng(0), table)
    b = _cell_draws(f, rep(eta), rep(s), rep(g), np.random.default_rng(1))
    np.testing.assert_allclose(a.mean(axis=0), b.mean(axis=0), atol=7e-3)
    np.testing.assert_allclose(a.std(axis=0), b.std(axis=0), atol=7e-3)
    # the exact posterior mean of p by quadrature on a fine grid
    e = np.linspace(-8, 8, 4001)
    x = eta[0][:, None] + 1.2 * e[None, :]
    pp = 1 / (1 + np.exp(-x))
    w = np.exp(-0.5 * e**2) * pp ** s[0][:, None] * (1 - pp) ** (g - s)[0][:, None]
    exact = (w * pp).sum(axis=1) / w.sum(axis=1)
    np.testing.assert_allclose(b.mean(axis=0), exact, atol=7e-3)
    assert len(E_GRID) > 20


def test_audit_simulates_the_posterior_world_and_checks_it():
    res = cf.simulate(300, 3, 6, seed=5)
    a = cf.audit(
        res, n_sims=4, seed=1, methods=("naive", "pgm"), worlds=("latent", "posterior")
    )
    assert set(a.world_weights) == {"latent", "posterior"}
    assert set(a.checks.world) == {"latent", "posterior"}
    row = a.world_table.loc[("posterior", "pgm")]
    assert np.isfinite(row["bias"]) and row["rmse"] >= abs(row["bias"])


def test_means_world_rates_are_the_fits_posterior_means():
    # the means world's prompts are data prompts, each with its posterior cell
    # means under the fit (the same numbers posterior_max gives on all prompts),
    # its draws per cell and its label
    from capfront.debias.classes import fit_pgm, posterior_max
    from capfront.debias.posterior_world import means_sampler, posterior_means

    S, G = counts(cf.simulate(600, 5, 8, n_topics=3, seed=4), "test")
    for k in (1, 3):
        f = fit_pgm(S, G, None, latent_classes=k, family="logitnormal")
        full = posterior_max(dataclasses.replace(f), cell_means=True)[2]
        rows = np.array([5, 0, 599, 5, 17])
        np.testing.assert_allclose(posterior_means(f, rows), full[rows], atol=1e-12)
        p, label, Gp = means_sampler(f, G, rows)(50, np.random.default_rng(0))
        assert p.shape == Gp.shape == (50, 5) and (label == 0).all()
        # every drawn prompt is one of the rows' posterior-mean vectors
        dist = np.abs(p[:, None, :] - full[rows][None]).max(axis=2)
        assert (dist.min(axis=1) < 1e-12).all()


def _wide_then_flat(N: int, L: int, G: int, seed: int):
    """Prompts whose cells vary widely (logit SD 1.8) and, for 30% of them, hard
    prompts where every model sits at 0.04-0.06: a cell effect wider than the
    hard prompts' cells vary."""
    from scipy.special import expit

    r = np.random.default_rng(seed)
    b, d = r.normal(0.5, 0.7, L), r.normal(-0.5, 1.5, N)
    p = expit(b[None] - d[:, None] + r.normal(0, 1.8, (N, L)))
    hard = r.random(N) < 0.3
    p[hard] = 0.04 + 0.02 * r.random((hard.sum(), L))
    return cf.EvalResults.from_counts(r.binomial(G, p), G), float(p.max(1).mean())


def test_means_world_measures_the_bias_the_posterior_world_borrows_away():
    # pgm's fitted cell effect is too wide for the hard prompts, so its
    # posterior maximum is high there; the posterior world draws its cells with
    # that same width and measures almost nothing, the means world reproduces
    # the data's checks and measures most of the real error
    res, truth = _wide_then_flat(800, 8, 8, seed=1)
    kw = dict(n_sims=6, seed=1, methods=("naive", "jackknife", "pgm"))
    a = cf.audit(res, worlds=("posterior", "means"), **kw)
    err = a.data_estimates["value"]["pgm"] - truth
    assert err > 0.008
    assert a.world_weights == {"posterior": 1.0, "means": 1.0}
    assert abs(a.world_table.loc[("posterior", "pgm"), "bias"]) < 0.3 * err
    assert a.world_table.loc[("means", "pgm"), "bias"] > 0.5 * err
    # pgm's worst case is now the means world's, and the quoted interval takes
    # the error in (wider than the posterior world alone makes it)
    assert a.table.loc["pgm", "rmse"] > 0.5 * err
    lo, hi = a.quoted["ci"]
    assert lo <= truth <= hi
    b = cf.audit(res, worlds=("posterior",), **kw)
    assert b.quoted["ci"][1] - b.quoted["ci"][0] < hi - lo


def test_means_world_fails_the_checks_on_the_models_own_data():
    # data from pgm's own model: the posterior means are too alike (their
    # naive oracle's curve is off the data's) and the checks leave them out
    res = cf.simulate(800, 8, 8, seed=3, cell_sd=0.8, as_counts=True)
    a = cf.audit(
        res, n_sims=6, seed=1, worlds=("posterior", "means"), methods=("naive", "pgm")
    )
    assert a.world_weights == {"posterior": 1.0, "means": 0.0}
    bad = a.checks[(a.checks.world == "means") & ~a.checks.passed]
    assert len(bad) >= 1
    # a failed means world changes nothing: the audit without it, to the bit
    # (its random stream is its own; no refits on its data sets)
    b = cf.audit(res, n_sims=6, seed=1, worlds=("posterior",), methods=("naive", "pgm"))
    assert a.quoted["value"] == b.quoted["value"] and a.quoted["ci"] == b.quoted["ci"]
    assert a.recommended == b.recommended
