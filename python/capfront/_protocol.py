"""The result protocol every public capfront result follows.

- ``value``: the headline number (a float);
- ``ci``: a ``(low, high)`` pair at confidence ``level`` (``(nan, nan)`` and
  ``level = nan`` when no interval was computed: unpacking ``low, high = r.ci``
  always works);
- ``to_dict()``: plain JSON-ready Python (floats, ints, str, lists, dicts; NaN
  becomes ``None``); dataclass fields declared with ``repr=False`` (bulk arrays,
  fitted models) are left out;
- ``to_frame()``: a pandas DataFrame; one row of the scalar entries by default,
  the natural table where a result has one (an audit's per-method table).

The report renders results through this protocol only.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

NAN = float("nan")
#: arrays up to this many elements go into ``to_dict``; longer ones are summarised
MAX_LIST = 100_000


def plain(obj: Any) -> Any:
    """``obj`` as JSON-ready Python: NumPy scalars and arrays, pandas frames and
    series, tuples, nested results; non-finite floats become ``None``."""
    import numpy as np  # deferred: ``import capfront`` stays light

    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        return x if math.isfinite(x) else None
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, ResultProtocol):
        return obj.to_dict()
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        if obj.size > MAX_LIST:
            return {"shape": list(obj.shape), "dtype": str(obj.dtype)}
        return plain(obj.tolist())
    import pandas as pd

    if isinstance(obj, pd.DataFrame):
        frame = obj.reset_index() if obj.index.name is not None else obj
        return [plain(r) for r in frame.to_dict(orient="records")]
    if isinstance(obj, pd.Series):
        return plain(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: plain(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if f.repr
        }
    return str(obj)


def interval(ci: Any) -> tuple[float, float]:
    """``ci`` as a ``(low, high)`` float pair; ``(nan, nan)`` for ``None``."""
    if ci is None:
        return (NAN, NAN)
    low, high = ci
    return (float(low), float(high))


class ResultProtocol:
    """Mixin for result dataclasses: ``to_dict`` and ``to_frame`` from the fields,
    ``ci`` and ``level`` defaults. A class with a differently named headline field
    defines a ``value`` property; one with an interval defines ``ci`` and ``level``
    fields or properties."""

    def __getattr__(self, name: str) -> Any:
        # defaults for results without an interval; a ``ci`` / ``level`` field or
        # property wins (``__getattr__`` runs only when lookup fails, and unlike a
        # class attribute it is no dataclass default)
        if name == "ci":
            return (NAN, NAN)
        if name == "level":
            return NAN
        raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r}")

    def _protocol_head(self) -> dict[str, Any]:
        low, high = interval(self.ci)
        level = self.level
        return {
            "value": plain(self.value),  # type: ignore[attr-defined]
            "ci": [plain(low), plain(high)],
            "level": plain(NAN if level is None else level),
        }

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-ready Python (see the module docstring)."""
        out = self._protocol_head()
        if dataclasses.is_dataclass(self):
            for f in dataclasses.fields(self):
                if f.repr and f.name not in out:
                    out[f.name] = plain(getattr(self, f.name))
        return out

    def to_frame(self):
        """One row: ``value``, ``ci_low``, ``ci_high``, ``level`` and the other
        scalar entries of :meth:`to_dict`."""
        import pandas as pd

        d = self.to_dict()
        low, high = d.pop("ci")
        row = {"value": d.pop("value"), "ci_low": low, "ci_high": high}
        row.update(
            (k, v)
            for k, v in d.items()
            if v is None or isinstance(v, (bool, int, float, str))
        )
        # JSON's None (a missing or non-finite number) back to NaN
        return pd.DataFrame([{k: NAN if v is None else v for k, v in row.items()}])
