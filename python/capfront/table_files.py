"""Reading table files (CSV/TSV with a sniffed separator, Parquet, JSONL, JSON,
Excel) into pandas DataFrames, whole or in chunks; prompt and model id columns of
text files are read as strings.

Pure pandas/pyarrow: below the data model, used by :mod:`capfront.io` and the
input adapters of :mod:`capfront.adapters`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from .frames import _first_run

#: column names read as text from CSV/JSONL files (ids are labels: '007' and '7'
#: are different prompts); a column named with ``prompt=``/``model=`` is added
PROMPT_ALIASES = (
    "prompt_id",
    "question_id",
    "sample_id",
    "instance_id",
    "task_id",
    "doc_id",
    "id",
    "prompt",
)
MODEL_ALIASES = ("model", "model_name", "model_id", "llm")
ID_COLUMNS = PROMPT_ALIASES + MODEL_ALIASES
_TEXT_FORMATS = ("csv", "tsv", "txt")
_JSONL_FORMATS = ("jsonl", "ndjson")
_EXCEL_FORMATS = ("xlsx", "xlsm", "xls")


def _open_text(path: Path) -> Any:
    """``path`` opened as text, through its compression (by suffix)."""
    import bz2
    import gzip
    import lzma

    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(
        path.suffix.lower()
    )
    if opener is None:
        return open(path, encoding="utf-8", errors="replace")
    return opener(path, "rt", encoding="utf-8", errors="replace")


def sniff_delimiter(path: Path, fmt: str = "csv") -> str:
    """The field separator of a delimited text file: tab for ``.tsv``, else the
    one of ``,`` ``;`` tab ``|`` that occurs most in the header line (``,`` when
    none does), so semicolon- (European spreadsheets) and tab-separated exports
    read without options."""
    if fmt == "tsv":
        return "\t"
    try:
        with _open_text(path) as fh:
            header = fh.readline()
    except (OSError, EOFError, ValueError):
        return ","
    counts = {sep: header.count(sep) for sep in (",", ";", "\t", "|")}
    best = max(counts, key=lambda k: counts[k])
    return best if counts[best] > 0 else ","


def _check_file(path: Path) -> None:
    if not path.exists():
        raise ValueError(f"{path}: no such file")
    if path.is_dir():
        raise ValueError(f"{path}: is a folder; give a file")
    if path.stat().st_size == 0:
        raise ValueError(f"{path}: empty file")


def _id_dtypes(names: Any, id_columns: Any) -> dict[str, Any]:
    wanted = set(ID_COLUMNS) | {c for c in id_columns or () if c is not None}
    return {c: str for c in map(str, names) if c in wanted}


def _unreadable(path: Path, fmt: str, err: BaseException) -> ValueError:
    reason = " ".join(str(err).split())[:160] or type(err).__name__
    return ValueError(
        f"{path}: not a readable {fmt} file ({reason}); check the file, or give "
        "--format if the suffix is wrong"
    )


def read_table(
    path: str | Path,
    *,
    format: str | None = None,
    id_columns: Any = None,
) -> pd.DataFrame:
    """CSV (any of ``,`` ``;`` tab ``|`` separators, sniffed), TSV, Parquet, JSONL,
    JSON or Excel (``.xlsx``, needs ``openpyxl``) file -> pandas DataFrame (format
    from the suffix). Id columns (:data:`ID_COLUMNS` and ``id_columns``) of text
    files are read as strings. Empty, unreadable or binary files raise a
    ``ValueError`` naming the file."""
    path = Path(path)
    _check_file(path)
    fmt = (format or path.suffix.lstrip(".")).lower()
    if fmt in _EXCEL_FORMATS:
        return _read_excel(path, id_columns)
    try:
        if fmt in _TEXT_FORMATS + _JSONL_FORMATS:
            return _read_text(path, fmt, id_columns)
        if fmt in ("parquet", "pq"):
            return pd.read_parquet(path)
        if fmt == "json":
            return pd.read_json(path)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path}: empty file (no header line)") from None
    except ValueError as err:
        if str(err).startswith(str(path)):
            raise
        raise _unreadable(path, fmt, err) from None
    except (UnicodeDecodeError, pd.errors.ParserError, OSError) as err:
        raise _unreadable(path, fmt, err) from None
    except Exception as err:  # pyarrow raises its own types on a corrupt file
        if type(err).__module__.startswith("pyarrow"):
            raise _unreadable(path, fmt, err) from None
        raise
    raise ValueError(
        f"{path}: unknown format {fmt!r} (use csv, tsv, parquet, jsonl or xlsx)"
    )


def _read_text(path: Path, fmt: str, id_columns: Any, **chunks: Any) -> Any:
    """A delimited text or JSON-lines file (or, with ``chunksize=``, an iterator
    of chunks of it), id columns as strings."""
    if fmt in _JSONL_FORMATS:
        head = pd.read_json(path, lines=True, nrows=1)
        return pd.read_json(
            path, lines=True, dtype=_id_dtypes(head.columns, id_columns), **chunks
        )
    sep = sniff_delimiter(path, fmt)
    head = pd.read_csv(path, sep=sep, nrows=0)
    return pd.read_csv(
        path, sep=sep, dtype=_id_dtypes(head.columns, id_columns), **chunks
    )


def _read_excel(path: Path, id_columns: Any) -> pd.DataFrame:
    """The first sheet of a spreadsheet, through pandas and openpyxl."""
    if path.suffix.lower() == ".xls":
        raise ValueError(
            f"{path}: old .xls spreadsheets are not read; save the sheet as CSV "
            "(or .xlsx)"
        )
    try:
        import openpyxl  # noqa: F401
    except ImportError:
        raise ValueError(
            f"{path}: reading .xlsx needs openpyxl (pip install 'capfront[excel]'), "
            "or save the sheet as CSV"
        ) from None
    try:
        head = pd.read_excel(path, nrows=0)
        return pd.read_excel(path, dtype=_id_dtypes(head.columns, id_columns))
    except Exception as err:  # openpyxl / zipfile raise many types
        raise _unreadable(path, "xlsx", err) from None


def iter_table(
    path: str | Path,
    chunk_rows: int,
    *,
    format: str | None = None,
    id_columns: Any = None,
) -> Iterator[pd.DataFrame]:
    """Stream a CSV, Parquet or JSONL file in chunks of about ``chunk_rows`` rows
    (Parquet by record batches, so memory stays bounded)."""
    path = Path(path)
    _check_file(path)
    if chunk_rows < 1:
        raise ValueError("chunk_rows must be >= 1")
    fmt = (format or path.suffix.lstrip(".")).lower()
    if fmt in ("parquet", "pq"):
        for batch in iter_parquet(path, chunk_rows):
            yield batch.to_pandas()
    elif fmt in _TEXT_FORMATS + _JSONL_FORMATS:
        yield from _read_text(path, fmt, id_columns, chunksize=chunk_rows)
    else:
        raise ValueError(f"{path}: chunked reading supports csv, parquet and jsonl")


def iter_parquet(
    path: str | Path,
    chunk_rows: int,
    *,
    columns: list[str] | None = None,
    threads: int | None = None,
) -> Iterator[Any]:
    """Stream a Parquet file as pyarrow ``RecordBatch`` es of at most ``chunk_rows``
    rows, in file order: whole row groups gathered up to about ``chunk_rows`` rows,
    string columns as dictionaries (cheap to factorize), only ``columns`` when
    given.

    ``threads`` worker threads (default: the cores, at most 4) decode the next
    row groups while the caller works on the current one (pyarrow releases the
    GIL while it decodes), so at most ``threads + 1`` gatherings are held at a
    time. The file is read by row groups, not ``ParquetFile.iter_batches``, which
    holds on to memory as it goes (about 330 kB per 2M-row batch with pyarrow 26:
    gigabytes over billions of rows)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    _check_file(path)
    if chunk_rows < 1:
        raise ValueError("chunk_rows must be >= 1")
    schema = pq.read_schema(path)
    strings = [
        f.name
        for f in schema
        if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
    ]
    meta = pq.read_metadata(path)
    groups: list[list[int]] = [[]]
    rows = 0
    for i in range(meta.num_row_groups):
        groups[-1].append(i)
        rows += meta.row_group(i).num_rows
        if rows >= chunk_rows:
            groups.append([])
            rows = 0
    groups = [g for g in groups if g]
    local = threading.local()

    def read(group: list[int]) -> Any:
        # one ParquetFile per worker thread: no reader state shared across threads
        file = getattr(local, "file", None)
        if file is None:
            file = local.file = pq.ParquetFile(path, read_dictionary=strings)
        return file.read_row_groups(group, columns=columns, use_threads=False)

    if threads is None:
        threads = min(4, os.cpu_count() or 1)
    threads = max(1, min(threads, len(groups)))
    with ThreadPoolExecutor(threads, thread_name_prefix="capfront-parquet") as pool:
        ahead = [pool.submit(read, g) for g in groups[:threads]]
        try:
            for i in range(len(groups)):
                table = ahead.pop(0).result()
                if i + threads < len(groups):
                    ahead.append(pool.submit(read, groups[i + threads]))
                yield from table.to_batches(max_chunksize=chunk_rows)
                del table
        finally:  # the caller stopped early (or failed): drop what is queued
            for future in ahead:
                future.cancel()


