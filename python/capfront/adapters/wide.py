"""Wide tables and score matrices: one column (or array column) per model.

- **Wide tables** (CSV, TSV, Parquet, JSONL, ``.xlsx``): one row per prompt, one
  score column per model, as RouteLLM writes its eval responses
  (``routellm/evals/mmlu/responses/mmlu_<domain>.csv``: ``prompt`` (the text) and
  one boolean column per model; ``gsm8k_responses.csv`` adds ``<model>_response``
  text columns). A folder of such files (one per benchmark, as RouteLLM's
  ``responses/`` folder) is one data set with the file name as the benchmark.
  RouterBench's layout (``<model>|total_cost`` columns) saved as CSV or Parquet
  goes to :mod:`capfront.adapters.routerbench`.
- **Score matrices** (prompts x models): NumPy ``.npy`` (model names are then
  ``model_0``...), ``.npz`` with a 2-D score array and optional ``models`` /
  ``prompts`` arrays, or a pickled dict with model names and score arrays as
  RouterEval ships its router data sets (``{"model": [names], "data":
  {"train_score": (n, L), "val_score": ..., "test_score": ...}}``; each split is a
  benchmark) or its leaderboard scores (``{"data": {<subset>: {"correctness":
  (n, L)}}}``). A NaN score is a cell not run.

Model columns of a wide table: every column of booleans or of numbers in [0, 1]
that is not a prompt id, benchmark, text (``*_response``) or ``<model>|...``
column. Scores must lie in [0, 1]; one generation per cell.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ._common import BENCH, MODEL, PROMPT, SCORE, LoadedData, finish, shown_source
from ._files import ALIASES, TABLE_FORMATS, read_frame, table_format
from .matrix import MATRIX_SUFFIXES, load_matrix  # noqa: F401  (re-exported)
from .routerbench import COST_SUFFIX, routerbench_frame

#: columns of wide tables that are never models
NOT_MODELS = {
    "oracle_model_to_route_to",
    "prompt",
    "question",
    "answer",
    "gold",
    "target",
    "label",
    "ground_truth",
    "reference",
}
TEXT_SUFFIXES = ("_response", "_responses", "_output", "_answer", "_prediction")


def _bool_like(col: pd.Series) -> pd.Series | None:
    """``col`` as floats when it holds booleans (also as 'True'/'False' text,
    which CSV columns with gaps become) or numbers in [0, 1]; else ``None``."""
    if col.dtype == bool:
        return col.astype(np.float64)
    if pd.api.types.is_numeric_dtype(col.dtype):
        v = col.astype(np.float64)
        seen = v[v.notna()]
        if len(seen) and ((seen >= 0) & (seen <= 1)).all():
            return v
        return None
    if col.dtype == object:
        seen = col[col.notna()]
        if len(seen) == 0:
            return None
        text = seen.astype(str).str.strip().str.lower()
        if text.isin(["true", "false"]).all():
            out = pd.Series(np.nan, index=col.index)
            out[seen.index] = (text == "true").astype(np.float64)
            return out
    return None


def model_columns(frame: pd.DataFrame, skip: set[str]) -> list[str]:
    """Score columns of a wide table (see the module docstring)."""
    out = []
    for c in map(str, frame.columns):
        low = c.lower()
        if (
            c in skip
            or low in NOT_MODELS
            or "|" in c
            or low.endswith(TEXT_SUFFIXES)
            or _bool_like(frame[c]) is None
        ):
            continue
        out.append(c)
    return out


def _id_column(frame: pd.DataFrame, given: str | None, source: str) -> str | None:
    """The prompt id column: ``given``, else the first id alias other than a text
    ``prompt`` column; ``None`` means the row number."""
    if given is not None:
        if given not in frame.columns:
            raise ValueError(
                f"{source}: no column {given!r} for the prompt (columns: "
                f"{list(map(str, frame.columns))})"
            )
        return given
    for name in ALIASES["prompt"]:
        if name in frame.columns and name != "prompt":
            return name
    return None


def wide_to_long(
    frame: pd.DataFrame,
    source: str,
    *,
    prompt: str | None = None,
    benchmark: str | None = None,
    prefix: str = "",
    default_benchmark: str | None = None,
) -> tuple[pd.DataFrame, list[str], str]:
    """Wide table -> canonical long frame (``prompt_id``, ``model``, ``score``
    [, ``benchmark``]), its model columns and what fed the prompt id."""
    pid = _id_column(frame, prompt, source)
    bench = benchmark
    if bench is None:
        bench = next((b for b in ALIASES["benchmark"] if b in frame.columns), None)
    if bench is not None and bench not in frame.columns:
        raise ValueError(f"{source}: no benchmark column {bench!r}")
    skip = {c for c in (pid, bench) if c is not None}
    skip |= {c for role in ("prompt", "benchmark", "topic") for c in ALIASES[role]}
    models = model_columns(frame, skip)
    if not models:
        raise ValueError(
            f"{source}: no model column found: a long table needs a model column "
            "(--model), a wide table one column of 0/1 or true/false scores per "
            f"model (columns: {list(map(str, frame.columns))})"
        )
    if pid is None:
        ids = np.array([f"{prefix}{i}" for i in range(len(frame))], dtype=object)
        shown = "row number" + (
            " (column 'prompt' holds the text)" if "prompt" in frame.columns else ""
        )
    else:
        ids = np.array([f"{prefix}{v}" for v in frame[pid].astype(str)], dtype=object)
        shown = pid
    parts = []
    rows = np.arange(len(frame))
    for m in models:
        score = _bool_like(frame[m])
        assert score is not None
        part = pd.DataFrame(
            {"_row": rows, PROMPT: ids, MODEL: m, SCORE: score.to_numpy()}
        )
        if bench is not None:
            part[BENCH] = frame[bench].astype(str).to_numpy()
        elif default_benchmark is not None:
            part[BENCH] = default_benchmark
        parts.append(part[part[SCORE].notna().to_numpy()])
    # prompts in table order (a gap in the first model must not reorder them)
    long = pd.concat(parts, ignore_index=True).sort_values("_row", kind="stable")
    return long.drop(columns="_row").reset_index(drop=True), models, shown


def load_wide_frame(
    frame: pd.DataFrame,
    source: str,
    fmt: str,
    *,
    prompt: str | None = None,
    benchmark: str | None = None,
) -> LoadedData:
    """A wide table already read (RouterBench's layout goes to its adapter)."""
    if any(str(c).endswith(COST_SUFFIX) for c in frame.columns):
        return routerbench_frame(frame, source, fmt, prompt=prompt, benchmark=benchmark)
    long, models, shown = wide_to_long(
        frame, source, prompt=prompt, benchmark=benchmark
    )
    notes = [
        f"wide table ({fmt}): {len(models)} model column(s) ({', '.join(models[:6])}"
        + (" ..." if len(models) > 6 else "")
        + "), one generation per cell"
    ]
    if shown.startswith("row number"):
        notes.append(f"prompt id = {shown}")
    return finish(
        long,
        fmt="wide",
        source=source,
        notes=notes,
        cost_source=None,
        columns={"prompt": shown, "score": "<model> columns"},
    )


def wide_files(path: Path) -> list[Path]:
    return sorted(
        p
        for p in path.iterdir()
        if p.is_file() and table_format(p) in TABLE_FORMATS and p.name[0] != "."
    )


def load_wide_folder(
    path: Path | list[Path],
    *,
    prompt: str | None = None,
    benchmark: str | None = None,
) -> LoadedData:
    """A folder (or list) of wide tables, one per benchmark (file stem =
    benchmark, prompt id = ``<stem>/<id or row>``)."""
    files = path if isinstance(path, list) else wide_files(path)
    if not files:
        raise ValueError(f"{path}: no CSV/Parquet/JSONL tables in this folder")
    parts = []
    all_models: dict[str, None] = {}
    for f in files:
        stem = f.name.split(".")[0]
        frame = read_frame(f)
        long, models, shown = wide_to_long(
            frame,
            str(f),
            prompt=prompt,
            benchmark=benchmark,
            prefix=f"{stem}/",
            default_benchmark=stem,
        )
        all_models.update(dict.fromkeys(models))
        parts.append(long)
    notes = [
        f"{len(files)} wide table(s), one per benchmark (the file name); "
        f"{len(all_models)} model column(s); one generation per cell",
        f"prompt id = <file>/{shown}",
    ]
    return finish(
        pd.concat(parts, ignore_index=True),
        fmt="wide",
        source=shown_source(path),
        notes=notes,
        cost_source=None,
        columns={"prompt": f"<file>/{shown}", "score": "<model> columns"},
    )
