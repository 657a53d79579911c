"""Expected maxima of binomial proportions and the exact subsample curve (design §3),
and the unbiased pass@k."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

from ._backend import core, resolve_backend
from ._numba_kernels import (
    DENSE_MAX_DRAWS,
    binomial_window_nb,
    expected_max_binomial_nb,
    subsample_curve_nb,
)
from ._validate import as_float_array, as_int_array, check_probabilities

_NUMPY_CHUNK = 8192
#: the most draws per cell the expected-max kernels take (``kMaxDraws`` in C++):
#: ``j * G`` products of the grid walk stay within int64
MAX_DRAWS = 2**31 - 1


def _expected_max_np(p: np.ndarray, n_draws: np.ndarray) -> np.ndarray:
    """Reference: scipy's binomial CDF on the union grid of each row."""
    out = np.empty(p.shape[0])
    huge = n_draws.max(axis=1) > DENSE_MAX_DRAWS
    for r in np.flatnonzero(huge):
        out[r] = _expected_max_windowed_np(p[r], n_draws[r])
    equal = (n_draws == n_draws[:, :1]) | (n_draws <= 0)
    fast = equal.all(axis=1) & (n_draws > 0).any(axis=1) & ~huge
    rows = np.flatnonzero(fast)
    for start in range(0, len(rows), _NUMPY_CHUNK):
        idx = rows[start : start + _NUMPY_CHUNK]
        present = n_draws[idx] > 0
        G = n_draws[idx].max(axis=1)
        gmax = int(G.max())
        k = np.arange(gmax)[:, None, None]  # k - 1 = 0..gmax-1
        cdf = stats.binom.cdf(k, G[None, :, None], p[idx][None])
        cdf = np.where(present[None], cdf, 1.0)
        tail = 1.0 - cdf.prod(axis=2)  # (gmax, rows): P(max >= k)
        tail = np.where(k[:, :, 0] < G[None, :], tail, 0.0)
        out[idx] = tail.sum(axis=0) / G
    for r in np.flatnonzero(~fast & ~huge):
        out[r] = _expected_max_ragged_np(p[r], n_draws[r])
    return out


