"""Streaming bootstrap intervals for every capfront estimate (design §7).

``capfront.bootstrap(results, statistic, ...)`` resamples prompts with replacement
(optionally within strata, optionally two-level) and returns percentile, BCa or
basic intervals. It never holds ``n_resamples x N`` numbers: replicates are made in
chunks and only their statistic values are kept.

Import path: ``from capfront.bootstrap import bootstrap`` (the package attribute
``capfront.bootstrap`` is the same function).

Decomposable statistics
-----------------------
Most statistics are ``finalize(mean_n V[n, :])`` for per-prompt values
``V (N, K)``: the naive oracle (``V = max_l p_hat``), the best single model
(``V = p_hat``, ``finalize = max``), the oracle gain (both), and every debiased
estimator of :func:`capfront.debias.decomposition`. A replicate with draw counts
``c_n`` (``sum_n c_n = N``) then only needs the weighted column means
``m_k = sum_n c_n V[n, k] / N``. Columns are stored as integers,
``V[n, k] = scale_k Z[k, n]``: int8 codes where ``V`` takes few values
(``p_hat = S / G`` has ``G + 1``), otherwise 53-bit fixed point
(``N max|Z| <= 2^52``, a relative quantisation step of ``N 2^-52`` of the column's
largest value). The weighted sums are exact integers, so a replicate is the same
number for any backend, thread count and summation order; ``finalize`` (shared
Python code) runs on all replicates of a chunk at once.

Random stream (Philox4x32-10, key = ``seed``)
--------------------------------------------
Word ``w`` of stream ``s`` for replicate ``b`` is lane ``w % 4`` of the Philox
block with counter ``(j mod 2^32, b, s, j >> 32)``, ``j = w // 4``, under the key
``(seed mod 2^32, seed >> 32)`` (see :mod:`capfront._philox`).

- Stream 0, prompts: prompts are listed by stratum (strata sorted by label, prompts
  in their original order within a stratum; one stratum without ``stratify``).
  Slot ``w`` of stratum ``s`` (positions ``offsets[s] <= w < offsets[s+1]``,
  ``n_s`` prompts) draws the prompt at position
  ``offsets[s] + floor(u_w n_s / 2^32)``. Each stratum keeps its size exactly;
  the multiply-shift map deviates from uniform by less than ``n_s / 2^32``
  relative (1e-4 at 400,000 prompts).
- Stream 1, two-level cells: slot ``w``'s cell ``l`` takes word ``w L + l`` and
  inverts the ``Bin(G, p_hat)`` CDF: ``S* = #{k < G : u >= T[S, k]}`` with
  ``T[S, k] = floor(2^32 F(k; G, S / G))``.

- Stream 2, statistics of one int8 column (the naive oracle with equal ``G``):
  the replicate's sum depends only on how many draws land in each value class, a
  multinomial drawn class by class within each stratum as conditional binomials,
  ``M_c ~ Bin(draws left, n_c / prompts left)`` (classes in ascending value);
  binomial ``j`` takes words ``2j, 2j+1`` as a 53-bit uniform and inverts the
  running sums of the binomial weights built by the ratio recursion from the mode
  (only ``+ * /`` in a fixed order: the same integer in every backend; tails below
  ``1e-17`` of the mode's weight are dropped). ``O(classes sqrt(N))`` per
  replicate instead of ``O(N)``.

Multinomial counts (rather than Poisson weights) keep ``sum_n c_n = N`` and the
strata sizes exact, which the percentile and BCa theory assume; counter-based
words make replicate ``b`` computable on any thread.

Non-decomposable statistics
---------------------------
- frontier metrics (``"frontier_error_reduction"``, ``"frontier_cost_reduction"``,
  ``"aiq"``): the hull segments are sorted once; each replicate re-weights them
  (slopes do not change under reweighting) -- ``O(segments)`` per replicate;
- a Python callable ``statistic(EvalResults) -> float``: the slow path, one
  resampled :class:`EvalResults` per replicate (prompts relabelled ``0..N-1``).

BCa acceleration: from the empirical influence function for decomposable
statistics (``U_n = grad finalize(m) . (V_n - m)``, numerical gradient, ``O(N K)``)
and a grouped jackknife (100 groups, prompt ``n`` in group ``n mod 100``)
otherwise; never ``O(N^2)``.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special, stats

from . import _philox
from ._backend import core, get_num_threads, resolve_backend
from ._numba_bootstrap import (
    bootstrap_class_sums_nb,
    bootstrap_counts_nb,
    bootstrap_sums_nb,
    bootstrap_two_level_sums_nb,
    stream_words_nb,
)
from ._protocol import ResultProtocol
from ._validate import require_results
from .baselines import on_common_prompts
from .results import EvalResults

__all__ = [
    "BUILTIN_STATISTICS",
    "BootstrapResult",
    "bootstrap",
    "replicate_counts",
]

METHODS = ("percentile", "bca", "basic")
STRATIFY = (None, "benchmark", "topic")
_ORACLE_STATS = ("naive_oracle", "best_single", "oracle_gain")
_DEBIAS_STATS = (
    "naive",
    "bootstrap_bc",
    "double_bc",
    "crossfit",
    "extrapolation",
    "jackknife",
    "pgm",
)
_FRONTIER_STATS = {
    "frontier_error_reduction": "error_reduction",
    "frontier_cost_reduction": "cost_reduction",
    "aiq": "aiq",
}
BUILTIN_STATISTICS = _ORACLE_STATS + _DEBIAS_STATS + tuple(_FRONTIER_STATS)
_FIXED_BITS = 52  # N * max|Z| <= 2^52: float64 sums of the codes stay exact
_JACKKNIFE_GROUPS = 100
_PROGRESS_AFTER = 1.0  # seconds
_ROWS = 1 << 15  # prompts per chunk when building columns


# --------------------------------------------------------------------------- result
@dataclass(frozen=True)
class BootstrapResult(ResultProtocol):
    """A bootstrap confidence interval (the result protocol: ``value`` is
    ``estimate``).

    Attributes
    ----------
    estimate : the statistic on the data.
    ci : ``(lower, upper)``.
    se : standard deviation of the replicates (``ddof=1``).
    method, level, n_resamples : as requested.
    replicates : ``(n_resamples,)`` replicate values when ``keep_replicates``.
    bias : ``mean(replicates) - estimate``.
    statistic, seed, stratify, two_level, backend : as used.
    acceleration, z0 : BCa's ``a`` and ``z0`` (``None`` for other methods).
    """

    estimate: float
    ci: tuple[float, float]
    se: float
    method: str
    level: float
    n_resamples: int
    statistic: str
    bias: float
    seed: int
    stratify: str | None
    two_level: bool
    backend: str
    replicates: np.ndarray | None = field(default=None, repr=False)
    acceleration: float | None = None
    z0: float | None = None

    @property
    def value(self) -> float:
        return self.estimate

    @property
    def low(self) -> float:
        return self.ci[0]

    @property
    def high(self) -> float:
        return self.ci[1]

    def __float__(self) -> float:
        return self.estimate


# --------------------------------------------------------------------------- strata
@dataclass(frozen=True)
class _Strata:
    order: np.ndarray  # (N,) original prompt index at each stratum-order position
    offsets: np.ndarray  # (S + 1,) int64
    identity: bool

    @property
    def n(self) -> int:
        return int(self.offsets[-1])


def _strata(results: EvalResults, stratify: str | None) -> _Strata:
    N = results.n_prompts
    if stratify is None:
        return _Strata(
            np.arange(N, dtype=np.int64), np.array([0, N], dtype=np.int64), True
        )
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
    return _Strata(order, offsets, bool((order == np.arange(N)).all()))


# --------------------------------------------------------------------------- kernels
def _seed_words(seed: int) -> tuple[int, int]:
    return _philox.philox_key(seed)


def _words(
    seed: int, rep: int, stream: int, start: int, count: int, backend: str
) -> np.ndarray:
    if backend == "cpp":
        return core().philox_words(seed, rep, stream, start, count)
    if backend == "numba":
        lo, hi = _seed_words(seed)
        out = np.empty(count + 4, dtype=np.uint32)
        stream_words_nb(lo, hi, rep, stream, start, count, out)
        return out[:count]
    return _philox.stream_words(seed, rep, stream, start, count)


def _slot_rows(offsets: np.ndarray, words: np.ndarray) -> np.ndarray:
    """Stratum-order position drawn by each slot (stream 0 words)."""
    sizes = np.diff(offsets)
    stratum = np.repeat(np.arange(sizes.size), sizes)
    size = sizes[stratum].astype(np.uint64)
    pos = (words.astype(np.uint64) * size) >> np.uint64(32)
    return offsets[:-1][stratum] + pos.astype(np.int64)


def _counts_np(offsets: np.ndarray, seed: int, b0: int, nb: int) -> np.ndarray:
    n = int(offsets[-1])
    out = np.empty((nb, n), dtype=np.int64)
    for r in range(nb):
        rows = _slot_rows(offsets, _philox.stream_words(seed, b0 + r, 0, 0, n))
        out[r] = np.bincount(rows, minlength=n)
    return out


def _counts(
    offsets: np.ndarray, seed: int, b0: int, nb: int, backend: str
) -> np.ndarray:
    """Draw counts ``(nb, n)`` in stratum order, uint8 in every backend."""
    if backend == "cpp":
        return core().bootstrap_counts(offsets, seed, b0, nb)
    if backend == "numba":
        lo, hi = _seed_words(seed)
        counts = bootstrap_counts_nb(offsets, lo, hi, b0, nb)
    else:
        counts = _counts_np(offsets, seed, b0, nb)
    if counts.size and counts.max() > 255:  # probability < 1/256! per prompt
        raise OverflowError("bootstrap: a prompt was drawn over 255 times")
    return counts.astype(np.uint8)


def _sums_np(
    offsets: np.ndarray, seed: int, b0: int, nb: int, z8: np.ndarray, z64: np.ndarray
) -> np.ndarray:
    """Reference: counts @ Z in float64 -- exact, every partial sum is an integer
    below 2^53 -- tile by tile."""
    n = int(offsets[-1])
    K8, K64 = z8.shape[0], z64.shape[0]
    out = np.zeros((nb, K8 + K64), dtype=np.int64)
    counts = _counts_np(offsets, seed, b0, nb)
    tile = 1 << 16
    for t0 in range(0, n, tile):
        c = counts[:, t0 : t0 + tile].astype(np.float64)
        if K8:
            out[:, :K8] += (c @ z8[:, t0 : t0 + tile].T.astype(np.float64)).astype(
                np.int64
            )
        if K64:
            out[:, K8:] += (c @ z64[:, t0 : t0 + tile].T.astype(np.float64)).astype(
                np.int64
            )
    return out


def _sums(
    offsets: np.ndarray,
    seed: int,
    b0: int,
    nb: int,
    z8: np.ndarray,
    z64: np.ndarray,
    backend: str,
) -> np.ndarray:
    if backend == "cpp":
        return core().bootstrap_sums(offsets, seed, b0, nb, z8, z64)
    if backend == "numba":
        lo, hi = _seed_words(seed)
        return bootstrap_sums_nb(offsets, lo, hi, b0, nb, z8, z64)
    return _sums_np(offsets, seed, b0, nb, z8, z64)


def _binomial_thresholds(g: int) -> np.ndarray:
    """``T[s, k] = floor(2^32 F(k; g, s / g))``, shape ``(g + 1, g)``, uint64."""
    s = np.arange(g + 1)[:, None]
    k = np.arange(g)[None, :]
    F = stats.binom.cdf(k, g, s / g)
    T = np.floor(np.clip(F, 0.0, 1.0) * 2.0**32)
    return T.astype(np.uint64)


def _two_level_draw(
    offsets: np.ndarray,
    seed: int,
    rep: int,
    S_ord: np.ndarray,
    G_ord: np.ndarray,
    tables: dict[int, np.ndarray],
    backend: str,
) -> tuple[np.ndarray, np.ndarray]:
    """(stratum-order rows drawn per slot, S* (n, L)) for one replicate."""
    n, L = S_ord.shape
    rows = _slot_rows(offsets, _words(seed, rep, 0, 0, n, backend))
    u = _words(seed, rep, 1, 0, n * L, backend).reshape(n, L).astype(np.uint64)
    star = np.zeros((n, L), dtype=np.int64)
    step = 4096  # slots per chunk: the threshold gather is (slots, L, G)
    for w0 in range(0, n, step):
        S = S_ord[rows[w0 : w0 + step]]
        G = G_ord[rows[w0 : w0 + step]]
        uc = u[w0 : w0 + step]
        part = star[w0 : w0 + step]
        for g, T in tables.items():
            sel = G == g
            if sel.any():
                part[sel] = (uc[sel][:, None] >= T[S[sel]]).sum(axis=1)
    return rows, star


def _two_level_sums_np(
    offsets: np.ndarray,
    seed: int,
    b0: int,
    nb: int,
    S_ord: np.ndarray,
    T: np.ndarray,
    with_max: bool,
    with_cells: bool,
) -> np.ndarray:
    g = T.shape[1]
    G_ord = np.full(S_ord.shape, g, dtype=np.int64)
    out = []
    for r in range(nb):
        _, star = _two_level_draw(
            offsets, seed, b0 + r, S_ord.astype(np.int64), G_ord, {g: T}, "numpy"
        )
        parts = []
        if with_max:
            parts.append([star.max(axis=1).sum()])
        if with_cells:
            parts.append(star.sum(axis=0))
        out.append(np.concatenate(parts))
    return np.asarray(out, dtype=np.int64).reshape(nb, -1)


def _two_level_sums(
    offsets: np.ndarray,
    seed: int,
    b0: int,
    nb: int,
    S_ord: np.ndarray,
    T: np.ndarray,
    with_max: bool,
    with_cells: bool,
    backend: str,
) -> np.ndarray:
    if backend == "cpp":
        return core().bootstrap_two_level_sums(
            offsets, seed, b0, nb, S_ord, T, with_max, with_cells
        )
    if backend == "numba":
        lo, hi = _seed_words(seed)
        return bootstrap_two_level_sums_nb(
            offsets, lo, hi, b0, nb, S_ord, T, with_max, with_cells
        )
    return _two_level_sums_np(offsets, seed, b0, nb, S_ord, T, with_max, with_cells)


_BINOMIAL_CUT = 1e-17  # kBinomialCut in bootstrap.hpp


def _uniform53(w0: int, w1: int) -> float:
    return (float(w0 >> 5) * 67108864.0 + float(w1 >> 6)) * (1.0 / 9007199254740992.0)


def _binomial_ratio_np(n: int, a: int, b: int, u: float) -> int:
    """Bin(n, a / b): weights relative to the mode by the ratio recursion (running
    products), inversion of their running sums; the same operations, in the same
    order, as ``binomial_ratio`` in bootstrap.hpp."""
    if n == 0 or a == 0:
        return 0
    if a == b:
        return n
    mode = min((n + 1) * a // b, n)
    odds = a / (b - a)
    span = int(50.0 * math.sqrt(n * (a / b) * (1.0 - a / b))) + 100
    k = np.arange(mode, max(0, mode - span), -1, dtype=np.int64)
    down = np.cumprod(k.astype(np.float64) / ((n - k + 1).astype(np.float64) * odds))
    cut = np.flatnonzero(down < _BINOMIAL_CUT)
    down = down[: cut[0] if cut.size else down.size]
    k = np.arange(mode, min(n, mode + span), dtype=np.int64)
    up = np.cumprod(((n - k).astype(np.float64) * odds) / (k + 1).astype(np.float64))
    cut = np.flatnonzero(up < _BINOMIAL_CUT)
    up = up[: cut[0] if cut.size else up.size]
    W = np.cumsum(np.concatenate([down[::-1], [1.0], up]))
    i = min(int(np.searchsorted(W, u * W[-1], side="right")), W.size - 1)
    return mode - down.size + i


def _class_sums_np(
    class_offsets: np.ndarray,
    class_size: np.ndarray,
    class_value: np.ndarray,
    seed: int,
    b0: int,
    nb: int,
) -> np.ndarray:
    n_classes = int(class_offsets[-1])
    out = np.zeros(nb, dtype=np.int64)
    for r in range(nb):
        words = _philox.stream_words(seed, b0 + r, 2, 0, 2 * n_classes)
        total = j = 0
        for s in range(class_offsets.size - 1):
            c0, c1 = int(class_offsets[s]), int(class_offsets[s + 1])
            pop = int(class_size[c0:c1].sum())
            left = pop
            for c in range(c0, c1 - 1):
                u = _uniform53(int(words[2 * j]), int(words[2 * j + 1]))
                m = _binomial_ratio_np(left, int(class_size[c]), pop, u)
                j += 1
                total += int(class_value[c]) * m
                left -= m
                pop -= int(class_size[c])
            total += int(class_value[c1 - 1]) * left
        out[r] = total
    return out


def _class_sums(
    classes: tuple[np.ndarray, np.ndarray, np.ndarray],
    seed: int,
    b0: int,
    nb: int,
    backend: str,
) -> np.ndarray:
    """Sum of the one code column per replicate from multinomial class counts."""
    offsets, size, value = classes
    if backend == "cpp":
        return core().bootstrap_class_sums(offsets, size, value, seed, b0, nb)
    if backend == "numba":
        lo, hi = _seed_words(seed)
        return bootstrap_class_sums_nb(offsets, size, value, lo, hi, b0, nb)
    return _class_sums_np(offsets, size, value, seed, b0, nb)


def _class_tables(
    z: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per stratum, the distinct codes (ascending) and their prompt counts."""
    sizes, values, class_offsets = [], [], [0]
    for s in range(offsets.size - 1):
        v, c = np.unique(z[offsets[s] : offsets[s + 1]], return_counts=True)
        values.append(v.astype(np.int64))
        sizes.append(c.astype(np.int64))
        class_offsets.append(class_offsets[-1] + v.size)
    return (
        np.asarray(class_offsets, dtype=np.int64),
        np.concatenate(sizes),
        np.concatenate(values),
    )


