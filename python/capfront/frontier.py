"""The exact capability frontier: cost-quality boundary of all (randomised) oracle
routing policies, by the per-prompt hull merge of design §6, and the matched-cost
comparisons with the best single model.

Options per prompt ``n``:

- prehoc: model ``l``, one generation: ``(cbar[n, l], q[n, l])``;
- posthoc: model ``l``, best of ``k`` of its generations with a perfect selector,
  ``k = 1..max_k``: ``(k * cbar[n, l], pass@k[n, l])`` with the unbiased pass@k
  ``1 - C(G - S, k) / C(G, k)`` (Chen et al. 2021); for graded scores the unbiased
  expected maximum of ``k`` of the ``G`` draws,
  ``sum_{i=k..G} C(i-1, k-1) / C(G, k) * s_(i)`` (``s_(i)`` ascending).

A cell with ``n_draws == 0`` (model not run) has no option, and best-of-``k`` needs
``k <= n_draws``. The frontier is computed exactly, with no lambda grid:
per-prompt upper-left convex hulls, all hull segments sorted by slope, applied in
order from every prompt's cheapest option (see ``cpp/include/capfront/frontier.hpp``).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._backend import resolve_backend
from ._kernels import dispatch
from ._kernels.frontier import _best_of_k_arrays, _binary_pass_at_k
from ._protocol import ResultProtocol, plain
from ._validate import (
    check_sum_finite,
    require_results,
    whole_number,
)
from .errors import OutsideFrontierWarning
from .oracles import best_model, best_models
from .results import EvalResults

__all__ = [
    "Frontier",
    "HullSegments",
    "PolicyAt",
    "frontier",
    "frontier_metrics",
    "frontier_options",
    "frontier_segments",
    "hull_segments",
]

_TOL = 1e-12  # relative slack at the ends of the frontier (rounding of sums)
#: estimators with per-cell estimates for ``quality=`` (besides an (N, L) array)
PER_CELL_QUALITY = ("naive", "pgm")


# --------------------------------------------------------------------------- segments
@dataclass(frozen=True)
class HullSegments(ResultProtocol):
    """The per-prompt hull segments of a frontier, merged by slope.

    For prompt weights ``w`` (summing to 1) the frontier's vertices are
    ``(sum w * base_cost + cumsum(w[prompt] * dcost),
    sum w * base_quality + cumsum(w[prompt] * dquality))``, preceded by the base point
    (see :meth:`vertices`). Segments are sorted by slope ``dquality / dcost``
    descending, ties by (prompt, position along the prompt's hull) ascending; every
    segment has ``dcost > 0`` and ``dquality > 0``.

    Attributes
    ----------
    base_cost, base_quality : (N,) float
        Each prompt's cheapest hull option (highest quality among equally cheap ones).
    base_option : (N,) int
        Its option index (column of the option arrays).
    prompt, option_from, option_to : (S,) int
        Segment ``s`` moves prompt ``prompt[s]`` from option ``option_from[s]`` to
        ``option_to[s]``.
    dcost, dquality : (S,) float
        The moves' cost and quality increments.
    """

    base_cost: np.ndarray
    base_quality: np.ndarray
    base_option: np.ndarray
    prompt: np.ndarray
    dcost: np.ndarray
    dquality: np.ndarray
    option_from: np.ndarray
    option_to: np.ndarray

    @property
    def n_prompts(self) -> int:
        return int(self.base_cost.shape[0])

    @property
    def value(self) -> float:
        """The result protocol's headline: the top of the frontier with equal
        prompt weights, ``mean_n base_quality + sum_s dquality / N`` (every segment
        taken: the oracle quality with unlimited budget)."""
        n = self.n_prompts
        if n == 0:
            return float("nan")
        return float(self.base_quality.mean() + self.dquality.sum() / n)

    def to_dict(self) -> dict[str, Any]:
        """``value``, the sizes and the base point's mean cost and quality; the
        per-segment arrays are in :meth:`to_frame`."""
        d = self._protocol_head()
        d.update(
            n_prompts=self.n_prompts,
            n_segments=self.n_segments,
            base_cost=plain(self.base_cost.mean() if self.n_prompts else None),
            base_quality=plain(self.base_quality.mean() if self.n_prompts else None),
        )
        return d

    def to_frame(self) -> pd.DataFrame:
        """One row per segment in slope order: ``prompt``, ``option_from``,
        ``option_to``, ``dcost``, ``dquality``, ``slope``."""
        return pd.DataFrame(
            {
                "prompt": self.prompt,
                "option_from": self.option_from,
                "option_to": self.option_to,
                "dcost": self.dcost,
                "dquality": self.dquality,
                "slope": self.slope,
            }
        )

    @property
    def n_segments(self) -> int:
        return int(self.prompt.shape[0])

    @property
    def slope(self) -> np.ndarray:
        """``dquality / dcost`` per segment (descending)."""
        return self.dquality / self.dcost

    def vertices(self, weights: np.ndarray | None = None) -> np.ndarray:
        """All ``S + 1`` running points ``(cost, quality)`` for prompt ``weights``
        (default ``1 / N`` each), collinear points included; segments of prompts with
        zero weight are left out. See :func:`frontier_vertices` for the reduced set."""
        return self._points(_weights(weights, self.n_prompts))

    def _points(self, w: np.ndarray) -> np.ndarray:
        ws = w[self.prompt]
        use = ws > 0
        x0 = float(np.sum(w * self.base_cost))
        y0 = float(np.sum(w * self.base_quality))
        x = x0 + np.cumsum(ws[use] * self.dcost[use])
        y = y0 + np.cumsum(ws[use] * self.dquality[use])
        return np.column_stack([np.r_[x0, x], np.r_[y0, y]])


def _weights(weights: np.ndarray | None, n: int) -> np.ndarray:
    if weights is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"weights must be shaped ({n},), got {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("weights must be finite and >= 0")
    total = w.sum()
    if not total > 0:
        raise ValueError("weights must not all be zero")
    return w / total


def _segments_from_dict(d: dict[str, np.ndarray]) -> HullSegments:
    return HullSegments(
        base_cost=np.asarray(d["base_cost"], dtype=np.float64),
        base_quality=np.asarray(d["base_quality"], dtype=np.float64),
        base_option=np.asarray(d["base_option"], dtype=np.int64),
        prompt=np.asarray(d["prompt"], dtype=np.int64),
        dcost=np.asarray(d["dcost"], dtype=np.float64),
        dquality=np.asarray(d["dquality"], dtype=np.float64),
        option_from=np.asarray(d["option_from"], dtype=np.int64),
        option_to=np.asarray(d["option_to"], dtype=np.int64),
    )


def _check_segments(seg: HullSegments) -> HullSegments:
    missing = np.flatnonzero(seg.base_option < 0)
    if missing.size:
        raise ValueError(
            f"{missing.size} prompt(s) have no available option (first: row "
            f"{int(missing[0])}); every prompt needs a finite cost and quality for at "
            "least one option"
        )
    return seg


def hull_segments(
    option_cost: np.ndarray,
    option_quality: np.ndarray,
    *,
    backend: str | None = None,
) -> HullSegments:
    """Per-prompt upper-left hulls of the options, merged by slope (design §6,
    steps 1-2).

    Parameters
    ----------
    option_cost, option_quality : (N, M) float
        Cost (>= 0) and quality of option ``j`` on prompt ``n``; a NaN or infinite
        cost or quality marks an unavailable option. Every prompt needs one
        available option.
    backend : ``None`` | ``"cpp"`` | ``"numba"`` | ``"numpy"``

    Returns
    -------
    HullSegments
        The frontier for prompt weights ``w`` is
        ``(sum w * base_cost + cumsum(w[prompt] * dcost), ...)``; the backends return
        identical segments (same tie rules and float operations).
    """
    name = resolve_backend(backend)
    c = np.ascontiguousarray(option_cost, dtype=np.float64)
    q = np.ascontiguousarray(option_quality, dtype=np.float64)
    if c.ndim != 2:
        raise ValueError(f"option_cost must be shaped (N, M), got {c.shape}")
    if q.shape != c.shape:
        raise ValueError(
            f"option_quality shaped {q.shape} does not match option_cost {c.shape}"
        )
    if c.shape[0] == 0 or c.shape[1] == 0:
        raise ValueError(f"no prompts or no options (shape {c.shape})")
    if (c < 0).any():
        raise ValueError("option_cost must be >= 0 (NaN/inf mark unavailable options)")
    d = dispatch("hull_segments_dense", name)(c, q)
    return _check_segments(_segments_from_dict(d))


# --------------------------------------------------------------------------- options
def _cost_source(results: EvalResults, cost: Any) -> tuple[np.ndarray, bool]:
    """``(array, divide)``: the per-cell cost of one generation is ``array / n_draws``
    (``divide``, the results' cost sums) or ``array`` (an ``(N, L)`` view, possibly
    broadcast); validated, NaN not yet set where the model was not run."""
    N, L = results.n_prompts, results.n_models
    if cost is None:
        if not results.has_cost:
            raise ValueError(
                "these results have no cost; pass cost='unit' to count generations "
                "(cost 1 each), or cost=<array (N, L) or (L,)> with the cost of one "
                "generation per cell or per model"
            )
        check_sum_finite(results.stats.cost_sum, "cost")
        return results.stats.cost_sum, True
    if isinstance(cost, str):
        if cost != "unit":
            raise ValueError(f"cost must be None, 'unit' or an array, got {cost!r}")
        return np.broadcast_to(np.ones(1), (N, L)), False
    arr = _numeric(cost, "cost")
    if arr.shape == (L,):
        arr = np.broadcast_to(arr, (N, L))
    if arr.shape != (N, L):
        raise ValueError(f"cost must be shaped ({N}, {L}) or ({L},), got {arr.shape}")
    _check_run_cells(results, arr, "cost", "a finite cost >= 0")
    if (arr < 0).any():
        raise ValueError("cost must be >= 0")
    return arr, False


def _numeric(values: Any, name: str) -> np.ndarray:
    """A user's per-cell array as float64 (``ValueError`` naming ``name`` for
    strings, objects and ragged lists)."""
    try:
        arr = np.asarray(values)
    except ValueError as err:
        raise ValueError(f"{name} could not be read as an array: {err}") from None
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    return np.asarray(arr, dtype=np.float64)


def _check_run_cells(
    results: EvalResults, arr: np.ndarray, name: str, need: str
) -> None:
    """Every cell the model was run on needs a finite value (the cells it was not
    run on are left out whatever they hold)."""
    bad = ~np.isfinite(arr) & results.observed
    if bad.any():
        n, l = np.argwhere(bad)[0]
        raise ValueError(
            f"{name} is NaN or inf at {int(bad.sum())} cell(s) the model was run on "
            f"(first: prompt {results.prompts[n]!r}, model {results.models[l]!r}); "
            f"give every run cell {need}, or leave models out with "
            "results.select(models=...)"
        )


def _cell_cost(results: EvalResults, cost: Any) -> np.ndarray:
    """Mean cost of one generation per cell (N, L); NaN where unavailable."""
    arr, divide = _cost_source(results, cost)
    if divide:
        # = results.mean_cost in one pass: 0 / 0 = NaN where the model was not run
        with np.errstate(invalid="ignore", divide="ignore"):
            return arr / results.stats.n_draws  # as stored: no widened copy
    out = np.array(arr, dtype=np.float64)
    out[~results.observed] = np.nan
    return out


def _prehoc_segments(
    results: EvalResults, quality: Any, cost: Any, backend: str
) -> dict:
    """The prehoc hull merge straight from the per-cell arrays (the C++ kernel reads
    any strides, so broadcast ``n_draws`` or per-model costs are read in place): the
    same options and float operations as ``hull_segments(_cell_cost(...),
    _cell_quality(...))``."""
    cnum, divide_cost = _cost_source(results, cost)
    if isinstance(quality, str) and quality == "naive":
        # the stored sums as they are (compact uint8/uint16 counts included): the
        # kernels widen each value to double as they read it, so no (N, L) copy
        qnum, divide_quality = results.stats.successes, True
    else:
        qnum, divide_quality = _cell_quality(results, quality), False
    qnum = _kernel_dtype(qnum, np.float64)
    G = _kernel_dtype(results.stats.n_draws, np.int64)
    cnum = np.asarray(cnum, dtype=np.float64)
    run = dispatch("hull_segments_cells", backend)
    return run(qnum, G, cnum, divide_quality, divide_cost)


# dtypes the per-cell kernels read in place (any strides): integer counts and draw
# numbers as stored (compact uint8/uint16 included), widened to double exactly as
# they are read, so the result does not depend on the dtype
_COUNT_DTYPES = tuple(np.dtype(t) for t in (np.int64, np.int32, np.uint16, np.uint8))


def _kernel_dtype(arr: np.ndarray, fallback: type) -> np.ndarray:
    """``arr`` as it is when the per-cell kernels read its dtype (the integer counts,
    or float64 for a ``fallback`` of float64), else converted to ``fallback``."""
    arr = np.asarray(arr)
    if arr.dtype in _COUNT_DTYPES or arr.dtype == np.dtype(fallback):
        return arr
    return np.asarray(arr, dtype=fallback)


def _cell_quality(results: EvalResults, quality: Any) -> np.ndarray:
    """Per-cell single-generation quality (N, L); NaN where not run."""
    if isinstance(quality, str) and quality == "naive":
        # = results.p_hat in one pass: 0 / 0 = NaN where the model was not run
        with np.errstate(invalid="ignore", divide="ignore"):
            return results.stats.successes / results.stats.n_draws
    if not isinstance(quality, str):
        arr = np.array(_numeric(quality, "quality"))
        if arr.shape != (results.n_prompts, results.n_models):
            raise ValueError(
                "quality array must be shaped "
                f"{(results.n_prompts, results.n_models)}, got {arr.shape}"
            )
        _check_run_cells(results, arr, "quality", "a quality in [0, 1]")
        arr[~results.observed] = np.nan
        outside = (arr < 0) | (arr > 1)
        if outside.any():
            raise ValueError(
                f"quality must lie in [0, 1] (a success probability or mean score); "
                f"{int(outside.sum())} value(s) outside, e.g. "
                f"{float(arr[outside][0])!r}"
            )
        return arr
    if quality == "pgm":
        from .debias import debiased_oracle

        # posterior means E_post[p[n, l]] of the latent model (design §4b): the
        # frontier's top is then mean_n max_l E_post[p[n, l]]
        fit = debiased_oracle(results, "pgm")
        arr = np.array(fit.diagnostics["posterior_mean_p"], dtype=np.float64)
    else:
        raise ValueError(
            f"quality={quality!r} is not supported: per-cell estimates exist for "
            "'naive' (p_hat) and 'pgm' (posterior means of the latent model) "
            f"(PER_CELL_QUALITY = {PER_CELL_QUALITY}); or pass an (N, L) array of "
            "per-cell quality estimates"
        )
    arr[~results.observed] = np.nan
    return arr


def _resolve_max_k(results: EvalResults, posthoc: bool, max_k: int | None) -> int:
    if max_k is not None:
        max_k = whole_number(max_k, "max_k")
    if not posthoc:
        if max_k not in (None, 1):
            raise ValueError("max_k applies to posthoc=True only")
        return 1
    if max_k is None:
        return results.max_draws
    k = int(max_k)
    if k < 1:
        raise ValueError(f"max_k must be >= 1, got {max_k}")
    return min(k, results.max_draws)


def _graded_best_of_k(results: EvalResults, K: int) -> np.ndarray:
    """(N, L, K): unbiased E[max of k of the G draws] from the raw scores."""
    if results.scores is None:
        raise ValueError(
            "posthoc options of graded scores need the raw scores (build the results "
            "with keep_scores=True)"
        )
    scores = np.asarray(results.scores, dtype=np.float64)
    valid = results.valid_draws
    srt = np.sort(np.where(valid, scores, np.inf), axis=2)  # valid ones first
    G = results.n_draws
    out = np.full((*G.shape, K), np.nan)
    from scipy.special import comb

    for g in np.unique(G[G > 0]):
        cells = G == g
        vals = srt[cells][:, :g]  # ascending
        i = np.arange(1, g + 1)
        for k in range(1, min(K, g) + 1):
            w = comb(i - 1, k - 1) / comb(g, k)
            out[cells, k - 1] = vals @ w
    return out


def _int_successes(results: EvalResults) -> np.ndarray:
    """Binary success counts as int64 (rounded when held as floats), from the
    stored sums (no int32 copy made and kept on the results)."""
    S = np.asarray(results.stats.successes)
    if S.dtype.kind in "iu":
        return S.astype(np.int64)
    return np.rint(S).astype(np.int64)


def _count_array(results: EvalResults) -> np.ndarray:
    """Binary success counts in a dtype the kernels read in place: as stored
    (int64/int32/uint16/uint8), other integers as int64, floats rounded."""
    S = np.asarray(results.stats.successes)
    if S.dtype in _COUNT_DTYPES:
        return S
    return _int_successes(results)


def frontier_options(
    results: EvalResults,
    *,
    posthoc: bool = False,
    max_k: int | None = None,
    quality: str | np.ndarray = "naive",
    cost: str | np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every prompt's routing options as dense arrays (design §6).

    Parameters
    ----------
    results : EvalResults
    posthoc : bool
        ``False``: one option per model, ``(cbar[n, l], q[n, l])``. ``True``: best of
        ``k`` generations of each model, ``k = 1..max_k``:
        ``(k * cbar[n, l], pass@k[n, l])`` (unbiased pass@k, or the unbiased expected
        max of ``k`` draws for graded scores).
    max_k : int, optional
        Largest ``k`` (default: the most draws of any cell); ``k > n_draws[n, l]`` is
        unavailable.
    quality : ``"naive"``, ``"pgm"`` or (N, L) array
        Per-cell quality of one generation: ``p_hat`` (naive), the latent model's
        posterior means (``"pgm"``) or given estimates (prehoc only). The other
        debiasing methods estimate only the oracle, not per-cell qualities.
    cost : None, ``"unit"`` or array (N, L) / (L,)
        Cost of one generation: the results' mean cost per cell (default),
        1 per generation, or given: finite and >= 0 on every cell the model was
        run on (NaN/inf there raise ``ValueError``; other cells are left out).

    Returns
    -------
    option_cost, option_quality : (N, M) float
        NaN for unavailable options (model not run, ``k > n_draws``, NaN cost).
    option_model : (M,) int
        Model index (into ``results.models``) of each option.
    option_k : (M,) int
        Generations ``k`` of each option (1 for prehoc).
        Option ``j = l * K + (k - 1)``.
    """
    K = _resolve_max_k(results, posthoc, max_k)
    cbar = _cell_cost(results, cost)
    N, L = cbar.shape
    option_model = np.repeat(np.arange(L, dtype=np.int64), K)
    option_k = np.tile(np.arange(1, K + 1, dtype=np.int64), L)
    if not posthoc:
        q = _cell_quality(results, quality)
        c = np.where(np.isfinite(q), cbar, np.nan)
        return c, np.where(np.isfinite(c), q, np.nan), option_model, option_k
    if not (isinstance(quality, str) and quality == "naive"):
        raise ValueError(
            "posthoc=True uses the unbiased pass@k of each cell as its quality; "
            "quality= other than 'naive' applies to the prehoc frontier only"
        )
    if results.is_binary:
        S = _int_successes(results)
        qk = _binary_pass_at_k(S, results.stats.n_draws.astype(np.int64), K)
    else:
        qk = _graded_best_of_k(results, K)
    ck, qk = _best_of_k_arrays(cbar, qk)
    return ck, qk, option_model, option_k


