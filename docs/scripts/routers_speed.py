"""Timings of docs/routers.md: evaluate_router at N = 400,000 prompts, L = 33
models (1,000 paired bootstrap resamples) and plan at pilot N = 2,000.

    PYTHONPATH=python python docs/scripts/routers_speed.py

Wall and CPU seconds of this process (the CPU time is what the machine's load
does not inflate; the C++ kernels may use more than one thread).
"""

from __future__ import annotations

import time

import numpy as np

import capfront as cf


def timed(label: str, fn) -> object:  # noqa: ANN001
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    print(
        f"{label}: {time.perf_counter() - w:.1f} s wall, "
        f"{time.process_time() - c:.1f} s CPU"
    )
    return out


def main() -> None:
    res = cf.simulate(400_000, 33, 5, n_topics=4, seed=1)
    ch = np.random.default_rng(0).integers(0, 33, res.n_prompts)
    print(res)
    for label, kw in (
        ("evaluate_router, no oracle, no gap", {"oracle": None, "gap": False}),
        ("evaluate_router, oracle bootstrap_bc, gap", {"oracle": "bootstrap_bc"}),
        ("evaluate_router, oracle pgm (default), gap", {}),
    ):
        r = timed(label, lambda kw=kw: cf.evaluate_router(res, ch, **kw))
    print(f"  R = {r.value:.4f} {r.ci}, share {r.oracle_gain_share:.3f}")
    two = timed(
        "evaluate_router, 2 routers, no oracle, no gap",
        lambda: cf.evaluate_router(
            res, {"a": ch, "b": np.roll(ch, 1)}, oracle=None, gap=False
        ),
    )
    print(f"  {list(two.value.round(4))}")
    timed(
        "cf.bootstrap(res, 'best_single', n_resamples=1000) (reference)",
        lambda: cf.bootstrap(res, "best_single", n_resamples=1000),
    )
    pilot = cf.simulate(2000, 25, 10, n_topics=4, seed=1)
    pl = timed("plan, pilot N = 2,000, L = 25", lambda: cf.plan(pilot, precision=0.01))
    print(f"  {pl.summary()}")


if __name__ == "__main__":
    main()
