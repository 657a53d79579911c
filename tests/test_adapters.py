"""Input adapters on hand-written fixtures in the real formats (tests/data/adapters)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from capfront.adapters import FORMATS, detect_format, load, read_prices, token_cost

FIX = Path(__file__).resolve().parent / "data" / "adapters"


def cell(results, prompt, model):
    i = list(map(str, results.prompts)).index(prompt)
    j = list(map(str, results.models)).index(model)
    return i, j


@pytest.fixture
def routerbench_pkl(tmp_path):
    path = tmp_path / "routerbench_0shot.pkl"
    pd.read_csv(FIX / "routerbench_wide.csv").to_pickle(path)
    return path


# ---------------------------------------------------------------- long tables
def test_long_table_columns_found_by_alias():
    d = load(FIX / "long.csv")
    r = d.results
    assert d.format == "csv"
    assert d.columns["cost"] == "cost_usd" and d.columns["latency"] == "latency_s"
    assert d.columns["benchmark"] == "benchmark"
    assert (r.n_prompts, r.n_models, r.max_draws) == (3, 2, 2)
    np.testing.assert_allclose(r.p_hat, [[1.0, 0.5], [0.0, 0.5], [0.5, 1.0]])
    # per-draw cost 0.002 and 0.003 for A -> mean 0.0025; B 0.010, 0.015 -> 0.0125
    np.testing.assert_allclose(r.mean_cost[0], [0.0025, 0.0125])
    np.testing.assert_allclose(r.mean_latency[0], [2.0, 3.5])
    assert list(r.benchmark) == ["math", "math", "code"]
    assert d.cost_source == "column 'cost_usd'"


def test_long_table_explicit_columns_and_errors(tmp_path):
    d = load(FIX / "long.csv", cost="cost_usd", latency=None, benchmark="benchmark")
    assert d.results.has_cost
    with pytest.raises(ValueError, match="no column 'nope' for the score"):
        load(FIX / "long.csv", score="nope")
    bad = tmp_path / "bad.csv"
    bad.write_text("prompt_id,model,score\np1,a,0.5\np1,b,1.7\n")
    with pytest.raises(ValueError, match=r"bad\.csv: .*\[0, 1\]"):
        load(bad)
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.csv")


def test_auto_detected_column_with_gaps_is_dropped_with_a_note(tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_text("prompt_id,model,score,latency_s\np1,a,1,0.5\np1,b,0,\n")
    d = load(path)
    assert not d.results.has_latency
    assert any("latency_s" in n and "missing" in n for n in d.notes)
    with pytest.raises(ValueError, match="latency"):
        load(path, latency="latency_s")


def test_parquet_and_jsonl_tables(tmp_path):
    frame = pd.read_csv(FIX / "long.csv")
    frame.to_parquet(tmp_path / "t.parquet")
    frame.to_json(tmp_path / "t.jsonl", orient="records", lines=True)
    ref = load(FIX / "long.csv").results
    for name in ("t.parquet", "t.jsonl"):
        d = load(tmp_path / name)
        assert d.format == name.split(".")[1]
        np.testing.assert_allclose(d.results.p_hat, ref.p_hat)


# ---------------------------------------------------------------- prices
@pytest.mark.parametrize("prices", ["prices.csv", "prices.json"])
def test_token_counts_priced(prices):
    d = load(FIX / "tokens.csv", prices=FIX / prices)
    r = d.results
    i, j = cell(r, "t2", "large")
    # 200 input x $3/M + 80 output x $15/M
    assert r.mean_cost[i, j] == pytest.approx((200 * 3.0 + 80 * 15.0) / 1e6)
    i, j = cell(r, "t1", "small")
    assert r.mean_cost[i, j] == pytest.approx((100 * 0.10 + 20 * 0.40) / 1e6)
    assert "price table" in d.cost_source


def test_model_without_price_is_an_error():
    with pytest.raises(ValueError, match=r"no price for model\(s\) \['large'\]"):
        load(FIX / "tokens.csv", prices=FIX / "prices_missing.csv")
    with pytest.raises(ValueError, match="either --cost"):
        load(FIX / "tokens.csv", prices=FIX / "prices.csv", cost="correct")


def test_read_prices_errors(tmp_path):
    assert read_prices(FIX / "prices.json")["large"] == (3.0, 15.0)
    bad = tmp_path / "p.csv"
    bad.write_text("model,price\na,1\n")
    with pytest.raises(ValueError, match="input and output price columns"):
        read_prices(bad)
    bad.write_text("model,input,output\na,1,-2\n")
    with pytest.raises(ValueError, match="output price of model 'a'"):
        read_prices(bad)
    bad.write_text("model,input,output\na,1,2\na,1,2\n")
    with pytest.raises(ValueError, match="listed twice"):
        read_prices(bad)
    js = tmp_path / "p.json"
    js.write_text('{"a": {"in": 1}}')
    with pytest.raises(ValueError, match="needs an input and an output price"):
        read_prices(js)
    with pytest.raises(FileNotFoundError):
        read_prices(tmp_path / "none.csv")


def test_token_cost_rejects_missing_tokens():
    prices = {"a": (1.0, 2.0)}
    np.testing.assert_allclose(token_cost(["a"], [1e6], [1e6], prices), [3.0])
    with pytest.raises(ValueError, match="missing or negative input token"):
        token_cost(["a", "a"], [1.0, np.nan], [1.0, 1.0], prices)


# ---------------------------------------------------------------- counts
def test_count_table():
    d = load(FIX / "counts.csv")
    r = d.results
    assert d.format == "counts"
    np.testing.assert_array_equal(r.n_draws, 10)
    i, j = cell(r, "HumanEval/1", "m2")
    assert r.successes[i, j] == 6
    np.testing.assert_allclose(r.mean_cost[0], [1.0, 2.0])
    assert load(FIX / "counts.csv", format="counts").results.n_prompts == 4


# ---------------------------------------------------------------- lm-eval
# strict-match exact_match per (model, run, doc), as written in the fixture
STRICT = {
    ("org/model-a", 0): [1, 0, 1],
    ("org/model-a", 1): [1, 1, 0],
    ("org/model-b", 0): [0, 0, 1],
    ("org/model-b", 1): [0, 1, 1],
}


def test_lm_eval_runs_are_generations_and_first_filter_is_used():
    d = load(FIX / "lm_eval_runs")
    r = d.results
    assert d.format == "lm-eval"
    assert sorted(r.models) == ["org/model-a", "org/model-b"]  # from results_*.json
    assert set(r.benchmark) == {"gsm8k", "arc_easy"}
    for model in ("org/model-a", "org/model-b"):
        for doc in range(3):
            i, j = cell(r, f"gsm8k/{doc}", model)
            assert r.n_draws[i, j] == 2
            want = STRICT[(model, 0)][doc] + STRICT[(model, 1)][doc]
            assert r.successes[i, j] == want
        i, j = cell(r, "arc_easy/1", model)
        assert r.n_draws[i, j] == 1  # one arc_easy run; metric "acc"
    i, j = cell(r, "arc_easy/1", "org/model-a")
    assert r.successes[i, j] == 0
    assert any("gsm8k=strict-match" in n for n in d.notes)


def test_lm_eval_single_file_and_metric_choice():
    f = next((FIX / "lm_eval_runs" / "org__model-b").glob("samples_arc_easy_*.jsonl"))
    assert detect_format(f) == "lm-eval"
    r = load(f).results
    assert list(r.models) == ["org/model-b"]
    np.testing.assert_allclose(r.p_hat[:, 0], [1.0, 1.0])  # acc
    r = load(f, score="acc_norm").results
    np.testing.assert_allclose(r.p_hat[:, 0], [0.0, 1.0])
    with pytest.raises(ValueError, match="no metric 'bleu'"):
        load(f, score="bleu")


def test_lm_eval_pass_at_1_over_repeats_is_counts():
    r = load(FIX / "lm_eval_repeats").results
    np.testing.assert_array_equal(r.n_draws, 4)
    i, j = cell(r, "humaneval/0", "org/coder-small")
    assert r.successes[i, j] == 1  # pass@1 = 0.25 of 4 repeats
    i, j = cell(r, "humaneval/1", "org/coder-large")
    assert r.successes[i, j] == 2


def test_lm_eval_bad_pass_at_1(tmp_path):
    src = FIX / "lm_eval_repeats" / "org__coder-small"
    dst = tmp_path / "org__x"
    shutil.copytree(src, dst)
    f = next(dst.glob("samples_*.jsonl"))
    recs = [json.loads(x) for x in f.read_text().splitlines()]
    recs[0]["pass@1"] = 0.3
    f.write_text("\n".join(json.dumps(x) for x in recs) + "\n")
    with pytest.raises(ValueError, match="not a multiple of 1/4"):
        load(tmp_path)


# ---------------------------------------------------------------- inspect
def test_inspect_logs():
    pytest.importorskip("inspect_ai", reason="inspect_ai (optional extra) absent")
    d = load(FIX / "inspect")
    r = d.results
    assert d.format == "inspect"
    assert r.max_draws == 2 and r.min_draws == 2  # two epochs
    i, j = cell(r, "capitals/c2", "openai/gpt-4o-mini")
    assert r.p_hat[i, j] == 0.5
    i, j = cell(r, "capitals/c2", "anthropic/claude-3-5-haiku-latest")
    assert r.p_hat[i, j] == 1.0
    np.testing.assert_allclose(r.mean_latency[i], [1.375, 1.375])  # 1.25, 1.5
    assert r.mean_cost[i, j] == pytest.approx(0.00008)
    assert d.cost_source == "model_usage total_cost"
    with pytest.raises(ValueError, match="no price for model"):
        load(FIX / "inspect", prices=FIX / "prices.csv")
    with pytest.raises(ValueError, match="no scorer 'f1'"):
        load(FIX / "inspect", score="f1")


def test_inspect_priced(tmp_path):
    pytest.importorskip("inspect_ai", reason="inspect_ai (optional extra) absent")
    prices = tmp_path / "p.csv"
    prices.write_text(
        "model,input,output\nopenai/gpt-4o-mini,0.15,0.60\n"
        "anthropic/claude-3-5-haiku-latest,0.8,4\n"
    )
    r = load(FIX / "inspect", prices=prices).results
    i, j = cell(r, "capitals/c1", "openai/gpt-4o-mini")
    assert r.mean_cost[i, j] == pytest.approx((40 * 0.15 + 10 * 0.60) / 1e6)


def test_inspect_missing_package_message(monkeypatch):
    import builtins

    real = builtins.__import__

    def fake(name, *args, **kwargs):
        if name.startswith("inspect_ai"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ValueError, match=r"pip install 'capfront\[inspect\]'"):
        load(FIX / "inspect", format="inspect")


# ---------------------------------------------------------------- RouterBench
def test_routerbench_pickle(routerbench_pkl):
    d = load(routerbench_pkl)
    r = d.results
    assert d.format == "routerbench"
    assert r.n_models == 3 and r.n_prompts == 5 and r.max_draws == 1
    assert not r.is_binary  # mt-bench is graded
    i, j = cell(r, "mt-bench.0", "gpt-3.5-turbo-1106")
    assert r.p_hat[i, j] == pytest.approx(0.9)
    i, j = cell(r, "hellaswag.dev.1", "mistralai/mixtral-8x7b-chat")
    assert r.mean_cost[i, j] == pytest.approx(0.00005)
    assert r.benchmark[i] == "hellaswag"


def test_routerbench_missing_score_is_a_missing_cell(tmp_path):
    wide = pd.read_csv(FIX / "routerbench_wide.csv")
    wide.loc[0, "meta/llama-2-70b-chat"] = np.nan
    path = tmp_path / "rb.pkl"
    wide.to_pickle(path)
    r = load(path).results
    i, j = cell(r, "hellaswag.dev.0", "meta/llama-2-70b-chat")
    assert not r.observed[i, j] and r.observed.sum() == 14
    pd.DataFrame({"a": [1]}).to_pickle(path)
    with pytest.raises(ValueError, match="not a RouterBench table"):
        load(path)


# ---------------------------------------------------------------- LLMRouterBench
def test_llmrouterbench_records():
    d = load(FIX / "llmrouterbench")
    r = d.results
    assert d.format == "llmrouterbench"
    assert set(r.benchmark) == {"aime", "gpqa"}
    assert r.max_draws == 1  # the latest non-demo run of each triple
    # gpqa/test/gpt-5-chat ran twice: the 20250910 run (index 1 wrong) is read
    i, j = cell(r, "gpqa/test/1", "gpt-5-chat")
    assert r.successes[i, j] == 0
    # the newer demo run of qwen3 on gpqa (index 1 right) is skipped
    i, j = cell(r, "gpqa/test/1", "qwen3-235b-a22b-2507")
    assert r.successes[i, j] == 0 and r.n_draws[i, j] == 1
    # score: null counts as 0, with a note
    i, j = cell(r, "aime/test/3", "qwen3-235b-a22b-2507")
    assert r.observed[i, j] and r.successes[i, j] == 0
    notes = " | ".join(d.notes)
    assert "1 demo run(s)" in notes and "1 older run(s)" in notes
    assert "1 record(s) with score null counted as 0" in notes
    i, j = cell(r, "aime/test/2", "qwen3-235b-a22b-2507")
    assert r.mean_cost[i, j] == pytest.approx((130 * 0.09 + 2000 * 0.60) / 1e6)
    priced = load(
        FIX / "llmrouterbench", prices=FIX / "llmrouterbench_prices.csv"
    ).results
    np.testing.assert_allclose(priced.mean_cost, r.mean_cost, rtol=1e-6)


def test_llmrouterbench_all_runs_are_generations_on_request():
    d = load(FIX / "llmrouterbench", all_runs=True)
    r = d.results
    i, j = cell(r, "gpqa/test/1", "gpt-5-chat")
    assert r.n_draws[i, j] == 2 and r.successes[i, j] == 1  # both non-demo runs
    i, j = cell(r, "gpqa/test/1", "qwen3-235b-a22b-2507")
    assert r.n_draws[i, j] == 1  # the demo run is never a generation
    assert any("each run is a generation" in n for n in d.notes)


def test_llmrouterbench_single_file_and_demo_only(tmp_path):
    f = (
        FIX / "llmrouterbench/results/bench/aime/test/gpt-5-chat/"
        "aime-test-gpt-5-chat-20250901_101500.json"
    )
    assert detect_format(f) == "llmrouterbench"
    r = load(f).results
    assert list(r.prompts) == ["aime/test/1", "aime/test/2", "aime/test/3"]
    data = json.loads(f.read_text())
    data["demo"] = True
    demo = tmp_path / "aime-test-gpt-5-chat-20250902_000000.json"
    demo.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"only 1 demo run\(s\), which are skipped"):
        load(demo)


# ---------------------------------------------------------------- detection
@pytest.mark.parametrize(
    "name, fmt",
    [
        ("long.csv", "csv"),
        ("counts.csv", "csv"),
        ("lm_eval_runs", "lm-eval"),
        ("inspect", "inspect"),
        ("llmrouterbench", "llmrouterbench"),
    ],
)
def test_detect_format(name, fmt):
    assert detect_format(FIX / name) == fmt


def test_detect_and_load_errors(tmp_path, routerbench_pkl):
    assert detect_format(routerbench_pkl) == "routerbench"
    assert "routerbench" in FORMATS
    with pytest.raises(ValueError, match="unknown format 'xls'"):
        load(FIX / "long.csv", format="xls")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ValueError, match=r"empty\.csv: empty file"):
        load(tmp_path / "empty.csv")
    (tmp_path / "junk.parquet").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ValueError, match=r"junk\.parquet: not a readable parquet"):
        load(tmp_path / "junk.parquet")
    (tmp_path / "x.weird").write_text("1")
    with pytest.raises(ValueError, match="cannot tell the format"):
        load(tmp_path / "x.weird")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "x.weird").write_text("1")
    with pytest.raises(ValueError, match="cannot tell the format of this folder"):
        load(sub)
    with pytest.raises(ValueError, match="cannot apply"):
        load(FIX / "lm_eval_runs", prices=FIX / "prices.csv")


def test_inspect_binary_eval_format(tmp_path):
    """The same logs in inspect's ``.eval`` (zip) format, written by inspect_ai."""
    pytest.importorskip("inspect_ai", reason="inspect_ai (optional extra) absent")
    from inspect_ai.log import read_eval_log, write_eval_log

    for f in sorted((FIX / "inspect").glob("*.json")):
        write_eval_log(read_eval_log(str(f)), str(tmp_path / (f.stem + ".eval")))
    assert detect_format(tmp_path) == "inspect"
    got = load(tmp_path).results
    ref = load(FIX / "inspect").results
    assert sorted(got.models) == sorted(ref.models)
    for p in ("capitals/c1", "capitals/c3"):
        for m in ref.models:
            assert got.p_hat[cell(got, p, m)] == ref.p_hat[cell(ref, p, m)]


