"""Median time of the class E-step kernel (``pgm_class_estep`` with the M-step
statistics, as each EM iteration calls it) on battery worlds
(docs/scripts/worlds.py): 2,000 and 10,000 prompts, L = 20, G = 10, 8 and 16
classes, at parameters of a short fit. Prints the log-likelihood too: a kernel
change that keeps the numbers prints the same digits.

    PYTHONPATH=python python bench/class_estep_time.py mmlu_pro lowrank_3
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "scripts"))

from worlds import world  # noqa: E402

from capfront._kernels import dispatch  # noqa: E402
from capfront._kernels.latent import block_rows  # noqa: E402
from capfront.debias._input import counts, even_rows  # noqa: E402
from capfront.debias.classes import KEEP_R, SPARSE_R, fit_pgm  # noqa: E402
from capfront.debias.latent import _cell_table  # noqa: E402


def main(names: list[str], reps: int = 7) -> None:
    estep = dispatch("pgm_class_estep", "cpp")
    for name in names:
        w = world(name)(10_000, 20, 10, 1, pop=2000)
        S, G = counts(w.results, "bench", compact=True)
        for n in (2000, 10_000):
            sub = even_rows(len(S), n)
            for K in (8, 16):
                f = fit_pgm(S[sub], G[sub], None, latent_classes=K, max_iter=20)
                table = _cell_table(f.logh(), f.theta)
                log_w = np.log(np.maximum(f.weights, 1e-300))
                log_pi = np.log(np.maximum(f.class_weights, 1e-300))
                args = (
                    table, f.cell_row, f.topic, K, log_w, log_pi, None, SPARSE_R,
                    KEEP_R, block_rows(n, table.size), True, False, False,
                )  # fmt: skip
                estep(*args)  # warm
                ts = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    ll = estep(*args)[0]
                    ts.append(time.perf_counter() - t0)
                print(
                    f"{name} N = {n} K = {K}: {1e3 * np.median(ts):.1f} ms "
                    f"(loglik {ll!r})",
                    flush=True,
                )


if __name__ == "__main__":
    main(sys.argv[1:] or ["mmlu_pro", "lowrank_3"])
