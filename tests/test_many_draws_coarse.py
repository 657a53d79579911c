"""pgm at many draws per cell (issue 22): the fit on coarsened counts
(:func:`capfront.debias.many_draws.coarse_counts`), whose cost does not grow
with the draws, gives the estimate of the exact counts to a small fraction of
its standard error, the same on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import capfront as cf
from capfront.debias import many_draws
from capfront.debias.many_draws import COARSE_LEVELS, COARSE_MIN_G, coarse_counts


def _beta_counts(N: int, L: int, G: int, seed: int = 0) -> np.ndarray:
    r = np.random.default_rng(seed)
    return r.binomial(G, r.beta(2, 2, (N, L)))


def test_coarse_counts_rule():
    G = 10_000
    S = _beta_counts(3000, 3, G).astype(np.uint16)
    S[:5] = 0
    S[5:10] = G
    S[10:15] = 1
    S[15:20] = G - 1
    Gb = np.broadcast_to(np.uint16(G), S.shape)
    out = coarse_counts(S, Gb)
    assert out.dtype == np.uint16 and out.shape == S.shape
    s, c = S.astype(np.int64), out.astype(np.int64)
    # the ends kept, the inside kept inside
    np.testing.assert_array_equal(c == 0, s == 0)
    np.testing.assert_array_equal(c == G, s == G)
    # the rate moves by at most half a step (sin^2 is 1-Lipschitz in z), plus
    # the rounding to a whole count
    h = max(many_draws.COARSE_STEP / (2 * np.sqrt(G)), 0.5 * np.pi / COARSE_LEVELS)
    assert np.abs(c - s).max() / G <= h / 2 + 0.5 / G + 1e-12
    # monotone, and at most COARSE_LEVELS + 1 levels per model
    order = np.argsort(s[:, 0], kind="stable")
    assert (np.diff(c[order, 0]) >= 0).all()
    assert max(len(np.unique(c[:, j])) for j in range(3)) <= COARSE_LEVELS + 1
    # varying draw counts: only cells above COARSE_MIN_G move
    Gm = np.where(np.arange(3000)[:, None] % 2 == 0, G, COARSE_MIN_G)
    Sm = np.minimum(s, Gm)
    cm = coarse_counts(Sm, Gm)
    np.testing.assert_array_equal(cm[1::2], Sm[1::2])
    np.testing.assert_array_equal(cm[::2], coarse_counts(Sm[::2], Gm[::2]))
    assert coarse_counts(s % 11, np.full(s.shape, COARSE_MIN_G)) is None


@pytest.mark.parametrize(
    "N, L, G, seed, se_rel",
    # G = 600: no naive shortcut (bound 0.030 > SE 0.015); G = 300: binned now,
    # the exact counts before
    [(100, 3, 600, 4, 0.02), (150, 4, 300, 3, 0.03)],
)
def test_pgm_on_coarse_counts_matches_the_exact_counts(
    monkeypatch, N, L, G, seed, se_rel
):
    """The fit on the binned counts moves the estimate by far less than its
    standard error from the fit on the exact counts."""
    S = _beta_counts(N, L, G, seed=seed)
    res = cf.EvalResults.from_counts(S, G)
    kw = dict(backend="cpp", latent_classes=1, family="logitnormal")
    got = cf.debiased_oracle(res, "pgm", **kw)
    assert got.diagnostics["coarsened_counts"]
    monkeypatch.setattr(many_draws, "COARSE_MIN_G", 10**9)
    exact = cf.debiased_oracle(res, "pgm", **kw)
    assert not exact.diagnostics["coarsened_counts"]
    assert abs(got.value - exact.value) < 0.05 * exact.se
    assert got.se == pytest.approx(exact.se, rel=se_rel)


def test_pgm_coarse_path_backends_agree():
    S = _beta_counts(60, 3, 800, seed=5)
    res = cf.EvalResults.from_counts(S, 800)
    # a few EM iterations: the backends' parity on the coarsened tables
    # (Numba's M-step scores every candidate: the full fit takes ~10 s here)
    kw = dict(latent_classes=1, family="logitnormal", max_iter=4)
    cpp = cf.debiased_oracle(res, "pgm", backend="cpp", **kw)
    nb = cf.debiased_oracle(res, "pgm", backend="numba", **kw)
    npy = cf.debiased_oracle(res, "pgm", backend="numpy", **kw)
    assert cpp.diagnostics["coarsened_counts"]
    assert nb.value == pytest.approx(cpp.value, abs=1e-12)
    # the NumPy reference's posterior maximum is the exact integral (about
    # 2e-10 from cpp, tests/test_determinism.py)
    assert npy.value == pytest.approx(cpp.value, abs=1e-8)


def test_audit_fits_the_counts_pgm_fits():
    """Above 500 draws a cell the audit's fits read the coarsened counts too:
    its pgm estimate of the data is ``debiased_oracle``'s."""
    S = _beta_counts(60, 3, 600, seed=4)
    res = cf.EvalResults.from_counts(S, 600)
    kw = dict(backend="cpp", latent_classes=1, family="logitnormal")
    a = cf.audit(
        res,
        n_sims=2,
        n_workers=1,
        worlds=("latent",),
        methods=("pgm", "naive"),
        sim_prompts=20,
        **kw,
    )
    assert (
        a.data_estimates["value"]["pgm"] == cf.debiased_oracle(res, "pgm", **kw).value
    )
