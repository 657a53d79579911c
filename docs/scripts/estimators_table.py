"""Regenerate the tables of docs/estimators.md.

    PYTHONPATH=python python docs/scripts/estimators_table.py --L 2,8 \
        --save a.json --no-evalperf &
    PYTHONPATH=python python docs/scripts/estimators_table.py --L 33 \
        --save b.json --no-evalperf &
    wait
    PYTHONPATH=python python docs/scripts/estimators_table.py --load a.json b.json

(the commands of docs/estimators.md; each cell has its own seed, so ``--L`` /
``--cells`` subsets in parallel processes give the same numbers as one run).

Part 1, simulation grid: for every (G, L, specialisation, within-cell correlation)
cell, one ``capfront.simulate`` pool of 40,000 prompts (4 topics) is the population;
each of ``--reps`` repetitions samples ``--n-prompts`` prompts from it and fresh
Binomial(G, p) counts, and every estimator is scored against the sampled prompts'
own oracle ``mean_n max_l p`` (bias, RMSE). ``capfront.audit`` runs once per cell,
on the first repetition (``--audit-sims`` simulations); its recommendation is
scored over ``--coverage-reps`` repetitions (the first ``--reps`` and more of the
pick alone, from the same random stream), with the interval
``AuditResult.interval`` gives (``value +- 1.96 rmse`` of the audit, for the
prompts' own oracle; ``value +- 1.96 max(se, rmse_population)`` for the population
oracle), and over ``--reps`` with the prompt-level ``value +- 1.96 se``. ``pgm_bb``
is ``pgm`` with ``family="betabinomial"``. With ``--audits K`` the first K
repetitions are each audited (seed + k) and each audit's interval is scored the
same way (the table keeps the first; ``fmt_own_audits`` reports all K).

Part 2, EvalPerf: random subsets of g = 5, 10, 20 draws per cell (hypergeometric
draws from the counts) against the full 100 (50 for 3 models).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy import stats

import capfront as cf
from capfront.debias import audit, decompose_counts
from capfront.debias.audit import AUDIT_METHODS

METHODS = (*AUDIT_METHODS, "pgm_bb")
SHORT = {
    "naive": "naive",
    "bootstrap_bc": "bc",
    "crossfit": "cf",
    "jackknife": "jk",
    "extrapolation": "ext",
    "pgm": "pgm",
    "pgm_bb": "pgm-bb",
}
# pgm_bb: pgm with family="betabinomial" (the generator's within-cell correlation is
# a Beta draw around q, the model that family assumes)
SPEC = {"low": 0.3, "high": 2.0}
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
Z = 1.959964


def cell_seed(L, spec, rho):
    """A seed per (L, spec, rho): any subset of the grid gives the same numbers."""
    return 10 * L + 2 * (spec == "high") + (rho > 0) + 1


def _run_method(m, S, Gm, topic, prev_fit):
    """One estimator on one repetition: (estimate, prompt-level se)."""
    opts = {}
    name = m
    if m in ("pgm", "pgm_bb"):
        # warm start from the previous repetition's fit (speed only)
        name = "pgm"
        opts = {"topic": topic, "init": prev_fit.get(m)}
        if m == "pgm_bb":
            opts["family"] = "betabinomial"
    d = decompose_counts(S, Gm, name, **opts)
    if name == "pgm":
        prev_fit[m] = d.diagnostics["fit"]
    return d.estimate(), d.standard_error()


def run_cell(
    G,
    L,
    spec,
    rho,
    reps,
    n_prompts,
    audit_sims,
    seed,
    family="auto",
    coverage_reps=0,
    n_audits=1,
):
    pool = cf.simulate(
        40_000,
        L,
        1,
        n_topics=4,
        specialisation=SPEC[spec],
        within_cell_correlation=rho,
        seed=seed,
        as_counts=True,
    )
    p_pool = pool.truth_p
    topic_pool = np.asarray(pool.topic).astype(np.int64)
    truth_pop = float(p_pool.max(axis=1).mean())
    rng = np.random.default_rng(seed + 1)
    methods = [m for m in METHODS if m != "extrapolation" or G >= 4]
    est = {m: [] for m in methods}
    se = {m: [] for m in methods}
    truth = []
    info = {}
    prev_fit = {}
    own = []  # (pick, its rmse, its rmse_population) of each repetition's audit

    def draw():
        """One repetition: prompts from the pool, fresh counts, their oracle."""
        idx = rng.choice(len(p_pool), n_prompts, replace=False)
        p = p_pool[idx]
        S = rng.binomial(G, p)
        return idx, S, np.full_like(S, G), p.max(axis=1).mean()

    def run(ms, idx, S, Gm, est_, se_):
        """Estimators ``ms`` on one repetition, appended to ``est_`` / ``se_``."""
        for m in ms:
            e, s_ = _run_method(m, S, Gm, topic_pool[idx], prev_fit)
            est_[m].append(e)
            se_[m].append(s_)

    for r in range(reps):
        idx, S, Gm, o = draw()
        truth.append(o)
        run(methods, idx, S, Gm, est, se)
        if r < n_audits and audit_sims > 0:
            res = cf.EvalResults.from_counts(S, Gm, topic=topic_pool[idx])
            t0 = time.perf_counter()
            a = audit(res, n_sims=audit_sims, seed=seed + r, family=family)
            tab = a.table.copy()
            rec = a.recommended
            if a.family == "betabinomial":  # the audit's pgm is the Beta family
                tab = tab.rename(index={"pgm": "pgm_bb"})
                rec = "pgm_bb" if rec == "pgm" else rec
            own.append((rec, tab.loc[rec, "rmse"], tab.loc[rec, "rmse_population"]))
            if r == 0:
                info = {
                    "recommended": rec,
                    "family": a.family,
                    "family_weights": a.family_weights,
                    "seconds": time.perf_counter() - t0,
                    "n_sims": audit_sims,
                    "table": tab.to_dict(orient="index"),
                }
    tab = info.get("table", {})
    rec = info.get("recommended")
    if rec is not None and coverage_reps > reps:
        # more repetitions of the audits' picks only (the same random stream, so
        # the first ``reps`` are those above): the coverage, counted over
        # ``coverage_reps`` repetitions, is the target
        picks = sorted({o[0] for o in own})
        ep = {m: list(est[m]) for m in picks}
        sp = {m: list(se[m]) for m in picks}
        tr = list(truth)
        for _ in range(coverage_reps - reps):
            idx, S, Gm, o = draw()
            tr.append(o)
            run(picks, idx, S, Gm, ep, sp)
        tr = np.array(tr)

        def cover(m, rmse, rmse_pop):
            e, s_ = np.array(ep[m]), np.array(sp[m])
            half = Z * np.maximum(s_, rmse_pop)
            return (
                np.mean(np.abs(e - tr) <= Z * rmse),
                np.mean(np.abs(e - truth_pop) <= half),
            )

        # each audit's interval over all coverage_reps repetitions; own[0] is
        # the first repetition's audit, the table's pick
        per = [cover(*o) for o in own]
        err = np.array(ep[rec]) - tr
        info["coverage"] = {
            "reps": coverage_reps,
            "bias_all": err.mean(),
            "rmse_all": np.sqrt((err**2).mean()),
            "cov_audit_prompts": per[0][0],
            "cov_audit": per[0][1],
        }
        if len(own) > 1:
            # the mean over the first n_audits repetitions' own audits is the
            # coverage of the whole procedure (audit included)
            info["own_audits"] = {
                "n": len(own),
                "picks": [o[0] for o in own],
                "rmse": [o[1] for o in own],
                "cov_audit_prompts": [c[0] for c in per],
                "cov_audit": [c[1] for c in per],
            }
    truth = np.array(truth)
    out = {}
    for m in methods:
        e = np.array(est[m])
        s = np.array(se[m])
        err = e - truth
        row = {
            "bias": err.mean(),
            "rmse": np.sqrt((err**2).mean()),
            "cov_se": np.mean(np.abs(e - truth_pop) <= Z * s),
            "cov_se_prompts": np.mean(np.abs(err) <= Z * s),
        }
        if m in tab:  # AuditResult.interval, both targets
            row["cov_audit_prompts"] = np.mean(np.abs(err) <= Z * tab[m]["rmse"])
            half = Z * np.maximum(s, tab[m]["rmse_population"])
            row["cov_audit"] = np.mean(np.abs(e - truth_pop) <= half)
        out[m] = row
    return out, info, float(truth.mean())


def grid(args):
    rows = []
    Gs = [int(g) for g in args.G.split(",")]
    Ls = [int(v) for v in args.L.split(",")]
    t0 = time.perf_counter()
    for L in Ls:
        for spec in ("low", "high"):
            for rho in (0.0, 0.2):
                for G in Gs:
                    if args.cells and f"{G}:{L}:{spec}:{rho}" not in args.cells:
                        continue
                    res, info, o_true = run_cell(
                        G,
                        L,
                        spec,
                        rho,
                        args.reps,
                        args.n_prompts,
                        args.audit_sims,
                        cell_seed(L, spec, rho),
                        args.audit_family,
                        args.coverage_reps,
                        args.audits,
                    )
                    rows.append((G, L, spec, rho, o_true, res, info))
                    if args.save:
                        Path(args.save).write_text(json.dumps(rows, default=float))
                    print(
                        f"[{time.perf_counter() - t0:6.0f}s] G={G} L={L} {spec} "
                        f"rho={rho} rec={info.get('recommended')}",
                        flush=True,
                    )
    return rows


def _pct(x):
    return "-" if x is None else f"{100 * x:.0f}"


def fmt_grid(rows, reps, n_prompts, audit_sims=200):
    rows = sorted(rows, key=lambda r: (r[1], r[2] == "high", r[3], r[0]))
    cov_reps = min((r[6].get("coverage", {}).get("reps", 0) for r in rows), default=0)
    lines = []
    head = " | ".join(f"{SHORT[m]}" for m in METHODS)
    lines.append(
        f"Bias in points (x100) against `O_true`, {reps} repetitions of "
        f"N = {n_prompts} prompts; RMSE in parentheses. Coverage in % of the "
        "repetitions"
        + (
            f" (the audit pick's `audit.interval` over {cov_reps} repetitions: the "
            "first ones and more of the pick alone).\n"
            if cov_reps
            else ".\n"
        )
    )
    lines.append(
        f"| G | L | spec | rho | O_true | {head} | audit picks | "
        "its \\|bias\\|/naive | `audit.interval` covers (prompts / pop) | "
        "`+-1.96 se` covers (prompts / pop) |"
    )
    lines.append("|" + "---|" * (len(METHODS) + 9))
    for G, L, spec, rho, o_true, res, info in rows:
        cells = []
        for m in METHODS:
            if m in res:
                cells.append(
                    f"{100 * res[m]['bias']:+.2f} ({100 * res[m]['rmse']:.2f})"
                )
            else:
                cells.append("-")
        rec = info.get("recommended")
        if rec is not None:
            q = _pick(res, info)
            ratio = abs(q["bias"]) / max(abs(res["naive"]["bias"]), 1e-12)
            extra = (
                f"{rec} | {ratio:.2f} | {_pct(q.get('cov_audit_prompts'))} / "
                f"{_pct(q.get('cov_audit'))} | {_pct(q['cov_se_prompts'])} / "
                f"{_pct(q['cov_se'])}"
            )
        else:
            extra = "- | - | - | -"
        lines.append(
            f"| {G} | {L} | {spec} | {rho} | {o_true:.3f} | "
            + " | ".join(cells)
            + f" | {extra} |"
        )
    lines.append("")
    lines.append(summary(rows, reps, audit_sims))
    own = fmt_own_audits(rows)
    if own:
        lines += ["", own]
    lines.append("")
    lines.append(
        "Coverage (%) of `AuditResult.interval` for the prompts' own oracle, per "
        "method (the audit of the cell's first repetition gives each method's "
        "width):\n"
    )
    ms = [m for m in METHODS if m != "naive"]
    lines.append("| G | L | spec | rho | " + " | ".join(SHORT[m] for m in ms) + " |")
    lines.append("|" + "---|" * (len(ms) + 4))
    for G, L, spec, rho, _, res, _ in rows:
        cov = [_pct(res[m].get("cov_audit_prompts")) if m in res else "-" for m in ms]
        lines.append(f"| {G} | {L} | {spec} | {rho} | " + " | ".join(cov) + " |")
    return "\n".join(lines)


def _in_band(x):
    return 0.90 <= x <= 0.99


def _spread(v):
    """Relative SD (SD / mean) of the audits' RMSEs."""
    return float(np.std(v, ddof=1) / np.mean(v))


