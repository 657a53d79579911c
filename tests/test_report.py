"""The report builder: numbers equal the public API, every section is plain JSON,
renderers and files work, sections that do not apply say why."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import capfront
from capfront.adapters import load
from capfront.report import build_report, fmt, jsonable, to_markdown

FIX = Path(__file__).resolve().parent / "data" / "adapters"


@pytest.fixture(scope="module")
def sim():
    return capfront.simulate(150, 4, 20, n_topics=2, seed=3)


@pytest.fixture(scope="module")
def sim_report(sim):
    return build_report(sim, seed=1, n_resamples=100, audit_sims=3)


def test_report_is_plain_json(sim_report):
    text = sim_report.to_json()
    again = json.loads(text)
    assert again["settings"] == {
        "seed": 1,
        "n_resamples": 100,
        "level": 0.95,
        "audit_sims": 3,
    }
    for section in ("data", "single_models", "naive_oracles", "truth"):
        assert section in again
    for section in (
        "single_models",
        "naive_oracles",
        "frontier",
        "debiased_oracle",
        "gap_decomposition",
        "latency_frontier",
    ):
        value = again.get(section)
        assert not (isinstance(value, dict) and value.get("failed")), value


def test_numbers_equal_the_api(sim, sim_report):
    d = sim_report.data
    assert d["data"]["n_prompts"] == 150 and d["data"]["n_models"] == 4
    assert d["data"]["draws_per_cell"] == {"min": 20, "max": 20}
    table = capfront.single_models(sim)
    for row in d["single_models"]["models"]:
        assert row["accuracy"] == pytest.approx(table.loc[row["model"], "accuracy"])
        assert row["mean_cost"] == pytest.approx(table.loc[row["model"], "mean_cost"])
    model, acc, cost = capfront.best_single(sim)
    assert d["single_models"]["best"] == {
        "model": model,
        "accuracy": acc,
        "cost": pytest.approx(cost),
    }
    for kind in ("prehoc", "posthoc", "union"):
        orc = capfront.naive_oracle(sim, kind)
        assert d["naive_oracles"][kind]["value"] == pytest.approx(orc.value)
        assert d["naive_oracles"][kind]["cost"] == pytest.approx(orc.cost)
        assert d["naive_oracles"][kind]["gain_over_best_single"] == pytest.approx(
            orc.value - acc
        )
    assert d["truth"]["true_oracle"] == pytest.approx(sim.true_oracle)


def test_frontier_section_equals_the_api(sim, sim_report):
    if not hasattr(capfront, "frontier"):
        pytest.skip("capfront.frontier not in this version")
    fr = capfront.frontier(sim)
    sec = sim_report.data["frontier"]["prehoc"]
    assert sec["aiq"] == pytest.approx(fr.aiq())
    assert sec["vertices"]["n_vertices"] == len(fr.vertices)
    ref = fr.versus_best_single()
    row = sec["versus_best_single"][0]
    assert row["error_reduction"] == pytest.approx(ref["error_reduction"].iloc[0])
    assert row["cost_reduction"] == pytest.approx(ref["cost_reduction"].iloc[0])
    post = capfront.frontier(sim, posthoc=True)
    assert sim_report.data["frontier"]["posthoc"]["aiq"] == pytest.approx(post.aiq())


def test_debiased_section_equals_the_api(sim, sim_report):
    if not hasattr(capfront, "debiased_oracle"):
        pytest.skip("capfront.debiased_oracle not in this version")
    sec = sim_report.data["debiased_oracle"]
    assert "value" in sec, sec
    if hasattr(capfront, "audit"):
        audit = capfront.audit(sim, n_sims=3, seed=1)
        assert sec["audit"]["recommended"] == audit.recommended == sec["method"]
    res = capfront.debiased_oracle(sim, sec["method"], ci=0.95, n_resamples=100, seed=1)
    assert sec["value"] == pytest.approx(res.value)
    if res.ci is not None:
        assert sec["ci"] == pytest.approx(list(res.ci))


def test_gap_section_equals_the_api(sim, sim_report):
    if not hasattr(capfront, "gap_decomposition"):
        pytest.skip("capfront.gap_decomposition not in this version")
    sec = sim_report.data["gap_decomposition"]
    _, acc, _ = capfront.best_single(sim)
    ref = capfront.gap_decomposition(sim, acc, level=0.95)
    assert sec["o_exp"] == pytest.approx(ref.o_exp)
    assert sec["o_repro_lower"] == pytest.approx(ref.o_repro_lower)
    assert "Gap decomposition" in sim_report.to_markdown()


def test_gap_decomposition_needs_20_draws():
    if not hasattr(capfront, "gap_decomposition"):
        pytest.skip("capfront.gap_decomposition not in this version")
    few = capfront.simulate(60, 3, 5, seed=0)
    rep = build_report(few, n_resamples=50, audit_sims=0)
    assert "20 draws" in rep.data["gap_decomposition"]["skipped"]


def test_graded_scores_skip_the_union_oracle():
    rng = np.random.default_rng(0)
    res = capfront.EvalResults.from_arrays(
        rng.uniform(size=(30, 3, 2)), cost=np.array([1.0, 2.0, 3.0])
    )
    rep = build_report(res, n_resamples=50, audit_sims=0)
    assert "binary" in rep.data["naive_oracles"]["union"]["skipped"]
    oracles = rep.to_markdown().split("## Oracles")[1].split("\n## ")[0]
    assert "| single-draw union oracle" not in oracles
    assert "- union: the union oracle needs binary" in oracles


def test_benchmarks_and_missing_cells():
    d = load(FIX / "lm_eval_runs")
    rep = build_report(d.results, n_resamples=50, audit_sims=0)
    data = rep.data
    assert data["data"]["benchmarks"] == {"arc_easy": 2, "gsm8k": 3}
    assert data["data"]["draws_per_cell"] == {"min": 1, "max": 2}
    rows = {r["benchmark"]: r for r in data["by_benchmark"]}
    sub = d.results.by_benchmark()["gsm8k"]
    assert rows["gsm8k"]["prehoc_oracle"] == pytest.approx(
        capfront.naive_oracle(sub, "prehoc").value
    )


def test_markdown_and_save(sim_report, tmp_path):
    md = sim_report.to_markdown()
    for title in ("# capfront report", "## Data", "## Single models", "## Oracles"):
        assert title in md
    written = sim_report.save(tmp_path / "out")
    names = {p.name for p in written}
    assert {"report.json", "report.md", "frontier.png"} <= names
    if (
        "latency_frontier" in sim_report.data
        and "skipped" not in sim_report.data["latency_frontier"]
    ):
        assert "latency_frontier.png" in names
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["files"] == [p.name for p in written]
    assert (tmp_path / "out" / "frontier.png").read_bytes()[:4] == b"\x89PNG"


def test_rich_output(sim_report):
    from rich.console import Console

    console = Console(record=True, width=120)
    sim_report.print(console)
    text = console.export_text()
    assert "Single models" in text and "naive prehoc oracle" in text


def test_save_without_frontier_api(tmp_path, monkeypatch):
    """The figure falls back to single models and naive oracles."""
    res = load(FIX / "counts.csv").results
    monkeypatch.delattr(capfront, "frontier", raising=False)
    rep = build_report(res, n_resamples=50, audit_sims=0)
    assert "capfront.frontier" in rep.data["unavailable"]
    rep.save(tmp_path)
    assert (tmp_path / "frontier.png").exists()


def test_failed_section_does_not_lose_the_report(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(capfront, "frontier", broken, raising=False)
    res = load(FIX / "counts.csv").results
    rep = build_report(res, n_resamples=50, audit_sims=0)
    assert rep.data["frontier"]["failed"] is True
    assert "boom" in rep.data["frontier"]["skipped"]
    assert rep.data["naive_oracles"]["prehoc"]["value"] == pytest.approx(
        capfront.naive_oracle(res).value
    )


def test_bad_settings():
    res = load(FIX / "counts.csv").results
    with pytest.raises(ValueError, match="level"):
        build_report(res, level=1.5)
    with pytest.raises(ValueError, match="n_resamples"):
        build_report(res, n_resamples=0)
    with pytest.raises(ValueError, match="audit_sims"):
        build_report(res, audit_sims=-1)


def test_jsonable_and_fmt():
    @dataclass
    class Thing:
        a: float
        b: np.ndarray

    out = jsonable(
        {
            "x": np.float64("nan"),
            "t": Thing(1.5, np.arange(3)),
            "df": pd.DataFrame({"m": ["a"], "v": [np.int64(2)]}),
            "big": np.zeros(5000),
            "inf": float("inf"),
        }
    )
    assert out == {
        "x": None,
        "t": {"a": 1.5, "b": [0, 1, 2]},
        "df": [{"m": "a", "v": 2}],
        "big": {"shape": [5000], "dtype": "float64"},
        "inf": None,
    }
    json.dumps(out, allow_nan=False)
    assert fmt(0.8561234) == "0.8561"
    assert fmt(0.5, "error_reduction") == "50.0%"
    assert fmt(None) == "-"
    assert fmt(12345.678) == "12,345.68"
    assert "| source | a (?) |" in to_markdown({"source": {"path": "a"}})


def test_frontier_intervals_per_benchmark_when_one_fails():
    """EvalPerf example: HumanEval+'s best model is nearly perfect, so some bootstrap
    replicates have no error to reduce; the other rows still get intervals."""
    if not hasattr(capfront, "frontier"):
        pytest.skip("capfront.frontier not in this version")
    from importlib import resources

    from capfront.cli import demo_path

    with resources.as_file(demo_path("evalperf")) as path:
        res = load(path).results
    rep = build_report(res, n_resamples=100, audit_sims=0)
    sec = rep.data["frontier"]["prehoc"]
    rows = {r["benchmark"]: r for r in sec["versus_best_single"]}
    ref = capfront.frontier(res, benchmark="MBPP+").versus_best_single(
        ci=0.95, n_resamples=100, seed=0
    )
    if "error_reduction_low" not in rows["MBPP+"]:
        assert any("no intervals" in n for n in sec.get("notes", []))
        return
    assert rows["MBPP+"]["error_reduction_low"] == pytest.approx(
        ref["error_reduction_low"].iloc[0]
    )
    if "error_reduction_low" not in rows["HumanEval+"]:
        assert any("HumanEval+" in n for n in sec["notes"])
