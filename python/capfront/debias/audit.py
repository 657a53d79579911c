"""The audit: which oracle estimate to trust on *this* data, and how far.

A simulated *world* is a way of drawing prompts' true success probabilities
``p[n, l]`` fitted to the data. The audit draws ``n_sims`` data sets of the data's
shape (models, draws per cell, missing cells, topic mix) from each of several worlds,
runs every estimator on each, and compares it with the known truth: the simulated
prompts' own oracle ``mean_n max_l p[n, l]`` (and the world's population oracle).
The fitted models (``REFITTED``: ``pgm``, warm-started at its fit on the data, and
the correlated model, from scratch) are refitted only to the data sets of the
worlds that pass the checks below (of the nearest world when none does): the
others get weight 0, so their refits could only fill the world table.

Worlds (``WORLDS``; a world the data cannot support is left out):

- ``latent``: the one-class latent model (:mod:`capfront.debias.latent`) with
  both cell-effect families by their likelihood when the data show a cell effect
  (``family="auto"``): the logit-normal and Beta tails near the ceiling;
- ``classes``: the latent-class fit (:mod:`capfront.debias.classes`), when AIC
  picks more than one class;
- ``posterior``: no parametric distribution over prompts: the data's own
  prompts, resampled with replacement, each cell's rate drawn from its posterior
  given that prompt's counts under the fitted ``pgm`` model
  (:mod:`capfront.debias.posterior_world`). When the model is right this is the
  model again; when it is wrong the rates keep what the counts say about each
  prompt (the joint pattern of its cells, the tail near the ceiling). Measured on
  the robustness battery: it passed the checks on 67 of 69 data sets, and on
  near-ceiling pools it measured about half of ``pgm``'s real bias (-0.33 and
  -0.36 points against -0.87 and -0.62) where the fitted worlds measured none;
- ``means``: the data's own prompts again, each cell's rate its posterior mean
  under the fitted ``pgm`` model (:func:`~capfront.debias.posterior_world.
  means_sampler`): the other side of the ``posterior`` world. Posterior draws
  spread each cell as widely as the fitted cell effect allows, the means not
  at all; where the fit's cell effect is wider than the data's cells really
  vary, the posterior world borrows that width and certifies ``pgm`` (on real
  rates smoothed from single answers, the battery's ``bfcl``: ``pgm`` +1.2 to
  +1.5 points off, the posterior world measuring +0.35), while the means
  reproduce the data's checks and ``pgm`` refitted to their data sets is off by
  about as much as on the data. Where the fit is right, the means are too
  alike (a steeper decay of the naive oracle than the data's) and the checks
  leave the world out;
- ``correlated`` (simulated by default when its AIC beats ``pgm``'s, see
  ``audit(correlated=)``): prompts' logit vectors drawn from
  the correlated logit-normal fitted to the data (:mod:`capfront.debias.correlated`,
  ``eta ~ N(mu, Sigma)``), a world with continuous specialisation shared across
  models, which the latent classes only approximate; with topic labels, each
  simulated prompt gets the label of a random data prompt (the labels carry no
  information there). Its method is scored beside ``pgm`` when, in addition,
  its world is among those refitted to; name it and ``"correlated"`` in
  ``methods`` to audit it whatever the AIC;
- ``correlated_lowrank`` (simulated with the ``correlated`` world, when the
  fitted covariance's spectrum has a gap: :func:`capfront.debias.correlated.gap_rank`):
  the same fit with every eigenvalue after the gap set to the floor
  (:func:`~capfront.debias.correlated.truncated_covariance`). Those small
  eigenvalues are where the fit is least sure: the EM approaches a zero
  eigenvalue slowly and its noise keeps it positive, and each adds variation of
  its own to every model, which raises the posterior maximum. The model's own
  world has them in its truth, so its refits measure little of the error they
  cause; a world without them measures it. On the robustness battery's
  rank-2 specialisation (``lowrank``, L = 30, G = 10) the fitted spectrum fell
  from 10.3 to 0.17 after the third eigenvalue (0.003 in the true rates'), the
  correlated estimate was +0.69 points off, its own world measured +0.18 and
  this one +0.56 (pgm: +0.48 off, +0.40 and +0.50). Either world passing the
  checks lets ``correlated="auto"`` score the model; it is not the model's own
  (``OWN_WORLDS``), so an audit it passes is not self-audited;
- ``resampled`` (not simulated by default, see ``DEFAULT_WORLDS``): prompts are
  resampled rows of the constrained-Bayes success rates
  ``m_l + a_l (p_hat - m_l)``, ``a_l`` shrinking each model's rates so that their
  spread over prompts matches the true-rate spread the counts imply
  (``var(p_hat) - mean p_hat (1 - p_hat) / (G - 1)``). Measured: its data sets
  never reproduced the data's checks on the robustness battery (shrinking each
  model on its own loses the tail near the ceiling and the joint structure of a
  prompt's cells), so the checks always gave it weight 0.

A world is only evidence about the data if data simulated from it look like the
data: :mod:`capfront.debias.checks` compares statistics the counts determine (the
exact subsample curve, the residual between-model correlation, the per-prompt
maximum count) with each world's simulations. Worlds that fail get weight 0. A
world fitted from the model being audited, used alone, certifies that model:
the checks and the other worlds are what make the audit honest when it is wrong.

The recommendation minimises the worst-case RMSE over the passing worlds. The
quoted interval is ``value +- (z * max_w sd_w + 2 max(max_w |bias_w|, spread))``
over those worlds: the worst sampling SD plus twice the worst bias (a bias is
systematic, so it adds to the sampling error; twice, because worlds fitted to the
data measure an attenuated bias: ``BIAS_FACTOR``), where for ``pgm`` ``spread`` is
how far its estimate moves on the data under the rival models (twice the latent
classes, each other cell-effect family; :func:`model_sensitivity`):
several models pass the checks and imply different oracles, and no simulated
world shows that disagreement; for the correlated model, when its own world is the
only one that passed (it audited itself), ``spread`` is half its distance to
``pgm``'s estimate (``AuditResult.model_spread``). With ``correct=True`` the
quoted value subtracts the method's mean bias over the passing worlds, and the
interval's half-width is
``z * max_w sqrt((bias_w - mean bias)^2 + sd_w^2)``. If no world passes, the
audit is not trusted and quotes the bracket from the cross-fit estimate (biased
low) to the naive one (biased high).
"""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from .._backend import get_num_threads
from ..results import EvalResults
from ._input import check_counts, counts, even_rows, min_draws, topic_codes

# the result, its interval rule and quote live in their own module (many_draws
# builds results too); they stay importable from here
from .audit_result import (
    BIAS_FACTOR,
    AuditResult,
    judged_at_words,
    method_spread,
    passing_worlds,
    quote,
)
from .checks import CHECKS, MIN_SIMS_TO_FAIL, Z_PASS, check_sizes, z_scores
from .checks import statistics as check_statistics
from .extrapolation import (
    curve_rows,
    decay_decomposition,
    fit_sizes,
    jackknife_decomposition,
)
from .known import (
    all_or_nothing_words,
    declared_known,
    exact_decomposition,
    known_degenerate,
    one_draw_hint,
    split_known,
)
from .many_draws import coarse_counts, shortcut_audit
from .methods import decompose_counts

