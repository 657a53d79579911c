"""Cross-fitting (design §4d): select on half the draws, score on the other half.

With counts only, which draws fall in a half is not recorded, so capfront returns the
exact expectation over uniformly random splits: per cell the selection half holds
``X ~ Hypergeom(G, S, g)`` successes, the models are independent, ties are broken
uniformly at random, and both split sizes ``floor(G/2)``, ``ceil(G/2)`` are averaged
("both ways"). No Monte Carlo, so the value is a deterministic function of the
counts and invariant to permuting prompts and models.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from .._backend import core, resolve_backend
from .._numba_debias import crossfit_rows_nb
from ._input import require_min_draws
from .bias_correction import _identity
from .result import Decomposition


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


def crossfit_rows(
    S: np.ndarray, G: np.ndarray, backend: str | None = None
) -> np.ndarray:
    """Expected cross-fit value per prompt, ``(N,)``."""
    name = resolve_backend(backend)
    if name == "cpp":
        return core().crossfit_rows(S, G)
    z, w = _nodes(S.shape[1])
    if name == "numba":
        return crossfit_rows_nb(S, G, z, w)
    out = np.empty(S.shape[0])
    for start in range(0, S.shape[0], 2048):
        sl = slice(start, start + 2048)
        out[sl] = crossfit_rows_np(S[sl], G[sl])
    return out


def crossfit_decomposition(
    S: np.ndarray, G: np.ndarray, *, backend: str | None = None
) -> Decomposition:
    """``O_cf = mean_n E[p_hat_B[n, argmax_l p_hat_A[n, l]]]`` over random halves
    ``A``, ``B`` (design §4d). Biased downward: a conservative lower bound of
    ``O_true``."""
    require_min_draws(G, 2, "crossfit")
    values = crossfit_rows(S, G, backend)[:, None]
    return Decomposition(values, _identity, {"linear": True})
