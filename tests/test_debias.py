"""Debiased oracle estimators (design §4): known cases, invariances, backends, the
decomposition contract, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capfront as cf
from capfront._backend import available_backends
from capfront.debias import METHODS, decompose_counts, decomposition
from capfront.debias.crossfit import crossfit_rows
from capfront.debias.extrapolation import curve_rows, fit_decay

FAST = ("naive", "bootstrap_bc", "crossfit", "jackknife", "extrapolation")


def _counts(seed=0, N=60, L=4, G=8, missing=False):
    rng = np.random.default_rng(seed)
    p = rng.beta(1, 1, size=(N, L))
    Gm = np.full((N, L), G)
    if missing:
        Gm[rng.random((N, L)) < 0.15] = 0
        Gm[:, 0] = G
        Gm[rng.random((N, L)) < 0.2] += 3  # ragged
    return rng.binomial(Gm, p), Gm


@pytest.fixture(scope="module")
def sim():
    return cf.simulate(
        1500, 6, 10, n_topics=3, specialisation=1.0, seed=11, as_counts=True
    )


# ------------------------------------------------------------------ known cases
def test_all_cells_saturated_exact():
    # every cell all-correct or all-wrong, the same across models: every
    # count-based method is exact
    rng = np.random.default_rng(1)
    y = rng.random(200) < 0.6
    S = np.repeat((y * 10)[:, None], 5, axis=1)
    res = cf.EvalResults.from_counts(S, 10)
    truth = y.mean()
    for m in FAST:
        assert cf.debiased_oracle(res, m).value == pytest.approx(truth, abs=1e-9), m
    assert cf.debiased_oracle(res, "pgm").value == pytest.approx(truth, abs=0.03)


def test_identical_models():
    # all models share p[n]: O_true = mean_n p[n]; naive is biased up
    res = cf.simulate(
        2000, 5, 10, specialisation=0.0, skill_sd=0.0, seed=2, as_counts=True
    )
    truth = res.true_oracle
    naive = cf.debiased_oracle(res, "naive").value
    assert naive - truth > 0.02
    pgm = cf.debiased_oracle(res, "pgm").value
    assert abs(pgm - truth) < 0.25 * (naive - truth)
    bc = cf.debiased_oracle(res, "bootstrap_bc").value
    assert truth < bc < naive
    assert cf.debiased_oracle(res, "crossfit").value < truth


def test_one_model_dominant():
    rng = np.random.default_rng(3)
    N, L, G = 1500, 5, 10
    p = rng.uniform(0.0, 0.05, size=(N, L))
    p[:, 2] = 0.97
    S = rng.binomial(G, p)
    res = cf.EvalResults.from_counts(S, G)
    acc = S[:, 2].mean() / G
    for m in METHODS:
        v = cf.debiased_oracle(res, m).value
        assert v == pytest.approx(acc, abs=0.02), m


def test_pgm_close_to_truth(sim):
    r = cf.debiased_oracle(sim, "pgm")
    naive_bias = r.naive - sim.true_oracle
    assert naive_bias > 0.01
    assert abs(r.value - sim.true_oracle) < 0.25 * naive_bias
    fit = r.fit
    assert fit.theta.shape == (6, 3) and fit.converged
    assert np.isfinite(r.max_of_posterior_means)
    assert r.posterior_mean_p.shape == (1500, 6)


def test_betabinomial_family(sim):
    r = cf.debiased_oracle(sim, "pgm", family="betabinomial")
    assert abs(r.value - sim.true_oracle) < 0.02
    with pytest.raises(ValueError, match="family"):
        cf.debiased_oracle(sim, "pgm", family="poisson")


@pytest.mark.parametrize("family", ["betabinomial", "logitnormal"])
def test_fitted_scale_maximises_likelihood(family):
    """The free fit's cell-effect scale beats fits with the scale fixed a little
    either side (the scale step once stalled 0.02 above the maximum on a coarse
    grid, 7 log-likelihood units down, and put pgm 0.07 points too high)."""
    from capfront.debias.latent import SCALE_RES, fit_latent

    r = cf.simulate(
        2000,
        2,
        50,
        n_topics=4,
        specialisation=0.3,
        within_cell_correlation=0.2,
        seed=3,
        as_counts=True,
    )
    S, G = np.asarray(r.successes), np.asarray(r.n_draws)
    t = np.asarray(r.topic).astype(np.int64)
    free = fit_latent(S, G, t, family=family, tol=1e-8)
    step = 10 * SCALE_RES[family]
    for s in (free.scale - step, free.scale + step):
        fixed = fit_latent(S, G, t, family=family, scale=s, tol=1e-8)
        assert free.loglik > fixed.loglik - 0.05, (s, free.scale)
    if family == "betabinomial":  # the generator's own family: rho = 0.2
        assert abs(free.scale - 0.2) < 0.015


# ------------------------------------------------------------------ crossfit exact
def _crossfit_brute(S, G):
    """Average over every split of every cell (ties shared)."""
    L = len(S)
    gmin = min(G)
    vals = []
    for g in sorted({gmin // 2, gmin - gmin // 2}):
        cells = []
        for s, n in zip(S, G, strict=True):
            draws = [1] * s + [0] * (n - s)
            cells.append(
                [
                    (sum(draws[i] for i in A), (s - sum(draws[i] for i in A)) / (n - g))
                    for A in itertools.combinations(range(n), g)
                ]
            )
        tot, cnt = 0.0, 0
        for combo in itertools.product(*cells):
            sel = [a for a, _ in combo]
            best = max(sel)
            win = [combo[i][1] for i in range(L) if sel[i] == best]
            tot += sum(win) / len(win)
            cnt += 1
        vals.append(tot / cnt)
    return float(np.mean(vals)) if len(vals) == 2 else vals[0]


@pytest.mark.parametrize(
    "S,G",
    [
        ([2, 3], [5, 5]),
        ([1, 4, 2], [4, 5, 4]),
        ([0, 0], [4, 4]),
        ([3, 1, 3], [6, 6, 6]),
    ],
)
def test_crossfit_matches_enumeration(S, G):
    want = _crossfit_brute(S, G)
    for b in available_backends():
        got = crossfit_rows(np.array([S]), np.array([G]), b)[0]
        assert got == pytest.approx(want, abs=1e-12), b


# ------------------------------------------------------------------ invariances
@pytest.mark.parametrize("method", [m for m in METHODS if m != "double_bc"])
def test_permutation_invariance(method, sim):
    # (double_bc redraws counts by a seeded Monte Carlo tied to the cell order)
    rng = np.random.default_rng(5)
    S = np.rint(sim.successes).astype(np.int64)[:600]
    G = sim.n_draws[:600]
    topic = np.asarray(sim.topic).astype(np.int64)[:600]
    rows = rng.permutation(600)
    cols = rng.permutation(S.shape[1])
    a = decompose_counts(S, G, method, topic=topic if method == "pgm" else None)
    b = decompose_counts(
        S[rows][:, cols],
        G[rows][:, cols],
        method,
        topic=topic[rows] if method == "pgm" else None,
    )
    # correlated: the model order changes which Sobol coordinate drives which model
    tol = {"pgm": 1e-6, "correlated": 5e-3}.get(method, 1e-12)
    assert b.estimate() == pytest.approx(a.estimate(), abs=tol)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 5), st.integers(4, 9))
def test_permutation_property(seed, L, G):
    S, Gm = _counts(seed, N=20, L=L, G=G)
    rng = np.random.default_rng(seed)
    rows, cols = rng.permutation(20), rng.permutation(L)
    for m in FAST:
        a = decompose_counts(S, Gm, m).estimate()
        b = decompose_counts(S[rows][:, cols], Gm[rows][:, cols], m).estimate()
        assert b == pytest.approx(a, abs=1e-12)
    # the naive oracle lies between cross-fit and the curve at g = 1
    assert (
        decompose_counts(S, Gm, "crossfit").estimate()
        <= decompose_counts(S, Gm, "naive").estimate() + 1e-12
    )


# ------------------------------------------------------------------ backends
@pytest.mark.parametrize("missing", [False, True])
def test_backends_agree(missing):
    S, G = _counts(7, N=40, L=5, G=8, missing=missing)
    sizes = np.arange(1, int(G[G > 0].min()) + 1)
    ref_cf = crossfit_rows(S, G, "numpy")
    ref_curve = curve_rows(S, G, sizes, "numpy")
    for b in available_backends():
        np.testing.assert_allclose(crossfit_rows(S, G, b), ref_cf, atol=1e-12)
        np.testing.assert_allclose(curve_rows(S, G, sizes, b), ref_curve, atol=1e-12)
    vals = {
        b: decompose_counts(S, G, "pgm", backend=b).estimate()
        for b in available_backends()
    }
    for b, v in vals.items():
        assert v == pytest.approx(vals["numpy"], abs=1e-9), b


def test_missing_cells_left_out():
    S, G = _counts(8, N=50, L=4, G=8)
    G2 = G.copy()
    G2[:, 3] = 0
    S2 = np.where(G2 > 0, S, 0)
    for m in FAST:
        a = decompose_counts(S2, G2, m).estimate()
        b = decompose_counts(S[:, :3], G[:, :3], m).estimate()
        assert a == pytest.approx(b, abs=1e-12), m


# ------------------------------------------------------------------ contract
@pytest.mark.parametrize("method", METHODS)
def test_decomposition_contract(method, sim):
    res = sim.select(np.arange(400))
    values, finalize = decomposition(res, method)
    assert values.shape[0] == 400 and values.ndim == 2
    assert finalize(values.mean(axis=0)) == cf.debiased_oracle(res, method).value


def test_result_object(sim):
    r = cf.debiased_oracle(sim, "extrapolation", ci=0.9, n_resamples=50)
    assert r.method == "extrapolation" and 0.25 <= r.lam <= 1.0
    assert len(r.curve) == len(r.sizes)
    lo, hi = r.ci
    assert lo <= r.value <= hi and r.level == 0.9
    assert float(r) == r.value
    fixed = cf.debiased_oracle(sim, "extrapolation", lam=0.5)
    assert fixed.lam == 0.5
    # with options the decomposition goes to capfront.bootstrap as PerPrompt
    r2 = cf.debiased_oracle(sim, "jackknife", lam=0.7, ci=0.95, n_resamples=50)
    assert r2.ci[0] <= r2.value <= r2.ci[1] and "capfront" in r2.ci_method


def test_fit_decay_recovers_law():
    g = np.arange(5, 21)
    y = 0.8 + 0.3 * g**-0.6
    o, a, lam, rss = fit_decay(g, y)
    assert o == pytest.approx(0.8, abs=1e-3) and lam == pytest.approx(0.6, abs=0.01)


def test_bias_curve(sim):
    bc = cf.bias_curve(sim)
    assert bc["curve"][-1] == pytest.approx(bc["naive"], abs=1e-12)
    assert np.all(np.diff(bc["curve"]) < 0)
    assert 0.25 <= bc["lam"] <= 1.0


# ------------------------------------------------------------------ bad input
def test_bad_input(sim):
    one = cf.EvalResults.from_counts(np.array([[1, 0], [0, 1]]), 1)
    for m in ("bootstrap_bc", "crossfit", "pgm", "jackknife"):
        with pytest.raises(ValueError, match="at least 2 generations"):
            cf.debiased_oracle(one, m)
    three = cf.EvalResults.from_counts(np.array([[1, 2], [0, 3]]), 3)
    with pytest.raises(ValueError, match="at least 4 generations"):
        cf.debiased_oracle(three, "extrapolation")
    with pytest.raises(ValueError, match="unknown method"):
        cf.debiased_oracle(sim, "magic")
    with pytest.raises(ValueError, match="does not take"):
        cf.debiased_oracle(sim, "crossfit", lam=0.5)
    with pytest.raises(ValueError, match="ci must be"):
        cf.debiased_oracle(sim, "naive", ci=95)
    graded = cf.EvalResults.from_arrays(np.full((3, 2, 4), 0.5))
    for m in ("bootstrap_bc", "pgm", "double_bc"):
        with pytest.raises(ValueError, match="graded"):
            cf.debiased_oracle(graded, m)
    assert cf.debiased_oracle(graded, "naive").value == pytest.approx(0.5)
    for m in ("crossfit", "extrapolation", "jackknife"):  # Monte Carlo path
        assert cf.debiased_oracle(graded, m).value == pytest.approx(0.5)
    sums_only = cf.EvalResults.from_arrays(np.full((3, 2, 4), 0.5), keep_scores=False)
    with pytest.raises(ValueError, match="raw"):
        cf.debiased_oracle(sums_only, "crossfit")
    with pytest.raises(ValueError, match="at least one model with draws"):
        decompose_counts(np.zeros((2, 2)), np.array([[3, 3], [0, 0]]), "crossfit")
    with pytest.raises(ValueError, match="successes <= n_draws"):
        decompose_counts(np.array([[5]]), np.array([[3]]), "naive")


def test_audit_small():
    res = cf.simulate(600, 4, 10, n_topics=2, seed=4, as_counts=True)
    a = cf.audit(res, n_sims=4, seed=1)
    assert set(a.table.index) == {
        "naive",
        "bootstrap_bc",
        "crossfit",
        "jackknife",
        "extrapolation",
        "pgm",
    }
    assert a.recommended in a.table.index and a.recommended != "naive"
    assert (a.table["rmse"] >= a.table["abs_bias"] - 1e-12).all()
    assert 0 < a.truth_population < 1
    again = cf.audit(res, n_sims=4, seed=1)
    assert again.table.equals(a.table)
    short = cf.EvalResults.from_counts(
        np.rint(
            res.successes[
                :,
                :,
            ]
            * 0.3
        ),
        3,
    )
    assert "extrapolation" not in cf.audit(short, n_sims=2).table.index


def test_graded_monte_carlo_matches_exact_on_binary():
    from capfront.debias import graded

    rng = np.random.default_rng(12)
    scores = (rng.random((400, 4, 8)) < rng.beta(1, 1, (400, 4, 1))).astype(float)
    res = cf.EvalResults.from_arrays(scores)
    for m, f in (
        ("crossfit", graded.crossfit_graded),
        ("jackknife", graded.jackknife_graded),
        ("extrapolation", graded.extrapolation_graded),
    ):
        exact = cf.debiased_oracle(res, m).value
        mc = f(res, n_splits=400, seed=3).estimate()  # extrapolation amplifies MC noise
        assert mc == pytest.approx(exact, abs=0.01), m
        assert (
            f(res, n_splits=4, seed=3).estimate()
            == f(res, n_splits=4, seed=3).estimate()
        )
    # real-valued scores run through debiased_oracle with a seed option
    noisy = cf.EvalResults.from_arrays(np.clip(scores * 0.8 + 0.1, 0, 1))
    a = cf.debiased_oracle(noisy, "crossfit", seed=1, n_splits=8).value
    assert 0 < a <= cf.debiased_oracle(noisy, "naive").value


def test_pgm_subsample_warm_start(monkeypatch, sim):
    from capfront.debias import latent

    S = np.rint(sim.successes).astype(np.int64)
    topic = np.asarray(sim.topic).astype(np.int64)
    full = decompose_counts(S, sim.n_draws, "pgm", topic=topic).estimate()
    monkeypatch.setattr(latent, "SUBSAMPLE_ABOVE", 1000)
    monkeypatch.setattr(latent, "SUBSAMPLE_SIZE", 500)
    warm = decompose_counts(S, sim.n_draws, "pgm", topic=topic)
    assert warm.estimate() == pytest.approx(full, abs=2e-3)
    assert warm.diagnostics["converged"]


def test_audit_warm_start_tolerance_matches_previous_settings(monkeypatch):
    # the audit's speed-ups (EM stopped by a tolerance, skipping difficulty grid
    # points with posterior mass < 1e-4, cached posterior tables) must not change
    # what it measures: compare with the previous settings (5 EM iterations at
    # tol 1e-6, min_resp 1e-6) on the same simulated data sets
    import importlib

    audit_mod = importlib.import_module("capfront.debias.audit")
    res = cf.simulate(600, 5, 10, n_topics=2, seed=11, as_counts=True)
    fast = cf.audit(res, n_sims=8, seed=3)
    monkeypatch.setattr(audit_mod, "AUDIT_MIN_RESP", 1e-6)
    slow = cf.audit(res, n_sims=8, seed=3, pgm_tol=1e-6)
    assert fast.recommended == slow.recommended
    assert fast.truth_population == slow.truth_population
    others = [m for m in fast.table.index if m != "pgm"]
    assert fast.table.loc[others].equals(slow.table.loc[others])
    a, b = fast.table.loc["pgm"], slow.table.loc["pgm"]
    sd = float(b["sd"])
    assert abs(a["bias"] - b["bias"]) < 0.1 * sd
    assert abs(a["rmse"] - b["rmse"]) < 0.1 * sd
    assert abs(a["mean_se"] - b["mean_se"]) < 0.02 * b["mean_se"]
    assert abs(a["coverage"] - b["coverage"]) <= 1 / 8
    est_f = fast.estimates["estimates"]["pgm"]
    est_s = slow.estimates["estimates"]["pgm"]
    assert np.abs(est_f - est_s).max() < 0.1 * sd
    with pytest.raises(ValueError, match="pgm_tol"):
        cf.audit(res, n_sims=2, pgm_tol=-1.0)


# ------------------------------------------------------------------ posterior max
def _fit(family, scale, seed=5, N=300, L=6, G=10, missing=False):
    from capfront.debias import latent

    S, Gm = _counts(seed, N=N, L=L, G=G, missing=missing)
    topic = np.arange(N) % 2
    return latent.fit_latent(S, Gm, topic, family=family, scale=scale, max_iter=20)


@pytest.mark.parametrize("family", ["logitnormal", "betabinomial"])
def test_emax_point_mass_is_exact(family):
    # zero cell effect: given d every p is known, E[max | d] = max_l sigma(eta)
    from scipy.special import expit

    from capfront.debias import latent

    fit = _fit(family, 0.0)
    eta = fit.theta[None, :, :] - latent.D_GRID[:, None, None]  # (J, L, K)
    best = expit(eta).max(axis=1)[:, fit.topic].T  # (N, J)
    r = np.where(fit.resp >= 1e-6, fit.resp, 0.0)
    want = (r * best).sum(axis=1) / r.sum(axis=1)
    for b in available_backends():
        got = latent.posterior_max(fit, b)[0]
        np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize(
    "family,scale", [("logitnormal", 0.3), ("logitnormal", 2.0), ("betabinomial", 0.2)]
)
def test_emax_backends_and_stride(family, scale):
    from capfront.debias import latent

    fit = _fit(family, scale, missing=True)
    ref = latent.posterior_max(fit, "numpy", stride=1)
    fine = latent.posterior_max(fit, "cpp", stride=1)
    for a, b in zip(ref, fine, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-10)
    for b in available_backends():
        out = latent.posterior_max(fit, b)  # the automatic (coarser) stride
        np.testing.assert_allclose(out[0], fine[0], atol=1e-6)
        np.testing.assert_allclose(out[1], fine[1], atol=1e-6)
        np.testing.assert_allclose(out[2], fine[2], atol=1e-12, equal_nan=True)
    assert latent.emax_stride(family, scale, 10, 6) > 1


def test_emax_matches_monte_carlo():
    # one prompt: E_post[max_l p] against draws from the model's posterior
    from scipy.special import expit

    from capfront.debias import latent

    fit = _fit("logitnormal", 0.8, N=200, L=4)
    n = 7
    k = fit.topic[n]
    rng = np.random.default_rng(0)
    rows = fit.cell_row[n]
    draws = 200_000
    j = rng.choice(len(latent.D_GRID), size=draws, p=fit.resp[n] / fit.resp[n].sum())
    # sample t for each cell from its discretised posterior given d_j
    best = np.zeros(draws)
    for l in range(fit.theta.shape[0]):
        eta = fit.theta[l, k] - latent.D_GRID
        lw = fit.tables.loglik[rows[l]][None] + latent._log_mixing(0, 0.8, eta)
        w = np.exp(lw - lw.max(axis=1, keepdims=True))
        cdf = np.cumsum(w, axis=1)
        cdf /= cdf[:, -1:]
        i = np.empty(draws, np.int64)
        for jj in np.unique(j):
            sel = j == jj
            i[sel] = np.searchsorted(cdf[jj], rng.random(sel.sum()))
        t = latent.T_GRID[i] + (rng.random(draws) - 0.5) * latent.T_STEP
        best = np.maximum(best, expit(t))
    got = latent.posterior_max(fit, "cpp", min_resp=0.0)[0][n]
    assert got == pytest.approx(best.mean(), abs=4 * best.std() / np.sqrt(draws))


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 10_000),
    st.integers(1, 12),
    st.integers(2, 12),
    st.booleans(),
)
def test_count_kernels_backends_property(seed, L, G, missing):
    # the tabulated C++ kernels (hypergeometric CDF tables, per-level quadrature
    # of the cross-fit) against the plain NumPy reference
    S, Gm = _counts(seed, N=12, L=L, G=G, missing=missing)
    ref_cf = crossfit_rows(S, Gm, "numpy")
    g = int(Gm[Gm > 0].min())
    sizes = np.arange(1, g + 1)
    ref_curve = curve_rows(S, Gm, sizes, "numpy")
    np.testing.assert_allclose(crossfit_rows(S, Gm, "cpp"), ref_cf, atol=1e-12)
    np.testing.assert_allclose(curve_rows(S, Gm, sizes, "cpp"), ref_curve, atol=1e-12)


def test_mstep_window_matches_full_grid(monkeypatch):
    from capfront.debias import latent

    S, G = _counts(4, N=300, L=5, G=10)
    topic = np.arange(300) % 2
    a = latent.fit_latent(S, G, topic, max_iter=15)
    monkeypatch.setattr(latent, "THETA_WINDOW", len(latent.THETA_GRID))
    b = latent.fit_latent(S, G, topic, max_iter=15)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert a.scale == b.scale and a.loglik == b.loglik


def test_audit_independent_of_workers():
    res = cf.simulate(400, 4, 8, n_topics=2, seed=6, as_counts=True)
    one = cf.audit(res, n_sims=4, seed=2, n_workers=1)
    two = cf.audit(res, n_sims=4, seed=2, n_workers=2)
    assert one.table.equals(two.table) and one.recommended == two.recommended
    for m in one.table.index:
        np.testing.assert_array_equal(
            one.estimates["estimates"][m], two.estimates["estimates"][m]
        )
    with pytest.raises(ValueError, match="at least 4 generations"):
        short = cf.simulate(100, 3, 3, seed=1, as_counts=True)
        cf.audit(short, n_sims=2, methods=("naive", "extrapolation"))


def test_audit_family_auto():
    # Beta within-cell correlation: the counts prefer the Beta cell effect
    res = cf.simulate(
        800, 5, 10, n_topics=2, within_cell_correlation=0.3, seed=3, as_counts=True
    )
    a = cf.audit(res, n_sims=2, seed=0, family="auto")
    assert a.family == "betabinomial" and a.fit.family == "betabinomial"
    flat = cf.simulate(800, 5, 10, n_topics=2, seed=3, as_counts=True)
    assert cf.audit(flat, n_sims=2, family="auto").family in FAMILY_NAMES
    with pytest.raises(ValueError, match="unknown family"):
        cf.audit(flat, n_sims=2, family="poisson")
    # the audit interval: value +- (z sd + BIAS_FACTOR max(|bias|, spread))
    # (these prompts' oracle), or value +- z max(se, rmse_population) (the
    # population's)
    from capfront.debias.audit import BIAS_FACTOR

    z = 1.959964
    row = a.table.loc[a.recommended]
    lo, hi = a.interval(0.8)
    half = z * row["sd"] + BIAS_FACTOR * max(
        row["max_abs_bias"], a.model_spread(a.recommended)
    )
    assert hi - lo == pytest.approx(2 * half, rel=1e-5)
    lo, hi = a.interval(0.8, target="population")
    assert hi - lo == pytest.approx(2 * z * row["rmse_population"], rel=1e-5)
    big = 10 * row["rmse_population"]
    lo2, hi2 = a.interval(0.8, se=big, method="naive", target="population")
    assert hi2 - lo2 == pytest.approx(2 * z * big, rel=1e-5)
    with pytest.raises(ValueError, match="target"):
        a.interval(0.8, target="world")
    with pytest.raises(ValueError, match="not in the audit table"):
        a.interval(0.8, method="magic")


FAMILY_NAMES = ("logitnormal", "betabinomial")


def test_audit_auto_simulates_both_families_by_likelihood():
    """family="auto": the worlds come from both fits with weights expit(+-delta
    loglik); pgm is refitted in the chosen family; an explicit family is pinned."""
    from scipy.special import expit

    from capfront.debias.latent import fit_latent

    # G = 5, L = 2, Beta cell effect: the counts barely tell the families apart
    res = cf.simulate(
        1000, 2, 5, n_topics=2, within_cell_correlation=0.1, seed=11, as_counts=True
    )
    S, G = np.asarray(res.successes), np.asarray(res.n_draws)
    t = np.asarray(res.topic).astype(np.int64)
    ll = [fit_latent(S, G, t, family=f).loglik for f in FAMILY_NAMES]
    w_beta = float(expit(ll[1] - ll[0]))
    assert 0.02 < w_beta < 0.98  # ambiguous, or the test proves nothing
    a = cf.audit(res, n_sims=40, seed=3, methods=("naive", "pgm"))
    assert a.family_weights["betabinomial"] == pytest.approx(w_beta, rel=1e-9)
    assert sum(a.family_weights.values()) == pytest.approx(1.0)
    other = a.estimates["other_family"]
    w_alt = a.family_weights[next(f for f in FAMILY_NAMES if f != a.family)]
    # about 40 * w_alt worlds from the other family (binomial, 4 SD)
    assert abs(other.sum() - 40 * w_alt) <= 4 * np.sqrt(40 * w_alt * (1 - w_alt))
    assert 0 < other.sum() < 40
    # those worlds' population oracle is the other fit's
    tp = a.estimates["truth_population"]
    assert np.all(tp[~other] == a.truth_population)
    assert np.all(tp[other] != a.truth_population)
    # naive's error only depends on the worlds; the latent world's row uses them
    # (the table itself is the worst case over the passing worlds)
    err = a.estimates["estimates"]["naive"] - tp
    assert a.world_table.loc[("latent", "naive"), "rmse_population"] == pytest.approx(
        np.sqrt((err**2).mean())
    )
    pinned = cf.audit(res, n_sims=4, seed=3, family="logitnormal")
    assert pinned.family_weights == {"logitnormal": 1.0}
    assert not pinned.estimates["other_family"].any()


def test_audit_auto_mixes_families_only_with_a_cell_effect(monkeypatch):
    """Without a cell effect both families are the binomial and their likelihood
    difference is noise: every world comes from the chosen fit. Lowering the
    MIX_MIN_ICC gate on the same data brings the other family's worlds back."""
    import sys

    from capfront.debias.latent import fit_latent

    audit_mod = sys.modules["capfront.debias.audit"]  # the name is the function
    res = cf.simulate(1000, 2, 5, n_topics=2, seed=1, as_counts=True)  # rho = 0
    S, G = np.asarray(res.successes), np.asarray(res.n_draws)
    t = np.asarray(res.topic).astype(np.int64)
    fits = [fit_latent(S, G, t, family=f) for f in FAMILY_NAMES]
    assert fits[1].scale < audit_mod.MIX_MIN_ICC
    assert abs(fits[1].loglik - fits[0].loglik) < 1  # ambiguous by likelihood
    a = cf.audit(res, n_sims=40, seed=3, methods=("naive", "pgm"))
    assert a.family_weights == {a.family: 1.0}
    assert not a.estimates["other_family"].any()
    assert np.all(a.estimates["truth_population"] == a.truth_population)
    monkeypatch.setattr(audit_mod, "MIX_MIN_ICC", 0.0)
    mixed = cf.audit(res, n_sims=40, seed=3, methods=("naive", "pgm"))
    assert 0.2 < mixed.family_weights["betabinomial"] < 0.8
    assert mixed.estimates["other_family"].any()


