"""World generators with known truth for the robustness battery (docs/estimators.md).

Every family here is a way real evaluation logs could arise that is *not* the
latent model ``pgm`` fits (``logit p = theta[l, topic] - d_n + cell effect`` with
the topic labels given), except the control ``pgm_own``. A world is drawn in two
steps, both from ``numpy.random.default_rng(seed)``:

1. the pool: model-level parameters (skills, aptitudes, class rates, ...);
2. the prompts: a *prompt sampler* draws ``n`` prompts' true per-cell success
   probabilities ``p[n, l]`` given the pool. The data set's prompts are ``N``
   draws; the prompt population's oracle ``E_n max_l p[n, l]`` is estimated from
   ``POP_PROMPTS`` fresh draws of the same sampler (same pool).

Counts are ``Binomial(G, p[n, l])`` except in ``cell_shocks`` (draws within a
cell share block-level shocks around ``p``). No topic labels are passed, except
in ``pgm_own``.

    from worlds import WORLDS
    w = WORLDS["topics"](2000, 12, 10, seed=3)
    w.results, w.p, w.oracle, w.population_oracle

Usage from the command line prints each family's naive-oracle bias:

    PYTHONPATH=python python docs/scripts/worlds.py --L 4,12,30 --G 5,10,20
"""

from __future__ import annotations

import argparse
import functools
import gzip
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import expit, logit

import capfront as cf

POP_PROMPTS = 100_000
EVALPERF = (
    Path(__file__).resolve().parents[2]
    / "python"
    / "capfront"
    / "data"
    / "evalperf_example.csv.gz"
)

Sampler = Callable[[np.random.Generator, int], np.ndarray]


@dataclass
class World:
    """One data set with its truth.

    Attributes
    ----------
    family : the generator's name in :data:`WORLDS`.
    results : the counts (``truth_p`` set to ``p``).
    p : (N, L) true per-cell success probabilities of the data set's prompts.
    oracle : ``mean_n max_l p[n, l]``, the oracle of these prompts.
    population_oracle : ``E_n max_l p[n, l]`` over the prompt population (Monte
        Carlo over :data:`POP_PROMPTS` fresh prompts of the same pool), or ``None``.
    params : the family's settings.
    """

    family: str
    results: cf.EvalResults
    p: np.ndarray
    oracle: float
    population_oracle: float | None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def naive(self) -> float:
        """The plug-in oracle ``mean_n max_l S[n, l] / G`` of this data set."""
        S = self.results.successes
        return float((S / self.results.n_draws).max(axis=1).mean())


def _population(rng: np.random.Generator, sampler: Sampler, pop: int) -> float | None:
    if pop <= 0:
        return None
    total, done = 0.0, 0
    while done < pop:  # chunks bound the memory at L = 30
        n = min(20_000, pop - done)
        total += float(sampler(rng, n).max(axis=1).sum())
        done += n
    return total / pop


Draws = Callable[
    [np.random.Generator, np.ndarray, int], np.ndarray | tuple[np.ndarray, np.ndarray]
]
Family = Sampler | tuple[Sampler, Draws]


def _check(N: int, L: int, G: int) -> None:
    for value, name in ((N, "N"), (L, "L"), (G, "G")):
        if int(value) < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")


def _family(build: Callable[..., Family]) -> Callable[..., World]:
    """Turn ``build(rng, L, **kw) -> sampler`` (or ``(sampler, draws)``) into the
    world generator ``fn(N, L, G, seed=0, *, pop=POP_PROMPTS, **kw) -> World``:
    the pool from ``build``, then N prompts, their counts (``Binomial(G, p)``
    unless ``draws`` says otherwise) and the population oracle, all from
    ``default_rng(seed)``."""
    defaults = {
        k: v.default
        for k, v in inspect.signature(build).parameters.items()
        if v.kind is inspect.Parameter.KEYWORD_ONLY
    }

    @functools.wraps(build)
    def generate(
        N: int, L: int, G: int, seed: int = 0, *, pop: int = POP_PROMPTS, **kw: Any
    ) -> World:
        _check(N, L, G)
        bad = set(kw) - set(defaults)
        if bad:
            raise TypeError(f"{build.__name__}() got unknown option(s) {sorted(bad)}")
        rng = np.random.default_rng(seed)
        built = build(rng, int(L), **kw)
        sampler, draws = built if isinstance(built, tuple) else (built, None)
        p = np.clip(sampler(rng, int(N)), 0.0, 1.0)
        S = rng.binomial(G, p) if draws is None else draws(rng, p, int(G))
        # (a family's draws may give each cell its own number of draws)
        S, Gc = S if isinstance(S, tuple) else (S, G)
        res = cf.EvalResults.from_counts(S, Gc, models=[f"m{i}" for i in range(L)])
        res.truth_p = p
        return World(
            build.__name__,
            res,
            p,
            float(p.max(axis=1).mean()),
            _population(rng, sampler, int(pop)),
            {**defaults, **kw},
        )

    return generate