def _whole_prompts(
    chunks: Iterator[pd.DataFrame], prompt: str
) -> Iterator[pd.DataFrame]:
    """Re-cut a stream of chunks so that, in a table sorted by prompt, no prompt is
    split between two chunks: the rows of each chunk's last prompt move to the next
    chunk. (Unsorted tables stay correct: chunks are merged by label.)"""
    carry: pd.DataFrame | None = None
    for chunk in chunks:
        if carry is not None and len(carry):
            chunk = pd.concat([carry, chunk], ignore_index=True)
        if prompt not in chunk.columns or len(chunk) == 0:
            yield chunk
            carry = None
            continue
        p = chunk[prompt].to_numpy()
        start = len(p) - _first_run(p[::-1])
        if start == 0:  # the whole chunk is one prompt: keep accumulating
            carry = chunk
            continue
        carry = chunk.iloc[start:]
        yield chunk.iloc[:start]
    if carry is not None and len(carry):
        yield carry


def _whole_prompt_batches(batches: Iterator[Any], prompt: str) -> Iterator[list[Any]]:
    """:func:`_whole_prompts` for pyarrow record batches, without copying them:
    yields lists of batches, each list one piece in which, in a table sorted by
    prompt, no prompt is split from its other rows. A batch's rows up to its last
    prompt are yielded alone (a zero-copy slice); the last prompt's rows wait
    (``carry``) and join the rows of the same prompt at the head of the next
    batch as a small piece of their own."""
    import pyarrow as pa

    carry: list[Any] = []

    def runs(batch: Any) -> Any:
        # runs of equal codes are runs of equal labels (within one batch)
        col = batch.column(prompt)
        col = col.indices if pa.types.is_dictionary(col.type) else col
        return col.to_numpy(zero_copy_only=False)

    for batch in batches:
        if prompt not in batch.schema.names or batch.num_rows == 0:
            if carry:
                yield carry
                carry = []
            yield [batch]
            continue
        values = runs(batch)
        if carry:
            head = _first_run(values)
            last = carry[-1].column(prompt)[-1].as_py()
            if batch.column(prompt)[0].as_py() == last:
                carry.append(batch.slice(0, head))
                if head == batch.num_rows:  # the whole batch is that prompt
                    continue
                batch, values = batch.slice(head), values[head:]
            yield carry
            carry = []
        start = len(values) - _first_run(values[::-1])
        if start > 0:
            yield [batch.slice(0, start)]
        carry = [batch.slice(start)]
    if carry:
        yield carry
