"""Statistic objects the resampling engine takes, and the registry of named ones.

The engine (:mod:`capfront.resampling.engine`) knows three kinds of statistic and no
statistic names:

- :class:`LinearStatistic`: ``theta = finalize(m)`` of the column means
  ``m_k = (1 / N) sum_n V[n, k]`` of per-prompt values ``V (N, K)``. A replicate
  with draw counts ``c_n`` (``sum_n c_n = N``) only needs
  ``m*_k = (1 / N) sum_n c_n V[n, k]`` (the streaming fast path). A column is a
  float array or :class:`Codes` (small integers times a scale).
- :class:`WeightedStatistic`: ``theta = value(w)`` of prompt weights ``w``
  (``sum_n w_n = 1``); a replicate uses ``w_n = c_n / N``.
- :class:`ResampledStatistic`: ``theta = value(results)``, one resampled
  :class:`~capfront.EvalResults` per replicate (the slow, general path).

Named statistics (``cf.bootstrap(res, "pgm")``) are built by the module that owns
them: it calls :func:`register_statistic(name, builder)` when imported, with
``builder(results, name, two_level) -> statistic object``. For a name it does not
know yet, :func:`statistic_builder` imports the owner modules listed in
``OWNER_MODULES`` (by name, at call time: no import edge from the engine to its
owners) until one registers it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "OWNER_MODULES",
    "CodeClasses",
    "Codes",
    "LinearStatistic",
    "PerPrompt",
    "ResampledStatistic",
    "Statistic",
    "TwoLevel",
    "WeightedStatistic",
    "common_draws",
    "known_statistics",
    "per_prompt_statistic",
    "register_statistic",
    "statistic_builder",
    "values_statistic",
]

# Modules that register named statistics when imported (imported lazily, in order).
OWNER_MODULES = [
    "capfront.resampling.oracle_statistics",
    "capfront.debias.statistics",
    "capfront.frontier_statistics",
]
_ROWS = 1 << 15  # prompts per chunk when scanning (N, L) arrays

_BUILDERS: dict[str, Callable[..., Any]] = {}


@dataclass(frozen=True)
class Codes:
    """A column ``V[:, k] = scale * z`` of int8 codes ``z`` (exact small values, e.g.
    ``p_hat = S / G`` as ``S`` with ``scale = 1 / G``)."""

    z: np.ndarray
    scale: float = 1.0


@dataclass(frozen=True)
class TwoLevel:
    """The two-level fast path of a statistic of the counts: with binary scores and
    one ``G`` per cell, a replicate redraws ``S* ~ Bin(G, p_hat)`` per drawn cell
    and needs only ``sum max_l S*`` (``with_max``) and/or ``sum S*_l``
    (``with_cells``); ``finalize`` then takes those sums over ``N G`` in that
    order."""

    g: int
    with_max: bool
    with_cells: bool


@dataclass(frozen=True)
class CodeClasses:
    """A statistic's only column, int8 codes ``z`` times ``scale``, given by its
    value classes so that the column itself need not be built: ``count(order,
    offsets, backend)`` returns ``(S, V)`` counts, row ``s`` holding how many
    positions ``i`` of stratum ``s`` (prompt ``order[i]``, or prompt ``i`` when
    ``order`` is ``None``) have code ``values[v]`` (``values`` ascending)."""

    values: np.ndarray
    scale: float
    count: Callable[[np.ndarray | None, np.ndarray, str], np.ndarray]


@dataclass
class LinearStatistic:
    """``finalize(column means)`` of per-prompt columns (original prompt order).

    Attributes
    ----------
    columns : float arrays ``(N,)`` or :class:`Codes`.
    finalize : ``(B, K) -> (B,)`` on rows of column means, columns in this order.
    denominator : optional ``d`` such that ``V * d`` are small integers for float
        columns (stored as codes when they are).
    grad : the gradient of ``finalize`` when it is linear (BCa's influence values);
        ``None``: a numerical gradient.
    estimate : ``theta`` on the data (default ``finalize`` of the full means).
    two_level : the two-level fast path, or ``None``.
    data : the results the statistic is defined on when it restricts them (e.g. to
        the prompts every model ran), else ``None``.
    classes : the value classes of the only column (:class:`CodeClasses`), when
        they can be counted without building it (the columns may then be built
        lazily); the engine's class path then reads these counts.
    """

    columns: Sequence[np.ndarray | Codes]
    finalize: Callable[[np.ndarray], np.ndarray]
    denominator: int | None = None
    grad: np.ndarray | None = None
    estimate: float | None = None
    two_level: TwoLevel | None = None
    data: Any = None
    classes: CodeClasses | None = None


@dataclass
class WeightedStatistic:
    """``value(w)`` of prompt weights ``w`` (original order, summing to 1);
    ``batch`` maps weight rows ``(nb, N)`` to ``nb`` values at once."""

    value: Callable[[np.ndarray], float]
    estimate: float
    batch: Callable[[np.ndarray], np.ndarray] | None = None
    data: Any = None


@dataclass
class ResampledStatistic:
    """``value(resampled EvalResults)``: the slow path."""

    value: Callable[[Any], float]
    estimate: float
    data: Any = None


Statistic = LinearStatistic | WeightedStatistic | ResampledStatistic


@dataclass(frozen=True)
class PerPrompt:
    """A decomposable statistic given directly: ``finalize(mean_n values[n])`` with
    ``values`` shaped ``(N,)`` or ``(N, K)`` (default finalize: the mean of the
    single column). Pass it as ``statistic`` to :func:`capfront.bootstrap` to
    resample prompts on the fast streaming path."""

    values: np.ndarray
    finalize: Callable[[np.ndarray], float] | None = None
    name: str = "per_prompt"
    linear: bool = False


def register_statistic(name: str, builder: Callable[..., Any]) -> None:
    """Make ``name`` a statistic of :func:`capfront.bootstrap`:
    ``builder(results, name, two_level)`` returns a statistic object."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"statistic name must be a non-empty string, got {name!r}")
    if not callable(builder):
        raise TypeError(f"builder of {name!r} must be callable")
    known = _BUILDERS.get(name)
    if known is not None and known is not builder:
        raise ValueError(f"statistic {name!r} is registered twice")
    _BUILDERS[name] = builder


def _import_owner(module: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError as err:  # an owner that cannot import registers nothing
        if err.name is None or not module.startswith(err.name):
            raise


def statistic_builder(name: str) -> Callable[..., Any] | None:
    """The builder registered for ``name`` (importing owner modules as needed), or
    ``None``."""
    for module in OWNER_MODULES:
        if name in _BUILDERS:
            break
        _import_owner(module)
    return _BUILDERS.get(name)


def known_statistics() -> tuple[str, ...]:
    """Every registered name (imports all owner modules), in registration order."""
    for module in OWNER_MODULES:
        _import_owner(module)
    return tuple(_BUILDERS)


def common_draws(results: Any) -> int | None:
    """``G`` when every observed cell has the same number of draws, else ``None``
    (row chunks: no ``(N, L)`` temporaries)."""
    # one G stored for every cell (EvalResults keeps it): nothing to scan
    constant = getattr(getattr(results, "_stats", None), "constant_draws", None)
    if constant is not None and constant > 0:
        return int(constant)
    G_all = results.n_draws
    common = None
    for r0 in range(0, G_all.shape[0], _ROWS):
        G = G_all[r0 : r0 + _ROWS]
        seen = G[G > 0]
        if seen.size == 0:
            continue
        lo, hi = int(seen.min()), int(seen.max())
        if lo != hi or (common is not None and lo != common):
            return None
        common = lo
    return common


def values_statistic(
    results: Any,
    values: Any,
    fin: Callable[[np.ndarray], float],
    name: str,
    diag: dict[str, Any] | None = None,
) -> LinearStatistic:
    """The decomposable statistic ``fin(mean_n values[n])`` (``fin`` on one row of
    means); ``diag["linear"]`` (with ``diag["grad"]``, default all ones) marks a
    linear ``fin``. Values that are multiples of ``1 / G`` (binary scores, one
    ``G``) are stored as exact codes."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2 or values.shape[0] != results.n_prompts:
        raise ValueError(
            f"{name}: per-prompt values shaped {values.shape}, expected "
            f"({results.n_prompts}, K)"
        )
    diag = diag or {}
    grad = None
    if diag.get("linear"):
        grad = np.asarray(diag.get("grad", np.ones(values.shape[1])), dtype=np.float64)

    def finalize(m: np.ndarray) -> np.ndarray:
        return np.array([float(fin(row)) for row in m])

    return LinearStatistic(
        columns=[values[:, k] for k in range(values.shape[1])],
        finalize=finalize,
        denominator=common_draws(results) if results.is_binary else None,
        grad=grad,
        estimate=float(fin(values.mean(axis=0))),
    )


def per_prompt_statistic(results: Any, spec: PerPrompt) -> LinearStatistic:
    """The :class:`LinearStatistic` of a :class:`PerPrompt`."""
    fin = spec.finalize or (lambda m: float(m[0]))
    diag = {"linear": spec.finalize is None or spec.linear}
    return values_statistic(results, spec.values, fin, spec.name, diag)
