"""pgm at many draws per cell (issue 22): the fits read coarsened counts as
bins (:class:`capfront.debias.many_draws.BinnedCounts`), each with its exact
likelihood ``P(lo <= S <= hi | G, p)``; up to ``COARSE_MIN_G`` draws a cell
nothing changes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

import capfront as cf
from capfront.debias import latent, many_draws
from capfront.debias.many_draws import BinnedCounts, bins, coarse_counts


def _counts(N: int, L: int, G: int, a: float = 2.0, seed: int = 0) -> np.ndarray:
    r = np.random.default_rng(seed)
    return r.binomial(G, r.beta(a, a, (N, L)))


@pytest.mark.parametrize("G", [101, 600, 10_000])
def test_bins_are_the_rule_preimages(G):
    rule = (many_draws.COARSE_MIN_G, many_draws.COARSE_STEP, many_draws.COARSE_LEVELS)
    s = np.arange(G + 1)
    m = many_draws._rounded(s, np.full_like(s, G), *rule[1:])
    assert (np.diff(m) >= 0).all() and m[0] == 0 and m[-1] == G
    u = np.unique(m)
    lo, hi = bins(np.full_like(u, G), u, rule)
    # contiguous, covering 0 .. G once, each bin mapped to its own count
    assert lo[0] == 0 and hi[-1] == G and (lo[1:] == hi[:-1] + 1).all()
    np.testing.assert_array_equal(m[lo], u)
    np.testing.assert_array_equal(m[hi], u)
    # 0 and G are bins of their own; at most COARSE_LEVELS + 1 bins
    assert hi[0] == 0 and lo[-1] == G and len(u) <= rule[2] + 1
    # draw counts up to min_g: every count its own bin
    lo2, hi2 = bins(np.array([50, 50]), np.array([3, 7]), rule)
    np.testing.assert_array_equal(lo2, [3, 7])
    np.testing.assert_array_equal(hi2, [3, 7])


@pytest.mark.parametrize("G", [150, 2000])
def test_bin_likelihood_is_the_sum_of_its_counts(G):
    rule = (100, 1.0, 256)
    s = np.arange(G + 1)
    u = np.unique(many_draws._rounded(s, np.full_like(s, G), 1.0, 256))
    g = np.full_like(u, G)
    lo, hi = bins(g, u, rule)
    got = latent._loglik_bins(g, lo, hi)
    full = latent._loglik_rows(np.full(G + 1, G), s)
    ref = np.array(
        [logsumexp(full[a : b + 1], axis=0) for a, b in zip(lo, hi, strict=True)]
    )
    # to 1e-9 nats down to e^-500 (below, where the incomplete Beta functions
    # reach denormal numbers, the rows only matter as "about zero": the
    # kernels floor the marginal likelihoods at 1e-300)
    near = ref > -500
    assert np.abs(got - ref)[near].max() < 1e-9
    assert np.isfinite(got).all()


def test_binned_counts_keep_their_rule_and_make_binned_tables():
    S = _counts(300, 3, 600)
    G = np.full(S.shape, 600)
    B = coarse_counts(S, G)
    assert isinstance(B, BinnedCounts) and B.rule == (
        many_draws.COARSE_MIN_G,
        many_draws.COARSE_STEP,
        many_draws.COARSE_LEVELS,
    )
    assert B[::2].rule == B.rule and B[np.array([0, 5, 7])].rule == B.rule
    tab_b, rows_b = latent._cells(B, G)
    tab_r, rows_r = latent._cells(np.asarray(B), G)  # the same counts read as exact
    assert tab_b.offset is None and tab_b.n_rows == len(np.unique(np.asarray(B)))
    assert not np.array_equal(tab_b.loglik, tab_r.loglik[: tab_b.n_rows])
    # the same cells, the same row numbers (compact rows of the same pairs)
    np.testing.assert_array_equal(
        np.asarray(B)[rows_b >= 0].size, np.asarray(B)[rows_r >= 0].size
    )
    # a bin's likelihood sums to one over the bins of a draw count
    lik = np.exp(latent._loglik_bins(*_all_bins(600, B.rule)))
    np.testing.assert_allclose(lik.sum(axis=0), 1.0, atol=1e-9)


def _all_bins(G: int, rule: tuple):
    s = np.arange(G + 1)
    u = np.unique(many_draws._rounded(s, np.full_like(s, G), *rule[1:]))
    g = np.full_like(u, G)
    return (g, *bins(g, u, rule))


def test_up_to_min_g_the_counts_are_not_coarsened():
    """G <= COARSE_MIN_G (100): no coarsening, the fit reads the counts as they
    are (the code path and bits of before)."""
    S = _counts(200, 3, many_draws.COARSE_MIN_G)
    res = cf.EvalResults.from_counts(S, many_draws.COARSE_MIN_G)
    assert coarse_counts(S, np.full(S.shape, many_draws.COARSE_MIN_G)) is None
    out = cf.debiased_oracle(res, "pgm", backend="cpp", latent_classes=1)
    assert not out.diagnostics["coarsened_counts"]


def test_binned_fit_is_deterministic():
    """Repeated calls, with the tables cached or not, give the same bits (the
    closeness to the exact counts' fit: tests/test_many_draws_coarse.py)."""
    S = _counts(150, 4, 300, seed=3)
    res = cf.EvalResults.from_counts(S, 300)
    kw = dict(backend="cpp", latent_classes=1, family="logitnormal")
    a = cf.debiased_oracle(res, "pgm", **kw)
    b = cf.debiased_oracle(res, "pgm", **kw)
    latent._COMPACT_CACHE.clear()
    c = cf.debiased_oracle(res, "pgm", **kw)
    assert a.diagnostics["coarsened_counts"]
    assert a.value == b.value == c.value and a.se == b.se == c.se


def test_binned_fit_thread_count_independent():
    from capfront._backend import get_num_threads, set_num_threads

    S = _counts(120, 3, 400, seed=6)
    res = cf.EvalResults.from_counts(S, 400)
    kw = dict(backend="cpp", latent_classes=2, family="logitnormal", max_iter=6)
    n0 = get_num_threads()
    set_num_threads(1)
    try:
        one = cf.debiased_oracle(res, "pgm", **kw)
        set_num_threads(4)
        four = cf.debiased_oracle(res, "pgm", **kw)
    finally:
        set_num_threads(n0)
    two = cf.debiased_oracle(res, "pgm", **kw)
    assert one.value == four.value
    assert one.value == two.value
