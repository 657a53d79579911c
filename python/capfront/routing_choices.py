"""A router's decisions as input: which model (and how many draws) per prompt.

:func:`read_choices` turns any of the accepted forms into two ``(N,)`` integer
arrays aligned with ``results.prompts``: the model index and ``k`` (draws of
best-of-``k``; 1 for a single generation).

Accepted forms
--------------
- a label array (model names or model indices), one entry per prompt in the
  order of ``results.prompts``;
- a pandas Series indexed by prompt id (a RangeIndex of length ``N`` counts as
  positional);
- a table (pandas DataFrame, or a CSV / JSON / JSONL / Parquet file path) with a
  prompt column (``prompt_id`` or ``prompt``), a model column (``model`` or
  ``choice``) and optionally ``k``; one row per prompt (repeated identical rows
  allowed, e.g. a long table);
- ``(frame, column)``: the per-prompt value of ``column`` of a long table (one
  row per prompt, model and generation), which must be constant within a prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .results import EvalResults

__all__ = ["read_choices"]

PROMPT_COLUMNS = ("prompt_id", "prompt")
MODEL_COLUMNS = ("model", "choice")


def _read_table(path: Path) -> pd.DataFrame:
    name = path.name.lower()
    try:
        if name.endswith((".csv", ".csv.gz", ".tsv")):
            sep = "\t" if name.endswith(".tsv") else ","
            return pd.read_csv(path, sep=sep)
        if name.endswith((".jsonl", ".ndjson")):
            return pd.read_json(path, lines=True)
        if name.endswith(".json"):
            raw = pd.read_json(path, typ="series", orient="index")
            if isinstance(raw.iloc[0], dict):
                return pd.DataFrame(list(raw.to_numpy()))
            return pd.DataFrame({"prompt_id": raw.index, "model": raw.to_numpy()})
        if name.endswith((".parquet", ".pq")):
            return pd.read_parquet(path)
    except (ValueError, OSError) as err:
        raise ValueError(f"{path}: cannot read the router choices ({err})") from None
    raise ValueError(
        f"{path}: unknown choices file type; use .csv, .json, .jsonl or .parquet "
        "with columns prompt_id, model[, k]"
    )


def _pick(frame: pd.DataFrame, names: Sequence[str], what: str, where: str) -> str:
    for n in names:
        if n in frame.columns:
            return n
    raise ValueError(
        f"{where}: no {what} column; expected one of {list(names)}, the table has "
        f"{list(map(str, frame.columns))}"
    )


def _from_table(
    results: EvalResults,
    frame: pd.DataFrame,
    where: str,
    model_col: str | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    pcol = _pick(frame, PROMPT_COLUMNS, "prompt", where)
    mcol = model_col or _pick(frame, MODEL_COLUMNS, "model", where)
    if mcol not in frame.columns:
        raise ValueError(
            f"{where}: no column {mcol!r}; the table has "
            f"{list(map(str, frame.columns))}"
        )
    keep = [pcol, mcol] + (["k"] if "k" in frame.columns and not model_col else [])
    sub = frame[keep].copy()
    sub[pcol] = sub[pcol].astype(str)
    sub = sub.drop_duplicates()
    dup = sub[pcol].duplicated(keep=False)
    if dup.any():
        bad = sub.loc[dup, pcol].unique()[:3].tolist()
        raise ValueError(
            f"{where}: prompt(s) {bad} have more than one choice in column {mcol!r} "
            "(one model per prompt; use column 'k' for best-of-k)"
        )
    pos = pd.Index(results.prompts.astype(str))
    at = pos.get_indexer(sub[pcol])
    if (at < 0).any():
        bad = sub.loc[at < 0, pcol].tolist()[:3]
        raise ValueError(
            f"{where}: {int((at < 0).sum())} prompt id(s) not in the results, "
            f"e.g. {bad} (column {pcol!r})"
        )
    if len(at) < results.n_prompts:
        miss = np.setdiff1d(np.arange(results.n_prompts), at)
        raise ValueError(
            f"{where}: no choice for {miss.size} of {results.n_prompts} prompts, "
            f"e.g. {[str(results.prompts[i]) for i in miss[:3]]} (column {pcol!r}); "
            "give one row per prompt or select the prompts first"
        )
    models = np.empty(results.n_prompts, dtype=object)
    models[at] = sub[mcol].to_numpy()
    k = None
    if "k" in sub.columns:
        k = np.empty(results.n_prompts, dtype=np.float64)
        k[at] = pd.to_numeric(sub["k"], errors="coerce").to_numpy(dtype=np.float64)
    return models, k


def _model_index(results: EvalResults, labels: np.ndarray, where: str) -> np.ndarray:
    L = results.n_models
    arr = np.asarray(labels)
    if arr.dtype == object and arr.size:
        ints = all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr
        )
        arr = arr.astype(np.int64) if ints else arr.astype(str)
    if arr.dtype.kind in "iu":
        idx = arr.astype(np.int64)
        if (idx < 0).any() or (idx >= L).any():
            raise ValueError(f"{where}: model indices must lie in 0..{L - 1}")
        return idx
    if arr.dtype.kind not in "US":
        raise ValueError(
            f"{where}: choices must be model names or integer model indices, got "
            f"dtype {arr.dtype}"
        )
    pos = pd.Index(results.models.astype(str))
    idx = pos.get_indexer(arr.astype(str))
    if (idx < 0).any():
        bad = sorted({str(v) for v in arr[idx < 0]})[:3]
        raise ValueError(
            f"{where}: unknown model(s) {bad}; the results have "
            f"{list(map(str, results.models[:5]))}" + (" ..." if L > 5 else "")
        )
    return idx.astype(np.int64)


def read_choices(
    results: EvalResults, choices: Any, k: Any = None, *, where: str = "choices"
) -> tuple[np.ndarray, np.ndarray]:
    """``(model index (N,), k (N,))`` of a router's decisions (forms in the module
    docstring). ``k``: None (the table's ``k`` column, else 1), an int for every
    prompt, or one value per prompt. Checks that every chosen cell was run with at
    least ``k`` draws."""
    N = results.n_prompts
    file_k = None
    if isinstance(choices, (str, Path)):
        path = Path(choices)
        if not path.exists():
            raise ValueError(
                f"{where}: {choices!r} is not a file; the results keep no other "
                "long-table columns: pass (frame, column), a label array or a "
                "file with columns prompt_id, model[, k]"
            )
        where = str(path)
        labels, file_k = _from_table(results, _read_table(path), where)
    elif isinstance(choices, tuple) and len(choices) == 2:
        frame, col = choices
        if not isinstance(frame, pd.DataFrame) or not isinstance(col, str):
            raise ValueError(f"{where}: a tuple must be (DataFrame, column name)")
        labels, _ = _from_table(results, frame, f"{where} column {col!r}", col)
    elif isinstance(choices, pd.DataFrame):
        labels, file_k = _from_table(results, choices, where)
    elif isinstance(choices, pd.Series) and not (
        isinstance(choices.index, pd.RangeIndex) and len(choices) == N
    ):
        frame = pd.DataFrame(
            {"prompt_id": choices.index.astype(str), "model": choices.to_numpy()}
        )
        labels, _ = _from_table(results, frame, where)
    else:
        labels = np.asarray(choices)
        if labels.shape != (N,):
            raise ValueError(
                f"{where}: need one choice per prompt ({N}), got shape {labels.shape}"
            )
    idx = _model_index(results, labels, where)
    if k is None:
        k = file_k if file_k is not None else 1
    k_arr = np.broadcast_to(np.asarray(k, dtype=np.float64), (N,))
    if not np.isfinite(k_arr).all() or (k_arr < 1).any() or (k_arr % 1).any():
        raise ValueError(f"{where}: k must be a whole number >= 1 for every prompt")
    k_arr = k_arr.astype(np.int64)
    rows = np.arange(N)
    G = results.n_draws[rows, idx]
    bad = np.flatnonzero(G < k_arr)
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"{where}: {bad.size} prompt(s) pick a cell with fewer draws than k, "
            f"e.g. prompt {results.prompts[i]!r}: model {results.models[idx[i]]!r} "
            f"has {int(G[i])} draw(s), k = {int(k_arr[i])} (0 draws: not run)"
        )
    if (k_arr > 1).any():
        results.require_binary("best-of-k choices (k > 1)")
    return idx, k_arr
