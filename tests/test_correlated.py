"""The correlated logit-normal model (``capfront.debias.correlated``, method
``"correlated"``): the fit on its own model, backends, invariances, determinism,
missing cells and bad input. (Kernel edge cases: tests/test_parity.py; the
battery against ``pgm``: docs/scripts/correlated_logit.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

import capfront as cf
from capfront.debias import decompose_counts
from capfront.debias.correlated import (
    correlated_draws,
    correlated_posterior_max,
    fit_correlated,
)


def _own(seed: int, N: int = 2000, L: int = 5, G: int = 5):
    """Counts of the model itself: rank 2 plus difficulty plus noise."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(L, 2)) * 0.8
    Sig = A @ A.T + 0.5 * np.ones((L, L)) + 0.2 * np.eye(L)
    mu = rng.normal(size=L) * 0.5 - 0.5
    p = expit(rng.multivariate_normal(mu, Sig, size=N))
    S = rng.binomial(G, p)
    return S, np.full_like(S, G), float(p.max(1).mean())


@pytest.mark.parametrize("seed, G", [(0, 5), (1, 5), (2, 20), (3, 20)])
def test_own_model_within_monte_carlo_error(seed, G):
    S, Gm, truth = _own(seed, G=G)
    naive = (S / G).max(1).mean()
    dec = decompose_counts(S, Gm, "correlated")
    fit = dec.diagnostics["fit"]
    se = dec.standard_error()
    # the estimate's error against this sample's oracle is well inside the
    # prompt-level standard error of the mean (and a small fraction of the bias)
    assert abs(fit.value - truth) < 3 * se, (fit.value - truth, se)
    assert abs(fit.value - truth) < 0.2 * (naive - truth)
    assert fit.n_params == 5 + 15 and fit.aic == pytest.approx(
        2 * fit.n_params - 2 * fit.loglik
    )
    assert np.linalg.eigvalsh(fit.Sigma).min() > 0.1  # truth: 0.2
    assert fit.posterior_max.shape == (2000,) and fit.value == dec.estimate()


def _small(seed: int = 4, missing: float = 0.0):
    S, G, _ = _own(seed, N=300, L=4, G=6)
    rng = np.random.default_rng(seed)
    G = G.copy()
    G[rng.random(G.shape) < missing] = 0
    return np.where(G > 0, S, 0), G


@pytest.mark.parametrize("missing", [0.0, 0.25])
def test_backends_agree(missing):
    S, G = _small(missing=missing)
    fits = {
        # (a few EM steps: the parity of every step, not the converged fit;
        # the NumPy reference is the slow one)
        b: fit_correlated(
            S, G, backend=b, final_draws=256, iterations=4, laplace_iterations=5
        )
        for b in cf.available_backends()
    }
    ref = fits["numpy"]
    for b, f in fits.items():
        assert f.iterations == ref.iterations, b
        assert f.value == pytest.approx(ref.value, abs=1e-9), b
        assert f.loglik == pytest.approx(ref.loglik, abs=1e-6), b
        np.testing.assert_allclose(f.Sigma, ref.Sigma, atol=1e-8)


def test_missing_cells_are_left_out():
    # a model with no draws on some prompts: the fit uses its other prompts and
    # the posterior integrates its missing cells; near the full data's estimate
    S, G, truth = _own(5, G=20)
    Gm = G.copy()
    Gm[::3, 0] = 0
    Gm[1::3, 4] = 0
    full = fit_correlated(S, G).value
    dec = decompose_counts(np.where(Gm > 0, S, 0), Gm, "correlated")
    part, se = dec.estimate(), dec.standard_error()
    assert abs(part - full) < 2 * se and abs(part - truth) < 2 * se


def test_prompt_and_model_order():
    S, G = _small()
    a = fit_correlated(S, G)
    rows = np.random.default_rng(0).permutation(S.shape[0])
    b = fit_correlated(S[rows], G[rows])
    # N <= subsample: every prompt enters every step; only sums are reordered
    assert b.value == pytest.approx(a.value, abs=1e-9)
    np.testing.assert_allclose(b.posterior_max, a.posterior_max[rows], atol=1e-8)
    cols = [2, 0, 3, 1]
    c = fit_correlated(S[:, cols], G[:, cols])
    # the model order changes which Sobol coordinate drives which model: Monte
    # Carlo error, 0.2-0.5 points at N = 300 with 256 draws (the prompts' own
    # standard error is 1.5 points)
    assert c.value == pytest.approx(a.value, abs=6e-3)
    np.testing.assert_allclose(
        c.Sigma, a.Sigma[np.ix_(cols, cols)], rtol=0.25, atol=0.1
    )


