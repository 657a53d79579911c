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

from .audit_result import NO_WORLDS, AuditResult, quote
from .result import Decomposition


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