# --------------------------------------------------------------------- families
@_family
def topics(
    rng: np.random.Generator,
    L: int,
    *,
    n_topics: int = 4,
    specialisation: float = 1.0,
) -> Family:
    """Unlabelled latent topics: ``logit p = skill[l, topic(n)] - d_n``.

    ``skill[l, k] = a_l + specialisation z[l, k]``, ``a_l ~ N(1, 0.7^2)``,
    ``z ~ N(0, 1)``, ``d_n ~ N(0, 1.5^2)``, topics uniform over ``n_topics``.
    pgm's own shape *with* the labels; here they are not passed, so pgm sees a
    cell effect correlated across prompts that it treats as independent noise.
    """
    skill = rng.normal(1.0, 0.7, L)[:, None] + specialisation * rng.normal(
        size=(L, n_topics)
    )

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        topic = r.integers(n_topics, size=n)
        return expit(skill[:, topic].T - r.normal(0.0, 1.5, n)[:, None])

    return sampler


@_family
def lowrank(
    rng: np.random.Generator,
    L: int,
    *,
    rank: int = 2,
    scale: float = 0.8,
) -> Family:
    """Continuous specialisation: ``logit p = b_l + a_l . z_n - d_n``.

    ``b_l ~ N(1, 0.7^2)``, ``a_l ~ N(0, scale^2 I_rank)``, ``z_n ~ N(0, I_rank)``,
    ``d_n ~ N(0, 1.5^2)``. No discrete topics: each prompt sits somewhere on a
    ``rank``-dimensional continuum of skills.
    """
    b = rng.normal(1.0, 0.7, L)
    a = rng.normal(0.0, scale, (L, rank))

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        z = r.normal(size=(n, rank))
        return expit(b[None, :] + z @ a.T - r.normal(0.0, 1.5, n)[:, None])

    return sampler


@_family
def beta_classes(
    rng: np.random.Generator,
    L: int,
    *,
    n_classes: int = 5,
    concentration: float = 6.0,
) -> Family:
    """Latent prompt classes with Beta per-class rates: ``p[n, l] ~ Beta(m
    kappa, (1 - m) kappa)`` independently per cell, ``m = m[class(n), l]``.

    Class means ``m[c, l] = expit(a_l + z[c, l] - e_c)`` (``a_l ~ N(0, 0.7^2)``,
    ``z ~ N(0, 1)``, class difficulty ``e_c ~ N(0, 1.5^2)``), class weights
    ``Dirichlet(2)``, ``kappa = concentration``. No prompt difficulty shared
    across models and no logistic shape inside a class: a prompt's rates for
    different models are independent given its class.
    """
    weights = rng.dirichlet(np.full(n_classes, 2.0))
    m = expit(
        rng.normal(0.0, 0.7, L)[None, :]
        + rng.normal(size=(n_classes, L))
        - rng.normal(0.0, 1.5, n_classes)[:, None]
    )
    m = np.clip(m, 0.01, 0.99)

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        c = r.choice(n_classes, size=n, p=weights)
        mc = m[c]
        return r.beta(mc * concentration, (1.0 - mc) * concentration)

    return sampler


@_family
def near_ceiling(
    rng: np.random.Generator,
    L: int,
    *,
    easy: float = 0.7,
    impossible: float = 0.08,
    flaky: float = 0.04,
) -> Family:
    """Near-ceiling pools, like coding benchmarks.

    A share ``easy`` of prompts is solved almost always by most models
    (``logit p = 4 + b_l + N(0, 1)`` per cell, weaker models ``b_l < 0`` lower);
    ``impossible`` prompts are almost never solved (``p ~ Beta(0.05, 5)``); the
    rest are hard (``logit p = b_l - d_n + N(0, 1.5^2)`` per cell, ``d_n ~ N(1,
    1.5^2)``). A share ``flaky`` of cells (anywhere) has ``p ~ U(0.2, 0.9)``.
    ``b_l ~ N(0, 1)``. The answer depends on the tail near ``p = 1``, which
    G <= 20 draws cannot resolve.
    """
    b = rng.normal(0.0, 1.0, L)

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        kind = r.choice(3, size=n, p=[easy, impossible, 1.0 - easy - impossible])
        lp = np.where(
            (kind == 0)[:, None],
            4.0 + b[None, :] + r.normal(0.0, 1.0, (n, L)),
            b[None, :] - r.normal(1.0, 1.5, n)[:, None] + r.normal(0.0, 1.5, (n, L)),
        )
        p = expit(lp)
        p = np.where((kind == 1)[:, None], r.beta(0.05, 5.0, (n, L)), p)
        return np.where(r.random((n, L)) < flaky, r.uniform(0.2, 0.9, (n, L)), p)

    return sampler


