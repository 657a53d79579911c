"""Table objects (pandas, polars or pyarrow; one row per prompt, model and
generation, or per prompt and model for count tables) -> dense arrays and
:class:`~capfront.suffstats.SufficientStats`.

The parsing layer below the data model: nothing here builds an
:class:`~capfront.EvalResults` (``EvalResults.from_frame`` and
:mod:`capfront.io` do, from what this module returns), so the data model can use
it without an import cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .suffstats import (
    SufficientStats,
    _label_array,
    count_dtype,
    raise_flags,
    sufficient_stats,
)


def _to_pandas(frame: Any) -> pd.DataFrame:
    if isinstance(frame, pd.DataFrame):
        return frame
    mod = type(frame).__module__
    if mod.startswith("polars"):
        return frame.to_pandas()
    if mod.startswith("pyarrow"):
        return frame.to_pandas()
    if hasattr(frame, "to_pandas"):
        return frame.to_pandas()
    if isinstance(frame, dict):
        return pd.DataFrame(frame)
    raise ValueError(
        f"expected a pandas, polars or pyarrow table (or a file path), got "
        f"{type(frame).__name__}"
    )


def _is_frame(obj: Any) -> bool:
    """A table object (pandas, polars, pyarrow, dict of columns), not a path."""
    if isinstance(obj, (str, Path)):
        return False
    mod = type(obj).__module__
    return (
        isinstance(obj, (pd.DataFrame, dict))
        or mod.startswith(("polars", "pyarrow"))
        or hasattr(obj, "to_pandas")
    )


def _labels_codes(
    df: pd.DataFrame, column: str, role: str
) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and labels of an id column (prompt or model); an empty or
    missing id is refused with its row number (1 = the first data row)."""
    values = df[column]
    codes, labels = pd.factorize(values, sort=False)
    empty = codes < 0
    if len(labels) and not pd.api.types.is_numeric_dtype(np.asarray(labels).dtype):
        # blank labels ("", "  "): checked once per distinct label, not per row
        blank = np.flatnonzero([str(x).strip() == "" for x in labels])
        if blank.size:
            empty |= np.isin(codes, blank)
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        raise ValueError(
            f"column {column!r} ({role}) is empty in row {i + 1} (the first data "
            f"row is 1; {int(empty.sum())} empty row(s) in all): give every row "
            f"a {role}"
        )
    return codes, np.asarray(labels)


def _need(df: pd.DataFrame, column: str | None, role: str) -> None:
    if column is not None and column not in df.columns:
        raise ValueError(
            f"unknown {role} column {column!r}; the table has columns "
            f"{list(map(str, df.columns))}"
        )


_OPTIONAL_ROLES = ("cost", "latency", "benchmark", "topic")


def _checked_frame(
    frame: Any, required: dict[str, str], optional: tuple[str | None, ...]
) -> pd.DataFrame:
    """``frame`` as a pandas DataFrame, after checking that it has every column
    named: ``required`` (role -> column), then the ``(cost, latency, benchmark,
    topic)`` columns of ``optional`` (``None``: not used). The first missing one
    raises :func:`_need`'s ``ValueError``."""
    df = _to_pandas(frame)
    for role, col in (*required.items(), *zip(_OPTIONAL_ROLES, optional, strict=True)):
        _need(df, col, role)
    return df


def _per_prompt(
    df: pd.DataFrame, column: str, p_codes: np.ndarray, n: int
) -> np.ndarray:
    """A label that must be constant within each prompt."""
    values = df[column].to_numpy(dtype=object)
    out = np.empty(n, dtype=object)
    out[p_codes] = values
    check = pd.Series(values).groupby(p_codes).nunique(dropna=False)
    if (check > 1).any():
        bad = check.index[check > 1][0]
        raise ValueError(f"column {column!r} varies within prompt number {bad}")
    return out


