"""The report builder: numbers equal the public API, every section is plain JSON,
renderers and files work, sections that do not apply say why."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import capfront
from capfront.adapters import load
from capfront.report import (
    blocks,
    build_report,
    fmt,
    jsonable,
    plain,
    print_rich,
    summary,
    to_markdown,
)

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
    audit = capfront.audit(sim, n_sims=3, seed=1)
    assert sec["audit"]["recommended"] == audit.recommended == sec["method"]
    # the quoted interval is the one debiased_oracle gives with the audit
    quoted = capfront.debiased_oracle(
        sim, sec["method"], audit=audit, ci=0.95, n_resamples=100, seed=1
    )
    assert sec["value"] == pytest.approx(quoted.value)
    assert sec["ci"] == pytest.approx(list(quoted.ci))
    assert sec["ci_method"] == quoted.ci_method
    # the prompt bootstrap's interval is kept, in the JSON only
    boot = capfront.debiased_oracle(
        sim, sec["method"], ci=0.95, n_resamples=100, seed=1
    )
    others = {o["name"]: o for o in sec["other_intervals"]}
    assert others["prompt_bootstrap"]["ci"] == pytest.approx(list(boot.ci))
    assert "audit_population" in others


def test_gap_section_equals_the_api(sim, sim_report):
    if not hasattr(capfront, "gap_decomposition"):
        pytest.skip("capfront.gap_decomposition not in this version")
    sec = sim_report.data["gap_decomposition"]
    _, acc, _ = capfront.best_single(sim)
    ref = capfront.gap_decomposition(sim, acc, level=0.95)
    assert sec["o_exp"] == pytest.approx(ref.o_exp)
    assert sec["o_repro_lower"] == pytest.approx(ref.o_repro_lower)
    assert "## Is the gain real? (gap decomposition)" in sim_report.to_markdown()


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
    oracles = rep.to_markdown().split("## Oracle")[1].split("\n## ")[0]
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
    for title in ("# capfront report", "## Data", "## Single models", "## Oracle"):
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
    assert "Single models" in text and "oracle, plug-in" in text


def test_save_without_frontier(tmp_path, monkeypatch):
    """A frontier section that cannot be computed is skipped with its reason, and
    the figure falls back to single models and naive oracles."""
    import capfront.report as report_mod

    def no_frontier(*args, **kwargs):
        raise ValueError("no frontier for this data")

    res = load(FIX / "counts.csv").results
    monkeypatch.setattr(report_mod, "_frontier_section", no_frontier)
    rep = build_report(res, n_resamples=50, audit_sims=0)
    assert rep.data["frontier"] == {"skipped": "no frontier for this data"}
    rep.save(tmp_path)
    assert (tmp_path / "frontier.png").exists()


def test_failed_section_does_not_lose_the_report(monkeypatch):
    import capfront.report as report_mod

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(report_mod, "frontier", broken)
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
    assert "| source | a |" in to_markdown({"source": {"path": "a"}})


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


# ---------------------------------------------------------------- wording rules
#: internal labels that must not reach a reader
INTERNAL = re.compile(r"SPEC\s*\d|\bseed 0\d\d\b|cluster-robust|SE over \d+ clusters")
LONG_NAMES = [
    "20251124_mini-v1.16.0_claude-opus-4-5-20251101",
    "20251118_mini-v1.15.0_gemini-3-pro-preview-20251118",
    "20250807_mini-v1.7.0_gpt-5-mini",
    "20251201_mini-v1.17.1_deepseek-v3.2-reasoner",
]


def rendered(rep_or_data, width: int = 100) -> str:
    """The rich text (at ``width`` columns) and the markdown of a report."""
    from rich.console import Console

    data = rep_or_data.data if hasattr(rep_or_data, "data") else rep_or_data
    console = Console(record=True, width=width)
    print_rich(data, console)
    return console.export_text() + "\n" + to_markdown(data)


@pytest.fixture(scope="module")
def one_draw():
    """G = 1 with cost and long run-prefixed model names (SWE-bench style)."""
    sim = capfront.simulate(200, 4, 1, n_topics=2, seed=5)
    cost = np.array([0.7, 0.05, 0.3, 0.02])
    return capfront.EvalResults.from_arrays(
        sim.scores, cost=cost, models=np.array(LONG_NAMES)
    )


@pytest.fixture(scope="module")
def one_draw_report(one_draw):
    return build_report(one_draw, n_resamples=50, audit_sims=2)


@pytest.fixture(scope="module")
def no_cost_report():
    sim = capfront.simulate(120, 3, 4, n_topics=2, seed=2)
    res = capfront.EvalResults.from_arrays(sim.scores)
    return build_report(res, n_resamples=50, audit_sims=0)


def test_no_internal_labels(sim_report, one_draw_report, no_cost_report):
    for rep in (sim_report, one_draw_report, no_cost_report):
        text = rendered(rep)
        assert not INTERNAL.search(text), INTERNAL.search(text)
    # pass-through messages from other modules are cleaned too
    assert plain("bootstrap bias correction (design §4c) is used") == (
        "bootstrap bias correction is used"
    )
    assert plain("bootstrap bias correction (SPEC 4c) is used") == (
        "bootstrap bias correction is used"
    )
    assert "cluster" not in plain("normal bound, cluster-robust SE over 2 clusters")


def test_one_number_one_interval(sim_report):
    deb = sim_report.data["debiased_oracle"]
    text = rendered(sim_report)
    lo, hi = deb["ci"]
    assert f"{fmt(lo)} to {fmt(hi)}" in text  # the quoted interval, in the table
    assert f"{100 * lo:.1f}% to {100 * hi:.1f}%" in text  # and in the summary
    for other in deb["other_intervals"]:  # the others stay in the JSON
        a, b = other["ci"]
        assert fmt(a) not in text and fmt(b) not in text, other
        assert f"{100 * a:.1f}% to" not in text
    assert "interval: the estimate plus or minus" in text  # said in plain words


def test_model_note_names_the_classes_family_and_bounds(sim_report):
    from capfront.report_sections import _known_words, _model_words

    deb = sim_report.data["debiased_oracle"]
    assert deb["method"] == "pgm"
    k = deb["details"]["latent_classes"]
    words = _model_words(deb)
    assert words.startswith("model: ") and words in rendered(sim_report)
    assert ("one class" if k == 1 else f"{k} latent classes") in words
    # the family the fit chose, and bounds only when they are not (0, 1)
    beta = {"method": "pgm", "details": {"family": "betabinomial", "latent_classes": 8}}
    assert "8 latent classes of prompts, Beta-distributed cell rates" in _model_words(
        beta
    )
    assert "floor" not in _model_words(beta)
    t = {
        "method": "pgm",
        "details": {"family": "logit_t", "latent_classes": 2, "bounds": [0.02, 0.97]},
    }
    assert "Student t" in _model_words(t)
    assert "a floor of 2.0% and a ceiling of 97.0%" in _model_words(t)
    # all-or-nothing models taken as known: named, with the share they solved
    greedy = {
        "method": "correlated",
        "details": {"known_models": ["m0", "m2"], "solved_by_known": 0.7},
    }
    words = _known_words(greedy)
    assert "2 model(s) answered all or nothing" in words and "(m0, m2" in words
    assert "they solved 70.0% of the prompts" in words
    assert _known_words(deb) == ""
    # a quoted method that needs no split: the audit names them
    aud = {"known_models": ["m1"], "solved_by_known": 0.5}
    assert "(m1: greedy" in _known_words({"method": "jackknife", "audit": aud})
    # other methods fit no latent model: no note
    assert _model_words({"method": "jackknife", "details": {}}) == ""
    assert _model_words({"method": "pgm", "details": {}}) == ""


@pytest.fixture(scope="module")
def small():
    return capfront.simulate(60, 3, 8, seed=4)


def test_interval_description_from_the_result(small, monkeypatch):
    """``ci_note`` (plain words from the estimator) wins over ``ci_method``."""
    import capfront.report as report_mod

    real = capfront.debiased_oracle

    def with_note(*args, **kwargs):
        res = real(*args, **kwargs)
        res.diagnostics["ci_note"] = (
            "made of the audit's measured error, in plain words"
        )
        return res

    monkeypatch.setattr(report_mod, "debiased_oracle", with_note)
    rep = build_report(small, n_resamples=20, audit_sims=2)
    assert rep.data["debiased_oracle"]["ci_note"].startswith("made of")
    assert "interval: made of the audit's measured error" in rendered(rep)


def test_audit_verdict_is_rendered(small, monkeypatch):
    """``trusted``, ``bracket`` and ``checks`` of the audit (when it has them)
    reach the JSON and the text in plain words."""
    import capfront.report as report_mod

    real = capfront.audit

    def verdict(*args, **kwargs):
        a = real(*args, **kwargs)
        a.trusted = False
        a.bracket = (0.61, 0.72)
        a.checks = pd.DataFrame(
            {"check": ["bias", "coverage"], "passed": [True, False]}
        )
        return a

    monkeypatch.setattr(report_mod, "run_audit", verdict)
    rep = build_report(small, n_resamples=20, audit_sims=2)
    audit = rep.data["debiased_oracle"]["audit"]
    assert audit["trusted"] is False and audit["bracket"] == [0.61, 0.72]
    assert audit["checks"][1] == {"check": "coverage", "passed": False}
    # the correlated model's comparison with pgm (None when it was not fitted)
    assert "correlated" in audit
    assert audit["correlated"] is None or isinstance(
        audit["correlated"]["aic_difference"], float
    )
    text = rendered(rep)
    assert "checks did not all pass" in text
    assert (
        "between the cross-fit value 61.0% (biased low) and the plug-in 72.0%" in text
    )
    assert "Audit checks" in text and "coverage" in text
    # an audit without a verdict renders none
    for key in ("trusted", "bracket", "checks"):
        audit[key] = None
    text = rendered(rep.data)
    assert "Audit checks" not in text and "bracket:" not in text
    assert "checks did not all pass" not in text


def test_self_audit_is_said(small, monkeypatch):
    """An audit whose passing worlds are all the quoted model's own says so in
    report.json (``self_audited``) and in the text, instead of the plain
    "checks passed" note."""
    import capfront.report as report_mod

    real = capfront.audit

    def own_only(*args, **kwargs):
        a = real(*args, **kwargs)
        a.trusted = True
        a.recommended = "pgm"
        a.world_weights = {w: float(w == "latent") for w in a.world_weights}
        a.world_weights["latent"] = 1.0
        return a

    monkeypatch.setattr(report_mod, "run_audit", own_only)
    rep = build_report(small, n_resamples=20, audit_sims=2)
    assert rep.data["debiased_oracle"]["audit"]["self_audited"] is True
    text = rendered(rep)
    assert "only the quoted model's own simulated world reproduced" in text
    assert "checks passed for at least one simulated world" not in text
    # another world passing too: the plain note
    rep.data["debiased_oracle"]["audit"]["self_audited"] = False
    text = rendered(rep.data)
    assert "only the quoted model's own" not in text
    assert "checks passed for at least one simulated world" in text


def test_no_phantom_files(sim_report, tmp_path):
    import copy

    data = copy.deepcopy(sim_report.data)
    data.pop("files", None)
    text = rendered(data)
    # report.json is only named as what --out writes
    assert text.count("report.json") == text.count("DIR/report.json") > 0
    assert ".png" not in text and "report.html" not in text
    rep = build_report(
        capfront.simulate(60, 3, 4, seed=1), n_resamples=20, audit_sims=0
    )
    rep.save(tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert "in report.json" in md and "DIR/report.json" not in md
    assert (tmp_path / "report.json").exists()


def test_one_draw_says_it_once(one_draw_report):
    text = rendered(one_draw_report)
    assert "needs at least 2 generations" not in text
    assert "bootstrap_bc" not in text
    md = one_draw_report.to_markdown()
    assert md.count("repeated draws") == 1  # said once
    assert "upper end" in md  # and what the plug-in means
    assert one_draw_report.data["debiased_oracle"]["one_draw"] is True


def test_no_cost_is_said_at_the_top(no_cost_report):
    md = no_cost_report.to_markdown()
    top = md.split("## What this means")[1].split("\n## ")[0]
    assert "no cost" in top and "one unit" in top
    assert "mean cost" not in md  # no column of made-up costs
    from capfront.frontier_plot import plot_frontier

    fr = no_cost_report.objects["frontier_posthoc"]
    ax = plot_frontier(fr)
    assert ax.get_xlabel() == "generations per prompt (no cost given)"
    import matplotlib.pyplot as plt

    plt.close(ax.figure)


def test_summary_from_the_numbers(sim_report):
    d = sim_report.data
    text = " ".join(summary(d))
    best = d["single_models"]["best"]
    assert best["model"] in text and f"{100 * best['accuracy']:.1f}%" in text
    assert f"{100 * d['debiased_oracle']['value']:.1f}%" in text
    row = d["frontier"]["prehoc"]["versus_best_single"][0]
    assert f"{100 * row['error_reduction']:.0f}%" in text
    share = d["gap_decomposition"]["noise_share"]["upper_bound"]
    assert f"at most {100 * share:.0f}%" in text
    assert blocks(d)[0].title == "What this means"


def test_tables_fit_100_columns(one_draw_report):
    from rich.console import Console

    console = Console(record=True, width=100)
    one_draw_report.print(console)
    text = console.export_text()
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 100
    assert "…" not in text
    for name in LONG_NAMES:  # full names in the model list
        assert name in text
    # shortened elsewhere, with a note saying so
    assert "claude-opus-4-5-20251101 = " + LONG_NAMES[0] in " ".join(text.split())


def test_debiased_frontier_table_explains_the_accuracy():
    """The debiased-quality table's best accuracy differs from the observed one:
    the note says why and gives both numbers."""

    def row(acc):
        return {
            "benchmark": "HumanEval+",
            "best_model": "m",
            "best_accuracy": acc,
            "best_cost": 1.0,
            "error_reduction": 0.5,
            "cost_reduction": 0.2,
        }

    data = {
        "data": {
            "n_prompts": 29,
            "n_models": 2,
            "cost": True,
            "draws_per_cell": {"min": 100, "max": 100},
        },
        "frontier": {
            "prehoc": {"versus_best_single": [row(0.9972)]},
            "prehoc_debiased": {"quality": "pgm", "versus_best_single": [row(0.9955)]},
        },
    }
    text = " ".join(rendered(data).split())
    assert "debiased accuracy" in text
    assert "(HumanEval+: 0.9955 here, 0.9972 observed)" in text


def test_short_names():
    from capfront._names import short_names

    got = short_names([*LONG_NAMES, "gpt-4o", "a_b_gpt-4o"], max_len=26)
    assert got["20251124_mini-v1.16.0_claude-opus-4-5-20251101"] == (
        "claude-opus-4-5-20251101"
    )
    assert got["gpt-4o"] == "gpt-4o"
    assert got["a_b_gpt-4o"] == "a_b_gpt-4o"  # fits: kept
    clash = short_names(["x_" + "m" * 30, "y_" + "m" * 30])
    assert len(set(clash.values())) == 2  # never two names the same


def test_report_text_re_exports_every_public_renderer_name():
    """``capfront.report_text`` is the renderers' one import: its ``__all__`` is
    exactly the public names the modules holding the code define (read from
    their source), each the same object (a public name added there and not here
    fails)."""
    import ast
    import importlib

    import capfront.report_text as rt

    public = {}
    for mod in ("report_cells", "report_render", "report_sections", "report_summary"):
        m = importlib.import_module(f"capfront.{mod}")
        tree = ast.parse(Path(m.__file__).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                ts = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in ts if isinstance(t, ast.Name)]
            else:
                continue
            public |= {n: getattr(m, n) for n in names if not n.startswith("_")}
    assert set(rt.__all__) == set(public)
    assert all(getattr(rt, n) is obj for n, obj in public.items())


def test_debiased_frontier_when_the_quoted_method_has_no_cell_rates():
    """The quoted estimate is the correlated model (no per-cell rates): the
    debiased frontier uses pgm's posterior means and the report says so; a
    quoted pgm keeps its own."""
    import capfront as cf
    from capfront.report import Report, _frontier_section

    res = cf.simulate(300, 3, 5, seed=2, as_counts=True)
    for quoted, want in (("correlated", "pgm"), ("pgm", "pgm")):
        rep = Report(data={}, results=res)
        out = _frontier_section(res, rep, {"method": quoted}, 0, 50, 0.95)
        deb = out["prehoc_debiased"]
        assert deb["quality"] == want and "skipped" not in deb
        assert deb.get("quoted") == (quoted if quoted != want else None)
        assert deb["versus_best_single"]
    # a quoted pgm fit lends its own posterior means (no second fit)
    fit = cf.debiased_oracle(res, "pgm", family="betabinomial")
    rep = Report(data={}, results=res, objects={"debiased": fit})
    _frontier_section(res, rep, {"method": "pgm"}, 0, 50, 0.95)
    used = rep.objects["frontier_debiased"].quality
    np.testing.assert_array_equal(used, fit.diagnostics["posterior_mean_p"])
    data = {
        "data": {"n_prompts": 300, "n_models": 3, "cost": False},
        "frontier": {
            "prehoc_debiased": {**out["prehoc_debiased"], "quoted": "correlated"}
        },
    }
    text = " ".join(rendered(data).split())
    assert "correlated logit-normal estimate, has no per-cell success rates" in text
    assert "latent model's (pgm) posterior means" in text


def test_summary_says_observed_rates_overstate_only_when_they_do():
    from capfront.report_summary import _frontier_summary

    def fr(er):
        return {"versus_best_single": [{"benchmark": "all", "error_reduction": er}]}

    for observed, debiased, said in ((0.5, 0.3, True), (0.3, 0.5, False)):
        data = {
            "data": {"n_prompts": 10, "n_models": 2, "cost": False},
            "frontier": {"prehoc": fr(observed), "prehoc_debiased": fr(debiased)},
        }
        text = " ".join(_frontier_summary(data, "m"))
        assert f"error-rate reduction is {debiased:.0%}" in text
        assert ("observed rates overstate" in text) is said


def test_oracle_row_names_the_correlated_model_briefly():
    """The oracle table's row carries a short method name (the full one wraps
    the 100-column text report); pgm keeps its words."""
    from capfront.report_sections import _oracle_blocks

    for method, label in (
        ("correlated", "oracle, debiased (correlated model)"),
        ("pgm", "oracle, debiased (latent-model estimate)"),
    ):
        data = {
            "data": {"n_prompts": 10, "n_models": 2, "cost": False},
            "debiased_oracle": {"method": method, "value": 0.9, "ci": [0.88, 0.92]},
        }
        (block,) = _oracle_blocks(data)
        assert [r[0] for r in block.rows] == [label]


def test_report_names_the_models_taken_as_known():
    # a greedy model beside two sampled ones: the report's JSON and text say
    # that its rates were taken as known
    r = np.random.default_rng(3)
    q = 1 / (1 + np.exp(-(r.normal(0.3, 1.0, 3) - r.normal(0, 1.5, (400, 1)))))
    p = q.copy()
    p[:, 0] = r.random(400) < q[:, 0]
    S = r.binomial(6, p)
    res = capfront.EvalResults.from_counts(S, 6, models=["greedy", "s1", "s2"])
    rep = build_report(res, seed=1, n_resamples=50, audit_sims=2)
    deb = rep.data["debiased_oracle"]
    assert deb["details"]["known_models"] == ["greedy"]
    assert 0.5 < deb["details"]["solved_by_known"] < 1.0
    assert "greedy: greedy decoding?" in rendered(rep)
    assert "answered all or nothing" in deb["audit"]["note"]
    assert deb["audit"]["known_models"] == ["greedy"]


def test_trust_notes_say_when_worlds_were_judged_at_the_simulations_size():
    from capfront.report_sections import _trust_notes

    audit = {"trusted": True, "checks_at": "simulations", "sim_prompts": 2000}
    words = " ".join(_trust_notes({"audit": audit}))
    assert "judged at 2,000 prompts, the size of the simulated data sets" in words
    audit["checks_at"] = "data"
    assert "simulated data set" not in " ".join(_trust_notes({"audit": audit}))
