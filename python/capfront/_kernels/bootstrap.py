"""Streaming-bootstrap kernels (``cpp/include/capfront/bootstrap.hpp``,
``src/register_bootstrap.cpp``): the NumPy reference and its Numba port side by
side, and the C++ binding, as registry entries of :mod:`capfront._kernels`.

Every kernel reads the counter-based Philox4x32-10 stream of :mod:`capfront._philox`:
word ``w`` of stream ``s`` for replicate ``b`` is lane ``w % 4`` of the block with
counter ``(j mod 2^32, b, s, j >> 32)``, ``j = w // 4``, key ``(seed mod 2^32,
seed >> 32)``. Prompts are in stratum order: stratum ``s`` holds positions
``offsets[s] <= i < offsets[s + 1]``.

Kernels (same arguments and bit-identical results in the three backends):

- ``philox_words(seed, rep, stream, start, count)``: the words, uint32;
- ``bootstrap_counts(offsets, seed, b0, nb)``: draw counts ``(nb, n)`` uint8: slot
  ``w`` of stratum ``s`` (``n_s`` prompts) draws position
  ``offsets[s] + floor(u_w n_s / 2^32)``, ``u_w`` word ``w`` of stream 0;
- ``bootstrap_sums(offsets, seed, b0, nb, z8, z64)``: exact integer sums
  ``sum_n c_bn Z[k, n]`` of int8 rows ``z8`` then int64 rows ``z64``, ``(nb, K)``;
- ``bootstrap_two_level_sums(offsets, seed, b0, nb, S, T, with_max, with_cells)``:
  prompts as above, then cell ``l`` of slot ``w`` redraws
  ``S* = #{k : u >= T[S, k]}`` with ``u`` word ``w L + l`` of stream 1; sums of
  ``max_l S*`` and/or of each ``S*_l``;
- ``bootstrap_class_counts(class_offsets, class_size, seed, b0, nb)``: multinomial
  counts of value classes ``(nb, C)``: within each stratum, classes in table order,
  ``M_c ~ Bin(draws left, n_c / prompts left)``, binomial ``j`` of replicate ``b``
  drawn exactly from the Philox blocks with counters ``(j, b, 2, t)``, ``t = 0, 1,
  ...``: for ``n min(p, 1 - p) < 10`` by inversion of the 53-bit uniform of words 0,
  1 of block ``t = 0`` on the running sums of the binomial weights built by the ratio
  recursion from the mode (tails below ``1e-17`` of the mode's weight dropped), else
  by Hormann's BTRD rejection (attempt ``t`` from block ``t``; O(1) expected time),
  in the same floating-point operations, in the same order, in every backend
  (``binomial_draws(n, a, b, rep, j, seed)``, outside the registry, exposes the
  sampler for tests);
- ``bootstrap_class_sums(class_offsets, class_size, class_value, seed, b0, nb)``:
  ``sum_c value_c M_c`` per replicate;
- ``row_max_counts(successes, order, offsets, n_values)``: the value classes of
  the per-prompt maximum of a compact uint8 table ``(N, L)``: ``(S, n_values)``
  counts, row ``s`` holding how many positions ``i`` of stratum ``s`` have
  ``max_l successes[order[i], l] = v`` (``order`` empty: position ``i`` is prompt
  ``i``); a maximum ``>= n_values`` is a ``ValueError``;
- ``poisson_sums(keys, values, seed, nb)``: the keyed Poisson bootstrap of
  :func:`capfront.dask.bootstrap`: row ``i`` gets ``w_bi ~ Poisson(1)`` (inversion
  of the 53-bit uniform of words 0, 1 of the block with counter
  ``(key_i mod 2^32, b, 7, key_i >> 32)``), ``(nb, K + 1)`` exact sums
  ``sum_i w_bi values[i, k]`` and ``sum_i w_bi``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _philox
from .._backend import core
from .._jit import njit, prange
from . import _FAMILIES, Kernel, register

_M0 = 0xD2511F53
_M1 = 0xCD9E8D57
_W0 = 0x9E3779B9
_W1 = 0xBB67AE85
_LO = 0xFFFFFFFF


@njit(inline="always")
def philox_block_nb(seed_lo, seed_hi, x0, x1, x2, x3):  # noqa: ANN001
    """The Philox4x32-10 block of counter ``(x0, x1, x2, x3)`` (each below 2^32,
    uint64) under the key ``(seed_lo, seed_hi)``: four lanes below 2^32."""
    mask = np.uint64(_LO)
    s32 = np.uint64(32)
    k0 = np.uint64(seed_lo)
    k1 = np.uint64(seed_hi)
    for r in range(10):
        if r > 0:
            k0 = (k0 + np.uint64(_W0)) & mask
            k1 = (k1 + np.uint64(_W1)) & mask
        p0 = np.uint64(_M0) * x0
        p1 = np.uint64(_M1) * x2
        y0 = (p1 >> s32) ^ x1 ^ k0
        y2 = (p0 >> s32) ^ x3 ^ k1
        x1 = p1 & mask
        x3 = p0 & mask
        x0 = y0
        x2 = y2
    return x0, x1, x2, x3


@njit
def stream_words_nb(seed_lo, seed_hi, rep, stream, start, count, out):  # noqa: ANN001
    """Words [start, start + count) of stream (seed, rep, stream) into out (uint32);
    start is a multiple of 4."""
    j0 = start // 4
    n_blocks = (count + 3) // 4
    mask = np.uint64(_LO)
    s32 = np.uint64(32)
    for b in range(n_blocks):
        j = np.uint64(j0 + b)
        x0, x1, x2, x3 = philox_block_nb(
            seed_lo, seed_hi, j & mask, np.uint64(rep), np.uint64(stream), j >> s32
        )
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


# fc(k) = log k! - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2] for k < 10
_STIRLING_TAIL = np.array(
    [
        0.08106146679532726,
        0.0413406959554093,
        0.02767792568499834,
        0.020790672103765093,
        0.016644691189821193,
        0.013876128823070748,
        0.01189670994589177,
        0.010411265261972096,
        0.009255462182712733,
        0.00833056343336287,
    ]
)
_BTRD_MIN = 10.0  # kBtrdMin in bootstrap.hpp: BTRD for n p >= 10 (p <= 1/2)


@njit
def uniform_open_nb(w0, w1):  # noqa: ANN001
    """``((w0 >> 6) 2^26 + (w1 >> 6) + 1/2) / 2^52``: a uniform in (0, 1), exact."""
    return (float(w0 >> 6) * 67108864.0 + float(w1 >> 6) + 0.5) * (
        1.0 / 4503599627370496.0
    )


@njit
def stirling_tail_nb(k):  # noqa: ANN001
    """``fc(k)``: tabulated below 10, else three terms of Stirling's series."""
    if k < 10:
        return _STIRLING_TAIL[k]
    kp = float(k) + 1.0
    kp2 = kp * kp
    return (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / 1260.0 / kp2) / kp2) / kp


