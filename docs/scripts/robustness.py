"""The robustness battery: every oracle estimator and the audit's pick on worlds
that are not pgm's own model (docs/scripts/worlds.py), against the known truth.

    # biases and RMSEs of every method, 20 repetitions per cell (resumable)
    PYTHONPATH=python nice -n 5 python docs/scripts/robustness.py --reps 20
    # the audit's pick and the coverage of its quoted interval
    PYTHONPATH=python nice -n 5 python docs/scripts/robustness.py --audit \
        --reps 4 --tag validation
    # the markdown tables of docs/estimators.md from the saved rows
    PYTHONPATH=python python docs/scripts/robustness.py --tables

Cells: family x L x G (``--families``, ``--L``, ``--G``), N prompts (``--N``).
Repetition ``r`` of a cell is the world ``WORLDS[family](N, L, G, seed)`` with
``seed`` a hash of (family, L, G, r): every repetition is a new pool and new
prompts, and the same key gives the same data in every run.

Method rows (``docs/data/battery_methods.csv``): the estimate of every method of
``capfront.debiased_oracle`` (``METHODS``), the oracle of the data set's prompts
``mean_n max_l p`` and the population oracle; ``pgm_aic``, ``correlated_aic``
and ``aic_pick`` (the estimate of the one with the lower AIC: what the audit's
``correlated="auto"`` compares before it scores the correlated model). Audit rows
(``docs/data/battery_audit.csv``, with ``--audit``): ``a = capfront.audit(res,
n_sims=--audit-sims, seed=seed)``; ``r = capfront.debiased_oracle(res,
a.recommended, audit=a)``: ``a.recommended``, ``r.value``, ``r.ci`` (the quoted
estimate and interval, whatever the API makes of them at the time).

Rows carry ``--tag`` (e.g. ``before`` / ``after``) and the code's commit; a run
skips every (tag, family, L, G, rep) already saved, so it can be stopped and
resumed, and subsets run in parallel processes append to the same files.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import zlib
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest, norm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from worlds import VARIANTS, WORLDS, world  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "data"
METHODS_CSV = DATA / "battery_methods.csv"
AUDIT_CSV = DATA / "battery_audit.csv"
METHODS = (
    "naive",
    "pgm",
    "bootstrap_bc",
    "crossfit",
    "jackknife",
    "extrapolation",
    "double_bc",
    "correlated",
)
# not a method of capfront.debiased_oracle: pgm or correlated, whichever has the
# lower AIC on the data (both fitted to all N prompts): what the audit's
# correlated="auto" compares before it scores the correlated model
AIC_PICK = "aic_pick"
SHORT = {
    "naive": "naive",
    "pgm": "pgm",
    "bootstrap_bc": "bc",
    "crossfit": "cf",
    "jackknife": "jk",
    "extrapolation": "ext",
    "double_bc": "dbc",
    "correlated": "corr",
    AIC_PICK: "aic",
}
KEY = ["tag", "family", "L", "G", "rep"]
Z = 1.959964


def seed_of(family: str, L: int, G: int, rep: int) -> int:
    """The world's seed: a hash of its key (stable across runs and processes)."""
    return zlib.crc32(f"{family}/{L}/{G}/{rep}".encode())


def commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


POP = 20_000  # prompts for the population oracle (MC SE about 0.1 points)


def _world(family: str, L: int, G: int, rep: int, N: int) -> tuple[Any, int]:
    seed = seed_of(family, L, G, rep)
    return world(family)(N, L, G, seed, pop=POP), seed


def _base_row(key: dict[str, Any], w: Any, seed: int) -> dict[str, Any]:
    return {
        **key,
        "N": w.p.shape[0],
        "seed": seed,
        "oracle": w.oracle,
        "population_oracle": w.population_oracle,
        "naive_value": w.naive,
    }


