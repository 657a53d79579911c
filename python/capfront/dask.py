"""Scale-out on Dask (optional extra ``capfront[dask]``).

Each partition of a long table (or each prompt-block of a score array) is reduced to
:class:`~capfront.SufficientStats` with the C++ kernel where it lives; only the
``(N, L)`` statistics travel, and :meth:`SufficientStats.concat` merges them exactly
(a prompt may be spread over several partitions). Every deterministic statistic of
the resulting :class:`~capfront.EvalResults` equals the single-machine result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._kernels import dispatch
from .io import results_from_chunks, stats_from_frame
from .results import EvalResults
from .suffstats import SufficientStats, sufficient_stats

try:
    import dask
    import dask.array as da
    import dask.dataframe as dd
except ImportError as err:  # pragma: no cover - tested by skipping
    raise ImportError("capfront.dask needs dask: pip install 'capfront[dask]'") from err


def from_dask(
    data: Any, *, scheduler: Any = None, backend: str | None = None, **columns: Any
) -> EvalResults:
    """Reduce a dask DataFrame (long table) or dask array of scores to EvalResults.

    Parameters
    ----------
    data : dask.dataframe.DataFrame or dask.array.Array
        A long table with the columns of :func:`capfront.from_frame` (named by
        ``columns``: ``prompt=``, ``model=``, ``score=``, ``generation=``, ``cost=``,
        ``latency=``, ``benchmark=``, ``topic=``), or scores shaped ``(N, L, G)``
        chunked along prompts only.
    scheduler : optional
        Passed to ``dask.compute`` (e.g. ``"threads"``, ``"synchronous"`` or a
        ``distributed.Client``); default: the active one.
    """
    if isinstance(data, dd.DataFrame):
        parts = data.to_delayed()
        tasks = [
            dask.delayed(stats_from_frame)(p, backend=backend, **columns) for p in parts
        ]
        chunks = dask.compute(*tasks, scheduler=scheduler)
        return results_from_chunks(list(chunks))
    if isinstance(data, da.Array):
        if columns:
            raise ValueError("column names apply to data frames, not to arrays")
        if data.ndim != 3:
            raise ValueError(f"scores must be shaped (N, L, G), got {data.shape}")
        if len(data.chunks[1]) != 1 or len(data.chunks[2]) != 1:
            data = data.rechunk({1: -1, 2: -1})
        starts = np.cumsum((0, *data.chunks[0][:-1]))
        blocks = data.to_delayed().ravel()
        L = data.shape[1]
        models = np.array([f"model_{i}" for i in range(L)], dtype=object)

        def reduce_block(block: np.ndarray, start: int) -> SufficientStats:
            prompts = np.arange(start, start + block.shape[0])
            return sufficient_stats(
                block, prompts=prompts, models=models, backend=backend
            )

        tasks = [
            dask.delayed(reduce_block)(b, int(s))
            for b, s in zip(blocks, starts, strict=True)
        ]
        parts = dask.compute(*tasks, scheduler=scheduler)
        stats = SufficientStats.concat(list(parts))
        stats.prompts = stats.prompts.astype(np.int64)
        return EvalResults.from_stats(stats)
    raise ValueError(
        f"expected a dask DataFrame or dask Array, got {type(data).__name__}"
    )


# ---------------------------------------------------------------- Poisson bootstrap
DASK_STATISTICS = ("naive_oracle", "best_single", "oracle_gain")


def prompt_keys(prompts: np.ndarray) -> np.ndarray:
    """Stable 62-bit keys of prompt labels (SipHash of the label's text)."""
    import pandas as pd

    text = np.asarray([str(p) for p in prompts], dtype=object)
    return (pd.util.hash_array(text) >> np.uint64(2)).astype(np.int64)


def _statistic_columns(
    stats: SufficientStats, models: np.ndarray, statistic: str
) -> tuple[np.ndarray, int]:
    """Integer per-prompt columns of a decomposable statistic, and the common G."""
    order = {str(m): i for i, m in enumerate(stats.models)}
    missing = [m for m in models if str(m) not in order]
    if missing:
        raise ValueError(
            f"model(s) {missing[:3]} have no rows in some partition's "
            "prompts: the bootstrap needs every model on every prompt"
        )
    idx = np.array([order[str(m)] for m in models])
    S = stats.successes[:, idx]
    G = stats.n_draws[:, idx]
    if (G == 0).any():
        raise ValueError("the bootstrap needs every model run on every prompt")
    if stats.flags.get("nonbinary_scores", 0):
        raise ValueError("capfront.dask.bootstrap needs binary scores")
    if (G != G.flat[0]).any():
        raise ValueError(
            "capfront.dask.bootstrap needs the same number of generations in every cell"
        )
    S = S.astype(np.int64)
    best = S.max(axis=1, keepdims=True)
    if statistic == "naive_oracle":
        cols = best
    elif statistic == "best_single":
        cols = S
    else:
        cols = np.concatenate([best, S], axis=1)
    return np.ascontiguousarray(cols), int(G.flat[0])


def _finalize(sums: np.ndarray, statistic: str, G: int) -> np.ndarray:
    """Statistic per replicate from the weighted column sums (last column: weight)."""
    means = sums[:, :-1] / (sums[:, -1:] * G)
    if statistic == "naive_oracle":
        return means[:, 0]
    if statistic == "best_single":
        return means.max(axis=1)
    return means[:, 0] - means[:, 1:].max(axis=1)


def _partition_sums(frame, models, statistic, seed, n_resamples, columns, backend):  # noqa: ANN001
    if len(frame) == 0:
        return np.zeros((n_resamples, 0), np.int64), None, 0, 0
    stats, _ = stats_from_frame(frame, **columns)
    cols, G = _statistic_columns(stats, models, statistic)
    # the resampling engine's keyed Poisson kernel (Philox stream 7)
    sums = dispatch("poisson_sums", backend)(
        prompt_keys(stats.prompts), cols, seed, n_resamples
    )
    return sums, cols.sum(axis=0), len(cols), G


class DaskBootstrapResult:
    """Poisson-bootstrap percentile interval of a statistic of distributed data."""

    def __init__(
        self, statistic: str, estimate: float, replicates: np.ndarray, level: float
    ) -> None:
        self.statistic = statistic
        self.estimate = estimate
        self.replicates = replicates
        self.level = level
        from .resampling.engine import interval

        self.ci = interval(replicates, estimate, level, "percentile")[0]
        self.se = float(np.std(replicates, ddof=1))

    def __repr__(self) -> str:
        return (
            f"DaskBootstrapResult({self.statistic}: {self.estimate:.4f}, "
            f"{self.level:.0%} CI [{self.ci[0]:.4f}, {self.ci[1]:.4f}])"
        )


def bootstrap(
    frame: Any,
    statistic: str = "naive_oracle",
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    scheduler: Any = None,
    backend: str | None = None,
    **columns: Any,
) -> DaskBootstrapResult:
    """Prompt bootstrap of a long table that stays distributed.

    Each prompt gets a Poisson(1) weight per replicate from the counter-based
    Philox4x32-10 stream keyed by ``(seed, replicate, hash of the prompt label)``,
    so the replicates do not depend on how the table is partitioned (the table is
    first shuffled so that each prompt's rows share a partition). Each partition
    returns only its ``(n_resamples, K)`` exact integer weighted sums; the statistic
    of replicate ``b`` is ``finalize(sum_n w_bn v_n / sum_n w_bn)`` (Poisson
    bootstrap, Hanley & MacGibbon 2006). Statistics: ``"naive_oracle"``
    (``v_n = max_l p_hat``), ``"best_single"`` (``max_l`` of the weighted model
    accuracies) and ``"oracle_gain"`` (their difference). Binary scores with the
    same ``G`` in every cell. Interval: percentile (the resampling engine's).
    ``backend`` picks the Poisson kernel (C++, Numba or NumPy: the same sums).
    """
    if statistic not in DASK_STATISTICS:
        raise ValueError(
            f"unknown statistic {statistic!r}; capfront.dask.bootstrap "
            f"supports {', '.join(DASK_STATISTICS)}"
        )
    if not isinstance(data := frame, dd.DataFrame):
        raise ValueError(f"expected a dask DataFrame, got {type(data).__name__}")
    if int(n_resamples) < 2:
        raise ValueError("n_resamples must be >= 2")
    if not 0.0 < level < 1.0:
        raise ValueError("level must lie in (0, 1)")
    prompt = columns.get("prompt", "prompt_id")
    model = columns.get("model", "model")
    for col in (prompt, model):
        if col not in frame.columns:
            raise ValueError(
                f"unknown column {col!r}; the table has columns "
                f"{list(map(str, frame.columns))}"
            )
    models = np.asarray(
        sorted(map(str, frame[model].unique().compute(scheduler=scheduler))),
        dtype=object,
    )
    grouped = frame.shuffle(on=prompt)
    tasks = [
        dask.delayed(_partition_sums)(
            part, models, statistic, int(seed), int(n_resamples), columns, backend
        )
        for part in grouped.to_delayed()
    ]
    parts = [p for p in dask.compute(*tasks, scheduler=scheduler) if p[2] > 0]
    if not parts:
        raise ValueError("the table has no rows")
    draws = {p[3] for p in parts}
    if len(draws) > 1:
        raise ValueError(
            "capfront.dask.bootstrap needs the same number of generations in every cell"
        )
    G = draws.pop()
    sums = np.sum([p[0] for p in parts], axis=0)
    totals = np.sum([p[1] for p in parts], axis=0)
    n = sum(p[2] for p in parts)
    full = np.concatenate([totals, [n]])[None, :]
    estimate = float(_finalize(full, statistic, G)[0])
    return DaskBootstrapResult(
        statistic, estimate, _finalize(sums, statistic, G), float(level)
    )
