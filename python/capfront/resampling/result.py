"""The result of :func:`capfront.bootstrap`: a confidence interval with its
replicates' summary."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._protocol import ResultProtocol

__all__ = ["BootstrapResult"]


@dataclass(frozen=True)
class BootstrapResult(ResultProtocol):
    """A bootstrap confidence interval (the result protocol: ``value`` is
    ``estimate``).

    Attributes
    ----------
    estimate : the statistic on the data.
    ci : ``(lower, upper)``.
    se : standard deviation of the replicates (``ddof=1``).
    method, level, n_resamples : as requested.
    replicates : ``(n_resamples,)`` replicate values when ``keep_replicates``.
    bias : ``mean(replicates) - estimate``.
    statistic, seed, stratify, two_level, backend : as used.
    acceleration, z0 : BCa's ``a`` and ``z0`` (``None`` for other methods).
    """

    estimate: float
    ci: tuple[float, float]
    se: float
    method: str
    level: float
    n_resamples: int
    statistic: str
    bias: float
    seed: int
    stratify: str | None
    two_level: bool
    backend: str
    replicates: np.ndarray | None = field(default=None, repr=False)
    acceleration: float | None = None
    z0: float | None = None

    @property
    def value(self) -> float:
        return self.estimate

    @property
    def low(self) -> float:
        return self.ci[0]

    @property
    def high(self) -> float:
        return self.ci[1]

    def __float__(self) -> float:
        return self.estimate