def test_audit_interval_crossfit_coverage():
    """Widths from one half, coverage on the other: about the nominal level for
    normal errors, and far below it when one half is much noisier."""
    from capfront.debias.audit import _crossfit_coverage

    rng = np.random.default_rng(0)
    err = 0.01 + rng.standard_normal(4000)
    assert _crossfit_coverage(err, 1.959964) == pytest.approx(0.95, abs=0.012)
    mixed = np.concatenate([0.1 * err[:2000], 10 * err[2000:]])
    assert _crossfit_coverage(mixed, 1.959964) < 0.6


def test_ci_with_options_uses_the_same_bootstrap(sim):
    """Method options (here the default family, given explicitly) keep the
    Philox prompt bootstrap: the same interval as without them."""
    a = cf.debiased_oracle(sim, "pgm", ci=0.9, n_resamples=200, seed=3)
    b = cf.debiased_oracle(
        sim, "pgm", ci=0.9, n_resamples=200, seed=3, family="logitnormal"
    )
    assert a.ci == b.ci and b.ci_method == a.ci_method
    c = cf.debiased_oracle(
        sim, "pgm", ci=0.9, n_resamples=200, seed=3, family="betabinomial"
    )
    assert c.ci[0] < c.value < c.ci[1]


def test_debiased_oracle_with_audit_interval():
    res = cf.simulate(600, 4, 10, n_topics=2, seed=4, as_counts=True)
    a = cf.audit(res, n_sims=6, seed=1)
    d = cf.debiased_oracle(res, "jackknife", audit=a)
    assert d.ci == pytest.approx(a.interval(d.value, method="jackknife"))
    assert d.level == a.level and "audit" in d.ci_method
    # the words describe jackknife's own interval: its SD and bias, no pgm spread
    row = a.table.loc["jackknife"]
    assert d.ci_method.startswith("jackknife estimate +- (1.96 x the largest")
    assert f"{100 * row['sd']:.2f} points" in d.ci_method
    assert f"{100 * row['max_abs_bias']:.2f} points)" in d.ci_method
    assert "rival models" not in d.ci_method
    d90 = cf.debiased_oracle(res, "jackknife", audit=a, ci=0.9, ci_target="population")
    lo, hi = a.interval(d90.value, d90.se, "jackknife", target="population", level=0.9)
    assert d90.ci == pytest.approx((lo, hi))
    assert "1.64 x the larger of its standard error" in d90.ci_method
    assert "population" in d90.ci_method
    # pgm takes the audit's family; a different one is refused
    other = "betabinomial" if a.family == "logitnormal" else "logitnormal"
    assert cf.debiased_oracle(res, "pgm", audit=a).fit.family == a.family
    with pytest.raises(ValueError, match="family"):
        cf.debiased_oracle(res, "pgm", audit=a, family=other)
    with pytest.raises(ValueError, match="did not score"):
        cf.debiased_oracle(res, "double_bc", audit=a)
    with pytest.raises(ValueError, match="ci_target"):
        cf.debiased_oracle(res, "pgm", audit=a, ci_target="world")
    with pytest.raises(ValueError, match="AuditResult"):
        cf.debiased_oracle(res, "pgm", audit="yes")


