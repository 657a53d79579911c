"""The audit's ``posterior`` world: the data's own prompts, each cell's success
rate drawn from its posterior under the fitted latent model.

A simulated prompt is one of the data's prompts ``n`` (resampled with
replacement, keeping its draws per cell ``G[n, :]`` and its label), and its
rates are a draw from the fitted model's posterior given that prompt's counts:

1. the latent class ``k`` and difficulty ``d`` jointly from
   ``P(k, d_j | S_n) ∝ pi[label, k] w_j prod_l h(S_nl; theta[l, k] - d_j)``
   (``h``: the cell's marginal likelihood with its cell effect integrated out;
   ``d`` is then spread uniformly over its grid step, as in
   :meth:`~capfront.debias.latent.LatentFit.simulate_p`);
2. each cell's rate from its posterior given ``(k, d)`` and ``S_nl``: for the
   Beta family the conjugate ``Beta(q c + S, (1 - q) c + G - S)`` with
   ``q = expit(theta[l, k] - d)``, ``c = (1 - rho) / rho``; for the logit-normal
   family ``expit(eta + tau e)`` with ``e`` on a grid of ``N(0, 1)`` weighted by
   the binomial likelihood (jittered within its grid step); for the logit
   Student-t family the same on a wider grid weighted by the ``t_nu`` density
   (``nu``: the fit's degrees of freedom ``t_df``).

If the fitted model is right, a posterior draw has the model's own distribution
(the prior), so the world is the latent world again. If it is wrong, the rates
keep what the counts say about each prompt -- the joint pattern of a prompt's
cells, its difficulty, the tail near the ceiling -- rather than the model's
parametric shape: the prompt population is the data's own (no parametric
distribution over prompts), and only the within-cell smoothing comes from the
fit. It is the "smoothed empirical-Bayes posterior of the observed cells" world.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from scipy.special import expit, log_expit

from .._backend import resolve_backend
from .._kernels import dispatch
from .classes import _class_estep
from .latent import (
    D_GRID,
    LOGIT_T_DF,
    UNBOUNDED,
    LatentFit,
    _cell_table,
    bounded_log_rates,
    to_rate,
)

__all__ = ["means_sampler", "posterior_means", "posterior_sampler"]

# logit-normal cell posterior: e on this grid of N(0, 1) (step 0.2 sd), then
# uniform within its step
E_GRID = np.linspace(-4.4, 4.4, 45)
E_STEP = float(E_GRID[1] - E_GRID[0])
LOG_PRIOR = -0.5 * E_GRID**2
# logit Student-t cell posterior: e on a grid of the standard t_nu as wide as its
# tail needs (P(|t_3| > 20) ~ 3e-4; the posterior given the counts is far narrower
# where the prior's tail matters), the same step; nu = the fit's t_df
E_GRID_T = np.linspace(-20.0, 20.0, 201)


def log_prior_t(t_df: float) -> np.ndarray:
    """Log density (up to a constant) of the standard ``t_nu`` on ``E_GRID_T``:
    ``-(nu + 1) / 2 log(1 + e^2 / nu)``."""
    nu = float(t_df)
    return -0.5 * (nu + 1.0) * np.log1p(E_GRID_T**2 / nu)


LOG_PRIOR_T = log_prior_t(LOGIT_T_DF)  # (at the default degrees of freedom)
# the e grid and log prior of each family with a continuous logit cell effect
# (the t's at LOGIT_T_DF; :func:`e_prior` gives a fit's own)
E_PRIORS = {"logitnormal": (E_GRID, LOG_PRIOR), "logit_t": (E_GRID_T, LOG_PRIOR_T)}


def e_prior(fit: LatentFit) -> tuple[np.ndarray, np.ndarray]:
    """``(e grid, log prior)`` of a fit's continuous logit cell effect (the
    Student t at the fit's degrees of freedom ``fit.t_df``)."""
    if fit.family == "logit_t":
        return E_GRID_T, log_prior_t(fit.nu)
    return E_PRIORS[fit.family]


# the tabulated sampler: eta on this grid, N_QUANTILES quantiles per (S, G, eta);
# used while the table has at most MAX_TABLE entries (else the direct grid)
ETA_STEP = 0.1
ETA_GRID = np.arange(-14.0, 14.0 + ETA_STEP / 2, ETA_STEP)
N_QUANTILES = 64
MAX_TABLE = 4_000_000
CHUNK = 2048


def _joint_posterior(fit: LatentFit, rows: np.ndarray) -> np.ndarray:
    """``P(k, d_j | S_n)`` for the prompts ``rows``: ``(n, K J)``, rows summing
    to 1 (column ``k J + j``): the fit's own E-step kernels (latent classes: the
    class responsibilities times each (prompt, class) pair's difficulty
    posterior)."""
    name = resolve_backend(None)
    K = fit.n_classes
    J = len(D_GRID)
    table = _cell_table(fit.logh(), fit.theta)
    cell_row = np.ascontiguousarray(fit.cell_row[rows])
    topic = np.ascontiguousarray(np.asarray(fit.topic, dtype=np.int64)[rows])
    log_w = np.log(np.maximum(fit.weights, 1e-300))
    n = len(rows)
    if K == 1:
        out = np.empty((n, J))
        dispatch("pgm_estep", name)(table, cell_row, topic, log_w, out)
        return out
    log_pi = np.log(np.maximum(fit.class_weights, 1e-300))
    _, r, resp, _, _ = _class_estep(name, table, cell_row, topic, K, log_w, log_pi)
    return (resp.reshape(n, K, J) * r[:, :, None]).reshape(n, K * J)