@njit
def btrd_setup_nb(n, p):  # noqa: ANN001
    """BTRD's constants for Bin(n, p), p <= 1/2, n p >= 10 (``Btrd`` in
    bootstrap.hpp): ``(n, p, r, nr, npq, b, a, c, alpha, vr, urvr, m)``."""
    nd = float(n)
    q = 1.0 - p
    r = p / q
    nr = (nd + 1.0) * r
    npq = nd * p * q
    spq = math.sqrt(npq)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = nd * p + 0.5
    alpha = (2.83 + 5.1 / b) * spq
    vr = 0.92 - 4.2 / b
    urvr = 0.86 * vr
    m = float(math.floor((nd + 1.0) * p))
    return (nd, p, r, nr, npq, b, a, c, alpha, vr, urvr, m)


@njit
def btrd_attempt_nb(consts, v, u01):  # noqa: ANN001, C901
    """One BTRD attempt with the open uniforms ``v`` and ``u01``: the draw, or -1
    to try again (``Btrd::attempt`` in bootstrap.hpp, operation for operation)."""
    n, p, r, nr, npq, b, a, c, alpha, vr, urvr, m = consts
    if v <= urvr:  # quick acceptance: the inner box of the hat
        u = v / vr - 0.43
        x = (2.0 * a / (0.5 - abs(u)) + b) * u + c
        if not (x >= 0.0 and x < n + 1.0):
            return -1
        return math.floor(x)
    if v >= vr:
        u = u01 - 0.5
    else:
        u = v / vr - 0.93
        u = (-0.5 if u < 0.0 else 0.5) - u
        v = u01 * vr
    us = 0.5 - abs(u)
    if not us > 0.0:
        return -1
    x = (2.0 * a / us + b) * u + c
    if not (x >= 0.0 and x < n + 1.0):
        return -1
    k = float(math.floor(x))
    v = v * alpha / (a / (us * us) + b)
    km = abs(k - m)
    if km <= 15.0:  # f(k) / f(m) by the ratio recursion
        f = 1.0
        if m < k:
            i = m + 1.0
            while i <= k:
                f = f * (nr / i - r)
                i = i + 1.0
        elif m > k:
            i = k + 1.0
            while i <= m:
                v = v * (nr / i - r)
                i = i + 1.0
        return int(k) if v <= f else -1
    v = math.log(v)  # squeeze around the normal approximation of log f(k) / f(m)
    rho = (km / npq) * (((km / 3.0 + 0.625) * km + 1.0 / 6.0) / npq + 0.5)
    t = -(km * km) / (2.0 * npq)
    if v < t - rho:
        return int(k)
    if v > t + rho:
        return -1
    nm = n - m + 1.0
    h = (
        (m + 0.5) * math.log((m + 1.0) / (r * nm))
        + stirling_tail_nb(int(m))
        + stirling_tail_nb(int(n - m))
    )
    nk = n - k + 1.0
    bound = (
        h
        + (n + 1.0) * math.log(nm / nk)
        + (k + 0.5) * math.log(nk * r / (k + 1.0))
        - stirling_tail_nb(int(k))
        - stirling_tail_nb(int(n - k))
    )
    return int(k) if v <= bound else -1


