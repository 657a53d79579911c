"""Input adapters: evaluation logs in the formats people already have ->
:class:`~capfront.EvalResults`.

``load(path, format=None, ...)`` picks the adapter from ``format`` or from the path
(``path`` may also be several paths or a glob such as ``"logs/*.eval"``):

============== ==========================================================
format          input
============== ==========================================================
csv, tsv,       long table, one row per (prompt, model, generation)
parquet, jsonl,
xlsx
counts          count table, one row per (prompt, model): ``n_correct`` of
                ``n_samples``
wide            one row per prompt, one score column per model (RouteLLM's
                eval CSVs, or a folder of them); RouterBench's layout as
                CSV/Parquet
matrix          score matrix prompts x models: ``.npy``, ``.npz``, or a
                pickled dict with model names (RouterEval)
lm-eval         lm-evaluation-harness ``--log_samples`` ``samples_*.jsonl``
inspect         inspect-ai ``.eval`` / ``.json`` logs or an ``eval_set()``
                folder (needs ``inspect_ai``)
routerbench     RouterBench wide pandas pickle
llmrouterbench  LLMRouterBench per-(dataset, split, model) JSON ``records``
============== ==========================================================

``prices`` (a price table, see :mod:`capfront.adapters.prices`) turns token counts
into cost wherever the format records tokens. ``LoadedData.notes`` ends with the
results' own notes (e.g. incomplete coverage: which models ran which share of the
prompts, and the comparison rule of :mod:`capfront.baselines`).
"""

from __future__ import annotations

import glob
import json
from collections.abc import Sequence
from pathlib import Path

from ._common import LoadedData
from .inspect_logs import load_inspect
from .llmrouterbench import load_llmrouterbench
from .lm_eval import is_results_file, load_lm_eval
from .prices import PriceTable, read_prices, token_cost
from .routerbench import load_routerbench
from .tables import TABLE_FORMATS, load_table, load_tables, table_format
from .wide import MATRIX_SUFFIXES, load_matrix, load_wide_folder, wide_files

FORMATS = (
    "csv",
    "tsv",
    "parquet",
    "jsonl",
    "xlsx",
    "wide",
    "matrix",
    "lm-eval",
    "inspect",
    "routerbench",
    "llmrouterbench",
    "counts",
)

__all__ = [
    "FORMATS",
    "LoadedData",
    "PriceTable",
    "detect_format",
    "load",
    "read_prices",
    "token_cost",
]


def _peek_json(path: Path) -> object:
    try:
        with open(path, encoding="utf-8") as fh:
            head = fh.read(2_000_000)
        return json.loads(head)
    except (OSError, ValueError):
        return None


def _first_jsonl(path: Path) -> object:
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    return json.loads(line)
    except (OSError, ValueError):
        return None
    return None


def _looks_wide(path: Path) -> bool:
    """A table file whose columns hold no model column (one column per model)."""
    from .tables import ALIASES, read_frame

    try:
        head = read_frame(path)
    except ValueError:
        return False
    return not any(a in head.columns for a in ALIASES["model"])


