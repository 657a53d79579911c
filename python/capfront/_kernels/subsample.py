"""Per-prompt subsample curves (``cpp/include/capfront/debias.hpp``,
``subsample_curve_rows``): the NumPy reference beside the Numba port
(:mod:`capfront._numba_debias`).

Kernel ``subsample_curve_rows(successes, n_draws, sizes) -> (N, len(sizes))``: per
prompt, for each size ``g``, the exact expected naive oracle ``E[max_l X_l / g]``
on size-``g`` subsets of each cell's draws (``X_l ~ Hypergeom(G, S, g)``; the
curve of :func:`capfront.subsample_curve` before the mean over prompts).
``successes`` and ``n_draws`` are ``(N, L)`` int64, ``sizes`` int64.
"""

from __future__ import annotations

import numpy as np

from .._backend import core
from .._numba_debias import subsample_curve_rows_nb
from . import Kernel, register


def subsample_curve_rows_np(S: np.ndarray, G: np.ndarray, sizes: np.ndarray):
    """Reference: :func:`capfront.expected_max`'s curve, one prompt at a time."""
    from ..expected_max import _subsample_curve_np

    out = np.empty((S.shape[0], len(sizes)))
    for n in range(S.shape[0]):
        out[n] = _subsample_curve_np(S[n : n + 1], G[n : n + 1], sizes)
    return out


def subsample_curve_rows_cpp(S: np.ndarray, G: np.ndarray, sizes: np.ndarray):
    return core().subsample_curve_rows(S, G, sizes)


register(
    Kernel(
        "subsample_curve_rows",
        numpy=subsample_curve_rows_np,
        numba=subsample_curve_rows_nb,
        cpp=subsample_curve_rows_cpp,
        family="subsample",
    )
)