@njit
def binomial_side_nb(n, a, b):  # noqa: ANN001
    """``(draw, flip, p)`` for Bin(n, a / b): the draw when it is degenerate (else
    -1), whether the sampler draws ``n - X`` from the side ``1 - a / b``, and
    ``p = min(a, b - a) / b``."""
    if n == 0 or a == 0:
        return 0, False, 0.0
    if a == b:
        return n, False, 1.0
    flip = 2 * a > b
    return -1, flip, float(b - a if flip else a) / float(b)


@njit
def binomial_draw_nb(n, a, b, seed_lo, seed_hi, rep, j, w0, w1, w2, w3, w):  # noqa: ANN001
    """Binomial ``j`` of replicate ``rep``, Bin(n, a / b), from the 4 words
    ``w0..w3`` of its first Philox block (counter ``(j, rep, 2, 0)``), attempt
    ``t`` of BTRD from the block ``(j, rep, 2, t)`` (``binomial_draw`` in
    bootstrap.hpp). ``w``: scratch for the inversion."""
    fixed, flip, p = binomial_side_nb(n, a, b)
    if fixed >= 0:
        return fixed
    if float(n) * p < _BTRD_MIN:
        return binomial_ratio_nb(n, a, b, uniform53_nb(w0, w1), w)
    consts = btrd_setup_nb(n, p)
    t = 0
    while True:
        k = btrd_attempt_nb(consts, uniform_open_nb(w0, w1), uniform_open_nb(w2, w3))
        if k >= 0:
            return n - k if flip else k
        t += 1
        w0, w1, w2, w3 = philox_block_nb(
            seed_lo, seed_hi, np.uint64(j), np.uint64(rep), np.uint64(2), np.uint64(t)
        )


@njit
def _ratio_scratch(biggest):  # noqa: ANN001
    # the inversion runs only for n p < 10, where each side of the mode stops within
    # 50 standard deviations + 100 terms (as binomial_ratio_np assumes)
    return np.empty(min(biggest, 1024) + 2)


