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
4. **Recommendation and check.** The cheapest admissible row; then ``n_check``
   fresh evaluations of that size are simulated and estimated, and the realised
   half-width ``z * RMSE`` (around the world's truth, refits included) is
   compared with the target: ``check["ratio"]`` within ``1 +- 0.15`` is the
   promise kept (``check["ratio_se"]``: its own sampling error). When the ratio
   misses by more than ``max(15%, 2 ratio_se)`` (e.g. ``pgm``'s refitting error,
   which the prompt-level SE leaves out), ``N`` is rescaled once by the ratio
   squared and checked again. For ``detect``, the realised power is reported
   too.

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
    ci : range of ``N`` allowed by the check's own sampling error (the realised
        half-width of ``n_sims`` simulations, relative SE ``1 / sqrt(2 n_sims)``).
    level : the confidence level of the target interval / test.
    draws : recommended draws per cell ``G``.
    cost, generations : evaluation cost and generations of the plan.
    target, precision, detect, power, method, world : as asked.
    table : per ``G``: ``sigma``, ``bias``, ``n_prompts``, ``generations``,
        ``cost``, ``admissible``.
    check : the simulation check at the plan: ``n_sims``, ``truth``,
        ``half_width_target``, ``half_width_realised`` (``z`` RMSE),
        ``half_width_reported`` (mean ``z`` SE), ``ratio``, ``within_tolerance``,
        ``coverage`` and, for ``detect``, ``power_realised``.
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
        return out

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
            f"{c.get('ratio', float('nan')):.3f})"
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
    n_check: int = 60,
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
    n_check : simulated evaluations of the check (fewer when the plan is large:
        at most ``4e7`` simulated cells in all).
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
    sigma = float(table.loc[g_best, "sigma"])
    args = (target, W, g_best, method, choice, truth, goal, precision is not None)
    check = _check(*args, n_best, z, mult, n_check, rng, backend)
    first = check
    ratio = check["ratio"]
    # recalibrate only when the miss is beyond the check's own noise (the
    # realised half-width of n_sims simulations: relative SE 1 / sqrt(2 n_sims))
    noise = 2.0 / math.sqrt(2.0 * check["n_sims"])
    miss = abs(ratio - 1.0) > max(TOLERANCE, noise)
    if miss and np.isfinite(ratio) and ratio > 0:
        # the realised error scales as 1 / sqrt(N) (refits included): rescale
        # N once by the ratio the simulation measured and check again
        n_best = max(2, math.ceil(n_best * ratio**2))
        check = _check(*args, n_best, z, mult, n_check, rng, backend)
        check["first_check"] = first
        notes.append(
            f"N recalibrated by simulation: the plan from the prompt-level SE "
            f"gave a realised half-width {ratio:.2f} x the target (e.g. the "
            "latent model's refitting error), so N was scaled by its square"
        )
    if not check["within_tolerance"]:
        notes.append(
            f"the simulated check missed the {TOLERANCE:.0%} tolerance (ratio "
            f"{check['ratio']:.3f}): see check"
        )
    # range of N: the realised half-width of n_sims simulations has a relative
    # SE of about 1 / sqrt(2 n_sims), and N scales as its square
    rel = z / math.sqrt(2.0 * check["n_sims"])
    n_ci = (float(n_best * (1 - rel) ** 2), float(n_best * (1 + rel) ** 2))
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


def _check(
    target: str,
    W: _World,
    g: int,
    method: str,
    choice: np.ndarray | None,
    truth: float,
    goal: float,
    is_precision: bool,
    n: int,
    z: float,
    mult: float,
    n_check: int,
    rng: np.random.Generator,
    backend: str | None,
) -> dict[str, Any]:
    """Simulate ``n_sims`` evaluations of ``n`` prompts x ``g`` draws; compare the
    realised error with the target."""
    n_sims = int(min(n_check, max(10, 4e7 // max(n * W.L, 1))))
    est = np.empty(n_sims)
    se = np.empty(n_sims)
    for i in range(n_sims):
        p, rows, topic = W.draw(n, rng)
        S = rng.binomial(g, p)
        est[i], se[i] = _values(target, S, g, method, rows, choice, W, topic, backend)
    rmse = float(np.sqrt(np.mean((est - truth) ** 2)))
    # the target half-width: precision itself, or z * the SE the plan promised
    target_half = goal if is_precision else z * goal / mult
    out: dict[str, Any] = {
        "n_sims": n_sims,
        "n_prompts": n,
        "draws": g,
        "truth": truth,
        "half_width_target": target_half,
        "half_width_realised": z * rmse,
        "half_width_reported": float(z * se.mean()),
        "bias": float(est.mean() - truth),
        "coverage": float(np.mean(np.abs(est - truth) <= z * se)),
    }
    out["ratio"] = out["half_width_realised"] / target_half
    out["ratio_se"] = out["ratio"] / math.sqrt(2.0 * n_sims)
    out["within_tolerance"] = bool(abs(out["ratio"] - 1.0) <= TOLERANCE)
    if not is_precision:
        # a world whose effect is exactly ``goal`` with the same noise
        shifted = est - truth + goal
        out["power_realised"] = float(np.mean(np.abs(shifted / se) > z))
    return out
