"""Philox4x32-10 in NumPy: the plain reference of the counter-based generator behind
:func:`capfront.bootstrap` (the C++ version is ``cpp/include/capfront/philox.hpp``,
the Numba one in ``_kernels/bootstrap.py``; all three give the same words bit for bit).

Philox4x32-10 (Salmon et al. 2011, Random123) maps a 128-bit counter
``(c0, c1, c2, c3)`` and a 64-bit key ``(k0, k1)`` to four 32-bit words by ten
rounds of

``(c0, c1, c2, c3) <- (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0))``

with ``M0 = 0xD2511F53``, ``M1 = 0xCD9E8D57`` and the key bumped by
``(0x9E3779B9, 0xBB67AE85)`` between rounds. (``numpy.random.Philox`` is the 4x64
variant; this module is checked against the Random123 known-answer vectors.)

Stream layout used by the bootstrap: word ``w`` of stream ``s`` for replicate
``b`` under ``seed`` is lane ``w % 4`` of the block with counter
``(j mod 2^32, b, s, j >> 32)``, ``j = w // 4``, key ``(seed mod 2^32, seed >> 32)``.
"""

from __future__ import annotations

import numpy as np

M0 = np.uint64(0xD2511F53)
M1 = np.uint64(0xCD9E8D57)
W0 = 0x9E3779B9
W1 = 0xBB67AE85
_MASK = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)


def philox_key(seed: int) -> tuple[int, int]:
    """``(seed mod 2^32, seed >> 32)`` for a seed in ``[0, 2^64)``."""
    seed = int(seed)
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must lie in [0, 2^64), got {seed}")
    return seed & 0xFFFFFFFF, seed >> 32


def philox4x32_10(counter: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Philox4x32-10 of counters ``(M, 4)`` under ``key``: ``(M, 4)`` uint32."""
    ctr = np.asarray(counter, dtype=np.uint64).reshape(-1, 4)
    x0, x1, x2, x3 = (ctr[:, i].copy() for i in range(4))
    k0, k1 = int(key[0]) & 0xFFFFFFFF, int(key[1]) & 0xFFFFFFFF
    for r in range(10):
        if r > 0:
            k0 = (k0 + W0) & 0xFFFFFFFF
            k1 = (k1 + W1) & 0xFFFFFFFF
        p0 = M0 * x0  # < 2^64: no overflow
        p1 = M1 * x2
        x0, x1, x2, x3 = (
            (p1 >> _SHIFT) ^ x1 ^ np.uint64(k0),
            p1 & _MASK,
            (p0 >> _SHIFT) ^ x3 ^ np.uint64(k1),
            p0 & _MASK,
        )
    return np.stack([x0, x1, x2, x3], axis=1).astype(np.uint32)


def stream_words(
    seed: int, rep: int, stream: int, start: int, count: int
) -> np.ndarray:
    """Words ``[start, start + count)`` of stream ``stream`` for replicate ``rep``
    (``start`` a multiple of 4), as uint32."""
    if start % 4:
        raise ValueError("start must be a multiple of 4")
    key = philox_key(seed)
    j = np.arange(start // 4, (start + count + 3) // 4, dtype=np.uint64)
    ctr = np.empty((j.size, 4), dtype=np.uint64)
    ctr[:, 0] = j & _MASK
    ctr[:, 1] = rep
    ctr[:, 2] = stream
    ctr[:, 3] = j >> _SHIFT
    return philox4x32_10(ctr, key).reshape(-1)[:count]
