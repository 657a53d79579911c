"""``quote`` of an audit that simulated no world (many draws per cell, where pgm
returns the naive oracle): the interval ``naive +- (z SE + BIAS_FACTOR B)`` and
its explanation at any level, and the same answer through ``debiased_oracle``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import capfront as cf
from capfront.debias import audit_result, many_draws
from capfront.debias.audit import BIAS_FACTOR, AuditResult, quote


@pytest.fixture(scope="module")
def shortcut():
    r = np.random.default_rng(1)
    p = r.beta(2, 2, (40, 4))
    res = cf.EvalResults.from_counts(r.binomial(10_000, p), 10_000)
    a = cf.audit(res)
    pgm = cf.debiased_oracle(res, "pgm")
    assert a.n_sims == 0 and a.recommended == "pgm"  # the shortcut, or no test
    return res, a, pgm


def _expected(pgm, level: float) -> tuple[float, float, float]:
    z = float(stats.norm.ppf(0.5 + level / 2))
    half = z * pgm.se + BIAS_FACTOR * pgm.diagnostics["naive_bias_bound"]
    return z, pgm.value - half, pgm.value + half


@pytest.mark.parametrize("level", [0.9, 0.99])
def test_quote_at_another_level(shortcut, level):
    res, a, pgm = shortcut
    q = quote(a, level=level)
    z, lo, hi = _expected(pgm, level)
    assert q["value"] == q["raw"] == pgm.value and q["level"] == level
    assert q["ci"] == pytest.approx((lo, hi), abs=1e-12)
    assert q["shortcut"] is True
    bound = pgm.diagnostics["naive_bias_bound"]
    how = q["how"]
    assert how.startswith(pgm.diagnostics["note"])  # the reason, first
    assert f"({z:.2f} x its standard error, {100 * pgm.se:.2f} points" in how
    assert f"plus twice that bound, {100 * bound:.2f} points)" in how
    assert "simulated world" not in how
    # debiased_oracle at that level gives the same interval and words
    d = cf.debiased_oracle(res, "pgm", audit=a, ci=level)
    assert (d.value, d.ci, d.level) == (q["value"], q["ci"], level)
    assert d.ci_method == how
    # naive is the same estimate: the same quote
    n = cf.debiased_oracle(res, "naive", audit=a, ci=level)
    assert (n.value, n.ci, n.ci_method) == (d.value, d.ci, how)


def test_quote_at_the_audit_level_is_the_audit_quote(shortcut):
    res, a, pgm = shortcut
    assert quote(a) == a.quoted
    z, lo, hi = _expected(pgm, 0.95)
    assert a.ci == pytest.approx((lo, hi), abs=1e-12)
    bound = pgm.diagnostics["naive_bias_bound"]
    assert a.quoted["how"] == (
        f"{pgm.diagnostics['note']}; the interval is the naive oracle +- (1.96 x "
        f"its standard error, {100 * pgm.se:.2f} points, plus twice that bound, "
        f"{100 * bound:.2f} points)"
    )
    assert a.note == "no worlds simulated: " + pgm.diagnostics["note"]
    d = cf.debiased_oracle(res, "pgm", audit=a)
    assert (d.value, d.ci, d.ci_method) == (a.value, a.ci, a.quoted["how"])


def test_population_interval_says_no_worlds(shortcut):
    res, a, pgm = shortcut
    d = cf.debiased_oracle(res, "pgm", audit=a, ci_target="population")
    rmse = float(np.hypot(pgm.se, pgm.diagnostics["naive_bias_bound"]))
    half = 1.959963984540054 * rmse
    assert d.ci == pytest.approx((d.value - half, d.value + half), abs=1e-12)
    assert "no worlds simulated" in d.ci_method
    assert "simulated worlds that reproduced" not in d.ci_method


def test_the_result_module_is_one_class_everywhere():
    """``AuditResult``, ``BIAS_FACTOR`` and ``quote`` live in
    ``debias.audit_result``; the old import paths name the same objects."""
    import capfront.debias as debias

    assert cf.AuditResult is debias.AuditResult is AuditResult
    assert AuditResult is audit_result.AuditResult is many_draws.AuditResult
    assert quote is audit_result.quote and BIAS_FACTOR == audit_result.BIAS_FACTOR


def test_untrusted_bracket_text_names_z() -> None:
    # the bracket's explanation says how it is widened: z x SE at the level
    res = cf.simulate(300, 3, 5, seed=2)
    a = cf.audit(res, n_sims=4, seed=0)
    a.trusted = False
    for lev, z in ((0.9, "1.64"), (0.95, "1.96")):
        q = quote(a, lev)
        assert f"{z} x its sampling SE" in q["how"]
        lo, hi = q["ci"]
        assert lo <= min(a.bracket) and hi >= max(a.bracket)


@pytest.fixture(scope="module")
def small_audit():
    return cf.audit(cf.simulate(80, 3, 6, seed=2), n_sims=2, seed=1)


@pytest.mark.parametrize(
    "method, passing, expected",
    [
        ("pgm", ("latent",), True),
        ("pgm", ("latent", "classes"), True),
        ("pgm", ("latent", "posterior"), False),  # a world that is not pgm's fit
        ("correlated", ("correlated",), True),
        ("correlated", ("correlated", "posterior"), False),
        ("pgm", ("correlated",), False),  # another model's world checks pgm
        ("jackknife", ("latent",), False),  # no model of its own
        ("pgm", (), False),  # nothing passed: untrusted, not self-audited
    ],
)
def test_self_audited(small_audit, method, passing, expected):
    """``self_audited``: every passing world is the quoted model's own fit."""
    import dataclasses

    worlds = ("latent", "classes", "posterior", "correlated")
    a = dataclasses.replace(
        small_audit,
        recommended=method,
        world_weights={w: float(w in passing) for w in worlds},
    )
    assert a.self_audited is expected
    assert audit_result.OWN_WORLDS["pgm"] == ("latent", "classes")
    # no simulated worlds (many draws per cell): nothing audited at all
    assert dataclasses.replace(a, n_sims=0).self_audited is False