def frontier_segments(
    results: EvalResults,
    *,
    posthoc: bool = False,
    max_k: int | None = None,
    quality: str | np.ndarray = "naive",
    cost: str | np.ndarray | None = None,
    backend: str | None = None,
) -> tuple[HullSegments, np.ndarray, np.ndarray]:
    """``hull_segments(*frontier_options(...)[:2])`` and the option labels
    ``(option_model, option_k)``; binary posthoc options are built per block of
    prompts inside the kernels, never as ``(N, L*K)`` arrays (identical result)."""
    name = resolve_backend(backend)
    K = _resolve_max_k(results, posthoc, max_k)
    L = results.n_models
    fused = (
        posthoc
        and results.is_binary
        and isinstance(quality, str)
        and quality == "naive"
    )
    if not posthoc:
        om, ok = np.arange(L, dtype=np.int64), np.ones(L, dtype=np.int64)
        d = _prehoc_segments(results, quality, cost, name)
        return _check_segments(_segments_from_dict(d)), om, ok
    if not fused:
        c, q, om, ok = frontier_options(
            results, posthoc=posthoc, max_k=max_k, quality=quality, cost=cost
        )
        return hull_segments(c, q, backend=name), om, ok
    # the counts and cost sums as stored (compact uint8 counts, a broadcast
    # n_draws, per-model costs): the C++ kernel reads any strides and widens each
    # value as it reads it, so no (N, L) int64 or float64 copy is made
    cnum, divide_cost = _cost_source(results, cost)
    S = _count_array(results)
    G = _kernel_dtype(results.stats.n_draws, np.int64)
    cnum = np.asarray(cnum, dtype=np.float64)
    d = dispatch("hull_segments_posthoc", name)(S, G, cnum, K, divide_cost)
    om = np.repeat(np.arange(L, dtype=np.int64), K)
    ok = np.tile(np.arange(1, K + 1, dtype=np.int64), L)
    return _check_segments(_segments_from_dict(d)), om, ok


