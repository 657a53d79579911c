"""Price tables: model -> US dollars per million input and output tokens.

A price table turns token counts into cost:
``cost = input_tokens * input_price / 1e6 + output_tokens * output_price / 1e6``.
A model without a price is an error, never a silent zero.

Accepted files
--------------
- CSV (or TSV): a ``model`` column and two price columns, named
  ``input``/``output``, ``input_per_million``/``output_per_million``,
  ``prompt``/``completion`` or ``input_price``/``output_price``.
- JSON: ``{"model": {"input": 0.5, "output": 1.5}, ...}`` or
  ``{"model": [0.5, 1.5], ...}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

_INPUT_NAMES = (
    "input_per_million",
    "input",
    "input_price",
    "prompt",
    "prompt_per_million",
    "input_usd_per_million",
)
_OUTPUT_NAMES = (
    "output_per_million",
    "output",
    "output_price",
    "completion",
    "completion_per_million",
    "output_usd_per_million",
)

PriceTable = dict[str, tuple[float, float]]


def _check_price(path: str, model: str, value: object, which: str) -> float:
    try:
        price = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(
            f"{path}: {which} price of model {model!r} is not a number ({value!r})"
        ) from None
    if not np.isfinite(price) or price < 0:
        raise ValueError(
            f"{path}: {which} price of model {model!r} must be a finite number >= 0, "
            f"got {value!r}"
        )
    return price


def read_prices(path: str | Path) -> PriceTable:
    """Read a price table (CSV/TSV or JSON): ``{model: (input, output)}`` in US
    dollars per million tokens."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such price file")
    name = str(path)
    if path.suffix.lower() == ".json":
        try:
            raw = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{name}: not valid JSON ({err})") from None
        if not isinstance(raw, Mapping) or not raw:
            raise ValueError(f"{name}: expected an object {{model: prices}}")
        table: PriceTable = {}
        for model, value in raw.items():
            if isinstance(value, Mapping):
                inp = next((value[k] for k in _INPUT_NAMES if k in value), None)
                out = next((value[k] for k in _OUTPUT_NAMES if k in value), None)
                if inp is None or out is None:
                    raise ValueError(
                        f"{name}: model {model!r} needs an input and an output price "
                        f"(keys 'input' and 'output'), got keys {sorted(value)}"
                    )
            elif isinstance(value, (list, tuple)) and len(value) == 2:
                inp, out = value
            else:
                raise ValueError(
                    f"{name}: model {model!r}: expected {{'input': x, 'output': y}} "
                    f"or [x, y], got {value!r}"
                )
            table[str(model)] = (
                _check_price(name, model, inp, "input"),
                _check_price(name, model, out, "output"),
            )
        return table
    sep = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    frame = pd.read_csv(path, sep=sep)
    cols = {c.lower().strip(): c for c in frame.columns}
    if "model" not in cols:
        raise ValueError(
            f"{name}: the price table needs a 'model' column; it has "
            f"{list(frame.columns)}"
        )
    inp_col = next((cols[k] for k in _INPUT_NAMES if k in cols), None)
    out_col = next((cols[k] for k in _OUTPUT_NAMES if k in cols), None)
    if inp_col is None or out_col is None:
        raise ValueError(
            f"{name}: the price table needs input and output price columns (e.g. "
            f"'input_per_million', 'output_per_million'); it has {list(frame.columns)}"
        )
    table = {}
    for model, inp, out in zip(
        frame[cols["model"]].astype(str), frame[inp_col], frame[out_col], strict=True
    ):
        if model in table:
            raise ValueError(f"{name}: model {model!r} is listed twice")
        table[model] = (
            _check_price(name, model, inp, "input"),
            _check_price(name, model, out, "output"),
        )
    if not table:
        raise ValueError(f"{name}: the price table is empty")
    return table


def token_cost(
    models: np.ndarray | pd.Series,
    input_tokens: np.ndarray | pd.Series,
    output_tokens: np.ndarray | pd.Series,
    prices: PriceTable,
    *,
    source: str = "prices",
) -> np.ndarray:
    """Cost in US dollars of each row: ``input_tokens * p_in / 1e6 + output_tokens *
    p_out / 1e6`` with ``(p_in, p_out) = prices[model]``.

    Raises ``ValueError`` naming every model without a price and any missing or
    negative token count.
    """
    models = np.asarray(models).astype(str)
    missing = sorted({str(m) for m in models} - set(prices))
    if missing:
        more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
        raise ValueError(
            f"{source}: no price for model(s) {missing[:5]}{more}; every model needs "
            "an input and an output price"
        )
    tokens = []
    for values, what in ((input_tokens, "input"), (output_tokens, "output")):
        arr = pd.to_numeric(pd.Series(np.asarray(values)), errors="coerce").to_numpy(
            dtype=np.float64
        )
        bad = ~np.isfinite(arr) | (arr < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{int(bad.sum())} row(s) have a missing or negative {what} token "
                f"count (first: model {models[i]!r}); cannot price them"
            )
        tokens.append(arr)
    p_in = np.array([prices[m][0] for m in models])
    p_out = np.array([prices[m][1] for m in models])
    return (tokens[0] * p_in + tokens[1] * p_out) / 1e6
