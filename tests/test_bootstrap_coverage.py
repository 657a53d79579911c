"""Coverage of the bootstrap interval on simulated workloads with known truth."""

from __future__ import annotations

import numpy as np
import pytest

import capfront
from capfront.bootstrap import bootstrap

N_REPS = 400


def _population(seed: int, n_models: int, n_draws: int) -> np.ndarray:
    pop = capfront.simulate(
        50_000, n_models, n_draws, n_topics=3, seed=seed, as_counts=True
    )
    return pop.truth_p


@pytest.mark.parametrize(
    ("method", "stratify"), [("percentile", None), ("bca", "topic")]
)
def test_naive_oracle_interval_covers_its_expectation(method, stratify):
    """Prompts drawn i.i.d. from a simulated population, ``S ~ Bin(G, p)``: the 95%
    interval of the naive oracle must cover its expectation
    ``E[mean_n max_l S_nl / G] = mean over the population of
    expected_max_binomial(p_n, G)`` in 93-97% of 400 repetitions."""
    L, G, N = 6, 10, 500
    p = _population(11, L, G)
    target = float(np.mean(capfront.expected_max_binomial(p, G)))
    rng = np.random.default_rng(2024)
    backend = capfront.available_backends()[0]
    hits = 0
    for rep in range(N_REPS):
        idx = rng.integers(0, p.shape[0], N)
        S = rng.binomial(G, p[idx])
        topic = np.arange(N) % 3 if stratify else None
        data = capfront.EvalResults.from_counts(S, G, topic=topic)
        lo, hi = bootstrap(
            data,
            "naive_oracle",
            n_resamples=1000,
            seed=rep,
            method=method,
            stratify=stratify,
            backend=backend,
        ).ci
        hits += lo <= target <= hi
    assert 0.93 <= hits / N_REPS <= 0.97, hits / N_REPS
