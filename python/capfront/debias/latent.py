"""The latent difficulty / topic / aptitude model (design §4b, our design).

``logit q[n, l] = theta[l, topic(n)] - d[n]``; the cell's success probability
``p[n, l]`` scatters around ``q`` by a cell effect: ``logit p = logit q + u``,
``u ~ N(0, tau^2)`` (``family="logitnormal"``, Binomial likelihood; ``tau = 0`` is
the plain Binomial model), ``u ~ tau t_nu`` (``family="logit_t"``: Student t with
``nu`` degrees of freedom, for cell effects with rare large values, which the
normal shrinks too hard; ``nu`` is chosen from ``T_DF_GRID`` by the marginal
likelihood, :func:`fit_t_df`, and reported as ``LatentFit.t_df``) or
``p ~ Beta(q c, (1 - q) c)``, ``c = (1 - rho) / rho`` (``family="betabinomial"``:
the counts are Beta-Binomial). Draws within a cell are Bernoulli(``p``).

Empirical Bayes: the difficulty prior is nonparametric, a discrete distribution on a
grid ``D_j`` (``d`` in [-12, 12], step 0.2) with weights fitted by maximum likelihood
(Kiefer-Wolfowitz NPMLE); ``theta`` (ridge penalty ``theta^2 / (2 * 5^2)``) and the
cell-effect scale are fitted jointly with it by EM on the marginal likelihood of
the counts ``S[n, l]``, integrating ``d`` and the cell effect out. Then
``O_pgm = mean_n E_post[max_l p[n, l]]`` (given ``d``, cells are independent, so
``E[max | d] = int_0^1 (1 - prod_l F_l(x | d)) dx`` with the posterior CDFs ``F_l``).

The EM's cell likelihoods are tabulated once per fit on grids (the linear predictor
``eta`` in [-14, 14], step 0.1, interpolated; ``logit p`` in [-16, 16], step 0.05,
with the cell effect's mass beyond that range as atoms at ``p = 0`` and ``p = 1``:
a Beta cell effect near the ceiling has most of its mass there), so the E-step
(C++ ``pgm_estep_stats``) is table look-ups, ``O(N L J)`` per iteration. The
posterior maximum (C++ ``pgm_emax``) uses the exact ``eta = theta - D_j`` of
every cell: per (topic, difficulty point) it builds each (model, count) cell's
posterior CDF of ``logit p`` once, then integrates
``1 - prod_l F_l`` by a trapezoid rule in ``t = logit x`` on nodes spaced by the
narrowest possible posterior of the maximum (:func:`emax_stride`). A zero cell
effect is a point mass: ``E[max | d] = max_l sigma(eta)`` exactly.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.special import betainc, expit, gammaln, ndtr, polygamma, stdtr

from .._backend import resolve_backend
from .._kernels import dispatch
from .._kernels.latent import LOGIT_T_DF, _matmul, log_mixing
from ._input import max_cells, row_blocks, row_dtype
from ._input import n_cells as count_cells
from .bias_correction import _identity
from .result import Decomposition

FAMILIES = ("logitnormal", "betabinomial", "logit_t")
# the rates' floor and ceiling: p = f + (c - f) sigma(t) (:func:`check_bounds`)
UNBOUNDED = (0.0, 1.0)


def check_bounds(bounds) -> tuple[float, float]:
    """``bounds = (f, c)``, the floor and ceiling of every cell's rate, as a
    tuple of floats; ``0 <= f < c <= 1``, else ``ValueError``."""
    try:
        f, c = (float(x) for x in bounds)
    except (TypeError, ValueError):
        raise ValueError(
            f"bounds must be a pair (floor, ceiling) of rates, got {bounds!r}"
        ) from None
    if not (0.0 <= f < c <= 1.0):
        raise ValueError(
            f"bounds (floor, ceiling) must satisfy 0 <= floor < ceiling <= 1, "
            f"got {bounds!r}"
        )
    return (f, c)


# family="logit_t": the degrees of freedom the fit chooses from (by marginal
# likelihood, walking from LOGIT_T_DF; :func:`fit_t_df`), and the log-likelihood
# (nats) a step must gain to be taken
T_DF_GRID = (1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
T_DF_MARGIN = 2.0
# EM iterations of a t fit that may lose likelihood before it stops
T_MAX_DOWN = 3
T_STEP = 0.05
T_GRID = np.arange(-16.0, 16.0 + T_STEP / 2, T_STEP)
ETA_STEP = 0.1
ETA_GRID = np.arange(-14.0, 14.0 + ETA_STEP / 2, ETA_STEP)
ETA_T_OFFSET = int(round((ETA_GRID[0] - T_GRID[0]) / T_STEP))  # eta_e = t[off + 2e]
# difficulty grid: its step must be a multiple of ETA_STEP and not much wider than
# the posterior SD of a prompt's difficulty (at 0.5 the fit inflated the cell
# effect to absorb the rounding and pgm came out ~0.1-0.2 points high at G L >= 300)
D_GRID = np.round(np.arange(-12.0, 12.0 + 0.1, 0.2), 10)
THETA_GRID = np.arange(-8.0, 8.0 + ETA_STEP / 2, ETA_STEP)
# Nodes of the posterior CDFs in the posterior maximum: every stride-th cell
# boundary t_i - T_STEP / 2 of the t grid, plus x = 0 and x = 1. cut[m] = number of
# t points below node m, so that a cell's CDF at a node is an exact partial sum of
# its discretised posterior. The integral over x is a trapezoid rule in t,
# int g(x) dx = int g(t) sigma'(t) dt: the integrand is smooth and vanishes at both
# ends, so the rule is far more accurate than a trapezoid in x on the same nodes.


def emax_nodes(
    stride: int, coarse: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(cut, w1, w2)``: node cuts and the weights of ``int g dx`` and
    ``int 2 x g dx``, on the t grid ``T_GRID[::coarse]``."""
    t = T_GRID[:: int(coarse)]
    step = T_STEP * int(coarse)
    b = np.arange(1, len(t), int(stride))
    tb = t[b] - step / 2
    dt = int(stride) * step
    x = expit(tb)
    lo = float(expit(tb[0] - dt / 2))  # below the first node g = 1: int = lo
    hi = float(expit(tb[-1] + dt / 2))
    w1 = dt * x * (1.0 - x)
    cut = np.concatenate([[0], b, [len(t)]]).astype(np.int64)
    w1_all = np.concatenate([[lo], w1, [1.0 - hi]])
    w2_all = np.concatenate([[lo * lo], 2.0 * x * w1, [1.0 - hi * hi]])
    return cut, np.ascontiguousarray(w1_all), np.ascontiguousarray(w2_all)


_NODES: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
MAX_STRIDE = 16


# logit-scale SD of the cell effect below which the posterior maximum treats it
# as a point mass (a fifth of the t grid's step)
POINT_MASS_SD = 0.2 * T_STEP


def _logit_sd(family: str, scale: float, t_df: float = LOGIT_T_DF) -> float:
    """SD of the cell effect on the logit scale (Beta: at ``q = 1/2``; Student
    t: ``tau sqrt(nu / (nu - 2))``; for ``nu <= 2``, whose variance is infinite,
    the width measure ``tau sqrt(3)`` of ``nu = 3``)."""
    if family == "logitnormal":
        return float(scale)
    if family == "logit_t":
        nu = float(t_df) if t_df > 2.0 else 3.0
        return float(scale) * float(np.sqrt(nu / (nu - 2.0)))
    c = (1.0 - float(scale)) / float(scale)
    return float(np.sqrt(2.0 * polygamma(1, c / 2.0)))


def _sd_of_max(L: int) -> float:
    """SD of the maximum of ``L`` independent standard normals."""
    x = np.linspace(-8.0, 8.0, 4001)
    dens = L * np.exp(-0.5 * x**2) / np.sqrt(2 * np.pi) * ndtr(x) ** (L - 1)
    dens /= dens.sum()
    m = dens @ x
    return float(np.sqrt(dens @ (x - m) ** 2))


def emax_stride(
    family: str,
    scale: float,
    g_max: int,
    n_models: int = 1,
    t_df: float = LOGIT_T_DF,
) -> int:
    """Node stride (in t-grid steps) of the x integral in the posterior maximum.

    The node spacing is at most the smallest SD the maximum of ``n_models`` cells
    can have on the logit scale: ``sd_max(L) * (1 / v + g_max / 4)^(-1/2)``, with
    ``v`` the cell-effect variance on the logit scale (``tau^2``; Beta:
    ``2 trigamma(c / 2)``, its value at ``q = 1/2``; Student t: the inverse
    curvature of its log density at the mode, ``nu tau^2 / (nu + 1)``, its
    narrowest part), ``g_max / 4`` the most
    information a cell's draws carry, and ``sd_max(L)`` the SD of the maximum of
    ``L`` standard normals. The trapezoid rule in ``t`` on this smooth integrand
    then agrees with stride 1 to about 1e-7 per prompt (checked in the tests).
    ``t_df``: the Student t's degrees of freedom ``nu``."""
    if not scale > 0:
        return 1
    if family == "logitnormal":
        v = float(scale) ** 2
    elif family == "logit_t":
        v = float(t_df) * float(scale) ** 2 / (float(t_df) + 1.0)
    else:
        c = (1.0 - float(scale)) / float(scale)
        v = 2.0 * float(polygamma(1, c / 2.0))
    sd = (1.0 / v + max(int(g_max), 1) / 4.0) ** -0.5
    sd *= _SD_MAX.setdefault(int(n_models), _sd_of_max(max(int(n_models), 1)))
    return int(np.clip(np.floor(sd / T_STEP), 1, MAX_STRIDE))