# --------------------------------------------------------------------------- metrics
def frontier_vertices(
    segments: HullSegments,
    weights: np.ndarray | None = None,
    *,
    backend: str | None = None,
) -> np.ndarray:
    """The frontier's vertices ``(M, 2)``, cost ascending: the running points of
    :meth:`HullSegments.vertices` with interior points of equal-slope runs removed
    (slopes equal to a relative 1e-12, i.e. collinear up to rounding; the segments
    are sorted, so runs are adjacent). The backends agree exactly: the start
    ``(sum w * base_cost, sum w * base_quality)`` is summed by NumPy, the running sums
    are sequential (as ``numpy.cumsum``)."""
    run = dispatch("frontier_vertices", backend)
    w = _weights(weights, segments.n_prompts)
    x0 = float(np.sum(w * segments.base_cost))
    y0 = float(np.sum(w * segments.base_quality))
    return run(x0, y0, w, segments.prompt, segments.dcost, segments.dquality)


def quality_at(vertices: np.ndarray, cost: float | np.ndarray) -> np.ndarray | float:
    """Frontier quality at a mean cost (linear interpolation on the vertices): NaN
    below the cheapest policy's cost (beyond a relative 1e-12 of rounding slack), the
    top quality above the frontier's end."""
    v = np.asarray(vertices, dtype=np.float64)
    x = np.asarray(cost, dtype=np.float64)
    out = np.interp(x, v[:, 0], v[:, 1], right=v[-1, 1])
    out = np.where(x < v[0, 0] - _TOL * max(1.0, abs(v[0, 0])), np.nan, out)
    return float(out) if out.ndim == 0 else out


