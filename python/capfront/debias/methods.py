"""The estimators by name: ``METHODS``, their options, and
:func:`decompose_counts`, the fast path on raw count arrays (design §4). A module of
its own so that the audit (which runs every estimator) and the package's public
functions both import it without importing each other."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._input import check_counts
from .bias_correction import (
    bootstrap_bc_decomposition,
    double_bc_decomposition,
    naive_decomposition,
)
from .classes import pgm_decomposition
from .correlated import OPTIONS as CORRELATED_OPTIONS
from .correlated import correlated_decomposition
from .crossfit import crossfit_decomposition
from .extrapolation import extrapolation_decomposition, jackknife_decomposition
from .result import Decomposition

METHODS = (
    "pgm",
    "correlated",
    "extrapolation",
    "bootstrap_bc",
    "double_bc",
    "crossfit",
    "jackknife",
    "naive",
)
COUNT_ONLY = (
    "pgm",
    "correlated",
    "bootstrap_bc",
    "double_bc",
    "extrapolation",
    "crossfit",
    "jackknife",
)
# pgm's latent prompt classes by default ("auto": chosen by AIC from 1, 2, 4, 8)
PGM_LATENT_CLASSES: int | str = "auto"
_OPTIONS = {
    "naive": (),
    "bootstrap_bc": (),
    "double_bc": ("n_redraws", "seed"),
    "crossfit": (),
    "correlated": CORRELATED_OPTIONS,
    "extrapolation": ("lam", "fit_from"),
    "jackknife": ("lam",),
    "pgm": (
        "family",
        "scale",
        "use_topics",
        "init",
        "max_iter",
        "tol",
        "latent_classes",
        "bounds",
    ),
}


def _check_method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    return method


def _check_options(method: str, options: dict[str, Any]) -> None:
    bad = set(options) - set(_OPTIONS[method])
    if bad:
        allowed = ", ".join(_OPTIONS[method]) or "none"
        raise ValueError(
            f"method {method!r} does not take option(s) {sorted(bad)}; "
            f"allowed: {allowed}"
        )


def decompose_counts(
    successes: np.ndarray,
    n_draws: np.ndarray,
    method: str,
    *,
    topic: np.ndarray | None = None,
    backend: str | None = None,
    **options: Any,
) -> Decomposition:
    """The estimator ``method`` on raw count arrays ``(N, L)`` (the fast path the
    audit uses). ``topic``: integer topic code per prompt (``pgm`` only)."""
    _check_method(method)
    _check_options(method, options)
    # every estimator reads the counts in any integer dtype (pgm's table rows,
    # the cross-fit and subsample-curve kernels and the naive and bootstrap
    # rows are built in blocks of prompts): no (N, L) int64 copies of compact
    # counts
    S, G = check_counts(successes, n_draws, compact=True)
    if S.shape[1] < 1:
        raise ValueError("need at least one model")
    if int(G.max()) < 2 and method != "naive":
        raise ValueError(
            f"method {method!r} needs at least 2 generations per cell (G = 1: a single "
            "draw carries no information on its own noise)"
        )
    if method == "naive":
        return naive_decomposition(S, G)
    if method == "bootstrap_bc":
        return bootstrap_bc_decomposition(S, G, backend=backend)
    if method == "double_bc":
        return double_bc_decomposition(S, G, backend=backend, **options)
    if method == "crossfit":
        return crossfit_decomposition(S, G, backend=backend)
    if method == "extrapolation":
        return extrapolation_decomposition(S, G, backend=backend, **options)
    if method == "jackknife":
        return jackknife_decomposition(S, G, backend=backend, **options)
    if method == "correlated":
        return correlated_decomposition(S, G, backend=backend, **options)
    opts = dict(options)
    opts.pop("use_topics", None)
    opts.setdefault("latent_classes", PGM_LATENT_CLASSES)
    return pgm_decomposition(S, G, topic, backend=backend, **opts)
