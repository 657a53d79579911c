"""Backend choice: ``cpp`` (the compiled ``_core``), ``numba`` or ``numpy`` (reference).

Every public kernel takes ``backend=None``; ``None`` means the ``CAPFRONT_BACKEND``
environment variable if set, else the fastest available backend.
"""

from __future__ import annotations

import importlib
import logging
import os
from functools import cache
from types import ModuleType

from ._validate import whole_number

BACKENDS = ("cpp", "numba", "numpy")
ENV_VAR = "CAPFRONT_BACKEND"
log = logging.getLogger("capfront")


@cache
def _core_module() -> ModuleType | None:
    try:
        return importlib.import_module("capfront._core")
    except ImportError as err:  # pragma: no cover - depends on the build
        log.debug("capfront._core unavailable: %s", err)
        return None


@cache
def _numba_module() -> ModuleType | None:
    try:
        return importlib.import_module("numba")
    except ImportError:
        return None


def core() -> ModuleType:
    """The compiled extension; raises ``RuntimeError`` when it did not import."""
    mod = _core_module()
    if mod is None:
        raise RuntimeError("the compiled extension capfront._core is not available")
    return mod


def available_backends() -> tuple[str, ...]:
    """Backends usable here, fastest first (``numpy`` is always there)."""
    names = []
    if _core_module() is not None:
        names.append("cpp")
    if _numba_module() is not None:
        names.append("numba")
    names.append("numpy")
    return tuple(names)


def resolve_backend(backend: str | None = None) -> str:
    """Name of the backend to run: ``backend``, else ``$CAPFRONT_BACKEND``, else the
    fastest available one.

    Raises ``ValueError`` for an unknown name and for a known one that is not
    available here (saying why).
    """
    source = "backend="
    if backend is None:
        backend = os.environ.get(ENV_VAR) or None
        source = f"${ENV_VAR}="
    if backend is None:
        return available_backends()[0]
    name = str(backend).lower()
    if name not in BACKENDS:
        raise ValueError(
            f"unknown backend {source}{backend!r}; valid backends are "
            f"{', '.join(BACKENDS)}"
        )
    if name not in available_backends():
        why = (
            "capfront._core did not import"
            if name == "cpp"
            else "numba is not installed"
        )
        raise ValueError(
            f"backend {name!r} is not available ({why}); available: "
            f"{', '.join(available_backends())}"
        )
    return name


#: the most threads ``set_num_threads`` accepts
MAX_THREADS = 4096


def set_num_threads(n: int) -> None:
    """Threads for the C++ (and Numba) kernels: a whole number from 0 (all cores) to
    ``MAX_THREADS``. Results never depend on it.

    Raises ``TypeError`` for a non-number (``'2'``, ``None``, a bool) and
    ``ValueError`` for a fractional, negative or too large count.
    """
    n = whole_number(n, "set_num_threads: n", minimum=0, maximum=MAX_THREADS)
    if _core_module() is not None:
        core().set_num_threads(n)
    nb = _numba_module()
    if nb is not None and n > 0:
        nb.set_num_threads(min(n, nb.config.NUMBA_NUM_THREADS))


def get_num_threads() -> int:
    """Threads the C++ kernels use."""
    return core().num_threads() if _core_module() is not None else 1
