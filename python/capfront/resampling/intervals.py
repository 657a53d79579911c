"""Bootstrap intervals from replicate values: percentile, basic and BCa (Efron
1987), and BCa's acceleration from influence values."""

from __future__ import annotations

import numpy as np
from scipy import special

from .columns import _Coded

__all__ = ["interval"]

_ROWS = 1 << 15  # prompts per chunk of the influence sums


def interval(
    reps: np.ndarray,
    estimate: float,
    level: float,
    method: str,
    acceleration: float = 0.0,
) -> tuple[tuple[float, float], float | None]:
    """``((low, high), z0)`` at ``alpha = (1 - level) / 2``: percentile
    ``(q_alpha, q_{1-alpha})``, basic ``(2 theta - q_{1-alpha}, 2 theta -
    q_alpha)`` or BCa (quantiles at ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))``;
    ``z0`` only for BCa)."""
    alpha = (1.0 - level) / 2.0
    if method == "percentile":
        lo, hi = np.percentile(reps, [100 * alpha, 100 * (1 - alpha)])
        return (float(lo), float(hi)), None
    if method == "basic":
        lo, hi = np.percentile(reps, [100 * alpha, 100 * (1 - alpha)])
        return (float(2 * estimate - hi), float(2 * estimate - lo)), None
    # BCa (Efron 1987), as scipy.stats.bootstrap: z0 from the share of replicates
    # below the estimate (ties count half), clipped away from 0 and 1.
    B = reps.size
    share = ((reps < estimate).sum() + (reps <= estimate).sum()) / (2.0 * B)
    share = min(max(share, 0.5 / B), 1.0 - 0.5 / B)
    z0 = float(special.ndtri(share))
    za = special.ndtri(alpha)
    ends = []
    for z in (za, -za):
        num = z0 + z
        ends.append(float(special.ndtr(z0 + num / (1.0 - acceleration * num))))
    lo, hi = np.percentile(reps, [100 * ends[0], 100 * ends[1]])
    return (float(lo), float(hi)), z0


def linear_acceleration(coded: _Coded, n: int) -> float:
    """``a = sum U^3 / (6 (sum U^2)^1.5)`` with the influence values
    ``U_n = grad . (V_n - m)``, ``grad`` of finalize at the full-sample means."""
    m = coded.full_mean
    K = m.size
    if coded.grad is not None:
        grad = coded.grad
    else:
        sd = np.empty(K)
        k = 0
        for block in (coded.z8, coded.z64):
            for row in block:
                v = row.astype(np.float64) * coded.scale[k]
                sd[k] = v.std()
                k += 1
        h = np.where(sd > 0, 1e-4 * sd, 1e-6)
        pts = np.repeat(m[None, :], 2 * K, axis=0)
        pts[np.arange(K), np.arange(K)] += h
        pts[K + np.arange(K), np.arange(K)] -= h
        vals = coded.finalize(pts)
        grad = (vals[:K] - vals[K:]) / (2 * h)
        grad = np.where(np.isfinite(grad), grad, 0.0)
    K8, K64 = coded.z8.shape[0], coded.z64.shape[0]
    w8 = grad[:K8] * coded.scale[:K8]
    w64 = grad[K8:] * coded.scale[K8:]
    s2 = s3 = 0.0
    shift = float(grad @ m)
    # Plain ufunc reductions, not BLAS: small products, and BLAS threads spin.
    for r0 in range(0, n, _ROWS):
        u = np.full(min(_ROWS, n - r0), -shift)
        for k in range(K8):
            u += w8[k] * coded.z8[k, r0 : r0 + _ROWS]
        for k in range(K64):
            u += w64[k] * coded.z64[k, r0 : r0 + _ROWS].astype(np.float64)
        u2 = u * u
        s2 += float(u2.sum())
        s3 += float((u2 * u).sum())
    return 0.0 if s2 <= 0 else s3 / (6.0 * s2**1.5)


def jackknife_acceleration(values: np.ndarray) -> float:
    """``a = sum d^3 / (6 (sum d^2)^1.5)``, ``d = mean(theta_(g)) - theta_(g)``."""
    d = values.mean() - values
    s2 = float(d @ d)
    return 0.0 if s2 <= 0 else float((d**3).sum() / (6.0 * s2**1.5))
