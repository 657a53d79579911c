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


def _write_groups(path, frames):
    """One Parquet row group per frame (each with its own string dictionary)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [
        pa.Table.from_pandas(f, preserve_index=False).replace_schema_metadata(None)
        for f in frames
    ]
    with pq.ParquetWriter(path, tables[0].schema) as writer:
        for t in tables:
            writer.write_table(t)


@pytest.mark.parametrize("chunk", [1, 7, 24, 25, 60, 1000])
def test_streamed_parquet_row_groups_of_any_layout(tmp_path, monkeypatch, chunk):
    """Row groups of uneven sizes, with their own model dictionaries (in another
    order), one with the rows of each prompt shuffled (those pieces take the
    pandas path, the others not), and an extra column of a type the reader
    cannot use (not read): equal to the in-memory read."""
    rng = np.random.default_rng(5)
    frame = long_table(rng, 30, 3, 4, cost=True)
    frame["notes"] = [[1, 2]] * len(frame)  # a list column
    cuts = [0, 17, 40, 41, 200, 300, len(frame)]
    parts = [frame.iloc[a:b].copy() for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    for i, part in enumerate(parts):  # dictionaries in two orders
        order = ["m2", "m1", "m0"] if i in (2, 3) else ["m0", "m1", "m2"]
        part["model"] = pd.Categorical(part["model"], categories=order)
    # and the rows of each prompt in a random order
    parts[4] = (
        parts[4]
        .sample(frac=1.0, random_state=1)
        .sort_values("prompt_id", kind="stable")
    )
    path = tmp_path / "groups.parquet"
    _write_groups(path, parts)
    general = []
    real = io.stats_from_frame
    monkeypatch.setattr(
        io, "stats_from_frame", lambda f, **k: general.append(len(f)) or real(f, **k)
    )
    streamed = cf.read(path, chunk_rows=chunk, cost="cost")
    whole = cf.from_frame(frame.drop(columns="notes"), cost="cost")
    same_stats(streamed, whole)
    assert streamed.successes.dtype == np.int32
    # pandas saw the shuffled group's rows (and its two edge prompts), no more
    assert 100 <= sum(general) <= 100 + 2 * 12


def test_sorted_parquet_takes_no_pandas_path(tmp_path, monkeypatch):
    frame = long_table(np.random.default_rng(6), 40, 3, 5)
    path = tmp_path / "t.parquet"
    _write_groups(path, [frame.iloc[a : a + 37] for a in range(0, len(frame), 37)])
    whole = cf.from_frame(frame)

    def refuse(*args, **kwargs):
        raise AssertionError("a sorted table went through pandas")

    monkeypatch.setattr(io, "stats_from_frame", refuse)
    for chunk in (1, 15, 37, 100, 10_000):
        same_stats(cf.read(path, chunk_rows=chunk), whole)


def test_whole_prompt_batches_recut_without_copies():
    import pyarrow as pa

    frame = long_table(np.random.default_rng(4), 30, 2, 3)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    batches = table.to_batches(max_chunksize=7)
    out = list(io._whole_prompt_batches(iter(batches), "prompt_id"))
    seen: set[int] = set()
    for piece in out:
        ids = set(pa.Table.from_batches(piece)["prompt_id"].to_pylist())
        assert not ids & seen  # no prompt in two pieces
        seen |= ids
    rebuilt = pa.Table.from_batches([b for piece in out for b in piece])
    assert rebuilt.equals(table)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_iter_parquet_threads_keep_the_file_order(tmp_path, threads):
    frame = long_table(np.random.default_rng(7), 25, 2, 2)
    path = tmp_path / "t.parquet"
    _write_groups(path, [frame.iloc[a : a + 9] for a in range(0, len(frame), 9)])
    batches = list(io.iter_parquet(path, 20, threads=threads, columns=["score"]))
    assert all(b.num_rows <= 20 for b in batches)
    got = np.concatenate([b.column("score").to_numpy() for b in batches])
    np.testing.assert_array_equal(got, frame["score"].to_numpy())
    assert batches[0].schema.names == ["score"]
    stream = io.iter_parquet(path, 9, threads=threads)
    next(stream)
    stream.close()  # stopping early leaves no worker behind


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(["i1", "u1", "i2", "i4", "u4", "i8"]),
    n=st.integers(1, 6),
    k=st.integers(1, 24),
    seed=st.integers(0, 2**31),
)
def test_wide_word_row_checks_equal_numpy(dtype, n, k, seed):
    from capfront.frames import _rows_constant, _rows_equal

    rng = np.random.default_rng(seed)
    pattern = rng.integers(0, 3, k).astype(dtype)
    rows = np.tile(pattern, (n, 1))
    const = np.repeat(rng.integers(0, 3, (n, 1)).astype(dtype), k, axis=1)
    if rng.random() < 0.7:  # one changed value somewhere (or none)
        i, j = rng.integers(n), rng.integers(k)
        rows[i, j] = rows[i, j] + rng.integers(0, 2)
        const[i, j] = const[i, j] + rng.integers(0, 2)
    assert _rows_equal(rows, pattern) == bool((rows == pattern).all())
    assert _rows_constant(const) == bool((const == const[:, :1]).all())
