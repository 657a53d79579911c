"""The report in words and tables: what ``capfront report`` prints (rich) and
writes (``report.md``), from the JSON-ready dict :func:`capfront.report.build_report`
makes.

Rules the text keeps (tests check them):

- one number, one interval: each estimate is shown with the one interval its
  method quotes, said in plain words; other intervals stay in the JSON;
- no internal labels (formula-sheet section numbers, design-note ids, code
  names of standard errors): plain words, with a pointer to the docs;
- a file is named only when it was written (``data["files"]``), otherwise the text
  says how to get it;
- a short "What this means" paragraph first, generated from the numbers;
- tables fit a 100-column terminal: long model names are shortened (run prefixes
  dropped, with a note) and text columns wrap instead of being cut.

:func:`blocks` turns the dict into titled tables (:class:`Block`), shared by
:func:`to_markdown`, :func:`print_rich` and the HTML page
(:mod:`capfront.report_html`). Each section has a renderer in
:data:`RENDERERS`; a section without one is shown as a generic table.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from ._names import short_names, shortened

DOCS_ESTIMATORS = "docs/estimators.md"
DOCS_FRONTIER = "docs/frontier.md"
#: the width the tables are made to fit
WIDTH = 100
#: model names longer than this are shortened in tables other than the model list
NAME_WIDTH = 26
MAX_MODELS = 15


class Block(NamedTuple):
    """A titled table: ``header`` and ``rows`` of strings, ``notes`` below it."""

    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str]


class Prose(Block):
    """A block of paragraphs (``notes``), no table."""


# ---------------------------------------------------------------------- cells
def fmt(value: Any, key: str = "") -> str:
    """A cell: percentages for reductions, shares and coverages, 4 decimals
    otherwise."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if not math.isfinite(x):
            return "-"
        if any(w in key for w in ("reduction", "share", "coverage")) and abs(x) <= 5:
            return f"{100 * x:.1f}%".replace("-0.0%", "0.0%")
        if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e7):
            return f"{x:.3g}"
        return f"{x:,.2f}" if abs(x) >= 10 else f"{x:.4f}"
    if isinstance(value, list):
        if len(value) == 2 and all(
            isinstance(v, (int, float)) or v is None for v in value
        ):
            return f"[{fmt(value[0], key)}, {fmt(value[1], key)}]"
        return ", ".join(fmt(v, key) for v in value[:6]) + (
            " ..." if len(value) > 6 else ""
        )
    if isinstance(value, dict):
        return ", ".join(f"{k}={fmt(v, k)}" for k, v in list(value.items())[:6])
    return str(value)


def pct(x: Any, digits: int = 1) -> str:
    """``0.8856 -> '88.6%'``; ``'-'`` for None."""
    if x is None or not math.isfinite(float(x)):
        return "-"
    return f"{100 * float(x):.{digits}f}%"


_INTERNAL = [
    (re.compile(r"\s*\((?:SPEC|seed)\s+[\w.\- ,]+\)"), ""),
    # the docstrings' "(design §4c)" cites docs/design.md: not for the report
    (re.compile(r"\s*\(design §\d+[a-f]?\)"), ""),
    (re.compile(r"\b(?:SPEC|seed)\s+\d+[a-z]?(?:\s*[-,]\s*\d+[a-z]?)*\b,?\s*"), ""),
    (re.compile(r"cluster-robust SE over (\d+) clusters"), "__CLUSTERS__\\1"),
]


def plain(text: Any) -> str:
    """Text from elsewhere (skip reasons, notes) without internal labels: section
    numbers of the formula sheet and design-note ids go, a cluster-robust standard
    error is said in words."""
    s = str(text)
    for pattern, repl in _INTERNAL:
        s = pattern.sub(repl, s)
    s = re.sub(
        r"__CLUSTERS__(\d+)",
        lambda m: _cluster_words(int(m.group(1))),
        s,
    )
    return re.sub(r"\s{2,}", " ", s).strip()


def _cluster_words(n: int) -> str:
    words = (
        f"a standard error that treats the prompts of each of the {n} groups "
        "(benchmarks or topics) as related"
    )
    if n < 10:
        words += f"; with only {n} groups it is itself rough"
    return words


def _files(data: Mapping[str, Any]) -> list[str]:
    return list(data.get("files") or [])


def where_json(data: Mapping[str, Any]) -> str:
    """Where the full JSON is: the written file, or how to get it."""
    if "report.json" in _files(data):
        return "in report.json"
    return "in the JSON report (--json, or --out DIR writes DIR/report.json)"