@njit(parallel=True)
def binomial_draws_nb(n, a, b, rep, j, seed_lo, seed_hi):  # noqa: ANN001
    """Draws ``binomial_draw_nb(n[i], a[i], b[i], ..., rep[i], j[i])``."""
    out = np.empty(n.shape[0], dtype=np.int64)
    for i in prange(n.shape[0]):
        w = _ratio_scratch(n[i] + 1)
        w0, w1, w2, w3 = philox_block_nb(
            seed_lo,
            seed_hi,
            np.uint64(j[i]),
            np.uint64(rep[i]),
            np.uint64(2),
            np.uint64(0),
        )
        out[i] = binomial_draw_nb(
            n[i], a[i], b[i], seed_lo, seed_hi, rep[i], j[i], w0, w1, w2, w3, w
        )
    return out


@njit
def bootstrap_class_sums_nb(
    class_offsets,
    class_size,
    class_value,
    seed_lo,  # noqa: ANN001
    seed_hi,
    b0,
    nb,
):
    """sums[r] = sum_c class_value[c] * M[r, c] of the class counts M."""
    counts = bootstrap_class_counts_nb(
        class_offsets, class_size, seed_lo, seed_hi, b0, nb
    )
    out = np.zeros(nb, dtype=np.int64)
    for r in range(nb):
        for c in range(counts.shape[1]):
            out[r] += counts[r, c] * class_value[c]
    return out


@njit(parallel=True)
def bootstrap_class_counts_nb(class_offsets, class_size, seed_lo, seed_hi, b0, nb):  # noqa: ANN001
    """Class counts (nb, C) by the conditional binomials of bootstrap.hpp."""
    n_strata = class_offsets.shape[0] - 1
    n_classes = class_offsets[n_strata]
    n_binomials = n_classes - n_strata
    biggest = 0
    for s in range(n_strata):
        pop = 0
        for c in range(class_offsets[s], class_offsets[s + 1]):
            pop += class_size[c]
        biggest = max(biggest, pop)
    out = np.zeros((nb, n_classes), dtype=np.int64)
    for r in prange(nb):
        rep = b0 + r
        words = np.empty(4 * n_binomials + 4, dtype=np.uint32)
        stream_words_nb(seed_lo, seed_hi, rep, 2, 0, 4 * n_binomials, words)
        w = _ratio_scratch(biggest + 1)
        j = 0
        for s in range(n_strata):
            c0 = class_offsets[s]
            c1 = class_offsets[s + 1]
            pop = 0
            for c in range(c0, c1):
                pop += class_size[c]
            left = pop
            for c in range(c0, c1 - 1):
                m = binomial_draw_nb(
                    left,
                    class_size[c],
                    pop,
                    seed_lo,
                    seed_hi,
                    rep,
                    j,
                    np.uint64(words[4 * j]),
                    np.uint64(words[4 * j + 1]),
                    np.uint64(words[4 * j + 2]),
                    np.uint64(words[4 * j + 3]),
                    w,
                )
                j += 1
                out[r, c] = m
                left -= m
                pop -= class_size[c]
            out[r, c1 - 1] = left
    return out


@njit(parallel=True)
def _row_max_nb(successes, order, identity, n):  # noqa: ANN001
    top = np.empty(n, dtype=np.uint8)
    L = successes.shape[1]
    for i in prange(n):
        row = np.int64(i)
        if not identity:
            row = order[i]
        m = successes[row, 0]
        for l in range(1, L):
            v = successes[row, l]
            if v > m:
                m = v
        top[i] = m
    return top


@njit
def _stratum_hist_nb(top, offsets, n_values):  # noqa: ANN001
    n_strata = offsets.shape[0] - 1
    out = np.zeros((n_strata, n_values), dtype=np.int64)
    ok = True
    for s in range(n_strata):
        for i in range(offsets[s], offsets[s + 1]):
            v = top[i]
            if v >= n_values:
                ok = False
            else:
                out[s, v] += 1
    return out, ok


_POISSON_STREAM = 7  # Philox stream of the keyed Poisson weights


@njit
def poisson1_nb(u):  # noqa: ANN001
    """Poisson(1) by inversion of a uniform (poisson1 in bootstrap.hpp)."""
    k = 0
    p = 0.36787944117144233  # e^-1
    cdf = p
    while u >= cdf and k < 30:
        k += 1
        p /= k
        cdf += p
    return k


