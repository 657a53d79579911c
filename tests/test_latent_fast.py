"""pgm's fast paths: compact likelihood tables at large G, the naive shortcut when
the naive oracle is provably exact enough, and the fused class E-step (thread-count
independent)."""

from __future__ import annotations

import numpy as np
import pytest

import capfront as cf
from capfront.debias import classes, latent


def _beta_counts(N: int, L: int, G: int, seed: int = 0):
    r = np.random.default_rng(seed)
    p = r.beta(2, 2, (N, L))
    return r.binomial(G, p), np.full((N, L), G, dtype=np.int64), p


@pytest.mark.parametrize("G", [10_000, 10**6])
def test_many_draws_return_the_naive_oracle_with_a_note(G):
    """Issue 22: N = 40, L = 4, p ~ Beta(2, 2) took minutes at G = 10,000; the
    naive oracle's bias bound is below its standard error there, so pgm returns
    it at once, and says so."""
    S, Gm, p = _beta_counts(40, 4, G)
    res = cf.EvalResults.from_counts(S, G)
    out = cf.debiased_oracle(res, "pgm")
    naive = (S / G).max(axis=1).mean()
    assert out.value == pytest.approx(naive, abs=1e-15)
    assert "naive oracle" in out.diagnostics["note"]
    assert "fit" not in out.diagnostics
    bound = out.diagnostics["naive_bias_bound"]
    assert bound == pytest.approx(np.sqrt(np.log(4) / (2 * G)))
    assert abs(out.value - p.max(axis=1).mean()) < bound + 4 * out.se


def test_naive_bias_bound_bounds_the_exact_bias():
    """Worst case for the naive oracle: L equal rates (the bias is largest); its
    exact expectation from ``expected_max_binomial`` stays under the bound."""
    for L, G, q in [(4, 50, 0.5), (8, 20, 0.3), (2, 200, 0.9)]:
        p = np.full((1, L), q)
        exact = float(cf.expected_max_binomial(p, np.full((1, L), G))[0]) - q
        S = np.zeros((1, L), np.int64)
        bound = classes.naive_bias_bound(S, np.full((1, L), G))
        assert 0 < exact <= bound


def test_shortcut_only_at_many_draws():
    S, G, _ = _beta_counts(40, 4, 10)
    assert classes.naive_shortcut(S, G) is None
    S, G, _ = _beta_counts(20_000, 4, 10_000, seed=1)
    assert classes.naive_shortcut(S, G) is None  # SE 0.0015 < bound 0.0083


def test_compact_tables_give_the_full_tables_fit(monkeypatch):
    """Only the observed (G, S) pairs as table rows: the same fit."""
    S, G, _ = _beta_counts(300, 4, 12, seed=2)
    full = latent.pgm_decomposition(S, G, max_iter=20)
    monkeypatch.setattr(latent, "FULL_ROWS_MAX", 0)
    tables, rows = latent._cells(S, G)
    assert tables.offset is None and tables.n_rows == len(np.unique(S))
    np.testing.assert_array_equal(tables.s_all[rows], S)
    compact = latent.pgm_decomposition(S, G, max_iter=20)
    assert compact.estimate() == pytest.approx(full.estimate(), abs=1e-12)
    f1, f2 = full.diagnostics["fit"], compact.diagnostics["fit"]
    np.testing.assert_allclose(f2.theta, f1.theta, atol=1e-12)
    assert f2.scale == f1.scale


def test_banded_likelihood_product_equals_the_full_product():
    g = np.full(700, 5000)
    s = np.linspace(0, 5000, 700).round().astype(np.int64)
    lik = np.exp(latent._loglik_rows(g, s))
    mix, _ = latent._mixing("logitnormal", 0.4)
    ref = latent._matmul(lik, mix)
    got = latent._lik_times_mix(lik, mix)
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=0)