def _names(data: Mapping[str, Any]) -> dict[str, str]:
    sm = data.get("single_models") or {}
    models = [r.get("model") for r in (sm.get("models") or []) if r.get("model")]
    return short_names(models, NAME_WIDTH)


def _name_note(data: Mapping[str, Any], used: list[str]) -> list[str]:
    """A note when some names in ``used`` were shortened."""
    mapping = _names(data)
    cut = {k: v for k, v in shortened(mapping).items() if k in used}
    if not cut:
        return []
    return [
        "model names shortened (the prefix before the model's own name dropped, e.g. "
        f"{next(iter(cut.values()))} = {next(iter(cut))}); full names in the "
        "single-models table"
    ]


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
        parts.append(
            "With debiased per-cell success rates the error-rate reduction is "
            f"{pct(deb_row['error_reduction'], 0)}."
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


# ---------------------------------------------------------------------- sections
Renderer = Callable[[Mapping[str, Any]], list[Block]]


def _data_blocks(data: Mapping[str, Any]) -> list[Block]:
    src = data.get("source") or {}
    d = data.get("data") or {}
    rows = []
    if src.get("path"):
        fmt_ = f" (format: {src['format']})" if src.get("format") else ""
        rows.append(["source", f"{src['path']}{fmt_}"])
    if d:
        gmin, gmax = _g(data)
        g = str(gmin) if gmin == gmax else f"{gmin} to {gmax}"
        rows += [
            [
                "shape",
                f"{d['n_prompts']:,} prompts x {d['n_models']} models, "
                f"{g} draw{'s' if gmax > 1 else ''} per prompt and model",
            ],
            ["scores", str(d.get("scores"))],
            [
                "coverage",
                "complete"
                if d.get("complete")
                else f"{fmt(d.get('missing_cells'))} (prompt, model) cells not run",
            ],
            [
                "cost",
                plain(src.get("cost"))
                if src.get("cost")
                else (
                    "yes"
                    if d.get("cost")
                    else "none given: every generation counts as one unit"
                ),
            ],
            ["latency", "yes" if d.get("latency") else "none"],
        ]
        bm = d.get("benchmarks")
        if bm:
            names = ", ".join(f"{k} ({v})" for k, v in list(bm.items())[:8])
            rows.append(
                ["benchmarks", f"{len(bm)}: {names}" + (" ..." if len(bm) > 8 else "")]
            )
    cols = src.get("columns") or {}
    if cols:
        rows.append(["columns", ", ".join(f"{k} = {v}" for k, v in cols.items())])
    notes = [plain(n) for n in (src.get("notes") or [])]
    return [Block("Data", ["", ""], rows, notes)]


def _single_blocks(data: Mapping[str, Any]) -> list[Block]:
    sm = data.get("single_models")
    if not (isinstance(sm, Mapping) and "models" in sm):
        return []
    models = sm["models"]
    cols = [
        ("model", "model"),
        ("accuracy", "accuracy"),
        ("mean_cost", "mean cost"),
        ("mean_latency", "mean latency"),
        ("p95_latency", "P95 latency"),
        ("n_prompts", "prompts"),
    ]
    cols = [(k, h) for k, h in cols if models and k in models[0]]
    if _unit_cost(data):
        cols = [(k, h) for k, h in cols if k != "mean_cost"]
    body = [[fmt(r.get(k), k) for k, _ in cols] for r in models[:MAX_MODELS]]
    notes = []
    if len(models) > MAX_MODELS:
        notes.append(f"{len(models) - MAX_MODELS} more models {where_json(data)}")
    return [
        Block("Single models (most accurate first)", [h for _, h in cols], body, notes)
    ]


def _interval_words(deb: Mapping[str, Any]) -> str:
    """What the quoted interval is made of, in plain words."""
    note = deb.get("ci_note") or (deb.get("details") or {}).get("ci_method") or ""
    note = str(note)
    low = note.lower()
    if "the audit measured" in low and "+- " in note:
        # "<method> estimate, +- 1.96 x the largest error (RMSE) the audit measured
        # ...": the estimator's own description, in words
        rest = note.split("+- ", 1)[1].replace(" x ", " times ", 1)
        return "the estimate plus or minus " + plain(
            rest.replace("(RMSE)", "(root mean squared)")
        )
    if note.startswith("capfront.audit"):
        target = "the prompt population" if "population" in low else "these prompts"
        return (
            "the estimate plus or minus z times the error (root mean squared) the "
            "audit measured for this method on simulated data shaped like this "
            f"data; it covers the oracle of {target}"
        )
    if note.startswith("capfront.bootstrap"):
        return (
            "a percentile bootstrap over prompts (prompts resampled with "
            "replacement, the estimate recomputed each time); it targets the "
            "oracle of the prompt population"
        )
    return plain(note)


_METHOD_WORDS = {
    "pgm": "latent-model estimate",
    "bootstrap_bc": "bootstrap bias correction",
    "double_bc": "double bootstrap bias correction",
    "crossfit": "cross-fit: pick on half the draws, score on the other half",
    "jackknife": "jackknife over draws",
    "extrapolation": "extrapolation in the number of draws",
    "naive": "plug-in",
}


def method_words(method: Any) -> str:
    return _METHOD_WORDS.get(str(method), str(method))


def _trust_notes(deb: Mapping[str, Any]) -> list[str]:
    """The audit's verdict (``trusted``, ``bracket``), when the audit gives one."""
    audit = deb.get("audit") or {}
    notes = []
    trusted = audit.get("trusted")
    bracket = audit.get("bracket")
    if trusted is True:
        notes.append(
            "the audit's checks passed for at least one simulated world, and on those "
            "worlds the method is nearly unbiased; the interval can still be too "
            "narrow when the data has structure none of the worlds reproduces "
            "(measured coverage: docs/debiasing.md)"
        )
    elif trusted is False:
        notes.append(
            "the audit's checks did not all pass (see the audit below): read the "
            "estimate as a rough guide and rely on the bracket"
        )
    if isinstance(bracket, (list, tuple)) and len(bracket) == 2 and None not in bracket:
        lo, hi = sorted(float(b) for b in bracket)
        notes.append(
            f"bracket: the true oracle lies between the cross-fit value {pct(lo)} "
            f"(biased low) and the plug-in {pct(hi)} (biased high)"
        )
    elif isinstance(bracket, Mapping):
        lo, hi = bracket.get("crossfit"), bracket.get("naive")
        if lo is not None and hi is not None:
            notes.append(
                f"bracket: the true oracle lies between the cross-fit value "
                f"{pct(lo)} (biased low) and the plug-in {pct(hi)} (biased high)"
            )
    return notes


def _oracle_blocks(data: Mapping[str, Any]) -> list[Block]:
    orc = data.get("naive_oracles") or {}
    sm = data.get("single_models")
    best = sm.get("best") if isinstance(sm, Mapping) else None
    deb = data.get("debiased_oracle")
    unit = _unit_cost(data)
    lvl = 95
    if isinstance(deb, Mapping) and deb.get("level"):
        lvl = int(round(100 * float(deb["level"])))
    rows: list[list[str]] = []

    def add(label: str, value: Any, ci: Any = None, cost: Any = None) -> None:
        gain = value - best["accuracy"] if best and value is not None else None
        interval = f"{fmt(ci[0])} to {fmt(ci[1])}" if ci and None not in ci else ""
        row = [label, fmt(value), interval, fmt(gain)]
        rows.append(row if unit else [*row, fmt(cost)])

    if best:
        rows.append(
            [
                f"best single model: {_names(data).get(best['model'], best['model'])}",
                fmt(best["accuracy"]),
                "",
                "-",
            ]
            + ([] if unit else [fmt(best.get("cost"))])
        )
    notes: list[str] = []
    if isinstance(deb, Mapping) and deb.get("value") is not None:
        add(
            f"oracle, debiased ({method_words(deb.get('method'))})",
            deb["value"],
            deb.get("ci"),
        )
        notes.append(f"interval: {_interval_words(deb)}")
        notes += _trust_notes(deb)
        if deb.get("other_intervals"):
            notes.append(f"other intervals of this estimate are {where_json(data)}")
        if deb.get("method_note"):
            notes.append(plain(deb["method_note"]))
    labels = {
        "prehoc": "oracle, plug-in",
        "posthoc": "any draw of any model right",
        "union": "one draw per model, any right",
    }
    for kind, label in labels.items():
        o = orc.get(kind)
        if isinstance(o, Mapping) and "value" in o:
            add(label, o["value"], None, o.get("cost"))
    tr = data.get("truth")
    if isinstance(tr, Mapping) and "true_oracle" in tr:
        add("true oracle (known: simulated data)", tr["true_oracle"])
    shown = [k for k in labels if isinstance(orc.get(k), Mapping) and "value" in orc[k]]
    if shown:
        notes.append(
            "plug-in: each prompt's best observed success rate, averaged"
            + (
                "; any draw right: a prompt counts if any draw of any model solved "
                "it (needs a checker to pick that draw)"
                if "posthoc" in shown
                else ""
            )
            + (
                "; one draw per model: the single-draw union oracle"
                if "union" in shown
                else ""
            )
            + ("" if unit else "; cost: mean cost per prompt of each")
        )
    gmin, gmax = _g(data)
    if gmax < 2:
        notes.append(
            "one draw per prompt and model: the plug-in, posthoc and union oracles "
            "coincide (each prompt counts as solved if some model got it right), "
            "an upper end of what routing reaches. Removing the bias of that "
            "maximum needs repeated draws of each model on each prompt"
        )
    elif isinstance(deb, Mapping) and "skipped" in deb:
        notes.append(f"no debiased oracle: {plain(deb['skipped'])}")
    for kind in labels:
        o = orc.get(kind) or {}
        if "skipped" in o:
            notes.append(f"{kind}: {plain(o['skipped'])}")
    notes.append(f"how the estimates differ and which to trust: {DOCS_ESTIMATORS}")
    header = ["estimate", "accuracy", f"{lvl}% interval", "gain vs best"]
    if not unit:
        header.append("cost")
    if not any(r[2] for r in rows):  # no interval to show (e.g. one draw per cell)
        header.pop(2)
        rows = [r[:2] + r[3:] for r in rows]
    return [Block("Oracle: each prompt sent to its best model", header, rows, notes)]


def _benchmark_blocks(data: Mapping[str, Any]) -> list[Block]:
    bb = data.get("by_benchmark")
    if not (isinstance(bb, list) and bb):
        return []
    names = _names(data)
    header = ["benchmark", "prompts", "best model", "best acc", "plug-in oracle"]
    body = [
        [
            str(r["benchmark"]),
            fmt(r["n_prompts"]),
            names.get(str(r["best_model"]), str(r["best_model"])),
            fmt(r["best_accuracy"]),
            fmt(r["prehoc_oracle"]),
        ]
        for r in bb
    ]
    notes = _name_note(data, [str(r["best_model"]) for r in bb])
    return [Block("Per benchmark", header, body, notes)]


_AUDIT_COLS = (
    ("method", "method"),
    ("bias", "bias"),
    ("rmse", "RMSE"),
    ("interval_coverage", "audit interval covered"),
    ("coverage", "value +- z se covered"),
)


def _audit_blocks(data: Mapping[str, Any]) -> list[Block]:
    deb = data.get("debiased_oracle")
    if not isinstance(deb, Mapping):
        return []
    audit = deb.get("audit") or {}
    tab = audit.get("table")
    out = []
    if isinstance(tab, list) and tab and isinstance(tab[0], Mapping):
        cols = [(k, h) for k, h in _AUDIT_COLS if k in tab[0]]
        rows = [
            [
                (str(r.get(k)) + (" (used)" if r.get(k) == deb.get("method") else ""))
                if k == "method"
                else fmt(r.get(k), k)
                for k, _ in cols
            ]
            for r in tab
        ]
        n = audit.get("n_sims")
        notes = [
            f"each method run on {n if n is not None else 'several'} simulated data "
            "sets shaped like this one, where the true oracle is known: bias and "
            "RMSE against it; audit interval covered: how often the audit's own "
            "half-width (z x worst SD + 2 x the worst bias or model spread) covered "
            "the simulated prompts' oracle; value +- z se covered: how often "
            "value +- z standard errors covered the population's",
        ]
        if audit.get("note"):
            notes.append(plain(audit["note"]))
        notes.append(f"all columns {where_json(data)}; methods: {DOCS_ESTIMATORS}")
        out.append(
            Block(
                "Audit: the methods on simulated data like this",
                [h for _, h in cols],
                rows,
                notes,
            )
        )
    checks = audit.get("checks")
    if isinstance(checks, list) and checks and isinstance(checks[0], Mapping):
        header = list(dict.fromkeys(k for r in checks for k in r))
        rows = [[fmt(r.get(h), h) for h in header] for r in checks]
        out.append(Block("Audit checks", header, rows, _trust_notes(deb)))
    return out


GAP_ROWS = (
    ("router_accuracy", "best single model (the router here)"),
    ("o_repro_lower", "reproducible oracle, lower bound"),
    ("o_repro_crossfit", "reproducible oracle, cross-fit (low end)"),
    ("o_repro_plugin", "reproducible oracle, plug-in (high end)"),
    ("o_exp", "single-draw union oracle"),
    ("delta_plugin", "single-draw noise (union - plug-in)"),
    ("delta_crossfit", "single-draw noise (union - cross-fit)"),
    ("delta_upper", "single-draw noise, upper bound"),
    ("best_of_k_equal_draws", "best model, best of as many draws as models"),
    ("best_of_k_equal_cost", "best model, best of draws at the union's cost"),
)
_SHARE_WORDS = {
    "plugin": "share of the gap that is noise (plug-in)",
    "crossfit": "share of the gap that is noise (cross-fit)",
    "upper_bound": "share of the gap that is noise, upper bound",
}


def _gap_blocks(data: Mapping[str, Any]) -> list[Block]:
    sec = data.get("gap_decomposition")
    title = "Is the gain real? (gap decomposition)"
    if sec is None:
        return []
    if isinstance(sec, Mapping) and "skipped" in sec:
        gmin, gmax = _g(data)
        if gmax < 2:
            return []  # said once, with the oracle
        return [Block(title, [], [], [plain(sec["skipped"])])]
    rows = [[label, fmt(sec[k])] for k, label in GAP_ROWS if sec.get(k) is not None]
    share = sec.get("noise_share")
    if isinstance(share, Mapping):
        rows += [[_SHARE_WORDS.get(k, k), fmt(v, "share")] for k, v in share.items()]
    lvl = sec.get("level")
    notes = [
        "the single-draw union oracle (some model right in one draw each) is above "
        "the reproducible oracle (each prompt to the model with the highest success "
        "rate) by single-draw luck; the share of the gap between the best model and "
        "the union oracle that is such luck says how much of the gain is noise",
    ]
    if sec.get("bound_method"):
        notes.append(
            f"bounds ({f'{lvl:.0%} ' if lvl else ''}one-sided): "
            f"{plain(sec['bound_method'])}"
        )
    notes.append(f"details: {DOCS_ESTIMATORS}")
    return [Block(title, ["", "value"], rows, notes)]


_VERSUS_COLS = (
    ("benchmark", "benchmark"),
    ("best_model", "best model"),
    ("best_accuracy", "acc"),
    ("best_cost", "cost"),
    ("frontier_quality_at_best_cost", "routed acc"),
    ("error_reduction", "fewer errors"),
    ("cost_reduction", "lower cost"),
)
_KIND_TITLES = {
    "prehoc": "Routing frontier against the best single model",
    "posthoc": "Best-of-k routing frontier against the best single model",
    "prehoc_debiased": "Routing frontier with debiased success rates",
}


def _versus_rows(
    rows: list[Mapping[str, Any]], names: Mapping[str, str], unit: bool
) -> tuple[list[str], list[list[str]]]:
    cols = [(k, h) for k, h in _VERSUS_COLS if k in rows[0]]
    if unit:
        cols = [(k, h) for k, h in cols if k not in ("best_cost", "cost_reduction")]
    body = []
    for r in rows:
        line = []
        for k, _ in cols:
            if k == "best_model":
                cell = names.get(str(r.get(k)), str(r.get(k) or ""))
            elif k.endswith("reduction") and r.get(k) is not None:
                cell = pct(r[k], 0)
            else:
                cell = fmt(r.get(k), k)
            lo, hi = r.get(f"{k}_low"), r.get(f"{k}_high")
            if lo is not None and hi is not None:
                cell += f" ({100 * lo:.0f}-{100 * hi:.0f})"
            line.append(cell)
        body.append(line)
    return [h for _, h in cols], body


def _frontier_blocks(data: Mapping[str, Any]) -> list[Block]:
    sec = data.get("frontier")
    if sec is None:
        return []
    title = _KIND_TITLES["prehoc"]
    if isinstance(sec, Mapping) and "skipped" in sec:
        return [Block(title, [], [], [plain(sec["skipped"])])]
    names = _names(data)
    unit = _unit_cost(data)
    out = []
    for kind, fr in sec.items():
        if not isinstance(fr, Mapping):
            continue
        title = _KIND_TITLES.get(kind, f"Frontier ({kind})")
        if "skipped" in fr:
            if kind != "prehoc_debiased":  # optional: only in the JSON
                out.append(Block(title, [], [], [plain(fr["skipped"])]))
            continue
        rows = fr.get("versus_best_single")
        if not (isinstance(rows, list) and rows and isinstance(rows[0], Mapping)):
            continue
        h, body = _versus_rows(rows, names, unit)
        out.append(Block(title, h, body, _frontier_notes(data, kind, fr, rows, unit)))
    return out


def _frontier_notes(
    data: Mapping[str, Any],
    kind: str,
    fr: Mapping[str, Any],
    rows: list[Mapping[str, Any]],
    unit: bool,
) -> list[str]:
    notes = []
    has_ci = any(k.endswith("_low") for r in rows for k in r)
    if kind == "prehoc":
        notes.append(
            (
                "acc: the best single model's accuracy; routed acc: the frontier's at "
                "one generation per prompt"
                if unit
                else "acc, cost: the best single model's; routed acc: the frontier's "
                "accuracy at that cost"
            )
            + "; fewer errors: error-rate reduction there"
            + ("" if unit else "; lower cost: cost saved at the same accuracy")
            + ("; (lo-hi): bootstrap interval in %" if has_ci else "")
            + (
                "; mean: average over benchmarks, all: every prompt pooled"
                if any(r.get("benchmark") == "mean" for r in rows)
                else ""
            )
        )
    if kind == "posthoc":
        notes.append(
            "best-of-k: a prompt may get k draws of its model and keep the best, "
            "which needs a way to check answers (tests, a verifier); "
            + ("cost = k generations" if unit else "cost = k times one draw's")
        )
    if kind == "prehoc_debiased":
        notes.append(
            "same comparison with each model's success rate on each prompt replaced "
            f"by its {method_words(fr.get('quality'))}, which pulls extreme rates "
            "toward what similar cells show: a best model's accuracy here is its "
            "debiased accuracy, so it can differ a little from the observed one"
            + _accuracy_changes(data, rows)
        )
    if unit and kind == "prehoc":
        notes.append(
            "no cost given: every model costs one generation, so the prehoc "
            "frontier is one point and only the error reduction is meaningful"
        )
    n_vert = (fr.get("vertices") or {}).get("n_vertices")
    if kind == "prehoc" and fr.get("aiq") is not None and not unit:
        notes.append(
            f"area under the frontier over its cost range (AIQ): {fmt(fr.get('aiq'))}"
            + (f"; its {n_vert} vertices {where_json(data)}" if n_vert else "")
        )
    notes += [_versus_note(n) for n in fr.get("notes", [])]
    notes += _name_note(data, [str(r.get("best_model")) for r in rows])
    if kind == "prehoc":
        notes.append(f"how the frontier is computed: {DOCS_FRONTIER}")
    return notes


def _accuracy_changes(data: Mapping[str, Any], rows: list[Mapping[str, Any]]) -> str:
    """``" (HumanEval+: 0.9955 here, 0.9972 observed)"`` for the rows whose best
    model's accuracy differs from the naive frontier table's."""
    base = _pooled_rows((data.get("frontier") or {}).get("prehoc"))
    diffs = []
    for r in rows:
        b = base.get(str(r.get("benchmark")))
        a, o = r.get("best_accuracy"), (b or {}).get("best_accuracy")
        if r.get("benchmark") == "mean" or a is None or o is None:
            continue
        if abs(a - o) >= 5e-5:
            diffs.append(f"{r['benchmark']}: {fmt(a)} here, {fmt(o)} observed")
    return f" ({'; '.join(diffs[:4])})" if diffs else ""


def _pooled_rows(fr: Any) -> dict[str, Mapping[str, Any]]:
    rows = fr.get("versus_best_single") if isinstance(fr, Mapping) else None
    if not isinstance(rows, list):
        return {}
    return {str(r.get("benchmark")): r for r in rows if isinstance(r, Mapping)}


def _versus_note(note: str) -> str:
    note = plain(note)
    m = re.match(r"no intervals for (.+?): (\d+) of (\d+) replicates", note)
    if m:
        return (
            f"no interval for {m.group(1)}: in {m.group(2)} of {m.group(3)} bootstrap "
            "resamples the best model makes no error (or a model is missing), so the "
            "error-rate reduction is undefined there"
        )
    return note.replace(
        "use Frontier.versus_best_single(ci=...) in Python",
        "Frontier.versus_best_single(ci=0.95) in Python computes them",
    )


def _latency_blocks(data: Mapping[str, Any], max_rows: int = 12) -> list[Block]:
    sec = data.get("latency_frontier")
    if sec is None:
        return []
    title = "Latency frontier"
    if isinstance(sec, Mapping) and "skipped" in sec:
        return [Block(title, [], [], [plain(sec["skipped"])])]
    pts = sec.get("pareto_mean")
    if not isinstance(pts, list):
        return []
    if len(pts) > max_rows:
        idx = np.unique(np.linspace(0, len(pts) - 1, max_rows).round().astype(int))
        pts = [pts[i] for i in idx]
    names = _names(data)
    cols = [
        ("label", "policy"),
        ("quality", "quality"),
        ("cost", "cost"),
        ("latency_mean", "mean latency"),
        ("latency_p95", "P95 latency"),
    ]
    rows = [
        [_policy_label(r, names) if k == "label" else fmt(r.get(k), k) for k, _ in cols]
        for r in pts
    ]
    notes = [
        "policies no other beats on quality, cost and latency at once: "
        f"{sec.get('n_pareto_mean')} of {sec.get('n_candidates')} candidate "
        "policies are not beaten on all of quality (up), cost and mean latency "
        f"(down) ({sec.get('n_pareto_p95')} with P95 latency); {len(pts)} shown, "
        f"by cost; all {where_json(data)}",
        *[plain(n) for n in sec.get("notes", [])],
    ]
    return [Block(title, [h for _, h in cols], rows, notes)]


def _policy_label(r: Mapping[str, Any], names: Mapping[str, str]) -> str:
    """``model`` (``model, best of k`` for ``model@k``) for a single model, else
    "routed" (a mix of models over prompts)."""
    label = str(r.get("label") or "")
    if r.get("source") == "single" and label:
        model, _, k = label.rpartition("@")
        model = model or label
        name = names.get(model, model)
        return name if k in ("", "1") else f"{name}, best of {k}"
    return "routed (mix of models)"


def _generic_blocks(key: str, sec: Any) -> list[Block]:
    title = key.replace("_", " ").capitalize()
    if isinstance(sec, Mapping) and "skipped" in sec:
        return [Block(title, [], [], [plain(sec["skipped"])])]
    h, r = table(sec)
    return [Block(title, h, r, [])]


def router_blocks(sec: Any) -> list[tuple[str, list[str], list[list[str]], list[str]]]:
    """The router section (:func:`capfront.router_report.router_section`) as
    report blocks (title, header, rows, notes)."""
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


def _router_blocks(data: Mapping[str, Any]) -> list[Block]:
    return [Block(*b) for b in router_blocks(data.get("routers"))]


#: section key -> renderer, in print order; a section of the JSON missing here is
#: rendered by a generic table after these
RENDERERS: dict[str, Renderer] = {
    "data": _data_blocks,
    "single_models": _single_blocks,
    "naive_oracles": _oracle_blocks,  # with the debiased oracle and the truth
    "by_benchmark": _benchmark_blocks,
    "debiased_oracle": _audit_blocks,
    "gap_decomposition": _gap_blocks,
    "frontier": _frontier_blocks,
    "latency_frontier": _latency_blocks,
    "routers": _router_blocks,
}
#: JSON keys that are not sections (or are shown by another section's renderer)
NOT_SECTIONS = {
    "capfront_version",
    "settings",
    "source",
    "files",
    "truth",
}


def blocks(data: Mapping[str, Any]) -> list[Block]:
    """The report as titled tables (after the "What this means" prose), shared by
    the markdown, rich and HTML renderers."""
    out: list[Block] = []
    text = summary(data)
    if text:
        out.append(Prose("What this means", [], [], text))
    for key, render in RENDERERS.items():
        if key in data or key == "data":
            out += render(data)
    for key, sec in data.items():
        if key not in RENDERERS and key not in NOT_SECTIONS and sec is not None:
            out += _generic_blocks(key, sec)
    return out


# ---------------------------------------------------------------------- generic
def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "."))
        elif isinstance(v, list) and len(v) > 8:
            continue  # curves and vertex lists live in the JSON
        else:
            out[key] = v
    return out