@njit(parallel=True)
def poisson_sums_nb(keys, values, seed_lo, seed_hi, n_resamples):  # noqa: ANN001
    """out[b, :K] = sum_n w_bn values[n], out[b, K] = sum_n w_bn, with
    w_bn ~ Poisson(1) from Philox counter (key_n mod 2^32, b, 7, key_n >> 32)."""
    n, K = values.shape
    out = np.zeros((n_resamples, K + 1), np.int64)
    mask = np.uint64(_LO)
    for b in prange(n_resamples):
        for i in range(n):
            key = np.uint64(keys[i])
            w0, w1, _, _ = philox_block_nb(
                seed_lo,
                seed_hi,
                key & mask,
                np.uint64(b),
                np.uint64(_POISSON_STREAM),
                key >> np.uint64(32),
            )
            w = poisson1_nb(uniform53_nb(w0, w1))
            if w:
                for j in range(K):
                    out[b, j] += w * values[i, j]
                out[b, K] += w
    return out


# ------------------------------------------------------------------ NumPy reference
_BINOMIAL_CUT = 1e-17  # kBinomialCut in bootstrap.hpp


def philox_words_np(seed, rep, stream, start, count):  # noqa: ANN001, ANN201
    return _philox.stream_words(seed, rep, stream, start, count)


def slot_rows(offsets: np.ndarray, words: np.ndarray) -> np.ndarray:
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
        rows = slot_rows(offsets, _philox.stream_words(seed, b0 + r, 0, 0, n))
        out[r] = np.bincount(rows, minlength=n)
    return out


def _as_uint8(counts: np.ndarray) -> np.ndarray:
    if counts.size and counts.max() > 255:  # probability < 1/256! per prompt
        raise OverflowError("bootstrap: a prompt was drawn over 255 times")
    return counts.astype(np.uint8)


def bootstrap_counts_np(offsets, seed, b0, nb):  # noqa: ANN001, ANN201
    return _as_uint8(_counts_np(offsets, seed, b0, nb))


def bootstrap_sums_np(offsets, seed, b0, nb, z8, z64):  # noqa: ANN001, ANN201
    """counts @ Z in float64 -- exact, every partial sum is an integer below 2^53 --
    tile by tile."""
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


def two_level_draw(
    offsets: np.ndarray,
    seed: int,
    rep: int,
    S_ord: np.ndarray,
    G_ord: np.ndarray,
    tables: dict[int, np.ndarray],
    words,  # noqa: ANN001
) -> tuple[np.ndarray, np.ndarray]:
    """(stratum-order rows drawn per slot, S* (n, L)) for one replicate; ``words``
    is a ``philox_words`` implementation."""
    n, L = S_ord.shape
    rows = slot_rows(offsets, words(seed, rep, 0, 0, n))
    u = words(seed, rep, 1, 0, n * L).reshape(n, L).astype(np.uint64)
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


def bootstrap_two_level_sums_np(  # noqa: ANN201
    offsets,
    seed,
    b0,
    nb,
    S_ord,
    T,
    with_max,
    with_cells,  # noqa: ANN001
):
    g = T.shape[1]
    G_ord = np.full(S_ord.shape, g, dtype=np.int64)
    out = []
    for r in range(nb):
        _, star = two_level_draw(
            offsets,
            seed,
            b0 + r,
            S_ord.astype(np.int64),
            G_ord,
            {g: T},
            philox_words_np,
        )
        parts = []
        if with_max:
            parts.append([star.max(axis=1).sum()])
        if with_cells:
            parts.append(star.sum(axis=0))
        out.append(np.concatenate(parts))
    return np.asarray(out, dtype=np.int64).reshape(nb, -1)


def uniform53(w0: int, w1: int) -> float:
    """``((w0 >> 5) 2^26 + (w1 >> 6)) / 2^53``, a uniform in [0, 1)."""
    return (float(w0 >> 5) * 67108864.0 + float(w1 >> 6)) * (1.0 / 9007199254740992.0)


