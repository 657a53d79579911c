"""The ``capfront`` command line, run as a subprocess on every adapter fixture, the
bundled example and the shared real data; JSON numbers checked against the API."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import capfront
from capfront.adapters import load

HERE = Path(__file__).resolve().parent
FIX = HERE / "data" / "adapters"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
PKG_PARENT = Path(capfront.__file__).resolve().parents[1]


def run(
    *args: str, module: str = "capfront", check: bool = True, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(PKG_PARENT), *filter(None, [env.get("PYTHONPATH")])]
    )
    env["COLUMNS"] = "120"
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def report_json(*args: str, audit_sims: int = 0) -> dict:
    proc = run(
        "report", *args, "--json", "--resamples", "100", "--audit-sims", str(audit_sims)
    )
    return json.loads(proc.stdout)


def check_against_api(data: dict, results: capfront.EvalResults) -> None:
    """The JSON numbers equal the Python API on the same data."""
    assert data["data"]["n_prompts"] == results.n_prompts
    assert data["data"]["n_models"] == results.n_models
    table = capfront.single_models(results)
    assert len(data["single_models"]["models"]) == results.n_models
    for row in data["single_models"]["models"]:
        assert row["accuracy"] == pytest.approx(table.loc[row["model"], "accuracy"])
    model, acc, _ = capfront.best_single(results)
    assert data["single_models"]["best"]["model"] == model
    assert data["single_models"]["best"]["accuracy"] == pytest.approx(acc)
    for kind in ("prehoc", "posthoc", "union"):
        sec = data["naive_oracles"][kind]
        if "skipped" in sec:
            assert kind == "union" and not results.is_binary
            continue
        assert sec["value"] == pytest.approx(capfront.naive_oracle(results, kind).value)
    fr = data.get("frontier")
    if isinstance(fr, dict) and "prehoc" in fr and "aiq" in fr["prehoc"]:
        kw = {} if results.has_cost else {"cost": "unit"}
        ref = capfront.frontier(results, **kw)
        assert fr["prehoc"]["aiq"] == pytest.approx(ref.aiq())
        vs = ref.versus_best_single()
        got = {r["benchmark"]: r for r in fr["prehoc"]["versus_best_single"]}
        for name, row in vs.iterrows():
            for col in ("best_accuracy", "error_reduction", "cost_reduction"):
                want = row[col]
                if pd.isna(want):
                    assert got[str(name)][col] is None
                else:
                    assert got[str(name)][col] == pytest.approx(want)
    for section in (
        "single_models",
        "naive_oracles",
        "frontier",
        "debiased_oracle",
        "gap_decomposition",
        "latency_frontier",
    ):
        value = data.get(section)
        assert not (isinstance(value, dict) and value.get("failed")), (section, value)


# ---------------------------------------------------------------- fixtures
@pytest.mark.parametrize(
    "name, extra",
    [
        ("long.csv", []),
        ("counts.csv", []),
        ("tokens.csv", ["--prices", str(FIX / "prices.csv")]),
        ("lm_eval_runs", []),
        ("lm_eval_repeats", ["--format", "lm-eval"]),
        ("llmrouterbench", ["--prices", str(FIX / "llmrouterbench_prices.csv")]),
    ],
)
def test_report_on_fixture(name, extra):
    data = report_json(str(FIX / name), *extra, audit_sims=2)
    check_against_api(
        data,
        load(
            FIX / name, prices=(extra[1] if extra and extra[0] == "--prices" else None)
        ).results,
    )


def test_report_on_routerbench_pickle(tmp_path):
    path = tmp_path / "routerbench_5shot.pkl"
    pd.read_csv(FIX / "routerbench_wide.csv").to_pickle(path)
    data = report_json(str(path))
    assert data["source"]["format"] == "routerbench"
    assert data["data"]["scores"] == "graded"
    check_against_api(data, load(path).results)


def test_report_on_inspect_logs():
    pytest.importorskip("inspect_ai", reason="inspect_ai (optional extra) absent")
    data = report_json(str(FIX / "inspect"), "--format", "inspect")
    assert data["data"]["latency"] is True
    check_against_api(data, load(FIX / "inspect").results)


def test_report_tables_out_and_columns(tmp_path):
    proc = run(
        "report",
        str(FIX / "long.csv"),
        "--cost",
        "cost_usd",
        "--latency",
        "latency_s",
        "--out",
        str(tmp_path / "o"),
        "--resamples",
        "50",
        "--quiet",
    )
    out = proc.stdout
    assert "Single models" in out and "oracle, plug-in" in out
    assert f"wrote {tmp_path / 'o' / 'report.json'}" in out
    for f in ("report.json", "report.md", "frontier.png"):
        assert (tmp_path / "o" / f).exists()
    data = json.loads((tmp_path / "o" / "report.json").read_text())
    assert data["source"]["columns"]["cost"] == "cost_usd"
    assert data["source"]["cost"] == "column 'cost_usd'"


# ---------------------------------------------------------------- demo / simulate
def test_demo_prints_the_report():
    proc = run("demo", "--audit-sims", "0", "--resamples", "200")
    out = proc.stdout
    for text in (
        "Data",
        "evalperf_example",
        "What this means",
        "Single models",
        "oracle, plug-in",
        "stand-in: active parameters",
    ):
        assert text in out
    assert proc.stderr == ""
    # piped: the tables fit 100 columns, and no file is named (none was written)
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 100
    assert "…" not in out
    assert out.count("report.json") == out.count("DIR/report.json")
    assert "wrote " not in out


def test_demo_json_matches_api():
    proc = run("demo", "mmlu-pro", "--json", "--resamples", "100", "--audit-sims", "0")
    data = json.loads(proc.stdout)
    from importlib import resources

    from capfront.cli import demo_path

    with resources.as_file(demo_path("mmlu-pro")) as path:
        results = load(path).results
    assert data["data"]["n_prompts"] == 392 and data["data"]["n_models"] == 10
    assert len(data["data"]["benchmarks"]) == 14
    assert data["source"]["cost"].startswith("stand-in")
    check_against_api(data, results)


def test_demo_out(tmp_path):
    run("demo", "--out", str(tmp_path), "--quiet", "--audit-sims", "2")
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["data"]["draws_per_cell"] == {"min": 100, "max": 100}
    assert (tmp_path / "frontier.png").stat().st_size > 10_000
    assert (tmp_path / "frontier_by_benchmark.png").stat().st_size > 10_000
    page = (tmp_path / "report.html").read_text()
    assert "What this means" in page and "<script src=" not in page
    assert data["files"] == [
        "report.json",
        "report.md",
        "frontier.png",
        "frontier_by_benchmark.png",
        "report.html",
    ]


def test_simulate_then_report(tmp_path):
    out = tmp_path / "sim.parquet"
    proc = run(
        "simulate",
        "--prompts",
        "120",
        "--models",
        "4",
        "--draws",
        "6",
        "--seed",
        "5",
        "--out",
        str(out),
    )
    assert "wrote" in proc.stdout and "true oracle" in proc.stdout
    frame = pd.read_parquet(out)
    assert {
        "prompt_id",
        "model",
        "generation",
        "score",
        "cost",
        "latency",
        "topic",
        "truth_p",
    } <= set(frame.columns)
    assert len(frame) == 120 * 4 * 6
    data = report_json(str(out))
    sim = capfront.simulate(120, 4, 6, n_topics=4, seed=5)
    assert data["truth"]["true_oracle"] == pytest.approx(sim.true_oracle)
    assert data["naive_oracles"]["prehoc"]["value"] == pytest.approx(
        capfront.naive_oracle(sim).value
    )


def test_simulate_counts(tmp_path, capsys):
    from capfront.cli import main

    counts = tmp_path / "sim.csv"
    assert (
        main(
            [
                "simulate",
                "--prompts",
                "50",
                "--models",
                "3",
                "--draws",
                "4",
                "--counts",
                "--out",
                str(counts),
            ]
        )
        == 0
    )
    frame = pd.read_csv(counts)
    assert {"n_correct", "n_samples", "truth_p"} <= set(frame.columns)
    sim = capfront.simulate(50, 3, 4, n_topics=4, seed=0)
    r = load(counts).results
    assert r.true_oracle == pytest.approx(sim.true_oracle)
    assert capfront.naive_oracle(r).value == pytest.approx(
        capfront.naive_oracle(sim).value
    )


# ---------------------------------------------------------------- errors
ERROR_CASES = [
    (["report", "no/such/file.csv"], "no/such/file.csv"),
    (["report", str(FIX / "long.csv"), "--score", "nope"], "no column 'nope'"),
    (
        [
            "report",
            str(FIX / "tokens.csv"),
            "--prices",
            str(FIX / "prices_missing.csv"),
        ],
        "no price for model(s) ['large']",
    ),
    (
        ["report", str(FIX / "tokens.csv"), "--prices", "missing_prices.csv"],
        "missing_prices.csv",
    ),
    (["report", str(FIX / "README.md")], "cannot tell the format"),
    (["report", str(FIX / "lm_eval_runs"), "--score", "bleu"], "no metric 'bleu'"),
    (["simulate", "--models", "0", "--out", "x.csv"], "n_models must be >= 1"),
    (["simulate", "--out", "x.xlsx"], ".csv, .csv.gz, .parquet or .jsonl"),
]


def check_one_line(code: int, stderr: str, needle: str) -> None:
    assert code == 1
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("capfront: error: ")
    assert needle in lines[0]


@pytest.mark.parametrize("args, needle", ERROR_CASES[:2])
def test_errors_are_one_line_subprocess(args, needle, tmp_path):
    proc = run(*args, check=False, cwd=tmp_path)
    check_one_line(proc.returncode, proc.stderr, needle)


@pytest.mark.parametrize("args, needle", ERROR_CASES)
def test_errors_are_one_line(args, needle, tmp_path, capsys, monkeypatch):
    from capfront.cli import main

    monkeypatch.chdir(tmp_path)
    code = main(args)
    check_one_line(code, capsys.readouterr().err, needle)


def test_bad_values_in_table(tmp_path, capsys):
    from capfront.cli import main

    bad = tmp_path / "bad.csv"
    bad.write_text("prompt_id,model,score\np1,a,1\np1,a,x\n")
    code = main(["report", str(bad)])
    err = capsys.readouterr().err
    check_one_line(code, err, str(bad))
    assert "score" in err


def test_entry_points(capsys):
    from capfront.cli import main

    assert "report" in run("--help").stdout
    assert "demo" in run("--help", module="capfront.cli").stdout
    with pytest.raises(SystemExit):
        main(["--version"])
    assert "capfront" in capsys.readouterr().out
    exe = shutil.which("capfront")
    if exe is not None and Path(exe).resolve().parent == Path(sys.executable).parent:
        proc = subprocess.run(
            [exe, "report", "--help"], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0 and "--prices" in proc.stdout


# ---------------------------------------------------------------- shared real data
SHARED_CASES = [
    ("evalperf_pass_counts/evalperf_counts.csv", ["--audit-sims", "2"]),
    ("swebench_verified_bash_only/swebench_verified_bash_only.csv", []),
    ("taubench_airline_gpt4o_trials/taubench_airline_gpt-4o.csv", []),
    ("bfcl_v1_2024-08-11/bfcl_v1_2024-08-11.csv", []),
    ("mmlu_pro_tiger_eval_results/mmlu_pro.csv", []),
]


@pytest.mark.parametrize("rel, extra", SHARED_CASES)
def test_report_on_shared_data(rel, extra):
    path = SHARED / rel
    if not path.exists():
        pytest.skip(f"shared data absent: {path}")
    data = json.loads(
        run(
            "report",
            str(path),
            "--json",
            "--resamples",
            "100",
            "--audit-sims",
            "0",
            *extra,
        ).stdout
    )
    check_against_api(data, load(path).results)


def test_report_on_shared_data_with_prices(tmp_path):
    path = SHARED / "bfcl_v1_2024-08-11" / "bfcl_v1_2024-08-11.csv"
    if not path.exists():
        pytest.skip(f"shared data absent: {path}")
    frame = pd.read_csv(
        path,
        usecols=[
            "prompt_id",
            "category",
            "model",
            "score",
            "input_tokens",
            "output_tokens",
        ],
    )
    keep = frame.groupby("model")["input_tokens"].apply(lambda s: s.notna().all())
    models = sorted(keep[keep].index)[:6]
    sub = tmp_path / "bfcl_sub.csv"
    frame[frame["model"].isin(models)].to_csv(sub, index=False)
    prices = tmp_path / "prices.csv"
    prices.write_text(
        "model,input_per_million,output_per_million\n"
        + "".join(
            f"{m},{0.5 * (i + 1)},{1.5 * (i + 1)}\n" for i, m in enumerate(models)
        )
    )
    data = report_json(str(sub), "--prices", str(prices))
    assert data["data"]["cost"] is True
    check_against_api(data, load(sub, prices=prices).results)
    prices.write_text(f"model,input_per_million,output_per_million\n{models[0]},1,2\n")
    proc = run("report", str(sub), "--prices", str(prices), check=False)
    assert proc.returncode == 1 and "no price for model" in proc.stderr


def test_study_subcommand_registered(capsys):
    studies_cli = pytest.importorskip(
        "capfront.studies.cli", reason="capfront.studies.cli not present"
    )
    if not hasattr(studies_cli, "add_parser"):
        pytest.skip("capfront.studies.cli has no add_parser")
    from capfront.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["study", "--help"])
    assert exc.value.code == 0
    assert "bias-decay" in capsys.readouterr().out


def test_report_known_models(tmp_path):
    # one greedy run (one draw) beside two sampled models of six draws: the
    # audit cannot run without the names (it says which option to pass); with
    # --known-models it audits the sampled models on the unsolved prompts
    import numpy as np

    r = np.random.default_rng(2)
    N = 300
    q = 1 / (1 + np.exp(-(r.normal(0.4, 1.0, 3) - r.normal(0, 1.5, (N, 1)))))
    p = q.copy()
    p[:, 0] = r.random(N) < q[:, 0]
    G = np.array([1, 6, 6])
    S = r.binomial(G, p)
    rows = [
        {"prompt_id": n, "model": m, "n_correct": int(S[n, i]), "n_samples": int(G[i])}
        for n in range(N)
        for i, m in enumerate(["greedy", "s1", "s2"])
    ]
    path = tmp_path / "counts.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    common = ("report", str(path), "--json", "--resamples", "50", "--audit-sims", "2")
    plain = json.loads(run(*common, "--quiet").stdout)
    assert "known_models=['greedy']" in plain["debiased_oracle"]["audit"]["skipped"]
    named = json.loads(run(*common, "--known-models", "greedy", "--quiet").stdout)
    deb = named["debiased_oracle"]
    assert named["settings"]["known_models"] == ["greedy"]
    assert deb["audit"]["known_models"] == ["greedy"]
    lo, hi = deb["ci"]
    assert lo <= deb["value"] <= hi
