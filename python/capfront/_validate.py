"""Input checks shared by the public API: every failure is a ``ValueError`` that
names the argument and the problem."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np


def as_float_array(x: object, name: str) -> np.ndarray:
    """``x`` as a native-endian float64 array; rejects non-numeric input."""
    try:
        arr = np.asarray(x)
    except Exception as err:  # ragged lists and the like
        raise ValueError(f"{name} could not be read as an array: {err}") from None
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric or boolean, got dtype {arr.dtype}")
    return np.asarray(arr, dtype=np.float64)


def check_finite(arr: np.ndarray, name: str) -> None:
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name} contains {int(bad.sum())} NaN or inf value(s)")


def check_nonnegative(arr: np.ndarray, name: str) -> None:
    check_finite(arr, name)
    if (arr < 0).any():
        raise ValueError(f"{name} must be >= 0; found {int((arr < 0).sum())} negative")


def check_probabilities(arr: np.ndarray, name: str) -> None:
    bad = ~((arr >= 0.0) & (arr <= 1.0))
    if bad.any():
        raise ValueError(
            f"{name} must lie in [0, 1]; found {int(bad.sum())} value(s) outside "
            "(or NaN)"
        )


def as_int_array(x: object, name: str) -> np.ndarray:
    """``x`` as int64, refusing non-integral values."""
    arr = np.asarray(x)
    if arr.dtype.kind == "b":
        return arr.astype(np.int64)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} contains NaN or inf")
        if not np.array_equal(arr, np.round(arr)):
            raise ValueError(f"{name} must hold whole numbers")
        return arr.astype(np.int64)
    raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")


def labels(
    values: Sequence[object] | np.ndarray | None,
    n: int,
    name: str,
    default_prefix: str | None = None,
) -> np.ndarray | None:
    """Per-item labels of length ``n`` (``None`` allowed unless a prefix is given)."""
    if values is None:
        if default_prefix is None:
            return None
        return np.array([f"{default_prefix}{i}" for i in range(n)], dtype=object)
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":  # integer labels stay compact; others as objects
        arr = np.asarray(values, dtype=object)
    if arr.ndim != 1 or len(arr) != n:
        raise ValueError(f"{name} must have {n} entries, got shape {arr.shape}")
    return arr


def unique_labels(arr: np.ndarray, name: str) -> None:
    if arr.dtype.kind in "iu":
        uniq, counts = np.unique(arr, return_counts=True)
        if (counts > 1).any():
            raise ValueError(
                f"{name} has duplicate entries, e.g. {list(uniq[counts > 1][:3])}"
            )
        return
    uniq, counts = np.unique(arr.astype(str), return_counts=True)
    if (counts > 1).any():
        dup = uniq[counts > 1][:3]
        raise ValueError(f"{name} has duplicate entries, e.g. {list(dup)}")


def require_results(obj: object, name: str = "results") -> None:
    """:class:`~capfront.errors.NotEvalResultsError` (a ``TypeError``, also a
    ``ValueError``) unless ``obj`` is an :class:`~capfront.EvalResults`."""
    from .errors import NotEvalResultsError

    # The data model builds on this module, so it is looked up, not imported: an
    # EvalResults exists only once capfront.results has been imported.
    results = sys.modules.get(f"{__package__}.results")
    if results is None or not isinstance(obj, results.EvalResults):
        raise NotEvalResultsError(
            f"{name}: expected EvalResults, got {type(obj).__name__}; build one with "
            "EvalResults.from_arrays(scores) (scores shaped (N prompts, L models, G "
            "generations)), EvalResults.from_counts or capfront.read"
        )


def whole_number(
    x: object, name: str, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """``x`` as a Python int: ``TypeError`` for non-numbers (strings, bools, None),
    ``ValueError`` for a fractional or non-finite value or one outside
    ``[minimum, maximum]``."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(
        x, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{name} must be an integer, got {type(x).__name__} {x!r}")
    if isinstance(x, (float, np.floating)):
        if not np.isfinite(x) or float(x) != round(float(x)):
            raise ValueError(f"{name} must be a whole number, got {x!r}")
    value = int(x)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {x!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {x!r}")
    return value


def real_number(
    x: object, name: str, *, minimum: float | None = None, positive: bool = False
) -> float:
    """``x`` as a finite float: ``TypeError`` for non-numbers, ``ValueError`` for
    NaN/inf, for a value below ``minimum`` or (``positive``) not above 0."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(
        x, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{name} must be a number, got {type(x).__name__} {x!r}")
    value = float(x)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {x!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {x!r}")
    if positive and not value > 0:
        raise ValueError(f"{name} must be > 0, got {x!r}")
    return value


def bool_flags(values: object, n: int, name: str) -> list[bool]:
    """``n`` booleans (Python or NumPy bools, or 0/1), e.g. ``maximize``; refuses a
    string (``'yes'`` would otherwise read as three true flags)."""
    if isinstance(values, (str, bytes)) or np.ndim(values) != 1:
        raise TypeError(
            f"{name} must be a sequence of {n} booleans, got {type(values).__name__} "
            f"{values!r}"
        )
    items = list(values)  # type: ignore[call-overload]
    if len(items) != n:
        raise ValueError(f"{name} must have {n} entries, got {len(items)}")
    out = []
    for v in items:
        if isinstance(v, (bool, np.bool_)) or (
            isinstance(v, (int, np.integer)) and v in (0, 1)
        ):
            out.append(bool(v))
        else:
            raise TypeError(f"{name} entries must be booleans, got {v!r}")
    return out


def check_sum_finite(sums: np.ndarray | None, name: str) -> None:
    """Refuse sums that overflowed to inf from finite parts (values near the float
    maximum, ~1.8e308): the mean could be finite but the stored sum is not, so every
    mean built from it would be inf. Call where the per-cell sums are formed."""
    if sums is None:
        return
    full = np.asarray(sums)
    # a broadcast axis (stride 0) repeats one slice: check that slice only
    arr = full[tuple(slice(0, 1) if st == 0 else slice(None) for st in full.strides)]
    if arr.dtype.kind in "biu" or np.isfinite(np.sum(arr)):
        # no inf anywhere (one would make the total inf or NaN): one read, no
        # temporary the size of the sums
        return
    bad = np.isinf(arr)
    if bad.any():
        raise ValueError(
            f"{name}: the per-cell sum over generations overflows float64 at "
            f"{int(bad.sum()) * (full.size // arr.size)} cell(s) (values near "
            f"1.8e308); rescale {name} (e.g. "
            "to other units) so that G times the largest value stays below 1e308"
        )