def _dense_from_frame(
    frame: Any,
    *,
    prompt: str,
    model: str,
    score: str,
    generation: str | None,
    cost: str | None,
    latency: str | None,
    benchmark: str | None,
    topic: str | None,
) -> dict[str, Any]:
    """Long table -> dense ``(N, L, G)`` arrays (``scores``, ``mask``, ``cost``,
    ``latency``) and labels, as keyword arguments of ``EvalResults.from_arrays``."""
    df = _checked_frame(
        frame,
        {"prompt": prompt, "model": model, "score": score},
        (cost, latency, benchmark, topic),
    )
    if generation is not None and generation not in df.columns:
        if generation != "generation":
            _need(df, generation, "generation")
        generation = None
    if len(df) == 0:
        raise ValueError("the table has no rows")
    p_codes, p_labels = _labels_codes(df, prompt, "prompt")
    m_codes, m_labels = _labels_codes(df, model, "model")
    # One int64 key per row, sorted once: cells contiguous, generations in order.
    cell_key = p_codes.astype(np.int64) * len(m_labels) + m_codes
    if generation is not None:
        gen = df[generation]
        if gen.isna().any():
            raise ValueError(f"column {generation!r} has missing values")
        g_codes, g_labels = pd.factorize(gen, sort=True)
        full_key = cell_key * len(g_labels) + g_codes
        order = np.argsort(full_key, kind="stable")
        same = np.flatnonzero(np.diff(full_key[order]) == 0)
        if same.size:
            i = int(order[same[0] + 1])
            raise ValueError(
                f"duplicate rows for (prompt, model, generation) = "
                f"({df[prompt].iloc[i]!r}, {df[model].iloc[i]!r}, "
                f"{df[generation].iloc[i]!r}); {same.size} duplicate row(s) in all"
            )
    else:
        order = np.argsort(cell_key, kind="stable")
        g_labels = None
    # position of each row within its (prompt, model) cell, generations in order
    cell = cell_key[order]
    starts = np.r_[0, np.flatnonzero(np.diff(cell)) + 1]
    run = np.repeat(starts, np.diff(np.r_[starts, len(cell)]))
    pos = np.empty(len(df), dtype=np.int64)
    pos[order] = np.arange(len(cell)) - run
    N, L, G = len(p_labels), len(m_labels), int(pos.max()) + 1

    def dense(col: str, what: str) -> np.ndarray:
        values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.isnan(values) & df[col].notna().to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"column {col!r} ({what}) has non-numeric values (row {i + 1}: "
                f"{df[col].iloc[i]!r})"
            )
        if np.isnan(values).any():
            i = int(np.flatnonzero(np.isnan(values))[0])
            fix = (
                f"fill them, or leave {what}= out (capfront report drops an "
                f"auto-detected {what} column with gaps, with a note)"
                if what in ("cost", "latency")
                else "fill them or drop those rows"
            )
            raise ValueError(
                f"column {col!r} ({what}) has {int(np.isnan(values).sum())} missing "
                f"value(s), first in row {i + 1}: {fix}"
            )
        out = np.zeros((N, L, G), dtype=np.float64)
        out[p_codes, m_codes, pos] = values
        return out

    scores = dense(score, "score")
    mask = None
    if len(df) != N * L * G:
        mask = np.zeros((N, L, G), dtype=bool)
        mask[p_codes, m_codes, pos] = True
    scores_arr: np.ndarray = scores
    if set(np.unique(scores)) <= {0.0, 1.0}:
        scores_arr = scores.astype(np.uint8)
    return {
        "scores": scores_arr,
        "mask": mask,
        "cost": None if cost is None else dense(cost, "cost"),
        "latency": None if latency is None else dense(latency, "latency"),
        "models": np.asarray(m_labels, dtype=object).astype(str),
        "prompts": _label_array(np.asarray(p_labels)),
        "benchmark": None
        if benchmark is None
        else _per_prompt(df, benchmark, p_codes, N),
        "topic": None if topic is None else _per_prompt(df, topic, p_codes, N),
        "generations": None if g_labels is None else np.asarray(g_labels),
    }


_FRAME_DEFAULTS: dict[str, Any] = {
    "prompt": "prompt_id",
    "model": "model",
    "score": "score",
    "generation": "generation",
    "cost": None,
    "latency": None,
    "benchmark": None,
    "topic": None,
}


