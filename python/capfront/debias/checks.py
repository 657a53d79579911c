"""Posterior predictive checks of the audit's simulated worlds.

Each statistic is a function of the counts alone, so it is computed the same way on
the data and on every data set simulated from a world; a world whose simulations
miss the data's value by more than their own spread does not look like the data,
and its measured errors are not evidence about the data's.

Statistics (``CHECKS``):

- ``curve_g1``, ``curve_mid``, ``curve_G``: the exact subsample curve
  ``O_biased(g) = mean_n E[max_l Y_l(g) / g]`` (``Y_l(g)`` the successes in ``g`` of
  the cell's draws taken without replacement) at ``g = 1``, ``ceil(G / 2)`` and
  ``G`` (the naive oracle): its decay is what carries the optimizer's-curse bias;
- ``eig_share``: the share of the largest eigenvalue in the correlation matrix of
  the models' doubly centred success rates over prompts (the residual
  between-model correlation): specialisation shared across prompts makes it large,
  independent cell noise does not;
- ``max_at_G``, ``max_at_0``: the share of prompts whose best cell solved every
  draw, and whose best cell solved none (the tail shape of the per-prompt maximum
  count near the ceiling and the floor).

``z = (data - mean_sim) / (sd_sim * sqrt(N_sim / N) * sqrt(1 + 1 / n))`` (the
simulated data sets may have fewer prompts ``N_sim`` than the data's ``N``: the
statistics are means over prompts, their spread scales as ``N^(-1/2)``); a world
passes when every ``|z| <= Z_PASS``.

Where no world passes at a data's ``N`` above ``N_sim``, the audit judges the
worlds again at ``N_sim`` prompts, the size of the simulated data sets on which
they measure the estimators' errors (``z`` without the factor ``sqrt(N_sim /
N)``; ``AuditResult.checks_at == "simulations"``), and quotes the bracket only
when none passes there either. Why: the checks grow stricter with every prompt,
and at ``N = 10,000`` no world passed on 16 of 72 robustness-battery data sets
whose families' worlds pass at ``N = 2,000``; judged at 2,000 prompts all 16 had
passing worlds, their quoted intervals still covered the truth, and their
half-widths fell from 1.5-7.6 points (the bracket) to 0.2-2.5
(docs/debiasing.md, "The checks at the simulations' size").
"""

from __future__ import annotations

import numpy as np

from ._input import min_draws, row_blocks
from .bias_correction import naive_rows

CHECKS = ("curve_g1", "curve_mid", "curve_G", "eig_share", "max_at_G", "max_at_0")
# |z| above which a check fails (six checks: about 1.6% of worlds that look like
# the data fail one by chance, for normal statistics)
Z_PASS = 3.0
# a world with fewer simulations is never failed (its spread is not known)
MIN_SIMS_TO_FAIL = 4


def check_sizes(g: int) -> np.ndarray:
    """Subsample sizes the curve checks need: ``1, ceil(g / 2), g``."""
    return np.unique(np.array([1, -(-g // 2), g], dtype=np.int64))


def _rates_block(S: np.ndarray, G: np.ndarray, sl: slice) -> np.ndarray:
    """``p_hat`` of the prompts ``sl`` (NaN where the model was not run)."""
    g = G[sl]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(g > 0, S[sl] / np.maximum(g, 1), np.nan)


def eig_share(S: np.ndarray, G: np.ndarray) -> float:
    """Largest eigenvalue's share of the models' residual correlation matrix.

    ``x[n, l] = p_hat[n, l]`` (a missing cell at its model's mean), doubly centred
    (prompt and model means removed); the correlation matrix of its columns
    (constant columns count as uncorrelated); returns ``lambda_max / L``.

    Three passes over blocks of prompts (:func:`row_blocks`): the model means,
    the prompt-centred column means, then the Gram matrix of the centred rows;
    the memory is a few blocks, not several ``(N, L)`` float64 copies."""
    N, L = S.shape
    if L < 2:
        return 1.0
    blocks = row_blocks(N)
    total, seen = np.zeros(L), np.zeros(L)
    for sl in blocks:
        p = _rates_block(S, G, sl)
        total += np.nansum(p, axis=0)
        seen += np.isfinite(p).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        col = total / seen
    fill = np.where(np.isfinite(col), col, 0.0)

    def centred_rows(sl: slice) -> np.ndarray:
        p = _rates_block(S, G, sl)
        p = np.where(np.isnan(p), fill[None, :], p)
        return p - p.mean(axis=1, keepdims=True)

    mean = sum(centred_rows(sl).sum(axis=0) for sl in blocks) / max(N, 1)
    gram = np.zeros((L, L))
    for sl in blocks:
        x = centred_rows(sl) - mean[None, :]
        # einsum's own loop, not BLAS: OpenBLAS threads stall badly on a loaded
        # machine
        gram += np.einsum("ni,nj->ij", x, x, optimize=False)
    gram /= max(N, 1)
    sd = np.sqrt(np.clip(np.diag(gram), 0.0, None))
    ok = sd > 1e-12
    scale = np.where(ok, 1.0 / np.where(ok, sd, 1.0), 0.0)
    c = gram * scale[:, None] * scale[None, :]
    c[np.diag_indices(L)] = 1.0
    return float(np.linalg.eigvalsh(c)[-1] / L)


def statistics(
    S: np.ndarray, G: np.ndarray, curve: np.ndarray, sizes: np.ndarray
) -> np.ndarray:
    """The ``CHECKS`` of one data set; ``curve`` holds the per-prompt subsample
    curve rows ``(N, len(sizes))`` (sizes including :func:`check_sizes`)."""
    g = min_draws(G)  # in blocks: no (N, L) copy of compact counts
    cs = check_sizes(g)
    at = np.searchsorted(sizes, cs)
    means = curve[:, at].mean(axis=0)
    mx = naive_rows(S, G)
    return np.array(
        [
            means[0],
            means[min(1, len(means) - 1)],
            means[-1],
            eig_share(S, G),
            float((mx >= 1.0).mean()),
            float((mx <= 0.0).mean()),
        ]
    )


def z_scores(
    data: np.ndarray, sims: np.ndarray, scale: float, n_prompts: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mean, sd, z)`` of the simulated statistics ``sims (n, n_checks)`` against
    ``data``; ``scale`` multiplies the simulations' SD (``sqrt(N_sim / N)`` at the
    data's ``N``, 1 at the simulations' size); ``n_prompts``: the prompts the
    spread is taken at (its floor ``1 / n_prompts`` for a statistic that never
    varied)."""
    n = len(sims)
    mean = sims.mean(axis=0)
    sd = sims.std(axis=0, ddof=1) * scale if n > 1 else np.full(len(data), np.nan)
    # a statistic that never varied: its spread is at most the resolution of a
    # share over the data's N prompts
    floor = 1.0 / max(int(n_prompts), 1)
    spread = np.maximum(np.nan_to_num(sd, nan=0.0), floor) * np.sqrt(1 + 1 / max(n, 1))
    z = (data - mean) / spread
    return mean, sd, z
