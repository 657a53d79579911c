"""Per-cell sufficient statistics of an ``(N, L, G)`` evaluation tensor (SPEC 1).

For every (prompt n, model l) cell, over its valid generations g:
``successes = sum_g phi``, ``sum_sq = sum_g phi^2``, ``n_draws = #g``,
``max_score = max_g phi``, ``cost_sum = sum_g c``, ``latency_sum = sum_g t``,
``latency_max = max_g t``. Binary estimators need only ``successes`` and ``n_draws``.

Statistics of disjoint or overlapping chunks of prompts merge exactly
(:meth:`SufficientStats.merge`), so data larger than memory is reduced chunk by chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from ._backend import core, resolve_backend
from ._numba_kernels import suffstats_nb

_FLAG_NAMES = (
    "nonfinite_scores",
    "out_of_range_scores",
    "nonbinary_scores",
    "bad_cost",
    "bad_latency",
)


@dataclass
class SufficientStats:
    """Per-cell sums of one chunk of prompts. Arrays are ``(N, L)``."""

    successes: np.ndarray
    sum_sq: np.ndarray
    n_draws: np.ndarray
    max_score: np.ndarray
    cost_sum: np.ndarray | None = None
    latency_sum: np.ndarray | None = None
    latency_max: np.ndarray | None = None
    prompts: np.ndarray | None = None
    models: np.ndarray | None = None
    flags: dict[str, int] = field(default_factory=dict)

    @property
    def n_prompts(self) -> int:
        return int(self.successes.shape[0])

    @property
    def is_binary(self) -> bool:
        return self.flags.get("nonbinary_scores", 0) == 0

    def merge(self, other: SufficientStats) -> SufficientStats:
        """Combine two chunks (see :meth:`concat`)."""
        return SufficientStats.concat([self, other])

    @staticmethod
    def concat(parts: list[SufficientStats]) -> SufficientStats:
        """Combine chunks in one pass: prompts and models are united by label (in order
        of first appearance); a cell seen in several chunks adds its sums and counts
        and takes the larger maxima. Exact for counts; float sums are added in chunk
        order."""
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
            np.concatenate([np.asarray(part.prompts, dtype=object) for part in parts])
        )
        m_codes, models = pd.factorize(
            np.concatenate([np.asarray(part.models, dtype=object) for part in parts])
        )
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
        out: dict[str, np.ndarray | None] = {}
        for name, fill, combine in (
            ("successes", 0.0, np.add),
            ("sum_sq", 0.0, np.add),
            ("n_draws", 0, np.add),
            ("max_score", -np.inf, np.fmax),
            ("cost_sum", 0.0, np.add),
            ("latency_sum", 0.0, np.add),
            ("latency_max", 0.0, np.fmax),
        ):
            if getattr(parts[0], name) is None:
                out[name] = None
                continue
            dtype = np.int64 if name == "n_draws" else np.float64
            acc = np.full((N, L), fill, dtype=dtype)
            for part, r, c in zip(parts, rows, cols, strict=True):
                values = getattr(part, name)
                if name == "max_score":
                    values = np.where(np.isnan(values), -np.inf, values)
                if disjoint:
                    acc[np.ix_(r, c)] = values
                else:
                    flat = (r[:, None] * L + c[None, :]).ravel()
                    combine.at(acc.reshape(-1), flat, values.ravel())
            out[name] = acc
        max_score = out["max_score"]
        assert max_score is not None
        max_score[np.isinf(max_score)] = np.nan
        flags = {k: sum(part.flags.get(k, 0) for part in parts) for k in _FLAG_NAMES}
        return SufficientStats(
            **out,  # type: ignore[arg-type]
            prompts=np.asarray(prompts, dtype=object),
            models=np.asarray(models, dtype=object),
            flags=flags,
        )

    def arrays(self) -> dict[str, np.ndarray | None]:
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("prompts", "models", "flags")
        }


def _suffstats_np(scores, mask, cost, latency) -> dict:
    """Plain NumPy reference."""
    x = np.asarray(scores, dtype=np.float64)
    valid = np.ones(x.shape, bool) if mask is None else np.asarray(mask, bool)
    xv = np.where(valid, x, 0.0)
    finite = np.isfinite(x) & valid
    out = {
        "successes": xv.sum(axis=-1),
        "sum_sq": (xv * xv).sum(axis=-1),
        "n_draws": valid.sum(axis=-1).astype(np.int64),
        "max_score": np.where(valid, x, -np.inf).max(axis=-1, initial=-np.inf),
        "nonfinite_scores": int((valid & ~np.isfinite(x)).sum()),
        "out_of_range_scores": int((finite & ((x < 0) | (x > 1))).sum()),
        "nonbinary_scores": int((finite & (x != 0) & (x != 1)).sum()),
        "cost_sum": None,
        "latency_sum": None,
        "latency_max": None,
        "bad_cost": 0,
        "bad_latency": 0,
    }
    out["max_score"][out["n_draws"] == 0] = np.nan
    if cost is not None:
        c = np.asarray(cost, dtype=np.float64)
        out["cost_sum"] = np.where(valid, c, 0.0).sum(axis=-1)
        out["bad_cost"] = int((valid & ~(np.isfinite(c) & (c >= 0))).sum())
    if latency is not None:
        t = np.asarray(latency, dtype=np.float64)
        out["latency_sum"] = np.where(valid, t, 0.0).sum(axis=-1)
        out["latency_max"] = np.where(valid, t, 0.0).max(axis=-1, initial=0.0)
        out["bad_latency"] = int((valid & ~(np.isfinite(t) & (t >= 0))).sum())
    return out


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
    name = resolve_backend(backend)
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
    if name == "cpp":
        s = (
            scores
            if scores.dtype.kind in "bf" or scores.dtype == np.uint8
            else (scores.astype(np.float64))
        )
        raw = core().sufficient_stats(_native(s), mask_u8, cost, latency)
    elif name == "numba":
        s = (
            scores
            if scores.dtype in (np.bool_, np.uint8, np.float32)
            else (scores.astype(np.float64))
        )
        s = _native(s)
        if s.dtype == np.bool_:
            s = s.view(np.uint8)
        raw = suffstats_nb(s, mask_u8, cost, latency)
    else:
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: flagged
            raw = _suffstats_np(scores, mask, cost, latency)
    flags = {k: int(raw[k]) for k in _FLAG_NAMES}
    return SufficientStats(
        successes=raw["successes"],
        sum_sq=raw["sum_sq"],
        n_draws=raw["n_draws"],
        max_score=raw["max_score"],
        cost_sum=raw["cost_sum"],
        latency_sum=raw["latency_sum"],
        latency_max=raw["latency_max"],
        prompts=None if prompts is None else np.asarray(prompts, dtype=object),
        models=None if models is None else np.asarray(models, dtype=object),
        flags=flags,
    )
