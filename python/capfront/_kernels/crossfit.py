"""Cross-fit rows (``cpp/include/capfront/debias.hpp``, ``crossfit_rows``): the
NumPy reference beside the Numba port (:mod:`capfront._numba_debias`).

Kernel ``crossfit_rows(successes, n_draws) -> (N,)``: per prompt the exact
expected cross-fit value over uniformly random splits of each cell's draws into a
selection half and a scoring half (both split sizes ``floor(g/2)`` and
``ceil(g/2)`` of the prompt's smallest run cell ``g``, averaged): the selection
half holds ``X ~ Hypergeom(G, S, g)`` successes per cell, models independent,
ties broken uniformly at random, integrated exactly by Gauss-Legendre nodes.
``successes`` and ``n_draws`` are ``(N, L)`` int64 (``n_draws == 0``: not run).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from .._backend import core
from .._numba_debias import crossfit_rows_nb
from . import Kernel, register

_ROWS = 2048  # prompts per block of the NumPy reference


def _nodes(L: int) -> tuple[np.ndarray, np.ndarray]:
    # Gauss-Legendre on [0, 1]: exact for the degree-(L-1) polynomial in z.
    z, w = np.polynomial.legendre.leggauss(L // 2 + 1)
    return np.ascontiguousarray(0.5 * (z + 1.0)), np.ascontiguousarray(0.5 * w)


def _split_np(S: np.ndarray, G: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Reference for one split size per row (vectorised over rows)."""
    N, L = S.shape
    obs = G > 0
    out = np.zeros(N)
    gmax = int(g.max())
    a = np.arange(gmax + 1)[None, None, :]
    gg = g[:, None, None]
    pmf = stats.hypergeom.pmf(a, np.maximum(G, 1)[:, :, None], S[:, :, None], gg)
    pmf = np.where(obs[:, :, None] & (a <= gg), pmf, 0.0)
    below = np.cumsum(pmf, axis=2) - pmf  # P(X < a)
    below = np.where(obs[:, :, None], below, 1.0)
    pmf_tie = np.where(obs[:, :, None], pmf, 0.0)
    rest = (S[:, :, None] - a) / np.maximum(G[:, :, None] - gg, 1)
    z, w = _nodes(L)
    for zq, wq in zip(z, w, strict=True):
        fac = below + zq * pmf_tie  # (N, L, A)
        logs = np.log(np.where(fac > 0, fac, 1.0))
        zero = fac <= 0
        tot = logs.sum(axis=1, keepdims=True)
        nzero = zero.sum(axis=1, keepdims=True)
        # prod over m != l without dividing by zero
        others = np.where(nzero - zero > 0, 0.0, np.exp(tot - logs))
        out += wq * (pmf * rest * others).sum(axis=(1, 2))
    return out


def crossfit_rows_np(S: np.ndarray, G: np.ndarray) -> np.ndarray:
    gmin = np.where(G > 0, G, np.iinfo(np.int64).max).min(axis=1)
    g1 = gmin // 2
    g2 = gmin - g1
    v1 = _split_np(S, G, g1)
    v2 = _split_np(S, G, g2)
    return 0.5 * (v1 + v2)


def crossfit_rows_numpy(S: np.ndarray, G: np.ndarray) -> np.ndarray:
    out = np.empty(S.shape[0])
    for start in range(0, S.shape[0], _ROWS):
        sl = slice(start, start + _ROWS)
        out[sl] = crossfit_rows_np(S[sl], G[sl])
    return out


def crossfit_rows_numba(S: np.ndarray, G: np.ndarray) -> np.ndarray:
    return crossfit_rows_nb(S, G, *_nodes(S.shape[1]))


def crossfit_rows_cpp(S: np.ndarray, G: np.ndarray) -> np.ndarray:
    return core().crossfit_rows(S, G)


register(
    Kernel(
        "crossfit_rows",
        numpy=crossfit_rows_numpy,
        numba=crossfit_rows_numba,
        cpp=crossfit_rows_cpp,
        family="crossfit",
    )
)