def test_difficulty_grid_fine_enough_for_sharp_posteriors():
    """With 8 models x 50 draws a prompt's difficulty is known to ~0.1 logits; on
    a 0.5 grid the fit absorbed the rounding into a spurious cell effect (tau ~
    0.1 with none simulated) and pgm came out ~0.17 points high."""
    from capfront.debias.latent import D_GRID, fit_latent

    assert np.diff(D_GRID).max() <= 0.2 + 1e-12
    r = cf.simulate(
        2000, 8, 50, n_topics=4, specialisation=0.3, seed=81, as_counts=True
    )
    t = np.asarray(r.topic).astype(np.int64)
    fit = fit_latent(np.asarray(r.successes), np.asarray(r.n_draws), t)
    assert fit.scale < 0.04


def test_simulated_difficulties_fill_the_grid_cells():
    """The audit's worlds read the fitted difficulty prior as a histogram: a draw
    from grid point D_j lies anywhere in [D_j - 0.1, D_j + 0.1], not on D_j (worlds
    on the grid hid the fit's rounding error from the audit)."""
    from capfront.debias.latent import D_GRID, fit_latent

    r = cf.simulate(300, 2, 5, seed=3, as_counts=True)
    fit = fit_latent(np.asarray(r.successes), np.asarray(r.n_draws))
    j = int(np.argmin(np.abs(D_GRID - 0.4)))
    fit.weights = np.zeros_like(fit.weights)
    fit.weights[j] = 1.0
    fit.scale = 0.0  # p = sigma(theta - d): d is read off p exactly
    p, _ = fit.simulate_p(20_000, np.random.default_rng(0), np.ones(1))
    d = fit.theta[0, 0] - np.log(p[:, 0] / (1 - p[:, 0]))
    off = d - D_GRID[j]
    assert np.abs(off).max() <= 0.1 + 1e-9
    # uniform over the cell: mean 0, variance 0.2^2 / 12
    assert abs(off.mean()) < 0.003 and abs(off.var() / (0.04 / 12) - 1) < 0.05
    p0, _ = fit.simulate_p(100, np.random.default_rng(0), np.ones(1), on_grid=True)
    d0 = fit.theta[0, 0] - np.log(p0[:, 0] / (1 - p0[:, 0]))
    np.testing.assert_allclose(d0, D_GRID[j], atol=1e-9)