_SD_MAX: dict[int, float] = {}


def _nodes(stride: int, coarse: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    out = _NODES.get((stride, coarse))
    if out is None:
        out = _NODES[(stride, coarse)] = emax_nodes(stride, coarse)
    return out


# a cell's CDF below EMAX_EPS counts as 0 and above 1 - EMAX_EPS as 1 in the
# posterior maximum (changes the estimate by at most about L * EMAX_EPS)
EMAX_EPS = 1e-8
SUBSAMPLE_ABOVE = 60_000
# above this many (prompt, difficulty point) posteriors the fit stores none
# (a lean fit: E-steps and the posterior maximum in blocks of LEAN_BLOCK prompts)
LEAN_ABOVE = 1 << 24
LEAN_BLOCK = 1 << 16
SUBSAMPLE_SIZE = 20_000
SCALE_GRID = {
    "logitnormal": np.array(
        [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5]
    ),
    "betabinomial": np.array(
        [0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    ),
    "logit_t": np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0]),
}

# resolution of a fitted cell-effect scale (its likelihood tables are cached on
# this lattice); the estimate moves by about 3e-5 per lattice step
SCALE_RES = {"logitnormal": 0.005, "betabinomial": 0.001, "logit_t": 0.005}


def _profile_max(f: np.ndarray) -> float:
    """``sum_rows max_theta f``, each row's maximum refined by the parabola through
    the best candidate and its neighbours: a smooth function of the scale (the
    plain maximum over the 0.1 theta grid has kinks as large as the scale's
    effect on the objective)."""
    c = f.argmax(axis=1)
    r = np.arange(len(c))
    best = f[r, c]
    inner = np.flatnonzero((c > 0) & (c < f.shape[1] - 1))
    f0, f1, f2 = f[inner, c[inner] - 1], best[inner], f[inner, c[inner] + 1]
    den = f0 - 2 * f1 + f2
    ok = (den < 0) & np.isfinite(f0) & np.isfinite(f2)
    gain = np.where(ok, (f0 - f2) ** 2 / np.where(ok, -8 * den, 1.0), 0.0)
    return float(best.sum() + gain.sum())


def _scale_step(score, grid: np.ndarray, sc: float, h: float, res: float):
    """One M-step for the cell-effect scale: the profiled objective ``score(s)``
    at ``sc - h, sc, sc + h`` (``0, h, 2h`` at the boundary), the vertex of the
    parabola through them, clipped to ``sc +- 2h`` and rounded to ``res``.
    Returns ``(scale, its score table, next h)``: ``h`` shrinks with the moves."""
    top = float(grid[-1])
    lo = max(0.0, sc - h)
    xs = sorted(
        {
            round(lo / res) * res,
            round((lo + h) / res) * res,
            round(min(top, lo + 2 * h) / res) * res,
        }
    )
    scored = {x: score(x) for x in xs}
    best = max(scored, key=lambda x: scored[x][0])
    new = best
    if len(xs) == 3:
        (x0, x1, x2), (q0, q1, q2) = xs, [scored[x][0] for x in xs]
        den = (x0 - x1) * (x0 - x2) * (x1 - x2)
        a2 = (x2 * (q1 - q0) + x1 * (q0 - q2) + x0 * (q2 - q1)) / den
        a1 = (x2**2 * (q0 - q1) + x1**2 * (q2 - q0) + x0**2 * (q1 - q2)) / den
        if a2 < 0:
            v = float(
                np.clip(-a1 / (2 * a2), max(0.0, sc - 2 * h), min(top, sc + 2 * h))
            )
            new = round(v / res) * res
    new = float(round(new, 10))
    moved = abs(new - sc)
    h_next = float(np.clip(2 * moved, 4 * res, h))
    f = scored[new][1] if new in scored else score(new)[1]
    return new, f, h_next


def grid_tails(
    family: str,
    scale: float,
    eta: np.ndarray,
    t_lo: float,
    t_hi: float,
    t_df: float = LOGIT_T_DF,
) -> np.ndarray:
    """``(..., 3)``: the cell effect's probability that ``t = logit p`` lies below
    ``t_lo``, above ``t_hi``, and between them, for each ``eta`` (``scale > 0``;
    ``t_df``: the Student t's degrees of freedom).

    The Beta cell effect with a small ``(1 - q) c`` puts most of its mass far out:
    ``P(1 - p < eps) ~ eps^((1 - q) c)``, so at ``eta = 6`` and ``c = 4`` 87% of it
    lies beyond ``t = 16``. The tabulated cell distributions keep that mass as
    atoms at the grid's ends instead of spreading it over the grid (which inflated
    the chance of a failure 7-fold there)."""
    eta = np.asarray(eta, dtype=np.float64)
    if family == "logitnormal":
        lo, hi = (t_lo - eta) / scale, (t_hi - eta) / scale
        down, up = ndtr(lo), ndtr(-hi)
        # the inside as a difference of the two smaller tails (no cancellation)
        inside = np.where(eta >= 0.5 * (t_lo + t_hi), ndtr(hi) - down, ndtr(-lo) - up)
    elif family == "logit_t":
        lo, hi = (t_lo - eta) / scale, (t_hi - eta) / scale
        nu = float(t_df)
        down, up = stdtr(nu, lo), stdtr(nu, -hi)
        inside = np.where(
            eta >= 0.5 * (t_lo + t_hi), stdtr(nu, hi) - down, stdtr(nu, -lo) - up
        )
    else:
        c = (1.0 - scale) / scale
        q = np.clip(expit(eta), 1e-300, 1.0)
        a, b = q * c, np.maximum(expit(-eta) * c, 1e-300)
        down = betainc(a, b, expit(t_lo))
        up = betainc(b, a, expit(-t_hi))  # P(p > sigma(t_hi)) = I_{1-x}(b, a)
        inside = np.where(
            eta >= 0,
            betainc(b, a, expit(-t_lo)) - up,
            betainc(a, b, expit(t_hi)) - down,
        )
    return np.stack([down, up, np.clip(inside, 0.0, 1.0)], axis=-1)


def _mixing(
    family: str, scale: float, t_df: float = LOGIT_T_DF
) -> tuple[np.ndarray, np.ndarray]:
    """``(mix (n_t, n_eta), tails (n_eta, 3))``: the probabilities of ``logit p`` on
    the t grid's cells given ``eta`` (the density, scaled to the mass inside the
    grid) and the cell effect's mass below and above the grid
    (:func:`grid_tails`), atoms at ``p = 0`` and ``p = 1``. A zero scale is a
    point mass at ``t = eta``."""
    nt, ne = len(T_GRID), len(ETA_GRID)
    if scale <= 0:
        mix = np.zeros((nt, ne))
        mix[ETA_T_OFFSET + 2 * np.arange(ne), np.arange(ne)] = 1.0
        return mix, np.zeros((ne, 3))
    fam = FAMILIES.index(family)
    logd = np.ascontiguousarray(_log_mixing(fam, scale, ETA_GRID, T_GRID, t_df).T)
    logd -= logd.max(axis=0, keepdims=True)
    d = np.exp(logd)
    lo, hi = T_GRID[0] - T_STEP / 2, T_GRID[-1] + T_STEP / 2
    tails = grid_tails(family, scale, ETA_GRID, lo, hi, t_df)
    return d / d.sum(axis=0, keepdims=True) * tails[:, 2], tails


# Above this many table rows (the sum over the distinct draw counts G of G + 1) the
# tables hold only the (G, S) pairs the data has: the fit's cost is then bounded by
# the number of cells instead of growing with G (10,000 draws per cell made a
# 10,001-row table whose marginal likelihoods took minutes per fit).
FULL_ROWS_MAX = 4096
CELLS_BLOCK = 1 << 16  # prompts per block when the cells' table rows are built