def detect_format(path: str | Path) -> str:
    """The adapter for ``path``, from its suffix, name and first record."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if path.is_dir():
        if next(path.rglob("samples_*.jsonl"), None) is not None:
            return "lm-eval"
        if next(path.rglob("*.eval"), None) is not None:
            return "inspect"
        if (path / "eval-set.json").exists() or (path / "logs.json").exists():
            return "inspect"
        for f in sorted(path.rglob("*.json"))[:20]:
            head = _peek_json(f)
            if isinstance(head, dict) and isinstance(head.get("records"), list):
                return "llmrouterbench"
            if isinstance(head, dict) and "eval" in head and "samples" in head:
                return "inspect"
        if next(path.rglob("results_*.json"), None) is not None:
            return "lm-eval"  # which then says to re-run with --log_samples
        tables = wide_files(path)
        if tables:  # a folder of tables: one per benchmark (wide) or parts of one
            return "wide" if _looks_wide(tables[0]) else table_format(tables[0])
        raise ValueError(
            f"{path}: cannot tell the format of this folder; give --format"
        )
    suffix = table_format(path)
    if suffix in ("pkl", "pickle"):
        return "routerbench"  # a pickled dict of score arrays: the matrix reader
    if suffix in MATRIX_SUFFIXES:
        return "matrix"
    if suffix == "eval":
        return "inspect"
    if suffix == "json":
        if is_results_file(path):
            return "lm-eval"
        head = _peek_json(path)
        if isinstance(head, dict) and isinstance(head.get("records"), list):
            return "llmrouterbench"
        if isinstance(head, dict) and "eval" in head and "version" in head:
            return "inspect"
        return "jsonl" if head is None else "json"
    if suffix == "jsonl":
        first = _first_jsonl(path)
        if path.name.startswith("samples_") or (
            isinstance(first, dict)
            and "doc_id" in first
            and ("filtered_resps" in first or "resps" in first)
        ):
            return "lm-eval"
        return "jsonl"
    if suffix in TABLE_FORMATS:
        return suffix
    if suffix == "xls":
        return "xlsx"  # the reader says to save it as CSV or .xlsx
    raise ValueError(
        f"{path}: cannot tell the format from the suffix "
        f"{path.suffix!r}; give --format ({', '.join(FORMATS)})"
    )


def expand_paths(path: str | Path | Sequence[str | Path]) -> list[Path]:
    """One path, several paths, or glob patterns (``logs/*.eval``) -> the paths,
    each checked to exist; a pattern matching nothing is an error."""
    items = [path] if isinstance(path, (str, Path)) else list(path)
    if not items:
        raise ValueError("no input path given")
    out: list[Path] = []
    for item in items:
        text = str(item)
        if any(ch in text for ch in "*?[") and not Path(text).exists():
            hits = sorted(glob.glob(text, recursive=True))
            if not hits:
                raise FileNotFoundError(f"{text}: no file matches this pattern")
            out.extend(Path(h) for h in hits)
            continue
        p = Path(item)
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such file or folder")
        out.append(p)
    return list(dict.fromkeys(out))


def load(
    path: str | Path | Sequence[str | Path],
    format: str | None = None,
    *,
    prompt: str | None = None,
    model: str | None = None,
    score: str | None = None,
    generation: str | None = None,
    cost: str | None = None,
    latency: str | None = None,
    benchmark: str | None = None,
    prices: PriceTable | str | Path | None = None,
    all_runs: bool = False,
) -> LoadedData:
    """Read evaluation results in any supported format.

    Parameters
    ----------
    path : file or folder, several of them, or a glob pattern (``"logs/*.eval"``);
        several paths must be of one format and are read as one data set
    format : one of :data:`FORMATS` (``None``: detected)
    prompt, model, score, generation, cost, latency, benchmark : column names for
        tables (``None``: found by common aliases). For ``lm-eval``, ``score``
        names the metric and ``model`` overrides the model name; for ``inspect``,
        ``score`` names the scorer (``scorer.key`` for dict values); for
        ``counts``, ``score`` names the successes column.
    prices : price table or its path; turns token counts into cost.
    all_runs : LLMRouterBench only: every non-demo run of a (dataset, split,
        model) is a generation (default: the latest run, as LLMRouterBench reads).

    Returns
    -------
    LoadedData
        ``.results`` plus what was detected (``.format``, ``.columns``,
        ``.notes``, ``.cost_source``).
    """
    paths = expand_paths(path)
    if format is not None and format not in FORMATS + ("json",):
        raise ValueError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")
    if format is None:
        found = {p: detect_format(p) for p in paths}
        kinds = set(found.values())
        if len(kinds) > 1:
            raise ValueError(
                "the paths hold different formats ("
                + ", ".join(f"{p.name}: {k}" for p, k in list(found.items())[:4])
                + "); give paths of one format, or --format"
            )
        fmt = kinds.pop()
    else:
        fmt = format
    if isinstance(prices, (str, Path)):
        prices = read_prices(prices)
    columns = {
        "prompt": prompt,
        "model": model,
        "score": score,
        "generation": generation,
        "cost": cost,
        "latency": latency,
        "benchmark": benchmark,
    }
    loaded = _load(paths, fmt, columns, prices, all_runs)
    loaded.notes.extend(n for n in loaded.results.notes if n not in loaded.notes)
    return loaded


def _load(
    paths: list[Path],
    fmt: str,
    columns: dict[str, str | None],
    prices: PriceTable | None,
    all_runs: bool,
) -> LoadedData:
    prompt, model, score = columns["prompt"], columns["model"], columns["score"]
    generation, benchmark = columns["generation"], columns["benchmark"]
    many = len(paths) > 1
    path: Path | list[Path] = paths if many else paths[0]
    if (
        fmt != "lm-eval"
        and fmt not in TABLE_FORMATS + ("counts",)
        and (generation is not None)
    ):
        raise ValueError(
            f"--generation is for tables; the {fmt} format defines its own generations"
        )
    if fmt == "lm-eval":
        if prices is not None:
            raise ValueError(
                f"{paths[0]}: lm-eval samples record no token counts; --prices "
                "cannot apply"
            )
        return load_lm_eval(path, score=score, model=model)
    if fmt == "inspect":
        return load_inspect(path, score=score, prices=prices)
    if fmt == "llmrouterbench":
        return load_llmrouterbench(path, prices=prices, all_runs=all_runs)
    if fmt in ("routerbench", "matrix"):
        if many:
            raise ValueError(
                f"{paths[0]}: the {fmt} format reads one file; give one path"
            )
        if prices is not None:
            raise ValueError(
                f"{paths[0]}: a {fmt} file has no token counts (RouterBench has "
                "per-prompt cost, <model>|total_cost); --prices cannot apply"
            )
        if fmt == "matrix" or table_format(paths[0]) in MATRIX_SUFFIXES:
            return load_matrix(paths[0])
        return load_routerbench(paths[0], prompt=prompt, benchmark=benchmark)
    if fmt == "wide" and (many or paths[0].is_dir()):
        return load_wide_folder(path, prompt=prompt, benchmark=benchmark)
    # a folder of long (or count) tables: its table files, read as one table
    paths = [f for p in paths for f in (wide_files(p) if p.is_dir() else [p])]
    if not paths:
        raise ValueError(f"{path}: no table files in this folder")
    many = len(paths) > 1
    kwargs = {**columns, "prices": prices, "counts": True if fmt == "counts" else None}
    table_fmt = None if fmt == "counts" else fmt
    if many:
        return load_tables(paths, table_fmt, **kwargs)
    return load_table(paths[0], table_fmt, **kwargs)
