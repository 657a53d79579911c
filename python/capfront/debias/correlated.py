"""The correlated logit-normal model of continuous specialisation (method
``"correlated"``).

Model. Each prompt's vector of model logits is multivariate normal with a full
covariance,

    ``eta_n ~ N(mu, Sigma)``,  ``S_nl ~ Binomial(G_nl, expit(eta_nl))``,

so a low-rank specialisation ``logit p = b_l + a_l . z_n - d_n`` is the special case
``Sigma = A A' + s^2 1 1' + D``. ``pgm``'s latent classes approximate the same
structure by a few discrete aptitude vectors plus cell effects independent across
models; on continuous (rank 2-3) specialisation those independent effects borrow
too little from a prompt's other cells and its posterior maximum comes out high
(docs/debiasing.md, "Continuous specialisation"). Missing cells (``G_nl = 0``)
carry no likelihood term; their logits are integrated under the prior given the
prompt's other cells.

Estimate. ``mean_n E[max_l expit(eta_nl) | S_n]`` under the fitted ``(mu,
Sigma)``.

Fit: Monte Carlo EM (:func:`fit_correlated`).

- E-step (kernel ``correlated_estep``, :mod:`capfront._kernels.correlated`):
  per prompt the Laplace mode ``m_n`` and covariance ``V_n = (Sigma^-1 +
  diag(G s (1 - s)))^-1`` of ``p(eta | S_n)``, ``K`` draws ``eta_k = m_n + c
  chol(V_n) z_k`` (``c = inflate``; ``z`` the same points for every prompt and
  iteration: a Student t with ``df`` degrees of freedom from scrambled-Sobol
  points, with their antithetic copies, :func:`correlated_draws`), weighted ``w_k
  ~ p(S_n | eta_k) N(eta_k; mu, Sigma) / q(eta_k)`` (self-normalised). The
  moments carry a control variate: the Laplace Gaussian ``N(m_n, V_n)``'s exact
  moments minus their estimate from the same draws (without it, 256 draws leave
  an error in each posterior's spread that the EM accumulates: the smallest
  eigenvalue of ``Sigma`` falls towards 0 and the likelihood with it); the
  log-likelihood a ratio control variate (the same draws' estimate of the
  Gaussian's normaliser, 1).
- M-step: ``mu = mean_n E[eta_n]``, ``Sigma = mean_n E[eta_n eta_n'] - mu mu' +
  1e-6 I``, its eigenvalues clipped to ``[1e-4, 1e4]`` (near the ceiling a
  model's logits can run off; unclipped, ``Sigma^-1`` lost positive definiteness
  to rounding at L = 30).
- Acceleration: the EM runs first on the Laplace moments (no draws; cheap, but
  biased at small ``G``, used only as the start), then with ``draws`` importance
  draws on an evenly spaced subsample of at most ``subsample`` prompts,
  accelerated by SQUAREM (Varadhan and Roland 2008, scheme S3: two EM steps, an
  extrapolation along them, one EM step from there, kept when it does not lose
  likelihood), stopping once the best log-likelihood has risen by less than
  ``tol`` per prompt in ``patience`` successive cycles or after ``iterations``
  E-steps (Monte Carlo EM is not monotone: the iterate with the largest
  log-likelihood is kept); one final E-step with ``final_draws`` draws on all
  prompts gives the per-prompt posterior maxima and the log-likelihood.
- ``loglik = sum_n log p(S_n)``, binomial coefficients included, so it is
  comparable with ``pgm``'s ``LatentFit.loglik``; ``n_params = L + L (L + 1) / 2``;
  ``aic = 2 n_params - 2 loglik``.

Results depend on the seed through the draws (the estimate's standard deviation
over seeds: 0.02 points at G = 20 and 0.08 at G = 5 on ``lowrank_3``, N = 2000,
L = 12; the log-likelihood's: 12 and 25), not on the backend (to rounding) nor on
the thread count; with ``N <= subsample`` not on the prompts' order (to
rounding); the model order changes which Sobol coordinate drives which model
(Monte Carlo error only).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import gammaincinv, gammaln, ndtri
from scipy.stats import qmc

from .._kernels import dispatch
from ._input import even_rows
from .result import Decomposition

__all__ = [
    "CorrelatedFit",
    "correlated_decomposition",
    "correlated_draws",
    "correlated_posterior_max",
    "extend_correlated",
    "fit_correlated",
    "gap_rank",
    "truncated_covariance",
]

#: importance draws per prompt during the EM (antithetic pairs included)
DRAWS = 256
#: importance draws per prompt in the final E-step on all prompts
FINAL_DRAWS = 1024
#: the Laplace posterior's standard deviations are widened by this for the proposal
INFLATE = 1.2
#: the proposal's Student t degrees of freedom (inf: normal)
DF = 5.0
#: importance-sampled E-steps at most
ITERATIONS = 60
#: the SQUAREM step length's bound
ALPHA_MAX = 8.0
#: Laplace-moment EM iterations first (the start of the importance-sampled EM)
LAPLACE_ITERATIONS = 30
#: prompts the EM is fitted on (evenly spaced); the final E-step uses all
SUBSAMPLE = 2000
#: stop when the best log-likelihood per prompt rose by less than TOL in PATIENCE
#: successive SQUAREM cycles (1: on 20 data sets of lowrank_3, lowrank, evalperf
#: and topics, L = 12 and 20, the iterate kept by 2 was always found before a
#: first cycle without gain, so 1 gives the same fits with three E-steps fewer,
#: 10-25% of a fit's time)
TOL = 2e-4
PATIENCE = 1
NEWTON_ITERS = 30
RIDGE = 1e-6
#: the fitted covariance's eigenvalues are kept in this range (logit variances)
EIGEN_RANGE = (1e-4, 1e4)


@dataclass
class CorrelatedFit:
    """A fitted correlated logit-normal model.

    Attributes
    ----------
    mu : (L,) prior mean of the logits.
    Sigma : (L, L) prior covariance.
    loglik : ``sum_n log p(S_n | mu, Sigma)`` on all prompts (importance-sampled,
        binomial coefficients included: comparable with ``pgm``'s).
    n_params : ``L + L (L + 1) / 2``.
    aic : ``2 n_params - 2 loglik``.
    iteration : the E-step (1-based) whose parameters are kept.
    iterations : importance-sampled E-steps run on the subsample.
    posterior_max : (N,) ``E[max_l expit(eta_nl) | S_n]``.
    value : ``posterior_max.mean()``, the debiased oracle.
    prompt_loglik : (N,) each prompt's ``log p(S_n)``.
    fit_prompts : prompts the EM ran on (``min(N, subsample)``).
    history : the subsample log-likelihood per importance-sampled iteration.
    """

    mu: np.ndarray
    Sigma: np.ndarray
    loglik: float
    n_params: int
    aic: float
    iteration: int
    iterations: int
    posterior_max: np.ndarray
    value: float
    prompt_loglik: np.ndarray = field(repr=False)
    fit_prompts: int = 0
    history: list[float] = field(default_factory=list, repr=False)


def correlated_draws(
    K: int, L: int, seed: int = 0, df: float = DF
) -> tuple[np.ndarray, np.ndarray]:
    """``(z (K, L), log_q (K,))``: draws of the standardised proposal and their log
    densities under it. ``K / 2`` scrambled-Sobol points in ``L + 1`` dimensions
    (``K / 2`` a power of two; ``K`` is rounded up to one): the first ``L`` mapped
    by the normal quantile to ``x``, the last by the chi-square quantile to ``w``
    (``df`` degrees of freedom), ``z = x / sqrt(w / df)`` (a multivariate Student
    t; ``df = inf``: ``z = x``, standard normal), followed by the antithetic copies
    ``-z``. ``K = 0``: empty arrays (the Laplace E-step)."""
    K, L = int(K), int(L)
    if K < 0 or L < 1:
        raise ValueError("need K >= 0 draws and L >= 1 models")
    if not df > 0:
        raise ValueError(f"df must be > 0 (inf: normal), got {df!r}")
    if K == 0:
        return np.zeros((0, L)), np.zeros(0)
    half = max(1, -(-K // 2))
    m = max(0, int(np.ceil(np.log2(half))))
    u = qmc.Sobol(d=L + 1, scramble=True, seed=np.random.default_rng(seed))
    u = np.clip(u.random_base2(m), 1e-12, 1 - 1e-12)
    x = ndtri(u[:, :L])
    if np.isinf(df):
        z = x
        log_q = -0.5 * (z * z).sum(1) - L * 0.5 * np.log(2 * np.pi)
    else:
        w = 2.0 * gammaincinv(0.5 * df, u[:, L])
        z = x / np.sqrt(w / df)[:, None]
        log_q = (
            gammaln(0.5 * (df + L))
            - gammaln(0.5 * df)
            - 0.5 * L * np.log(df * np.pi)
            - 0.5 * (df + L) * np.log1p((z * z).sum(1) / df)
        )
    z = np.ascontiguousarray(np.concatenate([z, -z]))
    return z, np.ascontiguousarray(np.concatenate([log_q, log_q]))


#: an eigenvalue of the fitted covariance this many times the next one ends its
#: leading block (``gap_rank``): on the battery the fitted spectra of low-rank
#: logits (continuous specialisation of rank 2-3, unlabelled topics) fall by a
#: factor 20-100 after the rank (10.3 -> 0.17 at L = 30, G = 10), while pools
#: with independent per-cell variation fall by at most 8 at any step after the
#: first (the difficulty)
GAP = 10.0


def gap_rank(Sigma: Any, gap: float = GAP) -> int:
    """The number ``r`` of leading eigenvalues of ``Sigma`` before the first
    step down by a factor of at least ``gap`` (``lambda_r >= gap lambda_{r+1}``,
    eigenvalues in decreasing order); ``0`` when there is none, or when it
    comes after the first eigenvalue only (a difficulty shared by all models
    and no structure) or leaves fewer than ``L / 2`` eigenvalues out."""
    ev = np.linalg.eigvalsh(np.asarray(Sigma, dtype=np.float64))[::-1]
    L = len(ev)
    for r in range(2, L // 2 + 1):
        if ev[r - 1] >= gap * max(ev[r], EIGEN_RANGE[0]):
            return r
    return 0


def truncated_covariance(Sigma: Any, rank: int) -> np.ndarray:
    """``Sigma`` with every eigenvalue after the ``rank`` largest set to the
    floor ``EIGEN_RANGE[0]``: the same leading structure, no variation outside
    it. The fitted covariance's small eigenvalues are where its estimate is
    least sure (the EM approaches a zero eigenvalue slowly, and noise keeps it
    positive): a world without them tests the fit where it is weakest."""
    Sig = np.asarray(Sigma, dtype=np.float64)
    w, V = np.linalg.eigh(0.5 * (Sig + Sig.T))
    keep = np.argsort(w)[::-1][: int(rank)]
    w2 = np.full_like(w, EIGEN_RANGE[0])
    w2[keep] = w[keep]
    return np.ascontiguousarray((V * w2) @ V.T)


def _counts(S: Any, G: Any) -> tuple[np.ndarray, np.ndarray]:
    S = np.asarray(S)
    if S.ndim != 2:
        raise ValueError(f"successes must be shaped (N, L), got shape {S.shape}")
    if S.shape[0] < 1 or S.shape[1] < 1:
        raise ValueError("need at least one prompt and one model")
    try:
        G = np.broadcast_to(np.asarray(G), S.shape)
    except ValueError:
        raise ValueError(
            f"n_draws of shape {np.shape(G)} does not broadcast to {S.shape}"
        ) from None
    Sf = np.asarray(S, dtype=np.float64)
    Gf = np.ascontiguousarray(G, dtype=np.float64)
    if not (np.isfinite(Sf).all() and np.isfinite(Gf).all()):
        raise ValueError("successes and n_draws must be finite")
    if not ((Gf >= 0) & (Sf >= 0) & (Sf <= Gf)).all():
        raise ValueError("need 0 <= successes <= n_draws in every cell")
    if not (np.rint(Sf) == Sf).all() or not (np.rint(Gf) == Gf).all():
        raise ValueError("successes and n_draws must be whole numbers")
    empty = np.flatnonzero((Gf > 0).sum(0) == 0)
    if empty.size:
        raise ValueError(
            f"model(s) {empty.tolist()} have no draws on any prompt: their logits "
            "are not identified"
        )
    return np.ascontiguousarray(Sf), Gf


def _start(S: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Empirical logits (missing cells: the model's mean), their mean and
    covariance (plus 1e-3 I)."""
    L = S.shape[1]
    ph = (S + 0.5) / (G + 1.0)
    m = np.log(ph / (1 - ph))
    obs = G > 0
    col = np.where(obs, m, 0.0).sum(0) / obs.sum(0)
    m = np.where(obs, m, col)
    mu = m.mean(0)
    d = m - mu
    Sig = d.T @ d / max(1, m.shape[0] - 1) + 1e-3 * np.eye(L)
    return np.ascontiguousarray(m), mu, Sig


def _clip(Sig: np.ndarray) -> np.ndarray:
    """``Sig`` (symmetrised) with its eigenvalues clipped to ``EIGEN_RANGE``."""
    w, V = np.linalg.eigh(0.5 * (Sig + Sig.T))
    w = np.clip(w, *EIGEN_RANGE)
    return np.ascontiguousarray((V * w) @ V.T)


def _mstep(s1: np.ndarray, s2: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    mu = s1 / n
    Sig = s2 / n - np.outer(mu, mu) + RIDGE * np.eye(len(mu))
    return mu, _clip(Sig)


def _prec(Sig: np.ndarray) -> tuple[np.ndarray, float]:
    """``(Sigma^-1, log|Sigma|)`` from the eigendecomposition (symmetric, positive
    definite to rounding)."""
    w, V = np.linalg.eigh(0.5 * (Sig + Sig.T))
    if not w[0] > 0:
        raise ValueError("the covariance is not positive definite")
    P = (V / w) @ V.T
    return np.ascontiguousarray(0.5 * (P + P.T)), float(np.log(w).sum())


def squarem_step(r: np.ndarray, v: np.ndarray) -> float:
    """SQUAREM's step length (Varadhan and Roland 2008, scheme S3) from the
    first difference ``r = x1 - x0`` and the second ``v = x2 - 2 x1 + x0`` of
    two EM steps: ``-|r| / |v|`` clipped to ``[-ALPHA_MAX, -1]`` (``-1``, the
    plain second EM step, when ``v = 0``). Also the class EM's
    (:func:`capfront.debias.classes._class_em`)."""
    nv = float(np.linalg.norm(v))
    alpha = -float(np.linalg.norm(r)) / nv if nv > 0 else -1.0
    return min(-1.0, max(-ALPHA_MAX, alpha))


def fit_correlated(
    successes: Any,
    n_draws: Any,
    *,
    draws: int = DRAWS,
    final_draws: int = FINAL_DRAWS,
    iterations: int = ITERATIONS,
    laplace_iterations: int = LAPLACE_ITERATIONS,
    subsample: int = SUBSAMPLE,
    tol: float = TOL,
    patience: int = PATIENCE,
    inflate: float = INFLATE,
    df: float = DF,
    seed: int = 0,
    backend: str | None = None,
    init: CorrelatedFit | None = None,
) -> CorrelatedFit:
    """Fit ``eta_n ~ N(mu, Sigma)``, ``S_nl ~ Binomial(G_nl, expit(eta_nl))`` by
    Monte Carlo EM (the module docstring has the algorithm).

    Parameters
    ----------
    successes, n_draws : ``(N, L)`` counts (``n_draws`` broadcasts; ``0``: a
        missing cell). Every model needs draws on some prompt.
    draws : importance draws per prompt in the EM iterations (rounded up to twice
        a power of two; ``0``: Laplace moments only, biased at small ``G``).
    final_draws : draws per prompt of the final E-step on all prompts.
    iterations : importance-sampled E-steps on the subsample: SQUAREM cycles
        (three E-steps each) run while they fit in ``iterations + 1``.
    laplace_iterations : Laplace-moment EM iterations run first.
    subsample : prompts (evenly spaced) the EM is fitted on; ``0``: all.
    tol, patience : stop once the best log-likelihood per prompt has risen by
        less than ``tol`` in ``patience`` successive SQUAREM cycles.
    inflate : the proposal's widening of the Laplace standard deviations.
    df : the proposal's Student t degrees of freedom (``inf``: normal).
    seed : the Sobol scrambling.
    backend : ``"cpp"``, ``"numba"`` or ``"numpy"`` (default: the fastest).
    init : a fit (of the same models) to start the EM from instead of the
        Laplace-moment start (``laplace_iterations`` are then skipped): the
        audit's refits of simulated data sets.
    """
    S, G = _counts(successes, n_draws)
    N, L = S.shape
    for name, v in (
        ("draws", draws),
        ("final_draws", final_draws),
        ("iterations", iterations),
        ("laplace_iterations", laplace_iterations),
        ("subsample", subsample),
        ("patience", patience),
    ):
        if int(v) != v or v < 0:
            raise ValueError(f"{name} must be a whole number >= 0, got {v!r}")
    if final_draws < 1:
        raise ValueError("final_draws must be >= 1")
    if not (np.isfinite(inflate) and inflate > 0):
        raise ValueError(f"inflate must be finite and > 0, got {inflate!r}")
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0, got {tol!r}")
    estep = dispatch("correlated_estep", backend)
    # the EM on the subsample from its own start: a fit of N > subsample prompts
    # is the subsample's fit with the final E-step on all prompts
    # (:func:`extend_correlated`)
    idx = even_rows(N, int(subsample)) if subsample and N > subsample else None
    m_all, mu, Sig = _start(S, G)
    m = m_all.copy()
    if idx is not None and (G[idx] > 0).any(0).all():
        m, mu, Sig = _start(S[idx], G[idx])
    elif idx is not None:  # a model without draws there: the start of all prompts
        m = m_all[idx]
    if init is not None:
        if np.shape(init.mu) != (L,):
            raise ValueError(
                f"init is a fit of {np.shape(init.mu)[0]} models, the data have {L}"
            )
        mu = np.array(init.mu, dtype=np.float64)
        Sig = np.array(init.Sigma, dtype=np.float64)
        laplace_iterations = 0
    Ss, Gs = (S, G) if idx is None else (S[idx], G[idx])
    n = Ss.shape[0]
    none, no_q = np.zeros((0, L)), np.zeros(0)
    for _ in range(int(laplace_iterations)):
        P, logdet = _prec(Sig)
        m, s1, s2, _, _ = estep(
            Ss, Gs, mu, P, logdet, m, none, no_q, inflate, NEWTON_ITERS
        )
        mu, Sig = _mstep(s1, s2, n)
    z, log_q = correlated_draws(draws, L, seed, df)
    best: list[Any] = [-np.inf, mu, Sig, 0]
    history: list[float] = []

    def em(mu, Sig, m):
        """One E-step at (mu, Sigma) and its M-step: (mu', Sigma', modes, ll)."""
        P, logdet = _prec(Sig)
        m, s1, s2, ll, _ = estep(
            Ss, Gs, mu, P, logdet, m, z, log_q, inflate, NEWTON_ITERS
        )
        total = float(ll.sum())
        history.append(total)
        if total > best[0]:
            best[:] = [total, mu, Sig, len(history)]
        return (*_mstep(s1, s2, n), m, total)

    last = -np.inf
    stall = 0
    while len(history) + 3 <= iterations + 1:
        # SQUAREM (Varadhan and Roland 2008, scheme S3): two EM steps, the
        # extrapolation theta0 - 2 a r + a^2 v, one EM step from there; the plain
        # second EM step instead when the extrapolation loses likelihood
        mu1, Sig1, m, _ = em(mu, Sig, m)
        mu2, Sig2, m, ll1 = em(mu1, Sig1, m)
        r = np.concatenate([mu1 - mu, (Sig1 - Sig).ravel()])
        v = np.concatenate([mu2 - 2 * mu1 + mu, (Sig2 - 2 * Sig1 + Sig).ravel()])
        alpha = squarem_step(r, v)
        mu_x = mu - 2 * alpha * (mu1 - mu) + alpha**2 * (mu2 - 2 * mu1 + mu)
        Sig_x = Sig - 2 * alpha * (Sig1 - Sig) + alpha**2 * (Sig2 - 2 * Sig1 + Sig)
        Sig_x = 0.5 * (Sig_x + Sig_x.T)
        mu, Sig = mu2, Sig2
        if alpha < -1.0 and np.linalg.eigvalsh(Sig_x)[0] > RIDGE:
            Sig_x = _clip(Sig_x)
            mu3, Sig3, m3, llx = em(mu_x, Sig_x, m.copy())
            if llx >= ll1:
                mu, Sig, m = mu3, Sig3, m3
        if best[0] - last < tol * n:
            stall += 1
            if stall >= patience:
                break
        else:
            stall = 0
        last = best[0]
    if not history:  # iterations < 2: one E-step at the Laplace start
        em(mu, Sig, m)
    _, mu, Sig, kept = best
    fit = CorrelatedFit(
        mu=mu,
        Sigma=Sig,
        loglik=np.nan,
        n_params=L + L * (L + 1) // 2,
        aic=np.nan,
        iteration=kept,
        iterations=len(history),
        posterior_max=np.zeros(0),
        value=np.nan,
        prompt_loglik=np.zeros(0),
        fit_prompts=n,
        history=history,
    )
    return _final(fit, S, G, m_all, final_draws, seed, inflate, df, backend)


def _final(fit, S, G, start, draws, seed, inflate, df, backend) -> CorrelatedFit:
    """``fit`` with the final E-step's posterior maxima and log-likelihood on
    the prompts ``(S, G)``."""
    post, ll = correlated_posterior_max(
        S,
        G,
        fit.mu,
        fit.Sigma,
        draws=draws,
        seed=seed,
        inflate=inflate,
        df=df,
        backend=backend,
        start=start,
    )
    loglik = float(ll.sum())
    return dataclasses.replace(
        fit,
        loglik=loglik,
        aic=2 * fit.n_params - 2 * loglik,
        posterior_max=post,
        value=float(post.mean()),
        prompt_loglik=ll,
    )


def extend_correlated(
    fit: CorrelatedFit,
    successes: Any,
    n_draws: Any,
    *,
    final_draws: int = FINAL_DRAWS,
    seed: int = 0,
    inflate: float = INFLATE,
    df: float = DF,
    backend: str | None = None,
) -> CorrelatedFit:
    """``fit`` (its ``mu``, ``Sigma``) with the final E-step on the prompts
    ``(successes, n_draws)``: their posterior maxima, ``value`` and
    log-likelihood. With the fit of the evenly spaced ``subsample`` prompts of
    data of ``N > subsample`` prompts (``even_rows(N, subsample)``), and the same
    options, this is ``fit_correlated`` of all of them, without running its EM
    again (the audit fits the subsample for its AIC comparison first)."""
    S, G = _counts(successes, n_draws)
    if np.shape(fit.mu) != (S.shape[1],):
        raise ValueError(
            f"fit is of {np.shape(fit.mu)[0]} models, the data have {S.shape[1]}"
        )
    if int(final_draws) < 1:
        raise ValueError("final_draws must be >= 1")
    return _final(fit, S, G, _start(S, G)[0], final_draws, seed, inflate, df, backend)


def correlated_posterior_max(
    successes: Any,
    n_draws: Any,
    mu: Any,
    Sigma: Any,
    *,
    draws: int = FINAL_DRAWS,
    seed: int = 0,
    inflate: float = INFLATE,
    df: float = DF,
    backend: str | None = None,
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(E[max_l expit(eta_nl) | S_n], log p(S_n))`` per prompt under ``eta_n ~
    N(mu, Sigma)``: one importance-sampled E-step with ``draws`` draws per prompt
    (:func:`correlated_draws`). ``start``: the Newton starts ``(N, L)``."""
    S, G = _counts(successes, n_draws)
    L = S.shape[1]
    mu = np.ascontiguousarray(mu, dtype=np.float64)
    Sig = np.asarray(Sigma, dtype=np.float64)
    if mu.shape != (L,) or Sig.shape != (L, L):
        raise ValueError(f"mu must be ({L},) and Sigma ({L}, {L})")
    if int(draws) < 1:
        raise ValueError("draws must be >= 1")
    P, logdet = _prec(Sig)
    m0 = _start(S, G)[0] if start is None else start
    z, log_q = correlated_draws(draws, L, seed, df)
    estep = dispatch("correlated_estep", backend)
    _, _, _, ll, post = estep(
        S, G, mu, P, logdet, m0, z, log_q, inflate, 2 * NEWTON_ITERS, False
    )
    return post, ll


#: the options ``decompose_counts(..., "correlated", **options)`` takes
OPTIONS = (
    "draws",
    "final_draws",
    "iterations",
    "laplace_iterations",
    "subsample",
    "tol",
    "patience",
    "inflate",
    "df",
    "seed",
    "init",
)


def correlated_decomposition(
    successes: Any, n_draws: Any, *, backend: str | None = None, **options: Any
) -> Decomposition:
    """Per-prompt posterior maxima ``E[max_l expit(eta_nl) | S_n]`` (``(N, 1)``,
    ``finalize`` the identity): ``value = mean_n`` of them under the fitted
    ``(mu, Sigma)`` (held fixed by a prompt bootstrap). Diagnostics: ``fit``
    (:class:`CorrelatedFit`), ``linear``."""
    return fit_decomposition(
        fit_correlated(successes, n_draws, backend=backend, **options)
    )


def fit_decomposition(fit: CorrelatedFit) -> Decomposition:
    """:func:`correlated_decomposition` of a fit already made."""
    return Decomposition(
        fit.posterior_max[:, None],
        lambda v: float(v[0]),
        {"linear": True, "fit": fit, "loglik": fit.loglik, "aic": fit.aic},
    )
