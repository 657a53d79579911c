"""pgm's error on heavy-tailed worlds and the regression worlds (the fitted
degrees of freedom of the ``logit_t`` cell effect, docs/debiasing.md).

Each row: world, L, G, repetition, seed (``robustness.py``'s ``seed_of``), the
error ``debiased_oracle(res, "pgm").value - oracle`` and the naive oracle's, in
points, the chosen family, its degrees of freedom (when reported) and the
seconds of the call.

Usage: ``PYTHONPATH=python nice -n 10 python bench/logit_t_df.py [--out f.csv]
[--set heavy|regress|extra|all]`` (``all``: heavy and regress).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "scripts"))

from robustness import POP, seed_of  # noqa: E402
from worlds import world  # noqa: E402

import capfront as cf  # noqa: E402

HEAVY = [
    ("heavy_tail_1_5", L, G, rep)
    for L in (12, 30)
    for G in (5, 20)
    for rep in (0, 1, 2)
]
REGRESS = [
    (f, 12, 5, rep)
    for f in ("heavy_tail", "pgm_own", "topics", "near_ceiling")
    for rep in (0, 1)
]
# the families where the t is chosen, at the other L
EXTRA = [
    (f, L, G, rep)
    for f, L, G in (
        ("heavy_tail", 30, 5),
        ("heavy_tail", 30, 20),
        ("near_ceiling", 30, 5),
        ("near_ceiling", 4, 5),
        ("evalperf", 30, 5),
        ("ceiling_flaky", 4, 5),
    )
    for rep in (0, 1)
]


def row(name: str, L: int, G: int, rep: int, N: int) -> dict:
    seed = seed_of(name, L, G, rep)
    w = world(name)(N, L, G, seed, pop=POP)
    t0 = time.perf_counter()
    d = cf.debiased_oracle(w.results, "pgm")
    sec = time.perf_counter() - t0
    fit = d.diagnostics.get("fit")
    return {
        "world": name,
        "L": L,
        "G": G,
        "rep": rep,
        "seed": seed,
        "error": 100 * (d.value - w.oracle),
        "naive": 100 * (w.naive - w.oracle),
        "family": getattr(fit, "family", ""),
        "t_df": getattr(fit, "t_df", float("nan")),
        "classes": getattr(fit, "n_classes", 0),
        "seconds": sec,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="")
    names = ["heavy", "regress", "extra", "all"]
    ap.add_argument("--set", default="all", choices=names)
    ap.add_argument("--N", type=int, default=2000)
    a = ap.parse_args()
    sets = {"heavy": HEAVY, "regress": REGRESS, "extra": EXTRA}
    keys = sets.get(a.set, HEAVY + REGRESS)
    out = open(a.out, "w") if a.out else sys.stdout  # noqa: SIM115
    cols = "world,L,G,rep,seed,error,naive,family,t_df,classes,seconds"
    print(cols, file=out, flush=True)
    for k in keys:
        r = row(*k, a.N)
        print(
            ",".join(
                f"{v:.3f}" if isinstance(v, float) else str(v) for v in r.values()
            ),
            file=out,
            flush=True,
        )


if __name__ == "__main__":
    main()
