"""Debiased estimates of the oracle ``O_true = mean_n max_l p[n, l]`` (design §4), the
audit that says which estimate to trust (design §4f) and the router-gap decomposition
of the routing-gap paper (design §5).

Public entry points: :func:`debiased_oracle`, :func:`audit`, :func:`bias_curve`,
:func:`gap_decomposition`; :func:`decomposition` is the contract with the prompt
bootstrap (``capfront.bootstrap``): per-prompt values and a ``finalize`` map with
``finalize(values.mean(axis=0)) == debiased_oracle(results, method).value``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..results import EvalResults
from ._input import counts, topic_codes
from .audit_result import AuditResult, explain, quote
from .bias_correction import naive_rows
from .classes import fit_pgm, posterior_max
from .correlated import CorrelatedFit, fit_correlated
from .extrapolation import curve_rows, fit_decay
from .graded import crossfit_graded, extrapolation_graded, jackknife_graded
from .known import (
    declared_known,
    exact_decomposition,
    known_degenerate,
    lift_values,
    one_draw_hint,
    split_known,
)
from .latent import LatentFit, fit_latent
from .result import DebiasResult, Decomposition

#: the estimators that take all-or-nothing models' cells as known
#: (:mod:`capfront.debias.known`); the other count estimators already do
#: (double_bc in expectation: its redraws are random)
KNOWN_SPLIT_METHODS = ("pgm", "correlated", "crossfit", "double_bc")

GRADED_MC = {
    "crossfit": crossfit_graded,
    "extrapolation": extrapolation_graded,
    "jackknife": jackknife_graded,
}

from .methods import (  # noqa: E402  (the estimators by name, re-exported)
    _OPTIONS,
    COUNT_ONLY,
    METHODS,
    PGM_LATENT_CLASSES,
    _check_method,
    _check_options,
    decompose_counts,
)


def decomposition(
    results: EvalResults,
    method: str = "pgm",
    *,
    backend: str | None = None,
    known_models: Any = None,
    **options: Any,
) -> Decomposition:
    """Per-prompt values ``(N, K)`` and ``finalize`` with
    ``finalize(values.mean(axis=0)) == debiased_oracle(results, method).value``.

    - ``naive``, ``bootstrap_bc``, ``double_bc``, ``crossfit``, ``pgm``: ``K = 1``,
      ``finalize`` is the identity (exact).
    - ``jackknife``: ``K = 2`` (curve at ``G - 1`` and ``G``), linear ``finalize``.
    - ``extrapolation``: per-prompt subsample curve rows on the fitted sizes,
      ``finalize`` = the curve fit (exact).
    - ``correlated``: per-prompt ``E[max_l expit(eta_nl) | S_n]`` (``K = 1``) with
      ``(mu, Sigma)`` held at their fit on the full data.
    - ``pgm``: per-prompt posterior ``E[max_l p]`` with the hyperparameters
      (``theta``, the difficulty prior, the cell-effect scale) held at their fit on
      the full data; a prompt bootstrap then ignores their estimation error.

    A bootstrap over prompts resamples rows with weights ``w`` and calls
    ``finalize(w @ values / w.sum())``. The returned :class:`Decomposition` unpacks
    as ``values, finalize = decomposition(...)``; its ``diagnostics["linear"]`` (and
    ``"grad"``) mark a linear ``finalize``.
    """
    return _decompose(
        results, method, backend=backend, known_models=known_models, **options
    )


def _decompose(
    results: EvalResults,
    method: str,
    *,
    backend: str | None = None,
    known_models: Any = None,
    **options: Any,
) -> Decomposition:
    _check_method(method)
    if not isinstance(results, EvalResults):
        raise ValueError(
            f"results must be an EvalResults, got {type(results).__name__}"
        )
    if method == "naive":
        S = np.asarray(results.successes, dtype=np.float64)
        G = results.n_draws
        with np.errstate(invalid="ignore", divide="ignore"):
            p_hat = np.where(G > 0, S / np.maximum(G, 1), -np.inf)
        _check_options(method, options)
        return Decomposition(
            p_hat.max(axis=1)[:, None], lambda m: float(m[0]), {"linear": True}
        )
    if not results.is_binary and method in GRADED_MC:
        bad = set(options) - set(_OPTIONS[method]) - {"n_splits", "seed"}
        if bad:
            raise ValueError(f"method {method!r} does not take option(s) {sorted(bad)}")
        return GRADED_MC[method](results, backend=backend, **options)
    S, G = counts(results, f"method {method!r}", compact=True)
    declared = declared_known(results, known_models)
    split = split_known(S, G, declared)
    if declared is None and method in ("pgm", "correlated"):
        if hint := one_draw_hint(G, results.models):
            warnings.warn(hint, UserWarning, stacklevel=3)
    # (all-or-nothing models found in the counts: the methods that need the
    # split; declared ones, possibly of one draw: every method)
    if split is not None and (
        method in KNOWN_SPLIT_METHODS or (declared is not None and method != "naive")
    ):
        return _decompose_known(results, method, split, S, G, backend, options)
    topic = None
    topics = None
    if method == "pgm":
        topic, topics = topic_codes(results, options.get("use_topics", True))
    dec = decompose_counts(S, G, method, topic=topic, backend=backend, **options)
    if topics is not None and "fit" in dec.diagnostics:
        dec.diagnostics["fit"].topics = topics
    return dec


def _decompose_known(results, method, split, S, G, backend, options) -> Decomposition:
    """``method`` where some models are all or nothing (:mod:`.known`): 1 on the
    prompts one of them solved, ``method``'s per-prompt values on the others,
    estimated from the other models' counts there (all models known: the
    counts are the rates, the naive oracle is exact)."""
    rest_m, rest_p = split.rest_models, split.rest_prompts
    diag: dict[str, Any] = {
        "known_models": [str(m) for m in np.asarray(results.models)[split.known]],
        "solved_by_known": split.share_solved,
    }
    if known_degenerate(split):
        dec = exact_decomposition(split, S, G)
        dec.diagnostics.update(diag)
        return dec
    sub = _decompose(
        results.select(prompts=rest_p, models=rest_m),
        method,
        backend=backend,
        **options,
    )
    # (the solved prompts are 1 in every column: the jackknife's curve points
    # and the extrapolation's sizes alike, whose fit of O_inf + a g^-lam moves
    # with an affine map of the curve)
    diag = {**sub.diagnostics, **diag}
    if "posterior_mean_p" in diag:
        # every cell's estimate, for the frontier (quality="pgm"): the reduced
        # fit's posterior means where it was fitted, the counts' rates
        # elsewhere (the known models' are exact)
        with np.errstate(invalid="ignore", divide="ignore"):
            pm = np.where(G > 0, S / np.maximum(G, 1), np.nan)
        pm[np.ix_(rest_p, rest_m)] = diag["posterior_mean_p"]
        diag["posterior_mean_p"] = pm
        diag["max_of_posterior_means"] = float(np.nanmax(pm, axis=1).mean())
        diag["posterior_sd"] = float(diag["posterior_sd"]) * len(rest_p) / S.shape[0]
    return Decomposition(lift_values(split, sub.values), sub.finalize, diag)


def _audit_for(
    results, method, audit, ci, seed, backend, ci_target, options, known_models=None
):
    """The audit whose measured error gives ``debiased_oracle``'s interval."""
    from .audit import audit as run_audit

    if ci_target not in ("prompts", "population"):
        raise ValueError(
            f"ci_target must be 'prompts' or 'population', not {ci_target!r}"
        )
    if audit is True:
        kw = {"level": float(ci)} if ci is not None else {}
        audit = run_audit(
            results, seed=seed, backend=backend, known_models=known_models, **kw
        )
    if not isinstance(audit, AuditResult):
        raise ValueError(
            f"audit must be an AuditResult or True, not {type(audit).__name__}"
        )
    if method not in audit.table.index:
        raise ValueError(
            f"the audit did not score method {method!r} "
            f"(it scored {', '.join(audit.table.index)})"
        )
    fam = options.get("family")
    if method == "pgm" and fam is not None and fam != audit.family:
        raise ValueError(
            f"the audit measured pgm with family={audit.family!r}, not {fam!r}"
        )
    return audit


