"""The audit's result: :class:`AuditResult`, its interval rule
(``BIAS_FACTOR``) and :func:`quote`, the one number and interval to report.

Its own module so that both ways of building an audit import it: the simulated
worlds (:func:`capfront.debias.audit.audit`) and, at many draws per cell, the
naive oracle with its bias bound (:mod:`capfront.debias.many_draws`), which
simulates no world (``n_sims = 0``). Every name here is also importable from
:mod:`capfront.debias.audit`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from .._protocol import NAN, ResultProtocol

# the quoted interval counts the worst bias (or pgm's model spread) this many
# times: the worlds that pass the checks are fitted to the data, so the bias they
# measure is attenuated (the posterior world measured about half of pgm's real bias
# near the ceiling); on the battery factor 1 covered 23 / 26 calibration and 15 / 19
# validation data sets, factor 2 covered 25 / 26 and 18 / 19 (docs/debiasing.md)
BIAS_FACTOR = 2.0
#: how :mod:`capfront.debias.many_draws` starts ``note`` (the reason follows)
NO_WORLDS = "no worlds simulated: "
#: the simulated worlds drawn from a method's own fitted model: an audit whose
#: passing worlds are all among them checks that model only against itself
OWN_WORLDS = {"pgm": ("latent", "classes"), "correlated": ("correlated",)}
#: a self-audited method's rival model: its spread is ``RIVAL_SHARE`` times the
#: distance between the two estimates on the data (pgm's rivals are its own,
#: ``model_sensitivity``). Where only the correlated world passed, the correlated
#: model's interval from its own refits covered 14 of 18 battery data sets
#: (lowrank, lowrank_3; L = 12, 30); with half the distance as spread (so the
#: interval, ``BIAS_FACTOR`` times it, reaches pgm's estimate) 17 of 18
#: (docs/debiasing.md)
SELF_AUDIT_RIVAL = {"correlated": "pgm"}
RIVAL_SHARE = 0.5


@dataclass
class AuditResult(ResultProtocol):
    """Per-method error on data simulated like yours, from several worlds.

    Result protocol: ``value`` and ``ci`` (at ``level``) are the quoted estimate
    and interval (``quoted``); ``to_frame()`` is the per-method ``table``.

    Attributes
    ----------
    table : per method, summarised over the passing worlds: ``bias`` (mean of the
        worlds' biases), ``rmse`` (the worst world's RMSE: the interval's width),
        ``rmse_corrected`` (the worst world's RMSE after subtracting ``bias``),
        ``sd``, ``rmse_population``, coverages (see :func:`audit`).
    world_table : per (world, method): bias, sd, rmse, rmse_population, n_sims.
    checks : per (world, check): the data's value, the simulations' mean and SD,
        ``z`` and ``passed``.
    world_weights : world -> 1.0 (passed every check) or 0.0.
    trusted : some world passed.
    checks_at : ``"data"``: the worlds were judged at the data's ``N``;
        ``"simulations"``: none passed there, and they were judged at
        ``sim_prompts``, the size of the simulated data sets on which they
        measure the errors (:mod:`capfront.debias.checks`).
    recommended : the method with the smallest worst-case RMSE (never ``naive``).
    corrected : whether the quoted value subtracts the audit's measured bias.
    bracket : ``(crossfit, naive)`` estimates on the data.
    correlated : the correlated logit-normal's comparison with ``pgm`` on the
        data, or ``None`` when it was not fitted: ``aic_difference`` (its AIC
        minus ``pgm``'s, both fitted to the same ``aic_prompts`` prompts, an
        evenly spaced 2,000 of larger data), ``estimate_fit_prompts`` (its
        estimate there), ``preferred`` (the AIC difference is negative) and
        ``scored`` (its method was scored: preferred and its world among the
        worlds refitted to).
    quoted : :func:`quote`'s ``value``, ``ci``, ``level``, ``method``, ``raw``,
        ``how`` (plain words); ``shortcut`` when no world was simulated
        (``n_sims == 0``, :mod:`capfront.debias.many_draws`).
    """

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
    note: str = ""
    world_table: pd.DataFrame | None = None
    checks: pd.DataFrame | None = None
    world_weights: dict = field(default_factory=dict)
    trusted: bool = True
    corrected: bool = False
    bracket: tuple[float, float] | None = None
    quoted: dict = field(default_factory=dict)
    data_estimates: dict = field(default_factory=dict, repr=False)
    latent_classes: int = 1
    # pgm's floor and ceiling of the rates (capfront.debias.classes.choose_bounds)
    bounds: tuple[float, float] = (0.0, 1.0)
    sensitivity: pd.DataFrame | None = None
    correlated: dict | None = None
    # models whose counts are all or nothing (capfront.debias.known): the audit
    # is of the other models on the prompts none of these solved, mapped back
    known_models: tuple[str, ...] = ()
    solved_by_known: float = 0.0
    # the size the checks judged the worlds at: "data" (the data's N) or, where
    # no world passed there, "simulations" (sim_prompts, a simulated data
    # set's prompts: capfront.debias.checks)
    checks_at: str = "data"
    sim_prompts: int = 0

    @property
    def value(self) -> float:
        """The quoted debiased oracle (``quoted["value"]``)."""
        return float(self.quoted.get("value", NAN))

    @property
    def ci(self) -> tuple[float, float]:
        """The quoted interval (``quoted["ci"]``) at ``level``."""
        lo, hi = self.quoted.get("ci", (NAN, NAN))
        return (float(lo), float(hi))

    def to_frame(self) -> pd.DataFrame:
        """The per-method table (bias, worst RMSE, coverages, worst world)."""
        return self.table.copy()

    def correction(self, method: str | None = None) -> float:
        """What the quoted value subtracts from ``method``'s estimate: its mean
        bias over the passing worlds when ``corrected``, else 0."""
        m = self.recommended if method is None else method
        if m not in self.table.index:
            raise ValueError(f"method {m!r} is not in the audit table")
        return float(self.table.loc[m, "bias"]) if self.corrected else 0.0

    def interval(
        self,
        value: float,
        se: float = 0.0,
        method: str | None = None,
        *,
        target: str = "prompts",
        level: float | None = None,
        corrected: bool | None = None,
    ) -> tuple[float, float]:
        """Interval around ``value`` (an estimate of ``method``, default the
        recommended one) from the errors the audit measured for that method over
        the worlds that passed its checks (fresh prompts, fresh counts, ``pgm``
        refitted):

        - ``target="prompts"`` (default): the oracle of *these* prompts:
          ``value +- (z * max_w sd_w + BIAS_FACTOR * max(max_w |bias_w|,
          spread))``: the worst sampling SD plus twice the worst bias (a bias
          does not average out, so it adds to the sampling error rather than in
          quadrature; twice, because worlds fitted to the data measure an
          attenuated bias), or the model spread (:meth:`model_spread`: for
          ``pgm`` its rival models, for a self-audited correlated model half
          its distance to ``pgm``) when it is larger;
          with ``corrected`` (default ``self.corrected``) ``value +- z *
          max_w rmse_corrected_w`` around the corrected estimate
          ``estimate - audit.correction(method)``;
        - ``target="population"``: the oracle of the prompt population,
          ``value +- z * max(se, max_w rmse_population_w)``.

        ``level`` overrides the audit's confidence level; ends clipped to [0, 1].
        """
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
        corr = self.corrected if corrected is None else bool(corrected)
        z = float(stats.norm.ppf(0.5 + lev / 2))
        row = self.table.loc[m]
        if target == "prompts":
            if corr:
                half = z * float(row["rmse_corrected"])
            else:  # a bias is systematic: it adds to the sampling error
                half = z * float(row["sd"]) + BIAS_FACTOR * max(
                    float(row["max_abs_bias"]), self.model_spread(m)
                )
        else:
            half = z * max(float(se), float(row["rmse_population"]))
        # the oracle of scores in [0, 1] lies in [0, 1]
        return max(0.0, float(value) - half), min(1.0, float(value) + half)

    def passing_worlds(self) -> list[str]:
        """The worlds that reproduced the data's checks (weight > 0)."""
        return passing_worlds(self.world_weights)

    @property
    def self_audited(self) -> bool:
        """Whether every world that passed the checks was drawn from the quoted
        method's own fitted model (``OWN_WORLDS``; e.g. only the ``correlated``
        world when ``correlated`` is quoted). Its measured error is then that
        of the model on data it describes exactly: no simulation measured its
        misfit, and the interval's model spread (:meth:`model_spread`: pgm's
        rival models; for the correlated model half its distance to pgm) is
        what stands in for it (docs/debiasing.md)."""
        return _self_audited(self.recommended, self.passing_worlds(), self.n_sims)

    def model_spread(self, method: str | None = None) -> float:
        """How far ``method``'s estimate moves under a rival model, on the data:
        for ``pgm`` the largest change under its rivals (``sensitivity``); for
        a method whose own world is the only one that passed the checks
        (``SELF_AUDIT_RIVAL``: the correlated model) ``RIVAL_SHARE`` times its
        distance to the rival's estimate; else 0."""
        m = self.recommended if method is None else method
        return method_spread(
            m,
            self.sensitivity,
            self.passing_worlds(),
            self.n_sims,
            self.data_estimates.get("value", {}),
        )

    def __repr__(self) -> str:
        w = ", ".join(
            f"{k}: {'pass' if v else 'fail'}" for k, v in self.world_weights.items()
        )
        return (
            f"AuditResult(recommended={self.recommended!r}, family={self.family!r}, "
            f"latent_classes={self.latent_classes}, n_sims={self.n_sims} per world, "
            f"trusted={self.trusted}, seconds={self.seconds:.1f})\n"
            f"worlds: {w}\nquoted: {self.quoted.get('how', '')}\n"
            f"{self.table.to_string()}"
        )


def _self_audited(method: str, passing: list[str], n_sims: int) -> bool:
    """Every passing world is ``method``'s own model's (``OWN_WORLDS``)."""
    own = OWN_WORLDS.get(method, ())
    return bool(n_sims and passing and set(passing) <= set(own))


def passing_worlds(weights: dict) -> list[str]:
    """The worlds of ``{world: weight}`` that reproduced the data's checks
    (weight > 0), in its order."""
    return [w for w, v in weights.items() if v > 0]


def method_spread(
    method: str,
    sensitivity: pd.DataFrame | None,
    passing: list[str],
    n_sims: int,
    values: dict,
) -> float:
    """The model spread counted in ``method``'s quoted interval (see
    :meth:`AuditResult.model_spread`); ``values``: the data's estimate per
    method."""
    if method == "pgm":
        return _spread(sensitivity)
    rival = SELF_AUDIT_RIVAL.get(method)
    if rival is None or not _self_audited(method, passing, n_sims):
        return 0.0
    a, b = values.get(method), values.get(rival)
    if a is None or b is None or not (np.isfinite(a) and np.isfinite(b)):
        return 0.0
    return RIVAL_SHARE * abs(float(a) - float(b))


def _spread(sensitivity: pd.DataFrame | None) -> float:
    """The largest absolute difference in a
    :func:`capfront.debias.audit.model_sensitivity` table, each times its
    ``weight`` (``RIVAL_SHARE`` for the unbounded rival of a bounded fit)."""
    if sensitivity is None or not len(sensitivity):
        return 0.0
    diff = sensitivity["difference"].abs()
    if "weight" in sensitivity:
        diff = diff * sensitivity["weight"].fillna(1.0)
    return float(diff.max())


def quote(a: AuditResult, level: float | None = None) -> dict:
    """The one number and interval to report from the audit: ``value``, ``ci``,
    ``level``, ``method``, ``raw`` (the method's plain estimate), ``how``.

    ``ci`` is :meth:`AuditResult.interval` around ``value`` at ``level``
    (default the audit's), ``how`` says what it is made of. An audit that
    simulated no world (``n_sims == 0``: many draws per cell, where ``pgm``
    returns the naive oracle, :mod:`capfront.debias.many_draws`) quotes the
    naive oracle ``+- (z SE + BIAS_FACTOR B)``, ``SE`` its standard error and
    ``B`` the bound on its bias (the table's ``sd`` and ``max_abs_bias``), and
    marks it ``shortcut``."""
    lev = a.level if level is None else float(level)
    z = float(stats.norm.ppf(0.5 + lev / 2))
    m = a.recommended
    raw = float(a.data_estimates["value"][m])
    if a.n_sims == 0:
        return _quote_bound(a, lev, raw)
    if not a.trusted:
        lo_m, hi_m = a.bracket
        se = a.data_estimates["se"]
        lo = max(0.0, min(lo_m, raw) - z * float(se.get("crossfit", 0.0)))
        hi = min(1.0, max(hi_m, raw) + z * float(se.get("naive", 0.0)))
        how = (
            f"none of the audit's simulated worlds reproduced the data's checks, so "
            f"no measured error can be trusted: the interval runs from the cross-fit "
            f"estimate (biased low) to the naive plug-in estimate (biased high), "
            f"each widened by {z:.2f} x its sampling SE (a {lev:.0%} margin)"
        )
        return {
            "value": raw,
            "ci": (lo, hi),
            "level": lev,
            "method": m,
            "raw": raw,
            "how": how,
        }
    value = raw - a.correction(m)
    ci = a.interval(value, method=m, level=lev)
    how = explain(a, m, level=lev)
    return {"value": value, "ci": ci, "level": lev, "method": m, "raw": raw, "how": how}


def explain(
    a: AuditResult,
    method: str | None = None,
    *,
    level: float | None = None,
    target: str = "prompts",
) -> str:
    """What :meth:`AuditResult.interval` of ``method`` (default the recommended
    one) at ``level`` and ``target`` is made of, in plain words (the ``how`` of
    :func:`quote`; for an untrusted audit's bracket see :func:`quote`)."""
    lev = a.level if level is None else float(level)
    z = float(stats.norm.ppf(0.5 + lev / 2))
    m = a.recommended if method is None else method
    if m not in a.table.index:
        raise ValueError(f"method {m!r} is not in the audit table")
    row = a.table.loc[m]
    passing = [w for w, v in a.world_weights.items() if v > 0]
    where = (
        f"across the {len(passing)} simulated world(s) that reproduced the data's "
        f"checks ({', '.join(passing)}{_at_size(a)})"
        if a.n_sims
        else "(no worlds simulated: the naive oracle's bias bound)"
    )
    if target == "population":
        return (
            f"{m} estimate +- {z:.2f} x the larger of its standard error and the "
            f"largest error (RMSE) against the prompt population's oracle the audit "
            f"measured for it {where}"
        )
    if a.n_sims == 0:
        why = a.note.removeprefix(NO_WORLDS) or "no worlds simulated"
        return (
            f"{why}; the interval is the naive oracle +- ({z:.2f} x its "
            f"standard error, {100 * float(row['sd']):.2f} points, plus "
            f"{_times()} that bound, {100 * float(row['max_abs_bias']):.2f} points)"
        )
    if a.corrected:
        return (
            f"{m} estimate minus the bias the audit measured for it, +- {z:.2f} x "
            f"the largest error (RMSE) around that bias the audit measured {where}"
        )
    spread = ")"
    if m == "pgm" and a.sensitivity is not None:
        spread = (
            ", and its spread under the rival models (twice the latent classes, "
            f"the other cell-effect families), {100 * a.model_spread(m):.2f} points)"
        )
    elif a.model_spread(m) > 0:
        spread = (
            f", and {_share()} its distance to the {SELF_AUDIT_RIVAL[m]} estimate, "
            f"{100 * a.model_spread(m):.2f} points: only its own simulated world "
            "reproduced the data's checks, so no other world measured its error)"
        )
    return (
        f"{m} estimate +- ({z:.2f} x the largest sampling SD the audit measured "
        f"for it {where}, {100 * float(row['sd']):.2f} points; plus {_times()} the "
        f"larger of its largest bias there, "
        f"{100 * float(row['max_abs_bias']):.2f} points" + spread
    )


def judged_at_words(sim_prompts: int) -> str:
    """How the interval's ``how``, the audit's note and the report say that the
    worlds were judged at the simulations' size (``checks_at``)."""
    return (
        f"judged at {int(sim_prompts):,} prompts, the size of the simulated data "
        "sets on which they measure the errors"
    )


def _at_size(a: AuditResult) -> str:
    """Words for checks judged at the simulations' size ("" at the data's)."""
    if a.checks_at != "simulations":
        return ""
    return (
        f"; {judged_at_words(a.sim_prompts)}: at the data's own number of prompts "
        "none did"
    )


def _times() -> str:
    """``BIAS_FACTOR`` in words."""
    return "twice" if BIAS_FACTOR == 2 else f"{BIAS_FACTOR:g} times"


def _share() -> str:
    """``RIVAL_SHARE`` in words."""
    return "half" if RIVAL_SHARE == 0.5 else f"{RIVAL_SHARE:g} times"


def _quote_bound(a: AuditResult, lev: float, raw: float) -> dict:
    """:func:`quote` of an audit without simulated worlds: the naive oracle
    (``raw``, as ``pgm`` returns it) ``+- (z SE + BIAS_FACTOR B)``, the reason
    taken from ``a.note``."""
    m = a.recommended
    how = explain(a, m, level=lev)
    return {
        "value": raw,
        "ci": a.interval(raw, method=m, level=lev),
        "level": lev,
        "method": m,
        "raw": raw,
        "how": how,
        "shortcut": True,
    }
