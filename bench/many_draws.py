"""pgm and the audit at many draws per cell (issue 22): wall and CPU seconds,
peak memory, and the estimate against the world's truth.

Worlds (``--world``): ``beta22`` (``p ~ Beta(2, 2)`` per cell), ``beta0303``
(``p ~ Beta(0.3, 0.3)``: most cells near 0 or 1), ``topics``
(:func:`capfront.simulate`: a logit-normal pool with 4 topics and a cell effect
of SD 0.5); ``S ~ Binomial(G, p)``. Each case runs in a fresh interpreter (its
peak RSS is the child's ``ru_maxrss``), timed after a warm-up call on a small
data set (imports and Numba compilation excluded). CPU seconds are the child's
(``time.process_time``, all threads): on a shared machine they are the better
measure of the work, wall seconds of what a user waits. ``truth`` is
``mean_n max_l p[n, l]`` of the world's own cells.

``--set module.NAME=value`` overrides a constant of ``capfront.debias.<module>``
in the children (e.g. ``--set many_draws.COARSE_MIN_G=1000000000`` fits the
exact counts), to compare settings on the same worlds.

Usage: ``PYTHONPATH=python python bench/many_draws.py --N 2000 --L 33 --G 10 600
--backends cpp,numba,numpy [--world beta22] [--audit] [--json out.jsonl]``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import subprocess
import sys
import time

import numpy as np

WORLDS = ("beta22", "beta0303", "topics")


def world(name: str, N: int, L: int, G: int, seed: int = 0):
    import capfront as cf

    if name == "topics":
        res = cf.simulate(N, L, G, n_topics=4, cell_sd=0.5, seed=seed, as_counts=True)
        return res, float(np.asarray(res.truth_p).max(axis=1).mean())
    a = {"beta22": 2.0, "beta0303": 0.3}[name]
    rng = np.random.default_rng(seed)
    p = rng.beta(a, a, (N, L))
    S = rng.binomial(G, p)
    return cf.EvalResults.from_counts(S, G), float(p.max(axis=1).mean())


def child(args) -> None:
    import capfront as cf

    for item in args.set:
        key, value = item.split("=", 1)
        mod, attr = key.rsplit(".", 1)
        m = importlib.import_module(f"capfront.debias.{mod}")
        old = getattr(m, attr)
        setattr(m, attr, type(old)(float(value)) if not isinstance(old, str) else value)
    b = args.backends
    cf.debiased_oracle(cf.simulate(30, 3, 4), "pgm", backend=b)  # warm-up
    res, truth = world(args.world, args.N, args.L, int(args.G[0]))
    t, c = time.perf_counter(), time.process_time()
    if args.call == "pgm":
        out = cf.debiased_oracle(res, "pgm", backend=b)
        value, se = float(out.value), float(out.se)
        extra = {"classes": out.diagnostics.get("latent_classes")}
    else:
        methods = None if args.audit_methods is None else args.audit_methods.split(",")
        out = cf.audit(res, backend=b, methods=methods)
        value = float(out.data_estimates["value"][out.recommended])
        se = float(out.data_estimates["se"][out.recommended])
        extra = {"recommended": out.recommended, "quoted": str(out.quoted)[:120]}
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    row = dict(
        world=args.world, N=args.N, L=args.L, G=int(args.G[0]), backend=b,
        call=args.call, value=value, se=se, truth=truth, wall=wall, cpu=cpu,
        rss_mb=rss, set=args.set, **extra,
    )  # fmt: skip
    print(json.dumps(row), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--N", type=int, default=2000)
    ap.add_argument("--L", type=int, default=33)
    ap.add_argument("--G", type=float, nargs="+", default=[600])
    ap.add_argument("--world", default="beta22", help=",".join(WORLDS))
    ap.add_argument("--backends", default="cpp")
    ap.add_argument("--audit", action="store_true", help="time audit() too")
    ap.add_argument("--only-audit", action="store_true")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument(
        "--audit-methods", default=None, help="audit(methods=...), comma-separated"
    )
    ap.add_argument("--json", default=None, help="append the rows to this file")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--call", default="pgm", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    calls = (
        ["audit"] if args.only_audit else ["pgm"] + (["audit"] if args.audit else [])
    )
    for w in args.world.split(","):
        for b in args.backends.split(","):
            for g in args.G:
                for call in calls:
                    cmd = [sys.executable, __file__, "--child", "--call", call,
                           "--N", str(args.N), "--L", str(args.L), "--G", str(int(g)),
                           "--world", w, "--backends", b]  # fmt: skip
                    for s in args.set:
                        cmd += ["--set", s]
                    if args.audit_methods:
                        cmd += ["--audit-methods", args.audit_methods]
                    out = subprocess.run(cmd, capture_output=True, text=True)
                    if out.returncode != 0:
                        print(out.stderr[-2000:], file=sys.stderr)
                        continue
                    line = out.stdout.strip().splitlines()[-1]
                    r = json.loads(line)
                    print(
                        f"{r['call']:5s} {w:8s} backend={b:5s} N={r['N']} L={r['L']} "
                        f"G={r['G']}: value={r['value']:.10f} (truth {r['truth']:.6f}, "
                        f"se {r['se']:.4f}) wall {r['wall']:.2f} s "
                        f"cpu {r['cpu']:.2f} s rss {r['rss_mb']:.0f} MB",
                        flush=True,
                    )
                    if args.json:
                        with open(args.json, "a") as f:
                            f.write(line + "\n")


if __name__ == "__main__":
    main()