AUDIT_METHODS = (
    "naive",
    "bootstrap_bc",
    "crossfit",
    "jackknife",
    "extrapolation",
    "pgm",
)
WORLDS = (
    "latent",
    "classes",
    "resampled",
    "posterior",
    "means",
    "correlated",
    "correlated_lowrank",
)
# the worlds simulated by default: ``resampled`` is left out, because on the
# robustness battery's worlds its data sets never reproduced the data's checks
# (0 of 10 data sets; its shrunk rates lose the tail near the ceiling and the
# joint structure of a prompt's cells), so it only cost time; ``posterior``
# (the data's own prompts, cells from their posterior) passed them on 67 of 69
DEFAULT_WORLDS = ("latent", "classes", "posterior", "means")
# the worlds whose prompts are the data's own (resampled with their draws)
OWN_PROMPT_WORLDS = ("posterior", "means")
# the means world's random stream key (the others': 1000 + their index)
MEANS_STREAM = 1999
# posterior mass below which a difficulty grid point is skipped in the simulated
# pgm refits' posterior maximum (the estimate moves by ~1e-7; ~20% less work)
AUDIT_MIN_RESP = 1e-4
# class responsibility below which a (prompt, class) pair is skipped there (the
# rest renormalised; classes.CLASS_MIN_RESP = 1e-6 elsewhere)
AUDIT_CLASS_MIN_RESP = 1e-4
# family="auto": the Beta cell effect needs this much more log-likelihood than
# the logit choice (pgm's own rule, classes.FAMILY_MARGIN: the same number)
AUTO_MARGIN = 2.0
# family="auto": the worlds mix both families only when the Beta fit's cell effect
# (its intra-class correlation) is at least this large; below it both families are
# the binomial to within EM noise, and their likelihood difference (1-3 nats on data
# without a cell effect) says nothing about the family
MIX_MIN_ICC = 0.01
# simulated data sets have at most this many prompts; their errors' spread is
# rescaled to the data's N (the bias of an estimator hardly depends on N, its
# sampling SD scales as N^-1/2)
SIM_PROMPTS = 2000
DEFAULT_SIMS = 20
# the models refitted to simulated data sets (only those of the worlds that pass
# the checks); the other methods are scored on every simulated data set
REFITTED = ("pgm", "correlated")
# simulated data sets the correlated model is refitted to (from scratch: 1-3 s
# each at 2,000 prompts), split evenly over the passing worlds, at least
# CORRELATED_MIN_SIMS in each: where both of its own worlds pass (the fit and
# the fit without its small eigenvalues, nearly the same world) 5 + 5, not
# 10 + 10, which took the audit of a rank-3 pool (lowrank_3, N = 10,000, L = 20,
# G = 10) to 31-36 s on 2 cores (docs/debiasing.md)
CORRELATED_SIMS = 10
CORRELATED_MIN_SIMS = 5
# the worlds of the correlated model: its fit and its fit without the small
# eigenvalues (either passing the checks lets "auto" score the model)
CORRELATED_WORLDS = ("correlated", "correlated_lowrank")