_EVALPERF_RATES: np.ndarray | None = None


def evalperf_rates(shrink: float = 2.0) -> np.ndarray:
    """EvalPerf's per-cell rates (118 prompts x 25 models, 100 draws each),
    shrunk towards each model's mean rate with ``shrink`` pseudo-draws:
    ``(S + shrink m_l) / (100 + shrink)`` (so no rate is exactly 0 or 1)."""
    global _EVALPERF_RATES
    if _EVALPERF_RATES is None:
        import pandas as pd

        with gzip.open(EVALPERF, "rt") as fh:
            frame = pd.read_csv(fh)
        wide = frame.pivot_table(
            index="prompt_id", columns="model", values="n_correct", aggfunc="sum"
        )
        n = frame.pivot_table(
            index="prompt_id", columns="model", values="n_samples", aggfunc="sum"
        )
        _EVALPERF_RATES = np.stack([wide.to_numpy(float), n.to_numpy(float)])
    S, n = _EVALPERF_RATES
    mean = S.sum(axis=0) / n.sum(axis=0)
    return (S + shrink * mean[None, :]) / (n + shrink)


@_family
def evalperf(
    rng: np.random.Generator,
    L: int,
    *,
    shrink: float = 2.0,
    jitter: float = 0.3,
) -> Family:
    """Per-cell rates from real data: EvalPerf's 100-draw rates (bundled example,
    Apache-2.0), shrunk (:func:`evalperf_rates`), a random sub-pool of L of its
    25 models (beyond 25, clones of random models with their own cell jitter of
    0.5 on the logit scale), prompts cloned to N by sampling the 118 with
    replacement, each clone's logit rates shifted by ``N(0, jitter^2)`` per
    prompt and ``N(0, (jitter / 2)^2)`` per cell. No parametric shape at all.
    """
    base = logit(evalperf_rates(shrink))
    M = base.shape[1]
    if L <= M:
        cols = rng.choice(M, size=L, replace=False)
        extra = np.zeros(L)
    else:
        cols = np.concatenate([rng.permutation(M), rng.choice(M, size=L - M)])
        extra = np.r_[np.zeros(M), np.full(L - M, 0.5)]
    pool = base[:, cols]

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        rows = r.integers(pool.shape[0], size=n)
        lp = (
            pool[rows]
            + r.normal(0.0, jitter, n)[:, None]
            + r.normal(size=(n, L)) * np.hypot(jitter / 2, extra)[None, :]
        )
        return expit(lp)

    return sampler


@_family
def cell_shocks(
    rng: np.random.Generator,
    L: int,
    *,
    block: int = 5,
    rho: float = 0.05,
) -> Family:
    """Within-cell correlated draws: the G draws of a cell come in blocks of
    ``block`` (e.g. sessions, batches, seeds) that share a rate ``r ~ Beta(p
    (1 - rho) / rho, (1 - p)(1 - rho) / rho)`` around the cell's ``p``; draws are
    ``Bernoulli(r)``. The cell's long-run rate is still ``p`` (the truth), but
    the counts are over-dispersed relative to ``Binomial(G, p)``, which every
    estimator assumes. ``p`` itself: one-topic logistic, ``logit p = b_l - d_n +
    N(0, 0.5^2)`` per cell (``b_l ~ N(1, 1)``, ``d_n ~ N(0, 1.5^2)``).
    """
    b = rng.normal(1.0, 1.0, L)

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        lp = b[None, :] - r.normal(0.0, 1.5, n)[:, None] + r.normal(0, 0.5, (n, L))
        return expit(lp)

    def draws(r: np.random.Generator, p: np.ndarray, g: int) -> np.ndarray:
        conc = (1.0 - rho) / rho
        pc = np.clip(p, 1e-6, 1 - 1e-6)
        S = np.zeros(p.shape, dtype=np.int64)
        for start in range(0, g, block):
            size = min(block, g - start)
            S += r.binomial(size, r.beta(pc * conc, (1.0 - pc) * conc))
        return S

    return sampler, draws


