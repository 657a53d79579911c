"""The robustness battery's runner (docs/scripts/robustness.py): keys, rows, resume
and the tables' arithmetic."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "scripts"))
import robustness as rb  # noqa: E402

from capfront.debias.latent import FAMILIES  # noqa: E402


def test_seed_is_a_stable_hash_of_the_key() -> None:
    assert rb.seed_of("topics", 4, 5, 0) == rb.seed_of("topics", 4, 5, 0)
    seeds = {
        rb.seed_of(f, L, G, r)
        for f in ("topics", "lowrank")
        for L in (4, 12)
        for G in (5, 10)
        for r in range(3)
    }
    assert len(seeds) == 24
    assert rb.seed_of("topics", 4, 5, 0) == 1454897380  # crc32: same in every process


def test_run_methods_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rb, "POP", 500)
    key = {"tag": "t", "family": "dominant", "L": 3, "G": 5, "rep": 0}
    row = rb.run_methods(key, 150)
    assert row["N"] == 150 and row["seed"] == rb.seed_of("dominant", 3, 5, 0)
    for m in rb.METHODS:
        assert 0.0 <= row[m] <= 1.0, m
    assert row["naive"] == pytest.approx(row["naive_value"])
    assert row["crossfit"] < row["naive"]  # cross-fitting is biased down
    # the AIC pick is pgm's or the correlated model's estimate, by the lower AIC
    pick = "correlated" if row["correlated_aic"] < row["pgm_aic"] else "pgm"
    assert row[rb.AIC_PICK] == row[pick]
    assert row["pgm_classes"] >= 1 and row["pgm_family"] in FAMILIES
    assert 0.0 <= row["oracle"] <= 1.0 and 0.0 <= row["population_oracle"] <= 1.0


def test_stats_and_target() -> None:
    err = np.array([0.01, 0.03, np.nan])
    bias, se, rmse, se_rmse = rb._stats(err)
    assert bias == pytest.approx(2.0) and se == pytest.approx(1.0)
    assert rmse == pytest.approx(np.sqrt(5.0)) and se_rmse > 0
    assert rb._target(0.002, 0.001) and not rb._target(0.0021, 0.008)
    assert rb._target(-0.01, 0.04) and not rb._target(0.011, 0.04)


def _rows(tag: str = "t") -> pd.DataFrame:
    rows = []
    for rep in range(4):
        row = {"tag": tag, "family": "topics", "L": 4, "G": 5, "rep": rep}
        row.update(oracle=0.80, population_oracle=0.80, naive_value=0.84)
        row.update({m: 0.80 + 0.001 * rep for m in rb.METHODS}, naive=0.84)
        row.update(recommended="pgm", value=0.80 + 0.01 * rep, lo=0.795, hi=0.815)
        row.update(pop_lo=0.70, pop_hi=0.90, audit_seconds=1.0)
        rows.append(row)
    return pd.DataFrame(rows)


def test_tables_from_rows() -> None:
    rows = _rows()
    text = rb.method_table(rows, "t")
    # naive bias +4 points; every other method +0.15 (within a quarter: marked)
    # Monte Carlo SE of the bias: the SD 0.129 of 0, 0.1, 0.2, 0.3 over sqrt(4)
    row = "| topics | 4 | 5 | 4 | +4.00 +- 0.00 (4.00) | +0.15* +- 0.06 (0.19) |"
    assert row in text
    assert "| topics | 1 | 1/1; 0.04; 0.19 |" in rb.summary_table(rows, "t")
    audit = rb.audit_table(rows, rows, "t")
    # the interval [0.795, 0.815] is the same in every rep
    # and holds the truth 0.80: 4/4 covered (above 99%: not marked)
    assert "| 4/4 | 4/4 |" in audit
    assert "4/4 = 100%" in rb.audit_summary(rows, "t")


def test_append_resumes_and_widens(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    rb._append(path, [{"tag": "a", "family": "f", "L": 1, "G": 2, "rep": 0, "x": 1}])
    rb._append(path, [{"tag": "a", "family": "f", "L": 1, "G": 2, "rep": 1, "x": 2}])
    assert rb._done(path, "a") == {("a", "f", 1, 2, 0), ("a", "f", 1, 2, 1)}
    assert rb._done(path, "b") == set()
    rb._append(path, [{"tag": "b", "family": "f", "L": 1, "G": 2, "rep": 0, "y": 3}])
    back = pd.read_csv(path)
    assert list(back["x"].fillna(-1)) == [1, 2, -1] and back["y"].iloc[2] == 3


def test_compare_pairs_the_keys_both_tags_ran() -> None:
    a = _rows("a")
    b = _rows("b").iloc[:2].copy()  # "b" ran only reps 0 and 1
    b["pgm"] = b["oracle"] + 0.01  # +1 point: off target (naive bias 4 points)
    b["lo"], b["hi"] = 0.85, 0.9  # misses the truth 0.80
    rows = pd.concat([a, b], ignore_index=True)
    text = rb.compare_table(rows, rows, "a", "b")
    # one cell, 2 paired reps; a: +0.05 points mean bias, b: +1.00
    assert "| topics | 1 (2) | 1 / 0 | 0.05 / 1.00 |" in text
    assert "| 2 | " in text and "2/2 / 0/2 |" in text


def test_many_draws_battery_rows_back_the_docs():
    """docs/debiasing.md "Many draws per cell": the saved rows are binned fits,
    each within 0.1 points of the exact-count fit, on eight families."""
    import json

    import many_draws_battery as mdb

    rows = [json.loads(x) for x in mdb.ROWS.read_text().splitlines()]
    assert len(rows) >= 32 and all(r["coarse"] and r["G"] > 100 for r in rows)
    assert max(abs(r["binned"] - r["exact"]) for r in rows) < 1e-3
    assert len({r["family"] for r in rows}) >= 8


def test_predicted_coverage_is_the_normal_probability() -> None:
    """One cell whose quoted method (pgm) has errors +1, +3 points (mean 2, SD
    1.414): an audit with half-width 2 points predicts P(|N(2, 1.414)| <= 2)."""
    from scipy.stats import norm

    m = pd.DataFrame(
        [
            {
                "tag": "m",
                "family": "f",
                "L": 4,
                "G": 5,
                "rep": r,
                "oracle": 0.5,
                "pgm": 0.5 + e,
                "correlated": np.nan,
                "naive": 0.6,
            }
            for r, e in enumerate((0.01, 0.03))
        ]
    )
    a = pd.DataFrame(
        [
            {
                "tag": "a",
                "family": "f",
                "L": 4,
                "G": 5,
                "rep": 0,
                "oracle": 0.5,
                "value": 0.52,
                "lo": 0.50,
                "hi": 0.54,
                "recommended": "pgm",
                "trusted": True,
                "sd": 0.005,
                "max_abs_bias": 0.001,
                "spread": 0.002,
            }
        ]
    )
    text = rb.predicted_coverage(a, m, ["a"], ["m"])
    s = 0.01 * np.sqrt(2.0)
    want = norm.cdf((0.02 - 0.02) / s) - norm.cdf((-0.02 - 0.02) / s)
    assert f"| f | 1 | 1/1 = 100% | {want:.1%} | 0 |" in text
    # the audit's rule rebuilds the same half-width: z 0.005 + 2 * 0.002 = 1.38
    # points; the rule without the spread: z 0.005 + 2 * 0.001
    rules = rb.rule_table(a, m, ["a"], ["m"])
    z = norm.ppf(0.975)
    for h in (z * 0.005 + 0.004, z * 0.005 + 0.002):
        p = norm.cdf((h - 0.02) / s) - norm.cdf((-h - 0.02) / s)
        assert f"0% / {p:.1%}" in rules  # the estimate 2 points off: not covered
