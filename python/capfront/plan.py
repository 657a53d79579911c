"""How much evaluation to run: prompts ``N`` and draws per cell ``G``.

``capfront.plan(pilot, target=..., precision=x)`` (or ``detect=y``) answers from a
pilot evaluation, by simulation on worlds fitted to it:

1. **Worlds.** ``world="latent"``: the latent difficulty/topic/aptitude model
   fitted to the pilot's counts (:func:`capfront.debias.latent.fit_latent`);
   fresh prompts come from :meth:`LatentFit.simulate_p`. ``world="resample"``:
   the pilot's prompts resampled with their ``p_hat`` taken as the truth
   (nonparametric; needed for ``target="router_vs_best"``, whose router decided
   per pilot prompt).
2. **Per-prompt spread at each G.** For each ``G`` of the grid a world of
   ``n_world`` prompts is drawn, ``S ~ Bin(G, p)``, and the estimator's
   per-prompt influence values give ``sigma(G) = SE * sqrt(n_world)`` (the
   delta-method prompt-level SE of :class:`capfront.debias.result.Decomposition`,
   which holds the draw noise of each cell) and its bias ``b(G)`` against the
   world's truth.
3. **N for each G.** ``precision=x`` (half-width of the ``level`` interval):
   ``N(G) = ceil((z sigma(G) / x)^2)``, ``z = Phi^-1((1 + level) / 2)``.
   ``detect=y`` (a two-sided test at ``alpha = 1 - level`` with power ``power``):
   ``N(G) = ceil(((z + z_power) sigma(G) / y)^2)``. A row is admissible when
   ``|b(G)| <= x / 3`` (or ``y / 3``): beyond that, bias rather than noise sets
   the error and more prompts do not help. Cost: ``N G sum_l c_l`` (every
   model run ``G`` times on every prompt, ``c_l`` the pilot's mean cost per
   generation; generations when there is no cost).
4. **Recommendation and check.** The cheapest admissible row; then fresh
   evaluations of that size are simulated and estimated (refits included), and
   the realised half-width ``z * RMSE`` around the world's truth is compared
   with the target: ``check["ratio"]``, with its Monte Carlo SE
   ``check["ratio_se"]`` (delta method on the mean squared error: ``ratio
   sd(e^2) / (2 sqrt(n_sims) mean(e^2))``, which heavy-tailed errors make larger
   than ``ratio / sqrt(2 n_sims)``). Simulations run in batches until the verdict
   is decided at 2.5 SEs (``"met"``: the ratio is within ``1 +- 0.15``,
   ``"missed"``: outside) or ``n_check`` simulations (``"undecided"``).
   Unless met, ``N`` moves to where an error model fitted to the checks so far
   reaches the target and is checked again (at most 3 checks; the plan's ``N``
   is the last one checked, every check is in ``check["history"]``). The model
   (:func:`_next_n`): variance ``V / N``, bias ``b_inf + beta / N`` -- ``pgm``'s
   refits add parameter noise (in ``V``) and a finite-sample bias falling as
   ``1 / N``, so its error falls faster than ``1 / sqrt(N)`` at small N and
   rescaling N by the ratio squared overshoots. For ``detect``, the realised
   power is reported too.

Targets: ``"oracle"`` (the debiased oracle ``mean_n max_l p``),
``"frontier_gain"`` (the oracle minus the best single model), ``"router_vs_best"``
(a router's accuracy minus the best single model; ``router=`` its choices on the
pilot).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ._protocol import plain
from .results import EvalResults

__all__ = ["Plan", "plan"]

TARGETS = ("oracle", "frontier_gain", "router_vs_best")
DEFAULT_DRAWS = (2, 3, 5, 10, 20, 50)
BIAS_SHARE = 1.0 / 3.0
TOLERANCE = 0.15


@dataclass
class Plan:
    """An evaluation plan (see the module docstring).

    Attributes
    ----------
    value : recommended number of prompts ``N``.
    ci : range of ``N`` the check cannot tell from the plan: ``N (1 -+ z
        ratio_se / ratio)^2`` (the ratio's Monte Carlo error; N scales as the
        ratio squared).
    level : the confidence level of the target interval / test.
    draws : recommended draws per cell ``G``.
    cost, generations : evaluation cost and generations of the plan.
    target, precision, detect, power, method, world : as asked.
    table : per ``G``: ``sigma``, ``bias``, ``n_prompts``, ``generations``,
        ``cost``, ``admissible``.
    check : the simulation check at the plan: ``n_sims``, ``n_prompts``,
        ``truth``, ``half_width_target``, ``half_width_realised`` (``z`` RMSE),
        ``half_width_reported`` (mean ``z`` SE), ``ratio`` and its Monte Carlo SE
        ``ratio_se``, ``within_tolerance`` (the ratio within ``1 +- 0.15``),
        ``verdict`` (``"met"``, ``"missed"`` or ``"undecided"`` at 2.5 Monte
        Carlo SEs), ``bias``, ``variance``, ``coverage``, ``history`` (every
        check: ``n_prompts``, ``n_sims``, ``ratio``, ``ratio_se``, ``verdict``),
        ``first_check`` (after a recalibration) and, for ``detect``,
        ``power_realised``.
    """

    value: int
    ci: tuple[float, float]
    level: float
    draws: int
    cost: float
    generations: float
    target: str
    precision: float | None
    detect: float | None
    power: float
    method: str
    world: str
    table: pd.DataFrame
    check: dict[str, Any]
    seconds: float
    notes: list[str] = field(default_factory=list)

    def __int__(self) -> int:
        return self.value

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        out = {
            k: getattr(self, k)
            for k in self.__dataclass_fields__
            if k not in ("table", "ci")
        }
        out["ci"] = list(self.ci)
        out["table"] = self.table.reset_index().to_dict(orient="records")
        return plain(out)

    def summary(self) -> str:
        goal = (
            f"+-{self.precision:g} at {self.level:.0%}"
            if self.precision is not None
            else f"detect {self.detect:g} (alpha {1 - self.level:.2g}, power "
            f"{self.power:.0%})"
        )
        c = self.check
        return (
            f"{self.target}: {goal}: N = {self.value:,} prompts x G = {self.draws} "
            f"draws per cell ({self.generations:,.0f} generations, cost "
            f"{self.cost:,.4g}); check over {c.get('n_sims')} simulated "
            f"evaluations: realised half-width {c.get('half_width_realised', 0):.4g}"
            f" vs target {c.get('half_width_target', 0):.4g} (ratio "
            f"{c.get('ratio', float('nan')):.3f} +- "
            f"{c.get('ratio_se', float('nan')):.3f} Monte Carlo SE: "
            f"{c.get('verdict', '?')})"
        )

    def plot(self, ax: Any = None) -> Any:
        """N and cost against G (log scales); the plan marked."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4))
        t = self.table
        ok = t["admissible"].to_numpy()
        ax.plot(t.index, t["n_prompts"], "o-", color="tab:blue", label="prompts N")
        ax.scatter(
            t.index[~ok],
            t["n_prompts"][~ok],
            marker="x",
            color="tab:red",
            zorder=3,
            label="bias too large",
        )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("draws per cell G")
        ax.set_ylabel("prompts N")
        ax2 = ax.twinx()
        ax2.plot(t.index, t["cost"], "s--", color="tab:gray", label="cost")
        ax2.set_yscale("log")
        ax2.set_ylabel("evaluation cost")
        ax.axvline(self.draws, color="tab:green", lw=1, ls=":")
        ax.set_title(f"plan: N = {self.value:,}, G = {self.draws}")
        ax.legend(loc="upper right", fontsize=8)
        return ax