@_family
def clustered(
    rng: np.random.Generator,
    L: int,
    *,
    n_clusters: int = 150,
    aptitude_sd: float = 0.8,
) -> Family:
    """Clustered prompts (templated variants of a few hundred tasks): cluster
    ``c`` has difficulty ``e_c ~ N(0, 1.5^2)`` and model aptitudes ``u[c, l] ~
    N(0, aptitude_sd^2)``; its prompts have ``logit p = b_l + u[c, l] - e_c -
    N(0, 0.5^2) + N(0, 0.3^2)`` (prompt and cell terms). Cluster sizes are
    Zipf-like (weights ``1 / rank``)."""
    b = rng.normal(1.0, 0.7, L)
    e = rng.normal(0.0, 1.5, n_clusters)
    u = rng.normal(0.0, aptitude_sd, (n_clusters, L))
    w = 1.0 / np.arange(1, n_clusters + 1)
    w /= w.sum()

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        c = r.choice(n_clusters, size=n, p=w)
        lp = (
            b[None, :]
            + u[c]
            - (e[c] + r.normal(0.0, 0.5, n))[:, None]
            + r.normal(0.0, 0.3, (n, L))
        )
        return expit(lp)

    return sampler


@_family
def heavy_tail(
    rng: np.random.Generator,
    L: int,
    *,
    df: float = 2.5,
) -> Family:
    """Heavy-tailed difficulty and cell effects: ``logit p = b_l - d_n + u[n,
    l]`` with ``d_n ~ 1.2 t_df`` and ``u ~ 0.6 t_df`` (Student t, not normal)."""
    b = rng.normal(1.0, 0.7, L)

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        d = 1.2 * r.standard_t(df, n)
        return expit(b[None, :] - d[:, None] + 0.6 * r.standard_t(df, (n, L)))

    return sampler


@_family
def dominant(
    rng: np.random.Generator,
    L: int,
    *,
    lead: float = 2.0,
) -> Family:
    """One dominant model: model 0's skill is ``lead`` logits above the best of
    the rest; ``logit p = b_l - d_n + N(0, 0.7^2)`` per cell, ``b_l ~ N(0,
    0.7^2)``, ``d_n ~ N(0, 1.5^2)``. The maximum is mostly model 0's rate, and
    the other models mostly add noise to the naive maximum."""
    b = rng.normal(0.0, 0.7, L)
    b[0] = b.max() + lead

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        lp = b[None, :] - r.normal(0.0, 1.5, n)[:, None] + r.normal(0, 0.7, (n, L))
        return expit(lp)

    return sampler


@_family
def near_identical(
    rng: np.random.Generator,
    L: int,
    *,
    spread: float = 0.3,
    cell_sd: float = 0.5,
) -> Family:
    """A pool of near-identical models (fine-tunes or checkpoints of one base):
    ``logit p = b_l - d_n + N(0, cell_sd^2)``, ``b_l ~ N(1, spread^2)``,
    ``d_n ~ N(0, 1.5^2)``. Many near-ties: the naive maximum's bias is largest."""
    b = rng.normal(1.0, spread, L)

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        lp = b[None, :] - r.normal(0.0, 1.5, n)[:, None]
        return expit(lp + r.normal(0.0, cell_sd, (n, L)))

    return sampler


@_family
def guessing(
    rng: np.random.Generator,
    L: int,
    *,
    options: tuple[int, ...] = (4, 4, 5, 10),
    cell_sd: float = 0.4,
) -> Family:
    """Multiple-choice prompts with a guessing floor (three-parameter item
    response theory): ``p = c_n + (1 - c_n) expit(a_l (t_l - b_n) + N(0,
    cell_sd^2))``, ``c_n = 1 / k_n`` with ``k_n`` drawn from ``options`` (the
    prompt's number of answer choices), discrimination ``a_l ~ LogNormal(0,
    0.3^2)``, skill ``t_l ~ N(0.5, 1)``, difficulty ``b_n ~ N(0, 1.5^2)``. No
    logit is normal here: rates pile up at the floor ``1 / k_n`` (every model
    guesses on the hardest prompts), where the naive maximum of L guessers is far
    above the floor. Added 5 Dec (session 39) as a family none of the estimators
    was developed on."""
    a = rng.lognormal(0.0, 0.3, L)
    t = rng.normal(0.5, 1.0, L)
    k = np.asarray(options, dtype=np.float64)

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        c = 1.0 / r.choice(k, size=n)
        lp = a[None, :] * (t[None, :] - r.normal(0.0, 1.5, n)[:, None])
        lp = lp + r.normal(0.0, cell_sd, (n, L))
        return c[:, None] + (1.0 - c[:, None]) * expit(lp)

    return sampler


