"""The result protocol (``capfront._protocol``): JSON-ready ``to_dict``, one-row
``to_frame``, ``ci``/``level`` defaults."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from capfront._protocol import ResultProtocol, interval, plain


@dataclass
class _WithCI(ResultProtocol):
    value: float
    ci: tuple[float, float]
    level: float
    n: int
    label: str
    table: pd.DataFrame
    bulk: np.ndarray = field(default=None, repr=False)


@dataclass
class _NoCI(ResultProtocol):
    estimate: float
    notes: list = field(default_factory=list)

    @property
    def value(self) -> float:
        return self.estimate


def _example() -> _WithCI:
    table = pd.DataFrame({"m": ["a", "b"], "x": [1.0, np.nan]}).set_index("m")
    return _WithCI(
        value=np.float64(0.5),
        ci=(np.float32(0.25), 0.75),
        level=0.95,
        n=np.int64(3),
        label="x",
        table=table,
        bulk=np.zeros(10),
    )


def test_to_dict_is_json_ready_and_skips_bulk_fields():
    d = _example().to_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert d["value"] == 0.5 and d["ci"] == [0.25, 0.75] and d["level"] == 0.95
    assert d["n"] == 3 and isinstance(d["n"], int)
    assert d["table"] == [{"m": "a", "x": 1.0}, {"m": "b", "x": None}]
    assert "bulk" not in d


def test_to_frame_one_row_of_scalars():
    f = _example().to_frame()
    assert list(f.columns[:3]) == ["value", "ci_low", "ci_high"]
    assert f.shape[0] == 1 and "table" not in f.columns
    assert f.loc[0, "ci_high"] == 0.75 and f.loc[0, "label"] == "x"


def test_defaults_without_an_interval():
    r = _NoCI(estimate=float("inf"), notes=[np.int32(1)])
    low, high = r.ci
    assert math.isnan(low) and math.isnan(high) and math.isnan(r.level)
    d = r.to_dict()
    assert d["value"] is None and d["ci"] == [None, None] and d["notes"] == [1]
    assert math.isnan(r.to_frame().loc[0, "value"])


def test_plain_and_interval_helpers():
    assert interval(None)[0] != interval(None)[0]  # NaN
    assert interval([1, 2]) == (1.0, 2.0)
    big = np.zeros(200_001)
    assert plain(big) == {"shape": [200_001], "dtype": "float64"}
    assert plain({1: np.bool_(True), "t": (np.nan,)}) == {"1": True, "t": [None]}
