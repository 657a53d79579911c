"""The oracle statistics of :func:`capfront.bootstrap`: ``"naive_oracle"``,
``"best_single"`` and ``"oracle_gain"``, as linear statistics of per-prompt values.

With ``p_hat[n, l] = S / G`` on the run cells:

- naive oracle: ``V_n = max_l p_hat[n, l]``, ``theta = mean_n V_n``;
- best single model: ``V[n, l] = p_hat[n, l]`` (and, when some cells were not
  run, the run indicators ``o[n, l]``), ``theta = max_l mean_n V[n, l] / mean_n
  o[n, l]``;
- oracle gain: both, ``theta`` = naive oracle minus best single model.

With binary scores and one ``G`` the values are int8 codes ``S`` (scale ``1 / G``)
and, when every cell was run, the two-level fast path applies. Single models and
oracles are compared on the prompts every model ran (the rule of
:mod:`capfront.baselines`), so the statistic is the one ``naive_oracle``,
``best_single`` and the frontier tables report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._kernels import dispatch
from ..baselines import on_common_prompts
from ..results import EvalResults
from .statistics import CodeClasses, Codes, LinearStatistic, TwoLevel, common_draws
from .statistics import register_statistic as _register

__all__ = ["oracle_statistic"]

_ROWS = 1 << 15  # prompts per chunk: contiguous reads of the (N, L) arrays
_KINDS = ("naive_oracle", "best_single", "oracle_gain")


def oracle_statistic(results: EvalResults, kind: str) -> LinearStatistic:
    """The :class:`LinearStatistic` of ``kind`` (one of ``naive_oracle``,
    ``best_single``, ``oracle_gain``) on all prompts of ``results``."""
    if kind not in _KINDS:
        raise ValueError(f"unknown oracle statistic {kind!r}; use one of {_KINDS}")
    L = results.n_models
    g = common_draws(results)
    coded = results.is_binary and g is not None and g <= 127
    complete = results.is_complete
    want_max = kind in ("naive_oracle", "oracle_gain")
    want_models = kind in ("best_single", "oracle_gain")
    # the naive oracle of compact binary counts: its value classes are counted
    # straight from the stored uint8 table, and its column is built only if asked
    compact = results.stats.successes
    classes = None
    if kind == "naive_oracle" and coded and complete and compact.dtype == np.uint8:

        def count(order: np.ndarray | None, offsets: np.ndarray, backend: str):  # noqa: ANN202
            order = np.empty(0, np.int64) if order is None else order
            return dispatch("row_max_counts", backend)(compact, order, offsets, g + 1)

        classes = CodeClasses(np.arange(g + 1, dtype=np.int64), 1.0 / g, count)
    columns = (
        _LazyColumns(lambda: _columns(results, kind, g, coded))
        if classes is not None
        else _columns(results, kind, g, coded)
    )
    first = 1 if want_max else 0

    def best(m: np.ndarray) -> np.ndarray:
        acc = m[:, first : first + L]
        if not complete:
            share = m[:, first + L : first + 2 * L]
            with np.errstate(invalid="ignore", divide="ignore"):
                acc = np.where(share > 0, acc / share, -np.inf)
        return acc.max(axis=1)

    if kind == "naive_oracle":

        def finalize(m: np.ndarray) -> np.ndarray:
            return m[:, 0]

        grad = np.ones(1)
    elif kind == "best_single":

        def finalize(m: np.ndarray) -> np.ndarray:
            return best(m)

        grad = None
    else:

        def finalize(m: np.ndarray) -> np.ndarray:
            return m[:, 0] - best(m)

        grad = None
    two_level = None
    if coded and complete:
        # S* ~ Bin(G, p_hat) per cell: the columns follow from S* alone
        two_level = TwoLevel(g, want_max, want_models)
    return LinearStatistic(
        columns, finalize, grad=grad, two_level=two_level, classes=classes
    )


class _LazyColumns(Sequence):
    """The columns, built on first access."""

    def __init__(self, build: Callable[[], list[np.ndarray | Codes]]) -> None:
        self._build = build
        self._cols: list[np.ndarray | Codes] | None = None

    def _get(self) -> list[np.ndarray | Codes]:
        if self._cols is None:
            self._cols = self._build()
        return self._cols

    def __getitem__(self, k: Any) -> Any:
        return self._get()[k]

    def __len__(self) -> int:
        return len(self._get())


def _columns(
    results: EvalResults, kind: str, g: int | None, coded: bool
) -> list[np.ndarray | Codes]:
    """The statistic's per-prompt columns: ``max_l p_hat`` and/or the ``p_hat`` of
    each model (and the run indicators when some cells were not run)."""
    N, L = results.n_prompts, results.n_models
    complete = results.is_complete
    want_max = kind in ("naive_oracle", "oracle_gain")
    want_models = kind in ("best_single", "oracle_gain")
    S_all, G_all = results.successes, results.n_draws
    # Columns are built from row chunks, transposed into (column, prompt) rows.
    n_rows = int(want_max) + (L * (1 + (not complete)) if want_models else 0)
    rows = np.empty((n_rows, N), dtype=np.int8 if coded else np.float64)
    for r0 in range(0, N, _ROWS):
        Gc = G_all[r0 : r0 + _ROWS]
        obs = Gc > 0
        if coded and complete and S_all.dtype.kind in "iu":
            # integer counts in every cell: the codes are the counts (<= g <= 127)
            vals = S_all[r0 : r0 + _ROWS].astype(np.int8)
            top = vals.max(axis=1)
        elif coded:
            vals = np.where(obs, np.rint(S_all[r0 : r0 + _ROWS]), 0).astype(np.int8)
            top = np.where(obs, vals, -1).max(axis=1)
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                vals = np.where(obs, S_all[r0 : r0 + _ROWS] / Gc, 0.0)
            top = np.where(obs, vals, -np.inf).max(axis=1)
        k = 0
        if want_max:
            rows[0, r0 : r0 + _ROWS] = top
            k = 1
        if want_models:
            rows[k : k + L, r0 : r0 + _ROWS] = vals.T
            if not complete:
                rows[k + L : k + 2 * L, r0 : r0 + _ROWS] = obs.T
    columns: list[np.ndarray | Codes] = []
    for k in range(n_rows):
        if want_models and k >= int(want_max) + L:  # run indicators
            columns.append(Codes(rows[k].astype(np.int8), 1.0))
        elif coded:
            columns.append(Codes(rows[k], 1.0 / g))
        else:
            columns.append(rows[k])
    return columns


def _build(results: EvalResults, name: str, two_level: bool) -> LinearStatistic:
    data = results if results.is_complete else on_common_prompts(results)
    stat = oracle_statistic(data, name)
    stat.data = data
    return stat


for _name in _KINDS:
    _register(_name, _build)
