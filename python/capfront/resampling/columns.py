"""Columns of a linear statistic as exact integers, the strata, and the value
classes of the resampling engine.

A column ``V[:, k]`` is stored as ``scale_k Z[k, n]``: int8 codes where ``V`` takes
few values (``p_hat = S / G`` has ``G + 1``), otherwise 53-bit fixed point
(``N max|Z| <= 2^52``, a relative quantisation step of ``N 2^-52`` of the column's
largest value), in stratum order (strata sorted by label, prompts in their
original order within a stratum). Replicate sums ``sum_n c_n Z[k, n]`` are then
exact integers. The value classes are the distinct rows ``Z[:, n]`` per stratum
(see :mod:`capfront.resampling.engine` for when they are used).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..results import EvalResults
from .statistics import Codes, LinearStatistic

__all__ = ["Strata", "make_strata"]

_FIXED_BITS = 52  # N * max|Z| <= 2^52: float64 sums of the codes stay exact
_CLASS_SAMPLE = 4096  # prompts sampled to rule out the class path cheaply
_MAX_CLASSES = 1 << 14


# --------------------------------------------------------------------------- strata
@dataclass(frozen=True)
class Strata:
    """Prompts in stratum order: ``order[i]`` is the original index at position
    ``i``; stratum ``s`` holds positions ``offsets[s] .. offsets[s + 1] - 1``."""

    order: np.ndarray  # (N,) int64
    offsets: np.ndarray  # (S + 1,) int64
    identity: bool

    @property
    def n(self) -> int:
        return int(self.offsets[-1])

    @classmethod
    def single(cls, n: int) -> Strata:
        """One stratum of ``n`` prompts."""
        return cls(np.arange(n, dtype=np.int64), np.array([0, n], dtype=np.int64), True)


def make_strata(results: EvalResults, stratify: str | None) -> Strata:
    """The strata of ``stratify`` (``None``: one), sorted by label."""
    N = results.n_prompts
    if stratify is None:
        return Strata.single(N)
    labels = results.benchmark if stratify == "benchmark" else results.topic
    if labels is None:
        raise ValueError(
            f"stratify={stratify!r} but the results have no {stratify} labels"
        )
    _, codes = np.unique(np.asarray(labels).astype(str), return_inverse=True)
    codes = codes.reshape(-1)
    order = np.argsort(codes, kind="stable").astype(np.int64)
    sizes = np.bincount(codes)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return Strata(order, offsets, bool((order == np.arange(N)).all()))


# --------------------------------------------------------------------------- columns
@dataclass
class _Coded:
    """A linear statistic with integer-coded columns in stratum order."""

    z8: np.ndarray  # (K8, N) int8
    z64: np.ndarray  # (K64, N) int64
    scale: np.ndarray  # (K,)
    estimate: float
    finalize: Callable[[np.ndarray], np.ndarray]  # (B, K) -> (B,)
    full_mean: np.ndarray  # (K,)
    grad: np.ndarray | None = None


class _Columns:
    """Collects columns as int8 codes or 53-bit fixed point, in stratum order."""

    def __init__(self, n: int, order: np.ndarray | None) -> None:
        self.n = n
        self.order = order
        self.codes: list[tuple[np.ndarray, float, float]] = []
        self.fixed: list[tuple[np.ndarray, float, float]] = []
        self.kinds: list[tuple[bool, int]] = []  # (is_code, index) in insertion order

    def _perm(self, a: np.ndarray) -> np.ndarray:
        return a if self.order is None else a[self.order]

    def add_codes(self, z: np.ndarray, scale: float) -> None:
        z = self._perm(np.ascontiguousarray(z, dtype=np.int8))
        mean = float(scale * z.sum(dtype=np.int64) / self.n)
        self.kinds.append((True, len(self.codes)))
        self.codes.append((z, float(scale), mean))

    def add_values(self, v: np.ndarray, denominator: int | None = None) -> None:
        """A float column; stored as codes when ``v * denominator`` are integers in
        [-128, 127], else in fixed point."""
        v = np.asarray(v, dtype=np.float64)
        if not np.isfinite(v).all():
            raise ValueError("the statistic's per-prompt values contain NaN or inf")
        if denominator:
            z = np.rint(v * denominator)
            if np.abs(z).max() <= 127 and np.array_equal(z / denominator, v):
                self.add_codes(z.astype(np.int8), 1.0 / denominator)
                return
        top = float(np.abs(v).max())
        if top == 0.0:
            scale = 1.0
        else:
            scale = 2.0 ** math.ceil(math.log2(top * self.n) - _FIXED_BITS)
        z = self._perm(np.rint(v / scale).astype(np.int64))
        self.kinds.append((False, len(self.fixed)))
        self.fixed.append((z, scale, float(v.mean())))

    def build(
        self,
        finalize: Callable[[np.ndarray], np.ndarray],
        grad: np.ndarray | None = None,
    ) -> _Coded:
        """``finalize`` takes means ``(B, K)`` in insertion order; the kernels hold
        the code columns first, so the coded finalize permutes back."""
        n = self.n
        n_codes = len(self.codes)
        perm = np.array(
            [i if is_code else n_codes + i for is_code, i in self.kinds], dtype=np.int64
        )
        if not (perm == np.arange(perm.size)).all():
            inner = finalize

            def finalize(m: np.ndarray) -> np.ndarray:
                return inner(m[:, perm])

            if grad is not None:
                g = np.empty_like(grad)
                g[perm] = grad
                grad = g
        z8 = (
            np.stack([c[0] for c in self.codes])
            if self.codes
            else np.zeros((0, n), dtype=np.int8)
        )
        z64 = (
            np.stack([c[0] for c in self.fixed])
            if self.fixed
            else np.zeros((0, n), dtype=np.int64)
        )
        cols = self.codes + self.fixed
        scale = np.array([c[1] for c in cols])
        mean = np.array([c[2] for c in cols])
        est = float(finalize(mean[None, :])[0])
        return _Coded(
            np.ascontiguousarray(z8),
            np.ascontiguousarray(z64),
            scale,
            est,
            finalize,
            mean,
            grad,
        )


def _code(stat: LinearStatistic, n: int, strata: Strata | None) -> _Coded:
    """The statistic's columns coded in stratum order."""
    order = None if strata is None or strata.identity else strata.order
    cols = _Columns(n, order)
    for col in stat.columns:
        if isinstance(col, Codes):
            cols.add_codes(col.z, col.scale)
        else:
            cols.add_values(col, stat.denominator)
    coded = cols.build(stat.finalize, stat.grad)
    if stat.estimate is not None:
        coded.estimate = float(stat.estimate)
    return coded


