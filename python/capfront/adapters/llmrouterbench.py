"""LLMRouterBench (OpenRouterBench) result files.

LLMRouterBench stores one JSON file per (dataset, split, model) run at
``results/bench/<dataset>/<split>/<model>/<timestamp>.json``: a summary
(``performance``, ``time_taken``, ``prompt_tokens``, ``completion_tokens``,
``cost``, ``counts``) and ``records``, one per prompt: ``index``, ``origin_query``,
``prompt``, ``prediction``, ``ground_truth``, ``score``, ``prompt_tokens``,
``completion_tokens``, ``cost`` (US dollars), ``raw_output``.

Mapping: prompt = ``<dataset>/<split>/<index>``, benchmark = dataset, model = the
folder name; several timestamps of one (dataset, split, model) are generations in
timestamp order. Cost = the records' ``cost``, or tokens x price table when given.
A single file outside that layout takes dataset, split and model from its three
parent folders.
"""

from __future__ import annotations

import json
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
)
from .prices import PriceTable


def result_files(path: Path) -> list[Path]:
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


def load_llmrouterbench(path: Path, *, prices: PriceTable | None = None) -> LoadedData:
    rows: list[dict[str, Any]] = []
    files = result_files(path)
    used = 0
    for f in files:
        data = _read(f)
        if data is None:
            if path.is_file():
                raise ValueError(
                    f"{f}: no 'records' list (not an LLMRouterBench result file)"
                )
            continue
        used += 1
        model, split, dataset = (
            f.parent.name,
            f.parent.parent.name,
            f.parent.parent.parent.name,
        )
        for i, rec in enumerate(data["records"]):
            where = f"{f}: record {i}"
            if not isinstance(rec, dict) or "score" not in rec:
                raise ValueError(f"{where}: needs a 'score'")
            index = rec.get("index", i)
            rows.append(
                {
                    PROMPT: f"{dataset}/{split}/{index}",
                    MODEL: model,
                    BENCH: dataset,
                    "_run": f.stem,
                    SCORE: score_value(rec["score"], where),
                    COST: rec.get("cost", np.nan),
                    IN_TOK: rec.get("prompt_tokens", np.nan),
                    OUT_TOK: rec.get("completion_tokens", np.nan),
                }
            )
    if not rows:
        raise ValueError(f"{path}: no LLMRouterBench records found")
    frame = pd.DataFrame(rows)
    frame = frame.sort_values([MODEL, PROMPT, "_run"], kind="stable")
    frame[GEN] = frame.groupby([PROMPT, MODEL], sort=False).cumcount()
    notes = [f"{used} LLMRouterBench result file(s)"]
    if frame[GEN].max() > 0:
        notes.append(
            "several timestamped runs of one (dataset, split, model): each "
            "run is a generation"
        )
    cost_source = None
    if prices is not None:
        frame = apply_prices(frame.drop(columns=[COST]), prices, str(path))
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
    frame = frame.drop(columns=[IN_TOK, OUT_TOK, "_run"])
    return finish(
        frame,
        fmt="llmrouterbench",
        source=str(path),
        notes=notes,
        cost_source=cost_source,
        columns={"prompt": "<dataset>/<split>/index", "score": "score"},
    )