@pytest.mark.skipif("cpp" not in available_backends(), reason="no _core")
@pytest.mark.parametrize(
    "L,G,rho,prior",
    [
        (20, 10, 0.0, "fitted"),  # sharp posteriors: the windowed E-step
        (2, 3, 0.0, "fitted"),  # wide posteriors: the whole grid
        (8, 20, 0.3, "fitted"),  # Beta cell effect
        (20, 10, 0.0, "far"),  # prior mass away from every likelihood peak
    ],
)
def test_estep_cpp_matches_numpy(L, G, rho, prior):
    """The C++ E-step computes each prompt's log posterior only near its
    likelihood peak; it must agree with the full NumPy E-step."""
    from capfront.debias.latent import D_GRID, _cell_table, _estep_stats, fit_latent

    fam = "betabinomial" if rho > 0 else "logitnormal"
    r = cf.simulate(
        1500, L, G, n_topics=3, within_cell_correlation=rho, seed=2, as_counts=True
    )
    S, Gm = np.asarray(r.successes), np.asarray(r.n_draws).copy()
    Gm[np.random.default_rng(0).random(Gm.shape) < 0.1] = 0  # missing cells
    S = np.where(Gm > 0, S, 0)
    Gm[:, 0] = G
    t = np.asarray(r.topic).astype(np.int64)
    f = fit_latent(S, Gm, t, family=fam, max_iter=5)
    w = f.weights
    if prior == "far":  # all prior mass on the hardest grid points
        w = np.where(D_GRID > 9, 1.0, 1e-40)
        w = w / w.sum()
    table = _cell_table(f.tables.logh(fam, f.scale), f.theta)
    lw = np.log(np.maximum(w, 1e-300))
    out = {}
    for b in ("cpp", "numpy"):
        resp = np.empty_like(f.resp)
        ll, C = _estep_stats(b, table, f.cell_row, t, lw, resp, 3, f.tables.n_rows)
        out[b] = ll, resp, np.asarray(C)
    assert out["cpp"][0] == pytest.approx(out["numpy"][0], rel=1e-12)
    np.testing.assert_allclose(out["cpp"][1], out["numpy"][1], atol=1e-11)
    np.testing.assert_allclose(out["cpp"][2], out["numpy"][2], atol=1e-9)


