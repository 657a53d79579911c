"""The report's sections as titled tables: one renderer per section of the
JSON-ready dict (:data:`RENDERERS`: data, single models, oracles, benchmarks, the
audit, the gap, the frontier, latency, routers), a generic table for any other,
and :func:`blocks`, the whole report as blocks (shared by the markdown, rich and
HTML renderers)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .report_cells import (
    DOCS_ESTIMATORS,
    DOCS_FRONTIER,
    MAX_MODELS,
    Block,
    Prose,
    _name_note,
    _names,
    fmt,
    pct,
    plain,
    table,
    where_json,
)
from .report_summary import _g, _unit_cost, summary

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
    "correlated": "correlated logit-normal estimate",
    "bootstrap_bc": "bootstrap bias correction",
    "double_bc": "double bootstrap bias correction",
    "crossfit": "cross-fit: pick on half the draws, score on the other half",
    "jackknife": "jackknife over draws",
    "extrapolation": "extrapolation in the number of draws",
    "naive": "plug-in",
}


# shorter names where a table row carries the method (the full ones wrap there)
_ROW_WORDS = {"correlated": "correlated model"}


def method_words(method: Any) -> str:
    return _METHOD_WORDS.get(str(method), str(method))


_FAMILY_WORDS = {
    "logitnormal": "a normal cell effect on the logit scale",
    "logit_t": "a heavy-tailed (Student t) cell effect on the logit scale",
    "betabinomial": "Beta-distributed cell rates",
}


def _model_words(deb: Mapping[str, Any]) -> str:
    """What the latent-model estimate fitted: its prompt classes, cell-effect
    family and the rates' floor and ceiling ("" for other methods)."""
    if str(deb.get("method")) != "pgm":
        return ""
    det = deb.get("details") or {}
    family = det.get("family") or deb.get("family")
    k = det.get("latent_classes")
    if family not in _FAMILY_WORDS or not isinstance(k, (int, float)):
        return ""
    k = int(k)
    classes = "one class of prompts" if k == 1 else f"{k} latent classes of prompts"
    words = (
        f"model: {classes}, {_FAMILY_WORDS[family]}, chosen by likelihood among "
        f"the logit-normal, logit-t and Beta families"
    )
    b = det.get("bounds")
    if isinstance(b, (list, tuple)) and len(b) == 2 and tuple(map(float, b)) != (0, 1):
        words += f"; rates between a floor of {pct(b[0])} and a ceiling of {pct(b[1])}"
    return words + " (docs/debiasing.md)"


def _known_words(deb: Mapping[str, Any]) -> str:
    """The models taken as known because they answered all or nothing
    (:mod:`capfront.debias.known`), and the share of prompts they solved ("" when
    none)."""
    det = deb.get("details") or {}
    if not det.get("known_models"):  # (methods that need no split: the audit's)
        det = deb.get("audit") or {}
    known = det.get("known_models")
    if not (isinstance(known, list) and known):
        return ""
    from .debias.known import all_or_nothing_words  # (the report imports no fits)

    return (
        all_or_nothing_words(known) + ", so their rates are taken "
        f"as known; they solved {pct(det.get('solved_by_known', 0.0))} of the "
        "prompts, and the estimate is of the other models on the rest "
        "(docs/debiasing.md)"
    )


def _trust_notes(deb: Mapping[str, Any]) -> list[str]:
    """The audit's verdict (``trusted``, ``bracket``), when the audit gives one."""
    audit = deb.get("audit") or {}
    notes = []
    trusted = audit.get("trusted")
    bracket = audit.get("bracket")
    if trusted is True and audit.get("self_audited") is True:
        notes.append(
            "only the quoted model's own simulated world reproduced the data's "
            "checks, so the audit measured the error that model makes on data it "
            "describes exactly; the interval adds its distance to a rival model's "
            "estimate (see what it is made of), but an error from structure neither "
            "model represents is not in it, and the bracket is the safer guide to "
            "how far off it can be (measured coverage: docs/debiasing.md)"
        )
    elif trusted is True:
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
    if audit.get("checks_at") == "simulations":  # (set only where a world passed)
        from .debias.audit_result import judged_at_words

        judged = judged_at_words(audit.get("sim_prompts", 0))
        notes.append(
            "with this many prompts no simulated world matched the data's checks "
            f'exactly, so the worlds were {judged} (docs/debiasing.md, "The '
            "checks at the simulations' size\")"
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
        meth = str(deb.get("method"))
        add(
            f"oracle, debiased ({_ROW_WORDS.get(meth, method_words(meth))})",
            deb["value"],
            deb.get("ci"),
        )
        notes.append(f"interval: {_interval_words(deb)}")
        notes += [w for w in (_known_words(deb), _model_words(deb)) if w]
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
        if fr.get("quoted"):
            notes.append(
                f"the quoted oracle estimate, the {method_words(fr['quoted'])}, has "
                "no per-cell success rates: the rates here are the latent model's "
                "(pgm) posterior means"
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
