"""The graded-score Monte Carlo kernels (``cpp/include/capfront/graded.hpp``,
``src/register_graded.cpp``; the algorithm: :mod:`capfront.debias.graded`): the
NumPy reference and the Numba port side by side.

Kernels (``scores``, ``valid``: ``(N, L, G)`` float64 and bool, C-contiguous;
``pk``, ``mk``: uint32 prompt and model stream keys; ``seed`` below 2^64):

- ``graded_crossfit_rows(scores, valid, pk, mk, seed, n_splits) -> (N,)``;
- ``graded_curve_rows(scores, valid, sizes, pk, mk, seed, n_splits)
  -> (N, len(sizes))``.

Each cell's valid draws are shuffled by forward Fisher-Yates (stopping after the
largest prefix needed) with words of its own Philox4x32-10 stream (rep = prompt
key, stream = model key; split ``s`` uses words ``s * stride ..``, ``stride = 4
ceil(m / 4)``), so the result does not depend on the thread count; prefix sums and
all reductions run in the same order in the three backends (model by model over
chunks of splits, then split by split), so the numbers agree bit for bit.
"""

from __future__ import annotations

import numpy as np

from .._backend import core
from .._jit import njit, prange
from .._philox import philox4x32_10, philox_key
from . import Kernel, register
from .bootstrap import stream_words_nb

TIE_TOL = 1e-12
"""Selection-half means within this of the best count as tied (the value is shared)."""

_NUMPY_CHUNK = 512  # prompts per NumPy chunk (memory only; results do not depend on it)


# ------------------------------------------------------------------ NumPy reference
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


# ------------------------------------------------------------------ Numba port
_GRAIN = 16  # prompts per parallel chunk (as in the C++ kernel; results don't care)
_SPLIT_CHUNK = 64  # splits per batch of words (results don't care)


@njit
def _load(scores, valid, n, compact, count, total):
    """Compacts prompt n's valid draws per model (and sums them in that order);
    returns the fewest of an observed model (0 if none)."""
    L = scores.shape[1]
    G = scores.shape[2]
    gmin = 0
    for l in range(L):
        m = 0
        acc = 0.0
        for k in range(G):
            if valid[n, l, k]:
                compact[l, m] = scores[n, l, k]
                acc += scores[n, l, k]
                m += 1
        count[l] = m
        total[l] = acc
        if m > 0 and (gmin == 0 or m < gmin):
            gmin = m
    return gmin


@njit
def _shuffle_prefix(compact, l, m, k, words, w0, a, csum):
    """First k steps of the forward Fisher-Yates shuffle of model l's m draws with
    words[w0 + i], then the prefix sums csum[0..k]."""
    for i in range(m):
        a[i] = compact[l, i]
    for i in range(k):
        w = np.uint64(words[w0 + i])
        j = i + np.int64((w * np.uint64(m - i)) >> np.uint64(32))
        t = a[i]
        a[i] = a[j]
        a[j] = t
    csum[0] = 0.0
    for i in range(k):
        csum[i + 1] = csum[i] + a[i]


@njit
def _crossfit_value_nb(sel, rest, count):
    best = -np.inf
    for l in range(sel.shape[0]):
        if count[l] > 0 and sel[l] > best:
            best = sel[l]
    acc = 0.0
    n_tied = 0
    for l in range(sel.shape[0]):
        if count[l] > 0 and sel[l] >= best - TIE_TOL:
            acc += rest[l]
            n_tied += 1
    return acc / n_tied


