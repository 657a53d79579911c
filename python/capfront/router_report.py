"""The report's router section: routers against the best single model (and the
models tied with it), the oracle and the frontier. :func:`router_section`
computes it (JSON-ready), :func:`router_blocks` renders it as the report's
titled tables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


def router_blocks(sec: Any) -> list[tuple[str, list[str], list[list[str]], list[str]]]:
    """The section as report blocks (title, header, rows, notes)."""
    from .report import fmt

    if not isinstance(sec, Mapping):
        return []
    title = "Routers (paired prompt bootstrap)"
    if "skipped" in sec:
        return [(title, [], [], [sec["skipped"]])]
    lvl = sec.get("level", 0.95)

    def with_ci(r: Mapping[str, Any], key: str, lo: str, hi: str, k: str = "") -> str:
        return f"{fmt(r.get(key), k)} [{fmt(r.get(lo), k)}, {fmt(r.get(hi), k)}]"

    routers = sec.get("routers", [])
    header = [
        "router",
        f"accuracy [{lvl:.0%} CI]",
        "mean cost [CI]",
        "gain vs best single [CI]",
        "p vs best",
    ]
    body = []
    for r in routers:
        ci = r.get("ci") or [None, None]
        body.append(
            [
                str(r["name"]),
                f"{fmt(r.get('value'))} [{fmt(ci[0])}, {fmt(ci[1])}]",
                with_ci(r, "cost", "cost_low", "cost_high"),
                with_ci(r, "gain_vs_best", "gain_low", "gain_high"),
                fmt(r.get("p_vs_best")),
            ]
        )
    methods = sorted({str(r.get("p_method")) for r in routers if r.get("p_method")})
    notes = [
        "paired prompt bootstrap: every number resampled with the same prompts "
        "(the best single model re-chosen in each resample)",
        *(["p vs best: " + "; ".join(methods)] if methods else []),
        *sec.get("notes", []),
    ]
    header2 = [
        "router",
        "oracle-gain share [CI]",
        "frontier acc @ cost",
        "frontier cost @ acc",
        "worse picks",
        "noise share (ub)",
    ]
    body2 = [
        [
            str(r["name"]),
            with_ci(r, "oracle_gain_share", "share_low", "share_high", "share"),
            fmt(r.get("frontier_quality_at_cost")),
            fmt(r.get("frontier_cost_at_quality")),
            fmt(r.get("strictly_worse_share"), "share"),
            f"{fmt(r.get('noise_share_crossfit'), 'share')} "
            f"({fmt(r.get('noise_share_upper'), 'share')})",
        ]
        for r in routers
    ]
    notes2 = [
        f"oracle-gain share = (R - best single) / (O - best single), O = the "
        f"debiased oracle ({sec.get('oracle_method')}) = {fmt(sec.get('oracle'))}",
        "worse picks: prompts where the chosen model's estimate is strictly below "
        "that prompt's best model (per-model regret table in report.json)",
        "noise share = Delta / (O_exp - R) at the cross-fit end (ub: its one-sided "
        "upper bound, the router's own noise included); frontier acc @ cost: the "
        "frontier's accuracy at the router's cost, frontier cost @ acc: its least "
        "cost reaching the router's accuracy",
    ]
    out = [
        (title, header, body, notes),
        ("Routers against the oracle and the frontier", header2, body2, notes2),
    ]
    tied = sec.get("best_single") or {}
    if tied.get("table"):
        rows = [
            [
                str(t["model"]),
                fmt(t.get("accuracy")),
                fmt(t.get("difference")),
                fmt(t.get("p_holm")),
                fmt(bool(t.get("tied"))),
            ]
            for t in tied["table"]
            if t.get("tied") or t["model"] == tied.get("best")
        ]
        n_other = len(tied.get("tied", [])) - 1
        note = (
            f"the best single model ({tied.get('best')}) is not distinguishable "
            f"from {n_other} other model(s): Holm-adjusted paired tests at "
            f"alpha = {tied.get('alpha', 0.05):.2g}"
            if n_other > 0
            else f"the best single model ({tied.get('best')}) beats every other "
            f"model (Holm-adjusted paired tests at alpha = "
            f"{tied.get('alpha', 0.05):.2g})"
        )
        out.append(
            (
                "Best single model and the models tied with it",
                ["model", "accuracy", "best minus model", "p (Holm)", "tied"],
                rows,
                [note, f"tests: {tied.get('p_value_method')}"],
            )
        )
    return out
