"""The correlated logit-normal model (``capfront.debias.correlated``, method
``"correlated"``) against ``pgm`` on battery worlds.

Model. Each prompt's vector of model logits is multivariate normal,

    ``eta_n ~ N(mu, Sigma)`` (``Sigma`` a full ``L x L`` covariance),
    ``S_nl ~ Binomial(G_nl, expit(eta_nl))``,

so a low-rank specialisation ``logit p = b_l + a_l . z_n - d_n`` (and the prompt
difficulty, the all-ones direction) is a special case: ``Sigma = A A' + s^2 1 1'
+ D``. ``pgm``'s latent classes approximate the same structure by a few discrete
aptitude vectors plus cell effects that are independent across models; when
the truth is continuous, what the classes miss goes into those independent cell
effects, each cell's posterior borrows too little from the prompt's other
cells, and the posterior maximum comes out too high.

Fit: :func:`capfront.debias.correlated.fit_correlated` (Monte Carlo EM with an
importance-sampled E-step from the Laplace posterior, a Student t proposal from
scrambled-Sobol points, a Laplace control variate, SQUAREM; its module docstring
has the details). This script was a NumPy prototype (3-7 minutes a world); its
rows are in ``docs/data/correlated_logit_prototype.jsonl``. Pitfalls it found,
which the library handles: a Laplace E-step alone (no importance weights) is
biased low by 0.4-2.5 points at G = 5 on every family, its own model included;
with few importance draws the E-step's error in the Gaussian part of each
posterior accumulates over the EM and the smallest eigenvalue of ``Sigma``
shrinks to 0 (the control variate removes it).

Each row: the world's oracle and naive value, ``pgm``'s estimate, log-likelihood
and parameter count (``K`` its classes), the correlated model's (``mvn``,
``ll_mvn``, ``np_mvn``), the backend and the seconds of each fit.

    PYTHONPATH=python nice -n 5 python docs/scripts/correlated_logit.py \\
        --families lowrank_3,pgm_own,topics --L 4,12,30 --G 5,20 --reps 0
    PYTHONPATH=python python docs/scripts/correlated_logit.py --summary
    PYTHONPATH=python python docs/scripts/correlated_logit.py \\
        --speed lowrank_3,12,20,2000 --speed-backends cpp,numba
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROWS = Path(__file__).resolve().parents[1] / "data" / "correlated_logit.jsonl"


def rows(args: argparse.Namespace) -> None:
    from class_choice import pending
    from robustness import _world

    import capfront as cf
    from capfront import resolve_backend
    from capfront.debias._input import counts
    from capfront.debias.correlated import fit_correlated

    with ROWS.open("a") as out:
        for fam, L, G, rep in list(pending(args, ROWS)):
            w, _ = _world(fam, L, G, rep, args.N)
            S, Gd = counts(w.results, "correlated_logit")
            t = time.perf_counter()
            f = fit_correlated(S, Gd, backend=args.backend)
            secs = time.perf_counter() - t
            t = time.perf_counter()
            d = cf.debiased_oracle(w.results, "pgm")
            pgm_secs = time.perf_counter() - t
            r = dict(
                family=fam,
                L=L,
                G=G,
                rep=rep,
                N=args.N,
                oracle=w.oracle,
                naive=w.naive,
                mvn=f.value,
                ll_mvn=f.loglik,
                np_mvn=f.n_params,
                pgm=d.value,
                ll_pgm=d.fit.loglik,
                np_pgm=d.fit.n_params,
                K=d.fit.n_classes,
                seconds=secs,
                pgm_seconds=pgm_secs,
                backend=resolve_backend(args.backend),
                best_iteration=f.iteration,
                esteps=f.iterations,
            )
            print(_line(r), flush=True)
            out.write(json.dumps(r) + "\n")
            out.flush()


def _line(r: dict) -> str:
    e = {k: 100 * (r[k] - r["oracle"]) for k in ("naive", "pgm", "mvn")}
    aic = 2 * (r["np_mvn"] - r["ll_mvn"]) - 2 * (r["np_pgm"] - r["ll_pgm"])
    return (
        f"{r['family']} L={r['L']} G={r['G']} rep={r['rep']}: naive {e['naive']:+.2f}, "
        f"pgm {e['pgm']:+.2f} (K {r['K']}), correlated {e['mvn']:+.2f}; "
        f"AIC correlated - pgm {aic:+.0f}; {r['seconds']:.1f} s ({r['backend']}), "
        f"pgm {r['pgm_seconds']:.1f} s"
    )


def summary() -> None:
    """The markdown table of docs/debiasing.md from the saved rows (errors in
    points; "(miss)": outside ``max(|naive| / 4, 0.2)``; "AIC": the correlated
    model's AIC minus ``pgm``'s, and the estimate of the one with the smaller AIC),
    then how many worlds each estimate keeps within target."""
    rows = [json.loads(x) for x in ROWS.read_text().splitlines()]
    rows.sort(
        key=lambda r: (
            r["family"] != "lowrank_3",
            r["family"],
            r["L"],
            -r["G"],
            r["rep"],
        )
    )
    cols = (
        "family | L | G | rep | naive | pgm (K) | correlated | AIC difference "
        "| AIC choice | target | seconds (pgm)"
    )
    print(f"| {cols} |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    hits = {"pgm": 0, "correlated": 0, "AIC choice": 0}
    for r in rows:
        e = {k: 100 * (r[k] - r["oracle"]) for k in ("naive", "pgm", "mvn")}
        aic = 2 * (r["np_mvn"] - r["ll_mvn"]) - 2 * (r["np_pgm"] - r["ll_pgm"])
        pick = e["mvn"] if aic < 0 else e["pgm"]
        t = max(abs(e["naive"]) / 4, 0.2)
        m = lambda v, t=t: f"{v:+.2f}" + (" (miss)" if abs(v) > t else "")  # noqa: E731
        for k, v in (("pgm", e["pgm"]), ("correlated", e["mvn"]), ("AIC choice", pick)):
            hits[k] += abs(v) <= t
        print(
            f"| {r['family']} | {r['L']} | {r['G']} | {r['rep']} | {e['naive']:+.2f} "
            f"| {m(e['pgm'])} ({r['K']}) | {m(e['mvn'])} | {aic:+,.0f} "
            f"| {m(pick)} ({'corr' if aic < 0 else 'pgm'}) | {t:.2f} "
            f"| {r['seconds']:.1f} ({r['pgm_seconds']:.1f}) |"
        )
    print()
    print(
        f"Within target on {len(rows)} worlds: "
        + ", ".join(f"{k} {v}" for k, v in hits.items())
    )


def speed(spec: str, backends: list[str]) -> None:
    """Seconds of one ``fit_correlated`` per backend on the world
    ``family,L,G,N`` (repetition 0), with the 1-minute load average."""
    import os

    from robustness import _world

    from capfront.debias._input import counts
    from capfront.debias.correlated import fit_correlated

    fam, L, G, N = spec.split(",")
    w, _ = _world(fam, int(L), int(G), 0, int(N))
    S, Gd = counts(w.results, "correlated_logit")
    fit_correlated(S[:50], Gd[:50], backend=backends[0])  # numba: compile first
    for b in backends:
        fit_correlated(S[:50], Gd[:50], backend=b)
        t = time.perf_counter()
        f = fit_correlated(S, Gd, backend=b)
        secs = time.perf_counter() - t
        print(
            f"| {fam} | {N} | {L} | {G} | {b} | {secs:.1f} | "
            f"{os.getloadavg()[0]:.1f} | error {100 * (f.value - w.oracle):+.2f}, "
            f"{f.iterations} E-steps",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    ap.add_argument("--families", type=lambda s: s.split(","), default=["lowrank_3"])
    ap.add_argument("--L", type=ints, default=[4, 12])
    ap.add_argument("--G", type=ints, default=[5, 20])
    ap.add_argument("--reps", type=ints, default=[0])
    ap.add_argument("--N", type=int, default=2000)
    ap.add_argument("--backend", default=None, help="cpp, numba or numpy")
    ap.add_argument("--summary", action="store_true")
    ap.add_argument(
        "--speed",
        metavar="FAMILY,L,G,N",
        help="time one fit per backend (--speed-backends) on this world instead",
    )
    ap.add_argument("--speed-backends", default="cpp,numba")
    args = ap.parse_args()
    if args.speed:
        speed(args.speed, args.speed_backends.split(","))
    else:
        summary() if args.summary else rows(args)


if __name__ == "__main__":
    main()
