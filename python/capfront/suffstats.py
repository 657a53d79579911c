"""Per-cell sufficient statistics of an ``(N, L, G)`` evaluation tensor (design §1).

For every (prompt n, model l) cell, over its valid generations g:
``successes = sum_g phi``, ``sum_sq = sum_g phi^2``, ``n_draws = #g``,
``max_score = max_g phi``, ``cost_sum = sum_g c``, ``latency_sum = sum_g t``,
``latency_max = max_g t``. Binary estimators need only ``successes`` and ``n_draws``.

Statistics of disjoint or overlapping chunks of prompts merge exactly
(:meth:`SufficientStats.merge`), so data larger than memory is reduced chunk by chunk.
"""

from __future__ import annotations

import copy

import numpy as np

from ._kernels import dispatch

_FLAG_NAMES = (
    "nonfinite_scores",
    "out_of_range_scores",
    "nonbinary_scores",
    "bad_cost",
    "bad_latency",
)


def is_broadcast(arr: np.ndarray) -> bool:
    """``arr`` is an ``(N, L)`` broadcast view of one value (no memory per cell)."""
    return arr.ndim == 2 and arr.strides == (0, 0)


def constant_draws(G: int, shape: tuple[int, int]) -> np.ndarray:
    """Read-only ``(N, L)`` view of one draw count: no memory per cell."""
    return np.broadcast_to(np.int32(G), shape)


