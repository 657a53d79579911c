"""Numba kernels of the streaming bootstrap: the same Philox4x32-10 stream, draw
counts and exact integer sums as ``cpp/include/capfront/bootstrap.hpp`` (see that
header and :mod:`capfront.bootstrap` for the layout). Parallel over replicates;
every replicate's result is an exact integer, so it does not depend on the
thread count."""

from __future__ import annotations

import numpy as np

from ._jit import njit, prange

_M0 = 0xD2511F53
_M1 = 0xCD9E8D57
_W0 = 0x9E3779B9
_W1 = 0xBB67AE85
_LO = 0xFFFFFFFF


@njit
def stream_words_nb(seed_lo, seed_hi, rep, stream, start, count, out):  # noqa: ANN001
    """Words [start, start + count) of stream (seed, rep, stream) into out (uint32);
    start is a multiple of 4."""
    j0 = start // 4
    n_blocks = (count + 3) // 4
    M0 = np.uint64(_M0)
    M1 = np.uint64(_M1)
    mask = np.uint64(_LO)
    s32 = np.uint64(32)
    for b in range(n_blocks):
        j = np.uint64(j0 + b)
        x0 = j & mask
        x1 = np.uint64(rep)
        x2 = np.uint64(stream)
        x3 = j >> s32
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
        w = 4 * b
        if w < count:
            out[w] = np.uint32(x0)
        if w + 1 < count:
            out[w + 1] = np.uint32(x1)
        if w + 2 < count:
            out[w + 2] = np.uint32(x2)
        if w + 3 < count:
            out[w + 3] = np.uint32(x3)


@njit
def _counts_into(offsets, seed_lo, seed_hi, rep, words, counts):  # noqa: ANN001
    n = offsets[-1]
    stream_words_nb(seed_lo, seed_hi, rep, 0, 0, n, words)
    counts[:] = 0
    for s in range(offsets.shape[0] - 1):
        lo = offsets[s]
        size = np.uint64(offsets[s + 1] - lo)
        for w in range(lo, offsets[s + 1]):
            pos = (np.uint64(words[w]) * size) >> np.uint64(32)
            counts[lo + np.int64(pos)] += 1


@njit(parallel=True)
def bootstrap_counts_nb(offsets, seed_lo, seed_hi, b0, nb):  # noqa: ANN001
    """Draw counts (nb, n) in stratum order, int64."""
    n = offsets[-1]
    out = np.empty((nb, n), dtype=np.int64)
    for r in prange(nb):
        words = np.empty(n + 4, dtype=np.uint32)
        _counts_into(offsets, seed_lo, seed_hi, b0 + r, words, out[r])
    return out


@njit(parallel=True)
def bootstrap_sums_nb(offsets, seed_lo, seed_hi, b0, nb, z8, z64):  # noqa: ANN001
    """sums[r, k] = sum_n c_rn Z[k, n]: int8 rows z8 then int64 rows z64."""
    n = offsets[-1]
    K8 = z8.shape[0]
    K64 = z64.shape[0]
    out = np.zeros((nb, K8 + K64), dtype=np.int64)
    for r in prange(nb):
        words = np.empty(n + 4, dtype=np.uint32)
        counts = np.empty(n, dtype=np.int64)
        _counts_into(offsets, seed_lo, seed_hi, b0 + r, words, counts)
        for k in range(K8):
            acc = 0
            for i in range(n):
                acc += counts[i] * np.int64(z8[k, i])
            out[r, k] = acc
        for k in range(K64):
            acc = 0
            for i in range(n):
                acc += counts[i] * z64[k, i]
            out[r, K8 + k] = acc
    return out