def fmt_own_audits(rows):
    """The cells run with ``--audits K``: each of K repetitions' own audit, its
    interval applied to all the coverage repetitions; the mean over the audits is
    the coverage of the whole procedure, audit included."""
    rows = [r for r in rows if "own_audits" in r[6]]
    if not rows:
        return ""
    k = min(r[6]["own_audits"]["n"] for r in rows)
    lines = [
        f"**Each repetition's own audit** ({len(rows)} cells run with "
        f"`--audits {k}`): the first {k} repetitions are each audited (seed + k), "
        "and each audit's `audit.interval` is scored over all "
        f"{rows[0][6]['coverage']['reps']} repetitions. The table above scores the "
        "first audit only; a user's interval comes from the audit of their own "
        "prompts, so the mean over the audits is the coverage of the whole "
        "procedure. `spread`: SD/mean of the pick's audit RMSE over the audits "
        f"({rows[0][6]['n_sims']} simulations alone give about "
        f"{100 / np.sqrt(2 * rows[0][6]['n_sims']):.0f}%); `real/audit`: the "
        "pick's RMSE over "
        "the repetitions against the audits' mean.\n",
        "| G | L | spec | rho | picks | spread | real/audit | first audit covers "
        "(prompts / pop) | mean over audits (prompts / pop) | range (prompts) |",
        "|" + "---|" * 10,
    ]
    n_in = [0, 0]
    spreads = []
    for G, L, spec, rho, _, _, info in sorted(
        rows, key=lambda r: (r[1], r[2] == "high", r[3], r[0])
    ):
        o = info["own_audits"]
        rm = np.array(o["rmse"])
        spreads.append(_spread(rm))
        cp, cq = np.mean(o["cov_audit_prompts"]), np.mean(o["cov_audit"])
        n_in[0] += _in_band(cp)
        n_in[1] += _in_band(cq)
        picks = ", ".join(
            f"{m} x{o['picks'].count(m)}" for m in sorted(set(o["picks"]))
        )
        c = info["coverage"]
        lines.append(
            f"| {G} | {L} | {spec} | {rho} | {picks} | {100 * spreads[-1]:.0f}% | "
            f"{c['rmse_all'] / rm.mean():.2f} | {_pct(c['cov_audit_prompts'])} / "
            f"{_pct(c['cov_audit'])} | {100 * cp:.1f} / {100 * cq:.1f} | "
            f"{_pct(min(o['cov_audit_prompts']))}-"
            f"{_pct(max(o['cov_audit_prompts']))} |"
        )
    lines += [
        "",
        f"Mean over the audits in 90-99%: **{n_in[0]} of {len(rows)}** cells for "
        f"the prompts' own oracle, **{n_in[1]} of {len(rows)}** for the population "
        f"oracle. The audit RMSE's spread over repetitions: median "
        f"{100 * np.median(spreads):.0f}% (range {100 * min(spreads):.0f}-"
        f"{100 * max(spreads):.0f}%).",
    ]
    return "\n".join(lines)


