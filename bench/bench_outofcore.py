"""Out-of-core and Dask reduction throughput (issue 8).

A long table (prompt, model, generation, score) is written to Parquet in row groups,
then reduced by ``capfront.read(path, chunk_rows=...)`` (streaming) and by
``capfront.dask.from_dask`` (2 partitions per core), against the in-memory
``capfront.read(path)``. Peak memory is measured in a child process (ru_maxrss).
Default size is tiny (CI); ``CAPFRONT_BENCH_LARGE=1`` for the reported numbers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import capfront as cf
from conftest import LARGE, alternative, run, write_long_parquet

N, L, G = (200_000, 33, 20) if LARGE else (2_000, 8, 5)
ROW_GROUP = 2_000_000


@pytest.fixture(scope="module")
def parquet_table(tmp_path_factory):
    path = tmp_path_factory.mktemp("ooc") / "long.parquet"
    write_long_parquet(path, N, L, G, ROW_GROUP, [f"m{i}" for i in range(L)])
    return path


def _child_peak_mb(code: str) -> dict:
    """Run code in a fresh interpreter; report its result and peak RSS."""
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork + exec, so a child
    # of a big pytest process would report the parent's peak.
    script = textwrap.dedent(code) + textwrap.dedent("""
        import json, re
        status = open("/proc/self/status").read()
        peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) / 1024
        print(json.dumps({"peak_mb": peak, **out}))
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


# dask's read_parquet calls a pandas API that pandas 3 deprecates (not our code)
@pytest.mark.filterwarnings("ignore:The inplace keyword:DeprecationWarning")
@pytest.mark.filterwarnings("ignore::pandas.errors.Pandas4Warning")
@pytest.mark.parametrize("mode", ["in_memory", "chunked", "dask"])
def test_reduce_parquet(benchmark, parquet_table, mode):
    benchmark.group = "out-of-core reduction"
    rows = N * L * G
    if mode == "in_memory":
        reduce = lambda: cf.read(parquet_table)  # noqa: E731
    elif mode == "chunked":
        reduce = lambda: cf.read(parquet_table, chunk_rows=ROW_GROUP)  # noqa: E731
    else:
        dd = pytest.importorskip("dask.dataframe")
        import capfront.dask as cfd

        ddf = dd.read_parquet(parquet_table, split_row_groups=True)
        reduce = lambda: cfd.from_dask(ddf, scheduler="threads")  # noqa: E731
    res = run(benchmark, reduce, rounds=1)
    assert res.n_prompts == N and res.n_models == L
    assert (res.n_draws == G).all()
    if benchmark.stats is not None:
        benchmark.extra_info["rows_per_s"] = rows / benchmark.stats.stats.min
    if mode == "chunked":
        child = _child_peak_mb(f"""
            import capfront as cf, time
            t = time.perf_counter()
            r = cf.read({str(parquet_table)!r}, chunk_rows={ROW_GROUP})
            out = {{"seconds": time.perf_counter() - t, "rows": {rows}}}
        """)
        benchmark.extra_info.update(child)
        print(f"\nchunked read: {child}")


def test_reduce_parquet_polars(benchmark, parquet_table):
    """The alternative: polars' lazy group-by to per-cell counts (same table)."""
    pl = pytest.importorskip("polars")
    benchmark.group = "out-of-core reduction"
    alternative(benchmark, "polars scan_parquet + group_by")

    def counts():
        # the streaming engine: faster and smaller than the in-memory one here
        return (
            pl.scan_parquet(parquet_table)
            .group_by("prompt_id", "model")
            .agg(pl.col("score").sum().alias("s"), pl.len().alias("g"))
            .collect(engine="streaming")
        )

    table = run(benchmark, counts, rounds=1).sort("prompt_id", "model")
    res = cf.read(parquet_table, chunk_rows=ROW_GROUP)
    rows = np.argsort(np.asarray(res.prompts).astype(np.int64))
    cols = np.argsort(np.asarray(res.models).astype(str))  # polars sorts strings
    want = np.asarray(res.successes)[np.ix_(rows, cols)].reshape(-1)
    np.testing.assert_array_equal(table["s"].to_numpy(), want)
    assert (table["g"].to_numpy() == G).all()
