"""LLMRouterBench (OpenRouterBench) result files.

LLMRouterBench stores one JSON file per (dataset, split, model) run at
``results/bench/<dataset>/<split>/<model>/<dataset>-<split>-<model>-<YYYYMMDD_HHMMSS>.json``
(older runs: ``result.json``): a summary (``performance``, ``time_taken``,
``prompt_tokens``, ``completion_tokens``, ``cost``, ``counts``, ``model_name``,
``dataset_name``, ``split``, ``demo``) and ``records``, one per prompt:
``index``, ``origin_query``, ``prompt``, ``prediction``, ``ground_truth``,
``score``, ``prompt_tokens``, ``completion_tokens``, ``cost`` (US dollars),
``raw_output``.

Its own loader's semantics are kept: ``"demo": true`` files (partial test runs)
are skipped, and of several runs of one (dataset, split, model) only the latest
(by the file name's timestamp, else the file time) is read; ``score: null``
counts as 0. With ``all_runs=True`` every non-demo run is a generation instead
(in timestamp order).

Mapping: prompt = ``<dataset>/<split>/<index>``, benchmark = dataset, model =
``model_name`` (else the folder name; dataset and split likewise). Cost = the
records' ``cost``, or tokens x price table when given.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._common import (
    BENCH,
    COST,
    GEN,
    IN_TOK,
    MODEL,
    OUT_TOK,
    PROMPT,
    SCORE,
    LoadedData,
    apply_prices,
    finish,
    score_value,
    shown_source,
)
from .prices import PriceTable


def result_files(path: Path | list[Path]) -> list[Path]:
    if isinstance(path, list):
        return [f for p in path for f in result_files(p)]
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*.json") if p.is_file())
    if not files:
        raise ValueError(f"{path}: no LLMRouterBench .json result files found")
    return files


def _read(f: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(f.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{f}: not valid JSON ({err})") from None
    if isinstance(data, dict) and isinstance(data.get("records"), list):
        return data
    return None


_STAMP = re.compile(r"(\d{8})_(\d{6})\.json$")


def run_time(f: Path) -> int:
    """A run's time as YYYYMMDDHHMMSS, from the file name (LLMRouterBench's
    rule), else from the file's modification time."""
    m = _STAMP.search(f.name)
    if m:
        return int(m.group(1) + m.group(2))
    import time

    return int(time.strftime("%Y%m%d%H%M%S", time.localtime(f.stat().st_mtime)))


def _key(f: Path, data: dict[str, Any]) -> tuple[str, str, str]:
    """(dataset, split, model) of a result file: its own fields, else the
    folders ``<dataset>/<split>/<model>/``."""
    return (
        str(data.get("dataset_name") or f.parent.parent.parent.name),
        str(data.get("split") or f.parent.parent.name),
        str(data.get("model_name") or f.parent.name),
    )


def load_llmrouterbench(
    path: Path | list[Path],
    *,
    prices: PriceTable | None = None,
    all_runs: bool = False,
) -> LoadedData:
    """Read LLMRouterBench result files (a file, several, or a folder searched
    recursively); see the module docstring for which runs are kept."""
    source = shown_source(path)
    single = not isinstance(path, list) and path.is_file()
    runs: dict[tuple[str, str, str], list[tuple[int, Path, dict[str, Any]]]] = {}
    n_demo = 0
    for f in result_files(path):
        data = _read(f)
        if data is None:
            if single:
                raise ValueError(
                    f"{f}: no 'records' list (not an LLMRouterBench result file)"
                )
            continue
        if data.get("demo", False):
            n_demo += 1
            continue
        runs.setdefault(_key(f, data), []).append((run_time(f), f, data))
    if not runs:
        why = f" (only {n_demo} demo run(s), which are skipped)" if n_demo else ""
        raise ValueError(f"{source}: no LLMRouterBench records found{why}")
    rows: list[dict[str, Any]] = []
    n_null = 0
    n_older = 0
    for (dataset, split, model), found in runs.items():
        found.sort(key=lambda r: (r[0], str(r[1])))
        if not all_runs:
            n_older += len(found) - 1
            found = found[-1:]
        for gen, (_, f, data) in enumerate(found):
            for i, rec in enumerate(data["records"]):
                where = f"{f}: record {i}"
                if not isinstance(rec, dict) or "score" not in rec:
                    raise ValueError(f"{where}: needs a 'score'")
                raw = rec["score"]
                if raw is None:  # LLMRouterBench's loader counts it as 0
                    n_null += 1
                    raw = 0.0
                index = rec.get("index", i)
                rows.append(
                    {
                        PROMPT: f"{dataset}/{split}/{index}",
                        MODEL: model,
                        BENCH: dataset,
                        GEN: gen,
                        SCORE: score_value(raw, where),
                        COST: rec.get("cost", np.nan),
                        IN_TOK: rec.get("prompt_tokens", np.nan),
                        OUT_TOK: rec.get("completion_tokens", np.nan),
                    }
                )
    if not rows:
        raise ValueError(f"{source}: no LLMRouterBench records found")
    frame = pd.DataFrame(rows)
    n_files = sum(len(v) for v in runs.values())
    notes = [
        f"{n_files} LLMRouterBench result file(s) of {len(runs)} (dataset, split, "
        "model) triple(s)"
    ]
    if n_demo:
        notes.append(
            f'{n_demo} demo run(s) ("demo": true) skipped, as LLMRouterBench does'
        )
    if n_older:
        notes.append(
            f"{n_older} older run(s) of the same (dataset, split, model) left out: "
            "the latest is read, as LLMRouterBench does (all_runs=True makes every "
            "run a generation)"
        )
    if all_runs and frame[GEN].max() > 0:
        notes.append(
            "several runs of one (dataset, split, model): each run is a generation"
        )
    if n_null:
        notes.append(
            f"{n_null} record(s) with score null counted as 0, as LLMRouterBench does"
        )
    cost_source = None
    if prices is not None:
        frame = apply_prices(frame.drop(columns=[COST]), prices, source)
        cost_source = "records' prompt/completion tokens x price table"
    else:
        cost = pd.to_numeric(frame[COST], errors="coerce")
        if cost.notna().all() and (cost > 0).any():
            frame[COST] = cost
            cost_source = "records' 'cost' field (US dollars)"
        else:
            frame = frame.drop(columns=[COST])
            notes.append(
                "records have no usable cost (missing or all zero): no cost "
                "axis; give --prices to price the token counts"
            )
    frame = frame.drop(columns=[IN_TOK, OUT_TOK])
    return finish(
        frame,
        fmt="llmrouterbench",
        source=source,
        notes=notes,
        cost_source=cost_source,
        columns={"prompt": "<dataset>/<split>/index", "score": "score"},
    )
