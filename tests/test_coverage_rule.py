"""Incomplete coverage: the frontier tables and the bootstrap statistics compare
single models and oracles on the prompts every model ran, like
``capfront.single_models`` and ``capfront.naive_oracle``."""

from __future__ import annotations

import numpy as np
import pytest

import capfront as cf


@pytest.fixture(scope="module")
def cut() -> cf.EvalResults:
    """Model 'weak' is right on 40% of the prompts but was run only on 60
    prompts, mostly ones it solves; 'strong' (70%) and 'mid' ran everything."""
    rng = np.random.default_rng(3)
    N = 200
    scores = np.zeros((N, 3, 4))
    scores[:, 0] = rng.random((N, 4)) < 0.7
    scores[:, 1] = rng.random((N, 4)) < 0.5
    scores[:, 2] = rng.random((N, 4)) < 0.4
    ran = np.argsort(-scores[:, 2].sum(axis=1), kind="stable")[:60]
    mask = np.zeros((N, 3, 4), bool)
    mask[:, :2] = True
    mask[ran, 2] = True
    return cf.EvalResults.from_arrays(
        scores, mask=mask, models=["strong", "mid", "weak"], cost=[1.0, 2.0, 3.0]
    )


def test_versus_best_single_on_common_prompts(cut):
    common = cut.common_prompts
    assert common.sum() == 60
    table = cf.frontier(cut).versus_best_single()
    row = table.iloc[-1]
    model, acc, cost = cf.best_single(cut)
    assert row["best_model"] == model
    assert row["best_accuracy"] == pytest.approx(acc)
    assert row["n_prompts"] == 60
    # on the same prompts the frontier is never below the best single model
    assert row["frontier_quality_at_best_cost"] >= acc - 1e-12
    assert 0.05 < row["error_reduction"] <= 1
    # 'weak' looks best on its own prompts; on all prompts it is not
    own = cf.single_models(cut, on="all")
    assert own["accuracy"].idxmax() == "weak"


def test_bootstrap_oracle_statistics_on_common_prompts(cut):
    for stat, want in (
        ("best_single", cf.best_single(cut)[1]),
        ("naive_oracle", cf.naive_oracle(cut).value),
        (
            "oracle_gain",
            cf.naive_oracle(cut).value - cf.best_single(cut)[1],
        ),
    ):
        got = cf.bootstrap(cut, stat, n_resamples=50, seed=1)
        assert got.estimate == pytest.approx(want, abs=1e-12), stat
    gain = cf.bootstrap(cut, "oracle_gain", n_resamples=50, seed=1)
    assert gain.estimate >= 0


def test_report_compares_debiased_oracle_and_gap_on_common_prompts(cut):
    from capfront.baselines import on_common_prompts
    from capfront.report import build_report

    rep = build_report(cut, n_resamples=20, audit_sims=0)
    deb = rep.data["debiased_oracle"]
    assert deb["n_prompts"] == 60
    common = on_common_prompts(cut)
    want = cf.debiased_oracle(common, deb["method"]).value
    assert deb["value"] == pytest.approx(want, abs=1e-12)
    # the best single model it is compared with is on the same prompts
    best = rep.data["single_models"]["best"]["accuracy"]
    assert best == pytest.approx(cf.best_single(cut)[1])
