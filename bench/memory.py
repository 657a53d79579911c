"""Peak resident memory of each public call at scale, each in its own process.

Usage::

    PYTHONPATH=python python bench/memory.py                   # N = 2e6 and 1e7
    PYTHONPATH=python python bench/memory.py --sizes 2e6 --G 10 --calls from_counts

Data: ``L = 33`` models, ``G`` draws per cell, binary counts ``S ~ Bin(G, p)``
with ``p ~ Beta(0.7, 0.5)`` per cell, stored as uint8 (``N L`` bytes), and one
cost per model. Per (size, call) a fresh interpreter builds the counts (in blocks,
no (N, L) float temporaries), builds ``EvalResults.from_counts(S, G, cost=(L,))``
unless the call is ``from_counts`` itself (after running the call once on the
first 2,000 prompts, so that imports and JIT caches are not counted), then resets
its peak-RSS counter
(``/proc/self/clear_refs``), runs the call and reports:

- ``peak``: the peak RSS during the call (``VmHWM`` after the reset);
- ``extra``: that peak minus the RSS just before the call (what the call itself
  allocated at most, on top of the counts and the ``EvalResults``);
- ``process``: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of the whole process;
- ``seconds``: wall time of the call.

Calls that would need more than ``--limit-gb`` (default 16) by the scaling of
the previous size are skipped and reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import time

CALLS = {
    "from_counts": "cf.EvalResults.from_counts(S, G, cost=cost)",
    "naive_oracle": "cf.naive_oracle(res)",
    "frontier": "cf.frontier(res)",
    "bootstrap": "cf.bootstrap(res, 'naive_oracle', n_resamples=1000)",
    "debiased_oracle_crossfit": "cf.debiased_oracle(res, 'crossfit')",
    "debiased_oracle_jackknife": "cf.debiased_oracle(res, 'jackknife')",
    "debiased_oracle_extrapolation": "cf.debiased_oracle(res, 'extrapolation')",
    "debiased_oracle_bootstrap_bc": "cf.debiased_oracle(res, 'bootstrap_bc')",
    "gap_decomposition": "cf.gap_decomposition(res)",
    "debiased_oracle_pgm": "cf.debiased_oracle(res, 'pgm')",
    # pgm's fit and posterior maximum on the counts as stored (what
    # debiased_oracle runs once it hands pgm the compact counts)
    "pgm_compact": "decompose_counts(*counts(res, 'pgm', compact=True), 'pgm')",
    "audit": "cf.audit(res, n_sims=4)",
}

CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    import numpy as np
    import capfront as cf
    from capfront.debias._input import counts
    from capfront.debias.methods import decompose_counts

    N, L, G, call = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

    def rss_kb(field):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise RuntimeError(field)

    rng = np.random.default_rng(7)
    S = np.empty((N, L), dtype=np.uint8)
    for start in range(0, N, 250_000):
        stop = min(N, start + 250_000)
        p = rng.beta(0.7, 0.5, size=(stop - start, L))
        S[start:stop] = rng.binomial(G, p)
        del p
    cost = np.geomspace(0.1, 10.0, L)
    # warm up on a small table: imports, JIT caches, thread pools are not the call's
    full_S = S
    S = full_S[:2000].copy()
    res = cf.EvalResults.from_counts(S, G, cost=cost)
    out = CALL
    S = full_S
    del out, res
    if call != "from_counts":
        res = cf.EvalResults.from_counts(S, G, cost=cost)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    before = rss_kb("VmRSS")
    t0 = time.perf_counter()
    out = CALL
    seconds = time.perf_counter() - t0
    peak = rss_kb("VmHWM")
    print(json.dumps({
        "before_mb": before / 1024,
        "peak_mb": peak / 1024,
        "extra_mb": (peak - before) / 1024,
        "process_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "seconds": seconds,
        "counts_mb": S.nbytes / 2**20,
    }))
    """
)


def run_one(N: int, L: int, G: int, call: str, timeout: float) -> dict:
    code = CHILD.replace("CALL", CALLS[call])
    proc = subprocess.run(
        [sys.executable, "-c", code, str(N), str(L), str(G), call],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")},
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": tail[:200]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt_mb(x: float) -> str:
    return f"{x / 1024:.2f} GB" if x >= 1024 else f"{x:.0f} MB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2e6,1e7")
    ap.add_argument("--G", default="10,20", help="draws per cell, comma-separated")
    ap.add_argument("--L", type=int, default=33)
    ap.add_argument("--calls", default=",".join(CALLS))
    ap.add_argument("--limit-gb", type=float, default=16.0)
    ap.add_argument("--timeout", type=float, default=1800.0)
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    draws = [int(g) for g in args.G.split(",")]
    calls = args.calls.split(",")
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    print(
        "| N | G | call | peak RSS in the call | extra over its input | "
        "process maxrss | seconds |"
    )
    print("|---|---|---|---|---|---|---|")
    for G in draws:
        previous: dict[str, tuple[int, float]] = {}
        for N in sizes:
            for call in calls:
                if call in previous:
                    n0, mb0 = previous[call]
                    guess = mb0 * N / n0
                    if guess > args.limit_gb * 1024:
                        print(
                            f"| {N:.0e} | {G} | `{call}` | skipped: about "
                            f"{_fmt_mb(guess)} by scaling from N = {n0:.0e} "
                            f"(limit {args.limit_gb:g} GB) | | | |",
                            flush=True,
                        )
                        continue
                t = time.perf_counter()
                r = run_one(N, args.L, G, call, args.timeout)
                if "error" in r:
                    print(
                        f"| {N:.0e} | {G} | `{call}` | failed: {r['error']} "
                        f"({time.perf_counter() - t:.0f} s) | | | |",
                        flush=True,
                    )
                    continue
                previous[call] = (N, r["process_mb"])
                print(
                    f"| {N:.0e} | {G} | `{call}` | {_fmt_mb(r['peak_mb'])} | "
                    f"{_fmt_mb(r['extra_mb'])} | {_fmt_mb(r['process_mb'])} | "
                    f"{r['seconds']:.2f} |",
                    flush=True,
                )
    print(f"load average at end: {os.getloadavg()}", file=sys.stderr)


if __name__ == "__main__":
    main()