def _e_weights(
    eta: np.ndarray,
    tau: float,
    s: np.ndarray,
    g: np.ndarray,
    prior=E_PRIORS["logitnormal"],
    bounds: tuple[float, float] = UNBOUNDED,
):
    """Unnormalised posterior weights of ``e`` on the grid of ``prior = (e grid,
    log prior)`` (last axis); ``bounds``: the fit's floor and ceiling of the
    rates (``p = f + (c - f) sigma(eta + tau e)``)."""
    grid, log_prior = prior
    lp = eta[..., None] + tau * grid
    if tuple(bounds) == UNBOUNDED:
        # S log s(x) + (G - S) log s(-x), with log s(-x) = log s(x) - x
        logw = log_prior + g[..., None] * log_expit(lp) - (g - s)[..., None] * lp
    else:
        log_p, log_q = bounded_log_rates(lp, bounds)
        logw = log_prior + s[..., None] * log_p + (g - s)[..., None] * log_q
    return np.exp(logw - logw.max(axis=-1, keepdims=True))


class _QuantileTable:
    """Inverse CDFs of the logit-normal cell posterior of ``e``, tabulated per
    distinct ``(S, G)`` of the data and per ``eta`` on a grid of step
    ``ETA_STEP``: a draw is one table lookup (``eta`` rounded stochastically to
    a neighbouring grid point, so the mixture is unbiased in ``eta``)."""

    def __init__(
        self,
        tau: float,
        s: np.ndarray,
        g: np.ndarray,
        prior=E_PRIORS["logitnormal"],
        bounds: tuple[float, float] = UNBOUNDED,
    ) -> None:
        self.grid = prior[0]
        pairs = np.unique(np.stack([g.ravel(), s.ravel()], axis=1), axis=0)
        self.g_max = int(pairs[:, 0].max()) + 1
        # sorted keys of the pairs (np.unique sorts them by (g, s)), looked up by
        # bisection: a dense (g_max + 1)^2 code table was 7 TiB at G = 10^6
        self.keys = pairs[:, 0].astype(np.int64) * (self.g_max + 1) + pairs[:, 1]
        qs = (np.arange(N_QUANTILES) + 0.5) / N_QUANTILES
        self.q = np.empty((len(pairs), len(ETA_GRID), N_QUANTILES), np.uint8)
        for i, (g_i, s_i) in enumerate(pairs.astype(np.float64)):
            # one pair at a time: (eta, e) weights, their CDF, its quantiles
            cdf = np.cumsum(_e_weights(ETA_GRID, tau, s_i, g_i, prior, bounds), axis=-1)
            cdf /= cdf[:, -1:]
            self.q[i] = (cdf[:, None, :] < qs[None, :, None]).sum(axis=-1)
        np.minimum(self.q, len(self.grid) - 1, out=self.q)

    def draw(self, eta: np.ndarray, s: np.ndarray, g: np.ndarray, r) -> np.ndarray:
        pos = np.clip((eta - ETA_GRID[0]) / ETA_STEP, 0.0, len(ETA_GRID) - 1.0)
        lo = np.floor(pos)
        i = (lo + (r.random(eta.shape) < pos - lo)).astype(np.int64)
        i = np.minimum(i, len(ETA_GRID) - 1)
        key = g.astype(np.int64) * (self.g_max + 1) + s.astype(np.int64)
        pair = np.searchsorted(self.keys, key)
        m = (r.random(eta.shape) * N_QUANTILES).astype(np.int64)
        e = self.grid[self.q[pair, i, m]]
        return e + r.uniform(-E_STEP / 2, E_STEP / 2, eta.shape)


def _bounds(fit) -> tuple[float, float]:
    """The fit's floor and ceiling of the rates ((0, 1) for fits without)."""
    return tuple(getattr(fit, "bounds", UNBOUNDED))


def _cell_draws(
    fit: LatentFit, eta: np.ndarray, s: np.ndarray, g: np.ndarray, r, table=None
) -> np.ndarray:
    """Each cell's rate from its posterior given ``eta`` and its counts."""
    if fit.scale <= 0:
        return to_rate(expit(eta), _bounds(fit))
    if fit.family == "betabinomial":
        if _bounds(fit) != UNBOUNDED:  # (fit_pgm refuses them for the Beta family)
            raise ValueError(
                "the posterior world of a Beta fit needs bounds (0, 1) (its cell "
                f"posteriors are conjugate Betas only then), got {_bounds(fit)}"
            )
        c = (1.0 - fit.scale) / fit.scale
        q = np.clip(expit(eta), 1e-9, 1 - 1e-9)
        return r.beta(q * c + s, (1.0 - q) * c + (g - s))
    tau = float(fit.scale)
    if table is not None:
        return to_rate(expit(eta + tau * table.draw(eta, s, g, r)), _bounds(fit))
    prior = e_prior(fit)
    w = _e_weights(eta, tau, s, g, prior, _bounds(fit))
    cw = np.cumsum(w, axis=-1)
    u = r.random(eta.shape) * cw[..., -1]
    pick = np.minimum((cw < u[..., None]).sum(axis=-1), len(prior[0]) - 1)
    e = prior[0][pick] + r.uniform(-E_STEP / 2, E_STEP / 2, pick.shape)
    return to_rate(expit(eta + tau * e), _bounds(fit))


