"""Extrapolation of the subsample curve (design §4a) and the jackknife over generations
(design §4e).

``O_biased(g)`` is the exact expected naive oracle on size-``g`` subsets of each
cell's draws (design §3). Fitting ``O_biased(g) = O_inf + a g^-lam`` and reading off
``O_inf`` removes the bias if the decay law holds beyond the observed ``g``.
"""

from __future__ import annotations

import numpy as np

from .._kernels import dispatch
from .._validate import real_number, whole_number
from ._input import min_draws, require_min_draws
from .bias_correction import by_row_blocks, feasible
from .result import Decomposition

LAM_BOUNDS = (0.25, 1.0)
_LAM_GRID = np.linspace(LAM_BOUNDS[0], LAM_BOUNDS[1], 76)


def curve_rows(
    S: np.ndarray, G: np.ndarray, sizes: np.ndarray, backend: str | None = None
) -> np.ndarray:
    """Per-prompt exact subsample curve, ``(N, len(sizes))`` (the
    ``subsample_curve_rows`` kernel of :mod:`capfront._kernels.subsample`), on
    counts in any integer dtype, in blocks of prompts
    (:func:`~.bias_correction.by_row_blocks`)."""
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    return by_row_blocks(dispatch("subsample_curve_rows", backend), S, G, sizes)