def test_deterministic_and_thread_count_independent():
    S, G = _small()
    a = fit_correlated(S, G, seed=3)
    b = fit_correlated(S, G, seed=3)
    assert a.value == b.value and a.loglik == b.loglik
    assert fit_correlated(S, G, seed=4).value != a.value  # the seed is used
    if "cpp" in cf.available_backends():
        from capfront import _core

        before = _core.num_threads()
        try:
            _core.set_num_threads(1)
            one = fit_correlated(S, G, backend="cpp")
            _core.set_num_threads(2)
            two = fit_correlated(S, G, backend="cpp")
        finally:
            _core.set_num_threads(before)
        assert one.value == two.value and one.loglik == two.loglik
        np.testing.assert_array_equal(one.posterior_max, two.posterior_max)


def test_subsample_then_all_prompts():
    S, G, truth = _own(6, N=3000, G=20)
    f = fit_correlated(S, G, subsample=1000)
    assert f.fit_prompts == 1000 and f.posterior_max.shape == (3000,)
    assert abs(f.value - truth) < 0.006
    # the fit of the subsample, extended to all prompts by the final E-step, is
    # that fit (the audit fits the subsample first, for its AIC)
    from capfront.debias._input import even_rows
    from capfront.debias.correlated import extend_correlated

    idx = even_rows(3000, 1000)
    part = fit_correlated(S[idx], G[idx])
    assert part.fit_prompts == 1000 and part.posterior_max.shape == (1000,)
    ext = extend_correlated(part, S, G)
    assert ext.value == f.value and ext.loglik == f.loglik
    np.testing.assert_array_equal(ext.posterior_max, f.posterior_max)
    np.testing.assert_array_equal(ext.Sigma, f.Sigma)
    assert part.value != ext.value  # the posterior of other prompts
    with pytest.raises(ValueError, match="the data have 4"):
        extend_correlated(part, S[:, :4], G[:, :4])


def test_debiased_oracle_method():
    S, G = _small()
    res = cf.EvalResults.from_counts(S, G)
    r = cf.debiased_oracle(res, "correlated")
    assert r.method == "correlated" and r.value < r.naive
    assert r.fit.value == r.value and np.isfinite(r.se)
    assert "correlated" in cf.debias.METHODS
    with pytest.raises(ValueError, match="does not take"):
        cf.debiased_oracle(res, "correlated", latent_classes=2)


def test_draws():
    z, log_q = correlated_draws(100, 3, seed=1)
    assert z.shape == (128, 3) and log_q.shape == (128,)
    np.testing.assert_array_equal(z[:64], -z[64:])
    zn, lqn = correlated_draws(8, 2, df=np.inf)
    np.testing.assert_allclose(lqn, -0.5 * (zn * zn).sum(1) - np.log(2 * np.pi))
    assert correlated_draws(0, 3)[0].shape == (0, 3)


def test_posterior_max_is_a_probability():
    S, G = _small()
    f = fit_correlated(S, G)
    post, ll = correlated_posterior_max(S, G, f.mu, f.Sigma, draws=64)
    assert ((post > 0) & (post < 1)).all() and (ll < 0).all()


@pytest.mark.parametrize(
    "S, G, match",
    [
        (np.array([[3, 1], [2, 2]]), 2, "successes <= n_draws"),
        (np.array([[1, 1], [2, 2]]), np.array([2, 2, 2]), "broadcast"),
        (np.array([1, 2]), 2, r"shaped \(N, L\)"),
        (np.array([[1, 0], [2, 0]]), np.array([[2, 0], [2, 0]]), "no draws"),
        (np.array([[0.5, 1], [1, 1]]), 2, "whole numbers"),
        (np.array([[np.nan, 1], [1, 1]]), 2, "finite"),
        (np.zeros((0, 2)), 2, "at least one prompt"),
    ],
)
def test_bad_input(S, G, match):
    with pytest.raises(ValueError, match=match):
        fit_correlated(S, G)


def test_bad_options():
    S, G = _small()
    for kw, match in [
        ({"draws": -1}, "draws"),
        ({"final_draws": 0}, "final_draws"),
        ({"inflate": 0.0}, "inflate"),
        ({"tol": -1.0}, "tol"),
        ({"df": 0.0}, "df"),
    ]:
        with pytest.raises(ValueError, match=match):
            fit_correlated(S, G, **kw)
    with pytest.raises(ValueError, match="unknown backend"):
        fit_correlated(S, G, backend="fortran")


def test_warm_start_from_a_fit():
    """``init=``: the EM starts at the fit (no Laplace start) and, on the same
    data, stays where the cold fit ended to within its Monte Carlo error."""
    S, G = _small()
    cold = fit_correlated(S, G)
    warm = fit_correlated(S, G, init=cold, iterations=3)
    assert warm.iterations == 3  # one SQUAREM cycle
    assert abs(warm.value - cold.value) < 0.01
    assert abs(warm.loglik - cold.loglik) < 0.01 * abs(cold.loglik)
    with pytest.raises(ValueError, match="init is a fit of 4 models"):
        fit_correlated(S[:, :3], G[:, :3], init=cold)
