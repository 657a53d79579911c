"""Many draws per cell (issue 22): pgm and the audit at G = 10**4 and 10**6 with
few prompts, where the naive oracle's bias is provably below its standard error:
both answer at once with the naive oracle, its interval and the reason."""

from __future__ import annotations

import time

import numpy as np
import pytest

import capfront as cf
from capfront.debias.audit import BIAS_FACTOR


def _beta_results(G: int, N: int = 40, L: int = 4, seed: int = 1):
    r = np.random.default_rng(seed)
    p = r.beta(2, 2, (N, L))
    S = r.binomial(G, p)
    return cf.EvalResults.from_counts(S, G), S, p


@pytest.mark.parametrize("G", [10_000, 10**6])
def test_audit_at_many_draws_quotes_the_naive_oracle(G, backend):
    res, S, p = _beta_results(G)
    naive = float((S / G).max(axis=1).mean())
    t0 = time.perf_counter()
    a = cf.audit(res, backend=backend)
    pgm = cf.debiased_oracle(res, "pgm", backend=backend)
    assert time.perf_counter() - t0 < 10.0  # (it took > 600 s before the shortcut)
    assert a.value == pytest.approx(naive, abs=1e-15) and pgm.value == a.value
    bound = pgm.diagnostics["naive_bias_bound"]
    assert bound == pytest.approx(np.sqrt(np.log(4) / (2 * G)))
    # the interval: +- (z SE + BIAS_FACTOR x the bound), and it holds the truth
    half = 1.959963984540054 * pgm.se + BIAS_FACTOR * bound
    assert a.ci == pytest.approx((naive - half, naive + half), abs=1e-12)
    assert a.ci[0] <= p.max(axis=1).mean() <= a.ci[1]
    assert a.recommended == "pgm" and a.n_sims == 0 and a.trusted
    for text in (a.note, a.quoted["how"]):
        assert "naive oracle" in text and f"{bound:.2g}" in text
    table = a.to_frame()
    assert list(table.index) == ["pgm", "naive"]
    assert table.loc["pgm", "max_abs_bias"] == bound
    assert table.loc["pgm", "sd"] == pytest.approx(pgm.se)
    # quoting through debiased_oracle gives the audit's numbers and reason
    q = cf.debiased_oracle(res, "pgm", audit=a, backend=backend)
    assert (q.value, q.ci) == (a.value, a.ci)
    assert q.ci_method == a.quoted["how"]
    assert "AuditResult(recommended='pgm'" in repr(a)


def test_extrapolation_sizes_bounded_at_many_draws():
    """Above FIT_POINTS_MAX sizes the fit uses that many, spread evenly: the
    extrapolated oracle is the same as the fit on every size of the upper half to
    well within its noise, and few sizes keep the audit's curve cost bounded."""
    from capfront.debias.extrapolation import (
        FIT_POINTS_MAX,
        curve_rows,
        decay_decomposition,
        fit_sizes,
    )

    assert np.array_equal(fit_sizes(20), np.arange(10, 21))
    big = fit_sizes(600)
    assert len(big) == FIT_POINTS_MAX and big[0] == 300 and big[-1] == 600
    assert np.all(np.diff(big) > 0)
    rng = np.random.default_rng(4)
    p = rng.beta(2, 2, (400, 5))
    S, G = rng.binomial(600, p), np.full((400, 5), 600)
    every = np.arange(300, 601)
    full = decay_decomposition(every, curve_rows(S, G, every), None).estimate()
    spread = cf.debiased_oracle(cf.EvalResults.from_counts(S, 600), "extrapolation")
    assert abs(spread.value - full) < 2e-4


def test_audit_leaves_extrapolation_out_above_its_max_g():
    """Above EXTRAPOLATION_MAX_G draws the default audit does not score
    extrapolation (its curve would dominate the audit's time); named, it is."""
    from capfront.debias.audit import EXTRAPOLATION_MAX_G

    rng = np.random.default_rng(2)
    g = EXTRAPOLATION_MAX_G + 20
    res = cf.EvalResults.from_counts(rng.binomial(g, rng.beta(2, 2, (80, 3))), g)
    a = cf.audit(res, n_sims=2, seed=1, sensitivity=False)
    assert "extrapolation" not in a.table.index
    b = cf.audit(
        res, n_sims=2, seed=1, sensitivity=False, methods=("naive", "extrapolation")
    )
    assert "extrapolation" in b.table.index
