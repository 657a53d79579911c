"""Regenerate the tables of docs/estimators.md.

    PYTHONPATH=python python docs/scripts/estimators_table.py --reps 40 \
        --audit-sims 40 --G 5,10,20,50 --audit-family logitnormal --save grid.json
    PYTHONPATH=python python docs/scripts/estimators_table.py --load grid.json \
        --reaudit --audit-family auto --audit-sims 40 --reps 40

(the commands of docs/estimators.md; ``--L`` / ``--cells`` run subsets of the grid
with the same numbers, each cell has its own seed).

Part 1, simulation grid: for every (G, L, specialisation, within-cell correlation)
cell, one ``capfront.simulate`` pool of 40,000 prompts (4 topics) is the population;
each repetition samples ``--n-prompts`` prompts from it and fresh Binomial(G, p)
counts, and every estimator is scored against the sampled prompts' own oracle
``mean_n max_l p`` (bias, RMSE) and its ``value +- 1.96 se`` interval against the
population oracle (coverage). The audit is run once per cell (on the first
repetition, ``--audit-sims`` simulations) and its recommendation is scored, also
with ``AuditResult.interval`` and a bias-aware interval. ``pgm_bb`` is ``pgm``
with ``family="betabinomial"``.

Part 2, EvalPerf: random subsets of g = 5, 10, 20 draws per cell (hypergeometric
draws from the counts) against the full 100 (50 for 3 models).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import capfront as cf
from capfront.debias import audit, decompose_counts

METHODS = (
    "naive",
    "bootstrap_bc",
    "crossfit",
    "jackknife",
    "extrapolation",
    "pgm",
    "pgm_bb",
)
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


def run_cell(G, L, spec, rho, reps, n_prompts, audit_sims, seed, family="auto"):
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
    recommended = None
    audit_bias = {}
    audit_rmse = {}
    prev_fit = {}
    for r in range(reps):
        idx = rng.choice(len(p_pool), n_prompts, replace=False)
        p = p_pool[idx]
        S = rng.binomial(G, p)
        Gm = np.full_like(S, G)
        truth.append(p.max(axis=1).mean())
        for m in methods:
            opts = {}
            name = m
            if m in ("pgm", "pgm_bb"):
                # warm start from the previous repetition's fit (speed only)
                name = "pgm"
                opts = {"topic": topic_pool[idx], "init": prev_fit.get(m)}
                if m == "pgm_bb":
                    opts["family"] = "betabinomial"
            d = decompose_counts(S, Gm, name, **opts)
            if name == "pgm":
                prev_fit[m] = d.diagnostics["fit"]
            est[m].append(d.estimate())
            se[m].append(d.standard_error())
        if r == 0 and audit_sims > 0:
            res = cf.EvalResults.from_counts(S, Gm, topic=topic_pool[idx])
            a = audit(res, n_sims=audit_sims, seed=seed, family=family)
            recommended = a.recommended
            audit_bias = a.table["bias"].to_dict()
            # AuditResult.interval's spread: sqrt(sd^2 + bias^2) per method
            audit_rmse = np.hypot(a.table["sd"], a.table["bias"]).to_dict()
            if a.family == "betabinomial":  # the audit's pgm is the Beta family
                audit_bias["pgm_bb"] = audit_bias.pop("pgm", 0.0)
                audit_rmse["pgm_bb"] = audit_rmse.pop("pgm", 0.0)
                if recommended == "pgm":
                    recommended = "pgm_bb"
    truth = np.array(truth)
    out = {}
    for m in methods:
        e = np.array(est[m])
        s = np.array(se[m])
        err = e - truth
        # bias-aware interval: widened by the audit's estimate of the method's bias
        wide = 1.96 * s + abs(audit_bias.get(m, 0.0))
        # AuditResult.interval: value +- 1.96 max(se, sqrt(sd^2 + bias^2))
        aud = 1.96 * np.maximum(s, audit_rmse.get(m, 0.0))
        out[m] = {
            "bias": err.mean(),
            "rmse": np.sqrt((err**2).mean()),
            "cov": np.mean(np.abs(e - truth_pop) <= 1.96 * s),
            "cov_prompts": np.mean(np.abs(err) <= 1.96 * s),
            "cov_wide": np.mean(np.abs(e - truth_pop) <= wide),
            "cov_wide_prompts": np.mean(np.abs(err) <= wide),
            "cov_audit": np.mean(np.abs(e - truth_pop) <= aud),
            "cov_audit_prompts": np.mean(np.abs(err) <= aud),
        }
    return out, recommended, float(truth.mean())


def audit_cell(G, L, spec, rho, n_prompts, audit_sims, seed, family):
    """The audit alone on a cell's first repetition (the same data ``run_cell``
    audits): ``(recommended, family, table)``."""
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
    topic_pool = np.asarray(pool.topic).astype(np.int64)
    rng = np.random.default_rng(seed + 1)
    idx = rng.choice(len(pool.truth_p), n_prompts, replace=False)
    S = rng.binomial(G, pool.truth_p[idx])
    res = cf.EvalResults.from_counts(S, np.full_like(S, G), topic=topic_pool[idx])
    a = audit(res, n_sims=audit_sims, seed=seed, family=family)
    return a.recommended, a.family, a.table["bias"].to_dict()


def reaudit(rows, args):
    """Re-run only the audits of a saved grid (``--load``) with
    ``--audit-family``; the picks are scored on the saved repetitions."""
    out = []
    t0 = time.perf_counter()
    for G, L, spec, rho, o_true, res, _ in rows:
        seed = 10 * L + 2 * (spec == "high") + (rho > 0) + 1
        rec, fam, _ = audit_cell(
            G, L, spec, rho, args.n_prompts, args.audit_sims, seed, args.audit_family
        )
        # the Beta family's pgm is the pgm_bb column (at a zero cell effect, where
        # rho = 0 cells have no such column, the two families are the same model)
        if rec == "pgm" and fam == "betabinomial" and "pgm_bb" in res:
            rec = "pgm_bb"
        out.append((G, L, spec, rho, o_true, res, rec))
        print(
            f"[{time.perf_counter() - t0:6.0f}s] G={G} L={L} {spec} rho={rho} "
            f"rec={rec} family={fam}",
            flush=True,
        )
        if args.save:
            Path(args.save).write_text(json.dumps(out, default=float))
    return out


def grid(args):
    rows = []
    Gs = [int(g) for g in args.G.split(",")]
    Ls = [int(v) for v in args.L.split(",")]
    t0 = time.perf_counter()
    for L in Ls:
        for spec in ("low", "high"):
            for rho in (0.0, 0.2):
                # a seed per (L, spec, rho): any subset of the grid gives the same
                # numbers for its cells
                seed = 10 * L + 2 * (spec == "high") + (rho > 0) + 1
                for G in Gs:
                    if args.cells and f"{G}:{L}:{spec}:{rho}" not in args.cells:
                        continue
                    res, rec, o_true = run_cell(
                        G,
                        L,
                        spec,
                        rho,
                        args.reps,
                        args.n_prompts,
                        args.audit_sims,
                        seed,
                        args.audit_family,
                    )
                    rows.append((G, L, spec, rho, o_true, res, rec))
                    if args.save:
                        Path(args.save).write_text(json.dumps(rows, default=float))
                    print(
                        f"[{time.perf_counter() - t0:6.0f}s] G={G} L={L} {spec} "
                        f"rho={rho} rec={rec}",
                        flush=True,
                    )
    return rows


def fmt_grid(rows, reps, n_prompts):
    lines = []
    head = " | ".join(f"{SHORT[m]}" for m in METHODS)
    lines.append(
        f"Bias in points (x100) against `O_true`, {reps} repetitions of "
        f"N = {n_prompts} prompts; RMSE in parentheses.\n"
    )
    lines.append(
        f"| G | L | spec | rho | O_true | {head} | audit picks | "
        "its bias/naive | its coverage (pop / prompts) | bias-aware (pop / prompts) |"
    )
    lines.append("|" + "---|" * (len(METHODS) + 9))
    for G, L, spec, rho, o_true, res, rec in rows:
        cells = []
        for m in METHODS:
            if m in res:
                cells.append(
                    f"{100 * res[m]['bias']:+.2f} ({100 * res[m]['rmse']:.2f})"
                )
            else:
                cells.append("-")
        if rec is not None:
            ratio = abs(res[rec]["bias"]) / max(abs(res["naive"]["bias"]), 1e-12)
            extra = (
                f"{rec} | {ratio:.2f} | {res[rec]['cov']:.2f} / "
                f"{res[rec]['cov_prompts']:.2f} | {res[rec]['cov_wide']:.2f} / "
                f"{res[rec]['cov_wide_prompts']:.2f}"
            )
        else:
            extra = "- | - | - | -"
        lines.append(
            f"| {G} | {L} | {spec} | {rho} | {o_true:.3f} | "
            + " | ".join(cells)
            + f" | {extra} |"
        )
    lines.append("")
    lines.append(summary(rows))
    lines.append("")
    lines.append(
        "Coverage of `value +- 1.96 se` (prompt-level se) of the population "
        "oracle, per method:\n"
    )
    lines.append(
        "| G | L | spec | rho | " + " | ".join(SHORT[m] for m in METHODS) + " |"
    )
    lines.append("|" + "---|" * (len(METHODS) + 4))
    for G, L, spec, rho, _, res, _ in rows:
        cov = [f"{res[m]['cov']:.2f}" if m in res else "-" for m in METHODS]
        lines.append(f"| {G} | {L} | {spec} | {rho} | " + " | ".join(cov) + " |")
    return "\n".join(lines)


def summary(rows):
    """Counts of the issue's targets over the cells with G >= 5."""
    big = [r for r in rows if r[0] >= 5 and r[6] is not None]
    if not big:
        return ""
    t1 = sum(abs(r[5][r[6]]["bias"]) <= 0.25 * abs(r[5]["naive"]["bias"]) for r in big)
    t1_abs = sum(
        abs(r[5][r[6]]["bias"]) <= 0.25 * abs(r[5]["naive"]["bias"])
        or abs(r[5][r[6]]["bias"]) <= 0.001
        for r in big
    )

    def band(key):
        return sum(0.90 <= r[5][r[6]][key] <= 0.99 for r in big)

    def atleast(key):
        return sum(r[5][r[6]][key] >= 0.90 for r in big)

    n = len(big)
    return (
        f"Cells with G >= 5: {n}. The audit's pick has |bias| <= 1/4 of naive's in "
        f"{t1} (in {t1_abs} if a |bias| <= 0.1 points also counts). Its "
        f"`value +- 1.96 se` covers in 90-99% of repetitions in {band('cov')} "
        f"(population oracle) / {band('cov_prompts')} (the sampled prompts' "
        f"oracle) cells, at least 90% in {atleast('cov')} / "
        f"{atleast('cov_prompts')}; the bias-aware interval covers in 90-99% in "
        f"{band('cov_wide')} / {band('cov_wide_prompts')}, at least 90% in "
        f"{atleast('cov_wide')} / {atleast('cov_wide_prompts')}."
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
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--n-prompts", type=int, default=2000)
    ap.add_argument("--audit-sims", type=int, default=40)
    ap.add_argument("--G", default="5,10,20,50")
    ap.add_argument("--L", default="2,8,33")
    ap.add_argument("--evalperf-reps", type=int, default=20)
    ap.add_argument("--out", default=None)
    ap.add_argument(
        "--audit-family", default="auto", help="family option of capfront.audit"
    )
    ap.add_argument("--save", default=None, help="JSON of the grid rows, per cell")
    ap.add_argument(
        "--load", default=None, help="format a saved grid instead of running it"
    )
    ap.add_argument(
        "--cells",
        nargs="*",
        default=None,
        help="only these cells, as G:L:spec:rho (e.g. 5:33:high:0.0)",
    )
    ap.add_argument(
        "--reaudit",
        action="store_true",
        help="with --load: re-run only the audits (with --audit-family)",
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.load:
        rows = [tuple(r) for r in json.loads(Path(args.load).read_text())]
        if args.reaudit:
            rows = reaudit(rows, args)
    else:
        rows = grid(args)
    text = [
        "## Simulation grid\n",
        fmt_grid(rows, args.reps, args.n_prompts),
        "",
        "## EvalPerf: subsets of the draws against all of them\n",
        evalperf(args.evalperf_reps),
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
