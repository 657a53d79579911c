"""Paired replicates: every per-prompt quantity resampled with the same prompts.

A router's accuracy, its cost, the best single model and the debiased oracle are
all means (or functions of means) of per-prompt values. Resampling them *jointly*
-- one set of prompt draw counts for all columns -- keeps their differences and
ratios paired, which is what makes an interval of "router minus best single
model" or of "share of the oracle gain" honest.

:func:`replicate_means` returns the ``(B, K)`` weighted column means
``m[b, k] = sum_n c[b, n] V[n, k] / N`` of replicate ``b``'s prompt draw counts
``c[b, :]``. The counts are those of :func:`capfront.bootstrap` for the same seed
and ``stratify`` (stream 0 of the Philox stream, the same kernel: the columns are
stored as int8 codes or 53-bit fixed point, so the sums are exact integers and do
not depend on the backend or thread count).

:func:`cluster_replicate_means` resamples whole clusters instead (a cluster
bootstrap): ``m[b, k] = sum_c w[b, c] T[c, k] / sum_c w[b, c] n_c`` with cluster
totals ``T`` and sizes ``n_c``, the cluster draw counts ``w`` from the same
Philox engine with the cluster count in place of ``N``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from ._backend import resolve_backend
from .results import EvalResults

__all__ = [
    "cluster_codes",
    "cluster_replicate_means",
    "percentile_ci",
    "replicate_means",
]


def _engine():  # noqa: ANN202 - the bootstrap module (the package attribute is the function)
    import capfront.bootstrap  # noqa: F401

    return sys.modules["capfront.bootstrap"]


def replicate_means(
    results: EvalResults,
    values: np.ndarray | Sequence[np.ndarray],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    stratify: str | None = None,
    backend: str | None = None,
) -> np.ndarray:
    """Column means of ``values (N, K)`` under ``n_resamples`` prompt resamples.

    ``m[b, k] = sum_n c[b, n] values[n, k] / N`` with ``c[b, :]`` the draw counts
    of :func:`capfront.bootstrap.replicate_counts` (the resamples of
    :func:`capfront.bootstrap` with this ``seed`` and ``stratify``). Returns
    ``(n_resamples, K)`` float64.
    """
    eng = _engine()
    V = _as_columns(values, results.n_prompts)
    B = eng._check_int(n_resamples, "n_resamples", 1, 2**32)
    seed = eng._check_int(seed, "seed", 0, 2**64 - 1)
    name = resolve_backend(backend)
    strata = eng._strata(results, stratify)
    N = strata.n
    cols = eng._Columns(N, None if strata.identity else strata.order)
    g = eng._common_draws(results) if results.is_binary else None
    for k in range(V.shape[1]):
        cols.add_values(V[:, k], g)
    plan = cols.build(lambda m: m[:, 0])
    # the kernel holds the code columns first: back to insertion order
    n_codes = len(cols.codes)
    perm = np.array(
        [i if is_code else n_codes + i for is_code, i in cols.kinds], dtype=np.int64
    )
    out = np.empty((B, V.shape[1]))
    chunk = eng._chunk_size(N, name)
    for b0 in range(0, B, chunk):
        nb = min(chunk, B - b0)
        sums = eng._sums(strata.offsets, seed, b0, nb, plan.z8, plan.z64, name)
        out[b0 : b0 + nb] = (sums * (plan.scale / N))[:, perm]
    return out


def _as_columns(values: np.ndarray | Sequence[np.ndarray], n: int) -> np.ndarray:
    if isinstance(values, np.ndarray):
        V = values
    else:
        V = np.column_stack([np.asarray(v, dtype=np.float64) for v in values])
    V = np.asarray(V, dtype=np.float64)
    if V.ndim == 1:
        V = V[:, None]
    if V.ndim != 2 or V.shape[0] != n:
        raise ValueError(f"values must be shaped ({n}, K), got {V.shape}")
    if not np.isfinite(V).all():
        raise ValueError("per-prompt values contain NaN or inf")
    return V


def cluster_codes(
    results: EvalResults, cluster: str | np.ndarray | Sequence[object] | None
) -> np.ndarray | None:
    """Integer cluster code per prompt: ``"benchmark"``/``"topic"`` (the results'
    labels) or one label per prompt; ``None`` passes through."""
    if cluster is None:
        return None
    N = results.n_prompts
    if isinstance(cluster, str):
        if cluster not in ("benchmark", "topic"):
            raise ValueError(
                f"cluster={cluster!r}: use 'benchmark', 'topic' or one label per prompt"
            )
        labels = getattr(results, cluster)
        if labels is None:
            raise ValueError(f"cluster={cluster!r} but the results have no {cluster}")
    else:
        labels = np.asarray(cluster, dtype=object)
        if labels.shape != (N,):
            raise ValueError(
                f"cluster needs one label per prompt ({N}), got shape {labels.shape}"
            )
    _, codes = np.unique(np.asarray(labels).astype(str), return_inverse=True)
    codes = codes.ravel().astype(np.int64)
    if codes.max() < 1:
        raise ValueError("cluster: need at least 2 clusters")
    return codes


def cluster_replicate_means(
    values: np.ndarray,
    codes: np.ndarray,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    backend: str | None = None,
) -> np.ndarray:
    """Column means of ``values (N, K)`` when whole clusters are resampled.

    Replicate ``b`` draws ``C`` clusters with replacement (counts ``w[b, :]`` from
    :func:`capfront.bootstrap.replicate_counts` with ``C`` in place of ``N``) and
    returns ``sum_c w[b, c] T[c, :] / sum_c w[b, c] n_c`` (cluster totals ``T``,
    sizes ``n_c``): the mean over the prompts of the drawn clusters."""
    from .bootstrap import replicate_counts

    V = _as_columns(values, codes.size)
    C = int(codes.max()) + 1
    T = np.zeros((C, V.shape[1]))
    np.add.at(T, codes, V)
    size = np.bincount(codes, minlength=C).astype(np.float64)
    out = np.empty((int(n_resamples), V.shape[1]))
    chunk = max(1, (1 << 22) // max(C, 1))
    for b0 in range(0, out.shape[0], chunk):
        nb = min(chunk, out.shape[0] - b0)
        w = replicate_counts(C, nb, seed=seed, start=b0, backend=backend).astype(
            np.float64
        )
        out[b0 : b0 + nb] = (w @ T) / (w @ size)[:, None]
    return out


def percentile_ci(reps: np.ndarray, level: float) -> tuple[float, float]:
    """Percentile interval of the finite replicates (NaN when none are)."""
    r = np.asarray(reps, dtype=np.float64)
    r = r[np.isfinite(r)]
    if r.size == 0:
        return (float("nan"), float("nan"))
    a = (1.0 - level) / 2.0
    lo, hi = np.percentile(r, [100 * a, 100 * (1 - a)])
    return (float(lo), float(hi))