def debiased_oracle(
    results: EvalResults,
    method: str = "pgm",
    *,
    ci: float | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    backend: str | None = None,
    audit: Any = None,
    ci_target: str = "prompts",
    known_models: Any = None,
    **options: Any,
) -> DebiasResult:
    """Estimate the true oracle ``O_true = mean_n max_l p[n, l]`` (design §4).

    Parameters
    ----------
    results : EvalResults
    method : str
        - ``"pgm"`` (default): latent difficulty/topic/aptitude model fitted by
          empirical Bayes, ``mean_n E_post[max_l p]`` (design §4b; our design, see
          :mod:`capfront.debias.latent`), with latent prompt classes
          (:mod:`capfront.debias.classes`): ``latent_classes="auto"`` (default:
          chosen by AIC from 1, 2, 4, 8) or an int (``1``: the one-class model).
          Options ``family`` (``"auto"``, default: ``"logitnormal"`` or
          ``"logit_t"`` by likelihood; or ``"betabinomial"``), ``scale``
          (fix the cell-effect scale), ``use_topics`` (default True: use
          ``results.topic``; the classes are then found within each topic),
          ``bounds`` (``"auto"``, default: a floor ``f`` and a ceiling ``c`` of
          every rate, ``p = f + (c - f) sigma(t)``, chosen by likelihood from
          ``f`` in [0, 0.25] and ``c`` in [0.9, 1] (guessing floors, answers
          right only most of the time; ``(0, 1)`` unless the data pay for
          them); or a pair ``(f, c)``; the result's ``diagnostics["bounds"]``).
        - ``"correlated"``: the correlated logit-normal model ``eta_n ~ N(mu,
          Sigma)`` (full covariance), ``S ~ Binomial(G, expit(eta))``, fitted by
          Monte Carlo EM, ``mean_n E[max_l expit(eta_nl) | S_n]``
          (:mod:`capfront.debias.correlated`: continuous specialisation, where
          ``pgm``'s classes stay high; compare the fits' ``aic``). Options
          ``draws``, ``final_draws``, ``iterations``, ``laplace_iterations``,
          ``subsample``, ``tol``, ``patience``, ``inflate``, ``df``, ``seed``.
        - ``"extrapolation"``: ``O_inf`` of ``O_biased(g) = O_inf + a g^-lam`` fitted
          to the exact subsample curve (design §4a); options ``lam`` (fix it; free in
          [0.1, 1.5] otherwise), ``fit_from``. Needs ``G >= 4``.
        - ``"bootstrap_bc"``: ``2 O_biased - mean_n E[max_l Y_l / G | p_hat]``,
          exact binomial kernel (design §4c); ``"double_bc"``: the iterated version
          ``3 O_biased - 3 E1 + E2``.
        - ``"crossfit"``: select on half the draws, score on the other half, both
          ways, exact expectation over random splits (design §4d; biased downward).
        - ``"jackknife"``: generalised jackknife over generations (design §4e).
        - ``"naive"``: ``mean_n max_l p_hat`` (paper eq. 5), for comparison.

        Graded (non-0/1) scores: ``crossfit``, ``extrapolation`` and ``jackknife``
        run a seeded Monte Carlo over orderings of each cell's raw draws (option
        ``n_splits``, default 32; seeded by ``seed``); ``pgm``, ``bootstrap_bc``
        and ``double_bc`` need binomial counts and raise ``ValueError``.
    ci : float, optional
        Confidence level (e.g. 0.95): a percentile prompt-bootstrap interval
        (``capfront.bootstrap`` when available). It targets the oracle of the prompt
        population, so it is conservative for the oracle of the given prompts.
    n_resamples, seed : bootstrap size and seed.
    backend : ``"cpp"``, ``"numba"`` or ``"numpy"``.
    audit : an :class:`~capfront.debias.audit.AuditResult` of these results, or
        ``True`` to run ``capfront.audit(results, seed=seed)`` here. Then
        ``value`` and ``ci`` are the audit's quoted number and interval
        (``audit.quoted`` for ``method=audit.recommended``): the estimate (minus
        the audit's measured bias when the audit corrects), ``+- z`` times the
        largest RMSE the audit measured for ``method`` over its simulated
        worlds that reproduced the data's checks, at level ``ci`` (default: the
        audit's); the cross-fit / naive bracket when no world did.
        ``ci_method`` (also ``ci_note``) says so in plain words. It covers the
        oracle of the given prompts (``ci_target="prompts"``) or, with
        ``ci_target="population"``, of the prompt population. ``method="pgm"``
        takes the audit's cell-effect family. Without ``audit`` the interval is
        the prompt bootstrap's (``ci``).
    known_models : names of models whose rates are known from their counts,
        e.g. greedy runs (every draw the same answer; one draw is then enough):
        each must answer all or nothing in every cell. Models that do so in
        every cell over at least two draws are found without it
        (:mod:`capfront.debias.known`). The oracle is then 1 on the prompts one
        of them solved, and ``method`` estimates the rest from the other models'
        counts there. With ``audit=``, the audit's known models by default.

    Returns
    -------
    DebiasResult with ``value``, ``method``, ``naive``, ``ci``, ``se`` and
    ``diagnostics`` (also readable as attributes: ``res.lam``, ``res.curve``).
    """
    _check_method(method)
    if ci is not None and not (0.0 < float(ci) < 1.0):
        raise ValueError(f"ci must be a confidence level in (0, 1), got {ci}")
    if int(n_resamples) < 10:
        raise ValueError("n_resamples must be >= 10")
    if not results.is_binary and method in GRADED_MC:
        options = {"seed": seed, **options}  # the Monte Carlo splits follow the seed
    aud = None
    if audit is not None and audit is not False:
        aud = _audit_for(
            results, method, audit, ci, seed, backend, ci_target, options, known_models
        )
        if method == "pgm":
            options = {**options, "family": aud.family}
        if known_models is None and aud.known_models:
            known_models = list(aud.known_models)
    dec = _decompose(
        results, method, backend=backend, known_models=known_models, **options
    )
    value = dec.estimate()
    naive = float(naive_rows_any(results).mean())
    out = DebiasResult(
        value=value,
        method=method,
        naive=naive,
        se=dec.standard_error(),
        diagnostics=dict(dec.diagnostics),
    )
    out.diagnostics.pop("linear", None)
    out.diagnostics.pop("grad", None)
    if aud is not None:
        _audit_interval(out, aud, method, ci, ci_target)
    elif ci is not None:
        out.level = float(ci)
        from ..resampling import PerPrompt, bootstrap

        # with options, hand the decomposition over as it is (PerPrompt):
        # capfront.bootstrap would re-run it without them
        stat = (
            PerPrompt(
                dec.values,
                dec.finalize,
                method,
                bool(dec.diagnostics.get("linear", False)),
            )
            if options or known_models is not None
            else method
        )
        res = bootstrap(
            results,
            stat,
            level=float(ci),
            n_resamples=int(n_resamples),
            seed=seed,
            backend=backend,
        )
        out.ci = (float(res.ci[0]), float(res.ci[1]))
        out.ci_method = "capfront.bootstrap (prompt bootstrap)"
    return out