def bounded_log_rates(
    t: np.ndarray, bounds: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """``(log p, log (1 - p))`` at logits ``t`` for ``p = f + (c - f) sigma(t)``,
    ``bounds = (f, c)``: ``p = f + (c - f) x`` and ``1 - p = (1 - c) + (c - f)
    y`` with ``x = sigma(t)``, ``y = sigma(-t)``, each a sum of non-negative
    terms (no cancellation near either bound). The one bounded Binomial rate
    used by the likelihood tables and the posterior world's cell draws."""
    f, c = bounds
    x, y = expit(t), expit(-t)
    return np.log(f + (c - f) * x), np.log((1.0 - c) + (c - f) * y)


def _log_rates(
    bounds: tuple[float, float] = UNBOUNDED,
) -> tuple[np.ndarray, np.ndarray]:
    """``(log p(t), log (1 - p(t)))`` on the t grid, ``p(t) = f + (c - f)
    sigma(t)`` for ``bounds = (f, c)`` (:data:`UNBOUNDED`: ``p = sigma(t)``)."""
    if tuple(bounds) == UNBOUNDED:
        return -np.logaddexp(0, -T_GRID), -np.logaddexp(0, T_GRID)
    return bounded_log_rates(T_GRID, bounds)


def _loglik_rows(
    g_all: np.ndarray, s_all: np.ndarray, bounds: tuple[float, float] = UNBOUNDED
) -> np.ndarray:
    """``log P(S | G, p(t))`` on the t grid, one row per ``(G, S)``
    (:func:`_log_rates`)."""
    lp, lq = _log_rates(bounds)
    g = g_all[:, None]
    s_ = s_all[:, None]
    logc = gammaln(g + 1) - gammaln(s_ + 1) - gammaln(g - s_ + 1)
    return np.ascontiguousarray(logc + s_ * lp[None] + (g - s_) * lq[None])


def _loglik_bins(
    g_all: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    bounds: tuple[float, float] = UNBOUNDED,
) -> np.ndarray:
    """``log P(lo <= S <= hi | G, p = sigma(t))`` on the t grid, one row per
    bin (binned counts, :class:`capfront.debias.many_draws.BinnedCounts`; a bin
    of one count is :func:`_loglik_rows`' row). Wide bins (all inside ``1 .. G -
    1``) from regularised incomplete Beta functions, each point from the form
    whose two terms are small (the upper tail below the bin, the lower above);
    where the count's mode lies outside the bin, kept between the larger end
    count's probability and ``hi - lo + 1`` times it (the far tails, where the
    incomplete Beta functions lose their relative accuracy or underflow)."""
    out = _loglik_rows(g_all, lo, bounds)
    wide = np.flatnonzero(hi > lo)
    if len(wide) == 0:
        return out
    out[wide] = np.maximum(out[wide], _loglik_rows(g_all[wide], hi[wide], bounds))
    lp, lq = _log_rates(bounds)
    p, q = np.exp(lp)[None], np.exp(lq)[None]
    for a0 in range(0, len(wide), 256):  # (bounded temporaries)
        w = wide[a0 : a0 + 256]
        g = g_all[w][:, None].astype(np.float64)
        a = lo[w][:, None].astype(np.float64)
        b = hi[w][:, None].astype(np.float64)
        # P(S >= a) - P(S >= b + 1), and P(S <= b) - P(S <= a - 1)
        up = betainc(a, g - a + 1, p) - betainc(b + 1, g - b, p)
        dn = betainc(g - b, b + 1, q) - betainc(g - a + 1, a, q)
        prob = np.where(p * g > 0.5 * (a + b), dn, up)
        with np.errstate(divide="ignore", invalid="ignore"):
            lp_ = np.log(np.where(prob > 0, prob, 0.0))
        # with the count's mode outside the bin its terms fall away from one
        # end: between that end's probability and the bin's width times it
        ends = out[w]
        mode = np.floor((g + 1) * p)
        outside = (mode < a) | (mode > b)
        lp_ = np.where(outside, np.minimum(lp_, ends + np.log(b - a + 1)), lp_)
        out[w] = np.maximum(ends, lp_)
    return np.ascontiguousarray(out)


def _log_binom_bin(
    g: np.ndarray, lo: np.ndarray, hi: np.ndarray, p: float
) -> np.ndarray:
    """``log P(lo <= S <= hi | G = g, p)`` for one rate ``p`` in [0, 1]."""
    from scipy.stats import binom

    g = np.asarray(g, dtype=np.float64)
    if p <= 0.0:
        return np.where(lo == 0, 0.0, -np.inf)
    if p >= 1.0:
        return np.where(hi == g, 0.0, -np.inf)
    with np.errstate(divide="ignore"):
        return np.log(
            np.maximum(binom.cdf(hi, g, p) - binom.cdf(np.asarray(lo) - 1, g, p), 0.0)
        )


class Tables:
    """Cell-level tables, one row per ``(G, S)`` pair. Full layout (``pairs``
    not given): every ``S = 0..G`` of the distinct draw counts ``g_values``, row
    ``offset[i] + s`` holding ``(g_values[i], s)``. Compact layout: the rows are
    the given ``pairs = (g_all, s_all)`` (``offset`` is ``None``)."""

    def __init__(
        self,
        g_values: np.ndarray,
        pairs: tuple[np.ndarray, np.ndarray] | None = None,
        rule: tuple | None = None,
        bounds: tuple[float, float] = UNBOUNDED,
    ) -> None:
        self.g_values = np.asarray(g_values, dtype=np.int64)
        self.bounds = (float(bounds[0]), float(bounds[1]))  # (checked by callers)
        if pairs is None:
            self.offset = np.concatenate([[0], np.cumsum(self.g_values + 1)])[:-1]
            s_all = np.concatenate([np.arange(g + 1) for g in self.g_values])
            g_all = np.repeat(self.g_values, self.g_values + 1)
        else:
            self.offset = None
            g_all, s_all = (np.asarray(x, dtype=np.int64) for x in pairs)
        self.g_all, self.s_all = g_all, s_all
        self.n_rows = len(g_all)
        if rule is None:
            self.loglik = _loglik_rows(g_all, s_all, self.bounds)  # (R, n_t)
        else:  # binned counts (compact layout): each row the likelihood of a bin
            from .many_draws import bins

            lo, hi = bins(g_all, s_all, rule)
            self.loglik = _loglik_bins(g_all, lo, hi, self.bounds)
        # (R, 2): log P(S | G, p) at the atoms t = -inf and t = +inf, p = f and
        # p = c (unbounded: p = 0 and p = 1, so 0 or -inf)
        f, c = self.bounds
        if self.bounds == UNBOUNDED:
            edges = [
                np.where(s_all == 0, 0.0, -np.inf),
                np.where(s_all == g_all, 0.0, -np.inf),
            ]
        elif rule is None:
            from scipy.stats import binom

            edges = [binom.logpmf(s_all, g_all, x) for x in (f, c)]
        else:
            edges = [_log_binom_bin(g_all, lo, hi, x) for x in (f, c)]
        self.edge_loglik = np.ascontiguousarray(np.stack(edges, axis=1))
        self.lik = np.exp(self.loglik)
        self._logh: dict[tuple, np.ndarray] = {}

    def logh(self, family: str, scale: float, t_df: float = LOGIT_T_DF) -> np.ndarray:
        """``log h(row, eta_e)``: log marginal probability of the cell's count
        (``t_df``: the Student t's degrees of freedom, ``family="logit_t"``)."""
        key = _logh_key(family, scale, t_df)
        out = self._logh.get(key)  # (thread safe: the audit refits in threads)
        if out is None:
            # at most LOGH_CACHE_BYTES of them (a compact table's rows number up
            # to N L), the oldest dropped first: an EM revisits recent scales
            per = 8 * self.n_rows * len(ETA_GRID)
            _bounded(self._logh, max(8, min(256, LOGH_CACHE_BYTES // per)))
            # at the key's values, not the caller's: scales that share a key
            # (0.015 and 0.015000000000000002) then share one table whichever
            # came first, so a fit's bits do not depend on the fits before it
            mix, tails = _mixing(family, key[1], t_df if key[2] is None else key[2])
            # the atoms at p = 0 and p = 1 (count 0 / count G only)
            h = _lik_times_mix(self.lik, mix) + _matmul(
                np.exp(self.edge_loglik), tails[:, :2].T
            )
            out = np.ascontiguousarray(np.log(np.maximum(h, 1e-300)))
            self._logh[key] = out
        return out


def _logh_key(family: str, scale: float, t_df: float) -> tuple:
    """A likelihood table's cache key (the degrees of freedom only for the t)."""
    df = round(float(t_df), 10) if family == "logit_t" else None
    return (family, round(float(scale), 10), df)


def _bounded(cache: dict, size: int) -> None:
    """Drop a cache's oldest entries until fewer than ``size`` remain (safe when
    another thread changes it meanwhile: entries are only ever recomputed)."""
    while len(cache) >= size:
        try:
            cache.pop(next(iter(cache)), None)
        except (RuntimeError, StopIteration):  # changed or emptied meanwhile
            return


LOGH_CACHE_BYTES = 1 << 28
# tables with more rows (many draws per cell) run banded products and the EM on
# model-local rows; up to it (G <= 500 draws per cell, one draw count) the
# plain products, as before
LOCAL_ROWS_ABOVE = 512
BAND_BLOCK = 64  # rows per block of the banded product


def _lik_times_mix(lik: np.ndarray, mix: np.ndarray) -> np.ndarray:
    """``lik @ mix``; for tables of more than ``LOCAL_ROWS_ABOVE`` rows banded: a
    row's likelihood is non-zero (in floating point) only on a window of the t
    grid, narrow at large G. The rows, ordered by their windows' starts, go in
    blocks of ``BAND_BLOCK``, each block a product over the union of its
    windows: ``O(R W n_eta)`` with ``W`` about the widest window, the same
    non-zero terms as the full product (10,000 draws per cell: W is a tenth of
    the grid)."""
    R, nt = lik.shape
    if R <= LOCAL_ROWS_ABOVE:
        return _matmul(lik, mix)
    keep = lik > 0
    lo = keep.argmax(axis=1)
    hi = nt - keep[:, ::-1].argmax(axis=1)
    order = np.argsort(lo, kind="stable")
    out = np.empty((R, mix.shape[1]))
    for a in range(0, R, BAND_BLOCK):
        blk = order[a : a + BAND_BLOCK]
        t0, t1 = int(lo[blk].min()), int(hi[blk].max())
        out[blk] = _matmul(lik[blk, t0:t1], mix[t0:t1])
    return out


def _log_mixing(
    family: int,
    scale: float,
    eta: np.ndarray,
    t_grid: np.ndarray = T_GRID,
    t_df: float = LOGIT_T_DF,
) -> np.ndarray:
    """``log m(t | eta)`` on ``t_grid`` (default: the t grid) up to a constant."""
    return log_mixing(family, scale, eta, t_grid, t_df)


def _eta_index(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Interpolation index and weight on ETA_GRID of ``theta[l, k] - D_j``."""
    eta = theta[:, :, None] - D_GRID[None, None, :]
    pos = np.clip((eta - ETA_GRID[0]) / ETA_STEP, 0.0, len(ETA_GRID) - 1 - 1e-9)
    idx = np.floor(pos).astype(np.int64)
    idx = np.minimum(idx, len(ETA_GRID) - 2)
    return np.ascontiguousarray(idx), np.ascontiguousarray(pos - idx)


def _cell_table(logh: np.ndarray, theta: np.ndarray, local: bool = False) -> np.ndarray:
    """``T[l, k, row, j] = log h(row, theta[l, k] - D_j)`` (linear interpolation).

    ``local``: ``logh`` holds model-local rows ``(L, R_l, n_eta)``
    (:class:`EMRows`), ``T[l, k, i, j]`` then model ``l``'s row ``i`` (the same
    numbers, fewer rows)."""
    idx, wt = _eta_index(theta)
    L, K, J = idx.shape
    R = logh.shape[1] if local else logh.shape[0]
    out = np.empty((L, K, R, J))
    # per model, gathers of whole eta columns (rows of log h transposed: R
    # contiguous numbers each), then one transposing copy; each number is
    # a + wt (b - a) as before (the same bits, several times faster at many rows)
    lt = None if local else np.ascontiguousarray(logh.T)  # (n_eta, R)
    for l in range(L):
        lt_l = np.ascontiguousarray(logh[l].T) if local else lt
        a = lt_l[idx[l]]  # (K, J, R)
        b = lt_l[idx[l] + 1]
        b -= a
        b *= wt[l][:, :, None]
        b += a
        out[l] = b.transpose(0, 2, 1)
    return out


class EMRows:
    """The table rows the EM's kernels index: the cells' own (``g_rows`` None) or,
    for tables of more than ``LOCAL_ROWS_ABOVE`` rows, model-local ones.

    Why: with many draws per cell the tables have a row per ``(G, S)`` pair, up
    to ``G + 1`` or (compact tables) ``N L`` of them, and the cell table
    ``T (L, K, R, J)``, the M-step statistics ``C`` and scores cost ``O(L K R
    J)`` each per iteration although model ``l`` uses only its own cells' rows.
    Model-local rows renumber each model's rows ``0 .. R_l - 1`` (in the order
    of the table's rows, so the kernels add the same non-zero terms in the same
    order): the arrays shrink to ``(L, K, max_l R_l, J)`` (used when that halves
    them at least).
    ``cell_row`` ``(N, L)``: the rows the kernels see;
    ``g_rows[l, i]``: table row of model ``l``'s local row ``i`` (padding: row 0,
    never used by a cell); ``n_rows``: rows per model in the EM's arrays."""

    def __init__(self, tables: Tables, cell_row: np.ndarray) -> None:
        self.g_rows = None
        self.cell_row = cell_row
        self.n_rows = tables.n_rows
        L = cell_row.shape[1]
        if tables.n_rows <= LOCAL_ROWS_ABOVE or L < 2:
            return  # few rows (up to G = 500 draws per cell): small arrays anyway
        local = np.full(cell_row.shape, -1, cell_row.dtype)  # (fewer rows)
        per = []
        for l in range(L):
            col = cell_row[:, l]
            ok = col >= 0
            u, inv = np.unique(col[ok], return_inverse=True)
            local[ok, l] = inv.reshape(-1)
            per.append(u)
        R = max(1, max(len(u) for u in per))
        if 2 * R > tables.n_rows:  # not worth it: each model uses most rows
            return
        self.g_rows = np.zeros((L, R), np.int64)
        for l, u in enumerate(per):
            self.g_rows[l, : len(u)] = u
        self.cell_row, self.n_rows = local, R
        self._logh: dict[tuple, np.ndarray] = {}

    def logh(
        self, tables: Tables, family: str, scale: float, t_df: float = LOGIT_T_DF
    ) -> np.ndarray:
        """``tables.logh`` on these rows: ``(R, n_eta)``, or with model-local rows
        ``(L, R_l, n_eta)`` (each model's rows, gathered once per scale)."""
        lh = tables.logh(family, scale, t_df)
        if self.g_rows is None:
            return lh
        key = _logh_key(family, scale, t_df)
        out = self._logh.get(key)
        if out is None:
            per = 8 * self.g_rows.size * lh.shape[1]
            _bounded(self._logh, max(8, LOGH_CACHE_BYTES // per))
            out = self._logh[key] = lh[self.g_rows]
        return out

    def table(self, logh: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """The cell table on these rows (:func:`_cell_table`) from ``logh`` as
        :meth:`logh` returns it."""
        return _cell_table(logh, theta, self.g_rows is not None)


# ------------------------------------------------------------------ kernels
# (``capfront._kernels.latent``: each one's NumPy reference, Numba port and C++
# binding; these helpers keep the call sites' names)
def _estep(name, table, cell_row, topic, log_w, resp, ll_out=None) -> float:
    """E-step: fills ``resp`` (N, J) and, if given, ``ll_out`` (N,) with each
    prompt's log marginal likelihood; returns their sum."""
    return dispatch("pgm_estep", name)(table, cell_row, topic, log_w, resp, ll_out)


def _estep_stats(name, table, cell_row, topic, log_w, resp, K, R):
    """E-step and the M-step statistics ``C (L, K, R, J)``: ``(ll, C)``."""
    return dispatch("pgm_estep_stats", name)(table, cell_row, topic, log_w, resp, K, R)


def _stats(name, resp, cell_row, topic, K, R) -> np.ndarray:
    return dispatch("pgm_stats", name)(resp, cell_row, topic, K, R)


def _mstep_scores(name, C3, logh, cand):
    return dispatch("pgm_mstep_scores", name)(C3, logh, cand)


THETA_WINDOW = 41  # M-step candidates around the current theta (+- 2.0)


def _mstep_window(name, C3, logh, cand, theta_flat, penalty):
    """M-step scores ``(LK, n_cand)`` on a window of THETA_WINDOW candidates around
    each current ``theta`` (-inf elsewhere); rows whose best windowed candidate
    (with the ridge penalty) sits on an inner edge of the window get the full row.
    Window values equal the full kernel's."""
    LK, n_c = C3.shape[0], cand.shape[1]
    width = min(THETA_WINDOW, n_c)
    cur = np.rint((theta_flat - THETA_GRID[0]) / ETA_STEP).astype(np.int64)
    lo = np.ascontiguousarray(np.clip(cur - width // 2, 0, n_c - width))
    cols = lo[:, None] + np.arange(width)[None, :]
    rows = np.arange(LK)[:, None]
    fw = dispatch("pgm_mstep_scores_window", name)(C3, logh, cand, lo, width)
    f = np.full((LK, n_c), -np.inf)
    f[rows, cols] = fw
    k = (fw + penalty[cols]).argmax(axis=1)
    edge = ((k == 0) & (lo > 0)) | ((k == width - 1) & (lo + width < n_c))
    if edge.any():
        f[edge] = _mstep_scores(name, np.ascontiguousarray(C3[edge]), logh, cand)
    return f


def _auto_stride(fit) -> int:
    """:func:`emax_stride` of a fit's scale, largest draw count and most cells
    per prompt."""
    return emax_stride(
        fit.family,
        fit.scale,
        int(fit.tables.g_values.max()),
        max_cells(fit.cell_row),
        fit.nu,
    )


def _emax(name, fit, min_resp, stride=None):
    """Posterior maximum of a fit: ``(E[max], E[max^2], E[p])``. With bounds
    ``(f, c)`` the kernel's are those of the unbounded rates ``x`` (the same
    posterior: its likelihood tables hold the bounded rates) and ``max_l (f +
    (c - f) x_l) = f + (c - f) max_l x_l``: ``E[max p] = f + (c - f) E[max x]``,
    ``E[max p^2] = f^2 + 2 f (c - f) E[max x] + (c - f)^2 E[max x^2]``."""
    e1, e2, pm = dispatch("pgm_emax", name)(*_emax_args(fit, min_resp, stride))
    f, c = fit.bounds
    if (f, c) == UNBOUNDED:
        return e1, e2, pm
    w = c - f
    e1, e2 = np.asarray(e1), np.asarray(e2)
    e2 = f * f + 2.0 * f * w * e1 + w * w * e2
    return f + w * e1, e2, None if pm is None else f + w * np.asarray(pm)


def _emax_args(fit, min_resp, stride=None) -> tuple:
    """The ``pgm_emax`` kernel's arguments for a fit."""
    fam = FAMILIES.index(fit.family)
    if stride is None:
        stride = _auto_stride(fit)
    # With broad posteriors (a large stride) the cells' posteriors are built on
    # every coarse-th t point (at most half the node spacing, far below the
    # posterior SD; the end-corrected partial sums are O(dt^4)).
    # (Not for the Beta family: with a small q c its density in t is nearly flat
    # down to the grid's end, and that truncation is resolved differently.)
    coarse = max(1, int(stride) // 2) if fit.family != "betabinomial" else 1
    cut, w1, w2 = _nodes(max(1, int(stride) // coarse), coarse)
    t_grid = np.ascontiguousarray(T_GRID[::coarse])
    half = 0.5 * coarse * T_STEP  # the end cells' outer edges
    scale = float(fit.scale)
    if 0 < scale and _logit_sd(fit.family, scale, fit.nu) < POINT_MASS_SD:
        # a cell effect far narrower than the t grid's step puts its density on
        # one grid point, a spike the discretised posterior CDFs do not resolve
        # (the NumPy reference and the kernels disagreed by ~1e-4 at tau = 0.005);
        # its limit, the point mass E[max | d] = max_l sigma(eta), is within
        # O(sd^2) of the exact value
        scale = 0.0
    if scale > 0:
        eta = fit.theta[:, :, None] - D_GRID[None, None, :]
        lo, hi = t_grid[0] - half, t_grid[-1] + half
        tails = grid_tails(fit.family, scale, eta, lo, hi, fit.nu)
    else:
        tails = np.zeros(fit.theta.shape + (len(D_GRID), 3))
    return (
        fit.resp,
        fit.cell_row,
        fit.topic,
        np.ascontiguousarray(fit.theta, dtype=np.float64),
        D_GRID,
        np.ascontiguousarray(fit.tables.loglik[:, ::coarse]),
        t_grid,
        fam,
        scale,
        cut,
        w1,
        w2,
        float(min_resp),
        EMAX_EPS,
        np.ascontiguousarray(tails),
        fit.tables.edge_loglik,
        fit.nu,
    )


# ------------------------------------------------------------------ the fit
@dataclass
class LatentFit:
    """A fitted latent model (hyperparameters held fixed for ``decomposition``)."""

    family: str
    theta: np.ndarray  # (L, K)
    scale: float  # tau (logitnormal) or rho (betabinomial)
    weights: np.ndarray  # (J,) prior of the difficulty on D_GRID
    loglik: float
    n_iter: int
    converged: bool
    topics: list
    seconds: float
    resp: np.ndarray = field(repr=False)  # (N, J) posterior of d per prompt
    tables: Tables = field(repr=False)
    cell_row: np.ndarray = field(repr=False)
    topic: np.ndarray = field(repr=False)
    # latent prompt classes (:mod:`capfront.debias.classes`): theta's column
    # ``label * n_classes + k`` holds class k within topic label ``label``
    n_classes: int = 1
    class_weights: np.ndarray | None = field(default=None, repr=False)  # (T, K)
    class_resp: np.ndarray | None = field(default=None, repr=False)  # (N, K)
    bic: dict = field(default_factory=dict)  # n_classes -> BIC, when selected
    aic: dict = field(default_factory=dict)  # n_classes -> AIC (the choice)
    # family -> one-class log-likelihood on the selection subsample (family="auto")
    family_loglik: dict = field(default_factory=dict)
    # a lean fit (many prompts) keeps no ``resp`` (None) but the parameters
    # ``(theta, scale, weights)`` of its last E-step, to recompute it in blocks
    resp_at: tuple | None = field(default=None, repr=False)
    # family="logit_t": the fitted degrees of freedom of the Student t (None for
    # the other families) and the marginal log-likelihood of each one tried
    t_df: float | None = None
    t_df_loglik: dict = field(default_factory=dict)
    # bounds="auto" (:func:`capfront.debias.classes.choose_bounds`): the
    # one-class log-likelihood of each (floor, ceiling) tried
    bounds_loglik: dict = field(default_factory=dict)

    @property
    def nu(self) -> float:
        """The Student t's degrees of freedom as the kernels take them
        (``t_df``, or ``LOGIT_T_DF`` when unset: unused by the other
        families)."""
        return float(self.t_df) if self.t_df is not None else LOGIT_T_DF

    @property
    def bounds(self) -> tuple[float, float]:
        """The rates' floor and ceiling ``(f, c)``: ``p = f + (c - f)
        sigma(logit-scale value)`` (:data:`UNBOUNDED` unless chosen:
        ``fit_pgm(..., bounds="auto")``)."""
        return self.tables.bounds

    def logh(self) -> np.ndarray:
        """The fit's cell likelihood table ``log h(row, eta_e)`` (at its family,
        scale and degrees of freedom)."""
        return self.tables.logh(self.family, self.scale, self.nu)

    @property
    def d_grid(self) -> np.ndarray:
        return D_GRID

    @property
    def n_params(self) -> int:
        """Free parameters: theta, the class weights, the difficulty prior's
        weights, the cell-effect scale and the rates' bounds other than 0 and 1."""
        n_lab = self.theta.shape[1] // self.n_classes
        n_bounds = sum(x != y for x, y in zip(self.bounds, UNBOUNDED, strict=True))
        return int(
            self.theta.size
            + n_lab * (self.n_classes - 1)
            + len(self.weights)
            - 1
            + 1
            + n_bounds
        )

    def simulate_p(
        self,
        n_prompts: int,
        rng: np.random.Generator,
        topic_freq: np.ndarray,
        *,
        on_grid: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Fresh prompts from the fitted model: topic, difficulty from the prior,
        cell effects; returns ``(p (n, L), topic (n,))``.

        The difficulty prior is read as a histogram: a draw is a grid point ``D_j``
        (probability ``weights[j]``) plus ``U(-step/2, step/2)``. Real difficulties
        are not on the grid, so the fit has a rounding error; worlds drawn exactly
        on the grid (``on_grid=True``) hide it from the audit, which then measured
        ``pgm``'s RMSE up to ~15% low at ``L = 2``."""
        K = self.theta.shape[1] // self.n_classes
        topic = rng.choice(K, size=n_prompts, p=topic_freq)
        d = rng.choice(D_GRID, size=n_prompts, p=self.weights)
        if not on_grid:
            step = float(D_GRID[1] - D_GRID[0])
            d = d + rng.uniform(-step / 2, step / 2, n_prompts)
        col = topic
        if self.n_classes > 1:  # a latent class within each prompt's label
            col = self._draw_class(topic, rng)
        eta = self.theta[:, col].T - d[:, None]
        x = _draw_cell(self.family, self.scale, eta, rng, self.nu)
        return to_rate(x, self.bounds), topic

    def _draw_class(self, topic: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """theta column of a latent class drawn within each prompt's label."""
        cw = np.cumsum(self.class_weights, axis=1)
        u = rng.random(len(topic))
        k = (u[:, None] > cw[topic] * (1 - 1e-12)).sum(axis=1)
        return topic * self.n_classes + np.minimum(k, self.n_classes - 1)


def to_rate(x, bounds: tuple[float, float] = UNBOUNDED):
    """``f + (c - f) x``: the rate of a cell whose unbounded rate (``sigma`` of
    its logit-scale value) is ``x`` (``x`` itself when unbounded)."""
    f, c = bounds
    if (f, c) == UNBOUNDED:
        return x
    return f + (c - f) * np.asarray(x)


def _draw_cell(
    family: str, scale: float, eta: np.ndarray, rng, t_df: float = LOGIT_T_DF
) -> np.ndarray:
    """Cell rates around ``expit(eta)`` with the family's cell effect (``t_df``:
    the Student t's degrees of freedom)."""
    if scale <= 0:
        return expit(eta)
    if family == "logitnormal":
        return expit(eta + scale * rng.standard_normal(eta.shape))
    if family == "logit_t":
        return expit(eta + scale * rng.standard_t(float(t_df), eta.shape))
    c = (1.0 - scale) / scale
    q = np.clip(expit(eta), 1e-9, 1 - 1e-9)
    return rng.beta(q * c, (1.0 - q) * c)


_TABLE_CACHE: dict[tuple, Tables] = {}
_COMPACT_CACHE: dict[tuple, Tables] = {}  # (compact tables can be large: two)


def _tables(g_values: np.ndarray, bounds: tuple[float, float] = UNBOUNDED) -> Tables:
    key = (tuple(int(g) for g in g_values), tuple(bounds))
    out = _TABLE_CACHE.get(key)
    if out is None:
        if len(_TABLE_CACHE) > 8:
            _TABLE_CACHE.clear()
        out = _TABLE_CACHE[key] = Tables(g_values, bounds=bounds)
    return out


def _cells(
    S: np.ndarray, G: np.ndarray, bounds: tuple[float, float] = UNBOUNDED
) -> tuple[Tables, np.ndarray]:
    """The likelihood tables of the data's draw counts and each cell's table row
    (``-1``: no draws). Compact tables (only the observed ``(G, S)`` pairs) when
    the full ones would exceed ``FULL_ROWS_MAX`` rows.

    ``S`` and ``G`` may be the compact counts as stored (any integer dtype,
    ``G`` a broadcast view): they are read in blocks of ``CELLS_BLOCK``
    prompts. The rows come in the smallest signed dtype that holds them
    (:func:`~capfront.debias._input.row_dtype`: int8 up to 127 rows, i.e. up
    to 126 draws per cell with one draw count), which the kernels read in
    place. ``bounds``: the rates' floor and ceiling (checked by the caller,
    :func:`check_bounds`)."""
    blocks = [slice(a, a + CELLS_BLOCK) for a in range(0, max(len(G), 1), CELLS_BLOCK)]
    g_values = np.unique(np.concatenate([np.unique(G[sl]) for sl in blocks]))
    g_values = g_values[g_values > 0].astype(np.int64)
    # binned counts (many_draws.BinnedCounts): compact tables of bins
    rule = getattr(S, "rule", None)
    if rule is None and int((g_values + 1).sum()) <= FULL_ROWS_MAX:
        tables = _tables(g_values, bounds)
        cell_row = np.empty(S.shape, row_dtype(tables.n_rows))
        # in blocks of prompts: no (N, L) int64 temporaries (N = 2e6, L = 33:
        # four of them were 2 GB)
        for sl in blocks:
            g = G[sl]
            o = g > 0
            gi = np.searchsorted(g_values, np.where(o, g, g_values[0]))
            cell_row[sl] = np.where(o, tables.offset[gi] + S[sl], -1)
        return tables, cell_row
    g_max = int(g_values[-1])

    def keys(sl: slice) -> np.ndarray:
        # a cell's (G, S) pair as one int64 key, -1 for no draws
        g = G[sl]
        return np.where(g > 0, g.astype(np.int64) * (g_max + 1) + S[sl], -1)

    # the sorted distinct keys of the observed cells, block by block
    uniq = np.unique(np.concatenate([np.unique(k[k >= 0]) for k in map(keys, blocks)]))
    # the same pairs (pgm's several fits of one data set) share one table and
    # its cached marginal likelihoods (kept only while it is not large: its
    # likelihoods take 16 bytes per row and t point)
    ckey = (g_max, uniq.tobytes(), rule, bounds)
    tables = _COMPACT_CACHE.get(ckey)
    if tables is None:
        pairs = (uniq // (g_max + 1), uniq % (g_max + 1))
        tables = Tables(g_values, pairs, rule, bounds)
        if 16 * len(uniq) * len(T_GRID) <= LOGH_CACHE_BYTES:
            _bounded(_COMPACT_CACHE, 2)
            _COMPACT_CACHE[ckey] = tables
    # a cell's row: its key's rank among the distinct keys
    cell_row = np.empty(S.shape, row_dtype(len(uniq)))
    for sl in blocks:
        k = keys(sl)
        cell_row[sl] = np.where(k >= 0, np.searchsorted(uniq, k), -1)
    return tables, cell_row


def _candidates(theta_sd: float) -> tuple[np.ndarray, np.ndarray]:
    """Eta-grid indices ``(J, C)`` of ``theta_c - D_j`` for the M-step's candidate
    ``theta_c`` (exact grid points) and their ridge penalty."""
    c_off = np.rint((THETA_GRID - ETA_GRID[0]) / ETA_STEP).astype(np.int64)
    j_off = np.rint(D_GRID / ETA_STEP).astype(np.int64)
    cand_idx = np.ascontiguousarray(
        np.clip(c_off[None, :] - j_off[:, None], 0, len(ETA_GRID) - 1)
    )
    return cand_idx, -0.5 * (THETA_GRID / theta_sd) ** 2


def _m_step(
    name, C, tables, family, theta, sc, h, grid, scale, cand_idx, penalty, rows=None,
    t_df=LOGIT_T_DF,
):  # fmt: skip
    """M-step for the cell-effect scale and ``theta`` (L, K) given the complete-data
    statistics ``C`` (L, K, R, J) on the rows of ``rows`` (:class:`EMRows`;
    ``None``: the table's), at the Student t's degrees of freedom ``t_df``
    (``family="logit_t"``); returns ``(theta, scale, next h)``."""
    L, K = theta.shape
    g_rows = None if rows is None else rows.g_rows
    C = C.reshape(L * K, -1 if g_rows is None else g_rows.shape[1], len(D_GRID))
    # scale: maximise the M-step objective profiled over theta (each row's
    # best theta refined by a parabola, so the profile is smooth in the scale)
    th_flat = theta.reshape(-1)

    def scores(s_: float):
        if g_rows is None:
            lh = tables.logh(family, s_, t_df)
            return _mstep_window(name, C, lh, cand_idx, th_flat, penalty)
        # model-local rows: each model's scores on its own rows' log h
        lh = rows.logh(tables, family, s_, t_df)
        return np.concatenate(
            [
                _mstep_window(
                    name,
                    C[l * K : (l + 1) * K],
                    lh[l],
                    cand_idx,
                    th_flat[l * K : (l + 1) * K],
                    penalty,
                )  # fmt: skip
                for l in range(L)
            ]
        )

    def score(s_: float):
        f_ = scores(s_) + penalty[None, :]
        return _profile_max(f_), f_

    if scale is None:
        sc, f, h = _scale_step(score, grid, sc, h, SCALE_RES[family])
    else:
        f = score(sc)[1]
    c = f.argmax(axis=1)
    rows_ = np.arange(len(c))
    th = THETA_GRID[c].astype(np.float64)
    inner = (c > 0) & (c < len(THETA_GRID) - 1)
    ci = c[inner]
    r_ = rows_[inner]
    f0, f1, f2 = f[r_, ci - 1], f[r_, ci], f[r_, ci + 1]
    den = f0 - 2 * f1 + f2
    ok = den < 0
    shift = np.where(ok, 0.5 * (f0 - f2) / np.where(ok, den, -1.0), 0.0)
    th[inner] += ETA_STEP * np.clip(shift, -0.5, 0.5)
    # models never run in a topic keep their pooled value
    seen = C.sum(axis=(1, 2)) > 0
    theta_new = th.reshape(L, K)
    if not seen.all():
        pooled = np.nanmean(np.where(seen.reshape(L, K), theta_new, np.nan), axis=1)
        pooled = np.where(np.isfinite(pooled), pooled, 0.0)
        theta_new = np.where(seen.reshape(L, K), theta_new, pooled[:, None])
    return theta_new, sc, h


def fit_latent(
    S: np.ndarray,
    G: np.ndarray,
    topic: np.ndarray | None = None,
    *,
    family: str = "logitnormal",
    scale: float | None = None,
    max_iter: int = 300,
    tol: float = 2e-6,
    theta_sd: float = 5.0,
    init: LatentFit | None = None,
    topics: list | None = None,
    backend: str | None = None,
    t_df: float | None = None,
    bounds: tuple[float, float] | None = None,
) -> LatentFit:
    """Fit the latent model by EM on the marginal likelihood of the counts.

    Each iteration: E-step (posterior of every prompt's difficulty on ``D_GRID``),
    then the M-step maximises the expected complete log-likelihood jointly over the
    cell-effect scale (on ``SCALE_GRID``, refined by a parabola) and ``theta`` (on a
    0.1 grid in [-8, 8], refined by a parabola), and sets the prior weights to the
    mean posterior. Stops when the log-likelihood gains less than ``tol`` per cell
    (the prior weights' EM then creeps along a flat ridge: the estimate moves by
    about 1e-4 over the next hundred iterations).
    ``scale`` fixes the cell-effect scale; ``init`` warm-starts from another fit.
    ``t_df`` (``family="logit_t"``) fixes the Student t's degrees of freedom;
    ``None``: ``init``'s when it is a t fit (the audit's refits keep them, as
    they keep the family), else chosen by :func:`fit_t_df`.
    ``bounds = (f, c)``: every rate is ``f + (c - f) sigma(t)`` with ``t`` the
    logit-scale value the model describes (a floor such as guessing and a
    ceiling below 1; :func:`check_bounds`); ``None``: ``init``'s, else (0, 1).
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; use one of {FAMILIES}")
    if family == "logit_t" and t_df is None:
        if init is not None and init.family == "logit_t" and init.t_df is not None:
            t_df = float(init.t_df)
        else:
            return fit_t_df(
                S, G, topic, scale=scale, max_iter=max_iter, tol=tol,
                theta_sd=theta_sd, init=init, topics=topics, backend=backend,
                bounds=bounds,
            )  # fmt: skip
    if t_df is not None and not (np.isfinite(t_df) and float(t_df) > 0):
        raise ValueError(f"t_df must be finite and > 0, got {t_df}")
    nu = float(t_df) if t_df is not None else LOGIT_T_DF
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1 (EM iterations), got {max_iter}")
    if not float(tol) >= 0:  # also refuses NaN
        raise ValueError(f"tol must be >= 0 (log-likelihood gain per cell), got {tol}")
    name = resolve_backend(backend)
    t0 = time.perf_counter()
    N, L = S.shape
    topic = (
        np.zeros(N, np.int64)
        if topic is None
        else np.ascontiguousarray(topic, dtype=np.int64)
    )
    K = int(topic.max()) + 1
    if bounds is None:
        bounds = init.bounds if init is not None else UNBOUNDED
    bounds = check_bounds(bounds)
    tables, cell_row = _cells(S, G, bounds)
    n_cells = count_cells(cell_row)
    J = len(D_GRID)
    grid = SCALE_GRID[family]
    h = 0.0
    if scale is not None:
        if not (0 <= scale < (1 if family == "betabinomial" else 20)):
            raise ValueError(f"scale out of range for {family}: {scale}")
        grid = np.array([float(scale)])

    if init is None and N > SUBSAMPLE_ABOVE:
        # Hyperparameters are global: fit them on an evenly spaced subsample first,
        # then refine on all prompts from there (far fewer full-data iterations).
        sub = np.arange(0, N, N // SUBSAMPLE_SIZE)
        init = fit_latent(
            S[sub],
            G[sub],
            topic[sub],
            family=family,
            scale=scale,
            max_iter=max_iter,
            tol=tol,
            theta_sd=theta_sd,
            backend=backend,
            t_df=t_df,
            bounds=bounds,
        )
        if init.theta.shape[1] != K:  # a topic missing from the subsample
            init = None
    if init is not None:
        theta = init.theta.copy()
        sc = float(init.scale) if scale is None else float(scale)
        h = 10 * SCALE_RES[family]  # warm start: near the optimum
        weights = init.weights.copy()
    else:
        theta = _start_theta(S, G, topic, K)
        sc = float(grid[len(grid) // 3]) if scale is None else float(scale)
        h = float(np.diff(SCALE_GRID[family]).mean())  # first scale steps
        weights = np.exp(-0.5 * (D_GRID / 2.5) ** 2)
        weights /= weights.sum()

    cand_idx, penalty = _candidates(theta_sd)

    # many prompts: no (N, J) array of posteriors; E-steps in blocks of prompts,
    # the posterior maximum recomputes each block's at the parameters kept here
    lean = N * J > LEAN_ABOVE
    resp = None if lean else np.empty((N, J))
    resp_at = None
    ll_old = -np.inf
    converged = False
    it = 0
    n_down = 0
    em = EMRows(tables, cell_row)
    for it in range(1, max_iter + 1):
        table = em.table(em.logh(tables, family, sc, nu), theta)
        log_w = np.log(np.maximum(weights, 1e-300))
        if lean:
            resp_at = (theta, sc, weights)
            ll, C, w_sum = _estep_stats_blocks(
                name, table, em.cell_row, topic, log_w, K, em.n_rows
            )
        else:
            ll, C = _estep_stats(
                name, table, em.cell_row, topic, log_w, resp, K, em.n_rows
            )
        if ll - ll_old < tol * n_cells and it > 1:
            if family == "logit_t" and ll < ll_old and n_down < T_MAX_DOWN:
                # a step that lost likelihood (the scale's parabola overshot):
                # not convergence for the t, whose fits at the degrees of
                # freedom compared must each reach their maximum
                n_down += 1
            else:
                converged = True
                break
        ll_old = ll
        weights = w_sum / N if lean else resp.mean(axis=0)
        theta, sc, h = _m_step(
            name, C, tables, family, theta, sc, h, grid, scale, cand_idx, penalty, em,
            nu,
        )  # fmt: skip
    state = (theta, sc, weights, ll, it, converged)
    t_fit = float(nu) if family == "logit_t" else None
    return _latent_fit(family, state, topics, K, t0, tables, cell_row, topic,
                       resp=resp, resp_at=resp_at, t_df=t_fit)  # fmt: skip


def fit_t_df(
    S: np.ndarray,
    G: np.ndarray,
    topic: np.ndarray | None = None,
    *,
    grid: tuple[float, ...] = T_DF_GRID,
    init: LatentFit | None = None,
    first: LatentFit | None = None,
    **kw,
) -> LatentFit:
    """``family="logit_t"`` with the degrees of freedom chosen by marginal
    likelihood: the fit at ``nu = LOGIT_T_DF``, then a walk along ``grid``
    (heavier tails first): each neighbour's fit is warm-started at the current
    best and replaces it when its log-likelihood is more than ``T_DF_MARGIN``
    nats higher; the walk stops at the first step that does not pay (the
    profile log-likelihood in ``nu`` is unimodal on the battery's worlds).
    Then one more fit at the vertex of the parabola in ``log nu`` through the
    best grid point and its neighbours (:func:`_t_df_vertex`), taken when its
    log-likelihood is higher. The chosen ``nu`` is then fitted once more from
    the walk's start, so that the result is ``fit_latent(..., t_df=nu,
    init=init)`` bit for bit. The walk costs three warm-started fits when
    ``LOGIT_T_DF`` stays best, one more per step taken (and the refit). Above
    ``SUBSAMPLE_ABOVE`` prompts the walk runs on the evenly spaced subsample
    the hyperparameters are fitted on, then all prompts are fitted at the
    chosen ``nu``. ``LatentFit.t_df_loglik`` holds the log-likelihood of every
    ``nu`` tried; ``first``: the fit at ``LOGIT_T_DF`` when already made (the
    same data, ``init`` and options; up to ``SUBSAMPLE_ABOVE`` prompts);
    ``kw``: :func:`fit_latent`'s options."""
    N = S.shape[0]
    if init is None and first is None and N > SUBSAMPLE_ABOVE:
        sub = np.arange(0, N, N // SUBSAMPLE_SIZE)
        t_sub = None if topic is None else np.asarray(topic)[sub]
        sfit = fit_t_df(S[sub], G[sub], t_sub, grid=grid, **kw)
        K = 1 if topic is None else int(np.max(topic)) + 1
        if sfit.theta.shape[1] == K:
            # (the plain fit at that nu: its own subsample start, then all)
            out = fit_latent(S, G, topic, family="logit_t", t_df=sfit.t_df, **kw)
            out.t_df_loglik = dict(sfit.t_df_loglik)
            return out
    grid = tuple(sorted(float(g) for g in grid))
    i0 = min(range(len(grid)), key=lambda i: abs(grid[i] - LOGIT_T_DF))

    def one(i: int, start: LatentFit | None) -> LatentFit:
        return fit_latent(S, G, topic, family="logit_t", t_df=grid[i], init=start, **kw)

    fits = {i0: first if first is not None else one(i0, init)}
    best = i0
    for step in (-1, 1):
        j = best + step
        while 0 <= j < len(grid):
            fits[j] = one(j, fits[j - step])
            if not fits[j].loglik > fits[best].loglik + T_DF_MARGIN:
                break
            best, j = j, j + step
        if best != i0:
            break  # moved: the other side is downhill
    out = fits[best]
    tried = {grid[i]: float(f.loglik) for i, f in fits.items()}
    nu = _t_df_vertex(grid, fits, best)
    if nu is not None and nu not in tried:
        # between the grid points: the vertex of the parabola in log nu
        fine = fit_latent(S, G, topic, family="logit_t", t_df=nu, init=out, **kw)
        tried[nu] = float(fine.loglik)
        if fine.loglik > out.loglik:
            out = fine
    if out.t_df != grid[i0]:
        # the chosen nu's fit from the walk's own start: the same bits as any
        # fit_latent(..., t_df=nu, init=init) (the audit's refits, pgm's with
        # the audit's family), not dependent on the path of warm starts
        out = fit_latent(S, G, topic, family="logit_t", t_df=out.t_df, init=init, **kw)
    out.t_df_loglik = dict(sorted(tried.items()))
    return out


def _t_df_vertex(grid, fits, best) -> float | None:
    """The degrees of freedom at the vertex of the parabola in ``log nu``
    through the log-likelihoods of the best grid point and its two neighbours
    (when both were fitted and the parabola is concave), rounded to 0.05;
    ``None`` otherwise."""
    if best - 1 not in fits or best + 1 not in fits:
        return None
    x = np.log([grid[best - 1], grid[best], grid[best + 1]])
    q = [fits[i].loglik for i in (best - 1, best, best + 1)]
    den = (x[0] - x[1]) * (x[0] - x[2]) * (x[1] - x[2])
    a2 = (x[2] * (q[1] - q[0]) + x[1] * (q[0] - q[2]) + x[0] * (q[2] - q[1])) / den
    a1 = (x[2] ** 2 * (q[0] - q[1]) + x[1] ** 2 * (q[2] - q[0])
          + x[0] ** 2 * (q[1] - q[2])) / den  # fmt: skip
    if not a2 < 0:
        return None
    v = float(np.clip(-a1 / (2 * a2), x[0], x[2]))
    return float(round(np.exp(v) * 20) / 20)


def _start_theta(S: np.ndarray, G: np.ndarray, topic: np.ndarray, K: int) -> np.ndarray:
    """EM start of ``theta`` ``(L, K)``: the logit of each model's pooled success
    rate per topic (clipped to [0.05, 0.95]; 0.5 where it never ran), from
    integer sums over blocks of prompts (exact: the same as one pass)."""
    L = S.shape[1]
    s_sum = np.zeros((K, L), np.int64)
    g_sum = np.zeros((K, L), np.int64)
    for sl in row_blocks(len(S)):
        g = G[sl]
        o = g > 0
        np.add.at(s_sum, topic[sl], np.where(o, S[sl], 0).astype(np.int64))
        np.add.at(g_sum, topic[sl], np.where(o, g, 0).astype(np.int64))
    # (a model that ran has draws: sum G > 0 exactly where it ran)
    m = s_sum / np.maximum(g_sum, 1)
    m = np.clip(np.where(g_sum > 0, m, 0.5), 0.05, 0.95)
    return np.ascontiguousarray(np.log(m / (1 - m)).T)


def _latent_fit(
    family, state, topics, n_columns, t0, tables, cell_row, topic, **extra
) -> LatentFit:
    """The :class:`LatentFit` at the end of an EM: ``state = (theta, scale,
    weights, loglik, n_iter, converged)``, ``topics`` the label names (default
    ``0 .. n_columns - 1``), ``t0`` the start time, ``extra`` further fields."""
    theta, sc, weights, ll, it, converged = state
    return LatentFit(
        family=family,
        theta=theta,
        scale=sc,
        weights=weights,
        loglik=float(ll),
        n_iter=it,
        converged=converged,
        topics=topics or list(range(n_columns)),
        seconds=time.perf_counter() - t0,
        tables=tables,
        cell_row=cell_row,
        topic=topic,
        **extra,
    )


def posterior_max(
    fit: LatentFit,
    backend: str | None = None,
    min_resp: float = 1e-6,
    stride: int | None = None,
    cell_means: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per prompt ``E_post[max_l p]``, ``E_post[(max_l p)^2]`` and per cell
    ``E_post[p]`` ``(N, L)`` under the fit (hyperparameters fixed). Difficulty grid
    points whose posterior mass is below ``min_resp`` are skipped and the rest
    renormalised. ``stride``: node spacing of the x integral in t-grid steps
    (default: :func:`emax_stride`). ``cell_means=False``: the cell means are not
    kept (``None``; at N = 1e7, L = 33 they are 2.6 GB of float64)."""
    name = resolve_backend(backend)
    if fit.resp is not None:
        emax, emax2, pmean = _emax(name, fit, float(min_resp), stride)
        pmean = np.where(fit.cell_row >= 0, pmean, np.nan) if cell_means else None
        return np.asarray(emax), np.asarray(emax2), pmean
    # a lean fit: each block's posteriors recomputed at the fit's last E-step
    # (per prompt the same numbers as the E-step's), its posterior maximum
    if stride is None:
        stride = _auto_stride(fit)
    N, L = fit.cell_row.shape
    emax, emax2 = np.empty(N), np.empty(N)
    pmean = np.empty((N, L)) if cell_means else None
    for sl, resp in resp_blocks(fit, name):
        sub = dataclasses.replace(
            fit, resp=resp, cell_row=fit.cell_row[sl], topic=fit.topic[sl]
        )
        e1, e2, pm = _emax(name, sub, float(min_resp), stride)
        emax[sl], emax2[sl] = e1, e2
        if pmean is not None:
            pmean[sl] = pm
            pmean[sl][sub.cell_row < 0] = np.nan
    return emax, emax2, pmean


def resp_blocks(fit: LatentFit, name: str):
    """``(slice, resp)`` per block of ``LEAN_BLOCK`` prompts of a lean fit: the
    difficulty posteriors at the parameters of its last E-step. ``resp`` is
    one buffer, overwritten by the next block (a block's is 63 MB): copy it to
    keep it."""
    theta, sc, weights = fit.resp_at
    table = _cell_table(fit.tables.logh(fit.family, sc, fit.nu), theta)
    log_w = np.log(np.maximum(weights, 1e-300))
    N = fit.cell_row.shape[0]
    K = theta.shape[1]
    buf = np.empty((min(N, LEAN_BLOCK), len(D_GRID)))
    for a in range(0, N, LEAN_BLOCK):
        sl = slice(a, min(N, a + LEAN_BLOCK))
        resp = buf[: sl.stop - a]
        rows = np.ascontiguousarray(fit.cell_row[sl])
        # the fit's own kernel: the same posteriors as its last E-step
        _estep_stats(name, table, rows, fit.topic[sl], log_w, resp, K, table.shape[2])
        yield sl, resp


def _estep_stats_blocks(name, table, cell_row, topic, log_w, K, R):
    """:func:`_estep_stats` over blocks of ``LEAN_BLOCK`` prompts, storing no
    posteriors: ``(ll, C, sum_n resp[n])``."""
    N = cell_row.shape[0]
    ll, C, w_sum = 0.0, None, np.zeros(len(log_w))
    resp = np.empty((min(N, LEAN_BLOCK), len(log_w)))
    for a in range(0, N, LEAN_BLOCK):
        sl = slice(a, min(N, a + LEAN_BLOCK))
        r = resp[: sl.stop - a]
        ll_b, C_b = _estep_stats(
            name, table, np.ascontiguousarray(cell_row[sl]), topic[sl], log_w, r, K, R
        )
        ll += ll_b
        C = C_b if C is None else C + C_b
        w_sum += r.sum(axis=0)
    return ll, C, w_sum


def pgm_decomposition(
    S: np.ndarray,
    G: np.ndarray,
    topic: np.ndarray | None = None,
    *,
    family: str = "logitnormal",
    scale: float | None = None,
    backend: str | None = None,
    init: LatentFit | None = None,
    max_iter: int = 300,
    tol: float = 2e-6,
    topics: list | None = None,
    min_resp: float = 1e-6,
    t_df: float | None = None,
) -> Decomposition:
    """``O_pgm = mean_n E_post[max_l p[n, l]]``; the per-prompt values are the
    posterior expected maxima with the hyperparameters held at their fit (a
    bootstrap over prompts therefore ignores their estimation error). ``min_resp``:
    difficulty grid points with less posterior mass are skipped in the posterior
    maximum (see :func:`posterior_max`)."""
    fit = fit_latent(
        S,
        G,
        topic,
        family=family,
        scale=scale,
        backend=backend,
        init=init,
        max_iter=max_iter,
        tol=tol,
        topics=topics,
        t_df=t_df,
    )
    return fit_decomposition(fit, *posterior_max(fit, backend, min_resp=min_resp))


def fit_decomposition(
    fit: LatentFit, emax: np.ndarray, emax2: np.ndarray, pmean: np.ndarray
) -> Decomposition:
    """The :class:`Decomposition` of a fit's per-prompt posterior maxima ``emax``
    (with ``E_post[(max)^2]`` and the posterior cell means ``pmean``)."""
    posterior_sd = float(np.sqrt(np.maximum(emax2 - emax**2, 0).sum()) / len(emax))
    diag = {
        "linear": True,
        "fit": fit,
        "scale": fit.scale,
        "family": fit.family,
        "t_df": fit.t_df,
        "posterior_mean_p": pmean,
        "max_of_posterior_means": float(np.nanmax(pmean, axis=1).mean()),
        "posterior_sd": posterior_sd,
        "converged": fit.converged,
        "n_iter": fit.n_iter,
    }
    return Decomposition(emax[:, None], _identity, diag)
