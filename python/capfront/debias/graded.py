"""Graded (non-0/1) scores: seeded Monte Carlo versions of the subsample-based
estimators (``crossfit``, ``extrapolation``, ``jackknife``).

With real-valued scores the counts are not sufficient, so the exact hypergeometric
expectations of the binary path are replaced by an average over ``n_splits`` random
orderings of each cell's valid draws (NumPy, seeded: the value depends on the seed
only). ``bootstrap_bc`` and ``pgm`` need binomial counts and refuse graded data.
"""

from __future__ import annotations

import numpy as np

from ..results import EvalResults
from .extrapolation import decay_decomposition, fit_sizes
from .result import Decomposition


def _raw(results: EvalResults, what: str) -> tuple[np.ndarray, np.ndarray]:
    if results.scores is None:
        raise ValueError(
            f"{what} on graded scores needs the raw (N, L, G) scores; these results "
            "hold only per-cell sums (build them with keep_scores=True)"
        )
    scores = np.asarray(results.scores, dtype=np.float64)
    valid = results.valid_draws
    return np.where(valid, scores, 0.0), valid


def _orderings(valid: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    keys = rng.random(valid.shape)
    keys[~valid] = np.inf  # invalid draws sort last
    return np.argsort(keys, axis=2)


def _subset_means(scores, order, g):
    first = np.take_along_axis(scores, order[:, :, :g], axis=2)
    return first.sum(axis=2)


def crossfit_graded(
    results: EvalResults, *, n_splits: int = 32, seed: int = 0
) -> Decomposition:
    """Select ``argmax_l`` of the mean of ``g`` random draws per cell, score the
    chosen model's other draws (ties shared), ``g = floor(Gmin/2)`` and
    ``ceil(Gmin/2)``; averaged over ``n_splits`` seeded orderings."""
    scores, valid = _raw(results, "crossfit")
    n_draws = valid.sum(axis=2)
    obs = n_draws > 0
    gmin = np.where(obs, n_draws, np.iinfo(np.int64).max).min(axis=1)
    if (gmin < 2).any():
        raise ValueError("crossfit needs at least 2 generations per cell")
    total = scores.sum(axis=2)
    rng = np.random.default_rng(seed)
    N, L, G = scores.shape
    out = np.zeros(N)
    for _ in range(n_splits):
        order = _orderings(valid, rng)
        for g in np.unique(np.concatenate([gmin // 2, gmin - gmin // 2])):
            rows = (gmin // 2 == g) | (gmin - gmin // 2 == g)
            weight = np.where(gmin // 2 == gmin - gmin // 2, 1.0, 0.5)
            sel = _subset_means(scores, order, g) / g
            rest = (total - sel * g) / np.maximum(n_draws - g, 1)
            sel = np.where(obs, sel, -np.inf)
            tied = sel >= sel.max(axis=1, keepdims=True) - 1e-12
            value = np.where(tied, rest, 0.0).sum(axis=1) / tied.sum(axis=1)
            out += np.where(rows, weight * value, 0.0)
    out /= n_splits
    return Decomposition(out[:, None], lambda m: float(m[0]), {"linear": True})


def curve_rows_graded(
    results: EvalResults, sizes: np.ndarray, *, n_splits: int = 32, seed: int = 0
) -> np.ndarray:
    """Per-prompt Monte Carlo subsample curve: ``max_l`` mean of ``g`` random draws
    per cell, averaged over ``n_splits`` seeded orderings, ``(N, len(sizes))``."""
    scores, valid = _raw(results, "the subsample curve")
    obs = valid.any(axis=2)
    rng = np.random.default_rng(seed)
    out = np.zeros((scores.shape[0], len(sizes)))
    for _ in range(n_splits):
        order = _orderings(valid, rng)
        csum = np.cumsum(np.take_along_axis(scores, order, axis=2), axis=2)
        for j, g in enumerate(sizes):
            means = np.where(obs, csum[:, :, g - 1] / g, -np.inf)
            out[:, j] += means.max(axis=1)
    return out / n_splits


def extrapolation_graded(
    results: EvalResults,
    *,
    lam: float | None = None,
    fit_from: int | None = None,
    n_splits: int = 32,
    seed: int = 0,
) -> Decomposition:
    gmin = results.min_draws
    if gmin < 4:
        raise ValueError(
            "extrapolation (fitting O_inf + a g^-lam) needs at least 4 generations "
            f"per cell; the data has cells with {gmin}"
        )
    sizes = fit_sizes(gmin, fit_from)
    rows = curve_rows_graded(results, sizes, n_splits=n_splits, seed=seed)
    return decay_decomposition(sizes, rows, lam, monte_carlo_splits=n_splits)


def jackknife_graded(
    results: EvalResults, *, lam: float = 0.5, n_splits: int = 32, seed: int = 0
) -> Decomposition:
    g = results.min_draws
    if g < 2:
        raise ValueError("jackknife needs at least 2 generations per cell")
    sizes = np.array([g - 1, g])
    rows = curve_rows_graded(results, sizes, n_splits=n_splits, seed=seed)
    wa, wb = float(g - 1) ** lam, float(g) ** lam
    grad = np.array([-wa, wb]) / (wb - wa)
    return Decomposition(
        rows, lambda m: float(grad @ m), {"linear": True, "grad": grad, "lam": lam}
    )
