"""Graded (non-0/1) scores: seeded Monte Carlo versions of the subsample-based
estimators (``crossfit``, ``extrapolation``, ``jackknife``).

With real-valued scores the counts are not sufficient, so the exact hypergeometric
expectations of the binary path are replaced by an average over ``n_splits`` random
orderings of each cell's valid draws. ``bootstrap_bc`` and ``pgm`` need binomial
counts and refuse graded data.

Random orderings (identical in the three backends: ``cpp``
``cpp/include/capfront/graded.hpp``, ``numba`` :mod:`capfront._numba_graded`, and
the NumPy reference here). The ``m`` valid draws ``a[0..m)`` of a cell, in their
original order, are shuffled by forward Fisher-Yates,
``for i = 0 .. m-2: j = i + ((w[i] * (m - i)) >> 32); swap(a[i], a[j])``
(the first ``k`` steps fix ``a[0..k)``, a uniform random ``k``-subset in random
order, so the compiled kernels stop after the largest prefix they need),
where ``w[i]`` is word ``split * stride + i`` (``stride = 4 ceil(m / 4)``, whole
blocks per split) of the Philox4x32-10 stream of :mod:`capfront._philox` in the
bootstrap's layout, with replicate = the prompt key and stream = the model key
(:func:`capfront._philox.stream_words`). A cell's stream depends only on
``(seed, split, prompt, model)``, so the value does not depend on threads or
chunking. The keys are CRC-32 hashes of the prompt and model labels
(:func:`label_keys`), so permuting the prompts or models of an ``EvalResults``
permutes the per-prompt values along and leaves the estimate unchanged, and
selecting a subset of models keeps the other cells' orderings. Prefix sums
``c[k] = a[0] + ... + a[k-1]``, the cell total ``T`` (summed in the original order)
and every reduction run in one fixed order, so the backends agree to the last bit.
"""

from __future__ import annotations

import operator
import zlib
from collections.abc import Sequence

import numpy as np

from .._backend import core, resolve_backend
from .._numba_graded import graded_crossfit_rows_nb, graded_curve_rows_nb
from .._philox import philox4x32_10, philox_key
from ..results import EvalResults
from .bias_correction import feasible
from .extrapolation import decay_decomposition, fit_sizes
from .result import Decomposition

TIE_TOL = 1e-12
"""Selection-half means within this of the best count as tied (the value is shared)."""

_NUMPY_CHUNK = 512  # prompts per NumPy chunk (memory only; results do not depend on it)


# ----------------------------------------------------------------------- keys
def label_keys(labels: Sequence[object] | np.ndarray) -> np.ndarray:
    """Philox stream keys of prompt or model labels: ``crc32(str(label))``, uint32.

    A key collision between two prompts only correlates their Monte Carlo noise;
    model keys must be distinct (see :func:`model_keys`)."""
    return np.fromiter(
        (zlib.crc32(str(x).encode("utf-8")) for x in labels),
        dtype=np.uint32,
        count=len(labels),
    )


def model_keys(labels: Sequence[object] | np.ndarray) -> np.ndarray:
    """:func:`label_keys`, or the rank of ``str(label)`` when two CRC-32s collide
    (models sharing a stream would have correlated, not independent, orderings)."""
    keys = label_keys(labels)
    if len(np.unique(keys)) < len(keys):
        names = np.array([str(x) for x in labels], dtype=object)
        keys = np.empty(len(names), dtype=np.uint32)
        keys[np.argsort(names, kind="stable")] = np.arange(len(names), dtype=np.uint32)
    return keys


# ----------------------------------------------------------------- validation
def _check(
    scores: np.ndarray,
    valid: np.ndarray | None,
    prompt_key: np.ndarray | None,
    model_key: np.ndarray | None,
    n_splits: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int, np.ndarray]:
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    if scores.ndim != 3:
        raise ValueError(f"scores must be shaped (N, L, G), got {scores.shape}")
    N, L, G = scores.shape
    if valid is None:
        valid = np.ones(scores.shape, dtype=bool)
    valid = np.asarray(valid)
    if valid.shape != scores.shape or valid.dtype != np.bool_:
        raise ValueError(
            f"valid must be a boolean array shaped {scores.shape}, got "
            f"{valid.dtype} {valid.shape}"
        )
    valid = np.ascontiguousarray(valid)
    if not np.isfinite(scores[valid]).all():
        raise ValueError("scores contain NaN or inf among the valid draws")
    pk = np.arange(N, dtype=np.uint32) if prompt_key is None else prompt_key
    mk = np.arange(L, dtype=np.uint32) if model_key is None else model_key
    pk = np.ascontiguousarray(pk, dtype=np.uint32)
    mk = np.ascontiguousarray(mk, dtype=np.uint32)
    if pk.shape != (N,) or mk.shape != (L,):
        raise ValueError(
            f"prompt_key must be shaped ({N},) and model_key ({L},); got "
            f"{pk.shape} and {mk.shape}"
        )
    n_splits = operator.index(n_splits)
    if not 1 <= n_splits < 2**32:
        raise ValueError(f"n_splits must be a positive integer, got {n_splits}")
    seed = operator.index(seed)
    philox_key(seed)  # ValueError outside [0, 2^64)
    count = valid.sum(axis=2)
    if not (count > 0).any(axis=1).all():
        bad = np.flatnonzero(~(count > 0).any(axis=1))[:3]
        raise ValueError(f"prompt(s) {list(bad)} have no model with a valid draw")
    return scores, valid, pk, mk, n_splits, seed, count


