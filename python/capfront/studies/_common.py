"""Small helpers shared by the simulation studies (not public)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import special, stats


def check_int(value: int, name: str, minimum: int) -> int:
    if isinstance(value, bool) or int(value) != value or int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_draws(draws: Sequence[int] | np.ndarray, name: str = "draws") -> np.ndarray:
    arr = np.asarray(draws)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty sequence of integers")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold integers, got {list(arr)}")
        arr = arr.astype(np.int64)
    arr = arr.astype(np.int64)
    if (arr < 1).any():
        raise ValueError(f"{name} must all be >= 1, got {list(arr)}")
    if len(np.unique(arr)) != len(arr):
        raise ValueError(f"{name} has repeated values: {list(arr)}")
    return np.sort(arr)


def entropy(pi: np.ndarray) -> np.ndarray:
    """Shannon entropy in nats along the last axis, ``-sum pi log pi`` (0 log 0 = 0)."""
    return -special.xlogy(pi, pi).sum(axis=-1)


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation (average ranks for ties); NaN if either is constant."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    return float(np.corrcoef(rx, ry)[0, 1])


def loglog_slope(
    log_g: np.ndarray, log_bias: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares fit of ``log bias = log a - lambda log G`` along the last axis.

    Returns ``(lambda, a)``; ``log_bias`` may carry leading (bootstrap) axes.
    """
    xc = log_g - log_g.mean()
    ybar = log_bias.mean(axis=-1)
    slope = ((log_bias - ybar[..., None]) * xc).sum(axis=-1) / (xc**2).sum()
    intercept = ybar - slope * log_g.mean()
    return -slope, np.exp(intercept)


def markdown_table(frame: pd.DataFrame, digits: int = 4) -> str:
    """GitHub markdown for a DataFrame, without the optional ``tabulate`` package."""

    def fmt(value: object) -> str:
        if isinstance(value, (float, np.floating)):
            if np.isnan(value):
                return "nan"
            if value != 0 and (abs(value) < 10 ** (-digits) or abs(value) >= 1e6):
                return f"{value:.{digits - 1}e}"
            return f"{value:.{digits}f}"
        return str(value)

    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines)


def new_axes(ax):  # noqa: ANN001, ANN201 (matplotlib is imported lazily)
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(6.4, 4.4))
    return ax