@pytest.mark.parametrize("G", [1, 10, 30])
def test_cell_tables_match_the_exact_marginals(G):
    """The tabulated cell likelihoods against the exact Beta-Binomial pmf and,
    for the logit-normal, a fine quadrature. A Beta cell effect near the ceiling
    keeps most of its mass beyond the t grid (atoms at p = 0 and 1); spreading it
    over the grid instead put P(S < G) at 0.10 where it is 0.013 (eta = 6)."""
    from scipy import stats
    from scipy.special import betaln, expit, gammaln

    from capfront.debias import latent

    tab = latent.Tables(np.array([G]))
    s = np.arange(G + 1)[:, None]
    for rho in (0.01, 0.2, 0.5, 0.9):
        c = (1 - rho) / rho
        q = expit(latent.ETA_GRID)
        a, b = q * c, (1 - q) * c
        exact = np.exp(
            gammaln(G + 1)
            - gammaln(s + 1)
            - gammaln(G - s + 1)
            + betaln(s + a, G - s + b)
            - betaln(a, b)
        )
        h = np.exp(tab.logh("betabinomial", rho))
        np.testing.assert_allclose(h, exact, rtol=1e-4, atol=0)
    t = np.linspace(-40, 40, 80001)
    for tau in (0.1, 2.0):
        h = np.exp(tab.logh("logitnormal", tau))
        for e in (0, 70, 140, 200, 280):  # eta = -14 .. 14
            wt = stats.norm.pdf(t, latent.ETA_GRID[e], tau)
            ref = stats.binom.pmf(s, G, expit(t)[None, :]) @ (wt / wt.sum())
            np.testing.assert_allclose(h[:, e], ref, atol=1e-6)


