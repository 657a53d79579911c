"""Score matrices (prompts x models): NumPy ``.npy`` (model names are then
``model_0``...), ``.npz`` with a 2-D score array and optional ``models`` /
``prompts`` arrays, or a pickled dict with model names and score arrays as
RouterEval ships its router data sets (``{"model": [names], "data":
{"train_score": (n, L), "val_score": ..., "test_score": ...}}``; each split is a
benchmark) or its leaderboard scores (``{"data": {<subset>: {"correctness":
(n, L)}}}``). A NaN score is a cell not run. See also
:mod:`capfront.adapters.wide`.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._common import BENCH, MODEL, PROMPT, SCORE, LoadedData, finish

MATRIX_SUFFIXES = ("npy", "npz")


def _matrix(values: Any, where: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: the scores are not a numeric array") from None
    if arr.ndim != 2:
        raise ValueError(
            f"{where}: a score matrix must be 2-D (prompts x models), got shape "
            f"{arr.shape}"
        )
    return arr


def _names(values: Any, n: int, where: str, what: str) -> list[str] | None:
    if values is None:
        return None
    names = [str(x) for x in np.asarray(values, dtype=object).ravel()]
    if len(names) != n:
        raise ValueError(
            f"{where}: {len(names)} {what} name(s) for {n} {what} column(s)/row(s)"
        )
    return names


def _first_key(d: dict, keys: tuple[str, ...]) -> Any:
    return next((d[k] for k in keys if k in d), None)


_MODEL_KEYS = ("models", "model", "model_names", "model_list", "llms")
_SCORE_KEYS = ("scores", "score", "correctness", "data", "matrix")


def _blocks_from_dict(obj: dict, where: str) -> tuple[dict[str, np.ndarray], Any]:
    """Score blocks (benchmark -> (n, L) array) and model names of a pickled
    dict or ``.npz`` archive (see the module docstring)."""
    names = _first_key(obj, _MODEL_KEYS)
    data = _first_key(obj, _SCORE_KEYS)
    if data is None:
        raise ValueError(
            f"{where}: no score array found (looked for keys {list(_SCORE_KEYS)}; "
            f"keys: {list(map(str, obj))})"
        )
    if isinstance(data, dict):
        blocks = {}
        for key, value in data.items():
            if isinstance(value, dict):  # RouterEval leaderboard: {"correctness": ..}
                value = _first_key(value, ("correctness", "score", "scores"))
                if value is None:
                    continue
            label = str(key)
            for suffix in ("_score", "_scores"):
                label = label.removesuffix(suffix)
            blocks[label] = _matrix(value, f"{where}: {key!r}")
        if not blocks:
            raise ValueError(f"{where}: no score arrays under {list(map(str, data))}")
        return blocks, names
    return {"": _matrix(data, where)}, names


def load_matrix(path: Path) -> LoadedData:
    """A score matrix file: ``.npy``, ``.npz`` or a pickled dict (RouterEval)."""
    source = str(path)
    suffix = path.suffix.lower().lstrip(".")
    prompt_names = None
    try:
        if suffix == "npy":
            loaded: Any = np.load(path, allow_pickle=False)
        elif suffix == "npz":
            with np.load(path, allow_pickle=False) as z:
                loaded = {k: z[k] for k in z.files}
        else:
            with open(path, "rb") as fh:
                loaded = pickle.load(fh)  # noqa: S301 - the user's own file
    except ValueError as err:
        raise ValueError(
            f"{source}: not a readable score matrix ({err}); object arrays are not "
            "loaded from .npy/.npz (save model names as a string array)"
        ) from None
    except Exception as err:  # unpickling and zip reading raise many types
        raise ValueError(f"{source}: not a readable score matrix ({err})") from None
    if isinstance(loaded, dict):
        blocks, names = _blocks_from_dict(loaded, source)
        prompt_names = _first_key(loaded, ("prompts", "prompt_ids", "ids"))
        if isinstance(prompt_names, dict):
            prompt_names = None  # RouterEval's prompt texts per split: not ids
    elif isinstance(loaded, np.ndarray):
        blocks, names = {"": _matrix(loaded, source)}, None
    else:
        raise ValueError(
            f"{source}: expected a score array or a dict of score arrays with "
            f"model names, got {type(loaded).__name__}"
        )
    widths = {b.shape[1] for b in blocks.values()}
    if len(widths) != 1:
        raise ValueError(
            f"{source}: the score arrays have different numbers of model columns "
            f"({sorted(widths)})"
        )
    L = widths.pop()
    models = _names(names, L, source, "model") or [f"model_{j}" for j in range(L)]
    parts = []
    for label, block in blocks.items():
        n = block.shape[0]
        if label == "" and prompt_names is not None:
            ids = _names(prompt_names, n, source, "prompt")
        else:
            ids = [f"{label}/{i}" if label else str(i) for i in range(n)]
        ii, jj = np.meshgrid(np.arange(n), np.arange(L), indexing="ij")
        part = pd.DataFrame(
            {
                PROMPT: np.asarray(ids, dtype=object)[ii.ravel()],
                MODEL: np.asarray(models, dtype=object)[jj.ravel()],
                SCORE: block.ravel(),
            }
        )
        if label:
            part[BENCH] = label
        parts.append(part[part[SCORE].notna().to_numpy()])
    notes = [
        f"score matrix: {sum(b.shape[0] for b in blocks.values())} prompts x "
        f"{L} models, one generation per cell"
        + ("" if names is not None else " (no model names stored: model_0, ...)")
    ]
    if len(blocks) > 1 or "" not in blocks:
        notes.append(f"benchmarks = the arrays {list(blocks)}")
    return finish(
        pd.concat(parts, ignore_index=True),
        fmt="matrix",
        source=source,
        notes=notes,
        cost_source=None,
        columns={"score": "matrix columns"},
    )