def _audit_interval(out: DebiasResult, aud, method: str, ci, ci_target: str) -> None:
    """The audit's quoted value and interval on ``out`` (see
    :func:`capfront.debias.audit.quote`): the estimate minus the audit's measured
    bias when it corrects, the interval from the worst error over the worlds
    that passed its checks (or the cross-fit / naive bracket when none did).
    An audit without simulated worlds (many draws per cell) scores ``pgm`` and
    ``naive``, the same estimate: both take its quote."""
    out.level = float(aud.level if ci is None else ci)
    out.diagnostics["raw_value"] = out.value
    out.diagnostics["audit"] = aud
    if not aud.trusted and ci_target == "prompts":
        q = quote(aud, out.level)  # the bracket (widened to hold the value)
        out.ci = (min(q["ci"][0], out.value), max(q["ci"][1], out.value))
        note = q["how"]
    else:
        out.value = out.value - aud.correction(method)
        out.ci = aud.interval(
            out.value, out.se or 0.0, method, target=ci_target, level=out.level
        )
        note = (
            quote(aud, out.level)["how"]
            if ci_target == "prompts" and method == aud.recommended
            else explain(aud, method, level=out.level, target=ci_target)
        )
    out.ci_method = note
    out.diagnostics["ci_note"] = note


def naive_rows_any(results: EvalResults) -> np.ndarray:
    """``max_l p_hat[n, l]`` per prompt, read in blocks from the stored counts."""
    return naive_rows(results._stats.successes, results._stats.n_draws)