def cost_at(vertices: np.ndarray, quality: float | np.ndarray) -> np.ndarray | float:
    """Least mean cost that reaches a quality on the frontier: the cheapest policy's
    cost at or below its quality, NaN above the frontier's top quality."""
    v = np.asarray(vertices, dtype=np.float64)
    y = np.asarray(quality, dtype=np.float64)
    out = np.interp(y, v[:, 1], v[:, 0], left=v[0, 0])
    out = np.where(y > v[-1, 1] + _TOL * max(1.0, abs(v[-1, 1])), np.nan, out)
    return float(out) if out.ndim == 0 else out


def _warn_outside(out: Any, asked: Any, name: str, where: str) -> None:
    """An :class:`OutsideFrontierWarning` when a lookup gave NaN for a non-NaN
    argument (NaN in, NaN out is not news)."""
    miss = np.isnan(np.asarray(out, dtype=np.float64)) & ~np.isnan(
        np.asarray(asked, dtype=np.float64)
    )
    if miss.any():
        first = np.asarray(asked, dtype=np.float64)[miss].ravel()[0]
        warnings.warn(
            f"{int(miss.sum())} {name} value(s) {where} (e.g. {first:.6g}): no policy "
            "on the frontier; returned NaN",
            OutsideFrontierWarning,
            stacklevel=3,
        )


def frontier_aiq(vertices: np.ndarray) -> float:
    """RouterBench's AIQ: area under the frontier over its cost range, divided by the
    range (the quality itself for a single-point frontier)."""
    v = np.asarray(vertices, dtype=np.float64)
    span = v[-1, 0] - v[0, 0]
    if not span > 0:
        return float(v[-1, 1])
    area = float(np.sum(np.diff(v[:, 0]) * (v[1:, 1] + v[:-1, 1]) / 2.0))
    return area / span


def frontier_metrics(
    vertices: np.ndarray, best_cost: float, best_accuracy: float
) -> dict[str, float]:
    """Matched-cost comparison of a frontier with a single model (design §6).

    - ``error_reduction = (err_best - err_frontier(C_best)) / err_best``, with
      ``err = 1 - accuracy`` (NaN when ``err_best == 0``);
    - ``cost_reduction = 1 - cost_frontier(A_best) / C_best`` (NaN when
      ``C_best == 0``);
    - ``aiq``: :func:`frontier_aiq`.

    Works on any vertex array whose cost column ascends (collinear and repeated
    points allowed), e.g. :meth:`HullSegments.vertices` of a bootstrap replicate.
    """
    err_best = 1.0 - float(best_accuracy)
    q = quality_at(vertices, best_cost)
    c = cost_at(vertices, best_accuracy)
    with np.errstate(divide="ignore", invalid="ignore"):
        er = (err_best - (1.0 - q)) / err_best if err_best > 0 else float("nan")
        cr = 1.0 - c / float(best_cost) if best_cost > 0 else float("nan")
    return {
        "error_reduction": float(er),
        "cost_reduction": float(cr),
        "aiq": frontier_aiq(vertices),
    }


# --------------------------------------------------------------------------- policy
@dataclass
class PolicyAt(ResultProtocol):
    """The frontier's routing policy at a budget.

    Attributes
    ----------
    cost, quality : float
        Mean cost (= the budget, or the frontier's end) and mean quality.
    option : (N,) int
        Option chosen per prompt (-1 for prompts outside the frontier's benchmark);
        for the randomised prompt, the cheaper of its two options.
    model : (N,) str
        Model of the chosen option ("" outside the benchmark).
    k : (N,) int
        Generations of the chosen option (0 outside the benchmark).
    share : pandas.Series
        Share of (weighted) prompts routed to each model; the randomised prompt
        counts fractionally.
    randomised : dict or None
        ``{"prompt", "prompt_label", "from", "to", "p_to"}``: at a budget between
        two vertices one prompt takes option ``to = (model, k)`` with probability
        ``p_to`` and ``from`` otherwise; ``None`` when the budget is met by a
        deterministic policy.
    """

    cost: float
    quality: float
    option: np.ndarray
    model: np.ndarray
    k: np.ndarray
    share: pd.Series
    randomised: dict[str, Any] | None = None

    @property
    def value(self) -> float:
        return self.quality

    def to_dict(self) -> dict[str, Any]:
        """``value`` (quality), ``cost``, ``share`` per model, ``randomised``;
        the per-prompt arrays are in :meth:`to_frame`."""
        d = self._protocol_head()
        d.update(
            cost=plain(self.cost),
            quality=plain(self.quality),
            share=plain(self.share),
            randomised=plain(self.randomised),
        )
        return d

    def to_frame(self) -> pd.DataFrame:
        """One row per prompt: the chosen ``option``, its ``model`` and ``k``."""
        return pd.DataFrame({"option": self.option, "model": self.model, "k": self.k})


