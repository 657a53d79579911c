"""Graded (non-0/1) scores: seeded Monte Carlo versions of the subsample-based
estimators (``crossfit``, ``extrapolation``, ``jackknife``).

With real-valued scores the counts are not sufficient, so the exact hypergeometric
expectations of the binary path are replaced by an average over ``n_splits`` random
orderings of each cell's valid draws. ``bootstrap_bc`` and ``pgm`` need binomial
counts and refuse graded data.

Random orderings (identical in the three backends: ``cpp``
``cpp/include/capfront/graded.hpp``, ``numba`` and the NumPy reference side by
side in :mod:`capfront._kernels.graded`). The ``m`` valid draws ``a[0..m)`` of a
cell, in their original order, are shuffled by forward Fisher-Yates,
``for i = 0 .. m-2: j = i + ((w[i] * (m - i)) >> 32); swap(a[i], a[j])``
(the first ``k`` steps fix ``a[0..k)``, a uniform random ``k``-subset in random
order, so the compiled kernels stop after the largest prefix they need),
where ``w[i]`` is word ``split * stride + i`` (``stride = 4 ceil(m / 4)``, whole
blocks per split) of the Philox4x32-10 stream of :mod:`capfront._philox` in the
bootstrap's layout, with replicate = the prompt key and stream = the model key
(:func:`capfront._philox.stream_words`). A cell's stream depends only on
``(seed, split, prompt, model)``, so the value does not depend on threads or
chunking. The keys are CRC-32 hashes of the prompt and model labels
(:func:`label_keys`), so permuting the prompts or models of an ``EvalResults``
permutes the per-prompt values along and leaves the estimate unchanged, and
selecting a subset of models keeps the other cells' orderings. Prefix sums
``c[k] = a[0] + ... + a[k-1]``, the cell total ``T`` (summed in the original order)
and every reduction run in one fixed order, so the backends agree to the last bit.
"""

from __future__ import annotations

import operator
import zlib
from collections.abc import Sequence

import numpy as np

from .._kernels import dispatch
from .._kernels.graded import TIE_TOL  # noqa: F401  (documented here)
from .._philox import philox_key
from ..results import EvalResults
from .bias_correction import feasible
from .extrapolation import decay_decomposition, fit_sizes
from .result import Decomposition


# ----------------------------------------------------------------------- keys
def label_keys(labels: Sequence[object] | np.ndarray) -> np.ndarray:
    """Philox stream keys of prompt or model labels: ``crc32(str(label))``, uint32.

    A key collision between two prompts only correlates their Monte Carlo noise;
    model keys must be distinct (see :func:`model_keys`)."""
    return np.fromiter(
        (zlib.crc32(str(x).encode("utf-8")) for x in labels),
        dtype=np.uint32,
        count=len(labels),
    )


def model_keys(labels: Sequence[object] | np.ndarray) -> np.ndarray:
    """:func:`label_keys`, or the rank of ``str(label)`` when two CRC-32s collide
    (models sharing a stream would have correlated, not independent, orderings)."""
    keys = label_keys(labels)
    if len(np.unique(keys)) < len(keys):
        names = np.array([str(x) for x in labels], dtype=object)
        keys = np.empty(len(names), dtype=np.uint32)
        keys[np.argsort(names, kind="stable")] = np.arange(len(names), dtype=np.uint32)
    return keys


