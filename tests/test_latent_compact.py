"""pgm's fits on the compact counts as stored: uint8 (uint16, int32) successes
and broadcast draw counts give the fits of the int64 arrays bit for bit on every
backend, the cells' table rows come in the smallest signed dtype that holds them,
and the kernels read every row dtype in place."""

from __future__ import annotations

import dataclasses
import tracemalloc

import numpy as np
import pytest

import capfront as cf
from capfront._kernels import dispatch
from capfront.debias import latent
from capfront.debias._input import (
    check_counts,
    max_cells,
    min_draws,
    n_cells,
    row_blocks,
    row_dtype,
)
from capfront.debias.classes import naive_bias_bound
from capfront.debias.methods import decompose_counts

BACKENDS = ["cpp", "numba", "numpy"]


def _counts(N: int, L: int, G: int, seed: int = 0, missing: float = 0.1):
    r = np.random.default_rng(seed)
    p = r.beta(0.7, 0.5, (N, L))
    Gm = np.where(r.random((N, L)) < missing, 0, G)
    Gm[:, 0] = G  # every prompt has a model with draws
    return r.binomial(Gm, p), Gm


def _same_fit(a, b) -> None:
    fa, fb = a.diagnostics["fit"], b.diagnostics["fit"]
    assert a.estimate() == b.estimate()
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(fa.theta, fb.theta)
    np.testing.assert_array_equal(fa.weights, fb.weights)
    assert (fa.scale, fa.loglik, fa.n_iter) == (fb.scale, fb.loglik, fb.n_iter)
    np.testing.assert_array_equal(fa.cell_row, fb.cell_row)
    np.testing.assert_array_equal(
        a.diagnostics["posterior_mean_p"], b.diagnostics["posterior_mean_p"]
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_uint8_and_int64_counts_give_bit_identical_fits(backend):
    S, G = _counts(150, 4, 8)
    kw = dict(backend=backend, latent_classes=1, family="logitnormal", max_iter=15)
    wide = decompose_counts(S.astype(np.int64), G.astype(np.int64), "pgm", **kw)
    small = decompose_counts(S.astype(np.uint8), G.astype(np.uint8), "pgm", **kw)
    _same_fit(wide, small)
    assert small.diagnostics["fit"].cell_row.dtype == np.int8


def test_stored_counts_give_the_int64_fit_through_the_public_call():
    """``debiased_oracle(res, "pgm")`` on uint8-stored results (latent classes
    chosen by BIC, family by likelihood) is the fit of the int64 arrays."""
    S, G = _counts(400, 5, 10, seed=1, missing=0.0)
    res = cf.EvalResults.from_counts(S.astype(np.uint8), 10)
    assert res._stats.successes.dtype == np.uint8
    out = cf.debiased_oracle(res, "pgm")
    ref = decompose_counts(S.astype(np.int64), np.full(S.shape, 10), "pgm")
    assert out.value == ref.estimate()
    np.testing.assert_array_equal(
        out.diagnostics["fit"].theta, ref.diagnostics["fit"].theta
    )


def test_lean_subsampled_fit_on_compact_counts_matches_int64(monkeypatch):
    """The many-prompt path (subsample start, E-steps in blocks, no stored
    posteriors) reads uint16 counts and a broadcast G as the int64 ones."""
    monkeypatch.setattr(latent, "SUBSAMPLE_ABOVE", 600)
    monkeypatch.setattr(latent, "SUBSAMPLE_SIZE", 300)
    monkeypatch.setattr(latent, "LEAN_ABOVE", 300 * len(latent.D_GRID))
    monkeypatch.setattr(latent, "LEAN_BLOCK", 256)
    S, _ = _counts(1500, 3, 12, seed=2, missing=0.0)
    G = np.broadcast_to(np.uint16(12), S.shape)
    kw = dict(latent_classes=1, family="logit_t", max_iter=10)
    wide = decompose_counts(S.astype(np.int64), np.full(S.shape, 12), "pgm", **kw)
    small = decompose_counts(S.astype(np.uint16), G, "pgm", **kw)
    assert small.diagnostics["fit"].resp is None  # (the lean path ran)
    _same_fit(wide, small)


def test_row_dtype_is_the_smallest_that_holds_the_rows():
    assert row_dtype(1) == np.int8
    assert row_dtype(127) == np.int8
    assert row_dtype(128) == np.int16
    assert row_dtype(32_767) == np.int16
    assert row_dtype(32_768) == np.int32
    assert row_dtype(2**31 - 1) == np.int32
    assert row_dtype(2**31) == np.int64


@pytest.mark.parametrize("g", [10, 126, 127, 300])
def test_cells_rows_in_the_smallest_dtype_equal_the_reference(g):
    S, G = _counts(500, 3, g, seed=g)
    tables, rows = latent._cells(S.astype(np.uint16), G.astype(np.uint16))
    assert rows.dtype == row_dtype(tables.n_rows)
    ref = np.where(G > 0, tables.offset[np.searchsorted(tables.g_values, G)] + S, -1)
    np.testing.assert_array_equal(rows, ref)
    assert n_cells(rows) == int((G > 0).sum())
    assert max_cells(rows) == int((G > 0).sum(axis=1).max())


def test_compact_tables_rows_are_the_ranks_of_the_observed_pairs(monkeypatch):
    """Many draw counts: one row per observed (G, S) pair, built in blocks (the
    ranks of the pairs among the distinct ones, as ``np.unique`` numbers them)."""
    monkeypatch.setattr(latent, "CELLS_BLOCK", 64)
    r = np.random.default_rng(3)
    G = r.integers(0, 600, (700, 4))
    G[:, 0] = np.maximum(G[:, 0], 1)
    S = r.binomial(G, 0.4)
    tables, rows = latent._cells(S.astype(np.uint16), G.astype(np.uint16))
    key = np.where(G > 0, G * (G.max() + 1) + S, -1)
    uniq, inv = np.unique(key[G > 0], return_inverse=True)
    assert tables.n_rows == len(uniq)
    assert rows.dtype == row_dtype(len(uniq))
    ref = np.full(S.shape, -1, np.int64)
    ref[G > 0] = inv.reshape(-1)
    np.testing.assert_array_equal(rows, ref)


def _kernel_inputs():
    S, G = _counts(120, 4, 9, seed=4)
    fit = latent.fit_latent(S, G, family="logitnormal", max_iter=5)
    table = latent._cell_table(fit.tables.logh(fit.family, fit.scale), fit.theta)
    log_w = np.log(np.maximum(fit.weights, 1e-300))
    return fit, table, log_w


# the NumPy kernels index with any integer dtype alike and their exact posterior
# maximum is slow (about 6 s a case): the narrowest row dtype stands for all there
ROW_DTYPE_CASES = [
    (b, dt)
    for b in BACKENDS
    for dt in (np.int8, np.int16, np.int32, np.int64)
    if b != "numpy" or dt is np.int8
]


@pytest.mark.parametrize(("backend", "dt"), ROW_DTYPE_CASES)
def test_kernels_read_every_row_dtype(backend, dt):
    fit, table, log_w = _kernel_inputs()
    R = fit.tables.n_rows
    rows64 = fit.cell_row.astype(np.int64)
    rows = fit.cell_row.astype(dt)
    out = []
    for cr in (rows64, rows):
        resp = np.empty((len(cr), len(log_w)))
        ll, C = dispatch("pgm_estep_stats", backend)(
            table, cr, fit.topic, log_w, resp, 1, R
        )
        stats = dispatch("pgm_stats", backend)(resp, cr, fit.topic, 1, R)
        sub = dataclasses.replace(fit, resp=resp, cell_row=cr)
        emax = latent._emax(backend, sub, 1e-6)
        out.append((ll, C, stats, *emax))
    for a, b in zip(*out, strict=True):
        np.testing.assert_array_equal(a, b)


def test_cpp_rows_of_other_dtypes_and_layouts_are_cast():
    """uint8 or non-contiguous rows: cast to int64 (the same results)."""
    fit, table, log_w = _kernel_inputs()
    R = fit.tables.n_rows
    res = []
    for cr in (
        fit.cell_row.astype(np.int64),
        np.asfortranarray(fit.cell_row.astype(np.int32)),
        fit.cell_row.astype(np.float64),  # (integral values)
    ):
        resp = np.empty((len(cr), len(log_w)))
        kernel = dispatch("pgm_estep_stats", "cpp")
        res.append(kernel(table, cr, fit.topic, log_w, resp, 1, R))
    for ll, C in res[1:]:
        assert ll == res[0][0]
        np.testing.assert_array_equal(C, res[0][1])
    bad = fit.cell_row.astype(np.int8).copy()
    bad[0, 0] = 127  # beyond the table's rows
    with pytest.raises(ValueError, match="cell_row out of range"):
        dispatch("pgm_estep_stats", "cpp")(
            table, bad, fit.topic, log_w, np.empty((len(bad), len(log_w))), 1, R
        )


def test_check_counts_compact_keeps_the_stored_dtypes_and_checks():
    S = np.array([[1, 2], [0, 3]], np.uint8)
    G = np.broadcast_to(np.int32(3), S.shape)
    S2, G2 = check_counts(S, G, compact=True)
    assert S2.dtype == np.uint8 and G2.dtype == np.int32
    assert np.shares_memory(S2, S)
    S3, _ = check_counts(S.astype(np.float64), G, compact=True)
    assert S3.dtype == np.int64
    with pytest.raises(ValueError, match="successes <= n_draws"):
        check_counts(np.array([[4, 0]], np.uint8), np.uint8(3), compact=True)
    with pytest.raises(ValueError, match="at least one model"):
        check_counts(np.zeros((2, 2), np.uint8), np.array([[1, 1], [0, 0]]))
    assert min_draws(np.array([[0, 5], [3, 0]], np.uint8)) == 3


def test_naive_bias_bound_reads_unsigned_counts():
    S, G = _counts(300, 5, 40, seed=5)
    ref = naive_bias_bound(S.astype(np.int64), G.astype(np.int64))
    assert naive_bias_bound(S.astype(np.uint8), G.astype(np.uint8)) == ref
    assert ref > 0


def test_cells_hold_no_wide_copies(monkeypatch):
    """Table rows of 400,000 x 8 uint8 cells (3.2 MB): their int8 rows plus
    block temporaries (blocks of 4,096 prompts here), far below one (N, L)
    int64 copy (25.6 MB)."""
    monkeypatch.setattr(latent, "CELLS_BLOCK", 4096)
    N, L = 400_000, 8
    S = np.zeros((N, L), np.uint8)
    for sl in row_blocks(N):
        n = len(S[sl])
        S[sl] = np.random.default_rng(sl.start).integers(0, 11, (n, L))
    G = np.broadcast_to(np.int32(10), S.shape)
    tracemalloc.start()
    try:
        S2, G2 = check_counts(S, G, compact=True)
        _, rows = latent._cells(S2, G2)
        cells = n_cells(rows)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert cells == N * L and rows.dtype == np.int8
    assert peak < 2.0 * N * L  # (the int8 rows: N L bytes)


@pytest.mark.parametrize("n_classes", [1, 2])
def test_posterior_max_without_cell_means(n_classes):
    """``cell_means=False`` keeps no (N, L) cell means: the same maxima."""
    from capfront.debias.classes import fit_classes, posterior_max

    S, G = _counts(200, 4, 8, seed=6)
    fit = fit_classes(S, G, None, n_classes, max_iter=5)
    e1, e2, pm = posterior_max(fit)
    f1, f2, none = posterior_max(fit, cell_means=False)
    assert none is None and pm.shape == S.shape
    np.testing.assert_array_equal(e1, f1)
    np.testing.assert_array_equal(e2, f2)