# --------------------------------------------------------------------------- plans
@dataclass
class _Linear:
    """finalize(weighted column means) with integer-coded columns (stratum order)."""

    z8: np.ndarray  # (K8, N) int8
    z64: np.ndarray  # (K64, N) int64
    scale: np.ndarray  # (K,)
    estimate: float
    finalize: Callable[[np.ndarray], np.ndarray]  # (B, K) -> (B,)
    full_mean: np.ndarray  # (K,)
    grad: np.ndarray | None = None  # known gradient of finalize (linear stats)
    two_level: dict[str, Any] | None = None


@dataclass
class _Weighted:
    """value(prompt weights in original order, summing to 1); ``batch`` maps a
    chunk of weight rows ``(nb, N)`` to ``nb`` values at once."""

    value: Callable[[np.ndarray], float]
    estimate: float
    batch: Callable[[np.ndarray], np.ndarray] | None = None


@dataclass
class _Resampled:
    """value(resampled EvalResults): the slow path."""

    value: Callable[[EvalResults], float]
    estimate: float


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

    @property
    def n_columns(self) -> int:
        return len(self.codes) + len(self.fixed)

    def build(
        self,
        finalize: Callable[[np.ndarray], np.ndarray],
        grad: np.ndarray | None = None,
    ) -> _Linear:
        """``finalize`` takes means ``(B, K)`` in insertion order; the kernels hold
        the code columns first, so the plan's finalize permutes back."""
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
        return _Linear(
            np.ascontiguousarray(z8),
            np.ascontiguousarray(z64),
            scale,
            est,
            finalize,
            mean,
            grad,
        )


