"""Input checks shared by the public API: every failure is a ``ValueError`` that
names the argument and the problem."""

from __future__ import annotations

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