@pytest.mark.parametrize("backend", available_backends())
def test_posterior_max_matches_exact_beta_posteriors(backend):
    """With the difficulty known, each cell's posterior is Beta(q c + S, (1 - q) c
    + G - S): E[max_l p] = int (1 - prod_l I_x) dx, here far into the ceiling
    (eta up to 14), where most of the mass lies beyond the t grid."""
    import dataclasses

    from scipy.integrate import trapezoid
    from scipy.special import betainc, expit

    from capfront.debias import latent

    rng = np.random.default_rng(0)
    N, L, G = 6, 3, 10
    S = rng.integers(0, G + 1, (N, L))
    S[0], S[1], S[2] = G, [G, G - 1, 0], 0
    Gm = np.full_like(S, G)
    fit = latent.fit_latent(
        S, Gm, np.zeros(N, np.int64), family="betabinomial", max_iter=1
    )
    j = int(np.argmin(abs(latent.D_GRID + 2.0)))
    resp = np.zeros((N, len(latent.D_GRID)))
    resp[:, j] = 1.0
    t = np.linspace(-60, 60, 240001)
    x = expit(t)
    for scale, th in [
        (0.2, [6.0, 4.0, 2.0]),
        (0.5, [9.0, 1.0, -3.0]),
        (0.05, [3.0, 3.5, 12.0]),
    ]:
        theta = np.array(th)[:, None]
        f = dataclasses.replace(fit, theta=theta, scale=scale, resp=resp)
        c = (1 - scale) / scale
        q = expit(theta[:, 0] - latent.D_GRID[j])
        exact = []
        for n in range(N):
            a, b = q * c + S[n], (1 - q) * c + G - S[n]
            prod = np.prod([betainc(a[m], b[m], x) for m in range(L)], axis=0)
            exact.append(trapezoid((1 - prod) * x * (1 - x), t))
        emax, _, pmean = latent.posterior_max(f, backend)
        np.testing.assert_allclose(emax, exact, atol=1e-7)
        np.testing.assert_allclose(pmean, (q * c + S) / (c + G), atol=1e-6)
