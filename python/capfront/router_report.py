"""The report's router section: routers against the best single model (and the
models tied with it), the oracle and the frontier. :func:`router_section`
computes it (JSON-ready); the renderer :func:`capfront.report_text.router_blocks`
turns it into the report's titled tables (re-exported here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .report_text import router_blocks  # noqa: F401  (re-exported)
from .results import EvalResults

__all__ = ["router_blocks", "router_section"]

_ROW_KEYS = (
    "value",
    "ci",
    "cost",
    "cost_low",
    "cost_high",
    "latency",
    "gain_vs_best",
    "gain_low",
    "gain_high",
    "oracle_gain_share",
    "share_low",
    "share_high",
    "frontier_quality_at_cost",
    "frontier_cost_at_quality",
    "strictly_worse_share",
)


def router_section(
    results: EvalResults,
    routers: Mapping[str, Any],
    *,
    oracle: Any = "pgm",
    oracle_options: Mapping[str, Any] | None = None,
    frontier: Any = None,
    seed: int = 0,
    n_resamples: int = 1000,
    level: float = 0.95,
) -> tuple[dict[str, Any], Any]:
    """(section dict, RouterTable) for ``routers`` (``{name: choices}``)."""
    from .compare import compare, tied_with_best
    from .router import evaluate_router

    table = evaluate_router(
        results,
        dict(routers),
        oracle=oracle,
        oracle_options=oracle_options,
        frontier=frontier,
        seed=seed,
        n_resamples=n_resamples,
        level=level,
    )
    tied = tied_with_best(results, level=level, seed=seed, n_resamples=n_resamples)
    rows = []
    regret = {}
    for name, r in table.routers.items():
        d = r.to_dict()
        row = {"name": name, **{k: d.get(k) for k in _ROW_KEYS}}
        c = compare(results, r, "best", n_resamples=n_resamples, seed=seed, level=level)
        row["p_vs_best"] = c.p_value
        row["p_method"] = c.p_value_method
        gap = r.gap or {}
        row["noise_share_crossfit"] = gap.get("noise_share_crossfit")
        row["noise_share_upper"] = gap.get("noise_share_upper")
        rows.append(row)
        regret[name] = d["regret"]
    first = next(iter(table.routers.values()))
    out = {
        "routers": rows,
        "best_single": tied.to_dict(),
        "regret": regret,
        "oracle_method": first.oracle_method,
        "oracle": first.oracle,
        "level": level,
        "notes": sorted({n for r in table.routers.values() for n in r.notes}),
    }
    return out, table