def _pick(res, info):
    """The audit pick's row; its coverage over ``--coverage-reps`` when run."""
    return {**res[info["recommended"]], **info.get("coverage", {})}


def band_reference(reps, audit_sims, level=0.95, n=400_000, seed=0, spread=None):
    """What a perfectly calibrated audit interval gives when measured like the
    grid: normal errors, a width from ``audit_sims`` simulations (``rmse_hat /
    rmse ~ sqrt(chi2_k / k)``), coverage counted over ``reps`` repetitions.
    ``spread``: instead, the width's relative SD over repetitions (one audit's
    width also varies with the prompts it was fitted to), ``rmse_hat / rmse ~
    lognormal(0, spread)``.
    Returns (P(a cell lands outside 90-99%), P(below 90%), P(above 99%))."""
    rng = np.random.default_rng(seed)
    z = float(stats.norm.ppf(0.5 + level / 2))
    if spread is None:
        ratio = np.sqrt(rng.chisquare(audit_sims, n) / audit_sims)
    else:
        ratio = np.exp(spread * rng.standard_normal(n))
    k = rng.binomial(reps, 2 * stats.norm.cdf(z * ratio) - 1) / reps
    lo, hi = k < 0.90, k > 0.99
    return float((lo | hi).mean()), float(lo.mean()), float(hi.mean())


