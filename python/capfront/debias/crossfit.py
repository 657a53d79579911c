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

from .._kernels import dispatch
from .._kernels.crossfit import crossfit_rows_np  # noqa: F401  (moved there)
from ._input import require_min_draws
from .bias_correction import _identity, by_row_blocks
from .result import Decomposition


def crossfit_rows(
    S: np.ndarray, G: np.ndarray, backend: str | None = None
) -> np.ndarray:
    """Expected cross-fit value per prompt, ``(N,)`` (the ``crossfit_rows``
    kernel of :mod:`capfront._kernels.crossfit`), on counts in any integer
    dtype, in blocks of prompts (:func:`~.bias_correction.by_row_blocks`)."""
    return by_row_blocks(dispatch("crossfit_rows", backend), S, G)


def crossfit_decomposition(
    S: np.ndarray, G: np.ndarray, *, backend: str | None = None
) -> Decomposition:
    """``O_cf = mean_n E[p_hat_B[n, argmax_l p_hat_A[n, l]]]`` over random halves
    ``A``, ``B`` (design §4d). Biased downward: a conservative lower bound of
    ``O_true``."""
    require_min_draws(G, 2, "crossfit")
    values = crossfit_rows(S, G, backend)[:, None]
    return Decomposition(values, _identity, {"linear": True})