def correlated_refits(n_passing: int) -> int:
    """Simulated data sets of each passing world the correlated model is
    refitted to by default: ``CORRELATED_SIMS`` split evenly over the
    ``n_passing`` worlds, ``ceil(CORRELATED_SIMS / n_passing)``, and at least
    ``CORRELATED_MIN_SIMS``."""
    share = -(-CORRELATED_SIMS // max(1, int(n_passing)))
    return max(CORRELATED_MIN_SIMS, share)


def _cols(rows: np.ndarray, sizes: np.ndarray, want) -> np.ndarray:
    """Columns of the curve ``rows`` (on ``sizes``) at the sizes ``want``."""
    return np.ascontiguousarray(rows[:, np.searchsorted(sizes, np.asarray(want))])


def _crossfit_coverage(err: np.ndarray, z: float) -> float:
    """Coverage of ``+- z * rmse`` where each half of the simulations takes its
    ``rmse`` from the other half (an honest check of ``AuditResult.interval``)."""
    half = len(err) // 2
    a, b = err[:half], err[half:]
    wa, wb = z * np.sqrt((b**2).mean()), z * np.sqrt((a**2).mean())
    return float(((np.abs(a) <= wa).sum() + (np.abs(b) <= wb).sum()) / len(err))


def resampled_rates(S: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Constrained-Bayes success rates ``(N, L)`` of the ``resampled`` world.

    Per model ``l``: ``m_l`` the mean of ``p_hat`` over its prompts, ``v`` their
    variance, ``e`` the binomial noise in it, ``mean p_hat (1 - p_hat) / (G - 1)``
    (unbiased: ``E[p_hat (1 - p_hat)] = p (1 - p) (G - 1) / G``); the rates
    ``m_l + sqrt((v - e) / v) (p_hat - m_l)`` have the spread over prompts of the
    true rates (Louis' constrained Bayes), not the inflated one of ``p_hat``.
    Missing cells hold ``m_l``."""
    obs = G > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(obs, S / np.maximum(G, 1), np.nan)
        m = np.nanmean(p, axis=0)
        v = np.nanvar(p, axis=0)
        e = np.nanmean(np.where(obs, p * (1 - p) / np.maximum(G - 1, 1), np.nan), 0)
        a = np.sqrt(np.clip((v - e) / np.where(v > 0, v, 1.0), 0.0, 1.0))
    m = np.where(np.isfinite(m), m, 0.5)
    a = np.where(np.isfinite(a), a, 0.0)
    out = m[None, :] + a[None, :] * (p - m[None, :])
    return np.clip(np.where(obs, out, m[None, :]), 0.0, 1.0)


def correlated_sampler(f, topic: np.ndarray, Sigma: np.ndarray | None = None):
    """The ``correlated`` world: ``(n, r) -> (p (n, L), topic (n,))`` with
    ``logit p ~ N(mu, Sigma)`` of ``f``, the correlated logit-normal fitted to the
    data (:func:`capfront.debias.correlated.fit_correlated`), and each prompt's
    topic code that of a random data prompt; ``Sigma``: another covariance (the
    ``correlated_lowrank`` world's)."""
    mu = np.asarray(f.mu, dtype=np.float64)
    Sig = np.asarray(f.Sigma if Sigma is None else Sigma, dtype=np.float64)
    chol = np.linalg.cholesky(Sig)

    def sample(n: int, r: np.random.Generator):
        eta = mu + r.standard_normal((n, len(mu))) @ chol.T
        return expit(eta), topic[r.integers(0, len(topic), n)]

    return sample


class _Inline:
    """An executor that runs each task when it is submitted (one worker)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def submit(self, fn, *args, **kwargs) -> Future:
        fut: Future = Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as e:  # (re-raised by result(), as a pool's)
            fut.set_exception(e)
        return fut

    def shutdown(self, wait: bool = True) -> None:
        return None


def _pool(workers: int):
    """A thread pool of ``workers``, or :class:`_Inline` for one."""
    return ThreadPoolExecutor(max_workers=workers) if workers > 1 else _Inline()


#: by default the audit scores ``extrapolation`` only up to this many draws per
#: cell: its subsample curve costs ``O(N L g)`` per size on every simulated data
#: set (at N = 2,000, L = 33, G = 600: 3.2 s CPU per data set for its 32 sizes,
#: against 24 s for the whole audit without it), and the bias it removes is
#: already small there (the naive oracle's bias falls like ``G^-1/2`` or faster)
EXTRAPOLATION_MAX_G = 100


def _world_summary(err, err_pop, est, se, truth, truth_pops, z, shrink):
    """Error summaries of one method in one world; ``shrink = sqrt(N_sim / N)``
    rescales the errors' spread around their mean to the data's N. A method
    not scored in the world (no simulations) has NaN summaries."""
    if not len(err):
        nan = float("nan")
        keys = ("bias", "sd", "rmse", "rmse_population", "coverage")
        return {"_n": 0, **dict.fromkeys(keys, nan)} | {
            "coverage_prompts": nan,
            "mean_se": nan,
            "_err": err,
            "_err_pop": err_pop,
        }
    b = float(err.mean())
    e = b + (err - b) * shrink
    bp = float(err_pop.mean())
    ep = bp + (err_pop - bp) * shrink
    s = se * shrink
    return {
        "_n": len(err),
        "bias": b,
        "sd": float(e.std(ddof=1)) if len(e) > 1 else 0.0,
        "rmse": float(np.sqrt((e**2).mean())),
        "rmse_population": float(np.sqrt((ep**2).mean())),
        "coverage": float((np.abs(ep) <= z * s).mean()),
        "coverage_prompts": float((np.abs(e) <= z * s).mean()),
        "mean_se": float(s.mean()),
        "_err": e,
        "_err_pop": ep,
    }


def audit(
    results: EvalResults,
    *,
    n_sims: int = DEFAULT_SIMS,
    seed: int = 0,
    methods: tuple[str, ...] | None = None,
    level: float = 0.95,
    family: str = "auto",
    use_topics: bool = True,
    pgm_max_iter: int = 5,
    backend: str | None = None,
    pgm_tol: float = 1e-5,
    n_workers: int | None = None,
    latent_classes: int | str = "auto",
    worlds: tuple[str, ...] | None = None,
    sim_prompts: int | None = None,
    correct: bool = False,
    sensitivity: bool = True,
    correlated: bool | str = "auto",
    correlated_sims: int | None = None,
    known_models=None,
) -> AuditResult:
    """Simulate data like ``results`` from several fitted worlds, check which look
    like the data, and score every oracle estimator against the known truth.

    Parameters
    ----------
    n_sims : simulated data sets per world (default 20).
    methods : estimators to score (default: all but ``double_bc``; ``extrapolation``
        only with ``4 <= G <= EXTRAPOLATION_MAX_G``; name it to score it at any
        ``G >= 4``).
    level : nominal level of the intervals.
    family : cell-effect family of the latent model (the ``latent`` world and the
        ``pgm`` refits): ``"logitnormal"``, ``"betabinomial"``, ``"logit_t"`` or
        ``"auto"``: as ``pgm`` chooses it
        (:func:`capfront.debias.classes.choose_family`): the logit-normal or
        logit-t family, or the Beta family when its marginal log-likelihood is
        higher by more than ``AUTO_MARGIN`` (2 nats, ``pgm``'s
        ``FAMILY_MARGIN``; the audit fits the Beta beside the logit choice, on
        the prompts the latent world is fitted to). With ``"auto"`` the
        ``latent`` world's data sets come from *both* fits, each with its
        likelihood weight
        (``family_weights``), when the Beta fit's intra-class correlation is at
        least ``MIX_MIN_ICC``.
    latent_classes : ``pgm``'s latent prompt classes (``"auto"``: by AIC, see
        :func:`capfront.debias.classes.fit_pgm`); the refits keep the number
        chosen on the data.
    worlds : which of ``WORLDS`` to simulate (default ``DEFAULT_WORLDS``:
        ``latent``, ``posterior``, ``means`` and, when AIC picks more than one
        class, ``classes``; ``correlated``, ``correlated_lowrank`` and ``resampled``
        when named; ``correlated_lowrank`` only when the correlated fit's
        spectrum has a gap).
    sim_prompts : prompts per simulated data set (default ``min(N, 2000)``; the
        errors' spread around their mean is rescaled to ``N``). The checks judge
        a world at the data's ``N``; where none passes there (more prompts than
        ``sim_prompts``), at ``sim_prompts`` (``AuditResult.checks_at``,
        :mod:`capfront.debias.checks`).
    correct : quote ``estimate - mean bias over the passing worlds``.
    sensitivity : refit ``pgm`` with twice the latent classes and with each
        other cell-effect family (:func:`model_sensitivity`); the largest change
        of the estimate widens ``pgm``'s quoted interval when it exceeds the
        bias the worlds measured.
    correlated : ``"auto"``: fit the correlated logit-normal
        (:mod:`capfront.debias.correlated`) to the data, and when its AIC is
        below ``pgm``'s, add its worlds (``CORRELATED_WORLDS``: ``"correlated"``
        and, when its spectrum has a gap, ``"correlated_lowrank"``) and its
        method (scored beside ``pgm`` when either world passes the checks) and
        count its estimate as a rival model of ``pgm``'s (``sensitivity``);
        ``True``: add them whatever the AIC; ``False``: never (unless named in
        ``worlds`` or ``methods``). ``AuditResult.correlated`` has the
        comparison and ``gap_rank`` (0: no gap).
    correlated_sims : simulated data sets per passing world on which the
        correlated model is refitted (from scratch, ~1-3 s each at 2,000 prompts;
        default: ``CORRELATED_SIMS = 10`` split over the passing worlds, at least
        ``CORRELATED_MIN_SIMS = 5`` in each, and at most ``n_sims``:
        :func:`correlated_refits`).
    known_models : names of models whose rates are known from their counts
        (e.g. greedy runs, one draw each): as in
        :func:`capfront.debiased_oracle`; models that answer all or nothing in
        every cell over at least two draws are found without it. The audit is
        then of the other models on the prompts none of these solved, its
        numbers mapped back (``known_models``, ``solved_by_known``).
    pgm_max_iter, pgm_tol : EM iterations / tolerance of the refits.
    n_workers : simulations run at the same time in threads (default: the number
        of kernel threads); every simulation has its own random stream, so the
        result does not depend on it.

    Returns
    -------
    AuditResult. Quote ``debiased_oracle(results, a.recommended, audit=a)``: its
    ``value`` and ``ci`` are ``a.quoted``'s.
    """
    from .classes import (
        LOGIT_FAMILIES,
        choose_family,
        fit_pgm,
        naive_shortcut,
        posterior_max,
    )
    from .latent import LatentFit, fit_latent

    t0 = time.perf_counter()
    if int(n_sims) < 2:
        raise ValueError("n_sims must be >= 2")
    if not 0 < level < 1:
        raise ValueError("level must lie in (0, 1)")
    if int(pgm_max_iter) < 1 or not float(pgm_tol) >= 0:
        raise ValueError("pgm_max_iter must be >= 1 and pgm_tol >= 0")
    if n_workers is not None and (isinstance(n_workers, bool) or int(n_workers) < 1):
        raise ValueError(
            f"n_workers must be >= 1 (or None: the kernel threads), got {n_workers!r}"
        )
    # the counts as stored (uint8 / uint16 ..., n_draws possibly a broadcast
    # view): every estimator, fit and check reads them in blocks of prompts
    S, G = counts(results, "audit", compact=True)
    # models whose counts are all or nothing (greedy decoding): their cells are
    # known; the audit is of the other models on the prompts none of those
    # solved, its numbers mapped back to all prompts (capfront.debias.known)
    if (split := split_known(S, G, declared_known(results, known_models))) is not None:
        if known_degenerate(split):
            return shortcut_audit(
                exact_decomposition(split, S, G), methods or (), level, family, t0
            )
        inner = audit(
            results.select(prompts=split.rest_prompts, models=split.rest_models),
            n_sims=n_sims, methods=methods, level=level, seed=seed, family=family,
            use_topics=use_topics, pgm_max_iter=pgm_max_iter, backend=backend,
            pgm_tol=pgm_tol, n_workers=n_workers, latent_classes=latent_classes,
            worlds=worlds, sim_prompts=sim_prompts, correct=correct,
            sensitivity=sensitivity, correlated=correlated,
            correlated_sims=correlated_sims,
        )  # fmt: skip
        known = [str(m) for m in np.asarray(results.models)[split.known]]
        return _lift_audit(inner, split, known, t0)
    g = min_draws(G)
    if g < 2:
        hint = one_draw_hint(G, results.models)
        raise ValueError(
            "audit needs at least 2 generations per cell"
            + (f"; {hint}" if hint else "")
        )
    if correlated not in (True, False, "auto"):
        raise ValueError(
            f"correlated must be 'auto', True or False, got {correlated!r}"
        )
    if correlated_sims is not None and (
        isinstance(correlated_sims, bool) or int(correlated_sims) < 2
    ):
        raise ValueError(f"correlated_sims must be >= 2, got {correlated_sims!r}")
    # "auto" adds the correlated world / method only where the caller left the
    # worlds / methods to the defaults
    add_world, add_method = worlds is None, methods is None
    if methods is None:
        methods = tuple(
            m
            for m in AUDIT_METHODS
            if m != "extrapolation" or 4 <= g <= EXTRAPOLATION_MAX_G
        )
    if "extrapolation" in methods and g < 4:
        raise ValueError(
            "extrapolation (fitting O_inf + a g^-lam) needs at least 4 generations "
            f"per cell; the data has cells with {g}"
        )
    if worlds is None:
        worlds = DEFAULT_WORLDS
    bad = set(worlds) - set(WORLDS)
    if bad or not worlds:
        raise ValueError(f"worlds must be a non-empty subset of {WORLDS}, got {worlds}")
    topic, names = topic_codes(results, use_topics)
    if family not in ("logitnormal", "betabinomial", "logit_t", "auto"):
        raise ValueError(
            f"unknown family {family!r}; use 'logitnormal', 'betabinomial', "
            "'logit_t' or 'auto'"
        )
    if "pgm" in methods and (short := naive_shortcut(S, G)) is not None:
        # many draws per cell: pgm is the naive oracle, whose bias is bounded
        return shortcut_audit(short, methods, level, family, t0)
    # the fits read the counts pgm's do (coarsened above 500 draws a cell)
    S_fit = S if (coarse := coarse_counts(S, G)) is None else coarse
    alt = None  # the other family's fit (family="auto")
    sel_fit = None  # choose_family's fit on its subsample
    # threads for the fits and simulations below (each result is its own: the
    # same numbers with any number of them)
    n_par = max(1, int(n_workers or get_num_threads()))
    # the correlated logit-normal: fitted to the data when named or when "auto"
    # may add it (its AIC against pgm's needs the counts pgm was fitted to: not
    # the coarsened ones), on the rival fits' prompts (an evenly spaced 2,000 of
    # larger data: an AIC of as many prompts as the simulated data sets have, so
    # the choice does not drift with N, and a fit as cheap); each model needs
    # draws there, else its logits are not identified
    sub = even_rows(S.shape[0], SIM_PROMPTS)
    named_corr = "correlated" in methods or any(w in worlds for w in CORRELATED_WORLDS)
    want_cfit = named_corr or (
        correlated is not False
        and "pgm" in methods
        and coarse is None
        and bool((G[sub] > 0).any(0).all())
    )
    # it starts now, with threads to spare beside pgm's fit (which leaves a core
    # idle while it fits one model at a time): the same fit, the same numbers
    cfit_fut = None
    if want_cfit:
        from .correlated import fit_correlated

        early = ThreadPoolExecutor(max_workers=1) if n_par > 1 else _Inline()
        cfit_fut = early.submit(fit_correlated, S[sub], G[sub], backend=backend)
        early.shutdown(wait=False)
    if family == "auto":

        def latent(f):
            return fit_latent(S_fit, G, topic, family=f, backend=backend, topics=names)

        # the Beta fit (on all the prompts the latent world is fitted to) in a
        # thread while the logit-scale family is chosen as pgm's own "auto"
        # picks it (normal or t) and fitted; then the Beta by pgm's rule
        with _pool(min(n_par, 2)) as pool:
            beta = pool.submit(latent, "betabinomial")
            cont, sel_fit, _ = choose_family(
                S_fit, G, topic, backend=backend, topics=names,
                families=LOGIT_FAMILIES,
            )  # fmt: skip
            fits = [latent(cont), beta.result()]
        delta = float(fits[1].loglik - fits[0].loglik)
        fit, alt = (fits[1], fits[0]) if delta > AUTO_MARGIN else fits
        family = fit.family
        if fits[1].scale >= MIX_MIN_ICC:
            w_beta = float(expit(delta))
            family_weights = {cont: 1.0 - w_beta, "betabinomial": w_beta}
        else:  # no cell effect to speak of: the family is moot
            alt = None
            family_weights = {family: 1.0}
    else:
        fit = fit_latent(S_fit, G, topic, family=family, backend=backend, topics=names)
        family_weights = {family: 1.0}
    # pgm as quoted: the latent-class fit (K = 1 is `fit` itself)
    if "pgm" in methods or "classes" in worlds:
        pfit = fit_pgm(
            S_fit,
            G,
            topic,
            latent_classes=latent_classes,
            family=family,
            backend=backend,
            topics=names,
            one_class=fit,
            select_base=sel_fit,
            workers=min(n_par, 2),
        )
    else:
        pfit = fit
    N, L = S.shape
    n_sim_p = int(min(N, SIM_PROMPTS if sim_prompts is None else sim_prompts))
    if n_sim_p < 2:
        raise ValueError("sim_prompts must be >= 2")
    shrink = float(np.sqrt(n_sim_p / N))
    rows_sim = even_rows(N, n_sim_p)
    Gs = G[rows_sim]
    obs = Gs > 0
    obs_all = G > 0
    K = fit.theta.shape[1]
    freq = np.bincount(topic, minlength=K) / N
    z = float(stats.norm.ppf(0.5 + level / 2))

    # ---- the worlds: a sampler of (p (n, L), topic (n,)) each
    def latent_sampler(f: LatentFit):
        return lambda n, r: f.simulate_p(n, r, freq)

    cb: list[np.ndarray] = []  # the (N, L) float64 rates: only for that world

    def resampled(n, r):
        if not cb:
            cb.append(resampled_rates(S, G))
        i = r.integers(0, N, n)
        return cb[0][i], topic[i]

    samplers = {}
    if "latent" in worlds:
        samplers["latent"] = None  # the family mixture, below
    if "classes" in worlds and pfit.n_classes > 1:
        samplers["classes"] = latent_sampler(pfit)
    if "resampled" in worlds:
        samplers["resampled"] = resampled
    if "posterior" in worlds:
        from .posterior_world import posterior_sampler

        samplers["posterior"] = posterior_sampler(pfit, S, G, rows_sim)
    if "means" in worlds:
        from .posterior_world import means_sampler

        samplers["means"] = means_sampler(pfit, G, rows_sim, backend)
    cfit = None
    names_w = list(samplers)

    def population_oracle(sample, r: np.random.Generator, own_draws=False) -> float:
        n_pop = int(min(4e6 / L, 400_000))
        if own_draws:  # resampled data prompts: 10 per source prompt is plenty
            drawn = sample(min(n_pop, 10 * n_sim_p), r)
            p_pop, obs_pop = drawn[0], drawn[2] > 0
        else:
            drawn = sample(n_pop, r)
            p_pop, obs_pop = drawn[0], obs_all[r.integers(0, N, n_pop)]
        return float(np.where(obs_pop, p_pop, -np.inf).max(axis=1).mean())

    # independent streams: the latent world keeps the single-world audit's
    # (population, one per simulation, the family draws); each other world its own
    n = int(n_sims)
    streams = {}
    # each world's population oracle (its own stream: computed in the pool
    # below, beside the simulations): () -> (per simulation (n,), the first)
    pop_tasks = {}
    other = np.zeros(n, bool)

    def stream_key(w: str) -> int:
        # 1000 + the world's place among the others in ``names_w``; the means
        # world's key is its own, so the others keep the streams they had
        # before it was added (an audit whose means world fails its checks is
        # the audit without it, bit for bit)
        if w == "means":
            return MEANS_STREAM
        return 1000 + [v for v in names_w if v != "means"].index(w)

    def world_jobs(w: str) -> list[tuple[str, int]]:
        """Set up world ``w`` (in ``names_w``; its random streams) and return
        its simulation jobs."""
        nonlocal other
        if w == "latent":
            ss = np.random.SeedSequence(int(seed)).spawn(n + 2)
            w_alt = 0.0 if alt is None else family_weights[alt.family]
            other = np.random.default_rng(ss[-1]).random(n) < w_alt

            def pop_latent(s0=ss[0], other=other):
                rng = np.random.default_rng(s0)
                first = population_oracle(latent_sampler(fit), rng)
                tp = np.full(n, first)
                if other.any():
                    tp[other] = population_oracle(latent_sampler(alt), rng)
                return tp, first

            pop_tasks[w] = pop_latent
            streams[w] = ss[1 : n + 1]
        else:
            ss = np.random.SeedSequence([int(seed), stream_key(w)]).spawn(n + 1)

            def pop_world(w=w, s0=ss[0]):
                r0 = np.random.default_rng(s0)
                first = population_oracle(samplers[w], r0, w in OWN_PROMPT_WORLDS)
                return np.full(n, first), first

            pop_tasks[w] = pop_world
            streams[w] = ss[1:]
        return [(w, i) for i in range(n)]

    jobs = [j for w in names_w for j in world_jobs(w)]

    curve_methods = [m for m in methods if m in ("jackknife", "extrapolation")]
    sizes = np.unique(
        np.concatenate(
            [check_sizes(g), [g - 1, g]]
            + ([fit_sizes(g)] if "extrapolation" in curve_methods else [])
        )
    ).astype(np.int64)
    sizes = sizes[sizes >= 1]
    cheap = [m for m in methods if m not in REFITTED]
    est: dict = {}
    ses: dict = {}
    truth: dict = {}
    sim_stats: dict = {}
    sims: dict = {}  # world -> simulation -> (S, G, topic) for the refits

    def add_arrays(w: str, ms) -> None:
        for d in (est, ses):
            d.setdefault(w, {}).update({m: np.full(n, np.nan) for m in ms})

    def init_world(w: str) -> None:
        """World ``w``'s arrays: estimates, truths, check statistics, data sets."""
        add_arrays(w, methods)
        truth[w], sim_stats[w] = np.empty(n), np.empty((n, len(CHECKS)))
        sims[w] = [None] * n

    for w in names_w:
        init_world(w)

    def simulate(job) -> None:
        """Draw one data set of world ``w``; its checks and the methods that
        are not refitted."""
        w, i = job
        r = np.random.default_rng(streams[w][i])
        Gw, obs_w = Gs, obs
        if w == "latent":
            p, tp = (alt if other[i] else fit).simulate_p(n_sim_p, r, freq)
        else:
            drawn = samplers[w](n_sim_p, r)
            p, tp = drawn[0], drawn[1]
            if len(drawn) == 3:  # resampled data prompts keep their draws
                Gw = drawn[2]
                obs_w = Gw > 0
        Si = r.binomial(Gw, np.where(obs_w, p, 0.0))
        truth[w][i] = np.where(obs_w, p, -np.inf).max(axis=1).mean()
        Si, Gi = check_counts(Si, Gw)
        rows_c = curve_rows(Si, Gi, sizes, backend)
        sim_stats[w][i] = check_statistics(Si, Gi, rows_c, sizes)
        sims[w][i] = (Si, Gi, tp)
        for m in cheap:
            if m == "jackknife":
                dec = jackknife_decomposition(
                    Si, Gi, backend=backend, rows=_cols(rows_c, sizes, [g - 1, g])
                )
            elif m == "extrapolation":
                fs = fit_sizes(g)
                dec = decay_decomposition(fs, _cols(rows_c, sizes, fs), None)
            else:
                dec = decompose_counts(Si, Gi, m, backend=backend)
            est[w][m][i] = dec.estimate()
            ses[w][m][i] = dec.standard_error()

    def refit(job) -> None:
        """Refit model ``m`` to simulated data set ``i`` of world ``w``."""
        w, i, m = job
        Si, Gi, tp = sims[w][i]
        if m == "pgm":
            from .classes import pgm_decomposition

            dec = pgm_decomposition(
                Si,
                Gi,
                tp,
                family=family,
                backend=backend,
                init=pfit,
                max_iter=int(pgm_max_iter),
                tol=float(pgm_tol),
                min_resp=AUDIT_MIN_RESP,
                class_min_resp=AUDIT_CLASS_MIN_RESP,
            )
        else:
            from .correlated import correlated_decomposition

            # from scratch, not warm-started at the data's fit: in the
            # correlated world that fit is the truth, and refits started
            # there (one SQUAREM cycle) measured a bias of 1e-7 points where
            # from-scratch fits measure 0.05 (lowrank_3, L = 12, G = 20)
            dec = correlated_decomposition(Si, Gi, backend=backend)
        est[w][m][i] = dec.estimate()
        ses[w][m][i] = dec.standard_error()

    # the rival models' fits (model_sensitivity) and the data's pgm estimate
    # run in the same pool as the simulations, first (the longest tasks)
    short = naive_shortcut(S, G) if "pgm" in methods else None
    sens_plan = (
        _sensitivity_plan(S, G, topic, pfit, names, backend)
        if "pgm" in methods and sensitivity and short is None
        else None
    )
    # (a copy: posterior_max stores the class responsibilities in the fit,
    # which the simulations' refits start from)
    pfit_data = dataclasses.replace(pfit)

    def data_pgm():
        return posterior_max(pfit_data, backend, cell_means=False)[0]

    # the curve at the checks' sizes only (each size's column is computed on
    # its own: the same values as those columns of the full curve): (N, 3)
    # float64, not (N, len(sizes)) (960 MB at N = 1e7, G = 20)
    cs = check_sizes(g)
    corr_info = None
    workers = max(1, min(n_par, len(jobs) + n * want_cfit))
    with _pool(workers) as pool:
        sens_futs = [] if sens_plan is None else [
            pool.submit(sens_plan[0], *m) for m in sens_plan[1]
        ]  # fmt: skip
        pgm_fut = pool.submit(data_pgm) if "pgm" in methods and short is None else None
        pop_futs = {w: pool.submit(task) for w, task in pop_tasks.items()}
        sim_futs = [pool.submit(simulate, job) for job in jobs]
        data_stats = check_statistics(S, G, curve_rows(S, G, cs, backend), cs)
        use = False
        if want_cfit:
            from .correlated import extend_correlated, gap_rank, truncated_covariance

            cfit = cfit_fut.result()
            if sens_futs:  # against the fitted model refitted to those prompts
                _, ll0, np0 = sens_futs[0].result()
            else:
                ll0 = float(pfit.loglik) * len(sub) / N
                np0 = int(pfit.n_params)
            d_aic = 2.0 * (cfit.n_params - np0) - 2.0 * (cfit.loglik - ll0)
            use = correlated is True or (correlated == "auto" and d_aic < 0)
            corr_info = {
                "aic_difference": float(d_aic),
                "aic_prompts": len(sub),
                "estimate_fit_prompts": float(cfit.value),
                "preferred": bool(d_aic < 0),
                "scored": False,
            }
            # the correlated world, and the fit without its small eigenvalues
            # when a gap sets them off (where the fit is least sure): "auto"
            # adds both where the data prefer the model, or each when named
            add = {w: (use and add_world) or w in worlds for w in CORRELATED_WORLDS}
            rank = gap_rank(cfit.Sigma)
            corr_info["gap_rank"] = rank
            for w in CORRELATED_WORLDS:
                if not add[w] or w in samplers:
                    continue
                if w == "correlated":
                    samplers[w] = correlated_sampler(cfit, topic)
                elif rank:
                    low = truncated_covariance(cfit.Sigma, rank)
                    samplers[w] = correlated_sampler(cfit, topic, low)
                else:
                    continue
                init_world(w)
                names_w.append(w)
                new = world_jobs(w)
                pop_futs[w] = pool.submit(pop_tasks[w])
                sim_futs += [pool.submit(simulate, job) for job in new]
        for fut in sim_futs:
            fut.result()
        # the checks decide which worlds' data sets the models are refitted
        # to: a world that fails them gets weight 0, so its refits would only
        # fill the world table
        weights, check_rows = _weights(names_w, data_stats, sim_stats, shrink, N, n)
        checks_at = "data"
        if not any(weights.values()) and n_sim_p < N:
            # none passes at the data's N: judged again at the simulated data
            # sets' size, where the worlds measure the errors (checks.py)
            w_sim, rows_sim_size = _weights(
                names_w, data_stats, sim_stats, 1.0, n_sim_p, n
            )
            if any(w_sim.values()):
                weights, check_rows, checks_at = w_sim, rows_sim_size, "simulations"
        # when none passes, the world nearest to passing (smallest largest
        # |z|) stands in: the untrusted audit quotes the bracket, around the
        # estimate of the method that world scores best
        passing = [w for w in names_w if weights[w] > 0] or [
            min(names_w, key=lambda w: _worst_z(check_rows, w))
        ]
        # "auto" scores the correlated model where the data prefer it (AIC)
        # and its own world is among those refitted to: where its world fails
        # the checks while others pass, its refits would measure its error in
        # worlds that are not its own, at 1-3 s each, and the data have said
        # the model misses something
        if (
            use
            and add_method
            and "correlated" not in methods
            and any(w in passing for w in CORRELATED_WORLDS)
        ):
            methods = (*methods, "correlated")
            for w in names_w:
                add_arrays(w, ["correlated"])
        if "correlated" in methods:
            corr_info["scored"] = True
            # on all prompts: the subsample fit's final E-step on all of them
            # (= fit_correlated(S, G): its EM runs on the same subsample)
            cdata_fut = (
                pool.submit(extend_correlated, cfit, S, G, backend=backend)
                if N > len(sub)
                else None
            )
        n_corr = min(
            n,
            correlated_refits(len(passing))
            if correlated_sims is None
            else int(correlated_sims),
        )
        refits = [(w, i, "pgm") for w in passing for i in range(n)] * (
            "pgm" in methods
        ) + [(w, i, "correlated") for w in passing for i in range(n_corr)] * (
            "correlated" in methods
        )
        for fut in [pool.submit(refit, job) for job in refits]:
            fut.result()
        truth_pops = {w: f.result()[0] for w, f in pop_futs.items()}
        # the latent world's population oracle under its fit (else the first
        # world's)
        truth_pop0 = float(pop_futs[names_w[0]].result()[1])
        sens_res = [f.result() for f in sens_futs]
        e1 = None if pgm_fut is None else pgm_fut.result()
        if "correlated" in methods and cdata_fut is not None:
            cfit = cdata_fut.result()
    if pgm_fut is not None:
        pfit.class_resp, pfit.resp = pfit_data.class_resp, pfit_data.resp

    # ---- the data's own estimates and statistics
    data_est, data_se = {}, {}
    for m in set(methods) | {"naive", "crossfit"}:
        if m == "pgm" and short is not None:
            # as debiased_oracle(res, "pgm") does at many draws per cell
            data_est[m], data_se[m] = short.estimate(), short.standard_error()
        elif m == "pgm":
            data_est[m] = float(e1.mean())
            data_se[m] = float(e1.std(ddof=1) / np.sqrt(N)) if N > 1 else 0.0
        elif m == "correlated":
            from .correlated import fit_decomposition

            dec = fit_decomposition(cfit)
            data_est[m], data_se[m] = dec.estimate(), dec.standard_error()
        else:
            dec = decompose_counts(S, G, m, backend=backend)
            data_est[m], data_se[m] = dec.estimate(), dec.standard_error()
    checks_df = pd.DataFrame(check_rows)
    trusted = any(v > 0 for v in weights.values())

    wrows = []
    summ = {}
    for w in names_w:
        for m in methods:
            k = np.isfinite(est[w][m])  # the simulations it was scored on
            s_ = _world_summary(
                est[w][m][k] - truth[w][k],
                est[w][m][k] - truth_pops[w][k],
                est[w][m][k],
                ses[w][m][k],
                truth[w][k],
                truth_pops[w][k],
                z,
                shrink,
            )
            summ[(w, m)] = s_
            wrows.append(
                {"world": w, "method": m, "n_sims": int(k.sum())}
                | {k: v for k, v in s_.items() if not k.startswith("_")}
            )
    world_table = pd.DataFrame(wrows).set_index(["world", "method"])
    sens_models = [] if sens_plan is None else list(sens_plan[1])
    if sens_plan is not None and corr_info is not None and corr_info["scored"]:
        # the correlated model, scored (the data prefer it and its world
        # reproduced the checks), is a rival of pgm's: its estimate on the same
        # prompts as the other rivals'
        post = np.ravel(cfit.posterior_max)
        ll_c = np.asarray(cfit.prompt_loglik)
        if len(post) > len(sub):
            post, ll_c = post[sub], ll_c[sub]
        sens_models.append((0, "correlated"))
        sens_res.append((float(post.mean()), float(ll_c.sum()), int(cfit.n_params)))
    sens = None if sens_plan is None else _sensitivity_table(sens_models, sens_res)
    rows_out = []
    passed = passing_worlds(weights)  # (not the nearest world)
    for m in methods:
        scored = [w for w in passing if summ[(w, m)]["_n"] > 0]
        parts = [summ[(w, m)] for w in scored]
        if not parts:  # not scored where it counts: it cannot be recommended
            rows_out.append({"method": m})
            continue
        bias = float(np.mean([p_["bias"] for p_ in parts]))
        err = np.concatenate([p_["_err"] for p_ in parts])
        err_pop = np.concatenate([p_["_err_pop"] for p_ in parts])
        rmse_c = max(float(np.sqrt(((p_["_err"] - bias) ** 2).mean())) for p_ in parts)
        worst = max(p_["rmse"] for p_ in parts)
        rows_out.append(
            {
                "method": m,
                "bias": bias,
                "abs_bias": abs(bias),
                "rmse": worst,
                "rmse_corrected": rmse_c,
                "sd": float(np.max([p_["sd"] for p_ in parts])),
                "max_abs_bias": float(max(abs(p_["bias"]) for p_ in parts)),
                "rmse_population": max(p_["rmse_population"] for p_ in parts),
                "coverage": float(np.mean([p_["coverage"] for p_ in parts])),
                "coverage_prompts": float(
                    np.mean([p_["coverage_prompts"] for p_ in parts])
                ),
                "mean_se": float(np.mean([p_["mean_se"] for p_ in parts])),
                # the quoted half-width (AuditResult.interval) on the simulations
                "interval_coverage": float(
                    (
                        np.abs(err)
                        <= z * max(p_["sd"] for p_ in parts)
                        + BIAS_FACTOR
                        * max(
                            max(abs(p_["bias"]) for p_ in parts),
                            method_spread(m, sens, passed, n, data_est),
                        )
                    ).mean()
                ),
                "interval_coverage_population": _crossfit_coverage(err_pop, z),
                "worst_world": max(scored, key=lambda w: summ[(w, m)]["rmse"]),
            }
        )
    table = pd.DataFrame(rows_out).set_index("method")
    cand = table.drop(index="naive", errors="ignore")
    col = "rmse_corrected" if correct else "rmse"
    recommended = str((cand if len(cand) else table)[col].idxmin())
    bracket = (float(data_est["crossfit"]), float(data_est["naive"]))
    out = AuditResult(
        table=table,
        recommended=recommended,
        truth_population=truth_pop0,
        n_sims=n,
        level=level,
        fit=fit,
        seconds=0.0,
        family=family,
        estimates=_latent_estimates(est, ses, truth, truth_pops, other, names_w),
        family_weights=family_weights,
        world_table=world_table,
        checks=checks_df,
        world_weights=weights,
        trusted=trusted,
        corrected=bool(correct) and trusted,
        bracket=bracket,
        data_estimates={"value": data_est, "se": data_se},
        latent_classes=int(pfit.n_classes),
        bounds=tuple(float(x) for x in getattr(pfit, "bounds", (0.0, 1.0))),
        sensitivity=sens,
        correlated=corr_info,
        checks_at=checks_at,
        sim_prompts=n_sim_p,
    )
    out.note = _note(out, passing)
    out.quoted = quote(out)
    out.seconds = time.perf_counter() - t0
    return out


def model_sensitivity(
    S: np.ndarray,
    G: np.ndarray,
    topic: np.ndarray | None,
    pfit,
    names: list | None = None,
    backend: str | None = None,
    size: int = SIM_PROMPTS,
) -> pd.DataFrame:
    """How much ``pgm``'s estimate moves under the rival models.

    The rival models of the fitted one (``K`` latent classes, cell-effect family
    ``f``, at its floor and ceiling): ``2 K`` classes, each other cell-effect
    family with ``K`` classes, and, when the fit has bounds other than (0, 1),
    the same model without them (column ``bounds``; its difference counts at
    ``RIVAL_SHARE``, column ``weight``)
    (fewer classes than the chosen K are not rivals: the data reject them). Every
    other family counts, not only the Beta: when ``family="auto"`` takes the
    logit-t for its likelihood, the logit-normal is still a rival the data cannot
    rank by the oracle it implies (on the robustness battery's EvalPerf pools the t
    won by 40-400 nats and sat 0.1 point further from the truth than the normal).
    Each is fitted to the same prompts (an evenly spaced subsample of ``size``
    when there are more; the fitted model itself and its unbounded rival
    warm-started at its parameters, the others from scratch) and its estimate
    compared with the fitted model's there: ``difference = O_alt - O_fit``.
    The data cannot rank these models by the oracle they imply (the checks pass
    for several), so their disagreement is an error the simulated worlds do not
    measure: the audit's quoted interval for ``pgm`` is at least this wide."""
    estimate, alts = _sensitivity_plan(S, G, topic, pfit, names, backend, size)
    return _sensitivity_table(alts, [estimate(*m) for m in alts])


def _sensitivity_plan(S, G, topic, pfit, names, backend, size: int = SIM_PROMPTS):
    """:func:`model_sensitivity`'s fits: ``(estimate, models)``, ``estimate(k,
    family) -> (estimate, loglik, n_params)`` on the subsample and ``models``
    the fitted model first, then its rivals (each fit is independent of the
    others: the audit runs them in its pool)."""
    from .classes import fit_pgm, posterior_max
    from .latent import FAMILIES, UNBOUNDED

    N = S.shape[0]
    K = int(pfit.n_classes)
    fam = pfit.family
    others = [f for f in FAMILIES if f != fam]
    sub = even_rows(N, size)
    S_, G_ = S[sub], G[sub]
    t_ = None if topic is None else np.asarray(topic)[sub]
    kw = dict(backend=backend, topics=names)

    def estimate(k: int, family: str, bounds=None) -> tuple[float, float, int]:
        # at the fitted model's floor and ceiling unless given
        b = pfit.bounds if bounds is None else bounds
        if k == K and family == fam:
            # the fitted model's K and family (itself, or without its bounds):
            # warm-started at its parameters, which the subsample's EM leaves
            # in a third of the steps of a cold start, at a likelihood as high
            # or higher (on N = 10,000 battery data the cold refits stopped up
            # to 333 nats lower, their estimates within 0.1 point)
            f = fit_pgm(S_, G_, t_, init=pfit, bounds=b, **kw)
        else:
            f = fit_pgm(S_, G_, t_, latent_classes=k, family=family, bounds=b, **kw)
        est = float(posterior_max(f, backend, cell_means=False)[0].mean())
        return est, float(f.loglik), int(f.n_params)

    # fewer classes than the chosen K are rejected by the data (BIC +100 to
    # +1,200 on the battery when BIC chose) yet can move the estimate by a
    # point: not a rival
    models = [(K, fam), (2 * K, fam)] + [(K, f) for f in others]
    if tuple(pfit.bounds) != UNBOUNDED:
        # a floor and ceiling shared by all models, where the rates' real ones
        # differ between models (one model's format failures cap it at 0.9,
        # another reaches 1), took pgm 0.7-1.2 points below the truth while the
        # unbounded fit was within 0.1, although the data preferred the bounds
        # by likelihood; where the bounds are real (MMLU-Pro's rates) the
        # unbounded fit is a point above. The truth lay between the two: the
        # unbounded fit is a rival at RIVAL_SHARE weight (with the quoted
        # interval's factor 2 on the spread, the interval reaches it)
        models.append((K, fam, UNBOUNDED))
    return estimate, models


def _sensitivity_table(models, results) -> pd.DataFrame:
    """The :func:`model_sensitivity` table from the estimates of ``models`` (the
    fitted model first)."""
    from .audit_result import RIVAL_SHARE

    base, ll0, np0 = results[0]
    rows = []
    for m, (e, ll, n_par) in zip(models[1:], results[1:], strict=True):
        k, f = m[0], m[1]
        rows.append(
            {
                "latent_classes": k,
                "family": f,
                # the rival's floor and ceiling: "" at the fitted model's;
                # the unbounded rival's difference counts at RIVAL_SHARE
                "bounds": "{:g}:{:g}".format(*m[2]) if len(m) > 2 else "",
                "weight": RIVAL_SHARE if len(m) > 2 else 1.0,
                "estimate": e,
                "difference": e - base,
                # log-likelihood of the rival minus the fitted model's, on the
                # same prompts (negative: the data prefer the fitted model)
                "loglik_difference": ll - ll0,
                "params_difference": n_par - np0,
            }
        )
    return pd.DataFrame(rows)


#: the audit table's and world table's columns in points of the oracle (the
#: others are shares, counts or names)
_ERROR_COLUMNS = (
    "bias", "abs_bias", "rmse", "rmse_corrected", "sd", "max_abs_bias",
    "rmse_population", "mean_se",
)  # fmt: skip


def _lift_audit(inner: AuditResult, split, known: list[str], t0: float) -> AuditResult:
    """The audit of all prompts from ``inner``, the audit of the models that are
    not all or nothing on the prompts none of those solved: an estimate ``x``
    there is ``s1 + s0 x`` on all prompts (``s1`` the share solved, ``s0 = 1 -
    s1``), an error or standard error ``e`` is ``s0 e``; coverages, checks and
    the choice of method are the inner audit's."""
    s1 = split.share_solved
    s0 = 1.0 - s1

    def lift(x):
        return s1 + s0 * np.asarray(x, dtype=np.float64) if x is not None else None

    def errors(df: pd.DataFrame | None) -> pd.DataFrame | None:
        if df is None:
            return None
        df = df.copy()
        for c in _ERROR_COLUMNS:
            if c in df:
                df[c] = df[c] * s0
        return df

    def sims(d: dict) -> dict:
        out = dict(d)
        out["estimates"] = {m: lift(v) for m, v in d.get("estimates", {}).items()}
        out["se"] = {m: s0 * np.asarray(v) for m, v in d.get("se", {}).items()}
        for k in ("truth", "truth_population"):
            if k in d:
                out[k] = lift(d[k])
        return out

    out = dataclasses.replace(inner)
    out.table = errors(inner.table)
    out.world_table = errors(inner.world_table)
    out.truth_population = float(lift(inner.truth_population))
    if inner.estimates:
        est = sims(inner.estimates)
        est["worlds"] = {
            w: sims(d) for w, d in inner.estimates.get("worlds", {}).items()
        }
        out.estimates = est
    if inner.bracket is not None:
        out.bracket = (float(lift(inner.bracket[0])), float(lift(inner.bracket[1])))
    values = inner.data_estimates.get("value", {})
    ses = inner.data_estimates.get("se", {})
    out.data_estimates = {
        "value": {m: float(lift(v)) for m, v in values.items()},
        "se": {m: float(s0 * v) for m, v in ses.items()},
    }
    if inner.sensitivity is not None:
        sens = inner.sensitivity.copy()
        sens["estimate"] = lift(sens["estimate"])
        sens["difference"] = sens["difference"] * s0
        out.sensitivity = sens
    if inner.correlated is not None:
        corr = dict(inner.correlated)
        if "estimate_fit_prompts" in corr:
            corr["estimate_fit_prompts"] = float(lift(corr["estimate_fit_prompts"]))
        out.correlated = corr
    out.known_models = tuple(known)
    out.solved_by_known = s1
    n_rest = len(split.rest_prompts)
    out.note = (
        all_or_nothing_words(known) + ", so their rates are known; they "
        f"solved {s1:.1%} of the prompts, where the oracle is 1. The audit below is "
        f"of the other {len(split.rest_models)} model(s) on the {n_rest} prompts "
        f"none of them solved, its numbers mapped back to all prompts. " + inner.note
    )
    out.quoted = quote(out)
    out.seconds = time.perf_counter() - t0
    return out


def _latent_estimates(est, ses, truth, truth_pops, other, names_w) -> dict:
    """``estimates``: the ``latent`` world's arrays at the top level (as the
    single-world audit had them) and every world's under ``"worlds"``."""
    w0 = "latent" if "latent" in names_w else names_w[0]
    return {
        "estimates": est[w0],
        "se": ses[w0],
        "truth": truth[w0],
        "truth_population": truth_pops[w0],
        "other_family": other if w0 == "latent" else np.zeros(len(truth[w0]), bool),
        "worlds": {
            w: {
                "estimates": est[w],
                "se": ses[w],
                "truth": truth[w],
                "truth_population": truth_pops[w],
            }
            for w in names_w
        },
    }


def _weights(names_w, data_stats, sim_stats, shrink, N, n):
    """Each world's weight (1: every check within ``Z_PASS``; 0) and the check
    rows of ``AuditResult.checks``."""
    rows = []
    weights = {}
    for w in names_w:
        mean, sd, zz = z_scores(data_stats, sim_stats[w], shrink, N)
        ok = np.abs(zz) <= Z_PASS
        if n < MIN_SIMS_TO_FAIL:
            ok[:] = True
        weights[w] = 1.0 if ok.all() else 0.0
        for c, name in enumerate(CHECKS):
            rows.append(
                {
                    "check": name,
                    "world": w,
                    "statistic": name,
                    "data": float(data_stats[c]),
                    "sim_mean": float(mean[c]),
                    "sim_sd": float(sd[c]),
                    "z": float(zz[c]),
                    "passed": bool(ok[c]),
                }
            )
    return weights, rows


def _worst_z(check_rows: list[dict], w: str) -> float:
    """The largest ``|z|`` of world ``w``'s checks (NaN counts as infinite)."""
    zs = [abs(r["z"]) for r in check_rows if r["world"] == w]
    return max((z if np.isfinite(z) else np.inf) for z in zs) if zs else np.inf


def _note(a: AuditResult, passing: list[str]) -> str:
    failed = [w for w, v in a.world_weights.items() if v == 0]
    s = f"simulated worlds: {', '.join(a.world_weights)}"
    if tuple(a.bounds) != (0.0, 1.0):
        s += (
            f"; pgm's rates lie between a floor of {a.bounds[0]:g} and a ceiling "
            f"of {a.bounds[1]:g} (chosen by likelihood)"
        )
    if failed:
        s += f"; failed the data checks: {', '.join(failed)}"
    if a.checks_at == "simulations":
        s += (
            "; no world reproduced the data's checks at its own number of prompts, "
            f"so they were {judged_at_words(a.sim_prompts)}"
        )
    if not a.trusted:
        s += (
            "; no world reproduced the data's checks: the audit is not trusted "
            f"(the method is the one {passing[0]}, the nearest world, scored best)"
        )
    return s
