"""The audit (SPEC 4f): which oracle estimate to trust on *this* data.

Fit the latent model (SPEC 4b) to the data, simulate ``n_sims`` data sets of the same
shape (same ``N``, ``L``, draws per cell and missing cells, the topic mix of the
data) from the fitted model, run every estimator on each, and compare with the known
truth. The simulated difficulties fill the cells of the fitted prior's grid
(:meth:`LatentFit.simulate_p`), so each world carries the rounding error that real,
continuous difficulties give the fit; with ``family="auto"`` the worlds come from
both cell-effect families by their likelihood (when the data show a cell effect).
Reported per method: bias and RMSE
against the simulated prompts' own oracle ``mean_n max_l p[n, l]``, and the
coverage of the estimator's normal-approximation interval ``value +- z * se``
(``se``: prompt-level, linearised; the cheap version of the prompt bootstrap) of the
oracle of the prompt population (``population``) and of the simulated prompts' own
oracle (``these prompts``).

Caveat, stated in the output: the simulations come from the latent model itself, so
the audit cannot see a misfit of that model; it favours ``pgm`` when the model is
wrong in ways the counts cannot reveal.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from .._backend import get_num_threads
from ..results import EvalResults
from ._input import check_counts, counts, min_draws, topic_codes
from .extrapolation import (
    curve_rows,
    decay_decomposition,
    fit_sizes,
    jackknife_decomposition,
)

AUDIT_METHODS = (
    "naive",
    "bootstrap_bc",
    "crossfit",
    "jackknife",
    "extrapolation",
    "pgm",
)
# posterior mass below which a difficulty grid point is skipped in the simulated
# pgm refits' posterior maximum (the estimate moves by ~1e-7; ~20% less work)
AUDIT_MIN_RESP = 1e-4
# family="auto": the Beta cell effect needs this much more log-likelihood
AUTO_MARGIN = 2.0
# family="auto": the worlds mix both families only when the Beta fit's cell effect
# (its intra-class correlation) is at least this large; below it both families are
# the binomial to within EM noise, and their likelihood difference (1-3 nats on data
# without a cell effect) says nothing about the family
MIX_MIN_ICC = 0.01


@dataclass
class AuditResult:
    """Per-method bias, RMSE and interval coverage on data simulated like yours."""

    table: pd.DataFrame
    recommended: str
    truth_population: float
    n_sims: int
    level: float
    fit: object = field(repr=False)
    seconds: float = 0.0
    family: str = "logitnormal"
    estimates: dict = field(default_factory=dict, repr=False)
    family_weights: dict = field(default_factory=dict)
    note: str = (
        "simulated from the fitted latent model: a misfit of that model is "
        "invisible to the audit"
    )

    def interval(
        self,
        value: float,
        se: float = 0.0,
        method: str | None = None,
        *,
        target: str = "prompts",
        level: float | None = None,
    ) -> tuple[float, float]:
        """Interval for an estimate ``value`` of ``method`` (default: the
        recommended one) whose width is the error the audit measured for that
        method on data simulated like yours (fresh counts, fresh prompts and, for
        ``pgm``, the refit of the latent model, so the hyperparameters are not
        taken as known):

        - ``target="prompts"`` (default): the oracle of *these* prompts,
          ``mean_n max_l p[n, l]``: ``value +- z * rmse`` with the method's RMSE
          against each simulated prompt set's own oracle;
        - ``target="population"``: the oracle of the prompt population,
          ``value +- z * max(se, rmse_population)`` (``se``, e.g. the
          prompt-level standard error of the estimate, guards against prompts
          more varied than the fitted model's).

        ``level`` overrides the audit's confidence level; the ends are clipped
        to [0, 1]. The table's
        ``interval_coverage`` columns are the audit's cross-fitted
        check of these intervals (widths from one half of the simulations, coverage
        on the other)."""
        m = self.recommended if method is None else method
        if m not in self.table.index:
            raise ValueError(f"method {m!r} is not in the audit table")
        if target not in ("prompts", "population"):
            raise ValueError(
                f"target must be 'prompts' or 'population', not {target!r}"
            )
        lev = self.level if level is None else float(level)
        if not 0 < lev < 1:
            raise ValueError(f"level must lie in (0, 1), got {lev}")
        z = float(stats.norm.ppf(0.5 + lev / 2))
        row = self.table.loc[m]
        if target == "prompts":
            half = z * float(row["rmse"])
        else:
            half = z * max(float(se), float(row["rmse_population"]))
        # the oracle of scores in [0, 1] lies in [0, 1]
        return max(0.0, float(value) - half), min(1.0, float(value) + half)

    def __repr__(self) -> str:
        return (
            f"AuditResult(recommended={self.recommended!r}, family={self.family!r}, "
            f"n_sims={self.n_sims}, seconds={self.seconds:.1f})\n"
            f"{self.table.to_string()}"
        )


def _cols(rows: np.ndarray, sizes: np.ndarray, want) -> np.ndarray:
    """Columns of the curve ``rows`` (on ``sizes``) at the sizes ``want``."""
    return np.ascontiguousarray(rows[:, np.searchsorted(sizes, np.asarray(want))])


def _recommend(table: pd.DataFrame, level: float, n_sims: int) -> str:
    """Lowest RMSE (against the prompts' own oracle) among the methods whose
    audit interval covered in at least ``level - max(0.1, 2.5 sd)`` of the held-out
    simulations, ``sd`` the binomial SD of a coverage over ``n_sims`` (a loose
    screen against error distributions far from normal that a few simulations
    cannot trip by chance); lowest RMSE overall if none passes; never ``naive``."""
    cand = table.drop(index="naive", errors="ignore")
    sd = float(np.sqrt(level * (1 - level) / max(int(n_sims), 1)))
    ok = cand[cand["interval_coverage"] >= level - max(0.1, 2.5 * sd)]
    pool = ok if len(ok) else cand
    return str(pool["rmse"].idxmin())


def _crossfit_coverage(err: np.ndarray, z: float) -> float:
    """Coverage of ``+- z * rmse`` where each half of the simulations takes its
    ``rmse`` from the other half (an honest check of ``AuditResult.interval``)."""
    half = len(err) // 2
    a, b = err[:half], err[half:]
    wa, wb = z * np.sqrt((b**2).mean()), z * np.sqrt((a**2).mean())
    return float(((np.abs(a) <= wa).sum() + (np.abs(b) <= wb).sum()) / len(err))


def audit(
    results: EvalResults,
    *,
    n_sims: int = 200,
    seed: int = 0,
    methods: tuple[str, ...] | None = None,
    level: float = 0.95,
    family: str = "auto",
    use_topics: bool = True,
    pgm_max_iter: int = 5,
    backend: str | None = None,
    pgm_tol: float = 1e-5,
    n_workers: int | None = None,
) -> AuditResult:
    """Simulate data like ``results`` from its fitted latent model and score every
    oracle estimator against the known truth.

    Parameters
    ----------
    n_sims : simulated data sets.
    methods : estimators to score (default: all but ``double_bc``; ``extrapolation``
        only with ``G >= 4``).
    level : nominal level of the intervals whose coverage is reported.
    family : cell-effect family of the latent model that simulates the data and
        of the ``pgm`` refits: ``"logitnormal"``, ``"betabinomial"``, or
        ``"auto"``: fit both and take the Beta family when its marginal
        log-likelihood is higher by more than ``AUTO_MARGIN`` (2 nats; both have
        one scale parameter). ``AuditResult.family`` says which; quote
        ``debiased_oracle(results, "pgm", family=audit.family)``. With
        ``"auto"`` the simulated worlds come from *both* fits, each with its
        likelihood weight (``P(beta) = expit(loglik_beta - loglik_logitnormal)``,
        equal prior odds; ``AuditResult.family_weights``), while every ``pgm``
        refit uses the chosen family: where the counts cannot tell the families
        apart, the audit's RMSE then includes the error of refitting in the wrong
        one. Only when there is a cell effect to tell apart: if the Beta fit's
        intra-class correlation is below ``MIX_MIN_ICC`` (0.01), all worlds come
        from the chosen fit (``family_weights == {family: 1.0}``).
    pgm_max_iter : at most this many EM iterations in each simulated ``pgm``
        refit, warm-started at the fit on the real data (the simulations are drawn
        from that fit, so EM starts close to the refit's optimum).
    pgm_tol : a refit stops earlier once an EM iteration gains less than
        ``pgm_tol`` log-likelihood per observed cell (typically after 2 M-steps;
        the estimate then differs from the fully converged refit by a few 1e-5,
        a few percent of its sampling SD).
    n_workers : simulations run at the same time in threads (default: the number
        of kernel threads); each has its own random stream, so the result does not
        depend on it.

    Returns
    -------
    AuditResult with ``table`` (index: method) with columns ``bias``,
    ``abs_bias``, ``rmse`` (against each simulated prompt set's own oracle),
    ``sd`` (of the estimates), ``rmse_population`` (against the population
    oracle), ``coverage`` / ``coverage_prompts`` (of ``value +- z se`` with the
    prompt-level ``se``, of the population / the prompts' own oracle),
    ``mean_se``, ``interval_coverage`` / ``interval_coverage_population`` (of
    :meth:`AuditResult.interval`, cross-fitted over two halves of the
    simulations; a world's population oracle is that of the fit it came from);
    ``recommended`` (lowest RMSE among the methods whose
    ``interval_coverage`` is at least ``level - max(0.1, 2.5 sd)``, ``sd`` its
    binomial SD over ``n_sims``), ``truth_population`` (of the chosen fit),
    ``family`` (of the ``pgm`` refits), ``family_weights`` (of the simulated
    worlds). Quote
    ``audit.interval(debiased_oracle(results, audit.recommended).value)``.
    """
    from . import decompose_counts
    from .latent import LatentFit, fit_latent, pgm_decomposition

    t0 = time.perf_counter()
    if int(n_sims) < 2:
        raise ValueError("n_sims must be >= 2")
    if not 0 < level < 1:
        raise ValueError("level must lie in (0, 1)")
    if int(pgm_max_iter) < 1 or not float(pgm_tol) >= 0:
        raise ValueError("pgm_max_iter must be >= 1 and pgm_tol >= 0")
    S, G = counts(results, "audit")
    g = min_draws(G)
    if g < 2:
        raise ValueError("audit needs at least 2 generations per cell")
    if methods is None:
        methods = tuple(m for m in AUDIT_METHODS if m != "extrapolation" or g >= 4)
    topic, names = topic_codes(results, use_topics)
    if family not in ("logitnormal", "betabinomial", "auto"):
        raise ValueError(
            f"unknown family {family!r}; use 'logitnormal', 'betabinomial' or 'auto'"
        )
    alt = None  # the other family's fit (family="auto")
    if family == "auto":
        fits = [
            fit_latent(S, G, topic, family=f, backend=backend, topics=names)
            for f in ("logitnormal", "betabinomial")
        ]
        # the Beta cell effect only when the counts clearly prefer it: both
        # families have one scale parameter, and at scale 0 they coincide
        delta = float(fits[1].loglik - fits[0].loglik)
        fit, alt = (fits[1], fits[0]) if delta > AUTO_MARGIN else fits
        family = fit.family
        if fits[1].scale >= MIX_MIN_ICC:
            w_beta = float(expit(delta))
            family_weights = {"logitnormal": 1.0 - w_beta, "betabinomial": w_beta}
        else:  # no cell effect to speak of: the family is moot
            alt = None
            family_weights = {family: 1.0}
    else:
        fit = fit_latent(S, G, topic, family=family, backend=backend, topics=names)
        family_weights = {family: 1.0}
    N, L = S.shape
    K = fit.theta.shape[1]
    freq = np.bincount(topic, minlength=K) / N
    obs = G > 0
    # independent streams: the population, one per simulation (so the result does
    # not depend on how many simulations run at the same time), then the worlds'
    # families
    streams = np.random.SeedSequence(int(seed)).spawn(int(n_sims) + 2)
    rng = np.random.default_rng(streams[0])
    # each world's family (family="auto"): the other one with its weight
    w_alt = 0.0 if alt is None else family_weights[alt.family]
    other = np.random.default_rng(streams[-1]).random(int(n_sims)) < w_alt

    def population_oracle(f: LatentFit, r: np.random.Generator) -> float:
        # population oracle of a fitted model (missing cells of random rows)
        n_pop = int(min(4e6 / L, 400_000))
        p_pop, _ = f.simulate_p(n_pop, r, freq)
        rows = r.integers(0, N, n_pop)
        return float(np.where(obs[rows], p_pop, -np.inf).max(axis=1).mean())

    truth_pop = population_oracle(fit, rng)
    truth_pops = np.full(int(n_sims), truth_pop)
    if other.any():
        truth_pops[other] = population_oracle(alt, rng)
    z = float(stats.norm.ppf(0.5 + level / 2))
    est = {m: np.empty(n_sims) for m in methods}
    ses = {m: np.empty(n_sims) for m in methods}
    truth = np.empty(n_sims)
    if "extrapolation" in methods and g < 4:
        raise ValueError(
            "extrapolation (fitting O_inf + a g^-lam) needs at least 4 generations "
            f"per cell; the data has cells with {g}"
        )
    curve_methods = [m for m in methods if m in ("jackknife", "extrapolation")]
    sizes = None
    if curve_methods:
        sizes = np.unique(
            np.concatenate(
                [[g - 1, g]]
                + ([fit_sizes(g)] if "extrapolation" in curve_methods else [])
            )
        ).astype(np.int64)

    def one(i: int) -> None:
        r = np.random.default_rng(streams[i + 1])
        p, tp = (alt if other[i] else fit).simulate_p(N, r, freq)
        Si = r.binomial(G, np.where(obs, p, 0.0))
        truth[i] = np.where(obs, p, -np.inf).max(axis=1).mean()
        Si, Gi = check_counts(Si, G)
        rows_c = None
        if sizes is not None:  # one subsample curve for jackknife and extrapolation
            rows_c = curve_rows(Si, Gi, sizes, backend)
        for m in methods:
            if m == "pgm":
                dec = pgm_decomposition(
                    Si,
                    Gi,
                    tp,
                    family=family,
                    backend=backend,
                    init=fit,
                    max_iter=int(pgm_max_iter),
                    tol=float(pgm_tol),
                    min_resp=AUDIT_MIN_RESP,
                )
            elif m == "jackknife":
                dec = jackknife_decomposition(
                    Si, Gi, backend=backend, rows=_cols(rows_c, sizes, [g - 1, g])
                )
            elif m == "extrapolation":
                fs = fit_sizes(g)
                dec = decay_decomposition(fs, _cols(rows_c, sizes, fs), None)
            else:
                dec = decompose_counts(Si, Gi, m, backend=backend)
            est[m][i] = dec.estimate()
            ses[m][i] = dec.standard_error()

    workers = max(1, min(int(n_workers or get_num_threads()), int(n_sims)))
    if workers == 1:
        for i in range(n_sims):
            one(i)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for fut in [pool.submit(one, i) for i in range(n_sims)]:
                fut.result()
    rows_out = []
    for m in methods:
        err = est[m] - truth
        err_pop = est[m] - truth_pops
        lo, hi = est[m] - z * ses[m], est[m] + z * ses[m]
        rows_out.append(
            {
                "method": m,
                "bias": float(err.mean()),
                "abs_bias": float(abs(err.mean())),
                "rmse": float(np.sqrt((err**2).mean())),
                "sd": float(est[m].std(ddof=1)),
                "rmse_population": float(np.sqrt((err_pop**2).mean())),
                "coverage": float(((lo <= truth_pops) & (truth_pops <= hi)).mean()),
                "coverage_prompts": float(((lo <= truth) & (truth <= hi)).mean()),
                "mean_se": float(ses[m].mean()),
                "interval_coverage": _crossfit_coverage(err, z),
                "interval_coverage_population": _crossfit_coverage(err_pop, z),
            }
        )
    table = pd.DataFrame(rows_out).set_index("method")
    return AuditResult(
        table=table,
        recommended=_recommend(table, level, int(n_sims)),
        truth_population=truth_pop,
        n_sims=int(n_sims),
        level=level,
        fit=fit,
        seconds=time.perf_counter() - t0,
        family=family,
        estimates={
            "estimates": est,
            "se": ses,
            "truth": truth,
            "truth_population": truth_pops,
            "other_family": other,
        },
        family_weights=family_weights,
    )