@_family
def format_failures(
    rng: np.random.Generator,
    L: int,
    *,
    max_fail: float = 0.1,
    cell_sd: float = 0.6,
) -> Family:
    """Models that fail a share of their answers whatever the prompt (format
    errors, refusals, timeouts): ``p = (1 - phi_l) expit(b_l - d_n + N(0,
    cell_sd^2))`` with ``phi_l ~ U(0, max_fail)``, ``b_l ~ N(1.5, 0.7^2)``,
    ``d_n ~ N(0, 2^2)``: every model has its own ceiling ``1 - phi_l`` (0.9 to
    1), so no ceiling shared by all cells describes them. Added 7 Dec (session
    41) after ``pgm``'s shared floor and ceiling, to test them on ceilings they
    do not assume."""
    phi = rng.uniform(0.0, max_fail, L)
    b = rng.normal(1.5, 0.7, L)

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        lp = b[None, :] - r.normal(0.0, 2.0, n)[:, None]
        lp = lp + r.normal(0.0, cell_sd, (n, L))
        return (1.0 - phi[None, :]) * expit(lp)

    return sampler


@_family
def prompt_discrimination(
    rng: np.random.Generator,
    L: int,
    *,
    a_sd: float = 0.6,
    cell_sd: float = 0.4,
) -> Family:
    """Two-parameter item response theory with the discrimination on the
    prompt: ``logit p = a_n (t_l - b_n) + N(0, cell_sd^2)``, ``a_n ~
    LogNormal(0, a_sd^2)``, skill ``t_l ~ N(0.5, 1)``, difficulty ``b_n ~ N(0,
    1.5^2)``. Some prompts separate the models sharply (large ``a_n``: rates
    near 0 and 1, the best model alone solves them), others hardly at all
    (small ``a_n``: every model near the same rate): the spread of the models'
    logits changes from prompt to prompt, where ``pgm`` gives every prompt of a
    class the same. Added 7 Dec (session 42) as a family none of the
    estimators was developed on."""
    t = rng.normal(0.5, 1.0, L)

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        a = r.lognormal(0.0, a_sd, n)
        lp = a[:, None] * (t[None, :] - r.normal(0.0, 1.5, n)[:, None])
        return expit(lp + r.normal(0.0, cell_sd, (n, L)))

    return sampler


