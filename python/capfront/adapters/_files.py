"""Table files for the adapters: column aliases per role, the table formats and
reading one file (prompt and model ids as text)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..table_files import MODEL_ALIASES, PROMPT_ALIASES, read_table
from ._common import strip_compression

#: candidate column names per role, first match wins
ALIASES: dict[str, tuple[str, ...]] = {
    "prompt": PROMPT_ALIASES,
    "model": MODEL_ALIASES,
    "score": ("score", "correct", "is_correct", "reward", "passed", "resolved"),
    "generation": ("generation", "trial", "epoch", "repeat", "draw", "seed"),
    "cost": ("cost", "cost_usd", "total_cost", "usd"),
    "latency": ("latency", "latency_s", "latency_seconds", "duration_s", "total_time"),
    "benchmark": ("benchmark", "dataset", "eval_name", "task", "category", "subset"),
    "topic": ("topic",),
    "successes": ("n_correct", "successes", "num_correct", "correct_count"),
    "n_draws": ("n_samples", "n_draws", "num_samples", "n_generations", "samples"),
    "input_tokens": ("input_tokens", "prompt_tokens", "tokens_in"),
    "output_tokens": ("output_tokens", "completion_tokens", "tokens_out"),
}
TABLE_FORMATS = ("csv", "tsv", "parquet", "jsonl", "json", "xlsx")


def _pick(
    frame: pd.DataFrame, role: str, given: str | None, source: str, required: bool
) -> str | None:
    if given is not None:
        if given not in frame.columns:
            raise ValueError(
                f"{source}: no column {given!r} for the {role} (columns: "
                f"{list(map(str, frame.columns))})"
            )
        return given
    for name in ALIASES[role]:
        if name in frame.columns:
            return name
    if required:
        raise ValueError(
            f"{source}: no {role} column found (looked for {list(ALIASES[role])}; "
            f"columns: {list(map(str, frame.columns))}); name it with --{role}"
        )
    return None


def table_format(path: Path) -> str:
    suffix = strip_compression(path).lstrip(".")
    return {"pq": "parquet", "ndjson": "jsonl", "txt": "csv", "xlsm": "xlsx"}.get(
        suffix, suffix
    )


def read_frame(
    path: Path, fmt: str | None = None, id_columns: tuple[str | None, ...] = ()
) -> pd.DataFrame:
    """A table file as a DataFrame; prompt and model id columns (by alias, or
    named in ``id_columns``) of text files are read as strings."""
    fmt = fmt or table_format(path)
    if fmt == "xls":
        fmt = "xlsx"  # read_table explains that .xls must be saved as CSV
    if fmt not in TABLE_FORMATS:
        raise ValueError(
            f"{path}: cannot tell the table format from the suffix "
            f"{path.suffix!r}; give --format"
        )
    ids = (*ALIASES["prompt"], *ALIASES["model"], *id_columns)
    try:
        return read_table(path, format=fmt, id_columns=ids)
    except (ValueError, OSError) as err:
        msg = str(err)
        if not msg.startswith(str(path)):
            msg = f"{path}: {msg}"
        raise ValueError(msg) from None
