"""Numba kernels of the graded-score Monte Carlo (``cpp/include/capfront/graded.hpp``
describes the algorithm; :mod:`capfront.debias.graded` holds the NumPy reference).

Each cell's valid draws are shuffled by Fisher-Yates with the words of its own
Philox4x32-10 stream, counter ``(i // 4, split, prompt_key, model_key)``, so the
result does not depend on the thread count; prefix sums and all reductions run in
the same order as the C++ kernel, so the numbers agree bit for bit.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit, prange

_M0 = 0xD2511F53
_M1 = 0xCD9E8D57
_W0 = 0x9E3779B9
_W1 = 0xBB67AE85
_LO = 0xFFFFFFFF
_TIE_TOL = 1e-12
_GRAIN = 16  # prompts per parallel chunk (as in the C++ kernel; results don't care)


@njit
def _cell_words(seed_lo, seed_hi, split, pkey, mkey, m, words):
    """Words 0..m-1 (rounded up to whole blocks) of the cell's stream."""
    M0 = np.uint64(_M0)
    M1 = np.uint64(_M1)
    mask = np.uint64(_LO)
    s32 = np.uint64(32)
    for b in range((m + 3) // 4):
        x0 = np.uint64(b)
        x1 = np.uint64(split)
        x2 = np.uint64(pkey)
        x3 = np.uint64(mkey)
        k0 = np.uint64(seed_lo)
        k1 = np.uint64(seed_hi)
        for r in range(10):
            if r > 0:
                k0 = (k0 + np.uint64(_W0)) & mask
                k1 = (k1 + np.uint64(_W1)) & mask
            p0 = M0 * x0
            p1 = M1 * x2
            y0 = (p1 >> s32) ^ x1 ^ k0
            y2 = (p0 >> s32) ^ x3 ^ k1
            x1 = p1 & mask
            x3 = p0 & mask
            x0 = y0
            x2 = y2
        words[4 * b] = x0
        words[4 * b + 1] = x1
        words[4 * b + 2] = x2
        words[4 * b + 3] = x3


@njit
def _load(scores, valid, n, compact, count):
    """Compacts prompt n's valid draws per model; returns the fewest of an
    observed model (0 if none)."""
    L = scores.shape[1]
    G = scores.shape[2]
    gmin = 0
    for l in range(L):
        m = 0
        for k in range(G):
            if valid[n, l, k]:
                compact[l, m] = scores[n, l, k]
                m += 1
        count[l] = m
        if m > 0 and (gmin == 0 or m < gmin):
            gmin = m
    return gmin


@njit
def _shuffle_prefix(compact, l, m, seed_lo, seed_hi, split, pkey, mkey, words, a, csum):
    for k in range(m):
        a[k] = compact[l, k]
    _cell_words(seed_lo, seed_hi, split, pkey, mkey, m, words)
    for i in range(m - 1, 0, -1):
        j = np.int64((words[i] * np.uint64(i + 1)) >> np.uint64(32))
        t = a[i]
        a[i] = a[j]
        a[j] = t
    csum[0] = 0.0
    for k in range(m):
        csum[k + 1] = csum[k] + a[k]


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
        a = np.empty(max(G, 1))
        csum = np.empty(G + 1)
        words = np.empty(4 * ((G + 3) // 4) + 4, dtype=np.uint64)
        sel1 = np.zeros(L)
        rest1 = np.zeros(L)
        sel2 = np.zeros(L)
        rest2 = np.zeros(L)
        for n in range(c * _GRAIN, min(N, (c + 1) * _GRAIN)):
            gmin = _load(scores, valid, n, compact, count)
            if gmin == 0:
                out[n] = np.nan
                continue
            g1 = gmin // 2
            g2 = gmin - g1
            acc = 0.0
            for s in range(n_splits):
                for l in range(L):
                    m = count[l]
                    if m == 0:
                        continue
                    _shuffle_prefix(
                        compact,
                        l,
                        m,
                        seed_lo,
                        seed_hi,
                        s,
                        prompt_key[n],
                        model_key[l],
                        words,
                        a,
                        csum,
                    )
                    sel1[l] = csum[g1] / g1
                    rest1[l] = (csum[m] - csum[g1]) / (m - g1)
                    sel2[l] = csum[g2] / g2
                    rest2[l] = (csum[m] - csum[g2]) / (m - g2)
                v1 = _crossfit_value(sel1, rest1, count)
                if g1 == g2:
                    acc += v1
                else:
                    v2 = _crossfit_value(sel2, rest2, count)
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
        a = np.empty(max(G, 1))
        csum = np.empty(G + 1)
        words = np.empty(4 * ((G + 3) // 4) + 4, dtype=np.uint64)
        best = np.empty(K)
        acc = np.empty(K)
        for n in range(c * _GRAIN, min(N, (c + 1) * _GRAIN)):
            gmin = _load(scores, valid, n, compact, count)
            if gmin == 0:
                out[n, :] = np.nan
                continue
            acc[:] = 0.0
            for s in range(n_splits):
                best[:] = -np.inf
                for l in range(L):
                    m = count[l]
                    if m == 0:
                        continue
                    _shuffle_prefix(
                        compact,
                        l,
                        m,
                        seed_lo,
                        seed_hi,
                        s,
                        prompt_key[n],
                        model_key[l],
                        words,
                        a,
                        csum,
                    )
                    for k in range(K):
                        v = csum[sizes[k]] / sizes[k]
                        if v > best[k]:
                            best[k] = v
                for k in range(K):
                    acc[k] += best[k]
            for k in range(K):
                out[n, k] = acc[k] / n_splits
    return out