def count_dtype(max_count: int) -> np.dtype:
    """Smallest unsigned integer dtype that holds ``max_count``."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if max_count <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.int64)


class SufficientStats:
    """Per-cell sums of one chunk of prompts. Arrays are ``(N, L)``.

    Storage is compact: for binary (0/1) scores ``successes`` is an integer array
    and ``sum_sq``/``max_score`` are not stored (they are ``successes`` and
    ``[successes > 0]``, derived on access); ``n_draws`` is a read-only broadcast
    view when every cell has the same number of draws. Treat the arrays as
    read-only.
    """

    def __init__(
        self,
        successes: np.ndarray,
        n_draws: np.ndarray,
        sum_sq: np.ndarray | None = None,
        max_score: np.ndarray | None = None,
        cost_sum: np.ndarray | None = None,
        latency_sum: np.ndarray | None = None,
        latency_max: np.ndarray | None = None,
        prompts: np.ndarray | None = None,
        models: np.ndarray | None = None,
        flags: dict[str, int] | None = None,
    ) -> None:
        self.successes = successes
        self.n_draws = n_draws
        self._sum_sq = sum_sq
        self._max_score = max_score
        self.cost_sum = cost_sum
        self.latency_sum = latency_sum
        self.latency_max = latency_max
        self.prompts = prompts
        self.models = models
        self.flags = dict(flags or {})
        if successes.dtype.kind == "f" and sum_sq is None and self.is_binary:
            raise ValueError("float successes need sum_sq (or use integer counts)")

    @property
    def sum_sq(self) -> np.ndarray:
        """``sum_g phi^2`` per cell (``= successes`` for binary scores)."""
        if self._sum_sq is not None:
            return self._sum_sq
        return np.asarray(self.successes, dtype=np.float64)

    @property
    def max_score(self) -> np.ndarray:
        """``max_g phi`` per cell, NaN where not run (``[successes > 0]`` if binary)."""
        if self._max_score is not None:
            return self._max_score
        return np.where(
            self.n_draws > 0, (self.successes > 0).astype(np.float64), np.nan
        )

    @property
    def n_prompts(self) -> int:
        return int(self.successes.shape[0])

    @property
    def is_binary(self) -> bool:
        return self.flags.get("nonbinary_scores", 0) == 0

    @property
    def constant_draws(self) -> int | None:
        """The one draw count of every cell when ``n_draws`` is a broadcast view,
        else ``None``."""
        return int(self.n_draws[0, 0]) if is_broadcast(self.n_draws) else None

    @property
    def nbytes(self) -> int:
        """Memory held by the per-cell arrays (broadcast views count 0)."""
        return sum(
            value.nbytes
            for value in self.arrays().values()
            if value is not None and not is_broadcast(value)
        )

    def take(self, rows: np.ndarray, cols: np.ndarray) -> SufficientStats:
        """Statistics of the prompts ``rows`` and models ``cols`` (index arrays)."""

        def sub(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[np.ix_(rows, cols)]

        G = self.constant_draws
        return SufficientStats(
            successes=sub(self.successes),  # type: ignore[arg-type]
            n_draws=sub(self.n_draws)  # type: ignore[arg-type]
            if G is None
            else constant_draws(G, (len(rows), len(cols))),
            sum_sq=sub(self._sum_sq),
            max_score=sub(self._max_score),
            cost_sum=sub(self.cost_sum),
            latency_sum=sub(self.latency_sum),
            latency_max=sub(self.latency_max),
            prompts=None if self.prompts is None else self.prompts[rows],
            models=None if self.models is None else self.models[cols],
            flags=self.flags,
        )

    def with_counts(self, successes: np.ndarray) -> SufficientStats:
        """The same cells with new binary success counts (``sum_sq``/``max_score``
        then follow from them)."""
        out = copy.copy(self)
        out.successes = np.asarray(successes).astype(np.int32)
        out._sum_sq = out._max_score = None
        out.flags = {**self.flags, "nonbinary_scores": 0}
        return out

    def merge(self, other: SufficientStats) -> SufficientStats:
        """Combine two chunks (see :meth:`concat`)."""
        return SufficientStats.concat([self, other])

    @staticmethod
    def concat(parts: list[SufficientStats]) -> SufficientStats:
        """Combine chunks in one pass: prompts and models are united by label (in order
        of first appearance); a cell seen in several chunks adds its sums and counts
        and takes the larger maxima. Exact for counts; float sums are added in chunk
        order. Counts are stored in the smallest unsigned dtype that holds them."""
        parts = list(parts)
        if not parts:
            raise ValueError("no chunks to combine")
        for part in parts:
            if part.prompts is None or part.models is None:
                raise ValueError(
                    "combining sufficient statistics needs prompt and model labels"
                )
        for name in ("cost_sum", "latency_sum"):
            if len({getattr(part, name) is None for part in parts}) > 1:
                raise ValueError(f"cannot combine chunks with and without {name[:-4]}")
        import pandas as pd

        p_codes, prompts = pd.factorize(
            _concat_labels([part.prompts for part in parts])
        )
        m_codes, models = pd.factorize(_concat_labels([part.models for part in parts]))
        N, L = len(prompts), len(models)
        rows, cols = [], []
        p_off = m_off = 0
        for part in parts:
            n, m = part.successes.shape
            rows.append(p_codes[p_off : p_off + n])
            cols.append(m_codes[m_off : m_off + m])
            p_off += n
            m_off += m
        disjoint = p_off == N  # no prompt in two chunks: plain placement
        binary = all(part.successes.dtype.kind in "iu" for part in parts)
        # one G everywhere stays a broadcast view when every chunk has all models
        one_G = {part.constant_draws for part in parts}
        if not (disjoint and all(len(c) == L for c in cols)) or None in one_G:
            one_G = set()
        most = [int(part.n_draws.max()) for part in parts]
        bound = max(most) if disjoint else sum(most)  # largest possible count
        out: dict[str, np.ndarray | None] = {}
        for name, fill, combine in (
            ("successes", 0, np.add),
            ("n_draws", 0, np.add),
            ("_sum_sq", 0.0, np.add),
            ("_max_score", -np.inf, np.fmax),
            ("cost_sum", 0.0, np.add),
            ("latency_sum", 0.0, np.add),
            ("latency_max", 0.0, np.fmax),
        ):
            if name == "n_draws" and len(one_G) == 1:
                out[name] = constant_draws(one_G.pop(), (N, L))
                continue
            derived = name in ("_sum_sq", "_max_score") and binary
            if derived or getattr(parts[0], name.lstrip("_")) is None:
                out[name] = None
                continue
            if name == "n_draws" or (name == "successes" and binary):
                dtype = count_dtype(bound)
            else:
                dtype = np.dtype(np.float64)
            acc = np.full((N, L), fill, dtype=dtype)
            for part, r, c in zip(parts, rows, cols, strict=True):
                values = getattr(part, name.lstrip("_"))
                if name == "_max_score":
                    values = np.where(np.isnan(values), -np.inf, values)
                if disjoint:
                    acc[np.ix_(r, c)] = values
                else:
                    flat = (r[:, None] * L + c[None, :]).ravel()
                    combine.at(acc.reshape(-1), flat, values.ravel().astype(dtype))
            out[name] = acc
        max_score = out["_max_score"]
        if max_score is not None:
            max_score[np.isinf(max_score)] = np.nan
        flags = {k: sum(part.flags.get(k, 0) for part in parts) for k in _FLAG_NAMES}
        return SufficientStats(
            successes=out["successes"],  # type: ignore[arg-type]
            n_draws=out["n_draws"],  # type: ignore[arg-type]
            sum_sq=out["_sum_sq"],
            max_score=out["_max_score"],
            cost_sum=out["cost_sum"],
            latency_sum=out["latency_sum"],
            latency_max=out["latency_max"],
            prompts=np.asarray(prompts),
            models=np.asarray(models, dtype=object),
            flags=flags,
        )

    def arrays(self) -> dict[str, np.ndarray | None]:
        """The stored per-cell arrays (``sum_sq``/``max_score`` are ``None`` when
        derived from the counts)."""
        return {
            "successes": self.successes,
            "sum_sq": self._sum_sq,
            "n_draws": self.n_draws,
            "max_score": self._max_score,
            "cost_sum": self.cost_sum,
            "latency_sum": self.latency_sum,
            "latency_max": self.latency_max,
        }

    def __repr__(self) -> str:
        N, L = self.successes.shape
        kind = "binary" if self.is_binary else "graded"
        return f"SufficientStats(N={N}, L={L}, {kind}, {self.nbytes / 1e6:.1f} MB)"


def _concat_labels(arrays: list[np.ndarray]) -> np.ndarray:
    """Concatenate label arrays, keeping integer labels numeric (compact)."""
    arrays = [np.asarray(a) for a in arrays]
    if all(a.dtype.kind in "iu" for a in arrays):
        return np.concatenate(arrays)
    return np.concatenate([a.astype(object) for a in arrays])


def _native(arr: np.ndarray | None, dtype=None) -> np.ndarray | None:
    if arr is None:
        return None
    arr = np.asarray(arr) if dtype is None else np.asarray(arr, dtype=dtype)
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return np.ascontiguousarray(arr)


def sufficient_stats(
    scores: np.ndarray,
    mask: np.ndarray | None = None,
    cost: np.ndarray | None = None,
    latency: np.ndarray | None = None,
    *,
    prompts: np.ndarray | None = None,
    models: np.ndarray | None = None,
    backend: str | None = None,
) -> SufficientStats:
    """Fused per-cell statistics of ``scores`` shaped ``(N, L, G)``.

    ``scores`` may be bool, uint8, float32 or float64 (others are converted);
    ``mask``, ``cost`` and ``latency`` must have the shape of ``scores``. Invalid
    values are counted in ``.flags``, not raised: :class:`EvalResults` raises.
    """
    scores = np.asarray(scores)
    if scores.ndim != 3:
        raise ValueError(f"scores must be shaped (N, L, G), got {scores.shape}")
    if scores.dtype.kind not in "biuf":
        raise ValueError(f"scores must be numeric or boolean, got dtype {scores.dtype}")
    for arr, what in ((mask, "mask"), (cost, "cost"), (latency, "latency")):
        if arr is not None and np.shape(arr) != scores.shape:
            raise ValueError(
                f"{what} must have the shape of scores {scores.shape}, "
                f"got {np.shape(arr)}"
            )
    mask_u8 = None if mask is None else _native(mask, np.bool_).view(np.uint8)
    cost = _native(cost, np.float64)
    latency = _native(latency, np.float64)
    raw = dispatch("sufficient_stats", backend)(scores, mask_u8, cost, latency)
    flags = {k: int(raw[k]) for k in _FLAG_NAMES}
    return _compact(raw, flags, scores.shape, mask is None, prompts, models)


def _compact(
    raw: dict,
    flags: dict[str, int],
    shape: tuple[int, ...],
    no_mask: bool,
    prompts: np.ndarray | None,
    models: np.ndarray | None,
) -> SufficientStats:
    """One storage for every backend: counts in the smallest unsigned dtype that
    holds ``G`` (uint8 up to 255 draws, as :meth:`EvalResults.from_counts` stores
    them; the C++ kernel writes them so) and no ``sum_sq``/``max_score`` for binary
    scores, a broadcast ``n_draws`` without a mask."""
    N, L, G = shape
    successes, sum_sq, max_score = raw["successes"], raw["sum_sq"], raw["max_score"]
    clean = not (flags["nonfinite_scores"] or flags["out_of_range_scores"])
    if clean and flags["nonbinary_scores"] == 0:
        successes = np.asarray(successes).astype(count_dtype(G), copy=False)
        sum_sq = max_score = None
    elif successes.dtype.kind in "iu":  # byte scores with values > 1 (flagged)
        successes = successes.astype(np.float64)
    n_draws = raw["n_draws"]
    if no_mask or n_draws is None:
        n_draws = constant_draws(G, (N, L))
    else:
        n_draws = np.asarray(n_draws).astype(np.int32, copy=False)
    return SufficientStats(
        successes=successes,
        n_draws=n_draws,
        sum_sq=sum_sq,
        max_score=max_score,
        cost_sum=raw["cost_sum"],
        latency_sum=raw["latency_sum"],
        latency_max=raw["latency_max"],
        prompts=None if prompts is None else _label_array(prompts),
        models=None if models is None else np.asarray(models, dtype=object),
        flags=flags,
    )


def _label_array(values: np.ndarray) -> np.ndarray:
    arr = np.asarray(values)
    return arr if arr.dtype.kind in "iu" else arr.astype(object)


def raise_flags(flags: dict[str, int]) -> None:
    """``ValueError`` for the bad values :func:`sufficient_stats` flagged
    (non-finite or out-of-range scores, bad cost or latency)."""
    if flags.get("nonfinite_scores"):
        raise ValueError(
            f"scores contain {flags['nonfinite_scores']} NaN or inf value(s)"
        )
    if flags.get("out_of_range_scores"):
        raise ValueError(
            f"scores must lie in [0, 1]; {flags['out_of_range_scores']} value(s) are "
            "outside"
        )
    if flags.get("bad_cost"):
        raise ValueError(f"cost has {flags['bad_cost']} negative, NaN or inf value(s)")
    if flags.get("bad_latency"):
        raise ValueError(
            f"latency has {flags['bad_latency']} negative, NaN or inf value(s)"
        )
