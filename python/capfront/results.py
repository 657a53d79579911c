"""``EvalResults``: evaluation results of L models on N prompts with G generations,
held as per-cell sufficient statistics (design §1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._validate import (
    as_float_array,
    as_int_array,
    check_nonnegative,
    check_sum_finite,
    labels,
    require_results,
    unique_labels,
)
from .suffstats import (
    SufficientStats,
    constant_draws,
    count_dtype,
    is_broadcast,
    sufficient_stats,
)
from .suffstats import raise_flags as _raise_flags


class EvalResults:
    """Scores of ``L`` models on ``N`` prompts, ``G[n, l]`` generations per cell.

    Build with :meth:`from_arrays`, :meth:`from_counts`, :meth:`from_frame` or
    :func:`capfront.read`. Estimators use the ``(N, L)`` statistics:
    ``successes[n, l] = sum_g phi[n, l, g]`` and ``n_draws[n, l] = G[n, l]``;
    ``p_hat = successes / n_draws``. A cell with ``n_draws == 0`` was not run.

    Attributes
    ----------
    successes, n_draws : (N, L) arrays
    models, prompts : label arrays
    benchmark, topic : per-prompt label arrays or ``None``
    mean_cost, mean_latency : (N, L) mean per generation, or ``None``
    is_binary : whether every score is 0 or 1
    truth_p : (N, L) true success probabilities (simulated data only)
    """

    def __init__(
        self,
        stats: SufficientStats,
        *,
        models: Sequence[str] | np.ndarray | None = None,
        prompts: Sequence[object] | np.ndarray | None = None,
        benchmark: Sequence[str] | np.ndarray | None = None,
        topic: Sequence[object] | np.ndarray | None = None,
        is_binary: bool | None = None,
        scores: np.ndarray | None = None,
        mask: np.ndarray | None = None,
        latency: np.ndarray | None = None,
        truth_p: np.ndarray | None = None,
        truth: dict[str, Any] | None = None,
        notes: Sequence[str] | None = None,
    ) -> None:
        N, L = stats.successes.shape
        if N == 0:
            raise ValueError("no prompts: the data is empty")
        if L == 0:
            raise ValueError("no models: the data is empty")
        self._stats = stats
        self._wide: dict[str, np.ndarray] = {}
        self.models = labels(
            models if models is not None else stats.models, L, "models", "model_"
        )
        given = prompts if prompts is not None else stats.prompts
        # default labels "0".."N-1" are unique by construction and built on first
        # use (N Python strings and a string np.unique cost 0.4 s at N = 400,000)
        self._prompts = None if given is None else labels(given, N, "prompts")
        unique_labels(self.models, "models")
        if self._prompts is not None:
            unique_labels(self._prompts, "prompts")
        self.benchmark = labels(benchmark, N, "benchmark")
        self.topic = labels(topic, N, "topic")
        self.is_binary = stats.is_binary if is_binary is None else bool(is_binary)
        self.scores = scores
        self.mask = mask
        self.latency = latency
        self.truth_p = truth_p
        self.truth = truth or {}
        #: what the loader detected or assumed, one sentence each (see ``notes``)
        self.load_notes: list[str] = list(notes or [])
        G = stats.constant_draws
        if G is not None and G <= 0:
            raise ValueError("every cell has 0 draws: the data is empty")
        if G is None and not (stats.n_draws > 0).any(axis=1).all():
            bad = np.flatnonzero(~(stats.n_draws > 0).any(axis=1))[:3]
            raise ValueError(
                f"prompt(s) {[self.prompts[i] for i in bad]} have no result for "
                "any model"
            )

    @property
    def prompts(self) -> np.ndarray:
        """Prompt labels (``"0".."N-1"`` when none were given, built on first use)."""
        if self._prompts is None:
            self._prompts = labels(None, self.n_prompts, "prompts", "")
        return self._prompts

    @prompts.setter
    def prompts(self, values: Sequence[object] | np.ndarray) -> None:
        arr = labels(values, self.n_prompts, "prompts")
        unique_labels(arr, "prompts")
        self._prompts = arr

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_arrays(
        cls,
        scores: np.ndarray,
        *,
        cost: np.ndarray | None = None,
        latency: np.ndarray | None = None,
        mask: np.ndarray | None = None,
        models: Sequence[str] | None = None,
        prompts: Sequence[object] | None = None,
        benchmark: Sequence[str] | None = None,
        topic: Sequence[object] | None = None,
        backend: str | None = None,
        keep_scores: bool = True,
    ) -> EvalResults:
        """From a score tensor ``(N, L, G)`` (or ``(N, L)`` for one generation).

        ``cost`` and ``latency`` are shaped like ``scores``, ``(N, L)`` (per cell)
        or ``(L,)`` (per model). ``mask`` (like ``scores``, bool) marks valid draws
        for ragged generations; a cell with no valid draw means "not run".
        """
        try:
            raw = np.asarray(scores)
        except ValueError:  # NumPy's "inhomogeneous shape" for ragged lists
            raise ValueError(
                "scores must be a rectangular (N, L, G) or (N, L) array; the nested "
                "lists have rows of different lengths (pad ragged generations and "
                "pass mask=, or build a long table and use from_frame)"
            ) from None
        if raw.dtype.kind not in "biuf":
            raise ValueError(
                f"scores must be numeric or boolean, got dtype {raw.dtype}"
            )
        if raw.ndim == 2:
            raw = raw[:, :, None]
            mask = None if mask is None else np.asarray(mask)[:, :, None]
        if raw.ndim != 3:
            raise ValueError(
                f"scores must be shaped (N, L, G) or (N, L), got {raw.shape}"
            )
        if raw.size == 0:
            raise ValueError(f"scores is empty (shape {raw.shape})")
        N, L, G = raw.shape
        if mask is not None:
            mask = np.asarray(mask)
            if mask.dtype != np.bool_:
                raise ValueError(f"mask must be boolean, got dtype {mask.dtype}")
            if mask.shape != raw.shape:
                raise ValueError(f"mask must be shaped {raw.shape}, got {mask.shape}")
        full_cost, cell_cost = _split_per_draw(cost, raw.shape, "cost", per_model=True)
        full_lat, cell_lat = _split_per_draw(latency, raw.shape, "latency")
        stats = sufficient_stats(raw, mask, full_cost, full_lat, backend=backend)
        _raise_flags(stats.flags)
        if cell_cost is not None:
            # per-model prices with one draw count: a broadcast row, no (N, L) copy
            g = stats.constant_draws
            stats.cost_sum = _cell_sums(cell_cost, stats.n_draws, g or 0, g is not None)
        check_sum_finite(_sum_rows(stats.cost_sum), "cost")
        check_sum_finite(stats.latency_sum, "latency")
        if cell_lat is not None:
            stats.latency_sum = cell_lat * stats.n_draws
            stats.latency_max = np.where(stats.n_draws > 0, cell_lat, 0.0)
        lat_draws = None
        if keep_scores and full_lat is not None:
            lat_draws = full_lat
        elif keep_scores and cell_lat is not None:
            lat_draws = np.broadcast_to(cell_lat[:, :, None], raw.shape)
        return cls(
            stats,
            models=models,
            prompts=prompts,
            benchmark=benchmark,
            topic=topic,
            scores=raw if keep_scores else None,
            mask=mask if keep_scores else None,
            latency=lat_draws,
        )

    @classmethod
    def from_counts(
        cls,
        successes: np.ndarray,
        n_draws: np.ndarray | int,
        *,
        cost: np.ndarray | None = None,
        latency: np.ndarray | None = None,
        models: Sequence[str] | None = None,
        prompts: Sequence[object] | None = None,
        benchmark: Sequence[str] | None = None,
        topic: Sequence[object] | None = None,
    ) -> EvalResults:
        """From binary count tables: ``successes`` and ``n_draws`` shaped ``(N, L)``.

        ``cost``/``latency``: mean per generation, ``(N, L)`` or ``(L,)``.
        ``n_draws == 0`` marks a cell that was not run.

        Storage is compact: the counts are copied once into the smallest unsigned
        dtype that holds ``max n_draws`` (uint8 up to 255 draws); one draw count
        for every cell is a broadcast view, and so are the cost and latency sums
        when both the draw count and the per-generation values are per model. The
        checks run on the input's own dtype (no int64 copy of the table).
        """
        S = _count_table(successes, "successes")
        if S.ndim != 2:
            raise ValueError(f"successes must be shaped (N, L), got {S.shape}")
        if S.size == 0:
            raise ValueError(f"successes is empty (shape {S.shape})")
        G = _count_table(n_draws, "n_draws")
        try:
            G_cells = np.broadcast_to(G, S.shape)
        except ValueError:
            raise ValueError(
                f"n_draws shaped {G.shape} does not match successes {S.shape}"
            ) from None
        g_min, g_max = int(G.min()), int(G.max())
        if g_min < 0:
            raise ValueError("n_draws must be >= 0")
        if g_max >= 2**31:
            raise ValueError("n_draws must be below 2^31")
        if S.dtype.kind == "i" and int(S.min()) < 0:
            raise ValueError("successes must lie between 0 and n_draws in every cell")
        if g_min == g_max:
            if int(S.max()) > g_max:
                raise ValueError(
                    "successes must lie between 0 and n_draws in every cell"
                )
            draws = constant_draws(g_max, S.shape)
        else:
            for start in range(0, S.shape[0], _CHECK_ROWS):
                rows = slice(start, start + _CHECK_ROWS)
                if (S[rows] > G_cells[rows]).any():
                    raise ValueError(
                        "successes must lie between 0 and n_draws in every cell"
                    )
            draws = np.array(G_cells, dtype=count_dtype(g_max), order="C")
        stats = SufficientStats(
            successes=np.array(S, dtype=count_dtype(g_max), order="C"),
            n_draws=draws,
            flags={"nonbinary_scores": 0},
        )
        _, cell_cost = _split_per_draw(
            cost, (*S.shape, 1), "cost", allow_full=False, per_model=True
        )
        _, cell_lat = _split_per_draw(
            latency, (*S.shape, 1), "latency", allow_full=False, per_model=True
        )
        constant = g_min == g_max
        if cell_cost is not None:
            stats.cost_sum = _cell_sums(cell_cost, G_cells, g_max, constant)
        if cell_lat is not None:
            stats.latency_sum = _cell_sums(cell_lat, G_cells, g_max, constant)
            if constant and cell_lat.ndim == 1:
                row = cell_lat if g_max > 0 else np.zeros_like(cell_lat)
                stats.latency_max = np.broadcast_to(row, S.shape)
            else:
                stats.latency_max = np.where(G_cells > 0, cell_lat, 0.0)
        check_sum_finite(_sum_rows(stats.cost_sum), "cost")
        check_sum_finite(_sum_rows(stats.latency_sum), "latency")
        return cls(
            stats,
            models=models,
            prompts=prompts,
            benchmark=benchmark,
            topic=topic,
            is_binary=True,
        )

    @classmethod
    def from_stats(cls, stats: SufficientStats, **kwargs: Any) -> EvalResults:
        """From (merged) :class:`SufficientStats`; raises on flagged bad values."""
        _raise_flags(stats.flags)
        return cls(stats, **kwargs)

    @classmethod
    def from_frame(
        cls,
        frame: Any,
        *,
        prompt: str = "prompt_id",
        model: str = "model",
        score: str = "score",
        generation: str | None = "generation",
        cost: str | None = None,
        latency: str | None = None,
        benchmark: str | None = None,
        topic: str | None = None,
        backend: str | None = None,
    ) -> EvalResults:
        """From a long table (pandas, polars or pyarrow; also
        :func:`capfront.from_frame`), one row per (prompt, model, generation).

        ``generation`` may be absent from the table (then rows of the same cell are
        generations in table order). Cells may have different numbers of
        generations (held with a mask) and may be missing. Duplicate (prompt,
        model, generation) rows, unknown columns, NaN scores, empty prompt or model
        ids (named by row) and empty tables raise ``ValueError``. Every column here
        is named, so a ``cost`` or ``latency`` column with gaps is an error too
        (fill it or leave the argument out); ``capfront report``, which finds
        columns by name, leaves an auto-detected one with gaps out, with a note.
        """
        from .frames import _dense_from_frame  # pandas: only for tables

        dense = _dense_from_frame(
            frame,
            prompt=prompt,
            model=model,
            score=score,
            generation=generation,
            cost=cost,
            latency=latency,
            benchmark=benchmark,
            topic=topic,
        )
        dense.pop("generations")
        return cls.from_arrays(**dense, backend=backend)

    @classmethod
    def from_count_frame(
        cls,
        frame: Any,
        *,
        prompt: str = "prompt_id",
        model: str = "model",
        successes: str = "n_correct",
        n_draws: str = "n_samples",
        cost: str | None = None,
        latency: str | None = None,
        benchmark: str | None = None,
        topic: str | None = None,
    ) -> EvalResults:
        """From a count table (pandas, polars or pyarrow; also
        :func:`capfront.from_count_frame`), one row per prompt and model: correct
        (``successes``) of drawn (``n_draws``); missing (prompt, model) pairs are
        cells not run."""
        from .frames import count_frame_arrays

        arrays = count_frame_arrays(
            frame,
            prompt=prompt,
            model=model,
            successes=successes,
            n_draws=n_draws,
            cost=cost,
            latency=latency,
            benchmark=benchmark,
            topic=topic,
        )
        return cls.from_counts(**arrays)

    # ------------------------------------------------------------------ views
    @property
    def stats(self) -> SufficientStats:
        return self._stats

    @property
    def n_prompts(self) -> int:
        return int(self._stats.successes.shape[0])

    @property
    def n_models(self) -> int:
        return int(self._stats.successes.shape[1])

    @property
    def successes(self) -> np.ndarray:
        """``(N, L)`` sums of scores: int32 counts for binary data, float64 for
        graded. Read-only by convention."""
        return self._widen("successes")

    @property
    def n_draws(self) -> np.ndarray:
        """``(N, L)`` int draw counts (a read-only broadcast view when every cell
        has the same number)."""
        return self._widen("n_draws")

    def _widen(self, name: str) -> np.ndarray:
        """The stored array, widened once to int32 when it is held in a compact
        (uint8/uint16) dtype, so arithmetic on it cannot overflow or wrap."""
        arr = getattr(self._stats, name)
        if arr.dtype.kind not in "iu" or arr.dtype.itemsize >= 4 or is_broadcast(arr):
            return arr
        if name not in self._wide:
            self._wide[name] = arr.astype(np.int32)
        return self._wide[name]

    @property
    def max_score(self) -> np.ndarray:
        """Best score over each cell's generations (NaN where not run)."""
        return self._stats.max_score

    @property
    def observed(self) -> np.ndarray:
        """``(N, L)`` bool: the model was run on the prompt."""
        return self._stats.n_draws > 0

    @property
    def valid_draws(self) -> np.ndarray | None:
        """``(N, L, G)`` bool: which raw draws are real (the mask, or all of them);
        ``None`` when the raw scores are not kept."""
        if self.scores is None:
            return None
        if self.mask is None:
            return np.ones(np.shape(self.scores), dtype=bool)
        return np.asarray(self.mask, dtype=bool)

    @property
    def is_complete(self) -> bool:
        G = self._stats.constant_draws
        return G > 0 if G is not None else bool(self.observed.all())

    @property
    def max_draws(self) -> int:
        return int(self._stats.n_draws.max())

    @property
    def min_draws(self) -> int:
        """Fewest draws of any observed cell."""
        G = self._stats.constant_draws
        if G is not None:
            return G
        nd = self._stats.n_draws
        return int(nd.min(where=nd > 0, initial=np.iinfo(nd.dtype).max))

    @property
    def p_hat(self) -> np.ndarray:
        """``successes / n_draws`` (NaN where the model was not run)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.observed, self.successes / self.n_draws, np.nan)

    @property
    def has_cost(self) -> bool:
        return self._stats.cost_sum is not None

    @property
    def has_latency(self) -> bool:
        return self._stats.latency_sum is not None

    @property
    def mean_cost(self) -> np.ndarray | None:
        """Mean cost of one generation per cell, ``(N, L)`` (NaN where not run)."""
        return self._cell_mean(self._stats.cost_sum)

    @property
    def mean_latency(self) -> np.ndarray | None:
        return self._cell_mean(self._stats.latency_sum)

    def _cell_mean(self, total: np.ndarray | None) -> np.ndarray | None:
        if total is None:
            return None
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.observed, total / self.n_draws, np.nan)

    # ------------------------------------------------------------------ coverage
    @property
    def common_prompts(self) -> np.ndarray:
        """``(N,)`` bool: the prompts every model was run on (the complete-case
        prompt set on which single models and naive oracles are compared). A model
        run on no prompt at all has no numbers to compare and does not count."""
        if self._stats.constant_draws is not None:
            return np.ones(self.n_prompts, dtype=bool)
        obs = self.observed
        return obs[:, obs.any(axis=0)].all(axis=1)

    @property
    def coverage_note(self) -> str | None:
        """One sentence on incomplete coverage (``None`` when every model ran every
        prompt): which models ran how many prompts, and the rule that follows.

        The rule: single models, the best single model and the naive oracles are
        compared on the prompts every model ran, so that a model run on an easy
        subset cannot look better than the others on numbers from other prompts;
        each model's accuracy on all the prompts it ran is kept as ``accuracy_own``
        in :func:`capfront.single_models`."""
        if self.is_complete:
            return None
        N = self.n_prompts
        ran = self.observed.sum(axis=0)
        part = np.flatnonzero((ran < N) & (ran > 0))
        none = [str(m) for m in self.models[ran == 0]]
        if part.size == 0:
            return (
                f"model(s) {none} ran no prompt: left out of the single models and "
                "the oracles"
            )
        shown = ", ".join(
            f"{self.models[j]} {int(ran[j]):,}/{N:,} ({ran[j] / N:.1%})"
            for j in part[:6]
        ) + (f", and {len(part) - 6} more" if len(part) > 6 else "")
        n_common = int(self.common_prompts.sum())
        head = (
            f"incomplete coverage: {len(part)} of {self.n_models} model(s) ran only "
            f"part of the {N:,} prompts ({shown})"
            + (f" and {none} ran none" if none else "")
        )
        if n_common == 0:
            return (
                f"{head}; no prompt was run by every model, so single models and "
                "naive oracles cannot be compared on the same prompts: select "
                "models that share prompts (res.select(models=[...])) or pass "
                "on='all' to use each model's own prompts"
            )
        return (
            f"{head}; single models, the best single model and the naive oracles "
            f"are compared on the {n_common:,} prompts every model ran (each "
            "model's accuracy on all the prompts it ran: single_models column "
            "accuracy_own; to compare on every prompt, leave the partial models "
            "out with res.select(models=[...]))"
        )

    @property
    def notes(self) -> list[str]:
        """What the loader detected or assumed (``load_notes``) and, with
        incomplete coverage, :attr:`coverage_note`: one sentence each, for reports."""
        cov = self.coverage_note
        return [*self.load_notes, *([cov] if cov else [])]

    @staticmethod
    def _require(obj: object, fname: str) -> EvalResults:
        """``obj`` when it is an :class:`EvalResults`; else the ``TypeError`` of
        :func:`capfront._validate.require_results` naming the function and how to
        build one (for the public functions that take results first)."""
        require_results(obj, fname)
        return obj  # type: ignore[return-value]

    def require_binary(self, what: str) -> None:
        if not self.is_binary:
            raise ValueError(f"{what} needs binary (0/1) scores; these are graded")

    def require_complete(self, what: str) -> None:
        if not self.is_complete:
            missing = int((~self.observed).sum())
            raise ValueError(
                f"{what} needs every model run on every prompt; {missing} cell(s) are "
                "missing (select the models/prompts with full coverage first)"
            )

    def require_draws(self, minimum: int, what: str) -> None:
        if self.min_draws < minimum:
            raise ValueError(
                f"{what} needs at least {minimum} generations per cell; the data has "
                f"as few as {self.min_draws}"
            )

    # ------------------------------------------------------------------ subsets
    def select(
        self,
        prompts: np.ndarray | slice | Sequence[int] | None = None,
        models: Sequence[str] | Sequence[int] | np.ndarray | None = None,
    ) -> EvalResults:
        """Subset by prompt index/mask and by model names or indices."""
        p_idx = _positions(prompts, self.n_prompts, "prompts")
        if models is None:
            m_idx = np.arange(self.n_models)
        else:
            pos = {str(m): i for i, m in enumerate(self.models)}
            try:
                m_idx = np.array(
                    [pos[str(m)] if isinstance(m, str) else int(m) for m in models],
                    dtype=np.int64,
                )
            except KeyError as err:
                raise ValueError(f"unknown model {err.args[0]!r}") from None
            m_idx = _positions(m_idx, self.n_models, "models")
        if len(p_idx) == 0 or len(m_idx) == 0:
            raise ValueError("selection is empty")

        def take(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[np.ix_(p_idx, m_idx)]

        stats = self._stats.take(p_idx, m_idx)
        stats.prompts = stats.models = None

        def take3(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[p_idx][:, m_idx]

        return EvalResults(
            stats,
            models=self.models[m_idx],
            prompts=self.prompts[p_idx],
            benchmark=None if self.benchmark is None else self.benchmark[p_idx],
            topic=None if self.topic is None else self.topic[p_idx],
            is_binary=self.is_binary,
            scores=take3(self.scores),
            mask=take3(self.mask),
            latency=take3(self.latency),
            truth_p=take(self.truth_p),
            truth=self.truth,
            notes=self.load_notes,
        )

    def by_benchmark(self) -> dict[str, EvalResults]:
        """One :class:`EvalResults` per benchmark label (``{"all": self}`` without)."""
        if self.benchmark is None:
            return {"all": self}
        out = {}
        for name in dict.fromkeys(self.benchmark.astype(str)):
            out[name] = self.select(np.flatnonzero(self.benchmark.astype(str) == name))
        return out

    @property
    def true_oracle(self) -> float | None:
        """``mean_n max_l p[n, l]`` from ``truth_p`` (simulated data), else ``None``."""
        if self.truth_p is None:
            return None
        return float(np.nanmax(self.truth_p, axis=1).mean())

    def __repr__(self) -> str:
        kind = "binary" if self.is_binary else "graded"
        g = (
            f"G={self.min_draws}"
            if self.min_draws == self.max_draws
            else f"G={self.min_draws}..{self.max_draws}"
        )
        extra = [
            n
            for n, ok in (
                ("cost", self.has_cost),
                ("latency", self.has_latency),
                ("benchmark", self.benchmark is not None),
                ("topic", self.topic is not None),
            )
            if ok
        ]
        return (
            f"EvalResults(N={self.n_prompts}, L={self.n_models}, {g}, {kind}"
            + (", " + ", ".join(extra) if extra else "")
            + ")"
        )


def _positions(index: Any, n: int, name: str) -> np.ndarray:
    """Positions ``0..n-1`` picked by ``index`` (``None``, a slice, a bool mask of
    length ``n`` or integer positions, negative from the end); a clear error for
    positions out of range or a mask of the wrong length."""
    if index is None:
        return np.arange(n)
    if isinstance(index, slice):
        return np.arange(n)[index]
    arr = np.asarray(index)
    if arr.dtype == np.bool_:
        if arr.shape != (n,):
            raise ValueError(
                f"{name}: a boolean mask must have {n} entries, got shape {arr.shape}"
            )
        return np.flatnonzero(arr)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu" or arr.ndim > 1:
        raise ValueError(
            f"{name} must be integer positions, a boolean mask or a slice, got "
            f"{arr.dtype} shaped {arr.shape}"
        )
    bad = (arr < -n) | (arr >= n)
    if bad.any():
        raise ValueError(
            f"{name}: position {int(arr[bad][0])} is out of range (there are {n} "
            f"{name}: 0..{n - 1})"
        )
    return np.where(arr < 0, arr + n, arr).astype(np.int64).reshape(-1)


#: rows per block of the chunked ``successes <= n_draws`` check of from_counts
_CHECK_ROWS = 1 << 16


def _count_table(values: object, name: str) -> np.ndarray:
    """An integer table in its own dtype (bool as uint8); floats must hold whole
    numbers (:func:`as_int_array`). No int64 copy of a large integer table."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iu":
        return arr
    if arr.dtype.kind == "b":
        return arr.view(np.uint8)
    return as_int_array(arr, name)


