"""Timings of docs/routers.md: evaluate_router at N = 400,000 prompts, L = 33
models (1,000 paired bootstrap resamples) and plan at pilot N = 2,000.

    PYTHONPATH=python python docs/scripts/routers_speed.py [--skip-plan]
        [--skip-router]

Wall and CPU seconds of this process (the CPU time is what the machine's load
does not inflate; the C++ kernels may use more than one thread), with the load
average before each step. Modules are imported before the clocks start.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

import capfront as cf
import capfront.compare
import capfront.plan
import capfront.router  # noqa: F401 - imported before timing
from capfront.debias import decomposition


def timed(label: str, fn) -> object:  # noqa: ANN001
    load = os.getloadavg()[0]
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    print(
        f"{label}: {time.perf_counter() - w:.1f} s wall, "
        f"{time.process_time() - c:.1f} s CPU (load {load:.1f})"
    )
    return out


def main() -> None:
    if "--skip-router" not in sys.argv:
        router_timings()
    if "--skip-plan" in sys.argv:
        return
    pilot = cf.simulate(2000, 25, 10, n_topics=4, seed=1)
    pl = timed("plan, pilot N = 2,000, L = 25", lambda: cf.plan(pilot, precision=0.01))
    print(f"  {pl.summary()}")
    for h in pl.check["history"]:
        print(
            f"    check at N = {h['n_prompts']:,}: {h['n_sims']} simulations, ratio "
            f"{h['ratio']:.3f} +- {h['ratio_se']:.3f}, {h['verdict']}"
        )


def router_timings() -> None:
    res = cf.simulate(400_000, 33, 5, n_topics=4, seed=1)
    ch = np.random.default_rng(0).integers(0, 33, res.n_prompts)
    print(res)
    _ = res.prompts  # the default prompt labels, built on first use
    for label, kw in (
        ("evaluate_router, no oracle, no gap", {"oracle": None, "gap": False}),
        ("evaluate_router, oracle bootstrap_bc, gap", {"oracle": "bootstrap_bc"}),
        ("evaluate_router, default (pgm on 20,000 prompts, gap)", {}),
    ):
        r = timed(label, lambda kw=kw: cf.evaluate_router(res, ch, **kw))
    print(
        f"  R = {r.value:.4f} ({r.ci[0]:.4f}, {r.ci[1]:.4f}), O = {r.oracle:.4f}, "
        f"share {r.oracle_gain_share:.3f} ({r.share_ci[0]:.3f}, {r.share_ci[1]:.3f}), "
        f"true oracle {res.true_oracle:.4f}"
    )
    dec = timed(
        "decomposition(res, 'pgm') on all prompts (once)",
        lambda: decomposition(res, "pgm"),
    )
    r2 = timed(
        "evaluate_router, oracle=that decomposition, gap",
        lambda: cf.evaluate_router(res, ch, oracle=dec),
    )
    print(
        f"  O = {r2.oracle:.4f}, share {r2.oracle_gain_share:.3f} "
        f"({r2.share_ci[0]:.3f}, {r2.share_ci[1]:.3f})"
    )
    two = timed(
        "evaluate_router, 2 routers, default",
        lambda: cf.evaluate_router(res, {"a": ch, "b": np.roll(ch, 1)}),
    )
    print(f"  {list(two.value.round(4))}")
    timed(
        "cf.bootstrap(res, 'best_single', n_resamples=1000) (the engine alone)",
        lambda: cf.bootstrap(res, "best_single", n_resamples=1000),
    )


if __name__ == "__main__":
    main()