def fit_decay(
    sizes: np.ndarray, curve: np.ndarray, lam: float | None = None
) -> tuple[float, float, float, float]:
    """Least-squares fit of ``curve = O_inf + a * sizes**-lam``.

    ``lam`` fixed, or free in ``LAM_BOUNDS`` (profile least squares: for each
    ``lam`` on a grid the fit is linear in ``(O_inf, a)``; the best grid point is
    refined by a parabola). Returns ``(O_inf, a, lam, rss)``.
    """
    x = np.asarray(sizes, dtype=np.float64)
    y = np.asarray(curve, dtype=np.float64)

    def solve(lams: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        X = x[None, :] ** -lams[:, None]  # (n_lam, n)
        xm = X.mean(axis=1, keepdims=True)
        ym = y.mean()
        dx = X - xm
        sxx = (dx * dx).sum(axis=1)
        a = np.where(
            sxx > 0, (dx * (y - ym)).sum(axis=1) / np.where(sxx > 0, sxx, 1), 0.0
        )
        o = ym - a * xm[:, 0]
        rss = ((y[None, :] - o[:, None] - a[:, None] * X) ** 2).sum(axis=1)
        return o, a, rss

    if lam is not None:
        o, a, rss = solve(np.array([float(lam)]))
        return float(o[0]), float(a[0]), float(lam), float(rss[0])
    o, a, rss = solve(_LAM_GRID)
    i = int(np.argmin(rss))
    best = _LAM_GRID[i]
    if 0 < i < len(_LAM_GRID) - 1:
        r0, r1, r2 = rss[i - 1], rss[i], rss[i + 1]
        den = r0 - 2 * r1 + r2
        if den > 0:
            step = _LAM_GRID[1] - _LAM_GRID[0]
            best = float(best + 0.5 * step * (r0 - r2) / den)
    o, a, rss = solve(np.array([best]))
    return float(o[0]), float(a[0]), float(best), float(rss[0])


#: at most this many subset sizes in the fit: beyond, sizes spread evenly over
#: ``fit_from..g_max`` (each curve point costs a pass over every cell; at 600
#: draws per cell the 301 sizes of the upper half took 29 s per audit world)
FIT_POINTS_MAX = 32


def fit_sizes(g_max: int, fit_from: int | None = None) -> np.ndarray:
    """Subset sizes used by the fit: ``fit_from..g_max`` (default: the upper half,
    ``max(2, ceil(g_max / 2))``, and at least 4 points when ``g_max`` allows);
    when that range holds more than :data:`FIT_POINTS_MAX` sizes, that many
    spread evenly over it (``fit_from`` and ``g_max`` included)."""
    if fit_from is None:
        fit_from = max(2, min(-(-g_max // 2), g_max - 3))
    if not 1 <= fit_from <= g_max - 2:
        raise ValueError(
            f"fit_from must lie in 1..{g_max - 2} to leave at least 3 curve points"
        )
    if g_max - fit_from + 1 <= FIT_POINTS_MAX:
        return np.arange(fit_from, g_max + 1, dtype=np.int64)
    return np.unique(
        np.rint(np.linspace(fit_from, g_max, FIT_POINTS_MAX)).astype(np.int64)
    )


def extrapolation_decomposition(
    S: np.ndarray,
    G: np.ndarray,
    *,
    lam: float | None = None,
    fit_from: int | None = None,
    backend: str | None = None,
) -> Decomposition:
    """``O_inf`` of the fit ``O_biased(g) = O_inf + a g^-lam`` (design §4a) on
    ``g = fit_from..G``; ``lam`` free in ``[0.1, 1.5]`` unless given."""
    require_min_draws(G, 4, "extrapolation (fitting O_inf + a g^-lam)")
    if lam is not None:
        lam = _check_lam(lam)
    if fit_from is not None:
        fit_from = whole_number(fit_from, "fit_from")
    sizes = fit_sizes(min_draws(G), fit_from)
    return decay_decomposition(sizes, curve_rows(S, G, sizes, backend), lam)


def decay_decomposition(
    sizes: np.ndarray, rows: np.ndarray, lam: float | None, **extra: object
) -> Decomposition:
    """Per-prompt subsample-curve ``rows`` (N, len(sizes)) with
    ``finalize = O_inf`` of the decay fit, and the fit's diagnostics."""

    def finalize(mean: np.ndarray) -> float:
        return fit_decay(sizes, mean, lam)[0]

    o_inf, a, lam_hat, rss = fit_decay(sizes, rows.mean(axis=0), lam)
    diag = {
        "lam": lam_hat,
        "amplitude": a,
        "rss": rss,
        "sizes": sizes,
        "curve": rows.mean(axis=0),
        "lam_fixed": lam is not None,
        **extra,
    }
    return feasible(Decomposition(rows, finalize, diag))


def _check_lam(lam: object) -> float:
    """The decay exponent ``lam``: a number in (0, 5] (``lam = 0`` would divide by
    ``G^0 - (G-1)^0 = 0``)."""
    value = real_number(lam, "lam")
    if not 0 < value <= 5:
        raise ValueError(f"lam must lie in (0, 5], got {lam!r}")
    return value


def jackknife_decomposition(
    S: np.ndarray,
    G: np.ndarray,
    *,
    lam: float = 0.5,
    backend: str | None = None,
    rows: np.ndarray | None = None,
) -> Decomposition:
    """Generalised jackknife over generations: with ``O(g)`` the subsample curve,
    ``O_jack = (G^lam O(G) - (G-1)^lam O(G-1)) / (G^lam - (G-1)^lam)``; it removes a
    bias ``a g^-lam`` exactly (``lam = 1`` is Quenouille's jackknife, whose
    delete-one average over generations is exactly ``O(G-1)`` for counts).
    ``rows``: the curve on sizes ``(G - 1, G)`` when already computed."""
    require_min_draws(G, 2, "jackknife")
    lam = _check_lam(lam)
    g = min_draws(G)
    sizes = np.array([g - 1, g], dtype=np.int64)
    if rows is None:
        rows = curve_rows(S, G, sizes, backend)
    wa, wb = float(g - 1) ** lam, float(g) ** lam
    grad = np.array([-wa, wb]) / (wb - wa)

    def finalize(mean: np.ndarray) -> float:
        return float(grad @ mean)

    return feasible(
        Decomposition(rows, finalize, {"linear": True, "grad": grad, "lam": lam})
    )