# ---------------------------------------------------------------- wide tables
ROUTELLM = ["mixtral-8x7b-instruct-v0.1", "gpt-4-1106-preview"]


def test_routellm_eval_csv_is_a_wide_table():
    """RouteLLM's ``gsm8k_responses.csv``: ``prompt`` (text), one boolean column
    per model and ``<model>_response`` text columns."""
    d = load(FIX / "routellm_gsm8k_responses.csv")
    r = d.results
    assert d.format == "wide" and list(r.models) == ROUTELLM
    assert (r.n_prompts, r.max_draws) == (4, 1)
    np.testing.assert_array_equal(r.successes, [[1, 1], [0, 1], [0, 0], [1, 1]])
    assert any("row number" in n for n in d.notes)
    # a hand computation: best single 3/4 (gpt-4), prehoc oracle 3/4
    import capfront as cf

    assert cf.best_single(r)[:2] == ("gpt-4-1106-preview", 0.75)
    assert cf.naive_oracle(r).value == 0.75


def test_routellm_folder_of_benchmarks():
    d = load(FIX / "routellm_mmlu")
    r = d.results
    assert detect_format(FIX / "routellm_mmlu") == "wide"
    assert d.format == "wide" and r.n_prompts == 5
    assert sorted(set(r.benchmark)) == ["mmlu_anatomy", "mmlu_astronomy"]
    i, j = cell(r, "mmlu_astronomy/0", "gpt-4-1106-preview")
    assert r.successes[i, j] == 0
    i, j = cell(r, "mmlu_anatomy/1", "gpt-4-1106-preview")
    assert r.successes[i, j] == 1
    # the same files as several paths (or a glob) read as one data set
    files = sorted((FIX / "routellm_mmlu").glob("*.csv"))
    via_glob = load(str(FIX / "routellm_mmlu" / "mmlu_*.csv")).results
    via_list = load(files).results
    for other in (via_glob, via_list):
        np.testing.assert_array_equal(other.successes, r.successes)
        assert list(other.prompts) == list(r.prompts)


