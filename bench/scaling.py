"""Seconds per stage of the pipeline ``from_arrays -> naive_oracle -> frontier ->
bootstrap(B=1000)`` against N, and the fitted exponent of each stage.

Usage::

    PYTHONPATH=python python bench/scaling.py                  # N = 1e4 .. 1e7
    PYTHONPATH=python python bench/scaling.py --sizes 1e4,1e5,1e6 --repeats 3

Data: ``L = 33`` models, ``G = 20`` uint8 draws per cell (``N L G`` bytes: 6.6 GB
at N = 1e7), cells ``p ~ Beta(0.7, 0.5)``, one cost per model. Each size runs in
a fresh interpreter (so page faults of the fresh arrays are counted, as a user's
first call pays them); the stages run there ``--repeats`` times, interleaved
(stage 1, 2, 3, 4, then again), and the median is reported. The exponent of a
stage is the least-squares slope of ``log(seconds)`` on ``log(N)`` over the
sizes (1 = linear). Prints a Markdown table and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

import numpy as np

STAGES = ("from_arrays", "naive_oracle", "frontier", "bootstrap")

CHILD = textwrap.dedent(
    """
    import json, re, resource, sys, time
    import numpy as np
    import capfront as cf

    N, L, G, repeats = (int(a) for a in sys.argv[1:5])
    rng = np.random.default_rng(11)
    scores = np.empty((N, L, G), dtype=np.uint8)
    for start in range(0, N, 50_000):
        stop = min(N, start + 50_000)
        p = rng.beta(0.7, 0.5, size=(stop - start, L, 1)).astype(np.float32)
        scores[start:stop] = rng.random((stop - start, L, G), dtype=np.float32) < p
    cost = np.geomspace(0.1, 10.0, L)
    # the pipeline's answer, in row chunks (no (N, L) temporary held across the
    # stages): the oracle is the mean of max_l S / G
    top = sum(
        int(scores[r : r + 50_000].sum(axis=2, dtype=np.uint16).max(axis=1).sum())
        for r in range(0, N, 50_000)
    )
    want = top / (N * G)
    small = cf.EvalResults.from_arrays(scores[:500], cost=cost, keep_scores=False)
    cf.naive_oracle(small); cf.frontier(small)  # imports, JIT caches
    cf.bootstrap(small, "naive_oracle", n_resamples=50)
    del small

    def status(key):
        text = open("/proc/self/status").read()
        return int(re.search(key + r":\\s+(\\d+) kB", text)[1]) / 1024

    def measured(stage, fn):
        # the peak RSS of one stage: VmHWM reset to the current RSS first
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass
        rss0 = status("VmRSS")
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t = time.perf_counter()
        out = fn()
        wall = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        stats[stage].append(dict(
            wall=wall,
            cpu=(r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime),
            sys=r1.ru_stime - r0.ru_stime,
            minflt=r1.ru_minflt - r0.ru_minflt,
            majflt=r1.ru_majflt - r0.ru_majflt,
            rss0=rss0,
            peak=status("VmHWM"),
        ))
        return out

    stages = ("from_arrays", "naive_oracle", "frontier", "bootstrap")
    stats = {s: [] for s in stages}
    for _ in range(repeats):
        res = measured("from_arrays", lambda: cf.EvalResults.from_arrays(
            scores, cost=cost, keep_scores=False))
        oracle = measured("naive_oracle", lambda: cf.naive_oracle(res))
        front = measured("frontier", lambda: cf.frontier(res))
        boot = measured("bootstrap", lambda: cf.bootstrap(
            res, "naive_oracle", n_resamples=1000))
        assert abs(oracle.value - want) < 1e-12, (oracle.value, want)
        assert boot.low <= oracle.value <= boot.high
        assert len(front.vertices) >= 2
        del res, front, boot
    print(json.dumps(stats))
    """
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1e4,1e5,1e6,1e7")
    ap.add_argument("--L", type=int, default=33)
    ap.add_argument("--G", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    load0 = os.getloadavg()
    medians: dict[int, dict[str, float]] = {}
    usage: dict[int, dict[str, dict[str, float]]] = {}
    for N in sizes:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(N), str(args.L), str(args.G)]
            + [str(args.repeats)],
            capture_output=True,
            text=True,
            check=True,
        )
        runs = json.loads(proc.stdout.strip().splitlines()[-1])
        medians[N] = {s: float(np.median([r["wall"] for r in runs[s]])) for s in STAGES}
        usage[N] = {
            s: {k: float(np.median([r[k] for r in runs[s]])) for k in runs[s][0]}
            for s in STAGES
        }
        print(f"N = {N:.0e}: {medians[N]}", file=sys.stderr, flush=True)
    print(f"L = {args.L}, G = {args.G}, median of {args.repeats} interleaved runs")
    print(f"load average {load0[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end")
    print()
    print("| N | " + " | ".join(f"`{s}` (s)" for s in STAGES) + " | total (s) |")
    print("|---" * (len(STAGES) + 2) + "|")
    for N in sizes:
        row = [medians[N][s] for s in STAGES]
        cells = " | ".join(f"{v:.3g}" for v in row)
        print(f"| {N:.0e} | {cells} | {sum(row):.3g} |")
    if len(sizes) > 1:
        logn = np.log(sizes)
        slopes = []
        for s in STAGES:
            y = np.log([medians[N][s] for N in sizes])
            slopes.append(np.polyfit(logn, y, 1)[0])
        big = [N for N in sizes if N >= 1e5]
        tail = []
        if len(big) > 1:
            for s in STAGES:
                y = np.log([medians[N][s] for N in big])
                tail.append(np.polyfit(np.log(big), y, 1)[0])
        cpu = []
        for s in STAGES:
            y = np.log([max(usage[N][s]["cpu"], 1e-6) for N in sizes])
            cpu.append(np.polyfit(logn, y, 1)[0])
        exps = " | ".join(f"{e:.2f}" for e in slopes)
        print(f"| exponent of CPU time | {' | '.join(f'{e:.2f}' for e in cpu)} | |")
        print(f"| exponent, all sizes | {exps} | |")
        if tail:
            print(
                "| exponent, N >= 1e5 | "
                + " | ".join(f"{e:.2f}" for e in tail)
                + " | |"
            )

    _usage_table(sizes, usage)


def _usage_table(sizes: list[int], usage: dict[int, dict[str, dict[str, float]]]):
    """Per size and stage (medians): CPU seconds (user + system, all threads), of
    which system, minor / major page faults, RSS at the start of the stage and its
    peak (VmHWM reset before the stage through ``/proc/self/clear_refs``)."""
    print()
    print(
        "| N | stage | wall (s) | CPU (s) | of which system (s) | minor faults "
        "| major faults | RSS before (MB) | peak RSS (MB) | peak - before (MB) |"
    )
    print("|---" * 10 + "|")
    for N in sizes:
        for s in STAGES:
            u = usage[N][s]
            print(
                f"| {N:.0e} | `{s}` | {u['wall']:.3g} | {u['cpu']:.3g} | "
                f"{u['sys']:.3g} | {u['minflt']:.0f} | {u['majflt']:.0f} | "
                f"{u['rss0']:.0f} | {u['peak']:.0f} | {u['peak'] - u['rss0']:.0f} |"
            )


if __name__ == "__main__":
    main()