@_family
def model_families(
    rng: np.random.Generator,
    L: int,
    *,
    size: int = 3,
    shared: float = 0.8,
    cell_sd: float = 0.8,
) -> Family:
    """Pools of related models (sizes or fine-tunes of one base model): the
    models come in families of ``size`` (2 at L = 4) whose per-prompt
    deviations are mostly shared: ``logit p = b_l - d_n + cell_sd (sqrt(shared)
    u[n, f(l)] + sqrt(1 - shared) e[n, l])`` with ``u, e ~ N(0, 1)``, family
    skill ``B_f ~ N(1, 0.7^2)`` and ``b_l = B_f + N(0, 0.3^2)``, ``d_n ~ N(0,
    1.5^2)``. Given the prompt the cells of one family are correlated
    (``shared`` = 0.8), where ``pgm`` takes them independent: the maximum over a
    family is lower than over as many independent models. Added 7 Dec (session
    42) as a family none of the estimators was developed on."""
    k = max(1, min(size, L // 2))
    fam = np.arange(L) // k
    n_fam = int(fam.max()) + 1
    b = rng.normal(1.0, 0.7, n_fam)[fam] + rng.normal(0.0, 0.3, L)

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        u = r.normal(0.0, 1.0, (n, n_fam))[:, fam]
        e = r.normal(0.0, 1.0, (n, L))
        dev = cell_sd * (np.sqrt(shared) * u + np.sqrt(1.0 - shared) * e)
        return expit(b[None, :] - r.normal(0.0, 1.5, n)[:, None] + dev)

    return sampler


@_family
def mixed_decoding(
    rng: np.random.Generator,
    L: int,
    *,
    greedy: float = 0.5,
    cell_sd: float = 0.8,
    greedy_draws: int | None = None,
) -> Family:
    """A pool that mixes greedy-decoded and sampled models (temperature 0 for
    some, sampling for others, as leaderboards run them): every model has a
    per-prompt rate ``q = expit(b_l - d_n + N(0, cell_sd^2))``, ``b_l ~ N(0.5,
    1)``, ``d_n ~ N(0, 1.5^2)``; a sampled model's rate is ``q``, a greedy
    model's is 0 or 1 (``Bernoulli(q)``: its one answer is right or wrong, and
    all its draws repeat it). A share ``greedy`` of the models (at least one) is
    greedy. Their counts are all or nothing, so no one cell-effect scale fits
    both kinds of model. ``greedy_draws``: the greedy models' draws per cell
    (default ``G``; 1: one greedy run beside ``G`` sampled ones, where the counts
    cannot show which models are greedy). Added 7 Dec (session 45) as a family
    none of the estimators was developed on."""
    b = rng.normal(0.5, 1.0, L)
    is_greedy = np.zeros(L, dtype=bool)
    is_greedy[: max(1, int(round(greedy * L)))] = True
    rng.shuffle(is_greedy)

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        q = expit(
            b[None, :] - r.normal(0.0, 1.5, n)[:, None] + r.normal(0.0, cell_sd, (n, L))
        )
        u = r.random((n, L))
        return np.where(is_greedy[None, :], (u < q).astype(np.float64), q)

    if greedy_draws is None:
        return sampler

    def draws(r: np.random.Generator, p: np.ndarray, G: int):
        Gc = np.where(is_greedy[None, :], int(greedy_draws), G) + np.zeros_like(p, int)
        return r.binomial(Gc, p), Gc

    return sampler, draws


#: the real per-question results the real-data families read (../shared/data,
#: not shipped; MMLU-Pro is Apache-2.0, BFCL-Result has no licence, SWE-bench's
#: leaderboard is CC BY-NC: for testing only, never bundled)
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
MMLU_PRO = SHARED_DATA / "mmlu_pro_tiger_eval_results" / "mmlu_pro.csv"
BFCL = SHARED_DATA / "bfcl_v1_2024-08-11" / "bfcl_v1_2024-08-11.csv"
SWEBENCH = (
    SHARED_DATA / "swebench_verified_bash_only" / "swebench_verified_bash_only.csv"
)
#: family -> the file it reads
REAL_DATA = {"mmlu_pro": MMLU_PRO, "bfcl": BFCL, "swebench": SWEBENCH}
#: SWE-bench's leaderboard marks 51 of 500 resolved for this model where it
#: reports 52.8% (the data's README): left out
SWEBENCH_BROKEN = "20250720_mini-v0.0.0-claude-3-7-sonnet-20250219"
_REAL_RATES: dict[tuple[str, int, float], np.ndarray] = {}
#: real rates' logits are capped at +-7 (p within 0.0009 of 0 or 1)
LOGIT_CAP = 7.0


def data_file(family: str) -> Path | None:
    """The file a family (or stress variant) reads, ``None`` for the simulated
    ones (:data:`REAL_DATA`)."""
    return REAL_DATA.get(VARIANTS[family][0] if family in VARIANTS else family)


def available(family: str) -> bool:
    """Whether a family's data are here (the real-data families of
    :data:`REAL_DATA` need ``../shared/data``)."""
    path = data_file(family)
    return path is None or path.is_file()


def smoothed_rates(
    Y: np.ndarray, group: np.ndarray, neighbours: int = 8, shrink: float = 1.0
) -> np.ndarray:
    """Per-cell rates from one 0/1 answer per (question, model): question ``n``'s
    rate for model ``l`` is the share of correct answers over ``n`` and its
    ``neighbours`` nearest questions of the same group (Hamming distance between
    the models' correct/incorrect vectors; ties broken by a fixed random
    order), with ``shrink`` pseudo-answers at the model's rate in that group:
    ``(Y[n, l] + sum_{m in nn(n)} Y[m, l] + shrink a[l, group]) / (1 +
    neighbours + shrink)``. Groups of ``neighbours`` questions or fewer are
    pooled into one. Questions that models get right or wrong together share
    rates, so the real correlation between models, the groups' specialisation
    and the pile-up of questions every model misses stay; no rate is 0 or 1."""
    k = int(neighbours)
    group = np.asarray(group).astype(str)
    names, sizes = np.unique(group, return_counts=True)
    small = np.isin(group, names[sizes <= k])
    group = np.where(small, "\0pooled", group)
    tie = np.random.default_rng(20261205).random(len(Y)) * 0.5
    out = np.empty_like(Y)
    for s in np.unique(group):
        rows = np.flatnonzero(group == s)
        y = Y[rows]
        dist = y @ (1.0 - y).T + (1.0 - y) @ y.T + tie[rows][None, :]
        np.fill_diagonal(dist, np.inf)
        nn = np.argpartition(dist, k, axis=1)[:, :k]
        total = y + y[nn].sum(axis=1) + float(shrink) * y.mean(axis=0)[None, :]
        out[rows] = total / (1.0 + k + float(shrink))
    return out


def _answers(family: str) -> tuple[np.ndarray, np.ndarray]:
    """A real-data family's (questions, models) 0/1 matrix (questions every
    model answered) and each question's group."""
    path = REAL_DATA[family]
    if not path.is_file():
        raise FileNotFoundError(
            f"the {family} family reads {path} (../shared/data next to the "
            "repository); it is not shipped with capfront"
        )
    import pandas as pd

    if family == "swebench":
        frame = pd.read_csv(path, usecols=["prompt_id", "model", "score"])
        frame = frame[frame["model"] != SWEBENCH_BROKEN]
        # the instance's repository ("django__django-11099" -> "django")
        frame["category"] = frame["prompt_id"].str.split("__").str[0]
    else:
        frame = pd.read_csv(path, usecols=["prompt_id", "category", "model", "score"])
    wide = frame.pivot_table(
        index=["category", "prompt_id"],
        columns="model",
        values="score",
        aggfunc="first",
    ).dropna()
    return wide.to_numpy(np.float64), wide.index.get_level_values(0).to_numpy()


def real_rates(family: str, neighbours: int = 8, shrink: float = 1.0) -> np.ndarray:
    """:func:`smoothed_rates` of a real-data family's answers (cached)."""
    key = (family, int(neighbours), float(shrink))
    if key not in _REAL_RATES:
        Y, group = _answers(family)
        _REAL_RATES[key] = smoothed_rates(Y, group, neighbours, shrink)
    return _REAL_RATES[key]


def mmlu_pro_rates(neighbours: int = 8, shrink: float = 1.0) -> np.ndarray:
    """Per-cell rates from MMLU-Pro's real correctness matrix (10,326 questions
    answered by all 29 models, one draw each; Wang et al. 2024, TIGER-AI-Lab,
    Apache-2.0), smoothed over the 8 nearest questions of the same subject
    (:func:`smoothed_rates`)."""
    return real_rates("mmlu_pro", neighbours, shrink)


def _real_pool(
    rng: np.random.Generator, base: np.ndarray, L: int, jitter: float
) -> Sampler:
    """The prompt sampler of a real-data family: a random sub-pool of L of the
    data's M models (beyond M, clones of random models with their own cell
    jitter of 0.5 on the logit scale); prompts drawn from the questions with
    replacement, each draw's logit rates shifted by ``N(0, jitter^2)`` per
    prompt and ``N(0, (jitter / 2)^2)`` per cell. Rates of exactly 0 or 1 (a
    model that fails every question of a small group, as in BFCL) are moved to
    ``logit = -+LOGIT_CAP`` so that the jitter moves them too."""
    base = np.clip(base, -LOGIT_CAP, LOGIT_CAP)
    M = base.shape[1]
    if L <= M:
        cols = rng.choice(M, size=L, replace=False)
        extra = np.zeros(L)
    else:
        cols = np.concatenate([rng.permutation(M), rng.choice(M, size=L - M)])
        extra = np.r_[np.zeros(M), np.full(L - M, 0.5)]
    pool = base[:, cols]

    def sampler(r: np.random.Generator, n: int) -> np.ndarray:
        rows = r.integers(pool.shape[0], size=n)
        lp = (
            pool[rows]
            + r.normal(0.0, jitter, n)[:, None]
            + r.normal(size=(n, L)) * np.hypot(jitter / 2, extra)[None, :]
        )
        return expit(lp)

    return sampler


@_family
def mmlu_pro(
    rng: np.random.Generator,
    L: int,
    *,
    neighbours: int = 8,
    jitter: float = 0.2,
) -> Family:
    """Per-cell rates from real data of another kind: MMLU-Pro's questions
    answered once by each of 29 models, rates smoothed over similar questions
    (:func:`mmlu_pro_rates`; a ten-option multiple-choice test, so weak models
    sit near a guessing floor); sub-pools and prompts by :func:`_real_pool`. No
    parametric shape. Added 5 Dec (session 40) as a family none of the
    estimators was developed on; needs ``../shared/data`` (:func:`available`)."""
    return _real_pool(rng, logit(mmlu_pro_rates(neighbours)), L, jitter)


@_family
def bfcl(
    rng: np.random.Generator,
    L: int,
    *,
    neighbours: int = 8,
    jitter: float = 0.2,
) -> Family:
    """Per-cell rates from the Berkeley Function-Calling Leaderboard (v1, run
    of 2024-08-11): 1,700 entries in 12 categories answered once by 71 models
    (many of them one model in two modes, native function calling and
    prompting: pairs of related models), smoothed over the 8 nearest entries of
    the same category (:func:`smoothed_rates`); sub-pools and prompts by
    :func:`_real_pool`. The oracle of the 71 is 0.98: a pool near its ceiling
    whose models share much of their errors. Added 7 Dec (session 46) as a
    family none of the estimators was developed on; needs ``../shared/data``
    (the results have no licence: read at run time, never shipped)."""
    return _real_pool(rng, logit(real_rates("bfcl", neighbours)), L, jitter)


@_family
def swebench(
    rng: np.random.Generator,
    L: int,
    *,
    neighbours: int = 8,
    jitter: float = 0.2,
) -> Family:
    """Per-cell rates from SWE-bench Verified (bash-only leaderboard): 500
    repository issues attempted once by 24 agents' models (a 25th left out:
    :data:`SWEBENCH_BROKEN`), smoothed over the 8 nearest issues of the same
    repository (repositories of 8 issues or fewer pooled); sub-pools and
    prompts by :func:`_real_pool`. Rates in the middle (models resolve 9-74%),
    13% of issues no model resolves, few prompts (500 resampled to N). Added 7
    Dec (session 46) as a family none of the estimators was developed on; needs
    ``../shared/data`` (CC BY-NC: read at run time, never shipped)."""
    return _real_pool(rng, logit(real_rates("swebench", neighbours)), L, jitter)


def pgm_own(
    N: int,
    L: int,
    G: int,
    seed: int = 0,
    *,
    n_topics: int = 4,
    specialisation: float = 1.0,
    cell_sd: float = 0.5,
    pop: int = POP_PROMPTS,
) -> World:
    """Control: pgm's own generative model, ``capfront.simulate`` with 4 topics,
    a cell effect of SD ``cell_sd`` and the topic labels passed. The population
    oracle is ``None`` (``capfront.simulate`` draws the pool and the prompts from
    one stream)."""
    _check(N, L, G)
    res = cf.simulate(
        N,
        L,
        G,
        n_topics=n_topics,
        specialisation=specialisation,
        cell_sd=cell_sd,
        seed=seed,
        as_counts=True,
    )
    p = res.truth_p
    params = {"n_topics": n_topics, "specialisation": specialisation}
    params["cell_sd"] = cell_sd
    return World("pgm_own", res, p, float(p.max(axis=1).mean()), None, params)


WORLDS: dict[str, Callable[..., World]] = {
    "topics": topics,
    "lowrank": lowrank,
    "beta_classes": beta_classes,
    "near_ceiling": near_ceiling,
    "evalperf": evalperf,
    "cell_shocks": cell_shocks,
    "clustered": clustered,
    "heavy_tail": heavy_tail,
    "dominant": dominant,
    "near_identical": near_identical,
    "guessing": guessing,
    "format_failures": format_failures,
    "prompt_discrimination": prompt_discrimination,
    "model_families": model_families,
    "mixed_decoding": mixed_decoding,
    "mmlu_pro": mmlu_pro,
    "bfcl": bfcl,
    "swebench": swebench,
    "pgm_own": pgm_own,
}
"""Family name -> ``fn(N, L, G, seed, **kw) -> World``; deterministic by seed."""


VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "topics_many": ("topics", {"n_topics": 8, "specialisation": 1.5}),
    "topics_two_strong": ("topics", {"n_topics": 2, "specialisation": 2.0}),
    "lowrank_3": ("lowrank", {"rank": 3, "scale": 1.2}),
    "beta_diffuse": ("beta_classes", {"n_classes": 12, "concentration": 2.0}),
    "ceiling_flaky": (
        "near_ceiling",
        {"easy": 0.85, "impossible": 0.03, "flaky": 0.10},
    ),
    "clustered_few": ("clustered", {"n_clusters": 30, "aptitude_sd": 1.5}),
    "evalperf_raw": ("evalperf", {"shrink": 0.5, "jitter": 0.6}),
    "heavy_tail_1_5": ("heavy_tail", {"df": 1.5}),
    "shocks_short": ("cell_shocks", {"block": 2, "rho": 0.1}),
    "greedy_once": ("mixed_decoding", {"greedy_draws": 1}),
}
"""Stress variants: a family of :data:`WORLDS` with options away from the
defaults the estimators were developed on (more or fewer topics, stronger
specialisation, higher rank, diffuse classes, heavier tails, flakier ceilings).
A probe of how the methods do on worlds nobody tuned them for."""


def world(name: str) -> Callable[..., World]:
    """The generator of a family (:data:`WORLDS`) or a stress variant
    (:data:`VARIANTS`), called like the families: ``fn(N, L, G, seed, pop=...)``."""
    if name in WORLDS:
        return WORLDS[name]
    if name in VARIANTS:
        base, kw = VARIANTS[name]
        return functools.partial(WORLDS[base], **kw)
    raise KeyError(f"unknown world {name!r}; use one of {[*WORLDS, *VARIANTS]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", default=",".join(WORLDS))
    ap.add_argument("--L", default="4,12,30")
    ap.add_argument("--G", default="5,10,20")
    ap.add_argument("--N", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    print("family, L, G: oracle, naive bias (points, mean over reps)")
    for fam in args.families.split(","):
        for L in map(int, args.L.split(",")):
            for G in map(int, args.G.split(",")):
                ws = [WORLDS[fam](args.N, L, G, s, pop=0) for s in range(args.reps)]
                bias = np.mean([w.naive - w.oracle for w in ws]) * 100
                oracle = np.mean([w.oracle for w in ws])
                print(f"{fam:15s} L={L:2d} G={G:2d}: {oracle:.3f}  {bias:+6.2f}")


if __name__ == "__main__":
    main()
