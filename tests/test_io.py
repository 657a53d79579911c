"""Long tables from pandas/polars/pyarrow and CSV/Parquet/JSONL files, on synthetic
tables and on the small real fixtures in tests/data (run from a bare clone)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import capfront as cf
from capfront import EvalResults

FIXTURES = Path(__file__).resolve().parent / "data"


def long_table(res: EvalResults) -> pd.DataFrame:
    """One row per valid (prompt, model, generation) of ``res``, shuffled."""
    rows = []
    N, L, G = res.scores.shape
    for n in range(N):
        for l in range(L):
            for g in range(G):
                if res.mask is not None and not res.mask[n, l, g]:
                    continue
                rows.append(
                    (
                        f"q{n}",
                        str(res.models[l]),
                        g,
                        float(res.scores[n, l, g]),
                        float(res.mean_cost[n, l]),
                        float(res.latency[n, l, g]),
                        f"bench{n % 2}",
                    )
                )
    df = pd.DataFrame(
        rows,
        columns=["prompt_id", "model", "generation", "score", "cost", "lat", "bench"],
    )
    return df.sample(frac=1.0, random_state=0).reset_index(drop=True)


@pytest.fixture(scope="module")
def simulated() -> EvalResults:
    return cf.simulate(12, 3, 4, seed=5)


COLUMNS = {"cost": "cost", "latency": "lat", "benchmark": "bench"}


def assert_same(a: EvalResults, b: EvalResults) -> None:
    """Equal up to the order of prompts and models."""
    pa = [list(map(str, a.prompts)).index(str(p)) for p in b.prompts]
    ma = [list(a.models).index(m) for m in b.models]
    idx = np.ix_(pa, ma)
    np.testing.assert_array_equal(a.successes[idx], b.successes)
    np.testing.assert_array_equal(a.n_draws[idx], b.n_draws)
    for name in ("mean_cost", "mean_latency"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_allclose(x[idx], y, rtol=1e-12)
    assert a.is_binary == b.is_binary


def test_from_frame_matches_the_arrays(simulated):
    df = long_table(simulated)
    res = cf.from_frame(df, **COLUMNS)
    assert (res.n_prompts, res.n_models, res.max_draws) == (12, 3, 4)
    assert_same(
        res,
        EvalResults.from_arrays(
            simulated.scores,
            cost=simulated.mean_cost,
            latency=simulated.latency,
            models=simulated.models,
            prompts=[f"q{i}" for i in range(12)],
        ),
    )
    assert res.benchmark is not None and set(res.benchmark) == {"bench0", "bench1"}
    assert cf.naive_oracle(res).value == pytest.approx(
        cf.naive_oracle(simulated).value, abs=1e-15
    )
    assert EvalResults.from_frame(df, **COLUMNS).n_prompts == 12


def test_pandas_polars_pyarrow_agree(simulated):
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    df = long_table(simulated)
    base = cf.from_frame(df, **COLUMNS)
    for frame in (pl.from_pandas(df), pa.Table.from_pandas(df)):
        assert_same(base, cf.from_frame(frame, **COLUMNS))


@pytest.mark.parametrize("suffix", ["csv", "parquet", "jsonl"])
def test_read_formats(simulated, tmp_path, suffix):
    df = long_table(simulated)
    path = tmp_path / f"table.{suffix}"
    if suffix == "csv":
        df.to_csv(path, index=False)
    elif suffix == "parquet":
        df.to_parquet(path)
    else:
        df.to_json(path, orient="records", lines=True, double_precision=15)
    res = cf.read(path, **COLUMNS)
    assert_same(cf.from_frame(df, **COLUMNS), res)


def test_ragged_generations_and_missing_cells():
    df = pd.DataFrame(
        {
            "prompt_id": ["a", "a", "a", "a", "b", "b"],
            "model": ["x", "x", "x", "y", "y", "y"],
            "score": [1, 0, 1, 0, 1, 1],
        }
    )  # no generation column: rows of one cell are its generations, in order
    res = cf.from_frame(df)
    np.testing.assert_array_equal(res.n_draws, [[3, 1], [0, 2]])
    np.testing.assert_array_equal(res.successes, [[2, 0], [0, 2]])
    assert res.mask is not None and res.mask.shape == (2, 2, 3)
    assert not res.observed[1, 0]
    assert cf.naive_oracle(res, on="all").value == pytest.approx((2 / 3 + 1) / 2)
    # compared on the prompt both models ran ('a'): max(2/3, 0)
    assert cf.naive_oracle(res).value == pytest.approx(2 / 3)
    assert "ran only part of the 2 prompts (x 1/2 (50.0%))" in res.coverage_note


def test_graded_scores_from_a_table():
    df = pd.DataFrame(
        {"prompt_id": [1, 1, 2, 2], "model": ["x", "y"] * 2, "score": [0.5, 1, 0, 0.25]}
    )
    res = cf.from_frame(df)
    assert not res.is_binary
    np.testing.assert_allclose(res.p_hat, [[0.5, 1.0], [0.0, 0.25]])
    assert list(res.prompts) == [1, 2]  # labels keep their type


def base_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "prompt_id": ["a", "a", "b", "b"],
            "model": ["x", "y", "x", "y"],
            "generation": [0, 0, 0, 0],
            "score": [1, 0, 0, 1],
            "cost": [1.0, 2.0, 1.0, 2.0],
            "bench": ["s", "s", "t", "t"],
        }
    )


@pytest.mark.parametrize(
    ("change", "kwargs", "match"),
    [
        (None, {"prompt": "question"}, "unknown prompt column 'question'"),
        (None, {"score": "correct"}, "unknown score column 'correct'"),
        (None, {"cost": "usd"}, "unknown cost column 'usd'"),
        (None, {"generation": "trial"}, "unknown generation column 'trial'"),
        (lambda d: d.iloc[:0], {}, "no rows"),
        (lambda d: pd.concat([d, d.iloc[:1]]), {}, "duplicate rows"),
        (lambda d: d.assign(score=[1, np.nan, 0, 1]), {}, "missing value"),
        (lambda d: d.assign(score=["1", "x", "0", "1"]), {}, "non-numeric"),
        (lambda d: d.assign(score=[1, 2, 0, 1]), {}, r"\[0, 1\]"),
        (lambda d: d.assign(score=[1, np.inf, 0, 1]), {}, "NaN or inf"),
        (lambda d: d.assign(cost=[1, -2.0, 1, 2]), {"cost": "cost"}, "cost"),
        (lambda d: d.assign(cost=[1, None, 1, 2]), {"cost": "cost"}, "missing"),
        (
            lambda d: d.assign(bench=["s", "t", "t", "t"]),
            {"benchmark": "bench"},
            "varies within prompt",
        ),
        (
            lambda d: d.assign(prompt_id=["a", None, "b", "b"]),
            {},
            r"column 'prompt_id' \(prompt\) is empty in row 2",
        ),
        (
            lambda d: d.assign(model=["x", "y", "x", " "]),
            {},
            r"column 'model' \(model\) is empty in row 4",
        ),
    ],
)
def test_bad_tables_name_the_problem(change, kwargs, match):
    df = base_frame() if change is None else change(base_frame())
    with pytest.raises(ValueError, match=match):
        cf.from_frame(df, **kwargs)


def test_bad_files(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        cf.read(tmp_path / "missing.csv")
    path = tmp_path / "table.weird"
    path.write_text("x")
    with pytest.raises(ValueError, match="unknown format"):
        cf.read(path)
    path = tmp_path / "t.csv"
    base_frame().to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"t\.csv: unknown prompt column"):
        cf.read(path, prompt="nope")
    with pytest.raises(ValueError, match="expected a pandas, polars or pyarrow"):
        cf.from_frame([1, 2, 3])


def test_count_frames():
    df = pd.DataFrame(
        {
            "prompt_id": ["a", "a", "b"],
            "model": ["x", "y", "x"],
            "n_correct": [3, 0, 10],
            "n_samples": [10, 5, 10],
        }
    )
    res = cf.from_count_frame(df)
    np.testing.assert_array_equal(res.n_draws, [[10, 5], [10, 0]])
    np.testing.assert_array_equal(res.successes, [[3, 0], [10, 0]])
    with pytest.raises(ValueError, match="duplicate rows"):
        cf.from_count_frame(pd.concat([df, df.iloc[:1]]))
    with pytest.raises(ValueError, match="between 0 and n_draws"):
        cf.from_count_frame(df.assign(n_correct=[11, 0, 10]))
    with pytest.raises(ValueError, match="unknown successes column"):
        cf.from_count_frame(df, successes="solved")
    with pytest.raises(ValueError, match="no rows"):
        cf.from_count_frame(df.iloc[:0])


# ------------------------------------------------ real fixtures (bare clone)


def test_fixture_evalperf_counts():
    path = FIXTURES / "evalperf_small.csv"
    raw = pd.read_csv(path)
    res = cf.read(path)  # n_correct / n_samples detected: a count table
    assert (res.n_prompts, res.n_models) == (40, 6)
    assert res.is_complete and (res.min_draws, res.max_draws) == (50, 100)
    o1 = list(res.models).index("o1-mini-2024-09-12_openai_temp_1.0")
    assert set(res.n_draws[:, o1]) == {50}
    want = (raw.n_correct / raw.n_samples).groupby(raw.model).mean()
    got = cf.single_models(res)["accuracy"]
    pd.testing.assert_series_equal(
        got.sort_index(), want.sort_index(), check_names=False, rtol=1e-14
    )
    # subsample curve at g = 50 with the 50-draw model in the pool is exact;
    # at g = G it equals the naive oracle on the 100-draw models
    full = res.select(models=[m for m in res.models if not m.startswith("o1-mini")])
    curve = cf.subsample_curve(full.successes, full.n_draws, [1, 10, 100])
    assert curve[2] == pytest.approx(cf.naive_oracle(full).value, abs=1e-13)
    assert curve[0] >= curve[1] >= curve[2]
    table = cf.single_models(full, best_of_k=[1, 10, 100])
    np.testing.assert_allclose(table["pass@1"], table["accuracy"], atol=1e-14)
    assert (table["pass@100"] >= table["pass@10"]).all()


def test_fixture_mmlu_pro_ragged_coverage(tmp_path):
    raw = pd.read_csv(FIXTURES / "mmlu_pro_small.csv")
    res = cf.from_frame(raw, benchmark="category")
    assert (res.n_prompts, res.n_models, res.max_draws) == (40, 6, 1)
    ds = list(res.models).index("DeepSeek-Coder-V2")
    assert (~res.observed).sum() == 8 and (~res.observed[:, ds]).sum() == 8
    with pytest.raises(ValueError, match="8 cell"):
        res.require_complete("the frontier")
    table = cf.single_models(res)
    assert table.loc["DeepSeek-Coder-V2", "n_prompts"] == 32
    want = raw.groupby("model").score.mean()
    pd.testing.assert_series_equal(
        table["accuracy_own"].sort_index(), want.sort_index(), check_names=False
    )
    # compared on the 32 questions every model answered
    ran = raw[raw.model == "DeepSeek-Coder-V2"].prompt_id
    common = raw[raw.prompt_id.isin(ran)]
    pd.testing.assert_series_equal(
        table["accuracy"].sort_index(),
        common.groupby("model").score.mean().sort_index(),
        check_names=False,
    )
    assert "compared on the 32 prompts every model ran" in res.coverage_note
    assert set(res.benchmark) <= set(raw.category)
    # the same table through Parquet and JSONL, and through polars
    raw.to_parquet(tmp_path / "m.parquet")
    raw.to_json(tmp_path / "m.jsonl", orient="records", lines=True)
    for path in (tmp_path / "m.parquet", tmp_path / "m.jsonl"):
        assert_same(res, cf.read(path, benchmark="category"))
    pl = pytest.importorskip("polars")
    assert_same(res, cf.from_frame(pl.from_pandas(raw), benchmark="category"))


def test_fixture_taubench_repeated_trials():
    path = FIXTURES / "taubench_small.csv"
    raw = pd.read_csv(path)
    res = cf.read(path, latency="n_messages")
    assert (res.n_prompts, res.n_models, res.min_draws, res.max_draws) == (40, 1, 4, 4)
    assert res.p_hat.mean() == pytest.approx(raw.score.mean(), abs=1e-15)
    assert cf.naive_oracle(res, "posthoc").value == pytest.approx(
        raw.groupby("prompt_id").score.max().mean()
    )
    np.testing.assert_allclose(
        res.mean_latency[:, 0], raw.groupby("prompt_id", sort=False).n_messages.mean()
    )
    # the user-simulator cost has empty cells in the source: a clear error
    with pytest.raises(ValueError, match=r"'user_sim_cost_usd' \(cost\) has 4 missing"):
        cf.read(path, cost="user_sim_cost_usd")


def test_count_frame_bad_columns_are_named():
    df = pd.DataFrame(
        {"prompt_id": [1, 2], "model": ["a", "a"], "n_correct": [1, 2], "n_samples": 3}
    )
    with pytest.raises(ValueError, match=r"'n_correct' \(successes\).*non-numeric"):
        cf.from_count_frame(df.assign(n_correct=["1", "x"]))
    with pytest.raises(ValueError, match=r"'n_samples' \(n_draws\).*1 missing"):
        cf.from_count_frame(df.assign(n_samples=[3, None]))
    with pytest.raises(ValueError, match=r"'usd' \(cost/latency\).*missing"):
        cf.from_count_frame(df.assign(usd=[1.0, None]), cost="usd")
