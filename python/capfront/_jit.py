"""``njit``/``prange`` that fall back to plain Python when numba is missing, so the
modules holding Numba kernels always import (the ``numba`` backend is then simply
unavailable)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    import numba as _numba
except ImportError:  # pragma: no cover - exercised by the hide-numba test
    _numba = None


def njit(*args: Any, **kwargs: Any) -> Any:
    """``numba.njit(cache=True, ...)``, or the identity without numba."""
    if _numba is None:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return lambda f: f
    kwargs.setdefault("cache", True)
    if len(args) == 1 and callable(args[0]) and not kwargs.get("_sig"):
        return _numba.njit(**kwargs)(args[0])
    return _numba.njit(*args, **kwargs)


prange: Callable[..., Any] = range if _numba is None else _numba.prange
