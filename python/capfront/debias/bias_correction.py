"""Naive plug-in oracle and the parametric-bootstrap bias correction (design §4c)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._validate import whole_number
from ..expected_max import expected_max_binomial
from ._input import row_blocks
from .result import Decomposition

#: the range of the oracle mean_n max_l p: a mean of probabilities
FEASIBLE = (0.0, 1.0)


def _identity(mean: np.ndarray) -> float:
    return float(mean[0])


def feasible(dec: Decomposition) -> Decomposition:
    """``dec`` with its estimate clipped to ``[0, 1]``, the range of the oracle.

    Bias corrections subtract an estimated bias and can overshoot: on a pool of
    identical models the jackknife gave -0.17. ``finalize`` clips (so bootstrap
    replicates are clipped too); when the full-data estimate was clipped the
    diagnostics say so: ``clipped`` (True), ``unclipped_value`` and ``note``.
    The delta-method standard error stays that of the unclipped estimator.
    """
    inner = dec.finalize
    lo, hi = FEASIBLE

    def finalize(mean: np.ndarray) -> float:
        return float(min(max(inner(mean), lo), hi))

    raw = float(inner(dec.values.mean(axis=0)))
    diag = dict(dec.diagnostics)
    diag["clipped"] = bool(raw < lo or raw > hi)
    if diag["clipped"]:
        diag["unclipped_value"] = raw
        diag["note"] = (
            f"the estimate {raw:.6g} lies outside [0, 1], the range of the oracle; "
            f"clipped to {min(max(raw, lo), hi):g} (the bias correction overshot: "
            "compare methods with capfront.audit)"
        )
    return Decomposition(dec.values, finalize, diag)


def by_row_blocks(
    kernel: Callable[..., np.ndarray], S: np.ndarray, G: np.ndarray, *args: object
) -> np.ndarray:
    """``kernel(S[b], G[b], *args)`` over the :func:`row_blocks` ``b``, stacked
    along the prompts: the per-prompt kernels (cross-fit rows, subsample curve)
    on counts in any integer dtype (compact uint8 / uint16 tables, ``G`` a
    broadcast view) with one block of contiguous int64 copies at a time, not
    ``(N, L)`` int64 tables (16 bytes a cell: 5.3 GB at N = 1e7, L = 33). The
    kernels work prompt by prompt, so the values are those of one call on int64
    copies of the whole table, bit for bit."""
    blocks = row_blocks(len(S))
    out: np.ndarray | None = None
    for sl in blocks:
        s = np.ascontiguousarray(S[sl], dtype=np.int64)
        g = np.ascontiguousarray(G[sl], dtype=np.int64)
        v = np.asarray(kernel(s, g, *args), dtype=np.float64)
        if out is None:
            out = np.empty((len(S),) + v.shape[1:])
        out[sl] = v
    if out is None:
        raise ValueError("successes must have at least one prompt")
    return out


def naive_rows(S: np.ndarray, G: np.ndarray) -> np.ndarray:
    """``max_l p_hat[n, l]`` per prompt (cells with no draws left out; ``-inf``
    for a prompt without any)."""
    out = np.empty(len(S))
    for sl in row_blocks(len(S)):
        g = G[sl]
        with np.errstate(invalid="ignore", divide="ignore"):
            out[sl] = np.where(g > 0, S[sl] / np.maximum(g, 1), -np.inf).max(axis=1)
    return out


def _expected_max_rows(S: np.ndarray, G: np.ndarray, backend: str | None) -> np.ndarray:
    """``E[max_l Y_l / G_l]``, ``Y_l ~ Bin(G_l, p_hat_l)``, per prompt, in blocks
    of prompts (the kernel works row by row, so the values are those of one
    call)."""
    out = np.empty(len(S))
    for sl in row_blocks(len(S)):
        g = G[sl]
        p_hat = np.where(g > 0, S[sl] / np.maximum(g, 1), 0.0)
        out[sl] = np.asarray(
            expected_max_binomial(p_hat, g, backend=backend), dtype=np.float64
        ).reshape(-1)
    return out


def naive_decomposition(S: np.ndarray, G: np.ndarray) -> Decomposition:
    """``O_biased = mean_n max_l p_hat[n, l]`` (paper eq. 5)."""
    return Decomposition(naive_rows(S, G)[:, None], _identity, {"linear": True})


def bounded_naive_decomposition(
    S: np.ndarray, G: np.ndarray, bound: float, note: str
) -> Decomposition:
    """The naive oracle as ``pgm``'s answer where no model is fitted: its
    ``diagnostics`` carry ``naive_bias_bound`` (a bound on its bias, not an
    estimate) and ``note`` (why), as the audit's shortcut reads them."""
    dec = naive_decomposition(S, G)
    dec.diagnostics.update(
        {"naive_bias_bound": float(bound), "latent_classes": 0, "aic": {}, "bic": {}}
    )
    dec.diagnostics["note"] = note
    return dec


def bootstrap_bc_decomposition(
    S: np.ndarray, G: np.ndarray, *, backend: str | None = None
) -> Decomposition:
    """Per prompt ``2 max_l p_hat - E[max_l Y_l / G_l | p = p_hat]``,
    ``Y_l ~ Bin(G_l, p_hat_l)``, the exact expectation of the parametric bootstrap
    (design §4c): ``O_bc = 2 O_biased - mean_n E[max | p_hat]``."""
    naive = naive_rows(S, G)
    e1 = _expected_max_rows(S, G, backend)
    values = np.stack([2.0 * naive - e1], axis=1)
    return feasible(
        Decomposition(
            values,
            _identity,
            {"linear": True, "expected_naive_given_p_hat": float(e1.mean())},
        )
    )


def double_bc_decomposition(
    S: np.ndarray,
    G: np.ndarray,
    *,
    backend: str | None = None,
    n_redraws: int = 16,
    seed: int = 0,
) -> Decomposition:
    """Double parametric bootstrap ``3 O_biased - 3 E1 + E2``, ``E1 = E[max | p_hat]``
    exactly and ``E2 = E[E[max | p*] ]`` over ``n_redraws`` redrawn counts
    ``S* ~ Bin(G, p_hat)`` (seeded)."""
    n_redraws = whole_number(n_redraws, "n_redraws", minimum=1)
    seed = whole_number(seed, "seed", minimum=0)
    naive = naive_rows(S, G)
    e1 = _expected_max_rows(S, G, backend)
    rng = np.random.default_rng(seed)
    e2 = np.zeros_like(e1)
    blocks = row_blocks(len(S))
    for _ in range(n_redraws):
        # one redraw of the whole table, drawn block after block in row order
        # (the generator's stream as one (N, L) call would consume it)
        for sl in blocks:
            g = G[sl]
            p_hat = np.where(g > 0, S[sl] / np.maximum(g, 1), 0.0)
            star = rng.binomial(g, p_hat)
            p_star = np.where(g > 0, star / np.maximum(g, 1), 0.0)
            e2[sl] += np.asarray(
                expected_max_binomial(p_star, g, backend=backend)
            ).reshape(-1)
    e2 /= n_redraws
    values = (3.0 * naive - 3.0 * e1 + e2)[:, None]
    return feasible(Decomposition(values, _identity, {"linear": True}))