# ----------------------------------------------------------------- validation
def _check(
    scores: np.ndarray,
    valid: np.ndarray | None,
    prompt_key: np.ndarray | None,
    model_key: np.ndarray | None,
    n_splits: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int, np.ndarray]:
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    if scores.ndim != 3:
        raise ValueError(f"scores must be shaped (N, L, G), got {scores.shape}")
    N, L, G = scores.shape
    if valid is None:
        valid = np.ones(scores.shape, dtype=bool)
    valid = np.asarray(valid)
    if valid.shape != scores.shape or valid.dtype != np.bool_:
        raise ValueError(
            f"valid must be a boolean array shaped {scores.shape}, got "
            f"{valid.dtype} {valid.shape}"
        )
    valid = np.ascontiguousarray(valid)
    if not np.isfinite(scores[valid]).all():
        raise ValueError("scores contain NaN or inf among the valid draws")
    pk = np.arange(N, dtype=np.uint32) if prompt_key is None else prompt_key
    mk = np.arange(L, dtype=np.uint32) if model_key is None else model_key
    pk = np.ascontiguousarray(pk, dtype=np.uint32)
    mk = np.ascontiguousarray(mk, dtype=np.uint32)
    if pk.shape != (N,) or mk.shape != (L,):
        raise ValueError(
            f"prompt_key must be shaped ({N},) and model_key ({L},); got "
            f"{pk.shape} and {mk.shape}"
        )
    n_splits = operator.index(n_splits)
    if not 1 <= n_splits < 2**32:
        raise ValueError(f"n_splits must be a positive integer, got {n_splits}")
    seed = operator.index(seed)
    philox_key(seed)  # ValueError outside [0, 2^64)
    count = valid.sum(axis=2)
    if not (count > 0).any(axis=1).all():
        bad = np.flatnonzero(~(count > 0).any(axis=1))[:3]
        raise ValueError(f"prompt(s) {list(bad)} have no model with a valid draw")
    return scores, valid, pk, mk, n_splits, seed, count


# --------------------------------------------------------------- array API
def graded_crossfit_rows(
    scores: np.ndarray,
    valid: np.ndarray | None = None,
    *,
    n_splits: int = 32,
    seed: int = 0,
    prompt_key: np.ndarray | None = None,
    model_key: np.ndarray | None = None,
    backend: str | None = None,
) -> np.ndarray:
    """Monte Carlo cross-fit value per prompt, ``(N,)``.

    For each of ``n_splits`` seeded orderings of each cell's valid draws and
    ``g`` in ``{floor(gmin/2), ceil(gmin/2)}`` (``gmin``: the prompt's fewest draws
    of an observed cell), select ``l* = argmax_l mean(first g draws)`` and score
    ``mean(the other draws of l*)`` (ties share the value); average over the two
    ``g`` and the splits (design §4d).

    Parameters
    ----------
    scores : (N, L, G) float
    valid : (N, L, G) bool, optional
        Which draws are real (default all); a cell without one was not run.
    n_splits, seed : number of orderings and their seed (``0 <= seed < 2^64``).
    prompt_key, model_key : (N,), (L,) uint32, optional
        Stream keys (default ``arange``); see the module docstring.
    backend : ``"cpp"``, ``"numba"`` or ``"numpy"``.
    """
    scores, valid, pk, mk, n_splits, seed, count = _check(
        scores, valid, prompt_key, model_key, n_splits, seed
    )
    if int(count[count > 0].min()) < 2:
        raise ValueError("crossfit needs at least 2 generations per cell")
    run = dispatch("graded_crossfit_rows", backend)
    return run(scores, valid, pk, mk, seed, n_splits)


def graded_curve_rows(
    scores: np.ndarray,
    valid: np.ndarray | None,
    sizes: Sequence[int] | np.ndarray,
    *,
    n_splits: int = 32,
    seed: int = 0,
    prompt_key: np.ndarray | None = None,
    model_key: np.ndarray | None = None,
    backend: str | None = None,
) -> np.ndarray:
    """Monte Carlo subsample curve per prompt, ``(N, len(sizes))``:
    ``mean over splits of max_l mean(first g draws of cell (n, l))`` for each size
    ``g`` (the graded analogue of the exact curve of design §3). Sizes must lie in
    ``1..`` the fewest valid draws of an observed cell. Other arguments as in
    :func:`graded_crossfit_rows`."""
    scores, valid, pk, mk, n_splits, seed, count = _check(
        scores, valid, prompt_key, model_key, n_splits, seed
    )
    sizes = np.ascontiguousarray(sizes, dtype=np.int64).reshape(-1)
    gmin = int(count[count > 0].min())
    if ((sizes < 1) | (sizes > gmin)).any():
        raise ValueError(f"sizes must lie in 1..{gmin} (the fewest draws of a cell)")
    run = dispatch("graded_curve_rows", backend)
    return run(scores, valid, sizes, pk, mk, seed, n_splits)