def test_wide_table_with_gaps_and_named_prompt(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("qid,m1,m2\n007,1,0\n7,,1\n8,0,1\n")
    r = load(path, prompt="qid").results
    assert list(r.prompts) == ["007", "7", "8"]  # ids are labels
    assert not r.observed[1, 0] and r.observed.sum() == 5
    with pytest.raises(ValueError, match="no model column found"):
        load(_write(tmp_path / "t.csv", "qid,note\n5,x\n"))
    with pytest.raises(ValueError, match="--score names a column of a long table"):
        load(path, prompt="qid", score="m1")


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_routerbench_layout_as_csv_and_parquet(tmp_path, routerbench_pkl, suffix):
    wide = pd.read_csv(FIX / "routerbench_wide.csv")
    path = tmp_path / f"routerbench_0shot.{suffix}"
    wide.to_csv(path, index=False) if suffix == "csv" else wide.to_parquet(path)
    d = load(path)
    ref = load(routerbench_pkl).results
    assert d.format == f"routerbench ({suffix})"
    r = d.results
    assert list(r.prompts) == list(ref.prompts) and list(r.models) == list(ref.models)
    np.testing.assert_allclose(r.p_hat, ref.p_hat)
    np.testing.assert_allclose(r.mean_cost, ref.mean_cost)


# ---------------------------------------------------------------- matrices
def test_routereval_pickled_dict():
    import pickle

    d = load(FIX / "routereval_router_dataset.pkl")
    r = d.results
    raw = pickle.loads((FIX / "routereval_router_dataset.pkl").read_bytes())
    assert d.format == "matrix" and list(r.models) == raw["model"]
    assert sorted(set(r.benchmark)) == ["test", "train", "val"]
    stacked = np.vstack(
        [raw["data"][k] for k in ("train_score", "val_score", "test_score")]
    )
    order = [
        f"{b}/{i}"
        for b in ("train", "val", "test")
        for i in range(len(raw["data"][f"{b}_score"]))
    ]
    idx = [list(r.prompts).index(p) for p in order]
    np.testing.assert_array_equal(r.p_hat[idx], stacked)


def test_npz_and_npy_matrices(tmp_path):
    z = np.load(FIX / "score_matrix.npz")
    d = load(FIX / "score_matrix.npz")
    assert d.format == "matrix" and list(d.results.models) == list(z["models"])
    np.testing.assert_array_equal(d.results.p_hat, z["scores"])
    bare = load(FIX / "score_matrix.npy").results
    assert list(bare.models) == ["model_0", "model_1", "model_2"]
    np.testing.assert_array_equal(bare.p_hat, z["scores"])
    np.save(tmp_path / "bad.npy", np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match=r"bad\.npy: a score matrix must be 2-D"):
        load(tmp_path / "bad.npy")
    np.savez(tmp_path / "names.npz", scores=np.ones((2, 3)), models=np.array(["a"]))
    with pytest.raises(ValueError, match="1 model name"):
        load(tmp_path / "names.npz")


# ---------------------------------------------------------------- inspect
def test_inspect_eval_set_folder():
    """An ``eval_set()`` output folder written by inspect-ai (mockllm models,
    scripted answers; make_inspect_logs.py): eval-set.json and logs.json beside
    the .eval logs."""
    pytest.importorskip("inspect_ai", reason="inspect_ai (optional extra) absent")
    folder = FIX / "inspect_eval_set"
    assert detect_format(folder) == "inspect"
    r = load(folder).results
    assert sorted(r.models) == ["mockllm/model-a", "mockllm/model-b"]
    assert r.max_draws == 2 and r.min_draws == 2
    # the generator's PATTERN: model-a c1 right then wrong, c3 right twice ...
    want = {"model-a": [1, 0, 2], "model-b": [2, 1, 0]}
    for m, counts in want.items():
        for k, c in enumerate(counts):
            assert r.successes[cell(r, f"capitals/c{k + 1}", f"mockllm/{m}")] == c


def test_inspect_two_runs_of_a_task_are_more_generations():
    pytest.importorskip("inspect_ai", reason="inspect_ai (optional extra) absent")
    d = load(sorted((FIX / "inspect_runs").glob("*.eval")))
    r = d.results
    assert r.n_models == 1 and r.max_draws == 2  # one epoch in each of two runs
    np.testing.assert_array_equal(r.successes[:, 0], [1, 0, 2])
    assert any("2 separate logs" in n for n in d.notes)


# ---------------------------------------------------------------- lm-eval
def test_lm_eval_results_without_samples_say_log_samples():
    for path in (
        FIX / "lm_eval_results_only",
        next((FIX / "lm_eval_results_only").rglob("results_*.json")),
    ):
        assert detect_format(path) == "lm-eval"
        with pytest.raises(ValueError, match="re-run lm_eval with --log_samples"):
            load(path)


def test_lm_eval_corpus_level_metrics_are_named(tmp_path):
    with pytest.raises(ValueError, match=r"\['bleu', 'chrf', 'ter'\] are corpus-level"):
        load(FIX / "lm_eval_corpus")
    # with a per-sample metric beside them, that one is read; naming bleu says why not
    src = next((FIX / "lm_eval_corpus").rglob("samples_*.jsonl"))
    out = tmp_path / "org__model-a" / src.name
    out.parent.mkdir()
    recs = [json.loads(x) for x in src.read_text().splitlines()]
    for k, rec in enumerate(recs):
        rec["metrics"].append("exact_match")
        rec["exact_match"] = float(k == 0)
    out.write_text("\n".join(json.dumps(x) for x in recs) + "\n")
    r = load(tmp_path).results
    np.testing.assert_array_equal(r.successes[:, 0], [1, 0, 0])
    with pytest.raises(
        ValueError, match=r"'bleu' is corpus-level.*can: \['exact_match'\]"
    ):
        load(tmp_path, score="bleu")


# ---------------------------------------------------------------- dialects
@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_delimiters_are_sniffed(tmp_path, sep):
    ref = load(FIX / "long.csv").results
    text = (FIX / "long.csv").read_text().replace(",", sep)
    r = load(_write(tmp_path / "t.csv", text)).results
    np.testing.assert_array_equal(r.successes, ref.successes)
    np.testing.assert_allclose(r.mean_cost, ref.mean_cost)


def test_xlsx(tmp_path, monkeypatch):
    frame = pd.read_csv(FIX / "long.csv", dtype={"prompt_id": str})
    path = tmp_path / "t.xlsx"
    try:
        frame.to_excel(path, index=False)
    except ImportError:
        pytest.skip("openpyxl (optional extra capfront[excel]) absent")
    ref = load(FIX / "long.csv").results
    r = load(path).results
    np.testing.assert_array_equal(r.successes, ref.successes)
    import builtins

    real = builtins.__import__

    def no_openpyxl(name, *args, **kwargs):
        if name == "openpyxl":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_openpyxl)
    with pytest.raises(ValueError, match=r"needs openpyxl.*or save the sheet as CSV"):
        load(path)