# --------------------------------------------------------------------------- classes
ClassTables = tuple[np.ndarray, np.ndarray, np.ndarray]


def _code_classes(
    stat: LinearStatistic, strata: Strata, backend: str
) -> tuple[_Coded, ClassTables]:
    """The coded statistic and its class tables (as :func:`_class_tables`) from the
    value classes ``stat.classes`` of its only column, without building the column:
    the mean and estimate are the ones :func:`_code` computes (the same integer
    total, scaled in the same operations). The returned ``_Coded`` holds no
    columns (``z8``, ``z64`` empty): only the class path may use it."""
    spec = stat.classes
    order = None if strata.identity else strata.order
    counts = spec.count(order, strata.offsets, backend)  # (S, V) int64
    values = np.asarray(spec.values, dtype=np.int64)
    n = strata.n
    total = (counts.sum(axis=0) * values).sum(dtype=np.int64)
    mean = np.array([float(spec.scale * total / n)])
    finalize = stat.finalize
    estimate = float(finalize(mean[None, :])[0])
    if stat.estimate is not None:
        estimate = float(stat.estimate)
    coded = _Coded(
        np.zeros((0, 0), dtype=np.int8),
        np.zeros((0, 0), dtype=np.int64),
        np.array([float(spec.scale)]),
        estimate,
        finalize,
        mean,
        stat.grad,
    )
    seen = counts > 0
    class_offsets = np.concatenate([[0], np.cumsum(seen.sum(axis=1))])
    rows = np.broadcast_to(values, counts.shape)[seen]
    tables = (
        class_offsets.astype(np.int64),
        np.ascontiguousarray(counts[seen], dtype=np.int64),
        np.ascontiguousarray(rows[:, None], dtype=np.int64),
    )
    return coded, tables


