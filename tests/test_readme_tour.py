"""The README's "Tour of the API" runs as written.

The python block under that heading is extracted from README.md and executed in a
folder holding small files under the names it uses (``results.parquet``,
``evalperf_counts.csv``, ``huge.parquet``, ``samples_gsm8k.jsonl``) and with the
few arrays it takes as given (``scores``, ``cost_per_model``, ``points``, ``p``,
``n_draws``, ``n``, ``c``, ``k``, ``frame``), so the tour cannot drift from the API.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).resolve().parent / "data"


def tour_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Tour of the API", 1)[1]
    m = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert m, "README.md: no python block under 'Tour of the API'"
    return m.group(1)


def long_frame(n: int, models: int, draws: int, seed: int) -> pd.DataFrame:
    """A small long table with the README's column names."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, size=(n, models))
    rows = []
    for i in range(n):
        for j in range(models):
            for g in range(draws):
                rows.append(
                    {
                        "prompt_id": f"q{i:03d}",
                        "model": f"m{j}",
                        "generation": g,
                        "score": int(rng.random() < p[i, j]),
                        "cost_usd": 0.001 * (j + 1),
                        "latency_s": float(rng.exponential(1.0 + j)),
                        "category": f"cat{i % 3}",
                    }
                )
    return pd.DataFrame(rows)


@pytest.fixture
def tour_dir(tmp_path, monkeypatch):
    frame = long_frame(30, 3, 4, seed=1)
    frame.to_parquet(tmp_path / "results.parquet", index=False)
    frame[["prompt_id", "model", "generation", "score"]].to_parquet(
        tmp_path / "huge.parquet", index=False
    )
    shutil.copy(FIX / "evalperf_small.csv", tmp_path / "evalperf_counts.csv")
    samples = next((FIX / "adapters" / "lm_eval_runs").rglob("samples_gsm8k_*.jsonl"))
    shutil.copy(samples, tmp_path / "samples_gsm8k.jsonl")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


def test_readme_tour_runs_as_written(tour_dir, monkeypatch):
    pytest.importorskip("matplotlib")
    import functools

    import capfront as cf

    # the simulation studies run for minutes at their defaults: the same calls,
    # on fewer replications (everything else runs exactly as written)
    small = {"n_reps": 2, "n_prompts": 60, "n_models": 3, "n_boot": 20}
    studies = {
        "bias_decay": {"draws": (1, 5, 20), "correlation": (0.3,), "n_sims": 1},
        "topic_entropy": {"n_topics": 2, "alphas": (0.1, 10.0)},
    }
    for name, extra in studies.items():
        fn = getattr(cf.studies, name)
        monkeypatch.setattr(cf.studies, name, functools.partial(fn, **small, **extra))
    rng = np.random.default_rng(0)
    given = {
        "scores": (rng.random((20, 3, 4)) < 0.6).astype(np.uint8),
        "cost_per_model": np.array([1.0, 2.0, 4.0]),
        "points": rng.random((50, 3)),
        "p": np.array([0.2, 0.5, 0.7]),
        "n_draws": 10,
        "n": np.array([10, 10]),
        "c": np.array([3, 7]),
        "k": 5,
        "frame": long_frame(5, 2, 1, seed=2),
    }
    code = compile(tour_block(), "README.md (Tour of the API)", "exec")
    namespace: dict = dict(given)
    exec(code, namespace)  # noqa: S102 - our own README
    import matplotlib.pyplot as plt

    plt.close("all")
    res = namespace["res"]
    assert res.n_prompts > 0 and namespace["fr"] is not None


def test_tour_read_accepts_table_objects(tour_dir):
    """``cf.read`` takes pandas, polars and pyarrow tables, as the tour says."""
    import capfront as cf

    frame = pd.read_parquet("results.parquet")
    ref = cf.read("results.parquet", cost="cost_usd")
    for obj in (frame, pytest.importorskip("polars").from_pandas(frame)):
        got = cf.read(obj, cost="cost_usd")
        np.testing.assert_array_equal(got.successes, ref.successes)
    pa = pytest.importorskip("pyarrow")
    got = cf.read(pa.Table.from_pandas(frame), cost="cost_usd")
    np.testing.assert_allclose(got.mean_cost, ref.mean_cost)