def _common_draws(results: EvalResults) -> int | None:
    """G when every observed cell has the same number of draws, else None (row
    chunks: no (N, L) temporaries)."""
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


def _oracle_plan(results: EvalResults, name: str, strata: _Strata) -> _Linear:
    N, L = results.n_prompts, results.n_models
    order = None if strata.identity else strata.order
    cols = _Columns(N, order)
    g = _common_draws(results)
    coded = results.is_binary and g is not None and g <= 127
    complete = results.is_complete
    want_max = name in ("naive_oracle", "oracle_gain")
    want_models = name in ("best_single", "oracle_gain")
    S_all, G_all = results.successes, results.n_draws
    # Columns are built from row chunks (contiguous reads of the (N, L) arrays),
    # transposed into (column, prompt) rows.
    n_rows = int(want_max) + (L * (1 + (not complete)) if want_models else 0)
    rows = np.empty((n_rows, N), dtype=np.int8 if coded else np.float64)
    for r0 in range(0, N, _ROWS):
        Gc = G_all[r0 : r0 + _ROWS]
        obs = Gc > 0
        if coded:
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
    for k in range(n_rows):
        is_share = want_models and k >= int(want_max) + L
        if is_share:
            cols.add_codes(rows[k].astype(np.int8), 1.0)
        elif coded:
            cols.add_codes(rows[k], 1.0 / g)
        else:
            cols.add_values(rows[k])
    del rows
    first = 1 if want_max else 0

    def best(m: np.ndarray) -> np.ndarray:
        acc = m[:, first : first + L]
        if not complete:
            share = m[:, first + L : first + 2 * L]
            with np.errstate(invalid="ignore", divide="ignore"):
                acc = np.where(share > 0, acc / share, -np.inf)
        return acc.max(axis=1)

    if name == "naive_oracle":

        def finalize(m: np.ndarray) -> np.ndarray:
            return m[:, 0]

        grad = np.ones(1)
    elif name == "best_single":

        def finalize(m: np.ndarray) -> np.ndarray:
            return best(m)

        grad = None
    else:

        def finalize(m: np.ndarray) -> np.ndarray:
            return m[:, 0] - best(m)

        grad = None
    plan = cols.build(finalize, grad)
    if coded and complete:
        # Two-level fast path: S* ~ Bin(G, p_hat) per cell, columns from S* alone.
        plan.two_level = {"g": g, "with_max": want_max, "with_cells": want_models}
    return plan