def _frame_columns(columns: dict[str, Any]) -> dict[str, Any]:
    """The column names of each role: ``columns`` over :data:`_FRAME_DEFAULTS`."""
    unknown = set(columns) - set(_FRAME_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown column argument(s) {sorted(unknown)}")
    return {**_FRAME_DEFAULTS, **columns}


def stats_from_frame(
    frame: Any, *, backend: str | None = None, **columns: Any
) -> tuple[SufficientStats, dict[str, np.ndarray | None]]:
    """Sufficient statistics of one chunk of a long table, with prompt and model
    labels (to combine with :meth:`SufficientStats.concat`) and the per-prompt
    ``benchmark``/``topic`` labels aligned with ``stats.prompts``."""
    cols = _frame_columns(columns)
    df = _to_pandas(frame)
    fast = _ordered_block_stats(df, backend=backend, **cols)
    if fast is not None:
        return _fast_chunk(fast, df[cols["generation"]].to_numpy())
    dense = _dense_from_frame(df, **cols)
    cost, latency = dense["cost"], dense["latency"]
    stats = sufficient_stats(
        dense["scores"],
        dense["mask"],
        cost,
        latency,
        prompts=dense["prompts"],
        models=dense["models"],
        backend=backend,
    )
    raise_flags(stats.flags)
    extra = {k: dense[k] for k in ("benchmark", "topic", "generations")}
    return _at_rest(stats), extra


def _fast_chunk(
    stats: SufficientStats, generation: np.ndarray
) -> tuple[SufficientStats, dict[str, np.ndarray | None]]:
    """What :func:`stats_from_frame` returns for a chunk the ordered-block path
    read: the generation labels are the first ``G`` values of the column (copied:
    a view would keep the whole chunk alive)."""
    gens = generation[: stats.n_draws[0, 0]].copy()
    return _at_rest(stats), {"benchmark": None, "topic": None, "generations": gens}


def arrow_block_stats(
    batches: list[Any], *, backend: str | None = None, **columns: Any
) -> tuple[SufficientStats, dict[str, np.ndarray | None]] | None:
    """:func:`stats_from_frame` of the rows of pyarrow ``RecordBatch`` es (one
    piece of a table, in order) in the ordered-block layout (see
    :func:`_ordered_block_arrays`), read from the Arrow buffers with no pandas
    conversion: one batch's numeric columns as zero-copy NumPy views and a
    dictionary column's integer codes as they are (several batches: their
    columns concatenated, the model labels decoded). ``None`` when the rows are
    not in that layout, or a column has nulls or a type the fast path does not
    take (then convert them to pandas and call :func:`stats_from_frame`)."""
    import pyarrow as pa

    cols = _frame_columns(columns)
    if cols["benchmark"] is not None or cols["topic"] is not None:
        return None
    if not batches or cols["generation"] is None:
        return None
    names = set(batches[0].schema.names)
    numeric = [cols[r] for r in ("prompt", "generation", "score", "cost", "latency")]
    numeric = [c for c in numeric if c is not None]
    if cols["model"] not in names or any(c not in names for c in numeric):
        return None

    def plain(arr: Any) -> bool:
        t = arr.type
        return not arr.null_count and (
            pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
        )

    def labels(arr: Any) -> np.ndarray:
        if pa.types.is_dictionary(arr.type):
            return arr.dictionary.to_numpy(zero_copy_only=False)[arr.indices]
        return arr.to_numpy(zero_copy_only=False)

    arrays: dict[str, np.ndarray] = {}
    for c in numeric:
        parts = [b.column(c) for b in batches]
        if not all(plain(a) for a in parts):
            return None
        values = [a.to_numpy(zero_copy_only=False) for a in parts]
        arrays[c] = values[0] if len(values) == 1 else np.concatenate(values)
    models = [b.column(cols["model"]) for b in batches]
    if any(m.null_count for m in models):
        return None
    m = models[0]
    dictionary = pa.types.is_dictionary(m.type)
    if len(models) == 1 and dictionary and not m.dictionary.null_count:

        def model_codes() -> tuple[np.ndarray, np.ndarray]:
            return (
                m.indices.to_numpy(zero_copy_only=False),
                m.dictionary.to_numpy(zero_copy_only=False),
            )
    else:

        def model_codes() -> tuple[np.ndarray, np.ndarray]:
            values = np.concatenate([labels(m) for m in models])
            codes, uniques = pd.factorize(values, sort=False)
            return codes, np.asarray(uniques)

    fast = _ordered_block_arrays(
        arrays,
        model_codes,
        prompt=cols["prompt"],
        score=cols["score"],
        generation=cols["generation"],
        cost=cols["cost"],
        latency=cols["latency"],
        backend=backend,
    )
    if fast is None:
        return None
    return _fast_chunk(fast, arrays[cols["generation"]])


def _first_run(values: np.ndarray) -> int:
    """Length of the run of equal values at the start (scanned in growing windows,
    so a long array with short runs costs little)."""
    width = 1024
    while True:
        head = values[:width]
        other = np.flatnonzero(head != values[0])
        if other.size:
            return int(other[0])
        if width >= len(values):
            return len(values)
        width *= 4


def _codes(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and labels of a column (categoricals without a hash pass)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(), np.asarray(column.cat.categories)
    codes, labels = pd.factorize(column, sort=False)
    return codes, np.asarray(labels)


def _n_unique(values: np.ndarray) -> int:
    """Number of distinct values (a sort: cheaper than a hash table on the short
    arrays of one block)."""
    return int(np.unique(values).size)


def _as_words(rows: np.ndarray) -> tuple[np.ndarray, int]:
    """The 2-D integer array ``rows`` viewed as the widest unsigned words (up to 8
    bytes) that tile its rows, and how many of its values make one word."""
    item = rows.itemsize
    if rows.flags.c_contiguous and rows.size:
        row_bytes = rows.shape[1] * item
        for width in (8, 4, 2):
            if width > item and width % item == 0 and row_bytes % width == 0:
                return rows.view(np.dtype(f"u{width}")), width // item
    return rows, 1


def _rows_equal(rows: np.ndarray, pattern: np.ndarray) -> bool:
    """Every row of the 2-D integer array ``rows`` equals the 1-D ``pattern``:
    ``(rows == pattern).all()``, compared as wide words (the arrays of a chunk
    are millions of 1-4 byte values: a fraction of the element operations)."""
    words, _ = _as_words(rows)
    pattern = np.ascontiguousarray(pattern, dtype=rows.dtype)
    return bool((words == pattern.view(words.dtype)).all())


def _rows_constant(rows: np.ndarray) -> bool:
    """Every row of the 2-D integer array ``rows`` holds one value:
    ``(rows == rows[:, :1]).all()``, compared as wide words."""
    words, per_word = _as_words(rows)
    first = np.repeat(rows[:, :1], per_word, axis=1).view(words.dtype)
    return bool((words == first).all())


class _Columns(dict):
    """A DataFrame's columns as NumPy arrays, each converted on first use."""

    def __init__(self, df: pd.DataFrame) -> None:
        super().__init__()
        self.df = df

    def __missing__(self, key: str) -> np.ndarray:
        value = self[key] = self.df[key].to_numpy()
        return value


def _ordered_block_stats(
    df: pd.DataFrame,
    *,
    prompt: str,
    model: str,
    score: str,
    generation: str | None,
    cost: str | None,
    latency: str | None,
    benchmark: str | None,
    topic: str | None,
    backend: str | None = None,
) -> SufficientStats | None:
    """:func:`_ordered_block_arrays` on the columns of a pandas DataFrame (the model
    column's codes taken from a categorical without a hash pass)."""
    if (
        benchmark is not None
        or topic is not None
        or generation is None
        or any(c not in df.columns for c in (prompt, model, score, generation))
        or any(c is not None and c not in df.columns for c in (cost, latency))
    ):
        return None
    return _ordered_block_arrays(
        _Columns(df),
        lambda: _codes(df[model]),
        prompt=prompt,
        score=score,
        generation=generation,
        cost=cost,
        latency=latency,
        backend=backend,
    )


def _ordered_block_arrays(
    columns: Mapping[str, np.ndarray],
    model_codes: Callable[[], tuple[np.ndarray, np.ndarray]],
    *,
    prompt: str,
    score: str,
    generation: str,
    cost: str | None,
    latency: str | None,
    backend: str | None = None,
) -> SufficientStats | None:
    """Fast path for the common layout: rows sorted by prompt, every prompt with
    the same ``L x G`` block of (model, generation) rows in the same order. Then
    the columns reshape to ``(n, L, G)`` without sorting or scattering, and the
    checks below (all O(rows), vectorised) prove there is no duplicate row.
    Returns ``None`` (use the general path) for any other layout.

    ``columns`` maps the prompt, generation, score (and cost/latency, when named)
    column names to 1-D arrays of one length; ``model_codes()`` returns the model
    column's integer codes and labels (called only once the prompts pass)."""
    p = columns[prompt]
    R = len(p)
    if R == 0 or p.dtype.kind not in "iu":
        return None
    k = _first_run(p)
    if R % k:
        return None
    n = R // k
    p2 = p.reshape(n, k)
    if not _rows_constant(p2):
        return None
    prompts = p2[:, 0].copy()  # a view would keep the whole chunk alive
    if _n_unique(prompts) != n:  # a prompt in two separate runs
        return None
    m_codes, m_labels = model_codes()
    m_block = m_codes[:k]
    L = _n_unique(m_block)
    if L == 0 or k % L or (m_block < 0).any():
        return None
    G = k // L
    mb = m_block.reshape(L, G)
    if not (mb == mb[:, :1]).all() or _n_unique(mb[:, 0]) != L:
        return None
    if not _rows_equal(m_codes.reshape(n, k), m_block):
        return None
    g = columns[generation]
    if g.dtype.kind not in "iu":
        return None
    gb = g[:G]
    if _n_unique(gb) != G or not _rows_equal(g.reshape(n, k), np.tile(gb, L)):
        return None
    x = columns[score]
    if x.dtype.kind not in "biuf":
        return None

    def cube(col: str | None) -> np.ndarray | None:
        if col is None:
            return None
        v = columns[col]
        return v.reshape(n, L, G) if v.dtype.kind in "iuf" else None

    c3, t3 = cube(cost), cube(latency)
    if (cost is not None and c3 is None) or (latency is not None and t3 is None):
        return None
    stats = sufficient_stats(
        x.reshape(n, L, G),
        None,
        c3,
        t3,
        prompts=prompts,
        models=np.asarray(m_labels[mb[:, 0]], dtype=object).astype(str),
        backend=backend,
    )
    raise_flags(stats.flags)
    return stats


def _at_rest(stats: SufficientStats) -> SufficientStats:
    """Hold a chunk's integer counts in the smallest dtype that fits them (uint8
    for up to 255 draws): many chunks wait in memory before they are merged."""
    if stats.successes.dtype.kind in "iu":
        stats.successes = stats.successes.astype(count_dtype(int(stats.n_draws.max())))
    if stats.constant_draws is None:
        stats.n_draws = stats.n_draws.astype(count_dtype(int(stats.n_draws.max())))
    return stats


def _numeric_column(df: pd.DataFrame, col: str, what: str) -> np.ndarray:
    """``df[col]`` as float64; names the column when it is not all numbers."""
    values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=np.float64)
    if np.isnan(values).any():
        bad = np.isnan(values) & df[col].notna().to_numpy()
        kind = "non-numeric" if bad.any() else "missing"
        i = int(np.flatnonzero(bad if bad.any() else np.isnan(values))[0])
        raise ValueError(
            f"column {col!r} ({what}) has {int(np.isnan(values).sum())} {kind} "
            f"value(s), first in row {i + 1}"
        )
    return values


def count_frame_arrays(
    frame: Any,
    *,
    prompt: str,
    model: str,
    successes: str,
    n_draws: str,
    cost: str | None,
    latency: str | None,
    benchmark: str | None,
    topic: str | None,
) -> dict[str, Any]:
    """Count table (one row per prompt and model: correct of drawn) -> the
    keyword arguments of ``EvalResults.from_counts`` (``successes`` and
    ``n_draws`` shaped ``(N, L)``, labels); missing (prompt, model) pairs are
    cells not run (``n_draws == 0``)."""
    df = _checked_frame(
        frame,
        {"prompt": prompt, "model": model, "successes": successes, "n_draws": n_draws},
        (cost, latency, benchmark, topic),
    )
    if len(df) == 0:
        raise ValueError("the table has no rows")
    p_codes, p_labels = _labels_codes(df, prompt, "prompt")
    m_codes, m_labels = _labels_codes(df, model, "model")
    key = pd.DataFrame({"p": p_codes, "m": m_codes})
    if key.duplicated().any():
        i = int(np.flatnonzero(key.duplicated().to_numpy())[0])
        raise ValueError(
            f"duplicate rows for (prompt, model) = ({df[prompt].iloc[i]!r}, "
            f"{df[model].iloc[i]!r})"
        )
    N, L = len(p_labels), len(m_labels)
    S = np.zeros((N, L))
    G = np.zeros((N, L))
    S[p_codes, m_codes] = _numeric_column(df, successes, "successes")
    G[p_codes, m_codes] = _numeric_column(df, n_draws, "n_draws")

    def cells(col: str | None) -> np.ndarray | None:
        if col is None:
            return None
        out = np.zeros((N, L))
        out[p_codes, m_codes] = _numeric_column(df, col, "cost/latency")
        return out

    return dict(
        successes=S,
        n_draws=G,
        cost=cells(cost),
        latency=cells(latency),
        models=np.asarray(m_labels, dtype=object).astype(str),
        prompts=np.asarray(p_labels, dtype=object),
        benchmark=None if benchmark is None else _per_prompt(df, benchmark, p_codes, N),
        topic=None if topic is None else _per_prompt(df, topic, p_codes, N),
    )