# (not the NumPy reference: its plain path scores every theta candidate on every
# table row, 25 s here; the parity tests hold it to the other backends)
@pytest.mark.parametrize(
    "backend", [b for b in cf.available_backends() if b != "numpy"]
)
@pytest.mark.parametrize("compact", [False, True])
def test_model_local_rows_give_the_same_fit(monkeypatch, backend, compact):
    """Many table rows (G = 3000: full tables of 3001 rows, or compact ones):
    the EM on model-local rows and banded products gives the fit of the EM on
    the tables' own rows and full products, to rounding (the kernels add the
    same non-zero terms; C++ in the same order)."""
    S, G, _ = _beta_counts(300, 3, 2000 if compact else 700, seed=8)
    if compact:
        monkeypatch.setattr(latent, "FULL_ROWS_MAX", 0)
    tables, rows = latent._cells(S, G)
    em = latent.EMRows(tables, rows)
    assert em.g_rows is not None and em.n_rows <= 300 < tables.n_rows
    # each model's local rows point back at its cells' own rows
    for l in range(3):
        np.testing.assert_array_equal(em.g_rows[l][em.cell_row[:, l]], rows[:, l])
    kw = dict(family="logitnormal", max_iter=4, backend=backend)
    new = latent.fit_latent(S, G, **kw)
    monkeypatch.setattr(latent, "LOCAL_ROWS_ABOVE", 10**9)
    latent._COMPACT_CACHE.clear()
    latent._TABLE_CACHE.clear()
    old = latent.fit_latent(S, G, **kw)
    assert latent.EMRows(old.tables, old.cell_row).g_rows is None
    assert new.scale == old.scale and new.n_iter == old.n_iter
    np.testing.assert_allclose(new.theta, old.theta, rtol=0, atol=1e-12)
    assert new.loglik == pytest.approx(old.loglik, rel=1e-13)


def test_large_G_fit_cost_does_not_grow_with_G():
    """A fit at G = 10**5 with few prompts has a few dozen table rows, not 10**5."""
    S, G, p = _beta_counts(12, 3, 100_000, seed=4)
    tables, rows = latent._cells(S, G)
    assert tables.n_rows <= S.size
    fit = latent.fit_latent(S, G, max_iter=5)
    assert np.isfinite(fit.loglik)


def test_class_fit_is_thread_count_independent():
    """The fused class E-step sums in fixed blocks of prompts: more than one
    block here, bit-identical fits for 1 and 2 threads."""
    r = np.random.default_rng(3)
    N, L = 5000, 3
    topic = r.integers(0, 2, N)
    skill = np.array([[1.5, -1.0], [-0.5, 1.2], [0.3, 0.3]])
    d = r.normal(0, 1.2, N)
    p = 1 / (1 + np.exp(-(skill[:, topic].T - d[:, None])))
    G = np.full((N, L), 5)
    S = r.binomial(G, p)
    old = cf.get_num_threads()
    try:
        fits = []
        for n in (1, 2):
            cf.set_num_threads(n)
            fits.append(classes.fit_classes(S, G, None, 2, max_iter=2))
    finally:
        cf.set_num_threads(old)
    a, b = fits
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.class_resp, b.class_resp)
    assert a.loglik == b.loglik


def test_lean_fit_in_blocks_is_the_stored_fit(monkeypatch):
    """Many prompts: no (N, J) posteriors kept, E-steps and the posterior maximum
    in blocks of prompts; the same estimate as the fit that stores them."""
    S, G, _ = _beta_counts(700, 3, 6, seed=5)
    backend = "cpp" if "cpp" in cf.available_backends() else "numba"
    ref = latent.pgm_decomposition(S, G, max_iter=8, backend=backend)
    monkeypatch.setattr(latent, "LEAN_ABOVE", 0)
    monkeypatch.setattr(latent, "LEAN_BLOCK", 256)
    lean = latent.pgm_decomposition(S, G, max_iter=8, backend=backend)
    fit = lean.diagnostics["fit"]
    assert fit.resp is None and fit.resp_at is not None
    assert lean.estimate() == pytest.approx(ref.estimate(), abs=1e-12)
    np.testing.assert_allclose(lean.values[:, 0], ref.values[:, 0], atol=1e-11, rtol=0)


def test_cell_rows_built_in_blocks(monkeypatch):
    """The cells' table rows, built in blocks of prompts: row offset[G] + S, and
    -1 where a model has no draws."""
    S, G, _ = _beta_counts(50, 3, 6, seed=6)
    G[::7, 1] = 0
    G[3, 2] = 4
    S = np.minimum(S, G)
    monkeypatch.setattr(latent, "CELLS_BLOCK", 7)
    tables, rows = latent._cells(S, G)
    np.testing.assert_array_equal(tables.g_values, [4, 6])
    want = np.where(G == 6, 5 + S, np.where(G == 4, S, -1))
    np.testing.assert_array_equal(rows, want)


