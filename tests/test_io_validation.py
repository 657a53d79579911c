"""Bad or odd input to the readers and the results object: a clear error naming the
argument (for files: the file, the column and the fix) or the right answer; and the
comparison rule for incomplete coverage."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import capfront as cf
from capfront import EvalResults
from capfront.baselines import common_prompts
from capfront.cli import main


# ------------------------------------------------------------------ prompt ids
def test_leading_zero_ids_stay_distinct(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("prompt_id,model,score\n007,a,1\n7,a,0\n8,a,1\n")
    res = cf.read(path)
    assert list(res.prompts) == ["007", "7", "8"]
    np.testing.assert_array_equal(res.successes[:, 0], [1, 0, 1])
    jl = tmp_path / "t.jsonl"
    jl.write_text(
        "\n".join(
            json.dumps({"prompt_id": p, "model": "a", "score": s})
            for p, s in (("007", 1), ("7", 0))
        )
    )
    assert list(cf.read(jl).prompts) == ["007", "7"]
    counts = tmp_path / "c.csv"
    counts.write_text("prompt_id,model,n_correct,n_samples\n007,a,1,2\n7,a,2,2\n")
    np.testing.assert_array_equal(cf.read(counts).successes[:, 0], [1, 2])


# ------------------------------------------------------------------ empty ids
@pytest.mark.parametrize("row", [0, 2])
def test_empty_prompt_or_model_in_a_count_table(tmp_path, row):
    lines = ["1,a,2,3", "2,a,0,3", "3,a,3,3"]
    cells = lines[row].split(",")
    cells[0] = ""
    lines[row] = ",".join(cells)
    path = tmp_path / "c.csv"
    path.write_text("prompt_id,model,n_correct,n_samples\n" + "\n".join(lines) + "\n")
    with pytest.raises(
        ValueError,
        match=rf"c\.csv: column 'prompt_id' \(prompt\) is empty in row {row + 1}",
    ):
        cf.read(path)
    frame = pd.DataFrame(
        {
            "prompt_id": [1, 2, 3],
            "model": ["a", "b", "a"],
            "n_correct": 1,
            "n_samples": 3,
        }
    )
    frame.loc[row, "model"] = None
    with pytest.raises(
        ValueError, match=rf"'model' \(model\) is empty in row {row + 1}"
    ):
        cf.from_count_frame(frame)


def test_the_count_table_of_the_issue_is_refused_not_overwritten(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("prompt_id,model,n_correct,n_samples\n1,a,2,3\n2,a,0,3\n,a,3,3\n")
    with pytest.raises(ValueError, match="empty in row 3"):
        cf.read(path)
    assert main(["report", str(path), "--quiet"]) == 1


@pytest.mark.parametrize("value", ["", "  ", None])
def test_empty_ids_in_a_long_table(value):
    frame = pd.DataFrame(
        {"prompt_id": ["p", "q", "r"], "model": ["a", "a", "a"], "score": [1, 0, 1]}
    )
    frame.loc[2, "prompt_id"] = value
    with pytest.raises(ValueError, match="'prompt_id' \\(prompt\\) is empty in row 3"):
        cf.from_frame(frame)


# ------------------------------------------------------------------ columns with gaps
def test_named_latency_with_gaps_says_how_to_fix():
    frame = pd.DataFrame(
        {
            "prompt_id": ["p", "q"],
            "model": ["a", "a"],
            "score": [1, 0],
            "latency_s": [1.0, None],
        }
    )
    with pytest.raises(
        ValueError, match=r"'latency_s' \(latency\) has 1 missing value"
    ):
        cf.from_frame(frame, latency="latency_s")
    with pytest.raises(ValueError, match="leave latency= out"):
        cf.read(frame, latency="latency_s")
    assert not cf.read(frame).has_latency  # not named: not used


# ------------------------------------------------------------------ files
def test_empty_and_garbage_files(tmp_path, capsys):
    empty = tmp_path / "e.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"e\.csv: empty file"):
        cf.read(empty)
    header = tmp_path / "h.csv"
    header.write_text("prompt_id,model,score\n")
    with pytest.raises(ValueError, match=r"h\.csv: the table has no rows"):
        cf.read(header)
    junk = tmp_path / "j.csv"
    junk.write_bytes(bytes([0xFF, 0xFE, 0x00, 0x81]) * 500)
    with pytest.raises(ValueError, match=r"j\.csv: not a readable csv file"):
        cf.read(junk)
    for bad in (empty, junk, tmp_path / "missing.csv"):
        assert main(["report", str(bad), "--quiet"]) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith("capfront: error: ") and "\n" not in err
        assert str(bad) in err


def test_several_paths_on_the_command_line(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("prompt_id,model,score\n1,x,1\n1,y,0\n")
    b.write_text("prompt_id,model,score\n2,x,0\n2,y,1\n")
    from capfront.adapters import load

    d = load([a, b])
    assert d.results.n_prompts == 2 and "2 table files read as one table" in d.notes
    assert load(str(tmp_path / "*.csv")).results.n_prompts == 2
    with pytest.raises(FileNotFoundError, match="no file matches"):
        load(str(tmp_path / "*.parquet"))
    b.write_text("prompt_id,model,correct\n2,x,0\n")
    with pytest.raises(ValueError, match="differ from those of"):
        load([a, b])


# ------------------------------------------------------------------ arrays, select
def test_ragged_lists_and_out_of_range_selections():
    with pytest.raises(ValueError, match="rows of different lengths"):
        EvalResults.from_arrays([[[1, 0], [1]], [[0, 0], [1, 1]]])
    res = cf.simulate(10, 2, 2, seed=0)
    with pytest.raises(ValueError, match=r"prompts: position 1000000 is out of range"):
        res.select(prompts=[10**6])
    with pytest.raises(ValueError, match="boolean mask must have 10 entries"):
        res.select(prompts=np.ones(3, bool))
    with pytest.raises(ValueError, match="models: position 5 is out of range"):
        res.select(models=[5])
    assert res.select(prompts=[-1]).prompts[0] == res.prompts[-1]


@pytest.mark.parametrize(
    "fn", [cf.single_models, cf.naive_oracle, cf.best_single, common_prompts]
)
def test_arrays_where_results_are_expected(fn):
    with pytest.raises(
        TypeError, match="expected EvalResults.*EvalResults.from_arrays"
    ):
        fn(np.zeros((3, 3)))


def test_backend_is_checked():
    res = cf.simulate(10, 2, 2, seed=0)
    assert cf.naive_oracle(res, backend="numpy").value == cf.naive_oracle(res).value
    with pytest.raises(ValueError, match="backend"):
        cf.naive_oracle(res, backend="fortran")


# ------------------------------------------------------------------ coverage
def test_a_model_on_an_easy_subset_is_not_the_best_single_model():
    """Model 'easy' is run only on prompts everyone solves: on its own prompts it
    scores 1.0; compared on the same prompts it ties the others and the oracle gain
    is never negative."""
    rng = np.random.default_rng(3)
    N = 60
    easy = np.arange(N) < 20
    p = np.where(easy[:, None], 1.0, rng.uniform(0.2, 0.8, size=(N, 3)))
    scores = (rng.random((N, 3, 4)) < p[:, :, None]).astype(np.uint8)
    scores[:, 2] = np.where(easy[:, None], 1, scores[:, 2])
    mask = np.ones(scores.shape, bool)
    mask[~easy, 2, :] = False
    res = EvalResults.from_arrays(scores, mask=mask, models=["a", "b", "easy"])
    table = cf.single_models(res)
    assert table.loc["easy", "accuracy_own"] == 1.0
    assert table.loc["easy", "n_prompts"] == 20
    np.testing.assert_allclose(table["accuracy"], 1.0)  # all solve the 20 easy ones
    name, acc, _ = cf.best_single(res)
    pre = cf.naive_oracle(res)
    assert pre.n_prompts == 20 and pre.value - acc >= 0
    # the naive way: own-prompt accuracies against the all-prompt oracle
    own = cf.best_single(res, on="all")
    assert own[0] == "easy" and cf.naive_oracle(res, on="all").value - own[1] < 0
    note = res.coverage_note
    assert "easy 20/60 (33.3%)" in note and "20 prompts every model ran" in note
    assert note in res.notes


def test_coverage_note_reaches_the_report(tmp_path):
    path = tmp_path / "partial.csv"
    rows = [
        (f"q{i}", m, int((i + j) % 3 != 0))
        for i in range(12)
        for j, m in enumerate(["a", "b", "c"])
        if not (m == "c" and i >= 4)
    ]
    pd.DataFrame(rows, columns=["prompt_id", "model", "score"]).to_csv(
        path, index=False
    )
    out = tmp_path / "out"
    args = ["report", str(path), "--json", "--quiet", "--audit-sims", "0"]
    assert main([*args, "--resamples", "20", "--out", str(out)]) == 0
    rep = json.loads((out / "report.json").read_text())
    notes = " ".join(rep["source"]["notes"])
    assert "c 4/12 (33.3%)" in notes and "4 prompts every model ran" in notes
    for kind in ("prehoc", "posthoc", "union"):
        assert rep["naive_oracles"][kind]["gain_over_best_single"] >= 0


def test_swebench_weak_model_cut_to_its_solved_prompts(shared_data):
    """The issue's example: SWE-bench Verified, a 0.44 model cut to 229 prompts
    that it mostly solved."""
    folder = shared_data / "swebench_verified_bash_only"
    df = pd.read_csv(folder / "swebench_verified_bash_only.csv")
    weak = "20250807_mini-v1.7.0_kimi-k2-instruct"
    w = df[df.model == weak]
    keep = set(w[w.score == 1].prompt_id)
    keep |= set(w[w.score == 0].prompt_id.iloc[: 229 - len(keep)])
    cut = df[(df.model != weak) | df.prompt_id.isin(keep)]
    res = cf.from_frame(cut, cost="cost_usd")
    _, acc, _ = cf.best_single(res)
    for kind in ("prehoc", "posthoc", "union"):
        orc = cf.naive_oracle(res, kind)
        assert orc.n_prompts == 229 and orc.value >= acc
    # by hand: on the 229 common prompts, best single = max over models of the mean
    common = cut[cut.prompt_id.isin(keep)]
    assert acc == pytest.approx(common.groupby("model").score.mean().max())
    assert cf.naive_oracle(res).value == pytest.approx(
        common.groupby("prompt_id").score.max().mean()
    )
