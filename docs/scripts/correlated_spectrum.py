"""Where the correlated model's error on low-rank logits comes from: the fitted
covariance's small eigenvalues (docs/debiasing.md, "The correlated fit's small
eigenvalues").

For one battery data set (docs/scripts/worlds.py): the fitted spectrum against
the true prompts' logits, the posterior maximum under the fitted and under the
true prompts' covariance (and the latter's log-likelihood), the fit after more
Laplace-moment EM iterations or continued with more importance draws, and
the correlated model's bias measured by refits in its own world and in the
``correlated_lowrank`` world (the fit without the eigenvalues after its gap).

    PYTHONPATH=python python docs/scripts/correlated_spectrum.py lowrank 30 10 0
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.special import expit, logit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from robustness import _world  # noqa: E402

from capfront.debias._input import counts  # noqa: E402
from capfront.debias.correlated import (  # noqa: E402
    correlated_posterior_max,
    fit_correlated,
    gap_rank,
    truncated_covariance,
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("family")
    ap.add_argument("L", type=int)
    ap.add_argument("G", type=int)
    ap.add_argument("rep", type=int)
    ap.add_argument("--sims", type=int, default=6, help="refits per world")
    ap.add_argument("--laplace", type=int, nargs="*", default=[100, 300])
    ap.add_argument(
        "--draws",
        type=int,
        nargs="*",
        default=[1024, 4096],
        help="continue the fit with this many importance draws (12 E-steps)",
    )
    a = ap.parse_args()
    w, _ = _world(a.family, a.L, a.G, a.rep, 2000)
    S, G = counts(w.results, "spectrum", compact=True)
    fit = fit_correlated(S, G)
    ev = np.linalg.eigvalsh(fit.Sigma)[::-1]
    eta = logit(np.clip(w.p, 1e-9, 1 - 1e-9))
    true_cov = np.cov(eta.T) + 1e-4 * np.eye(a.L)
    ev0 = np.linalg.eigvalsh(true_cov)[::-1]
    rank = gap_rank(fit.Sigma)
    print(f"{a.family} L={a.L} G={a.G} rep={a.rep}: gap rank {rank}")
    print("  fitted spectrum", np.round(ev[:6], 2), f"tail sum {ev[rank:].sum():.2f}")
    print("  true logits'   ", np.round(ev0[:6], 2), f"tail sum {ev0[rank:].sum():.3f}")
    post, ll = correlated_posterior_max(S, G, eta.mean(0), true_cov)
    print(
        f"  error, points: fitted {100 * (fit.value - w.oracle):+.2f}, "
        f"true prompts' covariance {100 * (post.mean() - w.oracle):+.2f} "
        f"(its loglik {ll.sum() - fit.loglik:+.0f} nats)"
    )
    for k in a.laplace:
        f = fit_correlated(S, G, laplace_iterations=k)
        print(
            f"  {k} Laplace iterations: error {100 * (f.value - w.oracle):+.2f}, "
            f"loglik {f.loglik - fit.loglik:+.0f} nats"
        )
    for d in a.draws:  # the importance-sampled EM continued with more draws
        f = fit_correlated(S, G, init=fit, draws=d, iterations=12)
        print(
            f"  {d} draws, 12 more E-steps: error {100 * (f.value - w.oracle):+.2f}, "
            f"loglik {f.loglik - fit.loglik:+.0f} nats"
        )
    r = np.random.default_rng(1)
    worlds = {"correlated": fit.Sigma}
    if rank:
        worlds["correlated_lowrank"] = truncated_covariance(fit.Sigma, rank)
    for name, Sig in worlds.items():
        err = []
        for _ in range(a.sims):
            p = expit(r.multivariate_normal(fit.mu, Sig, size=S.shape[0]))
            Si = r.binomial(a.G, p)
            fi = fit_correlated(Si, np.full_like(Si, a.G))
            err.append(100 * (fi.value - p.max(1).mean()))
        se = np.std(err, ddof=1) / np.sqrt(len(err))
        print(f"  {name} world: bias {np.mean(err):+.2f} +- {se:.2f}")


if __name__ == "__main__":
    main()
