"""The audit at many draws per cell: the naive oracle, its bound and its interval.

When the naive oracle's bias is provably no larger than its standard error
(:func:`capfront.debias.classes.naive_shortcut`: ``B = mean_n sqrt(ln(L_n) / (2
g_n))`` bounds ``E[O_naive] - O`` from above, and ``O_naive`` is never biased
low), ``pgm`` returns the naive oracle, and simulating worlds to measure its
error would only re-measure what the bound already states (while fitting the
latent model to every world: at 10,000 draws per cell that took longer than
ten minutes). The audit then quotes the naive oracle with the interval

    ``O_naive +- (z SE + BIAS_FACTOR B)``

(``SE`` its prompt-level standard error): the audit's own interval rule with
the bound in place of the largest bias the worlds would have measured.

Below the shortcut, from a hundred to about a hundred thousand draws per cell
(``G > COARSE_MIN_G``), ``pgm`` fits the latent model to **binned counts**
(:func:`coarse_counts`): each cell's count rounded on the variance-stabilising
scale ``z = arcsin(sqrt(S / G))`` (standard deviation ``1 / (2 sqrt(G))``
whatever the rate) to a grid of step

    ``h = max(COARSE_STEP / (2 sqrt(G)), (pi / 2) / COARSE_LEVELS)``,

``S' = round(G sin^2(h round(z / h)))``, with ``S = 0`` and ``S = G`` kept and
``0 < S < G`` kept inside; the fits then read the cell as "its count is one of
the counts ``lo .. hi`` the rule maps to ``S'``" (:func:`bins`), with that
bin's exact likelihood ``P(lo <= S <= hi | G, p)``
(:class:`BinnedCounts`, ``latent._loglik_bins``). The likelihood tables hold a
row per bin: at most ``COARSE_LEVELS + 1`` per draw count, ``pi sqrt(G) /
COARSE_STEP`` below ``G = (COARSE_LEVELS COARSE_STEP / pi)^2`` (1,660 draws):
53 at ``G = 300``, 76 at 600, about 130 from 1,700 on, instead of ``G + 1`` (or
one per cell): the fit's cost no longer grows with ``G``.

Why bins, and not the rounded counts read as exact ones (the rule until issue
22's second pass: a quarter of a standard deviation, from 500 draws): a rounded
count read as exact carries a rounding error of variance about ``h^2 / 12``
that the model takes for cell effect, and pgm came out high by about that
share of the naive oracle's bias (+1.5e-4 at N = 2000, L = 33, G = 600 against
the fit of the exact counts, at 0.5% more variance; a coarser step would have
cost proportionally more). Read as bins, the data are exactly what the
likelihood describes: a bin loses resolution within the cell's sampling noise
(about ``(2 h sqrt(G))^2 / 12`` of the cell's information on its rate: 8% at
one standard deviation), not accuracy (the same case: 4e-5 from the exact
counts' fit at one standard deviation, 2e-5 at half of one). A bin spans at
most ``h`` on the ``z`` scale (``sin^2`` is 1-Lipschitz, so at most ``h`` in the
rate too): one standard deviation up to 1,660 draws, ``pi / (2
COARSE_LEVELS) = 0.0123`` beyond, the width of one step of the latent model's t
grid at ``p = 1/2`` (0.05 on the logit scale), which is the resolution the
model has there anyway.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ._input import row_blocks
from .audit_result import NO_WORLDS, AuditResult, quote
from .result import Decomposition

#: cells with more draws than this are coarsened for pgm's fit (the likelihood
#: tables hold a row per (G, S) pair: G + 1 rows, or one per cell, above)
COARSE_MIN_G = 100
#: the rounding step on the arcsine scale, in units of a cell's sampling
#: standard deviation ``1 / (2 sqrt(G))``
COARSE_STEP = 1.0
#: at most this many rounding steps over ``z = 0 .. pi / 2`` (rows per draw count)
COARSE_LEVELS = 128
#: the coarsened counts as :class:`BinnedCounts` (the fits read each bin's exact
#: likelihood) rather than as the rounded counts themselves
COARSE_BINNED = True


class BinnedCounts(np.ndarray):
    """Counts rounded by :func:`coarse_counts`' rule that carry the rule
    (``rule = (min_g, step, levels)``): the latent model's tables read such a
    cell as "the count lies in the bin of counts the rule maps to this one"
    (:func:`bins`; the exact likelihood of the binned data, so the bins' width
    costs information but adds no noise the model does not know of). Slices
    and fancy indexing keep the rule."""

    rule: tuple | None

    def __array_finalize__(self, obj) -> None:
        self.rule = getattr(obj, "rule", None)


def _rounded(s: np.ndarray, g: np.ndarray, step: float, levels: int) -> np.ndarray:
    """The rule on int64 counts ``s`` of ``g > 0`` draws (the module docstring)."""
    gb = g.astype(np.float64)
    h = np.maximum(step / (2.0 * np.sqrt(gb)), 0.5 * np.pi / levels)
    z = np.arcsin(np.sqrt(s / gb))
    s_new = np.rint(gb * np.sin(np.minimum(h * np.rint(z / h), 0.5 * np.pi)) ** 2)
    s_new = s_new.astype(np.int64)
    inside = (s > 0) & (s < g)
    return np.where(inside, np.clip(s_new, 1, g - 1), s)


def coarse_counts(
    S: np.ndarray,
    G: np.ndarray,
    *,
    min_g: int | None = None,
    step: float | None = None,
    levels: int | None = None,
    binned: bool | None = None,
) -> np.ndarray | None:
    """``S`` with the counts of cells of more than ``min_g``
    (:data:`COARSE_MIN_G`) draws rounded on the arcsine scale (the module
    docstring gives the rule; ``step``, ``levels``: :data:`COARSE_STEP`,
    :data:`COARSE_LEVELS`), in ``S``'s dtype and in blocks of prompts; ``None``
    when no cell has that many draws (the counts are then used as they are).
    ``binned``: a :class:`BinnedCounts` carrying the rule."""
    min_g = COARSE_MIN_G if min_g is None else int(min_g)
    step = COARSE_STEP if step is None else float(step)
    levels = COARSE_LEVELS if levels is None else int(levels)
    binned = COARSE_BINNED if binned is None else bool(binned)
    G = np.broadcast_to(G, np.shape(S))
    if int(G.max()) <= min_g:
        return None
    out = np.array(S, copy=True)
    for sl in row_blocks(len(S)):
        g = np.asarray(G[sl], dtype=np.int64)
        big = g > min_g
        if not big.any():
            continue
        s = np.asarray(S[sl], dtype=np.int64)[big]
        block = out[sl]
        block[big] = _rounded(s, g[big], step, levels).astype(out.dtype)
    if binned:
        out = out.view(BinnedCounts)
        out.rule = (min_g, step, levels)
    return out


def bins(g: np.ndarray, s: np.ndarray, rule: tuple) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``: the counts ``lo .. hi`` of ``g`` draws that ``rule``
    (:class:`BinnedCounts`) maps to ``s``, for int64 pairs ``(g, s)`` (``g`` up
    to ``min_g``: ``lo = hi = s``)."""
    min_g, step, levels = rule
    g = np.asarray(g, dtype=np.int64)
    s = np.asarray(s, dtype=np.int64)
    lo, hi = s.copy(), s.copy()
    for gv in np.unique(g[g > min_g]):
        at = np.flatnonzero(g == gv)
        allc = np.arange(int(gv) + 1, dtype=np.int64)
        m = _rounded(allc, np.full_like(allc, gv), step, levels)  # monotone
        lo[at] = np.searchsorted(m, s[at], side="left")
        hi[at] = np.searchsorted(m, s[at], side="right") - 1
    return lo, hi


