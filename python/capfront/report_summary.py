"""The report's "What this means" paragraph (:func:`summary`), generated from the
numbers of the report's JSON-ready dict: the naive and debiased oracle against the
best single model, the frontier's savings and the gap's split."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .report_cells import _names, fmt, pct, plain


# ---------------------------------------------------------------------- summary
def _g(data: Mapping[str, Any]) -> tuple[int, int]:
    dr = (data.get("data") or {}).get("draws_per_cell") or {}
    return int(dr.get("min") or 0), int(dr.get("max") or 0)


def _unit_cost(data: Mapping[str, Any]) -> bool:
    d = data.get("data") or {}
    return bool(d) and not d.get("cost")


def _pooled_row(fr: Any) -> Mapping[str, Any] | None:
    if not isinstance(fr, Mapping):
        return None
    rows = fr.get("versus_best_single")
    if not isinstance(rows, list) or not rows:
        return None
    for r in rows:
        if r.get("benchmark") == "all":
            return r
    return rows[0] if len(rows) == 1 else None


def _range(r: Mapping[str, Any], key: str) -> str:
    lo, hi = r.get(f"{key}_low"), r.get(f"{key}_high")
    if lo is None or hi is None:
        return ""
    return f" (bootstrap interval {pct(lo, 0)} to {pct(hi, 0)})"


def summary(data: Mapping[str, Any]) -> list[str]:
    """The "What this means" paragraphs, from the numbers."""
    out: list[str] = []
    d = data.get("data") or {}
    src = data.get("source") or {}
    gmin, gmax = _g(data)
    if d:
        draws = f"{gmin}" if gmin == gmax else f"{gmin} to {gmax}"
        bm = d.get("benchmarks")
        lead = (
            f"{d['n_prompts']:,} prompts x {d['n_models']} models, {draws} "
            f"draw{'s' if gmax > 1 else ''} per prompt and model"
            + (f", {len(bm)} benchmarks" if bm else "")
            + "."
        )
        if _unit_cost(data):
            lead += (
                " The data has no cost: every generation counts as one unit, so "
                "routing is compared with the best model at one generation per "
                "prompt, and cost savings cannot be measured."
            )
        elif src.get("cost") and "stand-in" in str(src.get("cost")):
            lead += f" Cost is a {plain(src['cost'])}."
        out.append(lead)
    sm = data.get("single_models") or {}
    best = sm.get("best") if isinstance(sm, Mapping) else None
    if not best:
        return out
    name = _names(data).get(best["model"], best["model"])
    binary = d.get("scores", "binary") == "binary"
    sentence = f"The best single model, {name}, " + (
        f"gets {pct(best['accuracy'])} of the prompts right."
        if binary
        else f"scores {fmt(best['accuracy'])} on average."
    )
    deb = data.get("debiased_oracle")
    plug = ((data.get("naive_oracles") or {}).get("prehoc") or {}).get("value")
    if isinstance(deb, Mapping) and deb.get("value") is not None:
        ci = deb.get("ci")
        lvl = f"{100 * float(deb.get('level') or 0.95):.0f}%"
        interval = (
            f" ({lvl} interval {pct(ci[0])} to {pct(ci[1])})"
            if ci and None not in ci
            else ""
        )
        sentence += (
            " Sending each prompt to the model that is best at it (the oracle) "
            f"would reach {pct(deb['value'])}{interval}."
        )
        if plug is not None:
            sentence += (
                f" The plug-in estimate, {pct(plug)}, takes each prompt's best "
                "observed success rate and so is biased upward (a maximum of "
                "noisy estimates); the debiased value removes that bias."
            )
    elif plug is not None:
        sentence += (
            f" Sending each prompt to the model that did best on it would reach "
            f"{pct(plug)}"
        )
        if gmax < 2:
            sentence += (
                ". With one draw per prompt and model this is an upper end: a "
                "lucky draw counts as a solved prompt, and how lucky cannot be "
                "measured from one draw."
            )
        else:
            sentence += " (plug-in estimate, biased upward)."
    out.append(sentence)
    out += _frontier_summary(data, name)
    out += _gap_summary(data, name, gmax)
    return out


def _frontier_summary(data: Mapping[str, Any], name: str) -> list[str]:
    fr = data.get("frontier") or {}
    row = _pooled_row(fr.get("prehoc"))
    if row is None:
        return []
    er, cr = row.get("error_reduction"), row.get("cost_reduction")
    parts = []
    if _unit_cost(data):
        if er is not None:
            parts.append(
                f"At one generation per prompt, routing cuts the error rate of "
                f"{name} by {pct(er, 0)}{_range(row, 'error_reduction')}."
            )
    else:
        if er is not None:
            parts.append(
                f"Routing along the cost-quality frontier cuts the error rate by "
                f"{pct(er, 0)}{_range(row, 'error_reduction')} at {name}'s cost"
            )
        if cr is not None:
            parts.append(
                ("or " if parts else "Routing ")
                + f"reaches its accuracy at {pct(cr, 0)} lower cost"
                + _range(row, "cost_reduction")
            )
        if parts:
            parts = [", ".join(parts) + "."]
    deb_row = _pooled_row(fr.get("prehoc_debiased"))
    if parts and deb_row and deb_row.get("error_reduction") is not None:
        der = deb_row["error_reduction"]
        why = (
            " (observed rates overstate routing's gain as the plug-in overstates "
            "the oracle)"
            if er is not None and der < er
            else ""
        )
        parts.append(
            "With debiased per-cell success rates the error-rate reduction is "
            f"{pct(der, 0)}{why}."
        )
    return [" ".join(parts)] if parts else []


def _gap_summary(data: Mapping[str, Any], name: str, gmax: int) -> list[str]:
    gap = data.get("gap_decomposition")
    if isinstance(gap, Mapping) and isinstance(gap.get("noise_share"), Mapping):
        share = gap["noise_share"].get("upper_bound")
        if share is None:
            return []
        lvl = f"{100 * float(gap.get('level') or 0.95):.0f}%"
        verdict = (
            "The gain is mostly real"
            if share < 0.5
            else "Much of the gain may be luck of single draws"
        )
        return [
            f"{verdict}: single-draw noise explains at most {pct(share, 0)} of the "
            f"gap between {name} and the single-draw union oracle "
            f"({lvl} bound, gap decomposition below)."
        ]
    if gmax < 2:
        return [
            "With one draw per prompt and model, real routing gain and lucky draws "
            "cannot be told apart; 20 or more draws per prompt and model would."
        ]
    if isinstance(gap, Mapping) and "skipped" in gap:
        return [
            "Whether the gain is real or luck of single draws needs 20 or more "
            f"draws per prompt and model (the gap decomposition); this data has "
            f"{_g(data)[0]}."
        ]
    return []
