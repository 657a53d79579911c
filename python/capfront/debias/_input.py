"""Input checks shared by the debiased-oracle estimators."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..results import EvalResults

COUNT_METHODS = ("bootstrap_bc", "pgm", "crossfit", "jackknife", "extrapolation")

#: prompts per block of the per-prompt loops (float64 temporaries of a few MB at
#: L = 33, not of (N, L): N = 2e6 makes each 528 MB)
ROW_BLOCK = 65_536


def row_blocks(n: int) -> list[slice]:
    """Consecutive slices of ``ROW_BLOCK`` prompts covering ``range(n)``."""
    b = ROW_BLOCK
    return [slice(a, a + b) for a in range(0, n, b)]


def counts(results: EvalResults, what: str) -> tuple[np.ndarray, np.ndarray]:
    """``(successes, n_draws)`` as contiguous int64 ``(N, L)``; refuses graded data."""
    S, G = stored_counts(results, what)
    return _as_int64(S), np.ascontiguousarray(G, dtype=np.int64)


def count_blocks(
    results: EvalResults, what: str
) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
    """``(rows, successes, n_draws)`` of the :func:`row_blocks`, int64: the
    per-prompt loops hold one block of int64 copies, not ``(N, L)``."""
    S, G = stored_counts(results, what)
    for sl in row_blocks(S.shape[0]):
        yield sl, _as_int64(S[sl]), np.ascontiguousarray(G[sl], dtype=np.int64)


def _as_int64(S: np.ndarray) -> np.ndarray:
    if S.dtype.kind in "iu":
        return np.ascontiguousarray(S, dtype=np.int64)
    return np.ascontiguousarray(np.rint(S).astype(np.int64))


def stored_counts(results: EvalResults, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The stored (compact) ``(successes, n_draws)``, ``n_draws`` possibly a
    broadcast view: neither the float64 rounding temporary nor the int32 widening
    that ``results.successes`` caches on the results. Refuses graded data."""
    if not isinstance(results, EvalResults):
        raise ValueError(f"{what} needs an EvalResults, got {type(results).__name__}")
    if not results.is_binary:
        raise ValueError(
            f"{what} works on binary (0/1) success counts; these scores are graded "
            "(use 'naive', or the Monte Carlo 'crossfit', 'extrapolation' or "
            "'jackknife' on results that keep the raw scores)"
        )
    return results._stats.successes, results._stats.n_draws


def check_counts(S: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    S = np.ascontiguousarray(np.asarray(S), dtype=np.int64)
    G = np.ascontiguousarray(np.broadcast_to(np.asarray(G, dtype=np.int64), S.shape))
    if S.ndim != 2 or S.size == 0:
        raise ValueError(f"successes must be a non-empty (N, L) array, got {S.shape}")
    if (G < 0).any() or (S < 0).any() or (S > G).any():
        raise ValueError("need 0 <= successes <= n_draws in every cell")
    if not (G > 0).any(axis=1).all():
        raise ValueError("every prompt needs at least one model with draws")
    return S, G


def min_draws(G: np.ndarray) -> int:
    return int(G[G > 0].min())


def require_min_draws(G: np.ndarray, minimum: int, what: str) -> None:
    g = min_draws(G)
    if g < minimum:
        raise ValueError(
            f"{what} needs at least {minimum} generations per cell; the data has "
            f"cells with {g}"
        )


def topic_codes(
    results: EvalResults, use_topics: bool = True
) -> tuple[np.ndarray, list]:
    """Integer topic code per prompt (all zeros without labels)."""
    N = results.n_prompts
    if not use_topics or results.topic is None:
        return np.zeros(N, np.int64), ["all"]
    names, codes = np.unique(np.asarray(results.topic).astype(str), return_inverse=True)
    return codes.astype(np.int64).ravel(), list(names)