def binomial_ratio_np(n: int, a: int, b: int, u: float) -> int:
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


# the plain-Python bodies of the Numba BTRD steps: the same operations, in order,
# with math.log / math.sqrt (the C library's, as C++ and Numba call)
_btrd_setup = getattr(btrd_setup_nb, "py_func", btrd_setup_nb)
_btrd_attempt = getattr(btrd_attempt_nb, "py_func", btrd_attempt_nb)
_uniform_open = getattr(uniform_open_nb, "py_func", uniform_open_nb)
_binomial_side = getattr(binomial_side_nb, "py_func", binomial_side_nb)


def binomial_draw_np(
    n: int, a: int, b: int, seed: int, rep: int, j: int, first: np.ndarray
) -> int:
    """Binomial ``j`` of replicate ``rep``, Bin(n, a / b): inversion for
    ``n min(p, 1 - p) < 10``, else BTRD, attempt ``t`` from the Philox block with
    counter ``(j, rep, 2, t)`` (``first``: the 4 words of attempt 0); the reference of
    ``binomial_draw`` in bootstrap.hpp."""
    n, a, b = int(n), int(a), int(b)
    fixed, flip, p = _binomial_side(n, a, b)
    if fixed >= 0:
        return fixed
    w = [int(x) for x in first]
    if float(n) * p < _BTRD_MIN:
        return binomial_ratio_np(n, a, b, uniform53(w[0], w[1]))
    consts = _btrd_setup(n, p)
    key = _philox.philox_key(seed)
    t = 0
    while (
        k := _btrd_attempt(consts, _uniform_open(w[0], w[1]), _uniform_open(w[2], w[3]))
    ) < 0:
        t += 1
        w = [int(x) for x in _philox.philox4x32_10(np.array([[j, rep, 2, t]]), key)[0]]
    return n - k if flip else k


def binomial_draws_np(n, a, b, rep, j, seed):  # noqa: ANN001, ANN201
    """Draws ``binomial_draw_np(n[i], a[i], b[i], seed, rep[i], j[i], ...)``."""
    key = _philox.philox_key(seed)
    blocks = _philox.philox4x32_10(
        np.stack([j, rep, np.full_like(rep, 2), np.zeros_like(rep)], axis=1), key
    )
    return np.array(
        [
            binomial_draw_np(*args, seed, r, jj, blk)
            for *args, r, jj, blk in zip(n, a, b, rep, j, blocks, strict=True)
        ],
        dtype=np.int64,
    )


def binomial_draws_numba(n, a, b, rep, j, seed):  # noqa: ANN001, ANN201
    lo, hi = _philox.philox_key(seed)
    return binomial_draws_nb(
        *(np.asarray(x, dtype=np.int64) for x in (n, a, b, rep, j)), lo, hi
    )


def binomial_draws_cpp(n, a, b, rep, j, seed):  # noqa: ANN001, ANN201
    arrays = (np.ascontiguousarray(x, dtype=np.int64) for x in (n, a, b, rep, j))
    return core().binomial_draws(*arrays, seed)


def bootstrap_class_counts_np(class_offsets, class_size, seed, b0, nb):  # noqa: ANN001, ANN201
    n_classes = int(class_offsets[-1])
    n_binomials = n_classes - (class_offsets.size - 1)
    out = np.zeros((nb, n_classes), dtype=np.int64)
    for r in range(nb):
        words = _philox.stream_words(seed, b0 + r, 2, 0, 4 * n_binomials)
        j = 0
        for s in range(class_offsets.size - 1):
            c0, c1 = int(class_offsets[s]), int(class_offsets[s + 1])
            pop = int(class_size[c0:c1].sum())
            left = pop
            for c in range(c0, c1 - 1):
                size = int(class_size[c])
                m = binomial_draw_np(
                    left, size, pop, seed, b0 + r, j, words[4 * j : 4 * j + 4]
                )
                j += 1
                out[r, c] = m
                left -= m
                pop -= size
            out[r, c1 - 1] = left
    return out


