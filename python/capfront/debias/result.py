"""Result objects of the debiased-oracle estimators."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._protocol import ResultProtocol, plain


@dataclass
class DebiasResult(ResultProtocol):
    """A debiased estimate of ``O_true = mean_n max_l p[n, l]`` (design §4).

    Attributes
    ----------
    value : the estimate.
    method : the estimator's name.
    naive : the plug-in oracle ``mean_n max_l p_hat[n, l]`` of the same data.
    ci : ``(lower, upper)`` when a confidence level was asked for, else
        ``(nan, nan)`` (the result protocol: unpacking always works).
    level : the confidence level of ``ci`` (NaN without one).
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
    diagnostics: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.ci is None:
            self.ci = (float("nan"), float("nan"))
        if self.level is None:
            self.level = float("nan")

    def __float__(self) -> float:
        return self.value

    def to_dict(self) -> dict[str, Any]:
        """The protocol's ``value``, ``ci``, ``level``; ``method``, ``naive``,
        ``ci_method``, ``se`` and the scalar diagnostics (fitted ``lam``, ...)."""
        d = self._protocol_head()
        d.update(
            method=self.method,
            naive=plain(self.naive),
            ci_method=self.ci_method,
            se=plain(self.se),
        )
        d["diagnostics"] = {
            k: plain(v)
            for k, v in self.diagnostics.items()
            if v is None or isinstance(v, (bool, int, float, str, np.number))
        }
        return d

    def __getattr__(self, name: str) -> Any:
        # diagnostics as attributes (``res.lam``, ``res.curve``)
        diag = self.__dict__.get("diagnostics", {})
        if name in diag:
            return diag[name]
        raise AttributeError(name)

    def __repr__(self) -> str:
        lo, hi = self.ci
        ci = "" if lo != lo else f", ci=({lo:.4f}, {hi:.4f})"  # NaN: none
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