def table(value: Any, max_rows: int = 40) -> tuple[list[str], list[list[str]]]:
    """Header and rows for a list of records or a mapping."""
    if isinstance(value, list) and value and all(isinstance(r, Mapping) for r in value):
        flat = [_flatten(r) for r in value]
        header = list(dict.fromkeys(k for r in flat for k in r))
        return header, [[fmt(r.get(h), h) for h in header] for r in flat[:max_rows]]
    if isinstance(value, Mapping):
        if value and all(isinstance(v, Mapping) for v in value.values()):
            flat = {k: _flatten(v) for k, v in value.items()}
            header = ["", *dict.fromkeys(k for r in flat.values() for k in r)]
            return header, [
                [str(k), *[fmt(r.get(h), h) for h in header[1:]]]
                for k, r in list(flat.items())[:max_rows]
            ]
        flat1 = _flatten(value)
        return ["", "value"], [[k, fmt(v, k)] for k, v in flat1.items()]
    return ["value"], [[fmt(value)]]


# ---------------------------------------------------------------------- renderers
def _title_line(data: Mapping[str, Any]) -> str:
    src = data.get("source") or {}
    return f"capfront report: {src['path']}" if src.get("path") else "capfront report"


def to_markdown(data: Mapping[str, Any]) -> str:
    """The report as GitHub markdown."""
    lines = [f"# {_title_line(data)}", ""]
    for title, header, rows, notes in blocks(data):
        lines += [f"## {title}", ""]
        if header and rows:
            head = [h or " " for h in header]
            lines.append("| " + " | ".join(head) + " |")
            lines.append("|" + "|".join("---" for _ in head) + "|")
            lines += [
                "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                for row in rows
            ]
            lines.append("")
        if title == "What this means":
            lines += [*[f"{n}\n" for n in notes]]
            continue
        lines += [f"- {n}" for n in notes]
        if notes:
            lines.append("")
    lines.append(_footer(data))
    return "\n".join(lines) + "\n"


