"""Input checks shared by the debiased-oracle estimators."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..results import EvalResults

COUNT_METHODS = ("bootstrap_bc", "pgm", "crossfit", "jackknife", "extrapolation")

#: prompts per block of the per-prompt loops (float64 temporaries of a few MB at
#: L = 33, not of (N, L): N = 2e6 makes each 528 MB)
ROW_BLOCK = 65_536


def even_rows(N: int, size: int) -> np.ndarray:
    """Evenly spaced prompt indices, ``min(N, size)`` of them (all when
    ``N <= size``): the subsamples the fits and the audit run on."""
    if N <= size:
        return np.arange(N)
    return np.unique(np.linspace(0, N - 1, size).round().astype(np.int64))


def row_blocks(n: int) -> list[slice]:
    """Consecutive slices of ``ROW_BLOCK`` prompts covering ``range(n)``."""
    b = ROW_BLOCK
    return [slice(a, a + b) for a in range(0, n, b)]


def counts(
    results: EvalResults, what: str, *, compact: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``(successes, n_draws)`` as contiguous int64 ``(N, L)``; refuses graded data.

    ``compact=True``: the counts as stored instead (:func:`check_counts` with
    ``compact=True`` says what that is), for code that reads any integer dtype
    (``pgm``'s fits): no ``(N, L)`` int64 copies, 16 bytes a cell."""
    S, G = stored_counts(results, what)
    if compact:
        return check_counts(S, G, compact=True)
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


def check_counts(
    S: np.ndarray, G: np.ndarray, *, compact: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Checked ``(successes, n_draws)`` ``(N, L)``: contiguous int64 copies, or
    with ``compact=True`` the arrays in their own integer dtypes (``successes``
    C-contiguous, float counts rounded to int64; ``n_draws`` possibly a
    read-only broadcast view). Compact counts may be unsigned: arithmetic on
    them must not subtract (``G - 1`` wraps at ``G = 0``)."""
    if not compact:
        S = np.ascontiguousarray(np.asarray(S), dtype=np.int64)
        G = np.broadcast_to(np.asarray(G, dtype=np.int64), S.shape)
        G = np.ascontiguousarray(G)
    else:
        S = np.asarray(S)
        S = _as_int64(S) if S.dtype.kind not in "iu" else np.ascontiguousarray(S)
        G = np.asarray(G)
        G = np.broadcast_to(G if G.dtype.kind in "iu" else G.astype(np.int64), S.shape)
    if S.ndim != 2 or S.size == 0:
        raise ValueError(f"successes must be a non-empty (N, L) array, got {S.shape}")
    # in blocks of prompts: no (N, L) bool temporaries
    for sl in row_blocks(S.shape[0]):
        s, g = S[sl], G[sl]
        if (g < 0).any() or (s < 0).any() or (s > g).any():
            raise ValueError("need 0 <= successes <= n_draws in every cell")
        if not (g > 0).any(axis=1).all():
            raise ValueError("every prompt needs at least one model with draws")
    return S, G


def row_dtype(n_rows: int) -> np.dtype:
    """The smallest signed integer dtype of table-row indices ``0 .. n_rows - 1``
    and ``-1`` (int8 up to 127 rows: a cell's row then takes one byte, not
    eight; the kernels read int8, int16, int32 and int64 rows)."""
    for dt in (np.int8, np.int16, np.int32):
        if int(n_rows) <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.int64)


def n_cells(cell_row: np.ndarray) -> int:
    """Cells with draws (table row ``>= 0``), counted in blocks of prompts."""
    rows = row_blocks(len(cell_row))
    return sum(int(np.count_nonzero(cell_row[sl] >= 0)) for sl in rows)


def max_cells(cell_row: np.ndarray) -> int:
    """Most cells with draws of any prompt, in blocks of prompts."""
    rows = row_blocks(len(cell_row))
    return max(
        (int((cell_row[sl] >= 0).sum(axis=1).max(initial=0)) for sl in rows), default=0
    )


def min_draws(G: np.ndarray) -> int:
    """Fewest draws of a cell with draws (in blocks of prompts: no (N, L) copy)."""
    blocks = (G[sl] for sl in row_blocks(len(G)))
    lows = [g[g > 0].min() for g in blocks if (g > 0).any()]
    if not lows:
        raise ValueError("no cell has any draws")
    return int(min(lows))


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