def _sharp_estep_inputs(n_classes: int):
    """E-step inputs with sharp difficulty posteriors (20 models, 20 draws: the
    compiled kernels compute a window of 25-45 of the 121 grid points) and the
    priors that test the window's bounds: the fitted one, one with two modes 60
    nats above a valley, and one falling 3 nats per grid point."""
    r = np.random.default_rng(11)
    N, L, K = 300, 20, n_classes
    d = r.normal(0, 2.0, N)
    skill = r.normal(0, 1.0, (L, K))
    cls = r.integers(0, K, N)
    p = 1 / (1 + np.exp(-(skill[:, cls].T - d[:, None])))
    G = np.full((N, L), 20)
    G[r.random((N, L)) < 0.1] = 0  # cells not run
    S = np.where(G > 0, r.binomial(G, p), 0)
    fit = latent.fit_latent(S, G, None, max_iter=3)
    theta = np.repeat(fit.theta, K, axis=1) + np.linspace(-1.0, 1.0, K)[None, :]
    table = latent._cell_table(fit.tables.logh(fit.family, fit.scale), theta)
    D = latent.D_GRID
    priors = {
        "fitted": np.log(np.maximum(fit.weights, 1e-300)),
        "two modes": np.where(np.abs(np.abs(D) - 4.0) < 1.0, 0.0, -60.0),
        "steep": -3.0 * np.arange(len(D)) / 1.0,
    }
    return table, fit.cell_row, fit.topic, priors


@pytest.mark.parametrize("prior", ["fitted", "two modes", "steep"])
def test_windowed_estep_equals_the_full_grid(prior):
    """The compiled E-steps compute each prompt's posterior on a window of the
    difficulty grid (bounded by the coarse log-likelihood and the prior's
    largest weight beside each coarse point); the NumPy references compute every
    point. Equal to 1e-12 on sharp posteriors: a point left out that carries
    posterior mass would show."""
    from capfront._kernels import dispatch

    for K in (1, 3):
        table, rows, topic, priors = _sharp_estep_inputs(K)
        lw = priors[prior]
        log_pi = np.log(np.full((1, K), 1.0 / K))
        out = {}
        for be in ("numpy", "cpp"):
            out[be] = dispatch("pgm_class_estep", be)(
                table, rows, topic, K, lw, log_pi, None, 0.0, 1e-8, 4096, True, True,
                True,
            )  # fmt: skip
        a, b = out["numpy"], out["cpp"]
        assert abs(a[0] - b[0]) <= 1e-12 * abs(a[0])
        for i in (1, 2, 3, 4):  # r, C, wsum, the pair posteriors
            np.testing.assert_allclose(b[i], a[i], rtol=0, atol=1e-12)
        np.testing.assert_allclose(b[5], a[5], rtol=1e-13, atol=0)
        if K == 1:
            J = len(lw)
            res = {be: np.empty((len(topic), J)) for be in ("numpy", "cpp")}
            ll = {
                be: dispatch("pgm_estep", be)(table, rows, topic, lw, res[be])
                for be in res
            }
            assert abs(ll["numpy"] - ll["cpp"]) <= 1e-12 * abs(ll["numpy"])
            np.testing.assert_allclose(res["cpp"], res["numpy"], rtol=0, atol=1e-12)


def test_class_estep_sub_blocks_thread_count_and_reference(threads):
    """The compiled class E-step takes each block's prompts in sub-blocks, class
    after class (cache locality); each statistic still sums its prompts in
    prompt order. Several blocks of several sub-blocks, three topic labels and
    sparse pairs: the same bits with one or two threads, and the NumPy
    reference's numbers to 1e-12."""
    from capfront._kernels import dispatch

    K = 3
    table3, rows, _, priors = _sharp_estep_inputs(K)
    # three topic labels: the table's columns are label * K + class
    table = np.concatenate([table3, table3[:, ::-1], table3], axis=1)
    N = rows.shape[0]
    r = np.random.default_rng(3)
    topic = r.integers(0, 3, N).astype(np.int64)
    log_pi = np.log(r.dirichlet(np.ones(K), 3))
    prev = r.dirichlet(np.full(K, 0.3), N)
    lw = priors["fitted"]
    # sub-blocks of 2**16 // (K J) = 180 prompts; blocks of 250
    args = (table, rows, topic, K, lw, log_pi, prev, 1e-3, 1e-8, 250, True, True, True)
    out = {}
    for n in (1, 2):
        threads(n)
        out[n] = dispatch("pgm_class_estep", "cpp")(*args)
    ref = dispatch("pgm_class_estep", "numpy")(*args)
    assert out[1][0] == out[2][0]
    for i in range(1, 6):
        np.testing.assert_array_equal(out[1][i], out[2][i])
    assert abs(out[1][0] - ref[0]) <= 1e-12 * abs(ref[0])
    for i in (1, 2, 3, 4):
        np.testing.assert_allclose(out[1][i], ref[i], rtol=0, atol=1e-12)
