"""RouterBench's wide pandas pickle (``routerbench_0shot.pkl``, ``..._5shot.pkl``).

One row per prompt: ``sample_id``, ``prompt``, ``eval_name`` (the source benchmark),
``oracle_model_to_route_to``, and per model ``<model>`` (its score on the prompt,
in [0, 1]), ``<model>|model_response`` and ``<model>|total_cost`` (US dollars).
A model is a column ``m`` for which ``m|total_cost`` exists. A missing score is a
cell the model was not run on. One generation per cell.

Unpickling runs code: open only pickles you trust (the format is RouterBench's).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._common import BENCH, COST, MODEL, PROMPT, SCORE, LoadedData, finish
from .matrix import load_matrix

COST_SUFFIX = "|total_cost"


def load_routerbench(
    path: Path, *, prompt: str | None = None, benchmark: str | None = None
) -> LoadedData:
    """RouterBench's pickle; a pickled dict of score arrays (RouterEval) goes to
    :func:`capfront.adapters.wide.load_matrix`."""
    source = str(path)
    try:
        wide = pd.read_pickle(path)
    except Exception as err:  # unpickling raises many types
        raise ValueError(f"{source}: not a readable pandas pickle ({err})") from None
    if isinstance(wide, dict):
        return load_matrix(path)
    if not isinstance(wide, pd.DataFrame):
        raise ValueError(
            f"{source}: expected a pickled pandas DataFrame (RouterBench) or a dict "
            f"of score arrays (RouterEval), got {type(wide).__name__}"
        )
    return routerbench_frame(
        wide, source, "routerbench", prompt=prompt, benchmark=benchmark
    )


def routerbench_frame(
    wide: pd.DataFrame,
    source: str,
    fmt: str,
    *,
    prompt: str | None = None,
    benchmark: str | None = None,
) -> LoadedData:
    """RouterBench's wide table (from its pickle, or saved as CSV/Parquet)."""
    models = [
        c[: -len(COST_SUFFIX)]
        for c in map(str, wide.columns)
        if c.endswith(COST_SUFFIX) and c[: -len(COST_SUFFIX)] in wide.columns
    ]
    if not models:
        raise ValueError(
            f"{source}: no '<model>' + '<model>|total_cost' column pairs "
            "(not a RouterBench table)"
        )
    prompt = prompt or "sample_id"
    if prompt not in wide.columns:
        raise ValueError(f"{source}: no prompt id column {prompt!r}")
    if benchmark is None and "eval_name" in wide.columns:
        benchmark = "eval_name"
    if benchmark is not None and benchmark not in wide.columns:
        raise ValueError(f"{source}: no benchmark column {benchmark!r}")
    parts = []
    for m in models:
        part = pd.DataFrame(
            {
                PROMPT: wide[prompt].to_numpy(),
                MODEL: m,
                SCORE: pd.to_numeric(wide[m], errors="coerce").to_numpy(),
                COST: pd.to_numeric(wide[m + COST_SUFFIX], errors="coerce").to_numpy(),
            }
        )
        if benchmark is not None:
            part[BENCH] = wide[benchmark].to_numpy()
        bad = wide[m].notna() & part[SCORE].isna().to_numpy()
        if bad.any():
            raise ValueError(f"{source}: column {m!r} has non-numeric scores")
        parts.append(part[part[SCORE].notna().to_numpy()])
    frame = pd.concat(parts, ignore_index=True)
    missing_cost = frame[COST].isna()
    if missing_cost.any():
        first = frame.loc[missing_cost, MODEL].iloc[0]
        raise ValueError(
            f"{source}: column {first + COST_SUFFIX!r} has missing costs where the "
            f"score is present ({int(missing_cost.sum())} cell(s))"
        )
    notes = [
        f"RouterBench wide table ({fmt}): {len(models)} models, one generation per cell"
    ]
    columns = {"prompt": prompt, "score": "<model>", "cost": "<model>|total_cost"}
    if benchmark is not None:
        columns["benchmark"] = benchmark
        notes.append(f"benchmark labels from column {benchmark!r}")
    return finish(
        frame,
        fmt=fmt if fmt == "routerbench" else f"routerbench ({fmt})",
        source=source,
        notes=notes,
        cost_source="column '<model>|total_cost' (US dollars)",
        columns=columns,
    )