def _footer(data: Mapping[str, Any]) -> str:
    s = data.get("settings") or {}
    return (
        f"capfront {data.get('capfront_version')}, seed {s.get('seed')}, "
        f"{s.get('n_resamples')} bootstrap resamples, "
        f"{s.get('audit_sims')} audit simulations."
    )


def _looks_numeric(cell: str) -> bool:
    head = cell.split(" [")[0].split(" (")[0].split(" to ")[0]
    head = head.replace(",", "").rstrip("%")
    if head in ("-", ""):
        return True
    try:
        float(head)
    except ValueError:
        return False
    return True


def fit_widths(
    header: list[str], rows: list[list[str]], numeric: list[bool], width: int
) -> list[int | None]:
    """Column widths that fit ``width``: numeric columns keep their width, text
    columns share the rest, the narrow ones first (so only the longest wrap)."""
    from rich.cells import cell_len

    natural = [
        max([cell_len(h), *(cell_len(r[i]) for r in rows)])
        for i, h in enumerate(header)
    ]
    # rich's simple box: one edge character each side, three between columns
    budget = (
        width
        - 3 * (len(header) - 1)
        - 2
        - sum(n for n, num in zip(natural, numeric, strict=True) if num)
    )
    text = sorted((n, i) for i, n in enumerate(natural) if not numeric[i])
    out: list[int | None] = [None] * len(header)
    for j, (n, i) in enumerate(text):
        share = max(8, budget // (len(text) - j))
        out[i] = min(n, share)
        budget -= out[i]
    return out


def _note(console: Any, text: str) -> None:
    """A dim "- note" with a hanging indent."""
    from rich.padding import Padding
    from rich.table import Table

    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    grid.add_row("-", text)
    console.print(
        Padding(grid, (0, 0, 0, 2), expand=False), style="dim", highlight=False
    )


def print_rich(data: Mapping[str, Any], console: Any = None) -> None:
    """The report as rich tables and paragraphs; tables fit ``console.width``
    (text columns wrap, numbers do not)."""
    from rich import box
    from rich.console import Console
    from rich.padding import Padding
    from rich.table import Table

    console = console or Console()
    console.print(f"[bold]{_title_line(data)}[/bold]", highlight=False)
    console.print()
    for block in blocks(data):
        title, header, rows, notes = block
        if isinstance(block, Prose):
            console.print(f"[bold]{title}[/bold]")
            for para in notes:
                console.print(
                    Padding(para, (0, 2, 1, 2), expand=False), highlight=False
                )
            continue
        if header and rows:
            tab = Table(
                title=title,
                title_justify="left",
                show_header=any(header),
                header_style="bold",
                box=box.SIMPLE_HEAD,
                title_style="bold",
                pad_edge=False,
            )
            key_value = not any(header[1:])
            numeric = [
                all(_looks_numeric(row[i]) for row in rows) and not key_value
                for i in range(len(header))
            ]
            widths = fit_widths(header, rows, numeric, console.width)
            for i, h in enumerate(header):
                tab.add_column(
                    h,
                    justify="right" if numeric[i] and i > 0 else "left",
                    no_wrap=numeric[i],
                    overflow="fold",
                    max_width=widths[i],
                )
            for row in rows:
                tab.add_row(*row)
            console.print(tab)
        else:
            console.print(f"[bold]{title}[/bold]")
        for n in notes:
            _note(console, n)
        console.print()
    console.print(_footer(data), style="dim", highlight=False)
