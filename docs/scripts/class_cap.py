"""pgm's number of latent classes: the AIC choice among ``CLASS_CANDIDATES``
(1, 2, 4, 8) against the same choice with 16 added, on robustness-battery
worlds (the battery's seeds), against the known truth.

    PYTHONPATH=python python docs/scripts/class_cap.py --families bfcl,swebench \\
        --L 12,30 --G 10 --reps 4 --out docs/data/class_cap.csv

One row per data set: the naive bias (points), and for each choice (``k8``,
``k16``) the chosen K, the error (points), the fit's time and its AIC. Rows are
appended.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from robustness import seed_of  # noqa: E402
from worlds import world  # noqa: E402

from capfront.debias._input import counts  # noqa: E402
from capfront.debias.classes import (  # noqa: E402
    CLASS_CANDIDATES,
    _aic,
    fit_pgm,
    posterior_max,
)


def one(family: str, L: int, G: int, rep: int, N: int, wider: tuple[int, ...]) -> dict:
    """Both choices on one battery data set."""
    w = world(family)(N, L, G, seed_of(family, L, G, rep), pop=0)
    S, Gm = counts(w.results, "class_cap")
    row = {"family": family, "L": L, "G": G, "rep": rep, "N": N}
    row["naive_bias"] = 100 * (w.naive - w.oracle)
    for tag, cands in (("k8", CLASS_CANDIDATES), ("k16", wider)):
        t0 = time.perf_counter()
        f = fit_pgm(S, Gm, None, candidates=cands)
        est = float(posterior_max(f, None, cell_means=False)[0].mean())
        row[f"{tag}_seconds"] = time.perf_counter() - t0
        row[f"{tag}_K"] = int(f.n_classes)
        row[f"{tag}_error"] = 100 * (est - w.oracle)
        # the returned fit's own AIC (f.aic holds the selection's, before the
        # chosen K's final refinement)
        row[f"{tag}_aic"] = float(_aic(f))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", default="bfcl,swebench,lowrank_3,clustered")
    ap.add_argument("--L", default="12,30")
    ap.add_argument("--G", default="10")
    ap.add_argument("--N", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--first-rep", type=int, default=0)
    ap.add_argument("--out", default="docs/data/class_cap.csv")
    args = ap.parse_args()
    wider = (*CLASS_CANDIDATES, 16)
    out = Path(args.out)
    for fam in args.families.split(","):
        for L in map(int, args.L.split(",")):
            for G in map(int, args.G.split(",")):
                for rep in range(args.first_rep, args.first_rep + args.reps):
                    row = one(fam, L, G, rep, args.N, wider)
                    pd.DataFrame([row]).to_csv(
                        out, mode="a", header=not out.exists(), index=False
                    )
                    print(
                        f"{fam} L={L} G={G} rep {rep}: naive {row['naive_bias']:+.2f}, "
                        f"K {row['k8_K']} -> {row['k16_K']}, error "
                        f"{row['k8_error']:+.2f} -> {row['k16_error']:+.2f}, "
                        f"{row['k8_seconds']:.1f} -> {row['k16_seconds']:.1f} s",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
