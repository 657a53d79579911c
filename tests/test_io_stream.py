"""Streaming reads: ``read(chunk_rows=...)`` equals the in-memory reader for any
chunk size and row order, takes the ordered-block fast path on sorted tables, keeps
chunks compact, and still finds duplicate rows split across chunks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capfront as cf
from capfront import io


def long_table(rng, N, L, G, graded=False, cost=False) -> pd.DataFrame:
    scores = (rng.random((N, L, G)) < rng.random((N, L, 1))).astype(np.float64)
    if graded:
        scores = np.where(rng.random((N, L, G)) < 0.5, rng.random((N, L, G)), scores)
    n, m, g = np.meshgrid(np.arange(N), np.arange(L), np.arange(G), indexing="ij")
    frame = pd.DataFrame(
        {
            "prompt_id": 100 + n.ravel(),
            "model": np.array([f"m{i}" for i in range(L)])[m.ravel()],
            "generation": g.ravel(),
            "score": scores.ravel() if graded else scores.ravel().astype(np.uint8),
        }
    )
    if cost:
        frame["cost"] = rng.exponential(size=len(frame))
    return frame


def same_stats(a: cf.EvalResults, b: cf.EvalResults) -> None:
    # ids read from a CSV file are strings ('007' is not 7)
    order_p = pd.Index(b.prompts.astype(str)).get_indexer(a.prompts.astype(str))
    order_m = pd.Index(b.models).get_indexer(a.models)
    assert (order_p >= 0).all() and (order_m >= 0).all()
    sub = np.ix_(order_p, order_m)
    # graded sums are added in row order: exact for counts, to rounding otherwise
    np.testing.assert_allclose(a.successes, b.successes[sub], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(a.n_draws, b.n_draws[sub])
    np.testing.assert_array_equal(a.max_score, b.max_score[sub])
    if b.has_cost:
        np.testing.assert_allclose(a.mean_cost, b.mean_cost[sub], rtol=1e-12)
    assert a.is_binary == b.is_binary


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    N=st.integers(1, 7),
    L=st.integers(1, 4),
    G=st.integers(1, 5),
    graded=st.booleans(),
    cost=st.booleans(),
    shuffle=st.booleans(),
    chunk=st.integers(1, 200),
    fmt=st.sampled_from(["parquet", "csv"]),
)
def test_streamed_read_equals_in_memory(
    tmp_path_factory, seed, N, L, G, graded, cost, shuffle, chunk, fmt
):
    rng = np.random.default_rng(seed)
    frame = long_table(rng, N, L, G, graded, cost)
    if shuffle:
        frame = frame.sample(frac=1.0, random_state=seed % 1000)
    path = tmp_path_factory.mktemp("t") / f"t.{fmt}"
    if fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    kw = {"cost": "cost"} if cost else {}
    whole = cf.from_frame(frame, **kw)
    streamed = cf.read(path, chunk_rows=chunk, **kw)
    same_stats(streamed, whole)
    assert cf.naive_oracle(streamed).value == pytest.approx(
        cf.naive_oracle(whole).value, abs=1e-12
    )


def test_sorted_chunks_take_the_fast_path_and_stay_compact():
    rng = np.random.default_rng(1)
    frame = long_table(rng, 50, 3, 4)
    cols = dict(io._FRAME_DEFAULTS)
    fast = io._ordered_block_stats(frame, **cols)
    assert fast is not None
    assert fast.n_draws.strides == (0, 0)  # every cell has G draws: no array
    # a shuffled table, a missing row or a repeated prompt run: general path
    assert (
        io._ordered_block_stats(frame.sample(frac=1.0, random_state=0), **cols) is None
    )
    assert io._ordered_block_stats(frame.iloc[:-1], **cols) is None
    twice = pd.concat([frame, frame.iloc[:12]], ignore_index=True)
    assert io._ordered_block_stats(twice, **cols) is None
    stats, extra = io.stats_from_frame(frame)
    assert stats.successes.dtype == np.uint8  # at rest: the smallest count dtype
    # nothing a chunk leaves behind may be a view that keeps the chunk alive
    for kept in (stats.successes, stats.prompts, extra["generations"]):
        assert kept.base is None
    assert list(extra["generations"]) == [0, 1, 2, 3]
    general, _ = io.stats_from_frame(frame.sample(frac=1.0, random_state=0))
    res_fast = io.results_from_chunks([(stats, extra)])
    res_general = io.results_from_chunks([(general, _)])
    same_stats(res_fast, res_general)
    assert res_fast.successes.dtype == np.int32  # widened for arithmetic


@pytest.mark.parametrize("shuffle", [False, True])
def test_duplicates_split_across_chunks_are_found(tmp_path, shuffle):
    frame = long_table(np.random.default_rng(2), 20, 3, 4)
    doubled = pd.concat([frame, frame], ignore_index=True)
    if shuffle:
        doubled = doubled.sample(frac=1.0, random_state=3)
    path = tmp_path / "dup.parquet"
    doubled.to_parquet(path, index=False)
    with pytest.raises(ValueError, match="duplicate rows"):
        cf.read(path, chunk_rows=len(frame) // 3)


def test_whole_prompts_recuts_chunks_at_prompt_boundaries():
    frame = long_table(np.random.default_rng(4), 30, 2, 3)
    pieces = [frame.iloc[i : i + 7] for i in range(0, len(frame), 7)]
    out = list(io._whole_prompts(iter(pieces), "prompt_id"))
    assert sum(len(p) for p in out) == len(frame)
    seen: set[int] = set()
    for part in out:
        ids = set(part["prompt_id"])
        assert not ids & seen  # no prompt in two chunks
        seen |= ids
    pd.testing.assert_frame_equal(
        pd.concat(out, ignore_index=True), frame.reset_index(drop=True)
    )