# --------------------------------------------------------------------------- Frontier
@dataclass
class Frontier(ResultProtocol):
    """The exact cost-quality frontier (design §6). Build with :func:`frontier`.

    Attributes
    ----------
    vertices : (M, 2) array
        ``(mean cost per prompt, mean quality)``, cost ascending: the upper concave
        boundary of all randomised routing policies (collinear points removed).
    segments : HullSegments
    option_model, option_k : (M_options,) int
    models : model names
    weights : (N,) prompt weights (``1 / N`` each, or the benchmark's prompts)
    band : dict with ``cost``, ``lower``, ``upper`` arrays, or None
        Bootstrap band of ``quality_at`` (see :meth:`with_band`); drawn by :meth:`plot`.
    """

    vertices: np.ndarray
    segments: HullSegments
    option_model: np.ndarray
    option_k: np.ndarray
    models: np.ndarray
    weights: np.ndarray
    results: EvalResults = field(repr=False)
    posthoc: bool = False
    max_k: int = 1
    quality: Any = "naive"
    cost: Any = None
    benchmark_labels: np.ndarray | None = None
    backend: str | None = None
    band: dict[str, np.ndarray] | None = None

    @property
    def value(self) -> float:
        """The result protocol's headline: the AIQ (:meth:`aiq`)."""
        return float(self.aiq())

    def to_dict(self) -> dict[str, Any]:
        """``value`` (AIQ), the kind, the top quality and its cost, and the
        vertices as ``[cost, quality]`` pairs."""
        d = self._protocol_head()
        d.update(
            posthoc=self.posthoc,
            max_k=int(self.max_k),
            quality=self.quality if isinstance(self.quality, str) else "given",
            n_prompts=int((self.weights > 0).sum()),
            models=plain(self.models.astype(str)),
            max_quality=plain(self.max_quality),
            n_vertices=len(self.vertices),
            vertices=plain(self.vertices),
        )
        return d

    def to_frame(self) -> pd.DataFrame:
        """The vertices: one row per vertex, columns ``cost`` and ``quality``."""
        return pd.DataFrame(self.vertices, columns=["cost", "quality"])

    def __repr__(self) -> str:
        kind = f"posthoc k<={self.max_k}" if self.posthoc else "prehoc"
        v = self.vertices
        return (
            f"Frontier({kind}, N={int((self.weights > 0).sum())}, "
            f"L={len(self.models)}, {len(v)} vertices, cost {v[0, 0]:.6g}.."
            f"{v[-1, 0]:.6g}, quality {v[0, 1]:.6g}..{v[-1, 1]:.6g})"
        )

    # ---------------------------------------------------------------- lookups
    def quality_at(self, cost: float | np.ndarray) -> np.ndarray | float:
        """Frontier quality at mean cost ``cost`` (linear interpolation on the
        vertices; the top quality beyond the end).

        Below the cheapest policy's cost no policy exists: the answer is NaN, with
        an :class:`~capfront.errors.OutsideFrontierWarning` saying so.
        """
        out = quality_at(self.vertices, cost)
        _warn_outside(
            out, cost, "cost", f"below the cheapest policy's cost {self.min_cost:.6g}"
        )
        return out

    def cost_at(self, quality: float | np.ndarray) -> np.ndarray | float:
        """Least mean cost reaching ``quality`` (the cheapest policy's cost for a
        quality at or below its own).

        Above the top quality (:attr:`max_quality`) no policy reaches it: the
        answer is NaN, with an :class:`~capfront.errors.OutsideFrontierWarning`.
        """
        out = cost_at(self.vertices, quality)
        _warn_outside(
            out,
            quality,
            "quality",
            f"above the frontier's top quality {self.max_quality:.6g}",
        )
        return out

    def aiq(self) -> float:
        """Area under the frontier over its cost range divided by the range
        (RouterBench's AIQ)."""
        return frontier_aiq(self.vertices)

    @property
    def max_quality(self) -> float:
        return float(self.vertices[-1, 1])

    @property
    def min_cost(self) -> float:
        return float(self.vertices[0, 0])

    def policy_at(self, cost: float) -> PolicyAt:
        """The frontier's policy at mean budget ``cost``: segments are applied in
        slope order while they fit; the first that does not fit is applied to its
        prompt with probability ``p_to`` (the one randomised prompt)."""
        seg, w = self.segments, self.weights
        cost = float(cost)
        if not cost >= self.min_cost - 1e-12 * max(1.0, abs(self.min_cost)):
            raise ValueError(
                f"budget {cost} is below the cheapest policy's mean cost "
                f"{self.min_cost}"
            )
        ws = w[seg.prompt]
        idx = np.flatnonzero(ws > 0)
        dx = ws[idx] * seg.dcost[idx]
        x0 = float(np.sum(w * seg.base_cost))
        y0 = float(np.sum(w * seg.base_quality))
        xs = x0 + np.cumsum(dx)
        n_full = int(np.searchsorted(xs, cost, side="right"))
        applied = idx[:n_full]
        option = seg.base_option.copy()
        last = np.full(seg.n_prompts, -1, dtype=np.int64)
        np.maximum.at(last, seg.prompt[applied], applied)
        moved = last >= 0
        option[moved] = seg.option_to[last[moved]]
        quality = y0 + float(np.sum(ws[applied] * seg.dquality[applied]))
        spent = float(xs[n_full - 1]) if n_full else x0
        randomised = None
        p_to = 0.0
        s = -1
        if n_full < idx.size and cost > spent:
            s = int(idx[n_full])
            p_to = (cost - spent) / float(dx[n_full])
            if p_to > 0:
                quality += p_to * float(ws[s] * seg.dquality[s])
                spent = cost
        model_idx = self.option_model[option]
        k = self.option_k[option]
        inside = w > 0
        names = np.where(inside, self.models.astype(str)[model_idx], "")
        option = np.where(inside, option, -1)
        k = np.where(inside, k, 0)
        share = pd.Series(
            np.bincount(
                model_idx[inside], weights=w[inside], minlength=len(self.models)
            ),
            index=pd.Index(self.models.astype(str), name="model"),
            name="share",
        )
        if s >= 0 and p_to > 0:
            n = int(seg.prompt[s])
            fm, to = (
                int(self.option_model[seg.option_from[s]]),
                int(self.option_model[seg.option_to[s]]),
            )
            share.iloc[fm] -= p_to * w[n]
            share.iloc[to] += p_to * w[n]
            randomised = {
                "prompt": n,
                "prompt_label": self.results.prompts[n],
                "from": (str(self.models[fm]), int(self.option_k[seg.option_from[s]])),
                "to": (str(self.models[to]), int(self.option_k[seg.option_to[s]])),
                "p_to": float(p_to),
            }
        return PolicyAt(
            cost=spent,
            quality=quality,
            option=option,
            model=names,
            k=k,
            share=share,
            randomised=randomised,
        )

    # ---------------------------------------------------------------- singles
    def single_points(self, best_of_k: bool = True) -> pd.DataFrame:
        """Single models (``k = 1``) and, for a posthoc frontier with ``best_of_k``,
        their best-of-k points: ``(model, k, cost = mean k * cbar, quality = mean
        pass@k)`` over the frontier's prompts where the model has at least ``k``
        draws (``coverage``: their weight). Works per ``k`` on ``(N, L)`` arrays."""
        res, w = self.results, self.weights
        cbar = _cell_cost(res, self.cost)
        q1 = _cell_quality(res, "naive" if self.posthoc else self.quality)
        layers: Any = [(1, cbar, q1)]
        if self.posthoc and best_of_k and self.max_k > 1:
            layers = itertools.chain(layers, _best_of_k_layers(res, cbar, self.max_k))
        rows = []
        inside = (w > 0)[:, None]
        for k, ck, qk in layers:
            ok = np.isfinite(ck) & np.isfinite(qk) & inside
            wk = np.where(ok, w[:, None], 0.0)
            total = wk.sum(axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                cost = (wk * np.where(ok, ck, 0.0)).sum(axis=0) / total
                quality = (wk * np.where(ok, qk, 0.0)).sum(axis=0) / total
            for l in np.flatnonzero(total > 0):
                rows.append(
                    {
                        "model": str(self.models[l]),
                        "k": int(k),
                        "cost": float(cost[l]),
                        "quality": float(quality[l]),
                        "coverage": float(total[l]),
                        "_order": int(l),
                    }
                )
        table = pd.DataFrame(
            rows, columns=["model", "k", "cost", "quality", "coverage", "_order"]
        )
        table = table.sort_values(["_order", "k"], kind="stable")
        return table.drop(columns="_order").reset_index(drop=True)

    def best_single(self) -> tuple[str, float, float]:
        """(model, accuracy, mean cost) of the most accurate single model (one
        generation) on the frontier's prompts; ties (within 1e-12) go to the
        cheapest, then the first (the one rule of
        :func:`capfront.oracles.best_model`)."""
        pts = self.single_points(best_of_k=False)
        row = pts.iloc[best_model(pts["quality"].to_numpy(), pts["cost"].to_numpy())]
        return str(row["model"]), float(row["quality"]), float(row["cost"])

    def _compared_weights(self) -> np.ndarray:
        """The frontier's prompt weights on the prompts every model ran: with
        incomplete coverage, the best single model and the frontier are compared
        on the same prompts (the rule of ``capfront.baselines``; the other prompts
        still shape :attr:`vertices`)."""
        common = self.results.common_prompts
        if common.all():
            return self.weights
        w = np.where(common, self.weights, 0.0)
        if not (w > 0).any():
            raise ValueError(str(self.results.coverage_note))
        return w

    def _groups(self) -> dict[str, np.ndarray]:
        w = self._compared_weights()
        if self.benchmark_labels is None:
            return {"all": w}
        labels = self.benchmark_labels.astype(str)
        out = {}
        for name in dict.fromkeys(labels[w > 0]):
            out[name] = np.where(labels == name, w, 0.0)
        return out

    def sub(self, weights: np.ndarray) -> Frontier:
        """The frontier of the same options for other prompt weights (e.g. one
        benchmark's prompts); no hull is recomputed."""
        w = _weights(weights, self.segments.n_prompts)
        return Frontier(
            vertices=frontier_vertices(self.segments, w, backend=self.backend),
            segments=self.segments,
            option_model=self.option_model,
            option_k=self.option_k,
            models=self.models,
            weights=w,
            results=self.results,
            posthoc=self.posthoc,
            max_k=self.max_k,
            quality=self.quality,
            cost=self.cost,
            benchmark_labels=None,
            backend=self.backend,
        )

    def versus_best_single(
        self,
        ci: float | None = None,
        level: float = 0.95,
        *,
        refit: bool = False,
        **bootstrap_kwargs: Any,
    ) -> pd.DataFrame:
        """Frontier against the best single model, per benchmark and averaged.

        Per benchmark: the most accurate single model (``A_best``, ``C_best``),
        ``error_reduction = (err_best - err_frontier(C_best)) / err_best`` with
        ``err = 1 - accuracy``, ``cost_reduction = 1 - cost_frontier(A_best) / C_best``,
        ``aiq``, and the frontier's top quality (the oracle). With benchmark labels,
        the row ``"mean"`` averages the benchmarks' values (NaN ones, e.g. an error
        reduction where the best model makes no error, are skipped) and the row
        ``"all"`` pools every prompt (one frontier and one best model overall).

        ``ci`` (a confidence level, e.g. 0.95; ``level`` is used when ``ci=True``)
        adds percentile bootstrap intervals over prompts (resampled with
        replacement; ``n_resamples``, ``seed`` in ``bootstrap_kwargs``), columns
        ``error_reduction_low/high`` and ``cost_reduction_low/high`` (NaN for the
        ``"mean"`` row):

        - naive quality (``p_hat``, or pass@k for posthoc) with a named or per-model
          cost: :func:`capfront.bootstrap.bootstrap` (its fast path for the prehoc
          frontier, any of its keyword arguments);
        - any other quality (e.g. ``"pgm"``) or per-cell ``(N, L)`` quality / cost
          arrays: by default **conditional on the fitted per-cell estimates**: the
          per-cell qualities and costs are held fixed at their full-sample values,
          only prompts are resampled (a replicate re-weights the frontier's hull
          segments and the single models' column means, ``O(segments + N L)`` each,
          prompts drawn by the resampling engine's stream for ``seed``, as
          :func:`capfront.bootstrap.bootstrap` draws them). This ignores the
          estimation noise of the per-cell fit itself, so the interval is narrower
          than a full refit's;
        - ``refit=True`` (a named quality, cost not per-cell): refit the per-cell
          estimates on every replicate through ``capfront.bootstrap`` with a
          callable statistic (its slow path; cheap only for small data).
        """
        rows = [self._comparison_row(name, w) for name, w in self._groups().items()]
        table = pd.DataFrame(rows).set_index("benchmark")
        if len(rows) > 1:
            num = table.select_dtypes("number").mean()
            num["n_prompts"] = int(table["n_prompts"].sum())
            mean_row = num.to_frame().T
            mean_row.index = ["mean"]
            mean_row["best_model"] = ""
            pooled = self._comparison_row("all", self._compared_weights())
            table = pd.concat(
                [
                    table,
                    mean_row[table.columns],
                    pd.DataFrame([pooled]).set_index("benchmark"),
                ]
            )
            table.index.name = "benchmark"
            table["n_prompts"] = table["n_prompts"].astype(int)
        if ci is not None and ci is not False:
            lev = level if ci is True else float(ci)
            if not 0 < lev < 1:
                raise ValueError(f"ci level must lie in (0, 1), got {lev}")
            if self._per_cell_inputs() and not refit:
                table = self._add_ci_fixed(table, lev, **bootstrap_kwargs)
            else:
                table = self._add_ci(table, lev, **bootstrap_kwargs)
        return table

    def _per_cell_inputs(self) -> bool:
        """Quality other than naive, or per-cell (N, L) quality / cost arrays."""
        cost = self.cost
        per_cell_cost = not (
            cost is None or isinstance(cost, str) or np.ndim(cost) == 1
        )
        naive = isinstance(self.quality, str) and self.quality == "naive"
        return per_cell_cost or not naive

    def _single_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(quality, cost, available) of one generation per cell, as used by
        :meth:`single_points` for ``k = 1``."""
        res = self.results
        cbar = _cell_cost(res, self.cost)
        q1 = _cell_quality(res, "naive" if self.posthoc else self.quality)
        ok = np.isfinite(cbar) & np.isfinite(q1)
        return np.where(ok, q1, 0.0), np.where(ok, cbar, 0.0), ok.astype(np.float64)

    def _replicate_metrics(
        self, W: np.ndarray, q1: np.ndarray, c1: np.ndarray, ok: np.ndarray
    ) -> np.ndarray:
        """``(R, 2)`` error and cost reductions for prompt weight rows ``W``: the
        segments re-weighted, the best single model from the weighted column
        means (ties as :meth:`best_single`)."""
        out = np.empty((W.shape[0], 2))
        share = W @ ok
        with np.errstate(invalid="ignore", divide="ignore"):
            acc = np.where(share > 0, (W @ q1) / share, -np.inf)
            cst = np.where(share > 0, (W @ c1) / share, np.inf)
        best = best_models(acc, cst)
        for r in range(W.shape[0]):
            i = int(best[r])
            v = frontier_vertices(self.segments, W[r], backend=self.backend)
            m = frontier_metrics(v, float(cst[r, i]), float(acc[r, i]))
            out[r] = m["error_reduction"], m["cost_reduction"]
        return out

    def _add_ci_fixed(
        self,
        table: pd.DataFrame,
        level: float,
        n_resamples: int = 1000,
        seed: int = 0,
        **kwargs: Any,
    ) -> pd.DataFrame:
        """Percentile intervals conditional on the fitted per-cell estimates."""
        if kwargs:
            raise ValueError(
                "versus_best_single(ci=...) with fixed per-cell estimates takes "
                f"n_resamples and seed only, got {sorted(kwargs)}"
            )
        if int(n_resamples) < 2:
            raise ValueError(f"n_resamples must be >= 2, got {n_resamples}")
        from .resampling.engine import count_chunks

        q1, c1, ok = self._single_arrays()
        a = (1 - level) / 2
        groups = list(self._groups().values())
        if len(table) > len(groups):  # "mean" (no interval) and pooled "all"
            groups += [None, self._compared_weights()]
        lo: list[np.ndarray] = []
        hi: list[np.ndarray] = []
        N = self.segments.n_prompts
        for w in groups:
            if w is None:
                lo.append(np.full(2, np.nan))
                hi.append(np.full(2, np.nan))
                continue
            # the group's prompts resampled as cf.bootstrap resamples
            # results.select(inside): the engine's stream for this seed
            inside = np.flatnonzero(w > 0)
            reps = np.empty((int(n_resamples), 2))
            for b0, counts in count_chunks(
                inside.size, int(seed), int(n_resamples), self.backend
            ):
                W = np.zeros((counts.shape[0], N))
                W[:, inside] = counts
                W /= W.sum(axis=1, keepdims=True)
                reps[b0 : b0 + counts.shape[0]] = self._replicate_metrics(W, q1, c1, ok)
            bounds = np.full((2, 2), np.nan)
            for k in range(2):
                vals = reps[~np.isnan(reps[:, k]), k]
                if vals.size:
                    bounds[:, k] = np.quantile(vals, [a, 1 - a])
            lo.append(bounds[0])
            hi.append(bounds[1])
        table = table.copy()
        for k, col in enumerate(("error_reduction", "cost_reduction")):
            table[f"{col}_low"] = [float(x[k]) for x in lo]
            table[f"{col}_high"] = [float(x[k]) for x in hi]
        return table

    def _add_ci(self, table: pd.DataFrame, level: float, **kwargs: Any) -> pd.DataFrame:
        from .resampling.engine import bootstrap as fn

        table = table.copy()
        builtin = (
            not self.posthoc
            and isinstance(self.quality, str)
            and self.quality == "naive"
            and self.cost is None
        )
        cost = self.cost
        if not (cost is None or isinstance(cost, str) or np.ndim(cost) == 1):
            raise ValueError(
                "versus_best_single(ci=..., refit=True) cannot refit per-cell (N, L) "
                "cost arrays (they do not follow resampled prompts); use refit=False "
                "(intervals conditional on the per-cell values)"
            )
        if not isinstance(self.quality, str):
            raise ValueError(
                "versus_best_single(ci=..., refit=True) cannot refit a given (N, L) "
                "quality array; use refit=False (intervals conditional on it)"
            )
        for stat, col in (
            ("frontier_error_reduction", "error_reduction"),
            ("frontier_cost_reduction", "cost_reduction"),
        ):
            statistic: Any = stat
            if not builtin:  # the engine's built-in is the prehoc naive frontier
                statistic = _metric_statistic(
                    col, self.posthoc, self.max_k, self.quality, cost
                )
            lo, hi = [], []
            for _name, w in self._groups().items():
                data = (
                    self.results
                    if w.all()
                    else self.results.select(np.flatnonzero(w > 0))
                )
                res = fn(data, statistic, level=level, **kwargs)
                lo.append(float(res.ci[0]))
                hi.append(float(res.ci[1]))
            if len(table) > len(lo):  # "mean" (no interval) and pooled "all"
                w = self._compared_weights()
                data = (
                    self.results
                    if w.all()
                    else self.results.select(np.flatnonzero(w > 0))
                )
                res = fn(data, statistic, level=level, **kwargs)
                lo += [float("nan"), float(res.ci[0])]
                hi += [float("nan"), float(res.ci[1])]
            table[f"{col}_low"] = lo
            table[f"{col}_high"] = hi
        return table

    def _comparison_row(self, name: str, w: np.ndarray) -> dict[str, Any]:
        sub = self.sub(w)
        model, acc, cost = sub.best_single()
        m = frontier_metrics(sub.vertices, cost, acc)
        return {
            "benchmark": name,
            "n_prompts": int((w > 0).sum()),
            "best_model": model,
            "best_accuracy": acc,
            "best_cost": cost,
            "frontier_quality_at_best_cost": quality_at(sub.vertices, cost),
            "error_reduction": m["error_reduction"],
            "frontier_cost_at_best_accuracy": cost_at(sub.vertices, acc),
            "cost_reduction": m["cost_reduction"],
            "aiq": m["aiq"],
            "oracle_quality": sub.max_quality,
            "oracle_cost": float(sub.vertices[-1, 0]),
        }

    # ---------------------------------------------------------------- band / plot
    def with_band(
        self,
        n_resamples: int = 200,
        level: float = 0.95,
        seed: int = 0,
        n_grid: int = 200,
    ) -> Frontier:
        """Attach a percentile bootstrap band of ``quality_at`` over a cost grid:
        the frontier's prompts resampled with replacement by the resampling
        engine's Philox stream (:func:`capfront.bootstrap.replicate_counts` of the
        ``n`` prompts with positive weight: the same resamples as
        ``cf.bootstrap(results.select(those prompts), seed=seed)``); a replicate
        with draw counts ``c`` re-weights the hull segments, ``w = c / n`` (one hull
        sort reused for every replicate). Returns ``self``."""
        from .resampling.engine import count_chunks

        if not 0 < level < 1:
            raise ValueError("level must lie in (0, 1)")
        inside = np.flatnonzero(self.weights > 0)
        grid = np.linspace(self.min_cost, self.vertices[-1, 0], n_grid)
        tol = 1e-9 * max(1.0, abs(float(grid[-1])))
        reps = np.empty((n_resamples, n_grid))
        w = np.zeros(self.segments.n_prompts)
        for b0, counts in count_chunks(
            inside.size, int(seed), n_resamples, self.backend
        ):
            for r in range(counts.shape[0]):
                w[inside] = counts[r]
                v = self.segments.vertices(w)
                # left of a replicate's cheapest point its frontier is undefined,
                # unless that point is the grid's first up to rounding (unit
                # costs: a mean of ones can come out as 1 - 4e-16)
                left = v[0, 1] if v[0, 0] - grid[0] <= tol else np.nan
                reps[b0 + r] = np.interp(
                    grid, v[:, 0], v[:, 1], left=left, right=v[-1, 1]
                )
        a = (1 - level) / 2
        with warnings.catch_warnings():  # (a cost no replicate reaches: NaN)
            warnings.simplefilter("ignore", RuntimeWarning)
            lower, upper = np.nanquantile(reps, [a, 1 - a], axis=0)
        self.band = {"cost": grid, "lower": lower, "upper": upper, "level": level}
        return self

    def plot(
        self,
        ax: Any = None,
        *,
        label_models: bool = True,
        logx: bool | None = None,
        cost_label: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """Draw the frontier, the single models (the best one, the cheapest and
        those on or near the frontier named), each model's best-of-k curve
        (posthoc), the bootstrap band when attached, and arrows from the best
        single model to the frontier at its cost and at its accuracy. ``logx=None``
        makes the cost axis logarithmic when costs span more than 10x. More
        options: :func:`capfront.frontier_plot.plot_frontier`. Returns the Axes."""
        from .frontier_plot import plot_frontier

        return plot_frontier(
            self,
            ax,
            label_models=label_models,
            logx=logx,
            cost_label=cost_label,
            **kwargs,
        )


def _metric_statistic(
    column: str, posthoc: bool, max_k: int, quality: Any, cost: Any
) -> Any:
    """A statistic callable for capfront.bootstrap (its slow path): the pooled
    comparison metric of the frontier with these options."""

    def statistic(res: EvalResults) -> float:
        fr = frontier(
            res,
            posthoc=posthoc,
            max_k=max_k if posthoc else None,
            quality=quality,
            cost=cost,
        )
        return float(fr._comparison_row("all", fr.weights)[column])

    return statistic


def _best_of_k_layers(results: EvalResults, cbar: np.ndarray, K: int) -> Any:
    """``(k, k * cbar, pass@k)`` as ``(N, L)`` arrays for ``k = 2..K`` (the
    recursion of :func:`_binary_pass_at_k` one ``k`` at a time; graded scores use
    :func:`_graded_best_of_k`)."""
    if not results.is_binary:
        qk = _graded_best_of_k(results, K)
        for k in range(2, K + 1):
            yield k, k * cbar, qk[:, :, k - 1]
        return
    S = _int_successes(results)
    G = results.stats.n_draws.astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (G - S).astype(np.float64) / G.astype(np.float64)
        for k in range(2, K + 1):
            num = G - S - k + 1
            r = np.where(
                num > 0,
                r * (num.astype(np.float64) / (G - k + 1).astype(np.float64)),
                0.0,
            )
            yield k, k * cbar, np.where(k <= G, 1.0 - r, np.nan)


def _benchmark_weights(
    results: EvalResults, benchmark: Any
) -> tuple[np.ndarray, np.ndarray | None]:
    N = results.n_prompts
    if benchmark is None:
        return np.full(N, 1.0 / N), results.benchmark
    if isinstance(benchmark, str):
        if results.benchmark is None:
            raise ValueError(
                f"benchmark={benchmark!r} given but the results have no benchmark "
                "labels"
            )
        sel = results.benchmark.astype(str) == benchmark
        if not sel.any():
            known = sorted(set(results.benchmark.astype(str)))
            raise ValueError(f"unknown benchmark {benchmark!r}; known: {known}")
        return sel / sel.sum(), None
    labels = np.asarray(benchmark)
    if labels.shape != (N,):
        raise ValueError(
            f"benchmark must be a label or an array of {N} per-prompt labels, got "
            f"shape {labels.shape}"
        )
    return np.full(N, 1.0 / N), labels


def frontier(
    results: EvalResults,
    *,
    posthoc: bool = False,
    quality: str | np.ndarray = "naive",
    max_k: int | None = None,
    benchmark: str | Sequence[str] | np.ndarray | None = None,
    backend: str | None = None,
    cost: str | np.ndarray | None = None,
) -> Frontier:
    """The exact cost-quality frontier of oracle routing (design §6).

    Per prompt, the upper-left convex hull of its options; all hull segments sorted by
    slope (quality gained per cost) descending; every prompt starts at its cheapest
    option and the segments are applied in order: the running means are the
    vertices. ``O(N M log(N M))`` for ``M`` options per prompt, no lambda grid.

    Parameters
    ----------
    results : EvalResults
    posthoc : bool
        Add best-of-``k`` options of every model (quality = unbiased pass@k, cost =
        ``k`` times the cell's mean cost).
    quality : ``"naive"``, ``"pgm"`` or (N, L) array
        Per-cell quality of one generation: ``p_hat``, the latent model's posterior
        means ``E_post[p[n, l]]`` (design §4b; binary counts), or given estimates.
    max_k : int, optional
        Largest ``k`` for posthoc (default: the most draws of any cell).
    benchmark : label or (N,) labels, optional
        A label restricts the frontier to that benchmark's prompts; an array of
        per-prompt labels (default: ``results.benchmark``) defines the groups of
        :meth:`Frontier.versus_best_single`.
    backend : ``None`` | ``"cpp"`` | ``"numba"`` | ``"numpy"``
    cost : None | ``"unit"`` | array (N, L) or (L,)
        Cost of one generation (default: the results' mean cost per cell; data
        without cost raises and suggests ``cost="unit"``).

    Returns
    -------
    Frontier
    """
    require_results(results)
    name = resolve_backend(backend)
    weights, labels = _benchmark_weights(results, benchmark)
    K = _resolve_max_k(results, posthoc, max_k)
    seg, om, ok = frontier_segments(
        results, posthoc=posthoc, max_k=max_k, quality=quality, cost=cost, backend=name
    )
    return Frontier(
        vertices=frontier_vertices(seg, weights, backend=name),
        segments=seg,
        option_model=om,
        option_k=ok,
        models=np.asarray(results.models),
        weights=weights,
        results=results,
        posthoc=posthoc,
        max_k=K,
        quality=quality,
        cost=cost,
        benchmark_labels=labels,
        backend=name,
    )