@njit(inline="always")
def _split_words(seed_lo, seed_hi, prompt_key, model_key, m, s0, ns, words):  # noqa: ANN001, ANN202
    """Fill ``words`` with the Philox words of splits ``s0 .. s0 + ns - 1`` of one
    cell (stream: rep = prompt key, stream = model key) and return the stride: a
    split of ``m`` draws uses ``m`` words rounded up to whole 4-word blocks."""
    stride = 4 * ((m + 3) // 4)
    stream_words_nb(
        seed_lo, seed_hi, prompt_key, model_key, s0 * stride, ns * stride, words
    )
    return stride


@njit(parallel=True)
def graded_crossfit_rows_nb(
    scores, valid, prompt_key, model_key, seed_lo, seed_hi, n_splits
):
    """Monte Carlo cross-fit value per prompt, ``(N,)``."""
    N, L, G = scores.shape
    out = np.empty(N)
    n_chunks = (N + _GRAIN - 1) // _GRAIN
    for c in prange(n_chunks):
        compact = np.empty((L, max(G, 1)))
        count = np.zeros(L, dtype=np.int64)
        total = np.zeros(L)
        a = np.empty(max(G, 1))
        csum = np.empty(G + 1)
        words = np.empty(_SPLIT_CHUNK * 4 * ((G + 3) // 4), dtype=np.uint32)
        sel1 = np.zeros((_SPLIT_CHUNK, L))
        rest1 = np.zeros((_SPLIT_CHUNK, L))
        sel2 = np.zeros((_SPLIT_CHUNK, L))
        rest2 = np.zeros((_SPLIT_CHUNK, L))
        for n in range(c * _GRAIN, min(N, (c + 1) * _GRAIN)):
            gmin = _load(scores, valid, n, compact, count, total)
            if gmin == 0:
                out[n] = np.nan
                continue
            g1 = gmin // 2
            g2 = gmin - g1
            acc = 0.0
            for s0 in range(0, n_splits, _SPLIT_CHUNK):
                ns = min(_SPLIT_CHUNK, n_splits - s0)
                for l in range(L):
                    m = count[l]
                    if m == 0:
                        continue
                    stride = _split_words(
                        seed_lo, seed_hi, prompt_key[n], model_key[l], m, s0, ns, words
                    )
                    for t in range(ns):
                        _shuffle_prefix(compact, l, m, g2, words, t * stride, a, csum)
                        sel1[t, l] = csum[g1] / g1
                        rest1[t, l] = (total[l] - csum[g1]) / (m - g1)
                        sel2[t, l] = csum[g2] / g2
                        rest2[t, l] = (total[l] - csum[g2]) / (m - g2)
                for t in range(ns):
                    v1 = _crossfit_value_nb(sel1[t], rest1[t], count)
                    if g1 == g2:
                        acc += v1
                    else:
                        v2 = _crossfit_value_nb(sel2[t], rest2[t], count)
                        acc += 0.5 * (v1 + v2)
            out[n] = acc / n_splits
    return out


@njit(parallel=True)
def graded_curve_rows_nb(
    scores, valid, sizes, prompt_key, model_key, seed_lo, seed_hi, n_splits
):
    """Monte Carlo subsample curve per prompt, ``(N, len(sizes))``."""
    N, L, G = scores.shape
    K = sizes.shape[0]
    out = np.empty((N, K))
    n_chunks = (N + _GRAIN - 1) // _GRAIN
    for c in prange(n_chunks):
        compact = np.empty((L, max(G, 1)))
        count = np.zeros(L, dtype=np.int64)
        total = np.zeros(L)
        a = np.empty(max(G, 1))
        csum = np.empty(G + 1)
        words = np.empty(_SPLIT_CHUNK * 4 * ((G + 3) // 4), dtype=np.uint32)
        best = np.empty((_SPLIT_CHUNK, K))
        k_max = 0
        for k in range(K):
            k_max = max(k_max, sizes[k])
        acc = np.empty(K)
        for n in range(c * _GRAIN, min(N, (c + 1) * _GRAIN)):
            gmin = _load(scores, valid, n, compact, count, total)
            if gmin == 0:
                out[n, :] = np.nan
                continue
            acc[:] = 0.0
            for s0 in range(0, n_splits, _SPLIT_CHUNK):
                ns = min(_SPLIT_CHUNK, n_splits - s0)
                best[:ns] = -np.inf
                for l in range(L):
                    m = count[l]
                    if m == 0:
                        continue
                    stride = _split_words(
                        seed_lo, seed_hi, prompt_key[n], model_key[l], m, s0, ns, words
                    )
                    for t in range(ns):
                        _shuffle_prefix(
                            compact, l, m, k_max, words, t * stride, a, csum
                        )
                        for k in range(K):
                            v = csum[sizes[k]] / sizes[k]
                            if v > best[t, k]:
                                best[t, k] = v
                for t in range(ns):
                    for k in range(K):
                        acc[k] += best[t, k]
            for k in range(K):
                out[n, k] = acc[k] / n_splits
    return out


# ------------------------------------------------------------------ registry
# thin entries: each looks its implementation up when called (tests replace the
# NumPy reference to see which path runs)
def graded_crossfit_rows_numpy(scores, valid, pk, mk, seed, n_splits):
    return _crossfit_rows_np(scores, valid, pk, mk, seed, n_splits)


def graded_crossfit_rows_numba(scores, valid, pk, mk, seed, n_splits):
    lo, hi = philox_key(seed)
    return graded_crossfit_rows_nb(scores, valid, pk, mk, lo, hi, n_splits)


def graded_crossfit_rows_cpp(scores, valid, pk, mk, seed, n_splits):
    return core().graded_crossfit_rows(scores, valid, pk, mk, seed, n_splits)


def graded_curve_rows_numpy(scores, valid, sizes, pk, mk, seed, n_splits):
    return _curve_rows_np(scores, valid, sizes, pk, mk, seed, n_splits)


def graded_curve_rows_numba(scores, valid, sizes, pk, mk, seed, n_splits):
    lo, hi = philox_key(seed)
    return graded_curve_rows_nb(scores, valid, sizes, pk, mk, lo, hi, n_splits)


def graded_curve_rows_cpp(scores, valid, sizes, pk, mk, seed, n_splits):
    return core().graded_curve_rows(scores, valid, sizes, pk, mk, seed, n_splits)


for _name, _np, _nb, _cpp in (
    (
        "graded_crossfit_rows",
        graded_crossfit_rows_numpy,
        graded_crossfit_rows_numba,
        graded_crossfit_rows_cpp,
    ),
    (
        "graded_curve_rows",
        graded_curve_rows_numpy,
        graded_curve_rows_numba,
        graded_curve_rows_cpp,
    ),
):
    register(Kernel(_name, numpy=_np, numba=_nb, cpp=_cpp, family="graded"))
