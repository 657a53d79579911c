"""Wall and CPU time of ``capfront.audit`` (defaults) at the issue's size,
N = 10,000 prompts, L = 20 models, G = 10 draws, on battery worlds
(docs/scripts/worlds.py) named on the command line; one warm-up call first
(``--cold``: none, the first call of a fresh process as a user runs it).

    PYTHONPATH=python python bench/audit_time.py topics pgm_own
    PYTHONPATH=python python bench/audit_time.py --cold lowrank_3 clustered
    PYTHONPATH=python python bench/audit_time.py --cold --seeds 1,2,3,4,5 lowrank_3

``--seeds``: the worlds' seeds (each also the audit's ``seed``; default 1).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "scripts"))

from worlds import world  # noqa: E402

import capfront as cf  # noqa: E402


def main(names: list[str], cold: bool = False, seeds: tuple[int, ...] = (1,)) -> None:
    for name in names:
        for seed in seeds:
            one(name, seed, cold)


def one(name: str, seed: int, cold: bool) -> None:
    """Time one audit of world ``name`` with ``seed``."""
    w = world(name)(10_000, 20, 10, seed, pop=2000)
    if not cold:
        cf.audit(w.results, seed=seed)  # warm-up: JIT caches, thread pools
    t0, c0 = time.perf_counter(), time.process_time()
    a = cf.audit(w.results, seed=seed)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"{name} (seed {seed}): K = {a.latent_classes}, family {a.family}, "
        f"bounds {a.bounds}, "
        f"quoted {a.recommended}, trusted {a.trusted}, "
        f"passing {'/'.join(w for w, v in a.world_weights.items() if v > 0)}, "
        f"wall {wall:.1f} s, CPU {cpu:.1f} s, load {os.getloadavg()[0]:.2f}",
        flush=True,
    )


if __name__ == "__main__":
    args = sys.argv[1:]
    cold = "--cold" in args
    seeds = (1,)
    if "--seeds" in args:
        i = args.index("--seeds")
        seeds = tuple(int(s) for s in args[i + 1].split(","))
        del args[i : i + 2]
    main([a for a in args if a != "--cold"] or ["topics", "pgm_own"], cold, seeds)
