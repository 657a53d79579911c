"""Reading long tables (one row per prompt, model, generation) into ``EvalResults``.

``from_frame`` takes pandas, polars or pyarrow tables; ``read`` takes CSV, Parquet
and JSONL files.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .results import EvalResults, _raise_flags
from .suffstats import SufficientStats, _label_array, count_dtype, sufficient_stats


def _to_pandas(frame: Any) -> pd.DataFrame:
    if isinstance(frame, pd.DataFrame):
        return frame
    mod = type(frame).__module__
    if mod.startswith("polars"):
        return frame.to_pandas()
    if mod.startswith("pyarrow"):
        return frame.to_pandas()
    if hasattr(frame, "to_pandas"):
        return frame.to_pandas()
    if isinstance(frame, dict):
        return pd.DataFrame(frame)
    raise ValueError(
        f"expected a pandas, polars or pyarrow table (or a file path), got "
        f"{type(frame).__name__}"
    )


def _is_frame(obj: Any) -> bool:
    """A table object (pandas, polars, pyarrow, dict of columns), not a path."""
    if isinstance(obj, (str, Path)):
        return False
    mod = type(obj).__module__
    return (
        isinstance(obj, (pd.DataFrame, dict))
        or mod.startswith(("polars", "pyarrow"))
        or hasattr(obj, "to_pandas")
    )


def _labels_codes(
    df: pd.DataFrame, column: str, role: str
) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and labels of an id column (prompt or model); an empty or
    missing id is refused with its row number (1 = the first data row)."""
    values = df[column]
    codes, labels = pd.factorize(values, sort=False)
    empty = codes < 0
    if len(labels) and not pd.api.types.is_numeric_dtype(np.asarray(labels).dtype):
        # blank labels ("", "  "): checked once per distinct label, not per row
        blank = np.flatnonzero([str(x).strip() == "" for x in labels])
        if blank.size:
            empty |= np.isin(codes, blank)
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        raise ValueError(
            f"column {column!r} ({role}) is empty in row {i + 1} (the first data "
            f"row is 1; {int(empty.sum())} empty row(s) in all): give every row "
            f"a {role}"
        )
    return codes, np.asarray(labels)


def _need(df: pd.DataFrame, column: str | None, role: str) -> None:
    if column is not None and column not in df.columns:
        raise ValueError(
            f"unknown {role} column {column!r}; the table has columns "
            f"{list(map(str, df.columns))}"
        )


def _per_prompt(
    df: pd.DataFrame, column: str, p_codes: np.ndarray, n: int
) -> np.ndarray:
    """A label that must be constant within each prompt."""
    values = df[column].to_numpy(dtype=object)
    out = np.empty(n, dtype=object)
    out[p_codes] = values
    check = pd.Series(values).groupby(p_codes).nunique(dropna=False)
    if (check > 1).any():
        bad = check.index[check > 1][0]
        raise ValueError(f"column {column!r} varies within prompt number {bad}")
    return out


def from_frame(
    frame: Any,
    *,
    prompt: str = "prompt_id",
    model: str = "model",
    score: str = "score",
    generation: str | None = "generation",
    cost: str | None = None,
    latency: str | None = None,
    benchmark: str | None = None,
    topic: str | None = None,
    backend: str | None = None,
) -> EvalResults:
    """Long table -> :class:`EvalResults`.

    One row per (prompt, model, generation). ``generation`` may be absent from the
    table (then rows of the same cell are generations in table order). Cells may have
    different numbers of generations (held with a mask) and may be missing. Duplicate
    (prompt, model, generation) rows, unknown columns, NaN scores, empty prompt or
    model ids (named by row) and empty tables raise ``ValueError``. Every column
    here is named, so a ``cost`` or ``latency`` column with gaps is an error too (fill
    it or leave the argument out); ``capfront report``, which finds columns by
    name, leaves an auto-detected one with gaps out, with a note.
    """
    dense = _dense_from_frame(
        frame,
        prompt=prompt,
        model=model,
        score=score,
        generation=generation,
        cost=cost,
        latency=latency,
        benchmark=benchmark,
        topic=topic,
    )
    dense.pop("generations")
    return EvalResults.from_arrays(**dense, backend=backend)