def summary(rows, reps=100, audit_sims=200):
    """Counts of the issue's targets over the cells with G >= 5."""
    big = [r for r in rows if r[0] >= 5 and r[6].get("recommended")]
    if not big:
        return ""

    def pick(r):
        return _pick(r[5], r[6])

    t1 = sum(abs(pick(r)["bias"]) <= 0.25 * abs(r[5]["naive"]["bias"]) for r in big)
    worst = max(abs(pick(r)["bias"]) for r in big)

    def band(key):
        return sum(0.90 <= pick(r).get(key, -1) <= 0.99 for r in big)

    def span(key):
        v = [pick(r).get(key, np.nan) for r in big]
        return f"{100 * np.nanmin(v):.0f}-{100 * np.nanmax(v):.0f}%"

    def mean(key):
        return 100 * np.nanmean([pick(r).get(key, np.nan) for r in big])

    n = len(big)
    reps = min(r[6].get("coverage", {}).get("reps", reps) for r in big)
    audit_sims = min(r[6].get("n_sims", audit_sims) for r in big)
    out_p, below, above = band_reference(reps, audit_sims)
    own = [r[6]["own_audits"]["rmse"] for r in rows if "own_audits" in r[6]]
    with_spread = ""
    if own:
        sp = float(np.median([_spread(v) for v in own]))
        o2, b2, a2 = band_reference(reps, audit_sims, spread=sp)
        with_spread = (
            f" One audit's width also varies with the prompts it was fitted to: "
            f"over repetitions its relative SD was {100 * sp:.0f}% (median over "
            f"the {len(own)} cells run with `--audits`). With that spread an "
            f"exactly calibrated interval lands outside 90-99% with probability "
            f"{100 * o2:.1f}% ({100 * b2:.1f}% below, {100 * a2:.1f}% above), "
            f"{o2 * n:.1f} of {n} cells on average."
        )
    return (
        f"**Cells with G >= 5: {n}.** The audit's pick has |bias| <= 1/4 of "
        f"naive's in **{t1}** (largest |bias| {100 * worst:.2f} points). Its "
        f"`AuditResult.interval` covers the prompts' own oracle in 90-99% of "
        f"repetitions in **{band('cov_audit_prompts')}** cells "
        f"(range {span('cov_audit_prompts')}, mean "
        f"{mean('cov_audit_prompts'):.1f}%) and the population oracle "
        f'(`target="population"`) in **{band("cov_audit")}** '
        f"({span('cov_audit')}, mean {mean('cov_audit'):.1f}%); the prompt-level "
        f"`value +- 1.96 se` does so in "
        f"{band('cov_se_prompts')} ({span('cov_se_prompts')}) / {band('cov_se')} "
        f"({span('cov_se')}).\n\n"
        f"For scale: an interval that is *exactly* calibrated, measured the same way "
        f"(normal errors, its width from {audit_sims} simulations, coverage over "
        f"{reps} repetitions), lands outside 90-99% in a cell with probability "
        f"{100 * out_p:.1f}% ({100 * below:.1f}% below, {100 * above:.1f}% above): "
        f"{out_p * n:.1f} of {n} cells on average, and all {n} inside with "
        f"probability {100 * (1 - out_p) ** n:.0f}% (`band_reference` in the script)."
        + with_spread
    )