def posterior_sampler(
    fit: LatentFit, S: np.ndarray, G: np.ndarray, rows: np.ndarray
) -> Callable[[int, np.random.Generator], tuple[np.ndarray, ...]]:
    """A sampler ``(n, rng) -> (p (n, L), label (n,), G (n, L))`` of the
    ``posterior`` world over the data prompts ``rows`` (see the module)."""
    rows = np.asarray(rows, dtype=np.int64)
    post = _joint_posterior(fit, rows)
    cum = np.cumsum(post, axis=1)
    cum[:, -1] = 1.0
    K, J = fit.n_classes, len(D_GRID)
    step = float(D_GRID[1] - D_GRID[0])
    # (the rows first: no (N, L) float64 copy of the counts)
    S_r = np.asarray(S[rows], dtype=np.float64)
    G_r = np.asarray(G[rows], dtype=np.int64)
    topic_r = np.asarray(fit.topic, dtype=np.int64)[rows]
    table = None
    if fit.family in E_PRIORS and fit.scale > 0:
        n_pairs = len(np.unique(G_r * (int(G_r.max()) + 1) + S_r.astype(np.int64)))
        if n_pairs * len(ETA_GRID) * N_QUANTILES <= MAX_TABLE:
            table = _QuantileTable(
                float(fit.scale), S_r.astype(np.int64), G_r, e_prior(fit), _bounds(fit)
            )

    def sample(n: int, r: np.random.Generator):
        src = r.integers(0, len(rows), n)
        p = np.empty((n, S_r.shape[1]))
        for a in range(0, n, CHUNK):
            sl = slice(a, min(n, a + CHUNK))
            i = src[sl]
            u = r.random(len(i))
            kj = np.minimum((cum[i] < u[:, None]).sum(axis=1), K * J - 1)
            k, j = np.divmod(kj, J)
            d = D_GRID[j] + r.uniform(-step / 2, step / 2, len(i))
            eta = fit.theta[:, topic_r[i] * K + k].T - d[:, None]
            p[sl] = _cell_draws(fit, eta, S_r[i], G_r[i].astype(np.float64), r, table)
        return p, topic_r[src], G_r[src]

    return sample


def posterior_means(
    fit: LatentFit, rows: np.ndarray, backend: str | None = None
) -> np.ndarray:
    """``E[p[n, l] | S_n]`` under the fit for the data prompts ``rows``:
    ``(len(rows), L)``, NaN where a model has no draws (the fit's own posterior
    cell means, :func:`capfront.debias.classes.posterior_max`, on those prompts
    only)."""
    from .classes import posterior_max

    rows = np.asarray(rows, dtype=np.int64)
    resp = fit.resp
    # (a one-class fit's stored difficulty posteriors, one row per prompt; a
    # class fit's are recomputed by posterior_max, a lean fit's in blocks)
    keep = (
        fit.n_classes == 1
        and resp is not None
        and resp.shape[0] == fit.cell_row.shape[0]
    )
    sub = dataclasses.replace(
        fit,
        cell_row=np.ascontiguousarray(fit.cell_row[rows]),
        topic=np.ascontiguousarray(np.asarray(fit.topic, dtype=np.int64)[rows]),
        resp=np.ascontiguousarray(resp[rows]) if keep else None,
        class_resp=None,
    )
    return posterior_max(sub, backend, cell_means=True)[2]


def means_sampler(
    fit: LatentFit,
    G: np.ndarray,
    rows: np.ndarray,
    backend: str | None = None,
) -> Callable[[int, np.random.Generator], tuple[np.ndarray, ...]]:
    """A sampler ``(n, rng) -> (p (n, L), label (n,), G (n, L))`` of the
    ``means`` world: the data prompts ``rows`` resampled with replacement, each
    with its posterior cell means under the fit as its true rates
    (:func:`posterior_means`).

    The other side of the ``posterior`` world: why it is simulated and what it
    measured is in :mod:`capfront.debias.audit` (``means``)."""
    rows = np.asarray(rows, dtype=np.int64)
    pm = np.nan_to_num(posterior_means(fit, rows, backend), nan=0.0)
    G_r = np.asarray(G[rows], dtype=np.int64)
    topic_r = np.asarray(fit.topic, dtype=np.int64)[rows]

    def sample(n: int, r: np.random.Generator):
        src = r.integers(0, len(rows), n)
        return pm[src], topic_r[src], G_r[src]

    return sample