# ---------------------------------------------------------- NumPy reference
def _compact(scores: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Each cell's valid draws first, in their original order."""
    order = np.argsort(~valid, axis=2, kind="stable")
    return np.take_along_axis(np.where(valid, scores, 0.0), order, axis=2)


def _words(
    seed: int, split: int, pk: np.ndarray, mk: np.ndarray, count: np.ndarray, G: int
) -> np.ndarray:
    """Words ``0..G-1`` of every cell's ordering in one split, ``(C, L, G)`` uint64:
    word ``split * stride + i`` of the stream (rep = prompt key, stream = model key),
    ``stride = 4 ceil(m / 4)`` (only the first ``m`` of a cell are used)."""
    B = (G + 3) // 4
    blocks = (count.astype(np.uint64) + np.uint64(3)) // np.uint64(4)
    j = np.uint64(split) * blocks[:, :, None] + np.arange(B, dtype=np.uint64)
    ctr = np.empty(j.shape + (4,), dtype=np.uint64)
    ctr[..., 0] = j & np.uint64(0xFFFFFFFF)
    ctr[..., 1] = pk[:, None, None]
    ctr[..., 2] = mk[None, :, None]
    ctr[..., 3] = j >> np.uint64(32)
    words = philox4x32_10(ctr.reshape(-1, 4), philox_key(seed))
    return words.reshape(len(pk), len(mk), 4 * B)[:, :, :G].astype(np.uint64)


def _shuffled_prefix(
    compact: np.ndarray, count: np.ndarray, words: np.ndarray
) -> np.ndarray:
    """Forward Fisher-Yates over each cell's first ``count`` entries (vectorised
    over cells), then prefix sums: ``out[..., k - 1] = c[k]``."""
    a = compact.copy()
    for i in range(a.shape[2] - 1):
        act = count > i + 1
        span = np.where(act, count - i, 1).astype(np.uint64)
        j = i + ((words[:, :, i] * span) >> np.uint64(32)).astype(np.intp)
        j = j[:, :, None]
        ai = a[:, :, i].copy()
        aj = np.take_along_axis(a, j, axis=2)[:, :, 0]
        a[:, :, i] = np.where(act, aj, ai)
        np.put_along_axis(a, j, np.where(act, ai, aj)[:, :, None], axis=2)
    return np.cumsum(a, axis=2)  # sequential, like the compiled loops


def _at(csum: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``c[k]`` per cell for ``k`` broadcastable to ``(C, L)`` (``k >= 1``)."""
    idx = np.broadcast_to(np.maximum(k, 1) - 1, csum.shape[:2])[:, :, None]
    return np.take_along_axis(csum, idx, axis=2)[:, :, 0]


def _crossfit_value(sel: np.ndarray, rest: np.ndarray) -> np.ndarray:
    best = sel.max(axis=1)
    tied = sel >= (best - TIE_TOL)[:, None]
    acc = np.zeros(sel.shape[0])
    for l in range(sel.shape[1]):  # models in order, like the kernels
        acc = acc + np.where(tied[:, l], rest[:, l], 0.0)
    return acc / tied.sum(axis=1)


def _crossfit_rows_np(scores, valid, pk, mk, seed, n_splits) -> np.ndarray:
    N, L, G = scores.shape
    out = np.empty(N)
    for start in range(0, N, _NUMPY_CHUNK):
        sl = slice(start, start + _NUMPY_CHUNK)
        compact = _compact(scores[sl], valid[sl])
        count = valid[sl].sum(axis=2)
        obs = count > 0
        gmin = np.where(obs, count, np.iinfo(np.int64).max).min(axis=1)
        halves = (gmin // 2, gmin - gmin // 2)
        total = _at(np.cumsum(compact, axis=2), count)  # original order
        acc = np.zeros(len(gmin))
        for s in range(n_splits):
            csum = _shuffled_prefix(
                compact, count, _words(seed, s, pk[sl], mk, count, G)
            )
            v = []
            for g in halves:
                with np.errstate(invalid="ignore", divide="ignore"):
                    head = _at(csum, g[:, None])
                    sel = np.where(obs, head / g[:, None], -np.inf)
                    rest = (total - head) / np.where(obs, count - g[:, None], 1)
                v.append(_crossfit_value(sel, rest))
            acc += np.where(halves[0] == halves[1], v[0], 0.5 * (v[0] + v[1]))
        out[sl] = acc / n_splits
    return out


def _curve_rows_np(scores, valid, sizes, pk, mk, seed, n_splits) -> np.ndarray:
    N, L, G = scores.shape
    out = np.empty((N, len(sizes)))
    for start in range(0, N, _NUMPY_CHUNK):
        sl = slice(start, start + _NUMPY_CHUNK)
        compact = _compact(scores[sl], valid[sl])
        count = valid[sl].sum(axis=2)
        obs = count > 0
        acc = np.zeros((compact.shape[0], len(sizes)))
        for s in range(n_splits):
            csum = _shuffled_prefix(
                compact, count, _words(seed, s, pk[sl], mk, count, G)
            )
            for k, g in enumerate(sizes):
                means = np.where(obs, csum[:, :, g - 1] / g, -np.inf)
                acc[:, k] += means.max(axis=1)
        out[sl] = acc / n_splits
    return out


# --------------------------------------------------------------- array API
def graded_crossfit_rows(
    scores: np.ndarray,
    valid: np.ndarray | None = None,
    *,
    n_splits: int = 32,
    seed: int = 0,
    prompt_key: np.ndarray | None = None,
    model_key: np.ndarray | None = None,
    backend: str | None = None,
) -> np.ndarray:
    """Monte Carlo cross-fit value per prompt, ``(N,)``.

    For each of ``n_splits`` seeded orderings of each cell's valid draws and
    ``g`` in ``{floor(gmin/2), ceil(gmin/2)}`` (``gmin``: the prompt's fewest draws
    of an observed cell), select ``l* = argmax_l mean(first g draws)`` and score
    ``mean(the other draws of l*)`` (ties share the value); average over the two
    ``g`` and the splits (design §4d).

    Parameters
    ----------
    scores : (N, L, G) float
    valid : (N, L, G) bool, optional
        Which draws are real (default all); a cell without one was not run.
    n_splits, seed : number of orderings and their seed (``0 <= seed < 2^64``).
    prompt_key, model_key : (N,), (L,) uint32, optional
        Stream keys (default ``arange``); see the module docstring.
    backend : ``"cpp"``, ``"numba"`` or ``"numpy"``.
    """
    scores, valid, pk, mk, n_splits, seed, count = _check(
        scores, valid, prompt_key, model_key, n_splits, seed
    )
    if int(count[count > 0].min()) < 2:
        raise ValueError("crossfit needs at least 2 generations per cell")
    name = resolve_backend(backend)
    if name == "cpp":
        return core().graded_crossfit_rows(scores, valid, pk, mk, seed, n_splits)
    if name == "numba":
        lo, hi = philox_key(seed)
        return graded_crossfit_rows_nb(scores, valid, pk, mk, lo, hi, n_splits)
    return _crossfit_rows_np(scores, valid, pk, mk, seed, n_splits)


def graded_curve_rows(
    scores: np.ndarray,
    valid: np.ndarray | None,
    sizes: Sequence[int] | np.ndarray,
    *,
    n_splits: int = 32,
    seed: int = 0,
    prompt_key: np.ndarray | None = None,
    model_key: np.ndarray | None = None,
    backend: str | None = None,
) -> np.ndarray:
    """Monte Carlo subsample curve per prompt, ``(N, len(sizes))``:
    ``mean over splits of max_l mean(first g draws of cell (n, l))`` for each size
    ``g`` (the graded analogue of the exact curve of design §3). Sizes must lie in
    ``1..`` the fewest valid draws of an observed cell. Other arguments as in
    :func:`graded_crossfit_rows`."""
    scores, valid, pk, mk, n_splits, seed, count = _check(
        scores, valid, prompt_key, model_key, n_splits, seed
    )
    sizes = np.ascontiguousarray(sizes, dtype=np.int64).reshape(-1)
    gmin = int(count[count > 0].min())
    if ((sizes < 1) | (sizes > gmin)).any():
        raise ValueError(f"sizes must lie in 1..{gmin} (the fewest draws of a cell)")
    name = resolve_backend(backend)
    if name == "cpp":
        return core().graded_curve_rows(scores, valid, sizes, pk, mk, seed, n_splits)
    if name == "numba":
        lo, hi = philox_key(seed)
        return graded_curve_rows_nb(scores, valid, sizes, pk, mk, lo, hi, n_splits)
    return _curve_rows_np(scores, valid, sizes, pk, mk, seed, n_splits)


# ------------------------------------------------------------- results API
def _raw(
    results: EvalResults, what: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if results.scores is None:
        raise ValueError(
            f"{what} on graded scores needs the raw (N, L, G) scores; these results "
            "hold only per-cell sums (build them with keep_scores=True)"
        )
    return (
        np.asarray(results.scores, dtype=np.float64),
        results.valid_draws,
        label_keys(results.prompts),
        model_keys(results.models),
    )


def crossfit_graded(
    results: EvalResults,
    *,
    n_splits: int = 32,
    seed: int = 0,
    backend: str | None = None,
) -> Decomposition:
    """Monte Carlo cross-fit oracle on graded scores (design §4d): per prompt
    :func:`graded_crossfit_rows` with streams keyed by the prompt and model labels;
    ``finalize`` is the mean over prompts."""
    scores, valid, pk, mk = _raw(results, "crossfit")
    rows = graded_crossfit_rows(
        scores,
        valid,
        n_splits=n_splits,
        seed=seed,
        prompt_key=pk,
        model_key=mk,
        backend=backend,
    )
    return Decomposition(
        rows[:, None],
        lambda m: float(m[0]),
        {"linear": True, "monte_carlo_splits": n_splits},
    )


def curve_rows_graded(
    results: EvalResults,
    sizes: Sequence[int] | np.ndarray,
    *,
    n_splits: int = 32,
    seed: int = 0,
    backend: str | None = None,
) -> np.ndarray:
    """Per-prompt Monte Carlo subsample curve: ``max_l`` mean of ``g`` random draws
    per cell, averaged over ``n_splits`` seeded orderings, ``(N, len(sizes))``."""
    scores, valid, pk, mk = _raw(results, "the subsample curve")
    return graded_curve_rows(
        scores,
        valid,
        sizes,
        n_splits=n_splits,
        seed=seed,
        prompt_key=pk,
        model_key=mk,
        backend=backend,
    )


def extrapolation_graded(
    results: EvalResults,
    *,
    lam: float | None = None,
    fit_from: int | None = None,
    n_splits: int = 32,
    seed: int = 0,
    backend: str | None = None,
) -> Decomposition:
    """``O_inf`` of ``O_biased(g) = O_inf + a g^-lam`` fitted to the Monte Carlo
    subsample curve (design §4a); needs ``G >= 4``."""
    gmin = results.min_draws
    if gmin < 4:
        raise ValueError(
            "extrapolation (fitting O_inf + a g^-lam) needs at least 4 generations "
            f"per cell; the data has cells with {gmin}"
        )
    if lam is not None and not (0 < float(lam) <= 5):
        raise ValueError(f"lam must lie in (0, 5], got {lam}")
    sizes = fit_sizes(gmin, fit_from)
    rows = curve_rows_graded(
        results, sizes, n_splits=n_splits, seed=seed, backend=backend
    )
    return decay_decomposition(sizes, rows, lam, monte_carlo_splits=n_splits)


def jackknife_graded(
    results: EvalResults,
    *,
    lam: float = 0.5,
    n_splits: int = 32,
    seed: int = 0,
    backend: str | None = None,
) -> Decomposition:
    """Generalised jackknife over generations on the Monte Carlo curve (design §4e):
    ``(G^lam O(G) - (G-1)^lam O(G-1)) / (G^lam - (G-1)^lam)``."""
    g = results.min_draws
    if g < 2:
        raise ValueError("jackknife needs at least 2 generations per cell")
    sizes = np.array([g - 1, g])
    rows = curve_rows_graded(
        results, sizes, n_splits=n_splits, seed=seed, backend=backend
    )
    wa, wb = float(g - 1) ** lam, float(g) ** lam
    grad = np.array([-wa, wb]) / (wb - wa)
    # clipped to [0, 1] like the count-data jackknife (bias_correction.feasible)
    return feasible(
        Decomposition(
            rows,
            lambda m: float(grad @ m),
            {"linear": True, "grad": grad, "lam": lam, "monte_carlo_splits": n_splits},
        )
    )