def shortcut_audit(
    short: Decomposition,
    methods,
    level: float,
    family: str,
    t0: float,
) -> AuditResult:
    """The :class:`~capfront.debias.audit.AuditResult` of data where ``pgm``
    takes the naive shortcut (``short``: its decomposition, with the bound and
    the note in ``diagnostics``). ``table`` holds ``pgm`` and ``naive`` (the same
    estimate): ``sd`` the standard error, ``max_abs_bias`` the bound (the bias
    itself is not measured: ``bias`` is NaN), ``rmse`` the bound on the RMSE
    ``sqrt(SE^2 + B^2)``; no world is simulated (``n_sims = 0``). ``note`` gives
    the reason, ``quoted`` is :func:`capfront.debias.audit.quote`'s (the naive
    oracle, its interval from the table's ``sd`` and ``max_abs_bias``)."""

    value = float(short.estimate())
    se = float(short.standard_error())
    se = se if np.isfinite(se) else 0.0
    bound = float(short.diagnostics["naive_bias_bound"])
    rmse = float(np.hypot(se, bound))
    row = {
        "bias": np.nan,
        "abs_bias": np.nan,
        "rmse": rmse,
        "rmse_corrected": rmse,
        "sd": se,
        "max_abs_bias": bound,
        "rmse_population": rmse,
        "coverage": np.nan,
        "coverage_prompts": np.nan,
        "mean_se": se,
        "interval_coverage": np.nan,
        "interval_coverage_population": np.nan,
        "worst_world": "",
    }
    names = ["pgm"] + (["naive"] if "naive" in methods else [])
    table = pd.DataFrame([{"method": m} | row for m in names]).set_index("method")
    out = AuditResult(
        table=table,
        recommended="pgm",
        truth_population=np.nan,
        n_sims=0,
        level=float(level),
        fit=None,
        family=family,
        trusted=True,
        corrected=False,
        data_estimates={
            "value": dict.fromkeys(names, value),
            "se": dict.fromkeys(names, se),
        },
        latent_classes=0,
    )
    out.note = NO_WORLDS + str(short.diagnostics["note"])
    out.quoted = quote(out)
    out.seconds = time.perf_counter() - t0
    return out
