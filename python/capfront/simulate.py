"""Synthetic workloads with known truth (design §8)."""

from __future__ import annotations

import numpy as np

from .results import EvalResults


def simulate(
    n_prompts: int,
    n_models: int,
    n_draws: int,
    *,
    n_topics: int = 1,
    specialisation: float = 1.0,
    within_cell_correlation: float = 0.0,
    seed: int = 0,
    topic_weights: np.ndarray | None = None,
    difficulty_sd: float = 1.5,
    skill_sd: float = 0.7,
    mean_skill: float = 1.0,
    cost_range: tuple[float, float] = (0.1, 10.0),
    as_counts: bool | None = None,
    model_skill: np.ndarray | None = None,
    draw_correlation: float = 0.0,
    cell_sd: float = 0.0,
) -> EvalResults:
    """Simulate an evaluation with known per-cell success probabilities.

    ``logit q[n, l] = theta[l, topic(n)] - d[n]`` with model skill
    ``theta[l, t] = a_l + specialisation * z[l, t]``, ``a_l ~ N(mean_skill,
    skill_sd^2)``, ``z ~ N(0, 1)``, difficulty ``d[n] ~ N(0, difficulty_sd^2)`` and
    topics drawn from ``topic_weights`` (uniform by default). With
    ``within_cell_correlation = rho > 0`` each cell's probability is
    ``p ~ Beta(q (1-rho)/rho, (1-q)(1-rho)/rho)`` (draws in a cell are correlated
    with intra-class correlation ``rho`` around ``q``); the truth is the cell's ``p``,
    the mean of infinitely many draws of that cell. Draws are ``Bernoulli(p)``.

    Costs: model ``l`` costs ``c_l`` per generation, log-spaced over ``cost_range``
    and increasing with skill, with +-20% per-prompt noise; latency grows with cost.

    ``as_counts`` (default: when ``N L G > 5e7``) draws ``Binomial(G, p)`` counts
    instead of keeping every generation.

    ``model_skill`` (L, K) fixes ``theta`` instead of drawing it (the random stream
    is consumed as usual, so topics and difficulties match a run without it); costs
    then rank models by ``model_skill.mean(axis=1)``.

    ``cell_sd > 0`` adds a model-by-prompt aptitude ``u[n, l] ~ N(0, cell_sd^2)`` to
    ``logit q`` (design §4b's cell effect), so the best model varies between prompts of
    one topic too.

    ``draw_correlation = rho_d > 0`` correlates the draws *across models* (Gaussian
    copula): generation ``g`` of model ``l`` on prompt ``n`` succeeds when
    ``sqrt(rho_d) z[n, g] + sqrt(1 - rho_d) e[n, l, g] < Phi^-1(p[n, l])``, with
    ``z`` shared by all models and ``z, e ~ N(0, 1)``. Each cell stays
    ``Bernoulli(p)`` (the truth is unchanged) but the models' sample means on a prompt
    are positively correlated. Counts (``as_counts``) are sums of such draws.

    Returns an :class:`EvalResults` with ``truth_p`` (N, L) and ``truth`` (dict of
    ``theta``, ``difficulty``, ``topic_weights``, ``model_cost``).
    """
    for value, name in (
        (n_prompts, "n_prompts"),
        (n_models, "n_models"),
        (n_draws, "n_draws"),
        (n_topics, "n_topics"),
    ):
        if int(value) < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if not 0.0 <= within_cell_correlation < 1.0:
        raise ValueError("within_cell_correlation must lie in [0, 1)")
    if specialisation < 0:
        raise ValueError("specialisation must be >= 0")
    if not cell_sd >= 0.0:
        raise ValueError("cell_sd must be >= 0")
    if not 0.0 <= draw_correlation < 1.0:
        raise ValueError("draw_correlation must lie in [0, 1)")
    rng = np.random.default_rng(seed)
    N, L, G, K = int(n_prompts), int(n_models), int(n_draws), int(n_topics)
    if topic_weights is None:
        pi = np.full(K, 1.0 / K)
    else:
        pi = np.asarray(topic_weights, dtype=np.float64)
        if pi.shape != (K,) or (pi < 0).any() or not np.isclose(pi.sum(), 1.0):
            raise ValueError(
                f"topic_weights must be {K} non-negative numbers summing to 1"
            )
    topic = rng.choice(K, size=N, p=pi)
    base = rng.normal(mean_skill, skill_sd, size=L)
    theta = base[:, None] + specialisation * rng.normal(size=(L, K))
    if model_skill is not None:
        theta = np.asarray(model_skill, dtype=np.float64)
        if theta.shape != (L, K) or not np.isfinite(theta).all():
            raise ValueError(f"model_skill must be a finite ({L}, {K}) array")
        base = theta.mean(axis=1)
    difficulty = rng.normal(0.0, difficulty_sd, size=N)
    logit_q = theta[:, topic].T - difficulty[:, None]
    if cell_sd > 0:
        logit_q = logit_q + rng.normal(0.0, cell_sd, size=(N, L))
    q = 1.0 / (1.0 + np.exp(-logit_q))
    rho = float(within_cell_correlation)
    if rho > 0:
        conc = (1.0 - rho) / rho
        qc = np.clip(q, 1e-9, 1 - 1e-9)
        p = rng.beta(qc * conc, (1.0 - qc) * conc)
    else:
        p = q
    rank = np.argsort(np.argsort(base))
    lo, hi = cost_range
    model_cost = lo * (hi / lo) ** (rank / max(L - 1, 1))
    cost = model_cost[None, :] * rng.uniform(0.8, 1.2, size=(N, L))
    latency = 0.5 + 0.3 * np.log1p(cost) * rng.uniform(0.7, 1.3, size=(N, L))
    if as_counts is None:
        as_counts = N * L * G > 5e7
    truth = {
        "theta": theta,
        "difficulty": difficulty,
        "topic_weights": pi,
        "model_cost": model_cost,
        "q": q,
    }
    models = [f"sim_{i}" for i in range(L)]
    if draw_correlation > 0:
        draws = _copula_draws(rng, p, G, float(draw_correlation))
        if as_counts:
            res = EvalResults.from_counts(
                draws.sum(axis=2, dtype=np.int64),
                G,
                cost=cost,
                latency=latency,
                models=models,
                topic=topic,
            )
        else:
            res = EvalResults.from_arrays(
                draws, cost=cost, latency=latency, models=models, topic=topic
            )
    elif as_counts:
        S = rng.binomial(G, p)
        res = EvalResults.from_counts(
            S, G, cost=cost, latency=latency, models=models, topic=topic
        )
    else:
        draws = (rng.random((N, L, G)) < p[:, :, None]).astype(np.uint8)
        res = EvalResults.from_arrays(
            draws, cost=cost, latency=latency, models=models, topic=topic
        )
    res.truth_p = p
    res.truth = truth
    return res


def _copula_draws(
    rng: np.random.Generator, p: np.ndarray, G: int, rho: float
) -> np.ndarray:
    """Bernoulli(p) draws, shaped (N, L, G), correlated across models by a shared
    per-(prompt, generation) normal; built in prompt chunks to bound memory."""
    from scipy.special import ndtri

    N, L = p.shape
    threshold = ndtri(np.clip(p, 0.0, 1.0))  # -inf / +inf for p = 0 / 1
    out = np.empty((N, L, G), dtype=np.uint8)
    step = max(1, (1 << 22) // max(L * G, 1))
    a, b = np.sqrt(rho), np.sqrt(1.0 - rho)
    for start in range(0, N, step):
        sl = slice(start, min(N, start + step))
        n = sl.stop - sl.start
        shared = rng.standard_normal((n, 1, G))
        latent = a * shared + b * rng.standard_normal((n, L, G))
        out[sl] = latent < threshold[sl, :, None]
    return out
