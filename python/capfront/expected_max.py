"""Expected maxima of binomial proportions and the exact subsample curve (design §3),
and the unbiased pass@k."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._kernels import dispatch

# the NumPy reference of the curve under its old name (debias/extrapolation.py)
from ._kernels.expected_max import (  # noqa: F401
    subsample_curve_mean_np as _subsample_curve_np,
)
from ._validate import as_float_array, as_int_array, check_probabilities

#: the most draws per cell the expected-max kernels take (``kMaxDraws`` in C++):
#: ``j * G`` products of the grid walk stay within int64
MAX_DRAWS = 2**31 - 1


def expected_max_binomial(
    p: np.ndarray, n_draws: int | np.ndarray, *, backend: str | None = None
) -> np.ndarray | float:
    """Expected maximum of independent binomial proportions.

    ``E[max_l Y_l / G] = (1/G) sum_{k=1..G} [1 - prod_l F(k-1; G, p_l)]`` with
    ``Y_l ~ Bin(G, p_l)`` (design §3; the paper's eq. 10 is the equal-``p`` case).

    Parameters
    ----------
    p : array (..., L)
        Success probabilities in [0, 1]; the max runs over the last axis.
    n_draws : int or int array broadcastable to ``p``
        Draws ``G`` per cell, from 0 to ``2**31 - 1``. Cells may differ (the max
        then runs over the union of the grids ``j / G_l``); a cell with 0 draws is
        left out of the max.

    Returns
    -------
    array of shape ``p.shape[:-1]`` (a float for 1-D ``p``).

    Notes
    -----
    Up to ``2**16`` draws each CDF is built on all of ``0..G`` (``O(L G)`` per row).
    Rows whose cells share one ``G <= 1000`` (the usual case) are computed 16 at a
    time, one per SIMD lane: with ``q = min(p, 1 - p)`` the unnormalised masses
    ``e_0 = 1``, ``e_i = e_{i-1} (G - i + 1) / i * q / (1 - q)`` stay below
    ``2^G``, and ``F(k)`` is their running sum from the small tail (``e_0..e_k``, or
    ``e_G..e_{G-k}`` when ``p > 1/2``) over the total. Above ``2**16`` draws,
    only on the window ``[G p - t, G p + t]`` outside which Bernstein's
    inequality puts less than ``1e-40`` of the mass (``t = E/3 + sqrt(E^2/9 + 2 E
    G p (1 - p))``, ``E = 92``): ``P(max > x)`` is 1 below the highest window start
    and 0 from the highest window end, so time and memory per cell are
    ``O(sqrt(G))`` (about 6e5 values at ``G = 2**31 - 1``). Checked against
    scipy's binomial CDF on every ``k``: agreement to 1e-11. ``n_draws`` above
    ``2**31 - 1`` raises ``ValueError`` (products ``j G`` of the ragged walk must
    fit in int64).
    """
    p_arr = as_float_array(p, "p")
    if p_arr.ndim == 0:
        raise ValueError("p must have at least one axis (the models)")
    if p_arr.shape[-1] == 0:
        raise ValueError("p has no models (last axis is empty)")
    check_probabilities(p_arr, "p")
    g_arr = as_int_array(n_draws, "n_draws")
    if (g_arr < 0).any():
        raise ValueError("n_draws must be >= 0")
    if (g_arr > MAX_DRAWS).any():
        raise ValueError(
            f"n_draws must be at most 2**31 - 1 ({MAX_DRAWS}); got {int(g_arr.max())}"
        )
    try:
        g_full = np.broadcast_to(g_arr, p_arr.shape)
    except ValueError:
        raise ValueError(
            f"n_draws of shape {np.shape(n_draws)} does not broadcast to p's shape "
            f"{p_arr.shape}"
        ) from None
    lead = p_arr.shape[:-1]
    L = p_arr.shape[-1]
    p2 = np.ascontiguousarray(p_arr.reshape(-1, L))
    if g_arr.ndim == 0 or g_arr.size == g_arr.shape[-1]:
        # one row of draws for every row of p (a scalar or a per-model vector):
        # the kernels take it as a (1, L) array, no (R, L) copy
        g2 = np.ascontiguousarray(np.broadcast_to(g_arr.reshape(-1), (1, L)))
    else:
        g2 = np.ascontiguousarray(g_full.reshape(-1, L))
    if p2.shape[0] and not (g2 > 0).any(axis=-1).all():
        raise ValueError("every row needs at least one cell with n_draws >= 1")
    out = dispatch("expected_max_binomial_rows", backend)(p2, g2)
    out = out.reshape(lead)
    return float(out) if out.ndim == 0 else out


#: refuse subsample curves needing more multiply-adds than this (hours of work)
_MAX_CURVE_WORK = 1e13


def _check_curve_work(size_sum: float, cells: int, largest: int) -> None:
    """The curve costs about ``cells * sum(sizes)`` multiply-adds: refuse (instead
    of running for hours, or allocating ``1..G`` at huge G) beyond 1e13."""
    work = size_sum * cells
    if work > _MAX_CURVE_WORK:
        raise ValueError(
            f"sizes: subset sizes up to {largest} over {cells} cells need about "
            f"{work:.1e} operations (hours); pass fewer or smaller sizes, e.g. "
            "sizes=np.unique(np.geomspace(1, G, 30).astype(int))"
        )


def subsample_curve(
    successes: np.ndarray,
    n_draws: int | np.ndarray,
    sizes: Sequence[int] | np.ndarray | None = None,
    *,
    backend: str | None = None,
) -> np.ndarray:
    """Exact expected naive oracle when only ``g`` of the observed draws are used.

    ``O_biased(g) = mean_n (1/g) sum_{k=1..g} [1 - prod_l P(X_nl <= k-1)]`` with
    ``X_nl ~ Hypergeom(G_nl, S_nl, g)``: the average over *all* size-``g`` subsets of
    each cell's draws (design §3). ``subsample_curve(S, G, [G])`` is the naive oracle
    ``mean_n max_l S/G``.

    Parameters
    ----------
    successes : int array (N, L)
        Successes per cell (binary scores only).
    n_draws : int or int array (N, L)
        Draws per cell; a cell with 0 draws is left out of the max.
    sizes : ints, default ``1..min G``
        Subset sizes ``g``, each between 1 and the smallest observed ``n_draws``.
    """
    run = dispatch("subsample_curve_mean", backend)
    S = as_int_array(successes, "successes")
    if S.ndim != 2:
        raise ValueError(f"successes must be shaped (N, L), got {S.shape}")
    if S.size == 0:
        raise ValueError("successes is empty")
    G = np.ascontiguousarray(np.broadcast_to(as_int_array(n_draws, "n_draws"), S.shape))
    if (S < 0).any() or (S > G).any():
        raise ValueError("successes must lie between 0 and n_draws")
    present = G > 0
    if not present.any(axis=1).all():
        raise ValueError("every prompt needs at least one model with draws")
    g_min = int(G[present].min())
    if sizes is None:
        _check_curve_work(g_min * (g_min + 1) / 2, S.size, g_min)
        sizes_arr = np.arange(1, g_min + 1, dtype=np.int64)
    else:
        sizes_arr = as_int_array(np.atleast_1d(sizes), "sizes").ravel()
        if sizes_arr.size == 0:
            raise ValueError("sizes is empty")
        if (sizes_arr < 1).any() or (sizes_arr > g_min).any():
            raise ValueError(
                f"sizes must lie in 1..{g_min} (the fewest draws of any observed cell)"
            )
        _check_curve_work(float(sizes_arr.sum()), S.size, int(sizes_arr.max()))
    return run(np.ascontiguousarray(S), G, np.ascontiguousarray(sizes_arr))


def pass_at_k(
    n: np.ndarray | int, c: np.ndarray | int, k: np.ndarray | int
) -> np.ndarray:
    """Unbiased pass@k (Chen et al. 2021): ``1 - C(n-c, k) / C(n, k)``.

    Computed as ``1 - prod_{i=n-c+1..n} (1 - k/i)`` in log space, stable for ``n`` up
    to 10^4 and beyond. Broadcasts ``n`` (draws), ``c`` (correct) and ``k``.
    ``k > n`` raises: it is undefined, not 1.
    """
    arrays = as_int_array(n, "n"), as_int_array(c, "c"), as_int_array(k, "k")
    try:
        n_a, c_a, k_a = np.broadcast_arrays(*arrays)
    except ValueError:
        named = zip("nck", arrays, strict=True)
        shapes = ", ".join(f"{nm} {a.shape}" for nm, a in named)
        raise ValueError(
            f"pass_at_k: n, c and k must broadcast to one shape; got {shapes}"
        ) from None
    if (k_a < 1).any():
        raise ValueError("k must be >= 1")
    if (k_a > n_a).any():
        raise ValueError("k must not exceed n (pass@k is undefined for k > n)")
    if (c_a < 0).any() or (c_a > n_a).any():
        raise ValueError("c must lie between 0 and n")
    # Each distinct (n, c, k) once: 1 - prod_{i=n-c+1..n} (1 - k/i), as a log1p sum.
    triples = np.stack([n_a.ravel(), c_a.ravel(), k_a.ravel()], axis=1)
    uniq, inverse = np.unique(triples, axis=0, return_inverse=True)
    values = np.empty(len(uniq))
    for j, (nn, cc, kk) in enumerate(uniq):
        if nn - cc < kk:
            values[j] = 1.0
        else:
            i = np.arange(nn - cc + 1, nn + 1, dtype=np.float64)
            values[j] = -np.expm1(np.log1p(-kk / i).sum())
    out = values[inverse.ravel()].reshape(n_a.shape)
    return out if out.ndim else float(out)
