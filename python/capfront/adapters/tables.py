"""Long tables (CSV, TSV, Parquet, JSONL; one row per prompt, model, generation)
and count tables (one row per prompt and model: ``n_correct`` of ``n_samples``).

Column names are found by common aliases unless given; what was used is recorded in
``LoadedData.columns`` and the report's ``source.columns``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..results import EvalResults
from ._common import (
    COST,
    LoadedData,
    apply_prices,
    shown_source,
)
from ._files import (  # noqa: F401  (ALIASES, TABLE_FORMATS re-exported)
    ALIASES,
    TABLE_FORMATS,
    _pick,
    read_frame,
    table_format,
)
from .prices import PriceTable
from .wide import load_wide_folder, load_wide_frame


def _attach_truth(
    results: EvalResults,
    frame: pd.DataFrame,
    prompt: str,
    model: str,
    column: str,
    source: str,
) -> None:
    """Simulated data written by ``capfront simulate`` carries each cell's true
    success probability; keep it so the report can show the true oracle."""
    p_pos = {str(p): i for i, p in enumerate(results.prompts)}
    m_pos = {str(m): j for j, m in enumerate(results.models)}
    truth = np.full((results.n_prompts, results.n_models), np.nan)
    rows = frame[[prompt, model, column]].drop_duplicates([prompt, model])
    ii = rows[prompt].astype(str).map(p_pos).to_numpy()
    jj = rows[model].astype(str).map(m_pos).to_numpy()
    truth[ii.astype(int), jj.astype(int)] = pd.to_numeric(
        rows[column], errors="coerce"
    ).to_numpy(dtype=np.float64)
    if np.isnan(truth[results.observed]).any():
        raise ValueError(f"{source}: column {column!r} has missing values")
    results.truth_p = truth


def _load_wide(
    frame: pd.DataFrame,
    source: str,
    fmt: str | None,
    prompt: str | None,
    benchmark: str | None,
    prices: PriceTable | None,
    given: dict[str, str | None],
) -> LoadedData:
    """No model column: a wide table (one score column per model)."""
    extra = [r for r in ("model", "score", "generation", "cost", "latency") if given[r]]
    if extra:
        raise ValueError(
            f"{source}: --{extra[0]} names a column of a long table, but this "
            "table has no model column: it is read as a wide table (one score "
            "column per model); drop --" + extra[0] + " or give --model"
        )
    if prices is not None:
        raise ValueError(
            f"{source}: a wide table records no token counts; --prices cannot apply"
        )
    return load_wide_frame(
        frame, source, fmt or "wide", prompt=prompt, benchmark=benchmark
    )


def load_table(path: Path, fmt: str | None = None, **options: Any) -> LoadedData:
    """Read a long table or a count table (``counts=True``; detected from
    ``n_correct``/``n_samples`` columns when ``None``), or a wide table (one
    score column per model: no model column). ``options`` are those of
    :func:`frame_to_loaded` (``prompt=``, ``model=``, ..., ``prices=``,
    ``counts=``)."""
    ids = (options.get("prompt"), options.get("model"))
    frame = read_frame(path, None if fmt in (None, "counts", "wide") else fmt, ids)
    return frame_to_loaded(frame, str(path), fmt or table_format(path), **options)


def load_tables(paths: list[Path], fmt: str | None = None, **kwargs: Any) -> LoadedData:
    """Several table files of one layout, read as one table (their rows
    concatenated; the same (prompt, model, generation) in two files is an
    error, as within one file)."""
    ids = (kwargs.get("prompt"), kwargs.get("model"))
    read_fmt = None if fmt in (None, "counts", "wide") else fmt
    frames = [read_frame(p, read_fmt, ids) for p in paths]
    if fmt == "wide" or all(
        kwargs.get("model") is None and _pick(f, "model", None, str(p), False) is None
        for f, p in zip(frames, paths, strict=True)
    ):
        return load_wide_folder(paths, prompt=kwargs.get("prompt"))
    cols = [list(f.columns) for f in frames]
    if any(c != cols[0] for c in cols):
        bad = next(i for i, c in enumerate(cols) if c != cols[0])
        raise ValueError(
            f"{paths[bad]}: its columns {cols[bad]} differ from those of "
            f"{paths[0]} ({cols[0]}); give tables of one layout"
        )
    loaded = frame_to_loaded(
        pd.concat(frames, ignore_index=True),
        shown_source(paths),
        fmt or table_format(paths[0]),
        **kwargs,
    )
    loaded.notes.insert(0, f"{len(paths)} table files read as one table")
    return loaded


def frame_to_loaded(
    frame: pd.DataFrame,
    source: str,
    shown_fmt: str,
    *,
    prompt: str | None = None,
    model: str | None = None,
    score: str | None = None,
    generation: str | None = None,
    cost: str | None = None,
    latency: str | None = None,
    benchmark: str | None = None,
    prices: PriceTable | None = None,
    counts: bool | None = None,
) -> LoadedData:
    """A table already read -> :class:`LoadedData` (see :func:`load_table`)."""
    fmt = shown_fmt
    if len(frame.columns) == 0 or (len(frame) == 0 and len(frame.columns) <= 1):
        raise ValueError(f"{source}: empty file (no columns)")
    if counts is None:
        counts = fmt == "counts" or (
            score is None
            and _pick(frame, "score", None, source, False) is None
            and _pick(frame, "successes", None, source, False) is not None
            and _pick(frame, "n_draws", None, source, False) is not None
        )
    if fmt == "wide" or (
        not counts
        and model is None
        and _pick(frame, "model", None, source, False) is None
    ):
        named = {
            "model": model,
            "score": score,
            "generation": generation,
            "cost": cost,
            "latency": latency,
        }
        return _load_wide(frame, source, fmt, prompt, benchmark, prices, named)
    notes: list[str] = []
    used: dict[str, str] = {}
    cols: dict[str, str | None] = {
        "prompt": _pick(frame, "prompt", prompt, source, True),
        "model": _pick(frame, "model", model, source, True),
        "cost": _pick(frame, "cost", cost, source, False),
        "latency": _pick(frame, "latency", latency, source, False),
        "benchmark": _pick(frame, "benchmark", benchmark, source, False),
        "topic": _pick(frame, "topic", None, source, False),
    }
    if counts:
        shown_fmt = "counts"
        cols["successes"] = _pick(frame, "successes", score, source, True)
        cols["n_draws"] = _pick(frame, "n_draws", None, source, True)
        if generation is not None:
            raise ValueError(
                f"{source}: a count table has no generation column; drop --generation"
            )
    else:
        cols["score"] = _pick(frame, "score", score, source, True)
        cols["generation"] = _pick(frame, "generation", generation, source, False)
    if cols["benchmark"] in (cols["prompt"], cols["model"]):
        cols["benchmark"] = None
    cost_source = None
    if prices is not None:
        if cost is not None:
            raise ValueError(
                f"{source}: give either --cost (a cost column) or "
                "--prices (price tokens), not both"
            )
        in_col = _pick(frame, "input_tokens", None, source, True)
        out_col = _pick(frame, "output_tokens", None, source, True)
        frame = apply_prices(
            frame,
            prices,
            source,
            model_col=str(cols["model"]),
            in_col=str(in_col),
            out_col=str(out_col),
        )
        cols["cost"] = COST
        used["input_tokens"], used["output_tokens"] = str(in_col), str(out_col)
        cost_source = f"token counts ({in_col}, {out_col}) x price table"
    elif cols["cost"] is not None:
        cost_source = f"column {cols['cost']!r}"
    for role, given in (("cost", cost), ("latency", latency)):
        col = cols[role]
        priced = role == "cost" and prices is not None  # cost from the price table
        if given is None and col is not None and not priced and frame[col].isna().any():
            notes.append(
                f"column {col!r} has {int(frame[col].isna().sum())} missing "
                f"value(s): no {role} axis (name it with --{role} to make "
                "this an error)"
            )
            cols[role] = None
            if role == "cost":
                cost_source = None
    roles = ["prompt", "model", "cost", "latency", "benchmark", "topic"]
    roles += ["successes", "n_draws"] if counts else ["score", "generation"]
    used.update({role: str(cols[role]) for role in roles if cols.get(role) is not None})
    if cols["benchmark"] is not None and benchmark is None:
        notes.append(f"benchmark labels from column {cols['benchmark']!r}")
    if len(frame) == 0:
        raise ValueError(f"{source}: the table has no rows")
    try:
        if counts:
            results = EvalResults.from_count_frame(
                frame,
                prompt=str(cols["prompt"]),
                model=str(cols["model"]),
                successes=str(cols["successes"]),
                n_draws=str(cols["n_draws"]),
                cost=cols["cost"],
                latency=cols["latency"],
                benchmark=cols["benchmark"],
                topic=cols["topic"],
            )
        else:
            results = EvalResults.from_frame(
                frame,
                prompt=str(cols["prompt"]),
                model=str(cols["model"]),
                score=str(cols["score"]),
                generation=cols["generation"],
                cost=cols["cost"],
                latency=cols["latency"],
                benchmark=cols["benchmark"],
                topic=cols["topic"],
            )
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None
    loaded = LoadedData(
        results,
        shown_fmt,
        source,
        used,
        notes,
        cost_source if cols["cost"] is not None else None,
    )
    if "truth_p" in frame.columns:
        _attach_truth(
            loaded.results,
            frame,
            str(cols["prompt"]),
            str(cols["model"]),
            "truth_p",
            source,
        )
        notes.append(
            "column 'truth_p' holds each cell's true success probability "
            "(simulated data): the true oracle is known"
        )
    return loaded
