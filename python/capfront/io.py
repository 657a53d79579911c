"""Reading long tables (one row per prompt, model, generation) into ``EvalResults``.

``from_frame`` takes pandas, polars or pyarrow tables; ``read`` takes CSV, Parquet
and JSONL files.

Layers (each imports only those before it): :mod:`capfront.frames` (table
objects -> arrays and sufficient statistics) and :mod:`capfront.table_files`
(files -> DataFrames) below the data model :mod:`capfront.results`; then this
module (tables and files -> ``EvalResults``); then the format adapters of
:mod:`capfront.adapters`, which build on the layers below this module and which
this module only names (``capfront.io.load``, resolved on first use).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .frames import (  # noqa: F401  (re-exported: capfront.io.stats_from_frame, ...)
    _FRAME_DEFAULTS,
    _dense_from_frame,
    _first_run,
    _frame_columns,
    _is_frame,
    _ordered_block_stats,
    _to_pandas,
    arrow_block_stats,
    stats_from_frame,
)
from .results import EvalResults
from .suffstats import SufficientStats
from .table_files import (  # noqa: F401  (re-exported for capfront.io.read_table, ...)
    ID_COLUMNS,
    MODEL_ALIASES,
    PROMPT_ALIASES,
    _check_file,
    _whole_prompt_batches,
    _whole_prompts,
    iter_parquet,
    iter_table,
    read_table,
    sniff_delimiter,
)

#: long table -> EvalResults (the rules and errors: :meth:`EvalResults.from_frame`)
from_frame = EvalResults.from_frame
#: count table -> EvalResults (:meth:`EvalResults.from_count_frame`)
from_count_frame = EvalResults.from_count_frame


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
            if (format or Path(path).suffix.lstrip(".")).lower() in ("parquet", "pq"):
                return results_from_chunks(_parquet_chunks(path, chunk_rows, columns))
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


#: the column roles of a long table
_ROLES = tuple(_FRAME_DEFAULTS)


def _parquet_chunks(
    path: str | Path, chunk_rows: int, columns: dict[str, Any]
) -> list[tuple[SufficientStats, dict[str, np.ndarray | None]]]:
    """Per-chunk statistics of a streamed Parquet file, straight from the Arrow
    record batches: only the named columns are read (all of them when one is
    missing, so the error lists the table's columns), pieces are cut at prompt
    boundaries without copies, and a piece in the ordered-block layout is reduced
    from the Arrow buffers (no pandas conversion); any other piece goes through
    pandas and :func:`stats_from_frame`. The next row groups are decoded by worker
    threads meanwhile (:func:`iter_parquet`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = _frame_columns(columns)
    _check_file(Path(path))
    names = set(pq.read_schema(path).names)
    named = {r: cols[r] for r in _ROLES if cols[r] is not None}
    # the default generation column is optional; a named one is not
    complete = all(
        c in names or (r == "generation" and "generation" not in columns)
        for r, c in named.items()
    )
    wanted = [c for c in dict.fromkeys(named.values()) if c in names]
    batches = iter_parquet(path, chunk_rows, columns=wanted if complete else None)
    out = []
    for piece in _whole_prompt_batches(batches, cols["prompt"]):
        chunk = arrow_block_stats(piece, **columns)
        if chunk is None:
            frame = pa.Table.from_batches(piece).to_pandas()
            chunk = stats_from_frame(frame, **columns)
        out.append(chunk)
    return out


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
