"""pgm and the audit at many draws per cell (issue 22): wall and CPU seconds.

``p ~ Beta(2, 2)`` per cell, ``S ~ Binomial(G, p)``; each call is timed after a
warm-up call on a small data set (imports and Numba compilation excluded). CPU
seconds are the process's (``time.process_time``): on a shared machine they are
the better measure of the work, wall seconds of what a user waits.

Usage: ``PYTHONPATH=python python bench/many_draws.py --N 2000 --L 4 --G 1e4
--backends cpp,numba,numpy [--audit]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import capfront as cf


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--N", type=int, default=2000)
    ap.add_argument("--L", type=int, default=4)
    ap.add_argument("--G", type=float, nargs="+", default=[1e4])
    ap.add_argument("--backends", default=",".join(cf.available_backends()))
    ap.add_argument("--audit", action="store_true", help="time audit() too")
    args = ap.parse_args()
    for b in args.backends.split(","):
        cf.debiased_oracle(cf.simulate(30, 3, 4), "pgm", backend=b)  # warm-up
        for g in args.G:
            G = int(g)
            rng = np.random.default_rng(0)
            S = rng.binomial(G, rng.beta(2, 2, (args.N, args.L)))
            res = cf.EvalResults.from_counts(S, G)
            for name in ("pgm", "audit") if args.audit else ("pgm",):
                t, c = time.perf_counter(), time.process_time()
                if name == "pgm":
                    out = cf.debiased_oracle(res, "pgm", backend=b)
                else:
                    out = cf.audit(res, backend=b)
                wall, cpu = time.perf_counter() - t, time.process_time() - c
                print(
                    f"{name:5s} backend={b:5s} N={args.N} L={args.L} G={G}: "
                    f"value={out.value:.10f} wall {wall:.2f} s cpu {cpu:.2f} s",
                    flush=True,
                )


if __name__ == "__main__":
    main()
