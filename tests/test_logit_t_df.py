"""The fitted degrees of freedom of the logit Student-t cell effect
(``family="logit_t"``, :func:`capfront.debias.latent.fit_t_df`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

import capfront as cf
from capfront.debias import classes, latent, posterior_world


def _counts(N: int, L: int, G: int, seed: int, df: float | None, tau: float):
    """Counts of ``logit p = b_l - d_n + u``, ``u ~ tau t_df`` (``df=None``:
    ``u ~ N(0, tau^2)``)."""
    r = np.random.default_rng(seed)
    b = r.normal(1.0, 0.7, L)
    d = r.normal(0.0, 1.2, N)
    u = r.standard_normal((N, L)) if df is None else r.standard_t(df, (N, L))
    p = expit(b[None, :] - d[:, None] + tau * u)
    Gm = np.full((N, L), G, np.int64)
    return r.binomial(Gm, p), Gm


def _backends() -> list[str]:
    return [b for b in ("cpp", "numba", "numpy") if b in cf.available_backends()]


def test_fitted_df_follows_the_tails():
    # t cells with 1.5 degrees of freedom: the walk goes down from 3;
    # logit-normal cells: up
    S, G = _counts(500, 8, 10, seed=1, df=1.5, tau=0.6)
    heavy = latent.fit_latent(S, G, family="logit_t", tol=2e-5)
    assert heavy.t_df <= 2.0
    assert heavy.t_df_loglik[heavy.t_df] == max(heavy.t_df_loglik.values())
    S, G = _counts(500, 8, 10, seed=2, df=None, tau=1.0)
    light = latent.fit_latent(S, G, family="logit_t", tol=2e-5)
    assert light.t_df >= 5.0
    # a fixed t_df is kept, and refits from a t fit keep its degrees of freedom
    fixed = latent.fit_latent(S, G, family="logit_t", t_df=1.5, max_iter=3)
    assert fixed.t_df == 1.5 and fixed.t_df_loglik == {}
    assert latent.fit_latent(S, G, family="logit_t", init=heavy, max_iter=2).t_df == (
        heavy.t_df
    )
    # the other families report none
    assert latent.fit_latent(S, G, max_iter=2).t_df is None


def test_backends_agree_with_a_free_df(threads, monkeypatch):
    monkeypatch.setattr(latent, "T_DF_MARGIN", 0.0)  # (small data: any gain moves)
    threads(1)  # (Numba's parallel loops on tiny data: slow on a loaded machine)
    S, G = _counts(80, 5, 8, seed=3, df=1.0, tau=0.8)
    kw = dict(grid=(1.0, 3.0, 10.0), tol=2e-5, max_iter=10)
    fits = {b: latent.fit_t_df(S, G, backend=b, **kw) for b in _backends()}
    ref = fits[_backends()[0]]
    assert ref.t_df < latent.LOGIT_T_DF  # (the walk moved)
    for b, f in fits.items():
        assert f.t_df == ref.t_df and f.n_iter == ref.n_iter, b
        np.testing.assert_allclose(f.theta, ref.theta, atol=1e-9, err_msg=b)
        assert f.loglik == pytest.approx(ref.loglik, abs=1e-7)
    # the posterior maximum at the fitted df (20 prompts: NumPy's is slow)
    sub = dataclasses.replace(
        ref, resp=ref.resp[:20], cell_row=ref.cell_row[:20], topic=ref.topic[:20]
    )
    out = {b: latent.posterior_max(sub, b) for b in _backends()}
    for b, o in out.items():
        for x, y in zip(out[_backends()[0]], o, strict=True):
            np.testing.assert_allclose(x, y, atol=1e-8, rtol=0, err_msg=b)
    # the compiled kernels at another thread count: the same bits
    b0 = _backends()[0]
    one = latent.fit_t_df(S, G, backend=b0, **kw)
    threads(2)
    two = latent.fit_t_df(S, G, backend=b0, **kw)
    assert one.t_df_loglik == two.t_df_loglik
    for x, y in zip(
        latent.posterior_max(one, b0), latent.posterior_max(two, b0), strict=True
    ):
        np.testing.assert_array_equal(x, y)


def test_the_fitted_df_is_used_by_the_tails_draws_and_the_posterior_world():
    f = latent.fit_latent(*_counts(80, 4, 6, 4, 1.5, 0.6), family="logit_t", t_df=1.5)
    # the grid's tail masses
    eta = np.array([0.0, 3.0])
    tails = latent.grid_tails("logit_t", 0.5, eta, -16.0, 16.0, 1.5)
    np.testing.assert_allclose(tails[:, 0], stats.t.cdf((-16.0 - eta) / 0.5, 1.5))
    np.testing.assert_allclose(tails.sum(axis=-1), 1.0, atol=1e-12)
    # simulations from the fit
    r = np.random.default_rng(5)
    p = latent._draw_cell("logit_t", 0.9, np.zeros(100_000), r, f.nu)
    far = np.mean((p > expit(0.9 * 6.0)) | (p < expit(-0.9 * 6.0)))
    assert far == pytest.approx(2 * stats.t.sf(6.0, 1.5), abs=3e-3)
    # the posterior world's prior
    grid, lp = posterior_world.e_prior(f)
    np.testing.assert_allclose(
        lp - lp.max(), stats.t.logpdf(grid, 1.5) - stats.t.logpdf(0, 1.5), atol=1e-12
    )
    # the likelihood table and the decomposition's diagnostics
    assert f.logh() is f.tables.logh("logit_t", f.scale, 1.5)
    assert not np.array_equal(f.logh(), f.tables.logh("logit_t", f.scale, 3.0))
    fit = classes.fit_pgm(*_counts(300, 6, 8, 6, 1.5, 0.6), latent_classes=1)
    assert fit.family == "logit_t" and fit.t_df is not None
