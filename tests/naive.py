"""Slow, obviously-correct references for the foundation kernels.

Everything here loops in plain Python over cells, draws or outcomes, and uses exact
arithmetic (``fractions.Fraction``, ``math.comb``) or ``mpmath`` at 50 digits where
the kernels claim to be exact. Never vectorised, never clever: these are the
definitions of design §1-3 written out.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath
import numpy as np

# ---------------------------------------------------------------- sufficient stats


def _sum(values: list[float]) -> float:
    """Exactly rounded sum (NaN/inf propagate as in IEEE arithmetic)."""
    if all(math.isfinite(v) for v in values):
        return math.fsum(values)
    return sum(values)


def suffstats(scores, mask=None, cost=None, latency=None) -> dict:
    """Per-cell sums by a triple loop (design §1). ``scores`` is ``(N, L, G)``."""
    x = np.asarray(scores)
    N, L, G = x.shape
    out = {
        "successes": np.zeros((N, L)),
        "sum_sq": np.zeros((N, L)),
        "n_draws": np.zeros((N, L), dtype=np.int64),
        "max_score": np.full((N, L), np.nan),
        "cost_sum": None if cost is None else np.zeros((N, L)),
        "latency_sum": None if latency is None else np.zeros((N, L)),
        "latency_max": None if latency is None else np.zeros((N, L)),
    }
    flags = dict.fromkeys(
        (
            "nonfinite_scores",
            "out_of_range_scores",
            "nonbinary_scores",
            "bad_cost",
            "bad_latency",
        ),
        0,
    )
    for n in range(N):
        for l in range(L):
            valid = [
                g for g in range(G) if mask is None or bool(np.asarray(mask)[n, l, g])
            ]
            vals = [float(x[n, l, g]) for g in valid]
            out["n_draws"][n, l] = len(vals)
            out["successes"][n, l] = _sum(vals)
            out["sum_sq"][n, l] = _sum([v * v for v in vals])
            if vals:  # NaN-propagating max (cells with NaN are errors anyway)
                out["max_score"][n, l] = np.max(vals)
            for v in vals:
                if not math.isfinite(v):
                    flags["nonfinite_scores"] += 1
                    continue
                flags["out_of_range_scores"] += not (0.0 <= v <= 1.0)
                flags["nonbinary_scores"] += v not in (0.0, 1.0)
            for arr, key, flag in (
                (cost, "cost", "bad_cost"),
                (latency, "latency", "bad_latency"),
            ):
                if arr is None:
                    continue
                ts = [float(np.asarray(arr)[n, l, g]) for g in valid]
                out[f"{key}_sum"][n, l] = _sum(ts)
                if key == "latency":
                    out["latency_max"][n, l] = np.max(ts) if ts else 0.0
                flags[flag] += sum(not (math.isfinite(t) and t >= 0) for t in ts)
    out.update(flags)
    return out


# ------------------------------------------------------------ expected maxima


def _binom_pmf_exact(G: int, p: Fraction | mpmath.mpf, k: int):
    return math.comb(G, k) * p**k * (1 - p) ** (G - k)


def expected_max_enumerate(p, n_draws, dps: int = 40) -> float:
    """``E[max_l Y_l / G_l]`` by enumerating every joint outcome (tiny inputs only):
    ``sum_y P(y) max_l y_l / G_l`` at ``dps`` digits."""
    with mpmath.workdps(dps):
        ps = [mpmath.mpf(float(v)) for v in p]
        gs = [int(g) for g in np.broadcast_to(n_draws, np.shape(p))]
        cells = [(pl, g) for pl, g in zip(ps, gs, strict=True) if g > 0]
        total = mpmath.mpf(0)
        for ys in itertools.product(*[range(g + 1) for _, g in cells]):
            prob = mpmath.mpf(1)
            for (pl, g), y in zip(cells, ys, strict=True):
                prob *= _binom_pmf_exact(g, pl, y)
            best = max(Fraction(y, g) for (_, g), y in zip(cells, ys, strict=True))
            total += prob * best.numerator / best.denominator
        return float(total)


def expected_max_mp(p, n_draws, dps: int = 50) -> float:
    """``E[max_l Y_l / G_l]`` at ``dps`` digits: ``E[M] = sum_v (v - v_prev) P(M >=
    v)`` over the sorted union of the grids ``j / G_l`` (design §3), with every binomial
    CDF summed term by term from exact binomial coefficients."""
    with mpmath.workdps(dps):
        gs = [int(g) for g in np.broadcast_to(n_draws, np.shape(p))]
        cells = [(mpmath.mpf(float(v)), g) for v, g in zip(p, gs, strict=True) if g > 0]
        cdfs = []
        for pl, g in cells:
            acc, c = mpmath.mpf(0), []
            for k in range(g + 1):
                acc += _binom_pmf_exact(g, pl, k)
                c.append(acc)
            cdfs.append(c)
        grid = sorted({Fraction(j, g) for _, g in cells for j in range(1, g + 1)})
        total, prev = mpmath.mpf(0), Fraction(0)
        for v in grid:
            below = mpmath.mpf(1)  # P(M <= prev)
            for (_, g), c in zip(cells, cdfs, strict=True):
                below *= c[math.floor(prev * g)]
            step = v - prev
            total += mpmath.mpf(step.numerator) / step.denominator * (1 - below)
            prev = v
        return float(total)


# ------------------------------------------------------------ subsample curve


def _hypergeom_dist(G: int, S: int, g: int) -> list[Fraction]:
    """P(X = x) of the successes in a uniformly random size-``g`` subset of ``G``
    draws of which ``S`` succeeded, by counting subsets."""
    return [
        Fraction(math.comb(S, x) * math.comb(G - S, g - x), math.comb(G, g))
        for x in range(g + 1)
    ]


def subsample_value_enumerate(S_row, G_row, g: int) -> Fraction:
    """One prompt's ``E[max_l X_l / g]`` by listing every subset of every model's
    draws (tiny G only): the literal definition of design §3."""
    dists = []
    for s, G in zip(S_row, G_row, strict=True):
        if G <= 0:
            continue
        draws = [1] * int(s) + [0] * int(G - s)
        subsets = list(itertools.combinations(range(int(G)), g))
        counts = [0] * (g + 1)
        for sub in subsets:
            counts[sum(draws[i] for i in sub)] += 1
        dists.append([Fraction(c, len(subsets)) for c in counts])
    total = Fraction(0)
    for xs in itertools.product(*[range(g + 1)] * len(dists)):
        prob = Fraction(1)
        for d, x in zip(dists, xs, strict=True):
            prob *= d[x]
        total += prob * Fraction(max(xs), g)
    return total


def subsample_curve_exact(successes, n_draws, sizes) -> list[Fraction]:
    """``O_biased(g)`` in exact rationals: mean over prompts of
    ``(1/g) sum_{k=1..g} [1 - prod_l P(X_l <= k-1)]``, ``X ~ Hypergeom(G, S, g)``."""
    S = np.asarray(successes)
    G = np.broadcast_to(np.asarray(n_draws), S.shape)
    out = []
    for g in sizes:
        g = int(g)
        acc = Fraction(0)
        for n in range(S.shape[0]):
            cdfs = []
            for s, gg in zip(S[n], G[n], strict=True):
                if gg <= 0:
                    continue
                dist = _hypergeom_dist(int(gg), int(s), g)
                cdfs.append([sum(dist[: k + 1]) for k in range(g + 1)])
            row = Fraction(0)
            for k in range(1, g + 1):
                prod = Fraction(1)
                for c in cdfs:
                    prod *= c[k - 1]
                row += 1 - prod
            acc += row / g
        out.append(acc / S.shape[0])
    return out


# ------------------------------------------------------------------ pass@k


def pass_at_k(n: int, c: int, k: int) -> Fraction:
    """``1 - C(n - c, k) / C(n, k)`` exactly (Chen et al. 2021)."""
    if k > n:
        raise ValueError("k > n")
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


# --------------------------------------------------------------- naive oracles


def prehoc_oracle(p_hat, cost=None) -> tuple[float, float, list[int]]:
    """design §2: per prompt the best observed ``p_hat``; ties to the cheapest model,
    then the first. ``p_hat`` has NaN where a model was not run."""
    value, spent, choice = [], [], []
    for n in range(p_hat.shape[0]):
        best = None
        for l in range(p_hat.shape[1]):
            if np.isnan(p_hat[n, l]):
                continue
            key = (p_hat[n, l], -(cost[n, l] if cost is not None else 0.0))
            if best is None or key > best[0]:
                best = (key, l)
        choice.append(best[1])
        value.append(p_hat[n, best[1]])
        spent.append(cost[n, best[1]] if cost is not None else float("nan"))
    return float(np.mean(value)), float(np.mean(spent)), choice


def posthoc_oracle(scores, mask=None) -> float:
    """``mean_n max_{l, g} phi[n, l, g]`` over valid draws."""
    N, L, G = scores.shape
    best = []
    for n in range(N):
        vals = [
            float(scores[n, l, g])
            for l in range(L)
            for g in range(G)
            if mask is None or mask[n, l, g]
        ]
        best.append(max(vals))
    return float(np.mean(best))


def union_oracle(p_hat) -> float:
    """``mean_n [1 - prod_l (1 - p_hat[n, l])]`` over the models that were run."""
    vals = []
    for n in range(p_hat.shape[0]):
        miss = 1.0
        for v in p_hat[n]:
            if not np.isnan(v):
                miss *= 1.0 - v
        vals.append(1.0 - miss)
    return float(np.mean(vals))