# ------------------------------------------------------------- results API
def _raw(
    results: EvalResults, what: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if results.scores is None:
        raise ValueError(
            f"{what} on graded scores needs the raw (N, L, G) scores; these results "
            "hold only per-cell sums (build them with keep_scores=True)"
        )
    return (
        np.asarray(results.scores, dtype=np.float64),
        results.valid_draws,
        label_keys(results.prompts),
        model_keys(results.models),
    )


def crossfit_graded(
    results: EvalResults,
    *,
    n_splits: int = 32,
    seed: int = 0,
    backend: str | None = None,
) -> Decomposition:
    """Monte Carlo cross-fit oracle on graded scores (design §4d): per prompt
    :func:`graded_crossfit_rows` with streams keyed by the prompt and model labels;
    ``finalize`` is the mean over prompts."""
    scores, valid, pk, mk = _raw(results, "crossfit")
    rows = graded_crossfit_rows(
        scores,
        valid,
        n_splits=n_splits,
        seed=seed,
        prompt_key=pk,
        model_key=mk,
        backend=backend,
    )
    return Decomposition(
        rows[:, None],
        lambda m: float(m[0]),
        {"linear": True, "monte_carlo_splits": n_splits},
    )


def curve_rows_graded(
    results: EvalResults,
    sizes: Sequence[int] | np.ndarray,
    *,
    n_splits: int = 32,
    seed: int = 0,
    backend: str | None = None,
) -> np.ndarray:
    """Per-prompt Monte Carlo subsample curve: ``max_l`` mean of ``g`` random draws
    per cell, averaged over ``n_splits`` seeded orderings, ``(N, len(sizes))``."""
    scores, valid, pk, mk = _raw(results, "the subsample curve")
    return graded_curve_rows(
        scores,
        valid,
        sizes,
        n_splits=n_splits,
        seed=seed,
        prompt_key=pk,
        model_key=mk,
        backend=backend,
    )


def extrapolation_graded(
    results: EvalResults,
    *,
    lam: float | None = None,
    fit_from: int | None = None,
    n_splits: int = 32,
    seed: int = 0,
    backend: str | None = None,
) -> Decomposition:
    """``O_inf`` of ``O_biased(g) = O_inf + a g^-lam`` fitted to the Monte Carlo
    subsample curve (design §4a); needs ``G >= 4``."""
    gmin = results.min_draws
    if gmin < 4:
        raise ValueError(
            "extrapolation (fitting O_inf + a g^-lam) needs at least 4 generations "
            f"per cell; the data has cells with {gmin}"
        )
    if lam is not None and not (0 < float(lam) <= 5):
        raise ValueError(f"lam must lie in (0, 5], got {lam}")
    sizes = fit_sizes(gmin, fit_from)
    rows = curve_rows_graded(
        results, sizes, n_splits=n_splits, seed=seed, backend=backend
    )
    return decay_decomposition(sizes, rows, lam, monte_carlo_splits=n_splits)


def jackknife_graded(
    results: EvalResults,
    *,
    lam: float = 0.5,
    n_splits: int = 32,
    seed: int = 0,
    backend: str | None = None,
) -> Decomposition:
    """Generalised jackknife over generations on the Monte Carlo curve (design §4e):
    ``(G^lam O(G) - (G-1)^lam O(G-1)) / (G^lam - (G-1)^lam)``."""
    g = results.min_draws
    if g < 2:
        raise ValueError("jackknife needs at least 2 generations per cell")
    sizes = np.array([g - 1, g])
    rows = curve_rows_graded(
        results, sizes, n_splits=n_splits, seed=seed, backend=backend
    )
    wa, wb = float(g - 1) ** lam, float(g) ** lam
    grad = np.array([-wa, wb]) / (wb - wa)
    # clipped to [0, 1] like the count-data jackknife (bias_correction.feasible)
    return feasible(
        Decomposition(
            rows,
            lambda m: float(grad @ m),
            {"linear": True, "grad": grad, "lam": lam, "monte_carlo_splits": n_splits},
        )
    )
