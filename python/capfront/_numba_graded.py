"""Numba kernels of the graded-score Monte Carlo (``cpp/include/capfront/graded.hpp``
describes the algorithm; :mod:`capfront.debias.graded` holds the NumPy reference).

Each cell's valid draws are shuffled by forward Fisher-Yates (stopping after the
largest prefix needed) with words of its own
Philox4x32-10 stream (rep = prompt key, stream = model key; split ``s`` uses words
``s * stride ..``, ``stride = 4 ceil(m / 4)``), so the result does not depend on
the thread count; prefix sums and all reductions run in the same order as the C++
kernel (model by model over chunks of splits, then split by split), so the numbers
agree bit for bit.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit, prange
from ._numba_bootstrap import stream_words_nb

_TIE_TOL = 1e-12
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
def _crossfit_value(sel, rest, count):
    best = -np.inf
    for l in range(sel.shape[0]):
        if count[l] > 0 and sel[l] > best:
            best = sel[l]
    acc = 0.0
    n_tied = 0
    for l in range(sel.shape[0]):
        if count[l] > 0 and sel[l] >= best - _TIE_TOL:
            acc += rest[l]
            n_tied += 1
    return acc / n_tied


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
                    stride = 4 * ((m + 3) // 4)
                    stream_words_nb(
                        seed_lo,
                        seed_hi,
                        prompt_key[n],
                        model_key[l],
                        s0 * stride,
                        ns * stride,
                        words,
                    )
                    for t in range(ns):
                        _shuffle_prefix(compact, l, m, g2, words, t * stride, a, csum)
                        sel1[t, l] = csum[g1] / g1
                        rest1[t, l] = (total[l] - csum[g1]) / (m - g1)
                        sel2[t, l] = csum[g2] / g2
                        rest2[t, l] = (total[l] - csum[g2]) / (m - g2)
                for t in range(ns):
                    v1 = _crossfit_value(sel1[t], rest1[t], count)
                    if g1 == g2:
                        acc += v1
                    else:
                        v2 = _crossfit_value(sel2[t], rest2[t], count)
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
                    stride = 4 * ((m + 3) // 4)
                    stream_words_nb(
                        seed_lo,
                        seed_hi,
                        prompt_key[n],
                        model_key[l],
                        s0 * stride,
                        ns * stride,
                        words,
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