# --------------------------------------------------------------------------- worlds
class _World:
    """Draws true success probabilities ``p (n, L)`` (and, for resample worlds,
    the pilot rows behind them)."""

    def __init__(self, pilot: EvalResults, kind: str, backend: str | None) -> None:
        self.kind = kind
        self.L = pilot.n_models
        if kind == "latent":
            from .debias._input import counts, topic_codes
            from .debias.latent import fit_latent

            S, G = counts(pilot, "plan (latent world)")
            topic, names = topic_codes(pilot)
            self.fit = fit_latent(S, G, topic, backend=backend, topics=names)
            self.freq = np.bincount(topic, minlength=self.fit.theta.shape[1]) / len(
                topic
            )
        else:
            self.p = np.where(pilot.observed, pilot.p_hat, 0.0)

    def draw(
        self, n: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(p (n, L), pilot rows (resample worlds), topic codes or None)``."""
        if self.kind == "latent":
            p, topic = self.fit.simulate_p(n, rng, self.freq)
            return p, np.zeros(0, np.int64), topic.astype(np.int64)
        rows = rng.integers(0, self.p.shape[0], n)
        return self.p[rows], rows, None


def _values(
    target: str,
    S: np.ndarray,
    G: int,
    method: str,
    rows: np.ndarray,
    router: np.ndarray | None,
    world: _World,
    topic: np.ndarray | None,
    backend: str | None,
) -> tuple[float, float]:
    """(estimate, prompt-level SE) of the target on one simulated evaluation."""
    from .debias import decompose_counts

    Gm = np.full_like(S, G)
    p_hat = S / G
    b = int(p_hat.mean(axis=0).argmax())
    if target == "router_vs_best":
        d = p_hat[np.arange(S.shape[0]), router[rows]] - p_hat[:, b]
        return float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size))
    opts: dict[str, Any] = {}
    if method == "pgm":
        # the world's topics, and a warm start from the fit the world came from
        opts = {"topic": topic, "init": getattr(world, "fit", None)}
        if world.kind == "latent":
            opts["family"] = world.fit.family
    dec = decompose_counts(S, Gm, method, backend=backend, **opts)
    if target == "oracle":
        return dec.estimate(), dec.standard_error()
    # frontier_gain: O - B, influence of O minus the best model's column
    from .debias.result import Decomposition

    vals = np.column_stack([dec.values, p_hat[:, b]])
    fin = dec.finalize

    def gain(m: np.ndarray) -> float:
        return float(fin(m[:-1])) - float(m[-1])

    d = Decomposition(vals, gain, {})
    return d.estimate(), d.standard_error()


def _truth(
    target: str, p: np.ndarray, rows: np.ndarray, router: np.ndarray | None
) -> float:
    best = float(p.mean(axis=0).max())
    if target == "oracle":
        return float(p.max(axis=1).mean())
    if target == "frontier_gain":
        return float(p.max(axis=1).mean()) - best
    return float(p[np.arange(p.shape[0]), router[rows]].mean()) - best


def plan(
    results_or_pilot: EvalResults,
    *,
    target: str = "oracle",
    precision: float | None = None,
    detect: float | None = None,
    level: float = 0.95,
    power: float = 0.8,
    method: str = "pgm",
    draws: tuple[int, ...] | list[int] = DEFAULT_DRAWS,
    world: str = "auto",
    router: Any = None,
    n_world: int = 10_000,
    n_check: int = 100,
    seed: int = 0,
    backend: str | None = None,
) -> Plan:
    """Prompts ``N`` and draws ``G`` needed for a target precision or effect.

    Parameters
    ----------
    results_or_pilot : EvalResults of a pilot evaluation.
    target : ``"oracle"``, ``"frontier_gain"`` or ``"router_vs_best"``.
    precision : half-width of the ``level`` interval (e.g. 0.01 = +-1 point), or
    detect : the effect to detect (two-sided test at ``1 - level``, ``power``).
    method : debiasing estimator of the oracle (``capfront.debiased_oracle``
        names; ``"pgm"`` refits per simulated evaluation).
    draws : the grid of ``G``.
    world : ``"latent"``, ``"resample"`` or ``"auto"`` (latent for the oracle
        targets on binary pilots with >= 2 draws, resample otherwise).
    router : the router's choices on the pilot (``router_vs_best``).
    n_world : prompts of the world that measures ``sigma(G)`` and the bias.
    n_check : most simulated evaluations per check (at least 40 unless fewer
        are asked; fewer when the plan is large: at most ``4e7`` simulated cells
        per check).
    seed : random seed of the worlds.

    Returns
    -------
    Plan
    """
    t0 = time.perf_counter()
    pilot = results_or_pilot
    if not isinstance(pilot, EvalResults):
        raise ValueError(
            f"results_or_pilot must be an EvalResults, got {type(pilot).__name__}"
        )
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; use one of {TARGETS}")
    if (precision is None) == (detect is None):
        raise ValueError("give exactly one of precision= or detect=")
    goal = float(precision if precision is not None else detect)
    if not 0 < goal < 1:
        raise ValueError(
            f"{'precision' if precision is not None else 'detect'} must lie in "
            f"(0, 1) (a share, e.g. 0.01 = 1 point), got {goal}"
        )
    if not 0 < level < 1 or not 0 < power < 1:
        raise ValueError("level and power must lie in (0, 1)")
    pilot.require_binary("plan (simulated binomial draws)")
    grid = sorted({int(g) for g in draws})
    if not grid or grid[0] < 1:
        raise ValueError("draws must be positive integers")
    if target != "router_vs_best" and grid[0] < 2 and method != "naive":
        raise ValueError(f"method {method!r} needs G >= 2; drop G = 1 from draws")
    choice = None
    if target == "router_vs_best":
        if router is None:
            raise ValueError("target='router_vs_best' needs router= (its choices)")
        from .routing_choices import read_choices

        choice = read_choices(pilot, router, where="router")[0]
        if world == "latent":
            raise ValueError(
                "router_vs_best needs world='resample': the router decided per "
                "pilot prompt"
            )
        world = "resample"
    if world == "auto":
        world = "latent" if pilot.min_draws >= 2 else "resample"
    if world not in ("latent", "resample"):
        raise ValueError(f"world must be 'latent', 'resample' or 'auto', not {world!r}")
    rng = np.random.default_rng(seed)
    W = _World(pilot, world, backend)
    z = float(stats.norm.ppf(0.5 + level / 2))
    mult = z if precision is not None else z + float(stats.norm.ppf(power))
    per_gen = (
        float(np.nansum(np.nanmean(pilot.mean_cost, axis=0)))
        if pilot.has_cost
        else float(pilot.n_models)
    )
    notes = []
    if not pilot.has_cost:
        notes.append("no cost in the pilot: cost = generations")
    big_p, big_rows, _ = W.draw(max(200_000, n_world), rng)
    truth = _truth(target, big_p, big_rows, choice)
    rows_out = []
    for g in grid:
        p, rows, topic = W.draw(n_world, rng)
        S = rng.binomial(g, p)
        est, se = _values(target, S, g, method, rows, choice, W, topic, backend)
        sigma = se * math.sqrt(n_world)
        n_need = max(2, math.ceil((mult * sigma / goal) ** 2))
        bias = est - truth
        rows_out.append(
            {
                "G": g,
                "sigma": sigma,
                "bias": bias,
                "n_prompts": n_need,
                "generations": float(n_need) * g * pilot.n_models,
                "cost": float(n_need) * g * per_gen,
                "admissible": abs(bias) <= BIAS_SHARE * goal,
            }
        )
    table = pd.DataFrame(rows_out).set_index("G")
    ok = table[table["admissible"]]
    if ok.empty:
        notes.append(
            "no G of the grid keeps the bias below a third of the goal: the plan "
            "takes the least biased G (add larger G to draws=)"
        )
        g_best = int(table["bias"].abs().idxmin())
    else:
        g_best = int(ok["cost"].idxmin())
    n_best = int(table.loc[g_best, "n_prompts"])
    sim = _Simulator(
        target,
        W,
        g_best,
        method,
        choice,
        truth,
        goal,
        precision is not None,
        z,
        mult,
        rng,
        backend,
    )
    check, history = _calibrate(sim, n_best, int(n_check))
    n_best = int(check["n_prompts"])
    if len(history) > 1:
        first = history[0]
        check["first_check"] = first
        notes.append(
            f"N recalibrated by simulation: the plan from the prompt-level SE "
            f"({first['n_prompts']:,} prompts) gave a realised half-width "
            f"{first['ratio']:.2f} x the target (e.g. the latent model's refitting "
            f"error); {len(history)} checks, the last at N = {n_best:,}"
        )
    check["history"] = [
        {k: h[k] for k in ("n_prompts", "n_sims", "ratio", "ratio_se", "verdict")}
        for h in history
    ]
    if check["verdict"] == "missed":
        notes.append(
            f"the simulated check missed the {TOLERANCE:.0%} tolerance: ratio "
            f"{check['ratio']:.3f} +- {check['ratio_se']:.3f} (Monte Carlo SE over "
            f"{check['n_sims']} simulations) after {len(history)} check(s)"
        )
    elif check["verdict"] == "undecided":
        notes.append(
            f"the check cannot decide the {TOLERANCE:.0%} tolerance at "
            f"{check['n_sims']} simulations: ratio {check['ratio']:.3f} +- "
            f"{check['ratio_se']:.3f} (Monte Carlo SE); a larger n_check decides"
        )
    # range of N the check cannot tell from the plan: the ratio's relative
    # Monte Carlo SE (z of them), and N scales as the ratio squared
    rel = z * check["ratio_se"] / check["ratio"] if check["ratio"] > 0 else 1.0
    n_ci = (float(n_best * max(1 - rel, 0.0) ** 2), float(n_best * (1 + rel) ** 2))
    cost_per_prompt = float(table.loc[g_best, "cost"]) / int(
        table.loc[g_best, "n_prompts"]
    )
    return Plan(
        value=n_best,
        ci=n_ci,
        level=float(level),
        draws=g_best,
        cost=cost_per_prompt * n_best,
        generations=float(n_best) * g_best * pilot.n_models,
        target=target,
        precision=None if precision is None else float(precision),
        detect=None if detect is None else float(detect),
        power=float(power),
        method=method if target != "router_vs_best" else "p_hat (no debiasing)",
        world=world,
        table=table,
        check=check,
        seconds=time.perf_counter() - t0,
        notes=notes,
    )


MIN_SIMS = 40  # simulations before a check may stop
BATCH = 20  # simulations added at a time
MAX_CHECKS = 3
DECIDE_SE = 2.5  # Monte Carlo SEs for a verdict (repeated looks, heavy tails)


class _Simulator:
    """Simulated evaluations of ``n`` prompts x ``g`` draws from the world, the
    target estimated on each (refits included), errors against the world's truth."""

    def __init__(
        self,
        target: str,
        W: _World,
        g: int,
        method: str,
        choice: np.ndarray | None,
        truth: float,
        goal: float,
        is_precision: bool,
        z: float,
        mult: float,
        rng: np.random.Generator,
        backend: str | None,
    ) -> None:
        self.target, self.W, self.g, self.method = target, W, g, method
        self.choice, self.truth, self.goal = choice, truth, goal
        self.is_precision, self.z, self.mult = is_precision, z, mult
        self.rng, self.backend = rng, backend
        # the target half-width: precision itself, or z * the SE the plan promised
        self.target_half = goal if is_precision else z * goal / mult
        # how the estimator's bias changes with N (see _next_n): a refitted
        # model's finite-sample bias falls as 1 / N, a bias correction's bias
        # is set by G
        self.bias_law = (
            "refit" if method == "pgm" and target != "router_vs_best" else "constant"
        )

    def run(self, n: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``(errors, reported SEs)`` of ``count`` evaluations of ``n`` prompts."""
        est = np.empty(count)
        se = np.empty(count)
        for i in range(count):
            p, rows, topic = self.W.draw(n, self.rng)
            S = self.rng.binomial(self.g, p)
            est[i], se[i] = _values(
                self.target,
                S,
                self.g,
                self.method,
                rows,
                self.choice,
                self.W,
                topic,
                self.backend,
            )
        return est - self.truth, se


def _summary(sim: _Simulator, n: int, err: np.ndarray, se: np.ndarray) -> dict:
    """The check at ``n`` prompts from its simulated errors.

    ``ratio = z RMSE / target``; its Monte Carlo SE by the delta method on the mean
    squared error, ``ratio sd(e^2) / (2 sqrt(n_sims) mean(e^2))`` (about
    ``ratio / sqrt(2 n_sims)`` for normal errors, more for heavy tails). Verdict:
    ``"met"`` when ``|ratio - 1| + k SE <= tolerance``, ``"missed"`` when
    ``|ratio - 1| - k SE > tolerance``, else ``"undecided"``; ``k = 2.5``, not 2,
    because a check looks at its verdict after every batch of simulations."""
    z, n_sims = sim.z, err.size
    e2 = err**2
    mse = float(e2.mean())
    rmse = math.sqrt(mse)
    ratio = z * rmse / sim.target_half
    mse_se = float(e2.std(ddof=1)) / math.sqrt(n_sims) if n_sims > 1 else math.inf
    ratio_se = ratio * mse_se / (2.0 * mse) if mse > 0 else math.inf
    dev = abs(ratio - 1.0)
    verdict = (
        "met"
        if dev + DECIDE_SE * ratio_se <= TOLERANCE
        else "missed"
        if dev - DECIDE_SE * ratio_se > TOLERANCE
        else "undecided"
    )
    out: dict[str, Any] = {
        "n_sims": int(n_sims),
        "n_prompts": int(n),
        "draws": sim.g,
        "truth": sim.truth,
        "half_width_target": sim.target_half,
        "half_width_realised": z * rmse,
        "half_width_reported": float(z * se.mean()),
        "bias": float(err.mean()),
        "variance": float(err.var(ddof=1)) if n_sims > 1 else 0.0,
        "coverage": float(np.mean(np.abs(err) <= z * se)),
        "ratio": ratio,
        "ratio_se": ratio_se,
        "within_tolerance": bool(dev <= TOLERANCE),
        "verdict": verdict,
    }
    if not sim.is_precision:
        # a world whose effect is exactly ``goal`` with the same noise
        shifted = err + sim.goal
        out["power_realised"] = float(np.mean(np.abs(shifted / se) > z))
    return out


def _check_at(
    sim: _Simulator, n: int, max_sims: int, last: bool = False
) -> dict[str, Any]:
    """Simulate at ``n`` prompts: ``MIN_SIMS``, then batches of ``BATCH`` until
    the verdict is decided (at ``DECIDE_SE`` Monte Carlo SEs) or ``max_sims``
    (fewer when the plan is large: at most ``4e7`` simulated cells). The ``last``
    check allowed goes on after a ``"missed"`` too (nothing moves N after it, and
    with heavy-tailed errors a few simulations without an outlier can look
    decided)."""
    cap = int(min(max_sims, max(10, 4e7 // max(n * sim.W.L, 1))))
    err, se = sim.run(n, min(cap, MIN_SIMS))
    out = _summary(sim, n, err, se)
    while out["verdict"] != "met" and (last or out["verdict"] == "undecided"):
        if err.size >= cap:
            break
        e2, s2 = sim.run(n, min(BATCH, cap - err.size))
        err, se = np.concatenate([err, e2]), np.concatenate([se, s2])
        out = _summary(sim, n, err, se)
    return out


def _next_n(history: list[dict[str, Any]], t: float, bias_law: str) -> int:
    """The next ``N`` to check: the least ``N`` with a predicted mean squared error
    ``V / N + b(N)^2 <= t^2`` (``t`` the target half-width over ``z``).

    The checks' errors split into a variance and a bias. The variance falls as
    ``1 / N`` (prompt sampling, draw noise and the refits' parameter noise):
    ``V = mean_j N_j var_j`` (weighted by simulations). The bias is
    ``b(N) = b_inf + beta / N``: a refit's finite-sample bias falls as ``1 / N``
    (which is why pgm's error at small N falls faster than ``1 / sqrt(N)`` and a
    plain rescaling of N by the ratio squared overshoots), a bias correction's
    bias is set by ``G`` and does not. With checks spanning a factor 2 in N both
    are fitted (weighted least squares); otherwise (the two cannot be told apart
    near one N) ``bias_law`` decides: ``"refit"`` (``b_inf = 0``) or
    ``"constant"`` (``beta = 0``). The step is kept within a factor ``[1/4, 6]``
    of the last N."""
    n = np.array([h["n_prompts"] for h in history], dtype=np.float64)
    w = np.array([h["n_sims"] for h in history], dtype=np.float64)
    var = np.array([h["variance"] for h in history])
    bias = np.array([h["bias"] for h in history])
    V = float(np.sum(w * n * var) / w.sum())
    if bias_law == "refit":
        b_inf, beta = 0.0, float(np.sum(w * bias * n) / w.sum())
    else:
        b_inf, beta = float(np.sum(w * bias) / w.sum()), 0.0
    if n.max() >= 2.0 * n.min():
        # weights: simulations over the variance of a check's mean error
        wt = np.sqrt(w * n / max(V, 1e-300))
        X = np.column_stack([np.ones_like(n), 1.0 / n]) * wt[:, None]
        b_inf, beta = np.linalg.lstsq(X, bias * wt, rcond=None)[0]

    def mse(N: np.ndarray) -> np.ndarray:
        return V / N + (b_inf + beta / N) ** 2

    grid = np.geomspace(max(2.0, n[-1] / 4), 6.0 * n[-1], 2000)
    ok = np.flatnonzero(mse(grid) <= t * t)
    if ok.size == 0:  # not reached within the step: the largest N allowed
        return math.ceil(grid[-1])
    i = int(ok[0])
    if i == 0:
        return math.ceil(grid[0])
    lo, hi = grid[i - 1], grid[i]
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if mse(np.array([mid]))[0] <= t * t else (mid, hi)
    return max(2, math.ceil(hi))


def _calibrate(
    sim: _Simulator, n0: int, max_sims: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Check the plan at ``n0``; until a check's verdict is ``"met"``, move ``N``
    to the error model's prediction (:func:`_next_n`, all checks so far) and
    check again (at most ``MAX_CHECKS`` checks) -- unless the move would change
    the ratio by less than the last check's Monte Carlo SE (about half the
    relative change of N): then the check cannot see the difference. Returns the
    last check (the plan's ``N``) and all."""
    history = [_check_at(sim, n0, max_sims, MAX_CHECKS == 1)]
    while history[-1]["verdict"] != "met" and len(history) < MAX_CHECKS:
        r = history[-1]["ratio"]
        if not (np.isfinite(r) and r > 0):
            break
        n = _next_n(history, sim.target_half / sim.z, sim.bias_law)
        last = history[-1]
        step = 0.5 * abs(math.log(n / last["n_prompts"]))
        if step <= last["ratio_se"] / r or n in {h["n_prompts"] for h in history}:
            break
        history.append(_check_at(sim, n, max_sims, len(history) + 1 == MAX_CHECKS))
    return history[-1], history