def _class_cost(n_classes: int, n: int, K: int) -> tuple[float, float]:
    """(class path, prompt path) operations per replicate, as estimated above
    (constants fitted to the C++ kernels: a binomial of ``m`` draws costs about
    ``60 sqrt(m p (1 - p))`` by inversion while that is small, and a constant
    (BTRD rejection, about 40 prompts' worth) beyond; a prompt costs a quarter
    Philox block, one count and ``K`` products)."""
    c = max(n_classes, 1)
    return c * (8 + 60 * min(math.sqrt(n / c), 2.5)) + c * K, n * (2 + K / 2)


def _row_keys(Z: np.ndarray) -> np.ndarray | None:
    """One int64 key per row of ``Z (n, K)`` ordered as the rows
    lexicographically (column 0 most significant; mixed radix of the column
    ranges), or ``None`` when the ranges do not fit in 62 bits."""
    lo = Z.min(axis=0)
    span = Z.max(axis=0) - lo + 1
    if float(np.prod(span.astype(np.float64))) >= 2.0**62:
        return None
    key = np.zeros(Z.shape[0], dtype=np.int64)
    for k in range(Z.shape[1]):
        key = key * span[k] + (Z[:, k] - lo[k])
    return key


def _distinct_rows(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows ascending, their counts) of ``Z (n, K)`` int64."""
    key = _row_keys(Z)
    if key is None:
        v, c = np.unique(Z, axis=0, return_counts=True)
        return v, c
    lo = Z.min(axis=0)
    span = Z.max(axis=0) - lo + 1
    total = int(np.prod(span)) if Z.shape[0] else 0
    if total <= 4 * Z.shape[0] + 1024:
        # few possible keys (e.g. G + 1 codes): count them, O(n), no sort; the
        # keys ascend as the rows do, so the tables are those of np.unique
        counts = np.bincount(key, minlength=total)
        keys = np.flatnonzero(counts)
        rows = np.empty((keys.size, Z.shape[1]), dtype=np.int64)
        rest = keys.astype(np.int64)
        for k in reversed(range(Z.shape[1])):
            rows[:, k] = rest % span[k] + lo[k]
            rest //= span[k]
        return rows, counts[keys]
    _, first, counts = np.unique(key, return_index=True, return_counts=True)
    return Z[first], counts


def _class_tables(
    coded: _Coded, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per stratum the distinct code rows (ascending) and their prompt counts,
    ``(class_offsets, class_size, class_value (C, K))``, when the class path is the
    cheaper one, else ``None``."""
    K8, K64 = coded.z8.shape[0], coded.z64.shape[0]
    K = K8 + K64
    n = int(offsets[-1])
    single = K8 == 1 and K64 == 0
    if not single:
        if K == 0 or n == 0:
            return None
        # a strided sample rules out most statistics without an (N, K) copy
        step = max(1, n // _CLASS_SAMPLE)
        sample = np.concatenate(
            [coded.z8[:, ::step].astype(np.int64), coded.z64[:, ::step]]
        ).T
        seen = _distinct_rows(np.ascontiguousarray(sample))[0].shape[0]
        cls_cost, prompt_cost = _class_cost(seen, n, K)
        if seen >= _MAX_CLASSES or cls_cost * 4 >= prompt_cost:
            return None
    Z = np.ascontiguousarray(
        np.concatenate([coded.z8.astype(np.int64), coded.z64]).T
    )  # (n, K)
    sizes, values, class_offsets = [], [], [0]
    for s in range(offsets.size - 1):
        v, c = _distinct_rows(Z[offsets[s] : offsets[s + 1]])
        values.append(v)
        sizes.append(c.astype(np.int64))
        class_offsets.append(class_offsets[-1] + v.shape[0])
        if class_offsets[-1] > _MAX_CLASSES and not single:
            return None
    C = class_offsets[-1]
    if not single:
        cls_cost, prompt_cost = _class_cost(C, n, K)
        if cls_cost * 4 >= prompt_cost:
            return None
    return (
        np.asarray(class_offsets, dtype=np.int64),
        np.concatenate(sizes),
        np.ascontiguousarray(np.concatenate(values), dtype=np.int64),
    )


def _binomial_thresholds(g: int) -> np.ndarray:
    """``T[s, k] = floor(2^32 F(k; g, s / g))``, shape ``(g + 1, g)``, uint64."""
    s = np.arange(g + 1)[:, None]
    k = np.arange(g)[None, :]
    F = stats.binom.cdf(k, g, s / g)
    T = np.floor(np.clip(F, 0.0, 1.0) * 2.0**32)
    return T.astype(np.uint64)