def run_methods(
    key: dict[str, Any], N: int, methods: tuple[str, ...] = METHODS
) -> dict[str, Any]:
    """Every method's estimate on one world (NaN and the error when one fails)."""
    import capfront as cf

    w, seed = _world(key["family"], key["L"], key["G"], key["rep"], N)
    row = _base_row(key, w, seed)
    t0 = time.perf_counter()
    aic = {}
    for m in methods:
        try:
            r = cf.debiased_oracle(w.results, m)
            row[m] = float(r.value)
            fit = r.diagnostics.get("fit") if m in ("pgm", "correlated") else None
            if fit is not None:  # the fit's AIC, and pgm's classes and family
                aic[m] = 2.0 * fit.n_params - 2.0 * fit.loglik
                row[f"{m}_aic"] = aic[m]
                if m == "pgm":
                    row.update(pgm_classes=int(fit.n_classes), pgm_family=fit.family)
                    row["pgm_bounds"] = "{:g}:{:g}".format(*fit.bounds)
        except Exception as exc:  # a failing method is a result, not a crash
            row[m] = np.nan
            row[f"{m}_error"] = f"{type(exc).__name__}: {exc}"[:200]
    if len(aic) == 2:
        row[AIC_PICK] = row[min(aic, key=lambda k: (aic[k], k != "pgm"))]
    row["seconds"] = time.perf_counter() - t0
    return row


def run_audit(key: dict[str, Any], N: int, sims: int) -> dict[str, Any]:
    """The audit's pick and its quoted estimate and interval on one world."""
    import capfront as cf

    w, seed = _world(key["family"], key["L"], key["G"], key["rep"], N)
    row = {**_base_row(key, w, seed), "audit_sims": sims}
    t0 = time.perf_counter()
    try:
        a = (
            cf.audit(w.results, seed=seed)
            if sims is None
            else cf.audit(w.results, n_sims=sims, seed=seed)
        )
        row["audit_seconds"] = time.perf_counter() - t0
        r = cf.debiased_oracle(w.results, a.recommended, audit=a)
        lo, hi = (np.nan, np.nan) if r.ci is None else r.ci
        row.update(
            recommended=a.recommended, value=float(r.value), lo=lo, hi=hi, se=r.se
        )
        try:  # the population interval, where the API has one
            plo, phi = a.interval(r.value, r.se or 0.0, target="population")
            row.update(pop_lo=plo, pop_hi=phi)
        except Exception:
            pass
        row["family_fit"] = getattr(a, "family", None)
        row.update(  # what the quoted interval is made of
            trusted=bool(a.trusted),
            latent_classes=int(a.latent_classes),
            sd=float(a.table.loc[a.recommended, "sd"]),
            max_abs_bias=float(a.table.loc[a.recommended, "max_abs_bias"]),
            spread=float(a.model_spread()),
            worlds_passing=" ".join(w for w, v in a.world_weights.items() if v > 0),
            # every passing world is the quoted model's own (older rows: none)
            self_audited=bool(getattr(a, "self_audited", False)),
            # the correlated fit's leading eigenvalues before a gap (0: none;
            # the correlated_lowrank world's rank), when it was fitted
            gap_rank=(a.correlated or {}).get("gap_rank", np.nan),
        )
        if a.sensitivity is not None and len(a.sensitivity):
            # each rival: classes, family, estimate's difference, log-likelihood
            # difference (rival - fitted), parameters' difference
            row["rivals"] = ";".join(
                f"{q.latent_classes}:{q.family}:{q.difference:.6g}"
                f":{getattr(q, 'loglik_difference', np.nan):.6g}"
                f":{getattr(q, 'params_difference', np.nan):.0f}"
                for q in a.sensitivity.itertuples()
            )
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"[:200]
    return row


def _done(path: Path, tag: str) -> set[tuple]:
    if not path.exists():
        return set()
    old = pd.read_csv(path, usecols=KEY)
    old = old[old["tag"] == tag]
    return set(map(tuple, old[KEY].itertuples(index=False, name=None)))