def bootstrap_class_sums_np(  # noqa: ANN201
    class_offsets,
    class_size,
    class_value,
    seed,
    b0,
    nb,  # noqa: ANN001
):
    counts = bootstrap_class_counts_np(class_offsets, class_size, seed, b0, nb)
    return counts @ np.asarray(class_value, dtype=np.int64)


def _check_keys(keys) -> np.ndarray:  # noqa: ANN001
    """Prompt keys as int64, refused outside ``[0, 2^62)`` (as the C++ binding:
    the counter holds a key's low and high 32-bit halves, the top two bits are
    reserved)."""
    keys = np.asarray(keys, dtype=np.int64)
    if keys.size and (int(keys.min()) < 0 or int(keys.max()) >= 1 << 62):
        raise ValueError("keys must lie in [0, 2^62)")
    return keys


# the plain-Python body of the Numba function: the same operations, in order
_poisson1 = getattr(poisson1_nb, "py_func", poisson1_nb)


def poisson_sums_np(keys, values, seed, n_resamples):  # noqa: ANN001, ANN201
    """Reference of the keyed Poisson bootstrap sums (one Philox block per row)."""
    keys = _check_keys(keys)
    values = np.asarray(values, dtype=np.int64)
    n, K = values.shape
    pkey = _philox.philox_key(seed)
    out = np.zeros((n_resamples, K + 1), dtype=np.int64)
    for b in range(n_resamples):
        ctr = np.empty((n, 4), dtype=np.uint64)
        ctr[:, 0] = keys.astype(np.uint64) & np.uint64(0xFFFFFFFF)
        ctr[:, 1] = b
        ctr[:, 2] = _POISSON_STREAM
        ctr[:, 3] = keys.astype(np.uint64) >> np.uint64(32)
        words = _philox.philox4x32_10(ctr, pkey)
        w = np.array(
            [_poisson1(uniform53(int(a), int(c))) for a, c in words[:, :2]],
            dtype=np.int64,
        )
        out[b, :K] = w @ values
        out[b, K] = w.sum()
    return out


def _row_max_args(successes, order, offsets, n_values):  # noqa: ANN001, ANN202
    """The arguments of ``row_max_counts`` checked (as the C++ binding) and in the
    kernels' dtypes."""
    S = np.asarray(successes)
    if S.dtype != np.uint8 or S.ndim != 2 or S.shape[1] < 1:
        raise ValueError(
            f"successes must be a uint8 table (N, L) with L >= 1, got {S.dtype} "
            f"shaped {S.shape}"
        )
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or offsets.size < 2 or offsets[0] != 0:
        raise ValueError("offsets must be 1-D with at least 2 entries, from 0")
    if (np.diff(offsets) <= 0).any():
        raise ValueError("offsets must increase strictly (no empty stratum)")
    n = int(offsets[-1])
    order = np.ascontiguousarray(order, dtype=np.int64)
    if order.ndim != 1 or order.size not in (0, n) or (order.size == 0 and n != len(S)):
        raise ValueError(
            "order must be empty (n = N prompts) or hold offsets[-1] prompt indices"
        )
    if order.size and (int(order.min()) < 0 or int(order.max()) >= len(S)):
        raise ValueError("order must hold prompt indices in [0, N)")
    if isinstance(n_values, bool) or not 1 <= int(n_values) <= 256:
        raise ValueError(f"n_values must lie in [1, 256], got {n_values!r}")
    return np.ascontiguousarray(S), order, offsets, int(n_values)


_ROW_MAX_RANGE = "successes: some row maximum is >= n_values"


def row_max_counts_np(successes, order, offsets, n_values):  # noqa: ANN001, ANN201
    S, order, offsets, n_values = _row_max_args(successes, order, offsets, n_values)
    n_strata = offsets.size - 1
    out = np.zeros((n_strata, n_values), dtype=np.int64)
    for s in range(n_strata):
        i0, i1 = int(offsets[s]), int(offsets[s + 1])
        rows = S[i0:i1] if order.size == 0 else S[order[i0:i1]]
        counts = np.bincount(rows.max(axis=1), minlength=256)
        if counts[n_values:].any():
            raise ValueError(_ROW_MAX_RANGE)
        out[s] = counts[:n_values]
    return out


