"""The worked example of docs/routers.md on the bundled EvalPerf data.

    PYTHONPATH=python python docs/scripts/routers_example.py --out docs/img

Two simple routers, decided on a training half of the prompts (split within each
benchmark, seed 0) and evaluated on the other half:

- ``cheapest_best``: per benchmark, the model that solved the most training prompts
  (a prompt counts as solved when ``p_hat >= 0.5``), the cheapest among ties;
- ``random``: a uniformly random model per prompt (seed 1).

Prints ``evaluate_router``, ``compare``, ``tied_with_best`` and ``plan`` on the
held-out half, and with ``--out`` draws ``routers_evalperf.png`` (the routers on
the prehoc frontier).
"""

from __future__ import annotations

import argparse
import time
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

import capfront as cf
from capfront.adapters import load


def evalperf() -> cf.EvalResults:
    path = resources.files("capfront") / "data" / "evalperf_example.csv.gz"
    with resources.as_file(path) as p:
        return load(p, "counts").results


def split(results: cf.EvalResults, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Half of each benchmark's prompts for training, the rest held out."""
    rng = np.random.default_rng(seed)
    train = np.zeros(results.n_prompts, dtype=bool)
    bench = results.benchmark.astype(str)
    for b in np.unique(bench):
        idx = np.flatnonzero(bench == b)
        train[rng.choice(idx, size=idx.size // 2, replace=False)] = True
    return np.flatnonzero(train), np.flatnonzero(~train)


def cheapest_best(train: cf.EvalResults, test: cf.EvalResults) -> np.ndarray:
    """Per benchmark: the model that solved the most training prompts
    (``p_hat >= 0.5``), ties to the cheapest; applied to the test prompts."""
    cost = np.nanmean(train.mean_cost, axis=0)
    pick = {}
    for b in np.unique(train.benchmark.astype(str)):
        rows = train.benchmark.astype(str) == b
        solved = (train.p_hat[rows] >= 0.5).sum(axis=0)
        tied = np.flatnonzero(solved == solved.max())
        pick[b] = str(train.models[tied[np.argmin(cost[tied])]])
    return np.array([pick[b] for b in test.benchmark.astype(str)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="folder for routers_evalperf.png")
    ap.add_argument("--resamples", type=int, default=2000)
    args = ap.parse_args()
    pd.set_option("display.width", 120)
    res = evalperf()
    tr, te = split(res)
    train, test = res.select(tr), res.select(te)
    routers = {
        "cheapest_best": cheapest_best(train, test),
        "random": np.random.default_rng(1)
        .choice(test.models.astype(str), test.n_prompts)
        .astype(str),
    }
    for name, ch in routers.items():
        picked = pd.Series(ch).value_counts()
        top = {m: int(n) for m, n in picked.head(3).items()}
        print(f"{name}: picks {top}{' ...' if len(picked) > 3 else ''}")
    t0 = time.perf_counter()
    table = cf.evaluate_router(test, routers, n_resamples=args.resamples)
    print(f"\nevaluate_router: {time.perf_counter() - t0:.1f} s")
    cols = [
        "value",
        "ci_low",
        "ci_high",
        "cost",
        "gain_vs_best",
        "gain_low",
        "gain_high",
        "oracle",
        "oracle_gain_share",
        "frontier_quality_at_cost",
        "frontier_cost_at_quality",
        "strictly_worse_share",
        "gap_noise_share_crossfit",
        "gap_noise_share_upper",
    ]
    print(table.to_frame()[cols].T.to_string(float_format=lambda x: f"{x:.4f}"))
    print("\nregret table, cheapest_best:")
    print(table["cheapest_best"].regret.to_string(float_format=lambda x: f"{x:.3f}"))
    for name in routers:
        c = cf.compare(test, name, "best", routers=routers, n_resamples=args.resamples)
        print(
            f"\ncompare({name!r}, 'best' = {c.b}): {c.value:+.4f} "
            f"[{c.ci[0]:+.4f}, {c.ci[1]:+.4f}], se {c.se:.4f} (unpaired over "
            f"draws: {c.se_unpaired:.4f}), p = {c.p_value:.3g} ({c.p_value_method})"
        )
    t = cf.tied_with_best(test)
    print(f"\ntied_with_best: {t.best} {t.value:.4f}; tied: {t.tied}")
    print(t.table.head(8).to_string(float_format=lambda x: f"{x:.4f}"))
    t0 = time.perf_counter()
    pl = cf.plan(res, precision=0.01)
    print(f"\nplan ({time.perf_counter() - t0:.0f} s): {pl.summary()}")
    print(pl.table.to_string(float_format=lambda x: f"{x:.4g}"))
    for n in pl.notes:
        print(f"- {n}")
    if args.out:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 5.5))
        table.plot(ax=ax, frontier=cf.frontier(test))
        ax.set_xlabel("mean cost per prompt (stand-in: active parameters, B)")
        ax.set_title("EvalPerf held-out prompts: two routers on the frontier")
        fig.tight_layout()
        args.out.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.out / "routers_evalperf.png", dpi=110)
        print(f"wrote {args.out / 'routers_evalperf.png'}")


if __name__ == "__main__":
    main()
