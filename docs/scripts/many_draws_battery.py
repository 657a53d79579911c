"""pgm at many draws per cell on battery worlds (issue 22's binned counts, measured
outside their own simulator): per world, ``pgm`` on the binned counts (the default
above ``COARSE_MIN_G`` draws) and on the exact counts (the rule switched off),
both against the world's true oracle. N = 2000, L = 12.

    PYTHONPATH=python nice -n 15 python docs/scripts/many_draws_battery.py \\
        --families lowrank_3,topics,evalperf,near_ceiling,heavy_tail,\
beta_classes,clustered,pgm_own
    PYTHONPATH=python python docs/scripts/many_draws_battery.py --summary
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROWS = Path(__file__).resolve().parents[1] / "data" / "many_draws_battery.jsonl"


def rows(families: list[str], Gs: list[int], reps: list[int], L: int, N: int) -> None:
    from robustness import _world

    import capfront as cf
    from capfront.debias import many_draws

    with ROWS.open("a") as out:
        for fam in families:
            for G in Gs:
                for rep in reps:
                    w, _ = _world(fam, L, G, rep, N)
                    t = time.perf_counter()
                    b = cf.debiased_oracle(w.results, "pgm")
                    tb = time.perf_counter() - t
                    old = many_draws.COARSE_MIN_G
                    many_draws.COARSE_MIN_G = 10**9  # the exact counts
                    try:
                        t = time.perf_counter()
                        e = cf.debiased_oracle(w.results, "pgm")
                        te = time.perf_counter() - t
                    finally:
                        many_draws.COARSE_MIN_G = old
                    r = dict(
                        family=fam,
                        L=L,
                        G=G,
                        rep=rep,
                        N=N,
                        oracle=w.oracle,
                        naive=w.naive,
                        binned=b.value,
                        exact=e.value,
                        se=e.se,
                        K=[
                            b.diagnostics.get("latent_classes"),
                            e.diagnostics.get("latent_classes"),
                        ],
                        coarse=bool(b.diagnostics.get("coarsened_counts")),
                        tb=tb,
                        te=te,
                    )
                    print(_line(r), flush=True)
                    out.write(json.dumps(r) + "\n")
                    out.flush()


def _line(r: dict) -> str:
    e = {k: 100 * (r[k] - r["oracle"]) for k in ("naive", "binned", "exact")}
    return (
        f"| {r['family']} | {r['G']} | {r['rep']} | {e['naive']:+.3f} "
        f"| {e['binned']:+.3f} ({r['K'][0]}) | {e['exact']:+.3f} ({r['K'][1]}) "
        f"| {100 * (r['binned'] - r['exact']):+.3f} | {100 * r['se']:.2f} "
        f"| {r['tb']:.1f} / {r['te']:.1f} |"
    )


def summary() -> None:
    """The markdown table of docs/debiasing.md (errors in points) and its totals."""
    rs = [json.loads(x) for x in ROWS.read_text().splitlines()]
    print(
        "| family | G | rep | naive | pgm, binned (K) | pgm, exact counts (K) "
        "| binned - exact | SE | seconds binned / exact |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rs:
        print(_line(r))
    d = np.array([100 * (r["binned"] - r["exact"]) for r in rs])
    ok = sum(
        abs(100 * (r["binned"] - r["oracle"]))
        <= max(abs(100 * (r["naive"] - r["oracle"])) / 4, 0.2)
        for r in rs
    )
    print(
        f"\n{len(rs)} worlds: |binned - exact| at most {np.abs(d).max():.3f} points "
        f"(RMS {np.sqrt((d**2).mean()):.3f}); binned within target in {ok}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    ap.add_argument("--families", type=lambda s: s.split(","), default=["lowrank_3"])
    ap.add_argument("--G", type=ints, default=[200, 600])
    ap.add_argument("--reps", type=ints, default=[0, 1])
    ap.add_argument("--L", type=int, default=12)
    ap.add_argument("--N", type=int, default=2000)
    ap.add_argument("--summary", action="store_true")
    a = ap.parse_args()
    summary() if a.summary else rows(a.families, a.G, a.reps, a.L, a.N)


if __name__ == "__main__":
    main()
