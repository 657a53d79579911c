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