def _dense_from_frame(
    frame: Any,
    *,
    prompt: str,
    model: str,
    score: str,
    generation: str | None,
    cost: str | None,
    latency: str | None,
    benchmark: str | None,
    topic: str | None,
) -> dict[str, Any]:
    """Long table -> dense ``(N, L, G)`` arrays (``scores``, ``mask``, ``cost``,
    ``latency``) and labels, as keyword arguments of ``EvalResults.from_arrays``."""
    df = _to_pandas(frame)
    for col, role in (
        (prompt, "prompt"),
        (model, "model"),
        (score, "score"),
        (cost, "cost"),
        (latency, "latency"),
        (benchmark, "benchmark"),
        (topic, "topic"),
    ):
        _need(df, col, role)
    if generation is not None and generation not in df.columns:
        if generation != "generation":
            _need(df, generation, "generation")
        generation = None
    if len(df) == 0:
        raise ValueError("the table has no rows")
    p_codes, p_labels = _labels_codes(df, prompt, "prompt")
    m_codes, m_labels = _labels_codes(df, model, "model")
    # One int64 key per row, sorted once: cells contiguous, generations in order.
    cell_key = p_codes.astype(np.int64) * len(m_labels) + m_codes
    if generation is not None:
        gen = df[generation]
        if gen.isna().any():
            raise ValueError(f"column {generation!r} has missing values")
        g_codes, g_labels = pd.factorize(gen, sort=True)
        full_key = cell_key * len(g_labels) + g_codes
        order = np.argsort(full_key, kind="stable")
        same = np.flatnonzero(np.diff(full_key[order]) == 0)
        if same.size:
            i = int(order[same[0] + 1])
            raise ValueError(
                f"duplicate rows for (prompt, model, generation) = "
                f"({df[prompt].iloc[i]!r}, {df[model].iloc[i]!r}, "
                f"{df[generation].iloc[i]!r}); {same.size} duplicate row(s) in all"
            )
    else:
        order = np.argsort(cell_key, kind="stable")
        g_labels = None
    # position of each row within its (prompt, model) cell, generations in order
    cell = cell_key[order]
    starts = np.r_[0, np.flatnonzero(np.diff(cell)) + 1]
    run = np.repeat(starts, np.diff(np.r_[starts, len(cell)]))
    pos = np.empty(len(df), dtype=np.int64)
    pos[order] = np.arange(len(cell)) - run
    N, L, G = len(p_labels), len(m_labels), int(pos.max()) + 1

    def dense(col: str, what: str) -> np.ndarray:
        values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.isnan(values) & df[col].notna().to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"column {col!r} ({what}) has non-numeric values (row {i + 1}: "
                f"{df[col].iloc[i]!r})"
            )
        if np.isnan(values).any():
            i = int(np.flatnonzero(np.isnan(values))[0])
            fix = (
                f"fill them, or leave {what}= out (capfront report drops an "
                f"auto-detected {what} column with gaps, with a note)"
                if what in ("cost", "latency")
                else "fill them or drop those rows"
            )
            raise ValueError(
                f"column {col!r} ({what}) has {int(np.isnan(values).sum())} missing "
                f"value(s), first in row {i + 1}: {fix}"
            )
        out = np.zeros((N, L, G), dtype=np.float64)
        out[p_codes, m_codes, pos] = values
        return out

    scores = dense(score, "score")
    mask = None
    if len(df) != N * L * G:
        mask = np.zeros((N, L, G), dtype=bool)
        mask[p_codes, m_codes, pos] = True
    scores_arr: np.ndarray = scores
    if set(np.unique(scores)) <= {0.0, 1.0}:
        scores_arr = scores.astype(np.uint8)
    return {
        "scores": scores_arr,
        "mask": mask,
        "cost": None if cost is None else dense(cost, "cost"),
        "latency": None if latency is None else dense(latency, "latency"),
        "models": np.asarray(m_labels, dtype=object).astype(str),
        "prompts": _label_array(np.asarray(p_labels)),
        "benchmark": None
        if benchmark is None
        else _per_prompt(df, benchmark, p_codes, N),
        "topic": None if topic is None else _per_prompt(df, topic, p_codes, N),
        "generations": None if g_labels is None else np.asarray(g_labels),
    }


_FRAME_DEFAULTS: dict[str, Any] = {
    "prompt": "prompt_id",
    "model": "model",
    "score": "score",
    "generation": "generation",
    "cost": None,
    "latency": None,
    "benchmark": None,
    "topic": None,
}


