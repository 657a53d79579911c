"""Result objects of the debiased-oracle estimators."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class DebiasResult:
    """A debiased estimate of ``O_true = mean_n max_l p[n, l]`` (SPEC 4).

    Attributes
    ----------
    value : the estimate.
    method : the estimator's name.
    naive : the plug-in oracle ``mean_n max_l p_hat[n, l]`` of the same data.
    ci : ``(lower, upper)`` when a confidence level was asked for, else ``None``.
    level : the confidence level of ``ci``.
    ci_method : how ``ci`` was computed.
    se : prompt-level standard error (linearised), when available.
    diagnostics : method-specific details (fitted ``lam``, the curve, the latent fit).
    """

    value: float
    method: str
    naive: float
    ci: tuple[float, float] | None = None
    level: float | None = None
    ci_method: str | None = None
    se: float | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def __float__(self) -> float:
        return self.value

    def __getattr__(self, name: str) -> Any:
        # diagnostics as attributes (``res.lam``, ``res.curve``)
        diag = self.__dict__.get("diagnostics", {})
        if name in diag:
            return diag[name]
        raise AttributeError(name)

    def __repr__(self) -> str:
        ci = "" if self.ci is None else f", ci=({self.ci[0]:.4f}, {self.ci[1]:.4f})"
        return (
            f"DebiasResult(method={self.method!r}, value={self.value:.4f}, "
            f"naive={self.naive:.4f}{ci})"
        )


@dataclass
class Decomposition:
    """Per-prompt values and the map from their column means to the estimate:
    ``finalize(values.mean(axis=0)) == value``. Prompt-bootstrap engines call
    ``finalize`` on weighted column means."""

    values: np.ndarray
    finalize: Callable[[np.ndarray], float]
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def __iter__(self):  # unpack as (values, finalize)
        return iter((self.values, self.finalize))

    def estimate(self) -> float:
        return float(self.finalize(self.values.mean(axis=0)))

    def standard_error(self) -> float:
        """Delta-method prompt-level standard error: influence values
        ``values @ grad(finalize)``, their SD over ``sqrt(N)``."""
        v = self.values
        N, K = v.shape
        if N < 2:
            return float("nan")
        mean = v.mean(axis=0)
        if self.diagnostics.get("linear", False) or K == 1:
            grad = self.diagnostics.get("grad", np.ones(K))
        else:
            base = self.finalize(mean)
            scale = np.maximum(v.std(axis=0), 1e-12) / np.sqrt(N)
            grad = np.empty(K)
            for k in range(K):
                step = np.zeros(K)
                step[k] = 1e-3 * scale[k]
                grad[k] = (self.finalize(mean + step) - base) / step[k]
        infl = v @ grad
        return float(infl.std(ddof=1) / np.sqrt(N))
