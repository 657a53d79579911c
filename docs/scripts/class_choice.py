"""How pgm's number of latent classes should be chosen: on battery worlds
(docs/scripts/worlds.py, the seeds of robustness.py), pgm's estimate with each
K in ``{1, 2, 4, 8}`` (the cell-effect family of ``family="auto"``), its
log-likelihood and parameter count, and which K each rule would pick.

    # the rows (one JSON line per world; resumable: saved keys are skipped)
    PYTHONPATH=python nice -n 10 python docs/scripts/class_choice.py \
        --L 4,12 --G 5,20 --reps 0
    # the comparison of the rules from the saved rows
    PYTHONPATH=python python docs/scripts/class_choice.py --summary

Rules: ``-2 loglik + c n_params`` with ``c = log N`` (BIC) or ``c = 2`` (AIC),
the search over increasing K stopping after ``patience`` candidates in a row
that do not improve (1: the old BIC search; 2: pgm's AIC search). The score of
a rule: how often its pick is within ``max(|naive bias| / 4, 0.2 points)`` of
the data set's oracle, and its mean absolute error.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from robustness import _world  # noqa: E402
from worlds import VARIANTS, WORLDS  # noqa: E402

import capfront as cf  # noqa: E402

ROWS = Path(__file__).resolve().parents[1] / "data" / "class_choice.jsonl"
KS: tuple[int, ...] = (1, 2, 4, 8)
RULES = {  # name: (penalty per parameter as a function of N, patience)
    "BIC, stop at the first miss (before)": (np.log, 1),
    "BIC, patience 2": (np.log, 2),
    "AIC, stop at the first miss": (lambda n: 2.0, 1),
    "AIC, patience 2 (now)": (lambda n: 2.0, 2),
    "AIC, every K": (lambda n: 2.0, 99),
}


def pending(args: argparse.Namespace, path: Path):
    """The ``(family, L, G, rep)`` keys of the grid that ``path`` (JSON lines,
    one row per world) does not hold yet."""
    done = set()
    if path.exists():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            done.add((r["family"], r["L"], r["G"], r["rep"]))
    for key in itertools.product(args.families, args.L, args.G, args.reps):
        if key not in done:
            yield key


def rows(args: argparse.Namespace) -> None:
    with ROWS.open("a") as out:
        for fam, L, G, rep in list(pending(args, ROWS)):
            out.write(json.dumps(one(fam, L, G, rep, args.N)) + "\n")
            out.flush()


def one(fam: str, L: int, G: int, rep: int, N: int) -> dict:
    """One world's row: ``v<K>``, ``ll<K>``, ``np<K>``, ``t<K>`` for every K of
    :data:`KS` (estimate, log-likelihood, parameter count, seconds)."""
    w, _ = _world(fam, L, G, rep, N)
    family = cf.debiased_oracle(w.results, "pgm", latent_classes=1).fit.family
    row = dict(family=fam, L=L, G=G, rep=rep, N=N, oracle=w.oracle, fam=family)
    row["naive"] = cf.debiased_oracle(w.results, "naive").value
    for k in KS:
        t = time.perf_counter()
        d = cf.debiased_oracle(w.results, "pgm", family=family, latent_classes=k)
        row[f"v{k}"], row[f"ll{k}"] = d.value, d.fit.loglik
        row[f"np{k}"], row[f"t{k}"] = d.fit.n_params, time.perf_counter() - t
    print(fam, L, G, rep, {k: round(100 * (row[f"v{k}"] - w.oracle), 2) for k in KS})
    return row


def pick(r: pd.Series, penalty: float, patience: int) -> int:
    """The K a rule picks for one row."""
    crit = {k: -2.0 * r[f"ll{k}"] + penalty * r[f"np{k}"] for k in KS}
    crit = {k: c for k, c in crit.items() if np.isfinite(c)}
    ks = sorted(crit)
    seen, misses = [ks[0]], 0
    for k in ks[1:]:
        misses = misses + 1 if crit[k] >= min(crit[j] for j in seen) else 0
        seen.append(k)
        if misses >= patience:
            break
    return min(seen, key=lambda k: crit[k])


def summary() -> None:
    d = pd.DataFrame([json.loads(x) for x in ROWS.read_text().splitlines()])
    naive = 100 * (d["naive"] - d["oracle"])
    target = np.maximum(naive.abs() / 4, 0.2)
    out, per = [], {}
    for name, (pen, patience) in RULES.items():
        picks = [(pick(r, pen(r["N"]), patience), r) for _, r in d.iterrows()]
        k = pd.Series([kk for kk, _ in picks])
        est = np.array([r[f"v{kk}"] for kk, r in picks])
        err = 100 * (est - d["oracle"])
        per[name] = err.abs().groupby(d["family"]).mean()
        out.append(
            {
                "rule": name,
                "within target": f"{int((err.abs() <= target).sum())} / {len(d)}",
                "mean abs error (points)": round(float(err.abs().mean()), 3),
                "RMSE": round(float(np.sqrt((err**2).mean())), 3),
                "mean K": round(float(k.mean()), 1),
            }
        )
    print(f"{len(d)} worlds, {d['family'].nunique()} families")
    cols = list(out[0])
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for o in out:
        print("| " + " | ".join(str(o[c]) for c in cols) + " |")
    a, b = list(RULES)[0], list(RULES)[3]
    moved = (per[b] - per[a]).abs() >= 0.02
    print(f"\nmean abs error by family where it moved: {a} -> {b}")
    print(
        ", ".join(f"{f} {per[a][f]:.2f} -> {per[b][f]:.2f}" for f in moved[moved].index)
    )


def main() -> None:
    global KS, ROWS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    ap.add_argument(
        "--families", type=lambda s: s.split(","), default=[*WORLDS, *VARIANTS]
    )
    ap.add_argument("--L", type=ints, default=[4, 12])
    ap.add_argument("--G", type=ints, default=[5, 20])
    ap.add_argument("--reps", type=ints, default=[0])
    ap.add_argument("--N", type=int, default=2000)
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--ks", type=ints, default=list(KS), help="class counts")
    ap.add_argument("--rows", type=Path, default=ROWS, help="the JSON-lines file")
    args = ap.parse_args()
    KS, ROWS = tuple(args.ks), args.rows
    summary() if args.summary else rows(args)


if __name__ == "__main__":
    main()
