"""The count estimators on compact counts (issue 22, memory at scale).

``crossfit``, ``jackknife``, ``extrapolation``, ``bootstrap_bc``, ``double_bc``
and ``naive`` read the counts as stored (uint8 / uint16, ``n_draws`` a broadcast
view) and work in blocks of prompts: the values must be those of int64 copies of
the whole table handed to the kernels in one call, bit for bit, whatever the
block size.
"""

from __future__ import annotations

import numpy as np
import pytest

import capfront as cf
from capfront._kernels import dispatch
from capfront.debias import _input
from capfront.debias.checks import check_sizes
from capfront.debias.checks import statistics as check_statistics
from capfront.debias.crossfit import crossfit_rows
from capfront.debias.extrapolation import curve_rows
from capfront.debias.methods import decompose_counts

METHODS = ("crossfit", "jackknife", "extrapolation", "bootstrap_bc", "double_bc")


def _data(N: int = 160, L: int = 5, G: int = 9, missing: bool = True, seed: int = 3):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.7, 0.5, size=(N, L))
    Gm = np.full((N, L), G, np.uint8)
    if missing:
        Gm[rng.random((N, L)) < 0.15] = 0
        Gm[:, 0] = G
    S = rng.binomial(Gm, p).astype(np.uint8)
    return S, Gm


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 7 prompts: every blocked loop runs over many blocks."""
    monkeypatch.setattr(_input, "ROW_BLOCK", 7)


@pytest.mark.parametrize("backend", ["cpp", "numba", "numpy"])
def test_kernels_on_compact_counts_match_one_int64_call(backend, small_blocks):
    S, Gm = _data(N=60 if backend == "numpy" else 160)
    S64, G64 = S.astype(np.int64), Gm.astype(np.int64)
    sizes = np.arange(1, 10, dtype=np.int64)
    want_cf = dispatch("crossfit_rows", backend)(S64, G64)
    want_curve = dispatch("subsample_curve_rows", backend)(S64, G64, sizes)
    for G in (Gm, Gm.astype(np.uint16)):
        np.testing.assert_array_equal(crossfit_rows(S, G, backend), want_cf)
        np.testing.assert_array_equal(curve_rows(S, G, sizes, backend), want_curve)
    # one draw count: n_draws a read-only broadcast view of a uint8 scalar
    Sb, _ = _data(N=40, missing=False)
    Gb = np.broadcast_to(np.uint8(9), Sb.shape)
    np.testing.assert_array_equal(
        crossfit_rows(Sb, Gb, backend),
        dispatch("crossfit_rows", backend)(Sb.astype(np.int64), np.full(Sb.shape, 9)),
    )


@pytest.mark.parametrize("backend", ["cpp", "numba"])
@pytest.mark.parametrize("method", METHODS)
def test_estimators_compact_equal_int64(backend, method, monkeypatch):
    S, Gm = _data()
    want = decompose_counts(
        S.astype(np.int64), Gm.astype(np.int64), method, backend=backend
    )
    monkeypatch.setattr(_input, "ROW_BLOCK", 7)
    got = decompose_counts(S, Gm, method, backend=backend)
    np.testing.assert_array_equal(np.asarray(got.values), np.asarray(want.values))
    assert got.estimate() == want.estimate()
    assert got.standard_error() == want.standard_error()


def test_debiased_oracle_compact_equal_int64(small_blocks):
    S, Gm = _data(missing=False)
    res = cf.EvalResults.from_counts(S, 9)
    for method in ("crossfit", "jackknife", "extrapolation"):
        got = cf.debiased_oracle(res, method, backend="cpp")
        want = decompose_counts(
            S.astype(np.int64), np.full(S.shape, 9), method, backend="cpp"
        )
        assert got.value == want.estimate()
        assert got.se == want.standard_error()


def test_audit_checks_compact_equal_int64(small_blocks):
    S, Gm = _data()
    sizes = np.unique(np.concatenate([check_sizes(9), [8, 9]])).astype(np.int64)
    S64, G64 = S.astype(np.int64), Gm.astype(np.int64)
    want = check_statistics(S64, G64, curve_rows(S64, G64, sizes, "cpp"), sizes)
    got = check_statistics(S, Gm, curve_rows(S, Gm, sizes, "cpp"), sizes)
    np.testing.assert_array_equal(got, want)


def test_audit_on_compact_counts_equals_int64(monkeypatch):
    """The audit reads the stored uint8 counts: its table is that of the int64
    copy it used to take."""
    import importlib

    audit_mod = importlib.import_module("capfront.debias.audit")

    res = cf.simulate(150, 3, 6, n_topics=1, seed=2, as_counts=True)
    kw = dict(
        n_sims=2,
        n_workers=1,
        backend="cpp",
        worlds=("latent",),
        methods=("crossfit", "jackknife", "bootstrap_bc", "naive"),
        latent_classes=1,
        family="logitnormal",
    )
    got = cf.audit(res, **kw)
    compact = audit_mod.counts

    def int64_counts(results, what, **_):
        S, G = compact(results, what, compact=True)
        return S.astype(np.int64), np.ascontiguousarray(G, dtype=np.int64)

    monkeypatch.setattr(audit_mod, "counts", int64_counts)
    want = cf.audit(res, **kw)
    assert got.table.equals(want.table)
    assert got.data_estimates == want.data_estimates


@pytest.mark.parametrize("backend", ["cpp", "numba", "numpy"])
def test_curve_columns_do_not_depend_on_the_other_sizes(backend):
    """The audit computes the data's curve at the checks' sizes only: each
    size's column is the full curve's, bit for bit."""
    S, Gm = _data(N=50 if backend == "numpy" else 160)
    full = np.arange(1, 10, dtype=np.int64)
    cs = check_sizes(9)
    whole = curve_rows(S, Gm, full, backend)
    np.testing.assert_array_equal(
        curve_rows(S, Gm, cs, backend), whole[:, np.searchsorted(full, cs)]
    )