def _debias_plan(results: EvalResults, name: str, strata: _Strata) -> _Linear:
    try:
        from .debias import decomposition
    except ImportError as err:
        raise ValueError(
            f"statistic {name!r} needs capfront.debias.decomposition, which is not "
            f"available ({err})"
        ) from None
    dec = decomposition(results, name)
    values, fin = dec
    diag = getattr(dec, "diagnostics", {}) or {}
    return _values_plan(results, values, fin, strata, name, diag)


def _values_plan(
    results: EvalResults,
    values: Any,
    fin: Callable[[np.ndarray], float],
    strata: _Strata,
    name: str,
    diag: dict[str, Any] | None = None,
) -> _Linear:
    """Plan of a decomposable statistic ``fin(mean_n values[n])``."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2 or values.shape[0] != results.n_prompts:
        raise ValueError(
            f"{name}: per-prompt values shaped {values.shape}, expected "
            f"({results.n_prompts}, K)"
        )
    order = None if strata.identity else strata.order
    cols = _Columns(results.n_prompts, order)
    g = _common_draws(results) if results.is_binary else None
    for k in range(values.shape[1]):
        cols.add_values(values[:, k], g)

    def finalize(m: np.ndarray) -> np.ndarray:
        return np.array([float(fin(row)) for row in m])

    diag = diag or {}
    grad = None
    if diag.get("linear"):
        grad = np.asarray(diag.get("grad", np.ones(values.shape[1])), dtype=np.float64)
    plan = cols.build(finalize, grad)
    plan.estimate = float(fin(values.mean(axis=0)))
    return plan


@dataclass(frozen=True)
class PerPrompt:
    """A decomposable statistic given directly: ``finalize(mean_n values[n])`` with
    ``values`` shaped ``(N,)`` or ``(N, K)`` (default finalize: the mean of the
    single column). Pass it as ``statistic`` to :func:`bootstrap` to resample
    prompts on the fast streaming path."""

    values: np.ndarray
    finalize: Callable[[np.ndarray], float] | None = None
    name: str = "per_prompt"
    linear: bool = False


def _frontier_plan(results: EvalResults, name: str) -> _Weighted:
    """Frontier metric of the prehoc naive frontier against the best single model,
    per replicate: the hull segments are sorted once; a replicate re-weights them
    (running sums of ``w[prompt] * dcost``, ``w[prompt] * dquality``) and takes the
    best single model from the weighted column means (one matrix product per chunk
    of replicates)."""
    try:
        from .frontier import _cell_cost, frontier_metrics, frontier_segments
    except ImportError as err:
        raise ValueError(
            f"statistic {name!r} needs capfront.frontier, which is not available "
            f"({err})"
        ) from None
    seg = frontier_segments(results)[0]
    cost = np.asarray(_cell_cost(results, None), dtype=np.float64)
    obs = results.observed
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(obs, results.successes / results.n_draws, 0.0)
    c = np.where(obs, cost, 0.0)
    o = obs.astype(np.float64)
    key = _FRONTIER_STATS[name]
    prompt, dcost, dquality = seg.prompt, seg.dcost, seg.dquality

    def batch(W: np.ndarray) -> np.ndarray:
        W = W / W.sum(axis=1, keepdims=True)
        share = W @ o
        with np.errstate(invalid="ignore", divide="ignore"):
            acc = np.where(share > 0, (W @ p) / share, -np.inf)
            cst = np.where(share > 0, (W @ c) / share, np.inf)
        x0 = W @ seg.base_cost
        y0 = W @ seg.base_quality
        out = np.empty(W.shape[0])
        for r in range(W.shape[0]):
            top = acc[r].max()
            cand = np.flatnonzero(acc[r] == top)
            i = int(cand[np.argmin(cst[r, cand])])
            # zero-weight segments add repeated points, which the metrics allow
            ws = W[r, prompt]
            x = np.concatenate([[x0[r]], x0[r] + np.cumsum(ws * dcost)])
            y = np.concatenate([[y0[r]], y0[r] + np.cumsum(ws * dquality)])
            out[r] = frontier_metrics(
                np.column_stack([x, y]), float(cst[r, i]), float(acc[r, i])
            )[key]
        return out

    def value(w: np.ndarray) -> float:
        return float(batch(np.asarray(w, dtype=np.float64)[None, :])[0])

    N = results.n_prompts
    return _Weighted(value, value(np.full(N, 1.0 / N)), batch)


def _frontier_value(results: EvalResults, name: str) -> float:
    return _frontier_plan(results, name).estimate


def _resampled(
    results: EvalResults, idx: np.ndarray, successes: np.ndarray | None = None
) -> EvalResults:
    """The prompts ``idx`` (repeats allowed) as a new EvalResults, prompts relabelled
    ``0..len(idx)-1``; ``successes`` replaces the counts (two-level, binary)."""
    s = results.stats

    def take(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else a[idx]

    stats_ = s.take(np.asarray(idx), np.arange(results.n_models))
    stats_.prompts = stats_.models = None
    if successes is None:
        scores, mask, latency = (
            take(results.scores),
            take(results.mask),
            take(results.latency),
        )
    else:
        stats_ = stats_.with_counts(successes)
        scores = mask = latency = None
    return EvalResults(
        stats_,
        models=results.models,
        prompts=np.arange(len(idx)),
        benchmark=take(results.benchmark),
        topic=take(results.topic),
        is_binary=results.is_binary,
        scores=scores,
        mask=mask,
        latency=latency,
        truth_p=take(results.truth_p),
        truth=results.truth,
    )


def _plan(
    results: EvalResults, statistic: Any, strata: _Strata, two_level: bool
) -> tuple[str, _Linear | _Weighted | _Resampled]:
    if isinstance(statistic, PerPrompt):
        if two_level:
            raise ValueError(
                "two_level=True needs a statistic computed from the counts; "
                "PerPrompt values are fixed"
            )
        fin = statistic.finalize or (lambda m: float(m[0]))
        diag = {"linear": statistic.finalize is None or statistic.linear}
        return statistic.name, _values_plan(
            results, statistic.values, fin, strata, statistic.name, diag
        )
    if callable(statistic):
        name = getattr(statistic, "__name__", "callable")
        return name, _Resampled(statistic, float(statistic(results)))
    if not isinstance(statistic, str):
        raise ValueError(
            f"statistic must be a name or a callable taking EvalResults, got "
            f"{type(statistic).__name__}"
        )
    name = statistic
    if name in _ORACLE_STATS:
        return name, _oracle_plan(results, name, strata)
    if name in _FRONTIER_STATS:
        if two_level:
            # Segments change with p_hat*: recomputed per replicate (slow path).
            def value(res: EvalResults) -> float:
                return _frontier_value(res, name)

            return name, _Resampled(value, _frontier_value(results, name))
        return name, _frontier_plan(results, name)
    if name in _DEBIAS_STATS:
        if name == "naive":
            plan = _oracle_plan(results, "naive_oracle", strata)
            return name, plan
        plan = _debias_plan(results, name, strata)
        if two_level:

            def value(res: EvalResults) -> float:
                from .debias import decomposition

                d = decomposition(res, name)
                return (
                    float(d.estimate())
                    if hasattr(d, "estimate")
                    else float(d[1](np.asarray(d[0]).mean(axis=0)))
                )

            return name, _Resampled(value, plan.estimate)
        return name, plan
    raise ValueError(
        f"unknown statistic {statistic!r}; use a callable taking EvalResults or one of "
        f"{', '.join(BUILTIN_STATISTICS)}"
    )


# --------------------------------------------------------------------------- progress
class _Progress:
    """A rich progress bar on a terminal for runs projected to take over a second."""

    def __init__(self, total: int, label: str) -> None:
        self.total = total
        self.label = label
        self.enabled = bool(getattr(sys.stderr, "isatty", lambda: False)())
        self.start = time.perf_counter()
        self.bar: Any = None
        self.task: Any = None

    def update(self, done: int) -> None:
        if not self.enabled or done <= 0:
            return
        if self.bar is None:
            elapsed = time.perf_counter() - self.start
            if elapsed * self.total / done - elapsed < _PROGRESS_AFTER:
                return
            try:
                from rich.console import Console
                from rich.progress import Progress
            except ImportError:  # pragma: no cover - rich is a dependency
                self.enabled = False
                return
            self.bar = Progress(console=Console(file=sys.stderr), transient=True)
            self.task = self.bar.add_task(self.label, total=self.total)
            self.bar.start()
        self.bar.update(self.task, completed=done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _chunk_size(n: int, backend: str) -> int:
    if backend == "cpp":
        return int(max(64, min(4096, (1 << 25) // max(n, 1))) // 64 * 64)
    if backend == "numba":
        return int(max(8, min(1024, (1 << 24) // max(n, 1))))
    return int(max(1, min(64, (1 << 21) // max(n, 1))))


# --------------------------------------------------------------------------- replicates
def _linear_replicates(
    plan: _Linear,
    strata: _Strata,
    seed: int,
    B: int,
    backend: str,
    two_level: bool,
    progress: _Progress,
) -> np.ndarray:
    n = strata.n
    reps = np.empty(B)
    chunk = _chunk_size(n, backend)
    tl = plan.two_level if two_level else None
    if tl is not None:
        T = _binomial_thresholds(tl["g"])
        S = tl["S_ord"]
        # a two-level replicate redraws all n L cells: chunks of about 2^23 cell
        # draws per thread keep each kernel call, and so the wait for Ctrl-C, well
        # under a second (replicates are keyed by index: chunking changes nothing)
        threads = get_num_threads() if backend == "cpp" else 1
        per_thread = max(1, (1 << 23) // max(n * S.shape[1], 1))
        chunk = max(1, min(chunk, per_thread * threads))
        scale = np.full(
            (1 if tl["with_max"] else 0) + (S.shape[1] if tl["with_cells"] else 0),
            1.0 / tl["g"],
        )
    classes = None
    if tl is None and plan.z8.shape[0] == 1 and plan.z64.shape[0] == 0:
        # One code column: multinomial class counts, O(classes sqrt(N)) per replicate.
        classes = _class_tables(plan.z8[0], strata.offsets)
        chunk = max(chunk, 1024 if backend != "numpy" else 16)
    for b0 in range(0, B, chunk):
        nb = min(chunk, B - b0)
        if classes is not None:
            sums = _class_sums(classes, seed, b0, nb, backend)[:, None]
            means = sums * (plan.scale / n)
        elif tl is None:
            sums = _sums(strata.offsets, seed, b0, nb, plan.z8, plan.z64, backend)
            means = sums * (plan.scale / n)
        else:
            sums = _two_level_sums(
                strata.offsets,
                seed,
                b0,
                nb,
                S,
                T,
                tl["with_max"],
                tl["with_cells"],
                backend,
            )
            means = sums * (scale / n)
        reps[b0 : b0 + nb] = plan.finalize(means)
        progress.update(b0 + nb)
    return reps


def _count_chunks(
    strata: _Strata, seed: int, B: int, backend: str, progress: _Progress
):  # noqa: ANN202
    n = strata.n
    chunk = max(1, min(_chunk_size(n, backend), 64))
    for b0 in range(0, B, chunk):
        nb = min(chunk, B - b0)
        counts = _counts(strata.offsets, seed, b0, nb, backend)
        if not strata.identity:
            unperm = np.empty_like(counts)
            unperm[:, strata.order] = counts
            counts = unperm
        yield b0, counts
        progress.update(b0 + nb)


def _weighted_replicates(
    plan: _Weighted,
    strata: _Strata,
    seed: int,
    B: int,
    backend: str,
    progress: _Progress,
) -> np.ndarray:
    reps = np.empty(B)
    n = strata.n
    for b0, counts in _count_chunks(strata, seed, B, backend, progress):
        W = counts.astype(np.float64) / n
        if plan.batch is not None:
            reps[b0 : b0 + W.shape[0]] = plan.batch(W)
        else:
            for r in range(W.shape[0]):
                reps[b0 + r] = plan.value(W[r])
    return reps


def _resampled_replicates(
    plan: _Resampled,
    results: EvalResults,
    strata: _Strata,
    seed: int,
    B: int,
    backend: str,
    two_level: bool,
    progress: _Progress,
) -> np.ndarray:
    reps = np.empty(B)
    if not two_level:
        for b0, counts in _count_chunks(strata, seed, B, backend, progress):
            for r in range(counts.shape[0]):
                idx = np.repeat(np.arange(strata.n), counts[r].astype(np.int64))
                reps[b0 + r] = plan.value(_resampled(results, idx))
        return reps
    S_ord = np.rint(results.successes[strata.order]).astype(np.int64)
    G_ord = results.n_draws[strata.order].astype(np.int64)
    tables = {int(g): _binomial_thresholds(int(g)) for g in np.unique(G_ord) if g > 0}
    for b in range(B):
        rows, star = _two_level_draw(
            strata.offsets, seed, b, S_ord, G_ord, tables, backend
        )
        reps[b] = plan.value(_resampled(results, strata.order[rows], star))
        progress.update(b + 1)
    return reps


# --------------------------------------------------------------------------- BCa
def _linear_acceleration(plan: _Linear, n: int) -> float:
    """``a = sum U^3 / (6 (sum U^2)^1.5)`` with the influence values
    ``U_n = grad . (V_n - m)``, ``grad`` of finalize at the full-sample means."""
    m = plan.full_mean
    K = m.size
    if plan.grad is not None:
        grad = plan.grad
    else:
        z = [plan.z8, plan.z64]
        sd = np.empty(K)
        k = 0
        for block in z:
            for row in block:
                v = row.astype(np.float64) * plan.scale[k]
                sd[k] = v.std()
                k += 1
        h = np.where(sd > 0, 1e-4 * sd, 1e-6)
        pts = np.repeat(m[None, :], 2 * K, axis=0)
        pts[np.arange(K), np.arange(K)] += h
        pts[K + np.arange(K), np.arange(K)] -= h
        vals = plan.finalize(pts)
        grad = (vals[:K] - vals[K:]) / (2 * h)
        grad = np.where(np.isfinite(grad), grad, 0.0)
    K8, K64 = plan.z8.shape[0], plan.z64.shape[0]
    w8 = grad[:K8] * plan.scale[:K8]
    w64 = grad[K8:] * plan.scale[K8:]
    s2 = s3 = 0.0
    shift = float(grad @ m)
    # Plain ufunc reductions, not BLAS: small products, and BLAS threads spin.
    for r0 in range(0, n, _ROWS):
        u = np.full(min(_ROWS, n - r0), -shift)
        for k in range(K8):
            u += w8[k] * plan.z8[k, r0 : r0 + _ROWS]
        for k in range(K64):
            u += w64[k] * plan.z64[k, r0 : r0 + _ROWS].astype(np.float64)
        u2 = u * u
        s2 += float(u2.sum())
        s3 += float((u2 * u).sum())
    return 0.0 if s2 <= 0 else s3 / (6.0 * s2**1.5)


def _jackknife_acceleration(values: np.ndarray) -> float:
    d = values.mean() - values
    s2 = float(d @ d)
    return 0.0 if s2 <= 0 else float((d**3).sum() / (6.0 * s2**1.5))


def _weighted_acceleration(plan: _Weighted, n: int) -> float:
    groups = min(_JACKKNIFE_GROUPS, n)
    vals = np.empty(groups)
    gid = np.arange(n) % groups
    for g in range(groups):
        w = (gid != g).astype(np.float64)
        vals[g] = plan.value(w / w.sum())
    return _jackknife_acceleration(vals)


def _resampled_acceleration(plan: _Resampled, results: EvalResults) -> float:
    n = results.n_prompts
    groups = min(_JACKKNIFE_GROUPS, n)
    gid = np.arange(n) % groups
    vals = np.array(
        [
            plan.value(_resampled(results, np.flatnonzero(gid != g)))
            for g in range(groups)
        ]
    )
    return _jackknife_acceleration(vals)


# --------------------------------------------------------------------------- intervals
def _interval(
    reps: np.ndarray,
    estimate: float,
    level: float,
    method: str,
    acceleration: float = 0.0,
) -> tuple[tuple[float, float], float | None]:
    alpha = (1.0 - level) / 2.0
    if method == "percentile":
        lo, hi = np.percentile(reps, [100 * alpha, 100 * (1 - alpha)])
        return (float(lo), float(hi)), None
    if method == "basic":
        lo, hi = np.percentile(reps, [100 * alpha, 100 * (1 - alpha)])
        return (float(2 * estimate - hi), float(2 * estimate - lo)), None
    # BCa (Efron 1987), as scipy.stats.bootstrap: z0 from the share of replicates
    # below the estimate (ties count half), clipped away from 0 and 1.
    B = reps.size
    share = ((reps < estimate).sum() + (reps <= estimate).sum()) / (2.0 * B)
    share = min(max(share, 0.5 / B), 1.0 - 0.5 / B)
    z0 = float(special.ndtri(share))
    za = special.ndtri(alpha)
    ends = []
    for z in (za, -za):
        num = z0 + z
        ends.append(float(special.ndtr(z0 + num / (1.0 - acceleration * num))))
    lo, hi = np.percentile(reps, [100 * ends[0], 100 * ends[1]])
    return (float(lo), float(hi)), z0


# --------------------------------------------------------------------------- API
def _check_int(value: Any, name: str, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if not minimum <= v <= maximum:
        raise ValueError(f"{name} must lie in [{minimum}, {maximum}], got {v}")
    return v


def bootstrap(
    results: EvalResults,
    statistic: str | Callable[[EvalResults], float],
    *,
    n_resamples: int = 10_000,
    level: float = 0.95,
    method: str = "percentile",
    seed: int = 0,
    stratify: str | None = None,
    two_level: bool = False,
    keep_replicates: bool = False,
    backend: str | None = None,
) -> BootstrapResult:
    """Bootstrap confidence interval of a statistic over prompts (design §7).

    Replicate ``b`` draws ``N`` prompts with replacement (multinomial counts
    ``c_n``, within each stratum when ``stratify`` is set) from the Philox4x32-10
    stream of ``seed`` (layout in the module docstring), so the replicates depend
    on the seed only -- not on the backend or the thread count. With
    ``two_level=True`` each drawn cell is then redrawn, ``S* ~ Bin(G, p_hat)``
    (binary scores).

    Intervals at ``alpha = (1 - level) / 2``:

    - ``"percentile"``: the ``alpha`` and ``1 - alpha`` quantiles of the replicates;
    - ``"basic"``: ``(2 theta - q_{1-alpha}, 2 theta - q_alpha)``;
    - ``"bca"`` (Efron 1987): quantiles at
      ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))``, ``z = Phi^-1(alpha), Phi^-1(1 -
      alpha)``, ``z0 = Phi^-1(share of replicates below theta)`` and the
      acceleration ``a = sum U^3 / (6 (sum U^2)^1.5)`` from the empirical influence
      values ``U`` (linearised ``finalize`` for decomposable statistics, a
      100-group jackknife otherwise).

    Parameters
    ----------
    results : EvalResults
    statistic : str or callable
        ``"naive_oracle"`` (``mean_n max_l p_hat``), ``"best_single"`` (``max_l
        A_l``), ``"oracle_gain"`` (naive oracle minus best single), a debiased
        method of :func:`capfront.debias.decomposition` (``"naive"``,
        ``"bootstrap_bc"``, ``"double_bc"``, ``"crossfit"``, ``"extrapolation"``,
        ``"jackknife"``, ``"pgm"``), ``"frontier_error_reduction"``,
        ``"frontier_cost_reduction"``, ``"aiq"`` (prehoc naive frontier on all
        prompts against the best single model), or a callable
        ``f(EvalResults) -> float`` (slow path: one resampled EvalResults per
        replicate, prompts relabelled ``0..N-1``).
    n_resamples : int
        Number of replicates ``B`` (2 to 2^32).
    level : float
        Confidence level in (0, 1).
    method : ``"percentile"`` | ``"bca"`` | ``"basic"``
    seed : int
        Philox key, in ``[0, 2^64)``.
    stratify : None | ``"benchmark"`` | ``"topic"``
        Resample within the groups of these labels (each keeps its size).
    two_level : bool
        Also redraw the generations of every drawn cell (binary scores).
    keep_replicates : bool
        Return the replicate values (``n_resamples`` floats).
    backend : None | ``"cpp"`` | ``"numba"`` | ``"numpy"``

    Returns
    -------
    BootstrapResult
        ``.estimate``, ``.ci``, ``.se``, ``.replicates`` (when kept), ``.method``,
        ``.level``, ``.n_resamples``, ``.bias``.
    """
    require_results(results)
    B = _check_int(n_resamples, "n_resamples", 2, 2**32)
    seed = _check_int(seed, "seed", 0, 2**64 - 1)
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)):
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    if stratify not in STRATIFY:
        raise ValueError(
            f"unknown stratify {stratify!r}; use None, 'benchmark' or 'topic'"
        )
    two_level = bool(two_level)
    if (
        isinstance(statistic, str)
        and statistic in _ORACLE_STATS + tuple(_FRONTIER_STATS)
        and not results.is_complete
    ):
        # single models and oracles are compared on the prompts every model ran
        # (capfront.baselines' rule), so the statistic is the one naive_oracle,
        # best_single and the frontier tables report
        results = on_common_prompts(results)
    if two_level:
        results.require_binary("two_level bootstrap (S* ~ Bin(G, p_hat))")
    name_backend = resolve_backend(backend)
    strata = _strata(results, stratify)
    name, plan = _plan(results, statistic, strata, two_level)
    progress = _Progress(B, f"bootstrap {name}")
    try:
        if isinstance(plan, _Linear):
            if two_level and plan.two_level is None:
                # Ragged draws or graded data: the generic slow path.
                lin = plan

                def value(res: EvalResults) -> float:
                    sub = _plan(res, statistic, _strata(res, None), False)[1]
                    return sub.estimate

                reps = _resampled_replicates(
                    _Resampled(value, lin.estimate),
                    results,
                    strata,
                    seed,
                    B,
                    name_backend,
                    True,
                    progress,
                )
            else:
                if two_level:
                    plan.two_level["S_ord"] = np.ascontiguousarray(
                        np.rint(results.successes[strata.order]).astype(np.uint8)
                    )
                reps = _linear_replicates(
                    plan, strata, seed, B, name_backend, two_level, progress
                )
        elif isinstance(plan, _Weighted):
            reps = _weighted_replicates(plan, strata, seed, B, name_backend, progress)
        else:
            reps = _resampled_replicates(
                plan, results, strata, seed, B, name_backend, two_level, progress
            )
    finally:
        progress.close()
    estimate = float(plan.estimate)
    acceleration = None
    if method == "bca":
        if isinstance(plan, _Linear):
            acceleration = _linear_acceleration(plan, strata.n)
        elif isinstance(plan, _Weighted):
            acceleration = _weighted_acceleration(plan, strata.n)
        else:
            acceleration = _resampled_acceleration(plan, results)
    finite = np.isfinite(reps)
    if not finite.all():
        raise ValueError(
            f"{int((~finite).sum())} of {B} replicates of {name!r} are not finite "
            "(e.g. a model or stratum missing from a resample)"
        )
    ci, z0 = _interval(reps, estimate, level, method, acceleration or 0.0)
    return BootstrapResult(
        estimate=estimate,
        ci=ci,
        se=float(reps.std(ddof=1)),
        method=method,
        level=level,
        n_resamples=B,
        statistic=name,
        bias=float(reps.mean() - estimate),
        seed=seed,
        stratify=stratify,
        two_level=two_level,
        backend=name_backend,
        replicates=reps if keep_replicates else None,
        acceleration=acceleration,
        z0=z0,
    )


# ``capfront.bootstrap`` (the package attribute) is the function; this lets code
# written as ``from capfront import bootstrap as mod; mod.bootstrap(...)`` work too.
bootstrap.bootstrap = bootstrap  # type: ignore[attr-defined]


def replicate_counts(
    results: EvalResults | int,
    n_resamples: int,
    *,
    seed: int = 0,
    stratify: str | None = None,
    start: int = 0,
    backend: str | None = None,
) -> np.ndarray:
    """Draw counts ``(n_resamples, N)`` (uint8) of replicates ``start ..
    start + n_resamples - 1``, prompts in their original order: exactly the
    resamples :func:`bootstrap` uses for the same ``seed`` and ``stratify`` (stream
    0; statistics of a single code column, such as the naive oracle with equal
    ``G``, draw their value-class counts from stream 2 instead).
    ``results`` may be a prompt count (no strata). Holds ``n_resamples x N``
    numbers: call it in chunks."""
    if isinstance(results, EvalResults):
        strata = _strata(results, stratify)
    else:
        n = _check_int(results, "results (a prompt count)", 1, 2**40)
        if stratify is not None:
            raise ValueError("stratify needs EvalResults with labels")
        strata = _Strata(np.arange(n, dtype=np.int64), np.array([0, n], np.int64), True)
    nb = _check_int(n_resamples, "n_resamples", 0, 2**32)
    start = _check_int(start, "start", 0, 2**32 - nb)
    seed = _check_int(seed, "seed", 0, 2**64 - 1)
    counts = _counts(strata.offsets, seed, start, nb, resolve_backend(backend))
    if strata.identity:
        return counts
    out = np.empty_like(counts)
    out[:, strata.order] = counts
    return out
