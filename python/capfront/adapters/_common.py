"""Shared pieces of the input adapters: the loaded-data record and the step that
turns a canonical long (or count) table into :class:`EvalResults`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..results import EvalResults
from .prices import PriceTable, token_cost

#: canonical column names used between the adapters and ``finish``
PROMPT, MODEL, SCORE, GEN = "prompt_id", "model", "score", "generation"
COST, LATENCY, BENCH = "cost", "latency", "benchmark"
IN_TOK, OUT_TOK = "input_tokens", "output_tokens"
SUCC, NDRAWS = "n_correct", "n_samples"


@dataclass
class LoadedData:
    """An :class:`EvalResults` with a description of where it came from.

    Attributes
    ----------
    results : the evaluation results
    format : the adapter used (``csv``, ``lm-eval``, ``routerbench``, ...)
    source : the path read
    columns : which input column (or field) fed each role
    notes : what was detected or assumed, one sentence each
    cost_source : where cost came from (``None`` without cost)
    """

    results: EvalResults
    format: str
    source: str
    columns: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    cost_source: str | None = None


def apply_prices(
    frame: pd.DataFrame,
    prices: PriceTable | None,
    source: str,
    model_col: str = MODEL,
    in_col: str = IN_TOK,
    out_col: str = OUT_TOK,
) -> pd.DataFrame:
    """Add a ``cost`` column priced from the token columns."""
    if prices is None:
        return frame
    for col in (in_col, out_col):
        if col not in frame.columns:
            raise ValueError(
                f"{source}: --prices needs token counts, but there is no {col!r} "
                f"column (columns: {list(map(str, frame.columns))})"
            )
    frame = frame.copy()
    frame[COST] = token_cost(
        frame[model_col], frame[in_col], frame[out_col], prices, source=source
    )
    return frame


def finish(
    frame: pd.DataFrame,
    *,
    fmt: str,
    source: str,
    notes: list[str],
    cost_source: str | None,
    columns: dict[str, str] | None = None,
    counts: bool = False,
) -> LoadedData:
    """Canonical frame (columns named as above) -> :class:`LoadedData`."""
    if len(frame) == 0:
        raise ValueError(f"{source}: no evaluation records found")
    has = set(frame.columns)
    try:
        if counts:
            results = EvalResults.from_count_frame(
                frame,
                prompt=PROMPT,
                model=MODEL,
                successes=SUCC,
                n_draws=NDRAWS,
                cost=COST if COST in has else None,
                latency=LATENCY if LATENCY in has else None,
                benchmark=BENCH if BENCH in has else None,
            )
        else:
            results = EvalResults.from_frame(
                frame,
                prompt=PROMPT,
                model=MODEL,
                score=SCORE,
                generation=GEN if GEN in has else None,
                cost=COST if COST in has else None,
                latency=LATENCY if LATENCY in has else None,
                benchmark=BENCH if BENCH in has else None,
            )
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None
    return LoadedData(
        results,
        fmt,
        source,
        dict(columns or {}),
        notes,
        cost_source if COST in has else None,
    )


def score_value(value: object, where: str) -> float:
    """A score as a float in [0, 1] (bools are 0/1)."""
    if isinstance(value, bool):
        return float(value)
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{where}: score {value!r} is not a number") from None
    if not np.isfinite(out) or out < 0.0 or out > 1.0:
        raise ValueError(f"{where}: score {value!r} is outside [0, 1]")
    return out


def shown_source(path: Path | list[Path]) -> str:
    """How a source of one or several paths is named in notes and errors."""
    if isinstance(path, list):
        if len(path) == 1:
            return str(path[0])
        return f"{path[0]} (+{len(path) - 1} more)"
    return str(path)


def strip_compression(path: Path) -> str:
    """Suffix without a trailing compression suffix: ``a.csv.gz`` -> ``.csv``."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2", ".xz", ".zst", ".zip"):
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""