def stats_from_frame(
    frame: Any, *, backend: str | None = None, **columns: Any
) -> tuple[SufficientStats, dict[str, np.ndarray | None]]:
    """Sufficient statistics of one chunk of a long table, with prompt and model
    labels (to combine with :meth:`SufficientStats.concat`) and the per-prompt
    ``benchmark``/``topic`` labels aligned with ``stats.prompts``."""
    unknown = set(columns) - set(_FRAME_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown column argument(s) {sorted(unknown)}")
    cols = {**_FRAME_DEFAULTS, **columns}
    df = _to_pandas(frame)
    fast = _ordered_block_stats(df, backend=backend, **cols)
    if fast is not None:
        gens = df[cols["generation"]].to_numpy()[: fast.n_draws[0, 0]].copy()
        return _at_rest(fast), {"benchmark": None, "topic": None, "generations": gens}
    dense = _dense_from_frame(df, **cols)
    cost, latency = dense["cost"], dense["latency"]
    stats = sufficient_stats(
        dense["scores"],
        dense["mask"],
        cost,
        latency,
        prompts=dense["prompts"],
        models=dense["models"],
        backend=backend,
    )
    _raise_flags(stats.flags)
    extra = {k: dense[k] for k in ("benchmark", "topic", "generations")}
    return _at_rest(stats), extra


def _first_run(values: np.ndarray) -> int:
    """Length of the run of equal values at the start (scanned in growing windows,
    so a long array with short runs costs little)."""
    width = 1024
    while True:
        head = values[:width]
        other = np.flatnonzero(head != values[0])
        if other.size:
            return int(other[0])
        if width >= len(values):
            return len(values)
        width *= 4


def _codes(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and labels of a column (categoricals without a hash pass)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(), np.asarray(column.cat.categories)
    codes, labels = pd.factorize(column, sort=False)
    return codes, np.asarray(labels)


def _ordered_block_stats(
    df: pd.DataFrame,
    *,
    prompt: str,
    model: str,
    score: str,
    generation: str | None,
    cost: str | None,
    latency: str | None,
    benchmark: str | None,
    topic: str | None,
    backend: str | None = None,
) -> SufficientStats | None:
    """Fast path for the common layout: rows sorted by prompt, every prompt with
    the same ``L x G`` block of (model, generation) rows in the same order. Then
    the columns reshape to ``(n, L, G)`` without sorting or scattering, and the
    checks below (all O(rows), vectorised) prove there is no duplicate row.
    Returns ``None`` (use the general path) for any other layout."""
    R = len(df)
    if (
        R == 0
        or benchmark is not None
        or topic is not None
        or generation is None
        or any(c not in df.columns for c in (prompt, model, score, generation))
        or any(c is not None and c not in df.columns for c in (cost, latency))
    ):
        return None
    p = df[prompt].to_numpy()
    if p.dtype.kind not in "iu":
        return None
    k = _first_run(p)
    if R % k:
        return None
    n = R // k
    p2 = p.reshape(n, k)
    if not (p2 == p2[:, :1]).all():
        return None
    prompts = p2[:, 0].copy()  # a view would keep the whole chunk alive
    if len(pd.unique(prompts)) != n:  # a prompt in two separate runs
        return None
    m_codes, m_labels = _codes(df[model])
    m_block = m_codes[:k]
    L = len(pd.unique(m_block))
    if L == 0 or k % L or (m_block < 0).any():
        return None
    G = k // L
    mb = m_block.reshape(L, G)
    if not (mb == mb[:, :1]).all() or len(pd.unique(mb[:, 0])) != L:
        return None
    if not (m_codes.reshape(n, k) == m_block).all():
        return None
    g = df[generation].to_numpy()
    if g.dtype.kind not in "iu":
        return None
    gb = g[:G]
    if len(pd.unique(gb)) != G or not (g.reshape(n, L, G) == gb).all():
        return None
    x = df[score].to_numpy()
    if x.dtype.kind not in "biuf":
        return None

    def cube(col: str | None) -> np.ndarray | None:
        if col is None:
            return None
        v = df[col].to_numpy()
        return v.reshape(n, L, G) if v.dtype.kind in "iuf" else None

    c3, t3 = cube(cost), cube(latency)
    if (cost is not None and c3 is None) or (latency is not None and t3 is None):
        return None
    stats = sufficient_stats(
        x.reshape(n, L, G),
        None,
        c3,
        t3,
        prompts=prompts,
        models=np.asarray(m_labels[mb[:, 0]], dtype=object).astype(str),
        backend=backend,
    )
    _raise_flags(stats.flags)
    return stats


def _at_rest(stats: SufficientStats) -> SufficientStats:
    """Hold a chunk's integer counts in the smallest dtype that fits them (uint8
    for up to 255 draws): many chunks wait in memory before they are merged."""
    if stats.successes.dtype.kind in "iu":
        stats.successes = stats.successes.astype(count_dtype(int(stats.n_draws.max())))
    if stats.constant_draws is None:
        stats.n_draws = stats.n_draws.astype(count_dtype(int(stats.n_draws.max())))
    return stats


def results_from_chunks(
    chunks: list[tuple[SufficientStats, dict[str, np.ndarray | None]]],
) -> EvalResults:
    """Combine per-chunk statistics (from :func:`stats_from_frame`) exactly."""
    if not chunks:
        raise ValueError("the table has no rows")
    stats = SufficientStats.concat([c[0] for c in chunks])
    gens = [c[1].get("generations") for c in chunks]
    if all(g is not None for g in gens):
        # a (prompt, model, generation) row repeated in two chunks shows up as a
        # cell with more draws than there are generation labels
        n_labels = len(pd.unique(np.concatenate(gens)))  # type: ignore[arg-type]
        most = int(stats.n_draws.max())
        if most > n_labels:
            raise ValueError(
                f"duplicate rows for (prompt, model, generation): a cell has {most} "
                f"rows but the table has only {n_labels} distinct generations"
            )
    extra: dict[str, np.ndarray | None] = {}
    for key in ("benchmark", "topic"):
        if chunks[0][1][key] is None:
            extra[key] = None
            continue
        lookup: dict[object, object] = {}
        for part, labels_ in chunks:
            for prompt_id, label in zip(part.prompts, labels_[key], strict=True):
                if lookup.setdefault(prompt_id, label) != label:
                    raise ValueError(
                        f"{key} of prompt {prompt_id!r} differs between rows"
                    )
        extra[key] = np.array([lookup[p] for p in stats.prompts], dtype=object)
    return EvalResults.from_stats(stats, **extra)


def _numeric_column(df: pd.DataFrame, col: str, what: str) -> np.ndarray:
    """``df[col]`` as float64; names the column when it is not all numbers."""
    values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=np.float64)
    if np.isnan(values).any():
        bad = np.isnan(values) & df[col].notna().to_numpy()
        kind = "non-numeric" if bad.any() else "missing"
        i = int(np.flatnonzero(bad if bad.any() else np.isnan(values))[0])
        raise ValueError(
            f"column {col!r} ({what}) has {int(np.isnan(values).sum())} {kind} "
            f"value(s), first in row {i + 1}"
        )
    return values


def from_count_frame(
    frame: Any,
    *,
    prompt: str = "prompt_id",
    model: str = "model",
    successes: str = "n_correct",
    n_draws: str = "n_samples",
    cost: str | None = None,
    latency: str | None = None,
    benchmark: str | None = None,
    topic: str | None = None,
) -> EvalResults:
    """Count table (one row per prompt and model: correct of drawn) ->
    :class:`EvalResults`; missing (prompt, model) pairs are cells not run."""
    df = _to_pandas(frame)
    for col, role in (
        (prompt, "prompt"),
        (model, "model"),
        (successes, "successes"),
        (n_draws, "n_draws"),
        (cost, "cost"),
        (latency, "latency"),
        (benchmark, "benchmark"),
        (topic, "topic"),
    ):
        _need(df, col, role)
    if len(df) == 0:
        raise ValueError("the table has no rows")
    p_codes, p_labels = _labels_codes(df, prompt, "prompt")
    m_codes, m_labels = _labels_codes(df, model, "model")
    key = pd.DataFrame({"p": p_codes, "m": m_codes})
    if key.duplicated().any():
        i = int(np.flatnonzero(key.duplicated().to_numpy())[0])
        raise ValueError(
            f"duplicate rows for (prompt, model) = ({df[prompt].iloc[i]!r}, "
            f"{df[model].iloc[i]!r})"
        )
    N, L = len(p_labels), len(m_labels)
    S = np.zeros((N, L))
    G = np.zeros((N, L))
    S[p_codes, m_codes] = _numeric_column(df, successes, "successes")
    G[p_codes, m_codes] = _numeric_column(df, n_draws, "n_draws")

    def cells(col: str | None) -> np.ndarray | None:
        if col is None:
            return None
        out = np.zeros((N, L))
        out[p_codes, m_codes] = _numeric_column(df, col, "cost/latency")
        return out

    return EvalResults.from_counts(
        S,
        G,
        cost=cells(cost),
        latency=cells(latency),
        models=np.asarray(m_labels, dtype=object).astype(str),
        prompts=np.asarray(p_labels, dtype=object),
        benchmark=None if benchmark is None else _per_prompt(df, benchmark, p_codes, N),
        topic=None if topic is None else _per_prompt(df, topic, p_codes, N),
    )


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
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pq.read_schema(path)
        strings = [
            f.name
            for f in schema
            if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
        ]
        # string columns as dictionaries -> pandas categoricals: cheap to factorize
        file = pq.ParquetFile(path, read_dictionary=strings)
        # whole row groups, gathered up to about chunk_rows and sliced to at most
        # chunk_rows (ParquetFile.iter_batches holds on to memory as it goes: about
        # 330 kB per 2M-row batch with pyarrow 26: gigabytes over billions of rows)
        meta = file.metadata
        group: list[int] = []
        rows = 0
        for i in range(meta.num_row_groups):
            group.append(i)
            rows += meta.row_group(i).num_rows
            if rows >= chunk_rows or i == meta.num_row_groups - 1:
                table = file.read_row_groups(group)
                for batch in table.to_batches(max_chunksize=chunk_rows):
                    yield batch.to_pandas()
                del table
                group, rows = [], 0
    elif fmt in _TEXT_FORMATS + _JSONL_FORMATS:
        yield from _read_text(path, fmt, id_columns, chunksize=chunk_rows)
    else:
        raise ValueError(f"{path}: chunked reading supports csv, parquet and jsonl")


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


def read(
    path: str | Path | Any,
    *,
    format: str | None = None,
    chunk_rows: int | None = None,
    **columns: Any,
) -> EvalResults:
    """Read a long table (or a count table) into :class:`EvalResults`.

    ``path`` is a CSV/TSV (separator sniffed), Parquet, JSONL or ``.xlsx`` file,
    or a table object: pandas or polars DataFrame, pyarrow Table (then this is
    :func:`from_frame` / :func:`from_count_frame`). ``columns`` are the keyword
    arguments of :func:`from_frame` (``prompt=``, ``model=``, ``score=``, ...).
    Columns given here are named ones: a named cost or latency column with gaps
    is an error (``capfront report``, which finds columns by name, drops an
    auto-detected one with a note instead). Prompt and model ids of text files
    are read as strings ('007' and '7' are two prompts). With
    ``successes=``/``n_draws=`` column names (or a table that has ``n_correct``
    and ``n_samples`` and no ``score``) the table is read as a count table. With
    ``chunk_rows`` the file is streamed through the sufficient-statistics kernel
    chunk by chunk (bounded memory; rows of one prompt may fall in different
    chunks); the per-draw scores are then not kept.
    """
    ids = (columns.get("prompt"), columns.get("model"))
    if _is_frame(path):
        if chunk_rows is not None:
            raise ValueError("chunk_rows applies to files; a table is read whole")
        return _from_any_frame(_to_pandas(path), columns)
    if chunk_rows is not None:
        try:
            prompt = columns.get("prompt", _FRAME_DEFAULTS["prompt"])
            chunks = [
                stats_from_frame(chunk, **columns)
                for chunk in _whole_prompts(
                    iter_table(path, chunk_rows, format=format, id_columns=ids),
                    prompt,
                )
            ]
            return results_from_chunks(chunks)
        except ValueError as err:
            raise _in_file(path, err) from None
    df = read_table(path, format=format, id_columns=ids)
    try:
        return _from_any_frame(df, columns)
    except ValueError as err:
        raise _in_file(path, err) from None


def _in_file(path: Any, err: ValueError) -> ValueError:
    msg = str(err)
    return ValueError(msg if msg.startswith(str(path)) else f"{path}: {msg}")


def _from_any_frame(df: pd.DataFrame, columns: dict[str, Any]) -> EvalResults:
    """A long table, or a count table when the columns say so."""
    if (
        "successes" in columns
        or "n_draws" in columns
        or (
            "score" not in columns
            and "score" not in df.columns
            and {"n_correct", "n_samples"} <= set(df.columns)
        )
    ):
        return from_count_frame(df, **columns)
    return from_frame(df, **columns)


_ADAPTER_NAMES = (
    "FORMATS",
    "LoadedData",
    "PriceTable",
    "detect_format",
    "load",
    "load_inspect",
    "load_llmrouterbench",
    "load_lm_eval",
    "load_routerbench",
    "read_prices",
    "token_cost",
)


def __getattr__(name: str) -> Any:
    """The input adapters of :mod:`capfront.adapters` (lm-eval, inspect-ai,
    RouterBench, LLMRouterBench, price tables) are reachable here too, e.g.
    ``capfront.io.load(path, format="lm-eval")``; imported on first use because
    they build on this module."""
    if name in _ADAPTER_NAMES:
        from . import adapters

        return getattr(adapters, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