def test_self_audited_correlated_reaches_towards_pgm(small_audit):
    """A correlated model quoted where only its own world passed counts half its
    distance to pgm's estimate as model spread (twice that, BIAS_FACTOR, in the
    interval); with another world passing, or for another method, none."""
    import dataclasses

    a0 = small_audit
    table = a0.table.copy()
    table.loc["correlated"] = table.loc["pgm"]
    values = {**a0.data_estimates["value"], "correlated": 0.70, "pgm": 0.74}
    a = dataclasses.replace(
        a0,
        table=table,
        recommended="correlated",
        world_weights={"latent": 0.0, "posterior": 0.0, "correlated": 1.0},
        data_estimates={**a0.data_estimates, "value": values},
    )
    assert a.self_audited
    spread = audit_result.RIVAL_SHARE * 0.04
    assert a.model_spread() == pytest.approx(spread)
    row = table.loc["correlated"]
    z = float(stats.norm.ppf(0.5 + a.level / 2))
    half = z * row["sd"] + BIAS_FACTOR * max(row["max_abs_bias"], spread)
    lo, hi = a.interval(0.70)
    assert (lo, hi) == pytest.approx((0.70 - half, 0.70 + half), abs=1e-12)
    assert "half its distance to the pgm estimate, 2.00 points" in (
        audit_result.explain(a)
    )
    # the words follow the constant
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(audit_result, "RIVAL_SHARE", 0.25)
        assert "0.25 times its distance to the pgm estimate, 1.00 points" in (
            audit_result.explain(a)
        )
    # another world passed too: the correlated model was checked by it
    b = dataclasses.replace(a, world_weights={"posterior": 1.0, "correlated": 1.0})
    assert not b.self_audited and b.model_spread() == 0.0
    # pgm keeps its own rival models' spread; other methods have none
    assert a.model_spread("pgm") == audit_result._spread(a.sensitivity)
    assert a.model_spread("jackknife") == 0.0
