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
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from scipy import stats

from .result import Decomposition


def shortcut_audit(
    short: Decomposition,
    methods,
    level: float,
    family: str,
    t0: float,
    *,
    result: type,
    bias_factor: float,
):
    """The :class:`~capfront.debias.audit.AuditResult` of data where ``pgm``
    takes the naive shortcut (``short``: its decomposition, with the bound and
    the note in ``diagnostics``). ``table`` holds ``pgm`` and ``naive`` (the same
    estimate): ``sd`` the standard error, ``max_abs_bias`` the bound (the bias
    itself is not measured: ``bias`` is NaN), ``rmse`` the bound on the RMSE
    ``sqrt(SE^2 + B^2)``; no world is simulated (``n_sims = 0``). ``result`` is
    the ``AuditResult`` class and ``bias_factor`` the audit's ``BIAS_FACTOR``,
    passed in by :func:`capfront.debias.audit.audit` (this module does not import
    the audit: no import cycle)."""

    value = float(short.estimate())
    se = float(short.standard_error())
    se = se if np.isfinite(se) else 0.0
    bound = float(short.diagnostics["naive_bias_bound"])
    z = float(stats.norm.ppf(0.5 + level / 2))
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
    why = str(short.diagnostics["note"])
    out = result(
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
    ci = out.interval(value, method="pgm")
    times = "twice" if bias_factor == 2 else f"{bias_factor:g} times"
    out.note = f"no worlds simulated: {why}"
    out.quoted = {
        "value": value,
        "ci": ci,
        "level": float(level),
        "method": "pgm",
        "raw": value,
        "how": (
            f"{why}; the interval is the naive oracle +- ({z:.2f} x its standard "
            f"error, {100 * se:.2f} points, plus {times} that bound, "
            f"{100 * bound:.2f} points)"
        ),
        "shortcut": True,
    }
    out.seconds = time.perf_counter() - t0
    return out
