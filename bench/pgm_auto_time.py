"""Wall and CPU time of ``debiased_oracle(res, "pgm")`` at the issue's size (N =
400,000 prompts, L = 33 models, G = 20, four topics, labels passed), with
``family="auto"`` choosing among the logit families only and among all of
``classes.AUTO_FAMILIES`` (the Beta last), interleaved; the estimates printed.

    PYTHONPATH=python python bench/pgm_auto_time.py [rounds]
"""

from __future__ import annotations

import os
import sys
import time

import capfront as cf
from capfront.debias import classes


def main(rounds: int = 2) -> None:
    res = cf.simulate(
        400_000, 33, 20, n_topics=4, specialisation=1.0, seed=5, as_counts=True
    )
    defaults = classes.choose_family.__kwdefaults__
    keep = defaults["families"]
    try:
        for rnd in range(rounds):
            for fams in (classes.LOGIT_FAMILIES, classes.AUTO_FAMILIES):
                defaults["families"] = fams
                t0, c0 = time.perf_counter(), time.process_time()
                d = cf.debiased_oracle(res, "pgm")
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                print(
                    f"round {rnd}, families {'+'.join(fams)}: wall {wall:.1f} s, "
                    f"CPU {cpu:.1f} s, estimate {d.value:.6f}, family "
                    f"{d.diagnostics['fit'].family}, load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
    finally:
        defaults["families"] = keep


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