def row_max_counts_numba(successes, order, offsets, n_values):  # noqa: ANN001, ANN201
    S, order, offsets, n_values = _row_max_args(successes, order, offsets, n_values)
    top = _row_max_nb(S, order, order.size == 0, int(offsets[-1]))
    out, ok = _stratum_hist_nb(top, offsets, n_values)
    if not ok:
        raise ValueError(_ROW_MAX_RANGE)
    return out


def row_max_counts_cpp(successes, order, offsets, n_values):  # noqa: ANN001, ANN201
    return core().row_max_counts(*_row_max_args(successes, order, offsets, n_values))


# ------------------------------------------------------------------ Numba and C++
def _keyed(port: Callable[..., Any], seed_at: int) -> Callable[..., Any]:
    """The Numba port with the kernels' signature: argument ``seed_at`` (the seed)
    passed as its two key words ``(seed mod 2^32, seed >> 32)``."""

    def run(*args: Any) -> Any:
        lo, hi = _philox.philox_key(args[seed_at])
        return port(*args[:seed_at], lo, hi, *args[seed_at + 1 :])

    run.__name__ = port.__name__
    return run


def philox_words_numba(seed, rep, stream, start, count):  # noqa: ANN001, ANN201
    if start % 4:  # as the reference and the C++ binding: whole blocks only
        raise ValueError("start must be a multiple of 4")
    lo, hi = _philox.philox_key(seed)
    out = np.empty(count + 4, dtype=np.uint32)
    stream_words_nb(lo, hi, rep, stream, start, count, out)
    return out[:count]


def bootstrap_counts_numba(offsets, seed, b0, nb):  # noqa: ANN001, ANN201
    lo, hi = _philox.philox_key(seed)
    return _as_uint8(bootstrap_counts_nb(offsets, lo, hi, b0, nb))


bootstrap_sums_numba = _keyed(bootstrap_sums_nb, 1)
bootstrap_two_level_sums_numba = _keyed(bootstrap_two_level_sums_nb, 1)
bootstrap_class_counts_numba = _keyed(bootstrap_class_counts_nb, 2)
bootstrap_class_sums_numba = _keyed(bootstrap_class_sums_nb, 3)
_poisson_sums_numba = _keyed(poisson_sums_nb, 2)


def poisson_sums_numba(keys, values, seed, n_resamples):  # noqa: ANN001, ANN201
    return _poisson_sums_numba(_check_keys(keys), values, seed, n_resamples)


def _binding(name: str) -> Callable[..., Any]:
    """The C++ binding ``capfront._core.<name>`` (looked up at call time)."""

    def run(*args: Any) -> Any:
        return getattr(core(), name)(*args)

    run.__name__ = f"{name}_cpp"
    return run


for _name in _FAMILIES["bootstrap"]:
    register(
        Kernel(
            _name,
            numpy=globals()[f"{_name}_np"],
            numba=globals()[f"{_name}_numba"],
            cpp=globals().get(f"{_name}_cpp") or _binding(_name),
            family="bootstrap",
        )
    )


# ------------------------------------------------------------------ chunk sizes
def replicate_chunk(n: int, backend: str, kind: str = "prompts") -> int:
    """Replicates per kernel call for ``n`` prompts: large enough to amortise the
    call, small enough that a chunk's memory and the wait for Ctrl-C stay small
    (the compiled backends are parallel over the replicates of a chunk).
    ``kind="classes"``: the class-count kernel, whose cost does not grow with
    ``n``."""
    if kind == "classes":
        return 16 if backend == "numpy" else 4096
    if backend == "cpp":
        return int(max(64, min(4096, (1 << 25) // max(n, 1))) // 64 * 64)
    if backend == "numba":
        return int(max(8, min(1024, (1 << 24) // max(n, 1))))
    return int(max(1, min(64, (1 << 21) // max(n, 1))))


def parallel_threads(backend: str) -> int:
    """Threads a kernel call of this backend uses for the two-level chunking (the
    C++ kernels split replicates across the thread pool)."""
    from .._backend import get_num_threads

    return get_num_threads() if backend == "cpp" else 1
