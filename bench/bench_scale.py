"""Beyond one machine's comfort (issue 8): the 10-million-prompt streaming reduction
under 2 GB, and a 2-worker Dask LocalCluster against the single process.

Opt-in with ``CAPFRONT_BENCH_HUGE=1`` (writes 6.6 billion rows; the Parquet files
are cached in ``$CAPFRONT_BENCH_DIR``, default the system temp dir, and reused).
Without it both run at a tiny size, as correctness checks:

* ``test_stream_10m``: ``capfront.read(path, chunk_rows=...)`` over a long table of
  N x 33 models x 20 generations, in a fresh interpreter; reports rows per second
  and peak memory (VmHWM) and asserts the peak is under 2 GB.
* ``test_dask_cluster_vs_single``: the same reduction of an N = 4 million prompt
  table by ``capfront.dask.from_dask`` on ``LocalCluster(n_workers=2)`` and by the
  single-process streaming read; the statistics must be identical.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

from conftest import timed

HUGE = os.environ.get("CAPFRONT_BENCH_HUGE") == "1"
L, G = 33, 20
N_STREAM = 10_000_000 if HUGE else 3_000
N_DASK = 4_000_000 if HUGE else 2_000
CHUNK_ROWS = 2_000_000 // (L * G) * (L * G)  # whole prompts per row group


def write_table(path: Path, N: int) -> Path:
    """Long table sorted by (prompt, model, generation): prompt_id int32, model
    (dictionary string), generation int8, score uint8; zstd row groups of
    ``CHUNK_ROWS``. Cached: an existing file of the right size is reused."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if path.exists() and pq.ParquetFile(path).metadata.num_rows == N * L * G:
        return path
    per_group = CHUNK_ROWS // (L * G)
    for other in sorted(path.parent.glob(f"capfront_long_*x{L}x{G}.parquet")):
        # the generator is sequential, so a larger cached table starts with this
        # one: copy its first row groups instead of drawing them again
        big = pq.ParquetFile(other)
        if big.metadata.num_rows > N * L * G:
            tmp = path.with_suffix(".part")
            with pq.ParquetWriter(tmp, big.schema_arrow, compression="zstd") as w:
                for start in range(0, N, per_group):
                    group = big.read_row_group(start // per_group)
                    n = min(per_group, N - start)
                    w.write_table(group.slice(0, n * L * G), row_group_size=CHUNK_ROWS)
            tmp.rename(path)
            return path
    models = pa.array([f"model_{i:02d}" for i in range(L)])
    schema = pa.schema(
        [
            ("prompt_id", pa.int32()),
            ("model", pa.dictionary(pa.int8(), pa.string())),
            ("generation", pa.int8()),
            ("score", pa.uint8()),
        ]
    )
    rng = np.random.default_rng(0)
    gen = np.tile(np.arange(G, dtype=np.int8), per_group * L)
    code = np.tile(np.repeat(np.arange(L, dtype=np.int8), G), per_group)
    tmp = path.with_suffix(".part")
    with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        for start in range(0, N, per_group):
            n = min(per_group, N - start)
            k = n * L * G
            p = rng.beta(0.7, 0.5, size=(n, L)).astype(np.float32)
            u = rng.random((n, L, G), dtype=np.float32)
            table = pa.table(
                {
                    "prompt_id": np.repeat(
                        np.arange(start, start + n, dtype=np.int32), L * G
                    ),
                    "model": pa.DictionaryArray.from_arrays(pa.array(code[:k]), models),
                    "generation": gen[:k],
                    "score": (u < p[:, :, None]).astype(np.uint8).ravel(),
                },
                schema=schema,
            )
            writer.write_table(table, row_group_size=CHUNK_ROWS)
    tmp.rename(path)
    return path


def table_path(N: int) -> Path:
    root = Path(os.environ.get("CAPFRONT_BENCH_DIR", tempfile.gettempdir()))
    root.mkdir(parents=True, exist_ok=True)
    return write_table(root / f"capfront_long_{N}x{L}x{G}.parquet", N)


def in_child(code: str) -> dict:
    """Run ``code`` (which sets ``out``) in a fresh interpreter; add its peak RSS
    (VmHWM: ru_maxrss would carry over the parent's peak through fork + exec)."""
    script = textwrap.dedent(code) + textwrap.dedent("""
        import json, re
        status = open("/proc/self/status").read()
        out["peak_mb"] = int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) / 1024
        print(json.dumps(out))
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_stream_10m():
    path = table_path(N_STREAM)
    rows = N_STREAM * L * G
    out = in_child(f"""
        import time
        import numpy as np
        import capfront as cf
        t = time.perf_counter()
        res = cf.read({str(path)!r}, chunk_rows={CHUNK_ROWS})
        seconds = time.perf_counter() - t
        out = {{
            "seconds": seconds,
            "rows_per_s": {rows} / seconds,
            "stats_mb": res.stats.nbytes / 2**20,
            "shape": [res.n_prompts, res.n_models, res.max_draws, res.min_draws],
            "dtype": str(res.stats.successes.dtype),
        }}
    """)
    print(f"\nstreamed {rows:,} rows: {out}")
    assert out["shape"] == [N_STREAM, L, G, G]
    assert out["dtype"] == "uint8"  # counts held compactly
    assert out["peak_mb"] < 2048


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::pandas.errors.Pandas4Warning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_dask_cluster_vs_single():
    dd = pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("dask.distributed")
    import capfront as cf
    import capfront.dask as cfd

    path = table_path(N_DASK)
    rows = N_DASK * L * G
    single, t_single = timed(cf.read, path, chunk_rows=CHUNK_ROWS)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
    ):
        clustered, t_dask = timed(
            lambda: cfd.from_dask(dd.read_parquet(path, split_row_groups=True))
        )
    print(
        f"\n{rows:,} rows: single process {t_single:.1f} s "
        f"({rows / t_single / 1e6:.1f} M rows/s); LocalCluster(2 workers) "
        f"{t_dask:.1f} s ({rows / t_dask / 1e6:.1f} M rows/s)"
    )
    order = np.argsort(np.asarray(clustered.prompts))
    assert list(clustered.models) == list(single.models)
    np.testing.assert_array_equal(np.asarray(clustered.prompts)[order], single.prompts)
    np.testing.assert_array_equal(clustered.successes[order], single.successes)
    np.testing.assert_array_equal(clustered.n_draws[order], single.n_draws)
    assert cf.naive_oracle(clustered).value == cf.naive_oracle(single).value