def _expected_max_windowed_np(p: np.ndarray, n_draws: np.ndarray) -> float:
    """Reference for large G: scipy's CDF on the grid points inside the windows.

    Each ``Bin(G_l, p_l)`` CDF is 0 below ``lo_l`` and 1 from ``hi_l`` on to within
    1e-40 (:func:`binomial_window_nb`). With ``x_lo = max_l lo_l / G_l`` and ``x_hi
    = max_l hi_l / G_l``, ``E[max] = x_lo + integral_{x_lo}^{x_hi} P(max > x) dx``
    and ``P(max > x)`` only changes at grid points ``j / G_l`` inside the windows.
    """
    keep = n_draws > 0
    p, g = p[keep], n_draws[keep]
    win = np.array(
        [binomial_window_nb(int(gl), float(pl)) for pl, gl in zip(p, g, strict=True)]
    )
    lo, hi = win[:, 0], win[:, 1]
    ia = int(np.argmax(lo / g))
    ib = int(np.argmax(hi / g))
    a_num, a_den, b_num, b_den = lo[ia], g[ia], hi[ib], g[ib]
    num, den = [np.array([a_num, b_num])], [np.array([a_den, b_den])]
    for lo_l, hi_l, g_l in zip(lo, hi, g, strict=True):
        j = np.arange(lo_l + 1, hi_l + 1, dtype=np.int64)
        inside = (j * a_den > a_num * g_l) & (j * b_den < b_num * g_l)
        num.append(j[inside])
        den.append(np.full(int(inside.sum()), g_l, dtype=np.int64))
    num, den = np.concatenate(num), np.concatenate(den)
    order = np.argsort(num / den, kind="stable")
    num, den = num[order], den[order]
    # distinct values, exactly (values closer than a double's spacing keep their
    # order of insertion; the width they span is below 1e-16)
    new_value = np.concatenate([[True], num[1:] * den[:-1] != num[:-1] * den[1:]])
    num, den = num[new_value], den[new_value]
    below = np.ones(len(num) - 1)  # P(max <= v_i) for every v_i but the last
    for p_l, g_l in zip(p, g, strict=True):
        below *= stats.binom.cdf((num[:-1] * g_l) // den[:-1], g_l, p_l)
    widths = np.diff(num / den)
    return float(num[0] / den[0] + np.sum(widths * (1.0 - below)))


def _expected_max_ragged_np(p: np.ndarray, n_draws: np.ndarray) -> float:
    present = n_draws > 0
    if not present.any():
        return float("nan")
    grid = np.unique(
        np.concatenate([np.arange(1, g + 1) / g for g in n_draws[present]])
    )
    prev = np.concatenate([[0.0], grid[:-1]])
    below = np.ones(len(grid))
    for pl, g in zip(p[present], n_draws[present], strict=True):
        below *= stats.binom.cdf(np.floor(prev * g + 1e-9), g, pl)
    return float(np.sum((grid - prev) * (1.0 - below)))


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
    Above, only on the window ``[G p - t, G p + t]`` outside which Bernstein's
    inequality puts less than ``1e-40`` of the mass (``t = E/3 + sqrt(E^2/9 + 2 E
    G p (1 - p))``, ``E = 92``): ``P(max > x)`` is 1 below the highest window start
    and 0 from the highest window end, so time and memory per cell are
    ``O(sqrt(G))`` (about 6e5 values at ``G = 2**31 - 1``). Checked against
    scipy's binomial CDF on every ``k``: agreement to 1e-11. ``n_draws`` above
    ``2**31 - 1`` raises ``ValueError`` (products ``j G`` of the ragged walk must
    fit in int64).
    """
    name = resolve_backend(backend)
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
        g_arr = np.broadcast_to(g_arr, p_arr.shape)
    except ValueError:
        raise ValueError(
            f"n_draws of shape {np.shape(n_draws)} does not broadcast to p's shape "
            f"{p_arr.shape}"
        ) from None
    if not (g_arr > 0).any(axis=-1).all():
        raise ValueError("every row needs at least one cell with n_draws >= 1")
    lead = p_arr.shape[:-1]
    L = p_arr.shape[-1]
    p2 = np.ascontiguousarray(p_arr.reshape(-1, L))
    g2 = np.ascontiguousarray(g_arr.reshape(-1, L))
    if name == "cpp":
        out = core().expected_max_binomial(p2, g2)
    elif name == "numba":
        out = expected_max_binomial_nb(p2, g2)
    else:
        out = _expected_max_np(p2, g2)
    out = out.reshape(lead)
    return float(out) if out.ndim == 0 else out


def _subsample_curve_np(successes, n_draws, sizes) -> np.ndarray:
    """Reference: scipy's hypergeometric CDF, vectorised over prompts and models."""
    N = successes.shape[0]
    present = n_draws > 0
    curve = np.empty(len(sizes))
    for j, g in enumerate(sizes):
        total = 0.0
        for start in range(0, N, _NUMPY_CHUNK):
            sl = slice(start, start + _NUMPY_CHUNK)
            k = np.arange(g)[:, None, None]
            cdf = stats.hypergeom.cdf(k, n_draws[sl][None], successes[sl][None], g)
            cdf = np.where(present[sl][None], cdf, 1.0)
            total += (1.0 - cdf.prod(axis=2)).sum() / g
        curve[j] = total / N
    return curve


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
    name = resolve_backend(backend)
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
    S = np.ascontiguousarray(S)
    if name == "cpp":
        return core().subsample_curve(S, G, np.ascontiguousarray(sizes_arr))
    if name == "numba":
        return subsample_curve_nb(S, G, sizes_arr)
    return _subsample_curve_np(S, G, sizes_arr)


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