@njit(parallel=True)
def bootstrap_two_level_sums_nb(
    offsets,
    seed_lo,
    seed_hi,
    b0,
    nb,
    successes,  # noqa: ANN001
    thresholds,
    with_max,
    with_cells,
):
    """Two-level replicates: slot w -> prompt (stream 0), then cell l of the slot
    gets S* = #{k : u >= T[S, k]} with u word w * L + l of stream 1."""
    n = offsets[-1]
    L = successes.shape[1]
    K = (1 if with_max else 0) + (L if with_cells else 0)
    first = 1 if with_max else 0
    out = np.zeros((nb, K), dtype=np.int64)
    chunk = 1024  # slots per batch of cell words (a multiple of 4)
    for r in prange(nb):
        rep = b0 + r
        words = np.empty(n + 4, dtype=np.uint32)
        stream_words_nb(seed_lo, seed_hi, rep, 0, 0, n, words)
        rows = np.empty(n, dtype=np.int64)
        for s in range(offsets.shape[0] - 1):
            lo = offsets[s]
            size = np.uint64(offsets[s + 1] - lo)
            for w in range(lo, offsets[s + 1]):
                rows[w] = lo + np.int64((np.uint64(words[w]) * size) >> np.uint64(32))
        cells = np.empty(chunk * L + 4, dtype=np.uint32)
        for w0 in range(0, n, chunk):
            m = min(chunk, n - w0)
            stream_words_nb(seed_lo, seed_hi, rep, 1, w0 * L, m * L, cells)
            for i in range(m):
                row = rows[w0 + i]
                best = 0
                for l in range(L):
                    u = np.uint64(cells[i * L + l])
                    k = np.searchsorted(thresholds[successes[row, l]], u, side="right")
                    if k > best:
                        best = k
                    if with_cells:
                        out[r, first + l] += k
                if with_max:
                    out[r, 0] += best
    return out


_CUT = 1e-17  # kBinomialCut in bootstrap.hpp


@njit
def uniform53_nb(w0, w1):  # noqa: ANN001
    return (float(w0 >> 5) * 67108864.0 + float(w1 >> 6)) * (1.0 / 9007199254740992.0)


@njit
def binomial_ratio_nb(n, a, b, u, w):  # noqa: ANN001
    """Bin(n, a / b) by the ratio recursion of bootstrap.hpp (w: scratch >= n + 1)."""
    if n == 0 or a == 0:
        return 0
    if a == b:
        return n
    mode = min((n + 1) * a // b, n)
    odds = float(a) / float(b - a)
    # downward weights, written from the mode outwards at the end of the buffer
    x = 1.0
    n_down = 0
    k = mode
    while k > 0:
        nxt = x * (float(k) / (float(n - k + 1) * odds))
        if nxt < _CUT:
            break
        x = nxt
        n_down += 1
        w[n_down - 1] = x
        k -= 1
    # reverse in place so that w[0] is the lowest k
    for i in range(n_down // 2):
        tmp = w[i]
        w[i] = w[n_down - 1 - i]
        w[n_down - 1 - i] = tmp
    size = n_down
    w[size] = 1.0
    size += 1
    x = 1.0
    k = mode
    while k < n:
        nxt = x * ((float(n - k) * odds) / float(k + 1))
        if nxt < _CUT:
            break
        x = nxt
        w[size] = x
        size += 1
        k += 1
    total = 0.0
    for i in range(size):
        total += w[i]
        w[i] = total
    t = u * total
    i = 0
    while i + 1 < size and w[i] <= t:
        i += 1
    return mode - n_down + i


@njit(parallel=True)
def bootstrap_class_sums_nb(
    class_offsets,
    class_size,
    class_value,
    seed_lo,  # noqa: ANN001
    seed_hi,
    b0,
    nb,
):
    n_strata = class_offsets.shape[0] - 1
    n_classes = class_offsets[n_strata]
    biggest = 0
    for s in range(n_strata):
        pop = 0
        for c in range(class_offsets[s], class_offsets[s + 1]):
            pop += class_size[c]
        biggest = max(biggest, pop)
    out = np.zeros(nb, dtype=np.int64)
    for r in prange(nb):
        words = np.empty(2 * n_classes + 4, dtype=np.uint32)
        stream_words_nb(seed_lo, seed_hi, b0 + r, 2, 0, 2 * n_classes, words)
        w = np.empty(biggest + 2)
        total = 0
        j = 0
        for s in range(n_strata):
            c0 = class_offsets[s]
            c1 = class_offsets[s + 1]
            pop = 0
            for c in range(c0, c1):
                pop += class_size[c]
            left = pop
            for c in range(c0, c1 - 1):
                u = uniform53_nb(np.uint64(words[2 * j]), np.uint64(words[2 * j + 1]))
                m = binomial_ratio_nb(left, class_size[c], pop, u, w)
                j += 1
                total += class_value[c] * m
                left -= m
                pop -= class_size[c]
            total += class_value[c1 - 1] * left
        out[r] = total
    return out