def bias_curve(
    results: EvalResults,
    *,
    sizes: np.ndarray | None = None,
    lam: float | None = None,
    backend: str | None = None,
) -> dict[str, Any]:
    """The naive oracle against the number of draws ``g`` and its fitted decay.

    ``O_biased(g)`` for ``g = 1..G`` (exact subsample curve, design §3) and the fit
    ``O_biased(g) = O_inf + a g^-lam`` on the upper half (``lam`` free unless given).
    Returns a dict: ``sizes``, ``curve``, ``o_inf``, ``amplitude``, ``lam``, ``bias``
    (``curve - o_inf``), ``naive``.
    """
    S, G = counts(results, "bias_curve")
    g = int(G[G > 0].min())
    if g < 2:
        raise ValueError("bias_curve needs at least 2 generations per cell")
    if sizes is None:
        sizes = np.arange(1, g + 1, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    if (sizes < 1).any() or (sizes > g).any():
        raise ValueError(f"sizes must lie in 1..{g}")
    from ..expected_max import subsample_curve

    curve = np.asarray(subsample_curve(S, G, sizes, backend=backend))
    out: dict[str, Any] = {
        "sizes": sizes,
        "curve": curve,
        "naive": float(naive_rows(S, G).mean()),
    }
    upper = sizes >= max(2, -(-g // 2)) if g >= 4 else sizes >= 1
    if upper.sum() >= 3:
        o_inf, a, lam_hat, _ = fit_decay(sizes[upper], curve[upper], lam)
    else:
        o_inf, a, lam_hat = float("nan"), float("nan"), float("nan")
    out.update(o_inf=o_inf, amplitude=a, lam=lam_hat, bias=curve - o_inf)
    return out


from .audit import audit  # noqa: E402
from .gap import GapDecomposition, gap_decomposition  # noqa: E402

__all__ = [
    "COUNT_ONLY",
    "METHODS",
    "PGM_LATENT_CLASSES",
    "AuditResult",
    "CorrelatedFit",
    "Decomposition",
    "DebiasResult",
    "GapDecomposition",
    "LatentFit",
    "audit",
    "bias_curve",
    "curve_rows",
    "debiased_oracle",
    "decompose_counts",
    "decomposition",
    "fit_correlated",
    "fit_latent",
    "fit_pgm",
    "gap_decomposition",
    "posterior_max",
]