def _cell_sums(
    per_draw: np.ndarray, draws: np.ndarray, g: int, constant: bool
) -> np.ndarray:
    """``per_draw * n_draws`` per cell; a broadcast ``(N, L)`` view of one row when
    the values are per model (``(L,)``) and every cell has ``g`` draws."""
    if constant and per_draw.ndim == 1:
        return np.broadcast_to(per_draw * g, draws.shape)
    return np.multiply(np.broadcast_to(per_draw, draws.shape), draws)


def _sum_rows(sums: np.ndarray | None) -> np.ndarray | None:
    """The distinct rows of a row-broadcast array (one row), else the array."""
    if sums is not None and sums.ndim == 2 and sums.strides[0] == 0:
        return sums[:1]
    return sums


def _split_per_draw(
    values: np.ndarray | None,
    shape: tuple[int, int, int],
    name: str,
    allow_full: bool = True,
    per_model: bool = False,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(per-draw array, per-cell array): exactly one is set when ``values`` is.
    ``per_model``: an ``(L,)`` array is returned as it is, not copied to ``(N, L)``."""
    if values is None:
        return None, None
    arr = as_float_array(values, name)
    N, L, G = shape
    check_nonnegative(arr, name)
    if allow_full and arr.shape == shape:
        return arr, None
    if arr.shape == (N, L):
        return None, arr
    if arr.shape == (L,):
        return None, arr if per_model else np.broadcast_to(arr, (N, L)).copy()
    allowed = [str(shape)] if allow_full else []
    allowed += [str((N, L)), str((L,))]
    raise ValueError(f"{name} must be shaped {' or '.join(allowed)}, got {arr.shape}")