def _estimate(S, G, m):
    if m == "pgm_bb":
        return decompose_counts(S, G, "pgm", family="betabinomial").estimate()
    return decompose_counts(S, G, m).estimate()


def evalperf(reps, seed=0):
    path = DATA / "evalperf_pass_counts" / "evalperf_counts.csv"
    if not path.exists():
        return "(EvalPerf data not found)"
    res = cf.read(path)
    S = np.rint(res.successes).astype(np.int64)
    G = res.n_draws.astype(np.int64)
    full = {m: _estimate(S, G, m) for m in METHODS}
    best = float((S / G).mean(axis=0).max())
    lines = [
        f"N = {res.n_prompts} tasks, L = {res.n_models} models, 50-100 draws per "
        f"cell. Best single model {best:.3f}. Full data: "
        + ", ".join(f"{m} {v:.4f}" for m, v in full.items())
        + ".\n",
        f"Estimates from random subsets of g draws per cell (mean +- sd over "
        f"{reps} subsets):\n",
        "| g | " + " | ".join(METHODS) + " |",
        "|" + "---|" * (len(METHODS) + 1),
    ]
    rng = np.random.default_rng(seed)
    for g in (5, 10, 20):
        vals = {m: [] for m in METHODS}
        for _ in range(reps):
            Sg = rng.hypergeometric(S, G - S, g)
            Gg = np.full_like(Sg, g)
            for m in METHODS:
                vals[m].append(_estimate(Sg, Gg, m))
        lines.append(
            f"| {g} | "
            + " | ".join(
                f"{np.mean(vals[m]):.4f} +- {np.std(vals[m]):.4f}" for m in METHODS
            )
            + " |"
        )
    lines.append("| full | " + " | ".join(f"{full[m]:.4f}" for m in METHODS) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--n-prompts", type=int, default=2000)
    ap.add_argument("--audit-sims", type=int, default=200)
    ap.add_argument("--G", default="3,5,10,20,50")
    ap.add_argument("--L", default="2,8,33")
    ap.add_argument(
        "--coverage-reps",
        type=int,
        default=300,
        help="count the audit pick's interval coverage over this many repetitions "
        "(more than --reps: the extra ones run the pick only)",
    )
    ap.add_argument(
        "--audits",
        type=int,
        default=1,
        help="also audit repetitions 1..K-1 (seed + k) and count each audit's "
        "interval coverage over --coverage-reps (the table keeps the first)",
    )
    ap.add_argument("--evalperf-reps", type=int, default=20)
    ap.add_argument("--no-evalperf", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument(
        "--audit-family", default="auto", help="family option of capfront.audit"
    )
    ap.add_argument("--save", default=None, help="JSON of the grid rows, per cell")
    ap.add_argument(
        "--load",
        nargs="*",
        default=None,
        help="format saved grids instead (a later file's row of a cell wins)",
    )
    ap.add_argument(
        "--cells",
        nargs="*",
        default=None,
        help="only these cells, as G:L:spec:rho (e.g. 5:33:high:0.0)",
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.load:
        # one row per cell; a later file's row wins (e.g. an --audits rerun)
        cells = {
            tuple(r[:4]): tuple(r)
            for f in args.load
            for r in json.loads(Path(f).read_text())
        }
        rows = list(cells.values())
    else:
        rows = grid(args)
    text = [
        "## Simulation grid\n",
        fmt_grid(rows, args.reps, args.n_prompts, args.audit_sims),
    ]
    if not args.no_evalperf:
        text += [
            "",
            "## EvalPerf: subsets of the draws against all of them\n",
            evalperf(args.evalperf_reps),
        ]
    text += [
        "",
        f"_Generated in {time.perf_counter() - t0:.0f} s by "
        "`docs/scripts/estimators_table.py`._",
    ]
    out = "\n".join(text)
    if args.out:
        Path(args.out).write_text(out + "\n")
    print(out)


if __name__ == "__main__":
    main()