def test_auto_detected_cost_named_cost_with_gaps_is_left_out(tmp_path):
    text = "prompt_id,model,score,cost\n1,a,1,0.5\n2,a,0,\n"
    d = load(_write(tmp_path / "c.csv", text))
    assert not d.results.has_cost and d.cost_source is None
    assert any("'cost' has 1 missing value(s): no cost axis" in n for n in d.notes)
    with pytest.raises(ValueError, match=r"'cost' \(cost\) has 1 missing"):
        load(tmp_path / "c.csv", cost="cost")


def test_inspect_eval_set_retry_keeps_the_latest_log(tmp_path):
    """An eval_set() retry writes a new log of the same task (same eval_set_id and
    task_id) with the finished samples carried over: the older one is left out."""
    pytest.importorskip("inspect_ai", reason="inspect_ai (optional extra) absent")
    from inspect_ai.log import read_eval_log, write_eval_log

    folder = tmp_path / "set"
    shutil.copytree(FIX / "inspect_eval_set", folder)
    ref = load(folder).results
    first = sorted(folder.glob("*.eval"))[0]
    old = read_eval_log(str(first))
    old.eval.created = "2020-01-01T00:00:00+00:00"
    old.status = "error"
    for s in old.samples:
        s.scores["match"].value = "C"  # would change the counts if it were read
    write_eval_log(old, str(folder / ("2020-01-01T00-00-00-00-00_" + first.name[26:])))
    d = load(folder)
    np.testing.assert_array_equal(d.results.successes, ref.successes)
    np.testing.assert_array_equal(d.results.n_draws, ref.n_draws)
    assert any(
        "1 log(s) of an eval_set() task retried later left out" in n for n in d.notes
    )


def test_cli_format_choices_are_the_adapters_formats(capsys):
    from capfront.cli import main

    with pytest.raises(SystemExit):
        main(["report", "x.csv", "--format", "nope"])
    err = capsys.readouterr().err
    assert all(repr(f) in err for f in FORMATS)


def test_folder_of_long_tables(tmp_path):
    for k in range(2):
        _write(tmp_path / f"part{k}.csv", f"prompt_id,model,score\n{k},x,1\n{k},y,0\n")
    assert detect_format(tmp_path) == "csv"
    d = load(tmp_path)
    assert d.results.n_prompts == 2 and d.results.n_models == 2
    assert d.notes[0] == "2 table files read as one table"