def _append(path: Path, rows: list[dict[str, Any]]) -> None:
    """Append rows; a new column rewrites the file with the union of columns."""
    new = pd.DataFrame(rows)
    if path.exists():
        head = pd.read_csv(path, nrows=0).columns
        if set(new.columns) <= set(head):
            new.reindex(columns=head).to_csv(path, mode="a", header=False, index=False)
            return
        new = pd.concat([pd.read_csv(path), new], ignore_index=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    new.to_csv(path, index=False)


def _init_worker(threads: int) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    from capfront._backend import set_num_threads

    set_num_threads(threads)


def run(args: argparse.Namespace) -> None:
    path = AUDIT_CSV if args.audit else METHODS_CSV
    done = _done(path, args.tag)
    keys = [
        {"tag": args.tag, "family": f, "L": L, "G": G, "rep": r}
        for r in range(args.first_rep, args.first_rep + args.reps)
        for f in args.families
        for L in args.L
        for G in args.G
    ]
    todo = [k for k in keys if tuple(k[c] for c in KEY) not in done]
    print(f"{len(keys) - len(todo)} of {len(keys)} done; running {len(todo)}")
    version = args.commit or commit()
    t0 = time.perf_counter()

    def jobs(pool: Any) -> Iterable[Any]:
        if args.audit:
            return (pool.submit(run_audit, k, args.N, args.audit_sims) for k in todo)
        return (pool.submit(run_methods, k, args.N, args.methods) for k in todo)

    batch: list[dict[str, Any]] = []
    with ProcessPoolExecutor(
        args.workers, initializer=_init_worker, initargs=(args.threads,)
    ) as pool:
        for i, fut in enumerate(list(jobs(pool))):
            row = {**fut.result(), "commit": version}
            batch.append(row)
            if len(batch) >= args.flush or i == len(todo) - 1:
                _append(path, batch)
                batch = []
                elapsed = time.perf_counter() - t0
                print(f"{i + 1}/{len(todo)} rows, {elapsed:.0f} s", flush=True)


# ----------------------------------------------------------------------- tables
def _target(bias: float, naive_bias: float) -> bool:
    """The issue's bias target: |bias| <= max(naive bias / 4, 0.2 points)."""
    return abs(bias) <= max(abs(naive_bias) / 4, 0.002)


def _stats(err: np.ndarray) -> tuple[float, float, float, float]:
    """Mean, its Monte Carlo SE, RMSE and its SE (delta method), in points."""
    err = err[np.isfinite(err)] * 100
    n = len(err)
    if n == 0:
        return (np.nan,) * 4
    bias = float(err.mean())
    se_bias = float(err.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan
    mse = float((err**2).mean())
    rmse = float(np.sqrt(mse))
    se_mse = float((err**2).std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan
    return bias, se_bias, rmse, se_mse / (2 * rmse) if rmse > 0 else np.nan


def _ran(d: pd.DataFrame) -> list[str]:
    """The methods with estimates in these rows (naive is its own column), and
    the AIC pick between pgm and correlated where both ran."""
    cols = [*METHODS, AIC_PICK]
    return [m for m in cols if m != "naive" and m in d and d[m].notna().any()]


def method_table(rows: pd.DataFrame, tag: str) -> str:
    """Bias +- its Monte Carlo SE (and RMSE) per method per cell, points, vs the
    prompts' oracle; a * marks a cell meeting the bias target."""
    d = rows[rows["tag"] == tag]
    ran = _ran(d)
    head = ["family", "L", "G", "n", "naive", *[SHORT[m] for m in ran]]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (f, L, G), g in d.groupby(["family", "L", "G"], sort=False):
        naive_bias = _stats((g["naive_value"] - g["oracle"]).to_numpy())[0] / 100
        b, sb, r, _ = _stats((g["naive_value"] - g["oracle"]).to_numpy())
        cells = [f, str(L), str(G), str(len(g)), f"{b:+.2f} +- {sb:.2f} ({r:.2f})"]
        for m in ran:
            b, sb, r, _ = _stats((g[m] - g["oracle"]).to_numpy())
            mark = "*" if _target(b / 100, naive_bias) else ""
            cells.append(f"{b:+.2f}{mark} +- {sb:.2f} ({r:.2f})")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def summary_table(rows: pd.DataFrame, tag: str) -> str:
    """Per family and method: ``b/r; worst; rmse``: cells whose |bias| (``b``)
    and whose RMSE (``r``, a stricter test: each repetition is a new pool) are
    within max(naive bias / 4, 0.2 points); the worst |bias| / naive bias; the
    worst RMSE (points)."""
    d = rows[rows["tag"] == tag]
    ran = _ran(d)
    head = ["family", "cells", *[SHORT[m] for m in ran]]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for f, gf in d.groupby("family", sort=False):
        cells = [f, str(gf.groupby(["L", "G"]).ngroups)]
        for m in ran:
            met, met_rmse, ratio, worst = 0, 0, 0.0, 0.0
            for _, g in gf.groupby(["L", "G"]):
                nb = _stats((g["naive_value"] - g["oracle"]).to_numpy())[0] / 100
                b, _, r, _ = _stats((g[m] - g["oracle"]).to_numpy())
                met += _target(b / 100, nb)
                met_rmse += _target(r / 100, nb)
                ratio = max(ratio, abs(b / 100) / max(abs(nb), 1e-9))
                worst = max(worst, r)
            cells.append(f"{met}/{met_rmse}; {ratio:.2f}; {worst:.2f}")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def _coverage(g: pd.DataFrame, lo: str, hi: str, truth: str) -> tuple[int, int]:
    ok = g[lo].notna() & g[hi].notna() & g[truth].notna()
    inside = (g[lo] <= g[truth]) & (g[truth] <= g[hi])
    return int((inside & ok).sum()), int(ok.sum())


def audit_table(audits: pd.DataFrame, methods: pd.DataFrame, tag: str) -> str:
    """Per cell: audits, picks, the quoted estimate's bias / RMSE (points), its
    interval's coverage of the prompts' oracle and of the population oracle,
    the mean half-width, and the naive bias of the method rows for the target."""
    d = audits[(audits["tag"] == tag) & audits["value"].notna()]
    m = methods[methods["tag"] == tag]
    head = [
        "family",
        "L",
        "G",
        "audits",
        "picks",
        "naive bias",
        "quoted bias (RMSE)",
        "cover prompts",
        "cover population",
        "half-width",
    ]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (f, L, G), g in d.groupby(["family", "L", "G"], sort=False):
        gm = m[(m["family"] == f) & (m["L"] == L) & (m["G"] == G)]
        src = gm if len(gm) else g
        nb = _stats((src["naive_value"] - src["oracle"]).to_numpy())[0]
        b, sb, r, _ = _stats((g["value"] - g["oracle"]).to_numpy())
        picks = g["recommended"].value_counts()
        pick = ", ".join(f"{SHORT.get(k, k)} {v}" for k, v in picks.items())
        k, n = _coverage(g, "lo", "hi", "oracle")
        cov = f"{k}/{n}" + ("*" if n and 0.90 <= k / n <= 0.99 else "")
        if "pop_lo" in g and g["population_oracle"].notna().any():
            kp, n_p = _coverage(g, "pop_lo", "pop_hi", "population_oracle")
            cov_p = f"{kp}/{n_p}"
        else:
            cov_p = "-"
        mark = "*" if _target(b / 100, nb / 100) else ""
        half = float(((g["hi"] - g["lo"]) / 2).mean() * 100)
        out.append(
            f"| {f} | {L} | {G} | {len(g)} | {pick} | {nb:+.2f} | "
            f"{b:+.2f}{mark} +- {sb:.2f} ({r:.2f}) | {cov} | {cov_p} | {half:.2f} |"
        )
    return "\n".join(out)


def _clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial interval for a coverage of ``k`` in ``n``."""
    if n == 0:
        return float("nan"), float("nan")
    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def audit_summary(audits: pd.DataFrame, tag: str | list[str]) -> str:
    """Per family: audits, the quoted interval's coverage with its exact 95%
    interval, the median half-width, the quoted estimate's mean error and RMSE,
    estimates more than 1 point off, estimates further off than the naive oracle,
    audit seconds. ``tag`` may be several tags pooled."""
    tags = [tag] if isinstance(tag, str) else list(tag)
    d = audits[audits["tag"].isin(tags) & audits["value"].notna()]
    head = [
        "family",
        "audits",
        "coverage",
        "exact 95% interval",
        "median half-width",
        "mean error +- SE",
        "RMSE",
        "off > 1 pt",
        "worse than naive",
        "s / audit",
    ]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    groups = list(d.groupby("family", sort=False)) + [("all", d)]
    for f, g in groups:
        k, n = _coverage(g, "lo", "hi", "oracle")
        lo, hi = _clopper_pearson(k, n)
        err = (g["value"] - g["oracle"]).to_numpy()
        naive = (g["naive_value"] - g["oracle"]).to_numpy()
        mean, se, r, _ = _stats(err)
        half = float(np.median((g["hi"] - g["lo"]) / 2) * 100)
        off = int((np.abs(err) > 0.01).sum())
        worse = int((np.abs(err) > np.abs(naive) + 1e-12).sum())
        sec = g["audit_seconds"].mean()
        name = f"**{f}**" if f == "all" else f
        out.append(
            f"| {name} | {n} | {k}/{n} = {k / max(n, 1):.0%} | {lo:.0%}-{hi:.0%} | "
            f"{half:.2f} | {mean:+.2f} +- {se:.2f} | {r:.2f} | {off} | {worse} | "
            f"{sec:.1f} |"
        )
    return "\n".join(out)


def _cell_errors(
    methods: pd.DataFrame, from_tags: list[str]
) -> dict[tuple, tuple[float, float]]:
    """``(method, family, L, G) -> (mean, SD)`` of the method rows' errors, from
    the first tag of ``from_tags`` that has the cell."""
    cells: dict[tuple, tuple[float, float]] = {}
    for t in reversed(from_tags):  # the first tag wins
        mt = methods[methods["tag"] == t]
        for col in ("pgm", "correlated", "naive"):
            if col not in mt or mt[col].isna().all():
                continue
            e = (mt[col] - mt["oracle"]).groupby([mt["family"], mt["L"], mt["G"]])
            for key, v in e:
                v = v.dropna()
                if len(v) >= 2:
                    cells[(col, *key)] = (float(v.mean()), float(v.std(ddof=1)))
    return cells


def _coverages(
    d: pd.DataFrame, cells: dict[tuple, tuple[float, float]]
) -> dict[str, tuple[int, int, float, int]]:
    """Per family of the audit rows ``d``: ``(covered, audits, predicted
    coverage, audits without cell rows)`` (:func:`predicted_coverage`)."""
    out = {}
    for f, g in d.groupby("family", sort=False):
        k, n = _coverage(g, "lo", "hi", "oracle")
        probs, missing = [], 0
        for _, r in g.iterrows():
            key = (r["recommended"], r["family"], r["L"], r["G"])
            if key not in cells:
                missing += 1
                continue
            b, sd = cells[key]
            h = (r["hi"] - r["lo"]) / 2
            probs.append(norm.cdf((h - b) / sd) - norm.cdf((-h - b) / sd))
        out[str(f)] = (k, n, float(np.mean(probs)) if probs else np.nan, missing)
    return out


def _cov_words(k: int, n: int, pred: float) -> tuple[str, str]:
    return f"{k}/{n} = {k / max(n, 1):.0%}", "-" if np.isnan(pred) else f"{pred:.1%}"


def predicted_coverage(
    audits: pd.DataFrame, methods: pd.DataFrame, tags: list[str], from_tags: list[str]
) -> str:
    """Per family: the audits' observed coverage and the coverage their
    intervals' half-widths predict from the method rows. For each audit, the
    quoted method's errors in the audit's cell (20 pools in the method rows of
    the first tag of ``from_tags`` that has them) give a normal ``N(b, s)``;
    the audit's half-width ``h`` covers with probability ``P(|e| <= h)``, ``e ~
    N(b, s)``. Averaged over a family's audits: a smoother measure than the
    0/1 outcomes of a few dozen audits (it ignores that a half-width tracks its
    own data set's difficulty, so it errs low)."""
    d = audits[audits["tag"].isin(tags) & audits["value"].notna()]
    head = ["family", "audits", "observed", "predicted", "audits without cell rows"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for f, (k, n, pred, missing) in _coverages(
        d, _cell_errors(methods, from_tags)
    ).items():
        obs, pr = _cov_words(k, n, pred)
        out.append(f"| {f} | {n} | {obs} | {pr} | {missing} |")
    return "\n".join(out)


#: half-widths from an audit row's recorded parts (``sd``, ``max_abs_bias``,
#: ``spread``): the audit's rule and alternatives (``--predict`` with ``--rules``)
HALF_WIDTH_RULES = {
    "z sd + 2 max(b, s) (the audit's)": lambda r, z: (
        z * r["sd"] + 2 * np.maximum(r["max_abs_bias"], r["spread"])
    ),
    "z sd + max(2 b, 1.5 s)": lambda r, z: (
        z * r["sd"] + np.maximum(2 * r["max_abs_bias"], 1.5 * r["spread"])
    ),
    "z sd + max(2 b, s)": lambda r, z: (
        z * r["sd"] + np.maximum(2 * r["max_abs_bias"], r["spread"])
    ),
    "z sd + 2 b": lambda r, z: z * r["sd"] + 2 * r["max_abs_bias"],
}


def rule_table(
    audits: pd.DataFrame, methods: pd.DataFrame, tags: list[str], from_tags: list[str]
) -> str:
    """Observed / predicted coverage (:func:`predicted_coverage`) per family if
    the trusted audits' intervals had the half-widths of each of
    :data:`HALF_WIDTH_RULES` around the same estimates."""
    z = float(norm.ppf(0.975))
    cells = _cell_errors(methods, from_tags)
    d0 = audits[audits["tag"].isin(tags) & audits["value"].notna()]
    ok = d0["trusted"].astype(bool) & d0["sd"].notna()
    cols = {}
    for name, rule in HALF_WIDTH_RULES.items():
        d = d0.copy()
        h = rule(d[ok], z)
        d.loc[ok, "lo"] = np.maximum(0.0, d.loc[ok, "value"] - h)
        d.loc[ok, "hi"] = np.minimum(1.0, d.loc[ok, "value"] + h)
        cols[name] = {
            f: f"{k / max(n, 1):.0%} / {_cov_words(k, n, p)[1]}"
            for f, (k, n, p, _) in _coverages(d, cells).items()
        }
    names = list(cols)
    out = ["| family | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
    out += [
        f"| {f} | " + " | ".join(cols[n][f] for n in names) + " |"
        for f in cols[names[0]]
    ]
    return "\n".join(out)


def compare_table(
    methods: pd.DataFrame, audits: pd.DataFrame, a: str, b: str, method: str = "pgm"
) -> str:
    """Per family, on the keys (family, L, G, rep) both tags ran: ``method``'s
    cells within the bias target, mean |bias| over cells and worst RMSE
    (points), then the quoted estimate's RMSE and interval coverage over the
    audits both tags ran."""
    cols = ["family", "L", "G", "rep"]
    out = [
        f"| family | cells (reps) | {method} on target {a} / {b} | mean abs bias "
        f"{a} / {b} | worst RMSE {a} / {b} | audits | quoted RMSE {a} / {b} | "
        f"coverage {a} / {b} |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ma = methods[methods["tag"] == a].set_index(cols)
    mb = methods[methods["tag"] == b].set_index(cols)
    both = ma.index.intersection(mb.index)
    ok = audits["value"].notna()
    aa = audits[(audits["tag"] == a) & ok].set_index(cols)
    ab = audits[(audits["tag"] == b) & ok].set_index(cols)
    aud = aa.index.intersection(ab.index)
    for f in dict.fromkeys(both.get_level_values("family")):
        res = {}
        for tag, m in ((a, ma), (b, mb)):
            g = m.loc[[k for k in both if k[0] == f]].reset_index()
            met, absb, worst, n = 0, [], 0.0, 0
            for _, c in g.groupby(["L", "G"]):
                nb = _stats((c["naive_value"] - c["oracle"]).to_numpy())[0] / 100
                bias, _, r, _ = _stats((c[method] - c["oracle"]).to_numpy())
                met += _target(bias / 100, nb)
                absb.append(abs(bias))
                worst = max(worst, r)
                n += 1
            res[tag] = (met, n, float(np.mean(absb)), worst, len(g))
        keys = [k for k in aud if k[0] == f]
        cov, rm = {}, {}
        for tag, t in ((a, aa), (b, ab)):
            g = t.loc[keys]
            k, n = _coverage(g, "lo", "hi", "oracle")
            cov[tag] = f"{k}/{n}"
            rm[tag] = _stats((g["value"] - g["oracle"]).to_numpy())[2]
        ra, rb_ = res[a], res[b]
        out.append(
            f"| {f} | {ra[1]} ({ra[4] // max(ra[1], 1)}) | {ra[0]} / {rb_[0]} | "
            f"{ra[2]:.2f} / {rb_[2]:.2f} | {ra[3]:.2f} / {rb_[3]:.2f} | {len(keys)} | "
            f"{rm[a]:.2f} / {rm[b]:.2f} | {cov[a]} / {cov[b]} |"
        )
    return "\n".join(out)


def tables(args: argparse.Namespace) -> None:
    methods = pd.read_csv(METHODS_CSV) if METHODS_CSV.exists() else None
    if methods is not None and not args.compare:  # cells cut short are left out
        size = methods.groupby(["tag", "family", "L", "G"])["rep"].transform("size")
        methods = methods[size >= args.min_reps]
    audits = pd.read_csv(AUDIT_CSV) if AUDIT_CSV.exists() else None
    if args.compare:
        a, b = args.compare
        print(compare_table(methods, audits, a, b))
        return
    tags = args.tags or sorted(
        set(methods["tag"] if methods is not None else [])
        | set(audits["tag"] if audits is not None else [])
    )
    for tag in tags:
        if methods is not None and (methods["tag"] == tag).any():
            if not args.summary:
                print(f"\n### Methods, tag {tag}: bias +- MC SE (RMSE), points\n")
                print(method_table(methods, tag))
            print(f"\n### Per family, tag {tag}: cells on target (bias/RMSE); ")
            print("worst |bias| / naive bias; worst RMSE\n")
            print(summary_table(methods, tag))
        if audits is not None and (audits["tag"] == tag).any():
            m = methods if methods is not None else audits.iloc[:0]
            if not args.summary:
                print(f"\n### The audit's pick, tag {tag}\n")
                print(audit_table(audits, m, tag))
            print(f"\n### The audit per family, tag {tag}\n")
            print(audit_summary(audits, tag))
    if args.pool and audits is not None:
        print(f"\n### The audit per family, tags {', '.join(args.pool)} pooled\n")
        print(audit_summary(audits, args.pool))
        if args.predict and methods is not None:
            print("\n### Observed and predicted coverage, the same audits\n")
            print(predicted_coverage(audits, methods, args.pool, args.predict))
            if args.rules:
                print("\n### Observed / predicted coverage under other half-widths\n")
                print(rule_table(audits, methods, args.pool, args.predict))


def _names(text: str) -> list[str]:
    """A comma-separated command-line list."""
    return text.split(",")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    ap.add_argument("--families", type=_names, default=list(WORLDS))
    ap.add_argument("--L", type=ints, default=[4, 12, 30])
    ap.add_argument("--G", type=ints, default=[5, 10, 20])
    ap.add_argument("--N", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--first-rep", type=int, default=0)
    ap.add_argument("--methods", type=lambda s: tuple(_names(s)), default=METHODS)
    ap.add_argument("--audit", action="store_true", help="audit rows, not methods")
    ap.add_argument(
        "--audit-sims", type=int, default=None, help="default: the audit's own"
    )
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="kernel threads/worker")
    ap.add_argument(
        "--commit", default=None, help="code version to record (default: HEAD)"
    )
    ap.add_argument("--flush", type=int, default=10, help="rows per append")
    ap.add_argument("--tag", default="before")
    ap.add_argument("--tables", action="store_true")
    ap.add_argument(
        "--min-reps",
        type=int,
        default=20,
        help="--tables: method cells with fewer repetitions are left out",
    )
    ap.add_argument(
        "--compare",
        type=_names,
        default=None,
        help="--tables: "
        "TAG_A,TAG_B per family on the keys both ran (pgm and the quoted value)",
    )
    ap.add_argument("--summary", action="store_true", help="--tables per family only")
    ap.add_argument("--tags", type=_names, default=None)
    ap.add_argument(
        "--pool",
        type=_names,
        default=None,
        help="--tables: also one audit table over these tags pooled",
    )
    ap.add_argument(
        "--predict",
        type=_names,
        default=None,
        help="--tables --pool: also the coverage the pooled audits' half-widths "
        "predict from these method tags' cell errors (first tag wins)",
    )
    ap.add_argument(
        "--rules",
        action="store_true",
        help="--predict: also under the other half-width rules (HALF_WIDTH_RULES)",
    )
    args = ap.parse_args()
    bad = set(args.families) - set(WORLDS) - set(VARIANTS)
    if bad:
        ap.error(
            f"unknown families {sorted(bad)}; use {', '.join(WORLDS)} "
            f"or a stress variant: {', '.join(VARIANTS)}"
        )
    if args.tables:
        tables(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
