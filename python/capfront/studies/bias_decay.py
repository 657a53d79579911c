"""Bias-decay study: the naive oracle's bias against the number of draws ``G``
(design §8; the paper's section 4.2 and contribution 3)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._protocol import ResultProtocol
from ..expected_max import expected_max_binomial, subsample_curve
from ..simulate import simulate
from ._common import check_draws, check_int, loglog_slope, markdown_table, new_axes

DEFAULT_DRAWS = (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200)
#: Fit windows ``(name, G_min, G_max)``; the first is the headline ``lambda``.
FIT_WINDOWS = (
    ("G<=50", 1, 50),
    ("G<=10", 1, 10),
    ("10<=G<=50", 10, 50),
    ("G>=50", 50, None),
    ("all G", 1, None),
)
GAUSSIAN_MODELS = (2, 4, 8, 16, 32, 64)
GAUSSIAN_DRAWS = (5, 10, 20, 50)


@dataclass
class BiasDecayResult(ResultProtocol):
    """Result of :func:`bias_decay`.

    Attributes
    ----------
    table : DataFrame
        One row per (scenario, ``n_draws``): ``bias`` (mean over reps of the exact
        ``E[O_biased] - O_true``; Monte Carlo for the correlated scenarios),
        ``bias_sd`` (sd over reps, i.e. over workloads), ``bias_realised`` (mean over
        reps of one simulated data set's ``O_biased(G) - O_true``: the subsample curve
        of a data set with ``max(draws)`` draws, or its first ``G`` draws when
        correlated), ``sigma = mean sqrt(p (1 - p))``, ``gaussian_approx``
        ``= sigma * sqrt(2 log L / G)``, ``gaussian_exact`` ``= sigma * e_L / sqrt(G)``
        (``e_L`` the exact mean of the max of ``L`` standard normals),
        ``ratio_approx = bias / gaussian_approx``, ``fitted`` ``= a G^-lambda`` of the
        headline window, and ``local_lambda`` ``= -d log bias / d log G`` between this
        and the previous ``G``.
    fits : DataFrame
        ``lambda`` with its bootstrap-over-reps percentile interval
        (``lambda_lo``, ``lambda_hi``) and ``a`` per scenario and ``G`` window.
    gaussian : DataFrame
        Equal-``p`` models: exact bias against the Gaussian approximation over a grid
        of ``L`` and ``G`` (claim 2 of the paper).
    settings : dict
        The arguments of the run, and ``rep_seeds`` (the ``simulate`` seed of rep
        ``r``, shared by all scenarios).
    """

    table: pd.DataFrame
    fits: pd.DataFrame
    gaussian: pd.DataFrame
    settings: dict = field(default_factory=dict)

    @property
    def level(self) -> float:
        """0.95: the bootstrap-over-reps intervals of the exponents are 95% ones."""
        return 0.95

    @property
    def value(self) -> float:
        """The result protocol's headline: the fitted decay exponent ``lambda``
        (headline window) of the first scenario."""
        return float(self.lambdas["lambda"].iloc[0])

    @property
    def ci(self) -> tuple[float, float]:
        """Its 95% bootstrap-over-reps percentile interval."""
        row = self.lambdas.iloc[0]
        return (float(row["lambda_lo"]), float(row["lambda_hi"]))

    def to_frame(self) -> pd.DataFrame:
        """:attr:`table`: one row per (scenario, ``n_draws``)."""
        return self.table

    @property
    def lambdas(self) -> pd.DataFrame:
        """Headline fit (first window, ``G <= 50``) per scenario."""
        head = self.fits[self.fits["window"] == self.fits["window"].iloc[0]]
        return head.set_index("scenario")[["lambda", "lambda_lo", "lambda_hi", "a"]]

    def plot(self, ax=None):  # noqa: ANN001, ANN201 (matplotlib is optional at import)
        """Log-log bias against ``G`` per scenario: exact expected bias (solid, with
        the sd over reps as a band), the fitted ``a G^-lambda`` (dotted) and the
        Gaussian approximation ``sigma sqrt(2 log L / G)`` (dashed)."""
        ax = new_axes(ax)
        colours = ["C0", "C1", "C2", "C3", "C4", "C5", "C6"]
        lam = self.lambdas
        for i, (name, part) in enumerate(self.table.groupby("scenario", sort=False)):
            c = colours[i % len(colours)]
            g = part["n_draws"].to_numpy()
            b = part["bias"].to_numpy()
            sd = part["bias_sd"].to_numpy()
            est, lo, hi = lam.loc[name, ["lambda", "lambda_lo", "lambda_hi"]]
            lab = f"{name}: lambda={est:.2f} [{lo:.2f}, {hi:.2f}]"
            ax.plot(g, b, "o-", color=c, ms=3, label=lab)
            ax.fill_between(g, np.maximum(b - sd, b * 0.5), b + sd, color=c, alpha=0.15)
            ax.plot(g, part["fitted"], ":", color=c)
            ax.plot(g, part["gaussian_approx"], "--", color=c, alpha=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("draws per cell G")
        ax.set_ylabel("bias of the naive oracle  E[O_biased] - O_true")
        ax.set_title("Naive-oracle bias against G (dashed: sigma sqrt(2 log L / G))")
        ax.legend(fontsize=7)
        return ax

    def plot_slopes(self, ax=None):  # noqa: ANN001, ANN201
        """Local decay exponent ``-d log bias / d log G`` against ``G``."""
        ax = new_axes(ax)
        for name, part in self.table.groupby("scenario", sort=False):
            g = part["n_draws"].to_numpy().astype(float)
            mid = np.sqrt(g[1:] * g[:-1])
            ax.plot(mid, part["local_lambda"].to_numpy()[1:], "o-", ms=3, label=name)
        ax.axhspan(0.25, 0.75, color="grey", alpha=0.12, label="paper: [0.25, 0.75]")
        ax.axhline(0.5, color="grey", ls="--", lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("draws per cell G")
        ax.set_ylabel("local exponent  -d log bias / d log G")
        ax.set_title("Local bias-decay exponent")
        ax.legend(fontsize=7)
        return ax

    def to_markdown(self) -> str:
        """The fits, the bias table and the Gaussian check as markdown."""
        cols = [
            "scenario",
            "n_draws",
            "bias",
            "bias_sd",
            "bias_realised",
            "gaussian_approx",
            "gaussian_exact",
            "ratio_approx",
            "local_lambda",
        ]
        return "\n\n".join(
            [
                "Fitted decay exponent (bias ~ a G^-lambda, 95% bootstrap over reps):",
                markdown_table(self.fits),
                "Bias against G:",
                markdown_table(self.table[cols]),
                "Equal-p models: exact bias against the Gaussian approximation:",
                markdown_table(self.gaussian),
            ]
        )


def _expected_gauss_max(n_models: int) -> float:
    """``E[max of L iid N(0, 1)] = int x L phi(x) Phi(x)^(L-1) dx`` on a fine grid."""
    from scipy import stats

    x = np.linspace(-12.0, 12.0, 48001)
    dens = n_models * stats.norm.pdf(x) * stats.norm.cdf(x) ** (n_models - 1)
    return float(np.trapezoid(x * dens, x))


def _exact_curve(res, draws: np.ndarray) -> tuple[np.ndarray, float, float]:  # noqa: ANN001
    """Exact ``E[O_biased(G)] = mean_n E[max_l Bin(G, p_nl) / G]`` for each ``G``
    (design §3, independent draws), ``O_true`` and ``sigma = mean sqrt(p (1 - p))``."""
    p = res.truth_p
    sigma = float(np.sqrt(p * (1.0 - p)).mean())
    curve = np.array([expected_max_binomial(p, int(g)).mean() for g in draws])
    return curve, float(p.max(axis=1).mean()), sigma


def _copula_curves(
    res,
    draws: np.ndarray,
    n_sims: int,  # noqa: ANN001
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Monte Carlo bias curve for draws correlated across models.

    ``res`` holds ``n_sims * max(draws)`` generations per cell; each block of
    ``max(draws)`` is one data set, and ``O_biased(G)`` uses its first ``G`` draws.
    The bias is estimated by ``mean_n [max_l p_hat_nl - p_hat_{n, l*(n)}]`` with
    ``l*(n)`` the truly best model: its expectation is exactly ``E[O_biased] -
    O_true`` (``p_hat`` of a fixed model is unbiased), and the difference cancels most
    of the sampling noise of ``O_biased``. Returns (mean bias over data sets, the first
    data set's raw ``O_biased(G) - O_true``, ``O_true``, ``sigma``).
    """
    p = res.truth_p
    n_prompts = p.shape[0]
    best = np.argmax(p, axis=1)
    o_true = float(p[np.arange(n_prompts), best].mean())
    sigma = float(np.sqrt(p * (1.0 - p)).mean())
    g_max = int(draws.max())
    scores = res.scores
    total = np.zeros(len(draws))
    raw = None
    for sim in range(n_sims):
        block = scores[:, :, sim * g_max : (sim + 1) * g_max]
        cum = np.cumsum(block, axis=2, dtype=np.int32)[:, :, draws - 1]
        p_hat = cum / draws.astype(np.float64)  # (N, L, len(draws))
        top = p_hat.max(axis=1)
        total += (top - p_hat[np.arange(n_prompts), best]).mean(axis=0)
        if raw is None:
            raw = top.mean(axis=0) - o_true
    return total / n_sims, raw, o_true, sigma


def _scenario_kwargs(
    name: str,
    *,
    n_topics: int,
    specialisation: float,
    skill_sd: float,
    correlation: float,
) -> dict:
    if name == "equal":
        return {"n_topics": 1, "specialisation": 0.0, "skill_sd": 0.0}
    kw = {"n_topics": n_topics, "specialisation": specialisation, "skill_sd": skill_sd}
    if name.startswith("correlated"):
        kw["draw_correlation"] = correlation
    elif name.startswith("within-cell"):
        kw["within_cell_correlation"] = correlation
    return kw


def _correlations(value: float | Sequence[float], name: str) -> list[float]:
    rhos = [float(c) for c in np.atleast_1d(np.asarray(value, dtype=float))]
    for c in rhos:
        if not 0.0 <= c < 1.0:
            raise ValueError(f"{name} must lie in [0, 1), got {c}")
    return [c for c in rhos if c != 0.0]


def bias_decay(
    *,
    n_models: int = 8,
    draws: Sequence[int] = DEFAULT_DRAWS,
    correlation: float | Sequence[float] = (0.3, 0.7),
    n_reps: int = 20,
    seed: int = 0,
    n_prompts: int = 1000,
    n_topics: int = 4,
    specialisation: float = 1.0,
    skill_sd: float = 0.7,
    n_boot: int = 1000,
    n_sims: int = 4,
    within_cell_correlation: float | Sequence[float] = (),
    fit_windows: Sequence[tuple[str, int, int | None]] = FIT_WINDOWS,
) -> BiasDecayResult:
    """How the naive oracle's bias decays with the number of draws ``G``.

    For ``n_reps`` simulated workloads per scenario (:func:`capfront.simulate`,
    design §8)
    the bias of the naive oracle ``O_biased = mean_n max_l p_hat[n, l]`` (paper eq. 5)
    against the truth ``O_true = mean_n max_l p[n, l]`` (eq. 4) is computed *exactly*
    for every ``G`` in ``draws``:

        ``E[O_biased(G)] = mean_n (1/G) sum_{k=1..G} [1 - prod_l F(k-1; G, p_nl)]``

    (design §3, :func:`capfront.expected_max_binomial`; no Monte Carlo). The decay law
    ``bias(G) = a G^-lambda`` is fitted by least squares on ``log bias`` against
    ``log G`` over each window of ``fit_windows`` for the mean curve over reps, with a
    95% percentile interval from ``n_boot`` bootstrap resamples of the reps. Beside it:
    the paper's Gaussian approximation ``sigma sqrt(2 log L / G)`` (eq. 8) with
    ``sigma = mean_{n,l} sqrt(p (1 - p))``.

    Scenarios (all ours; the paper's appendix A is not public):

    - ``equal``: every model has the same ``p_n`` on a prompt (the paper's eq. 6/10
      assumption): one topic, no skill spread.
    - ``heterogeneous``: ``logit p = theta[l, topic] - d[n]`` with ``n_topics`` topics
      and topic ``specialisation`` (independent draws).
    - ``correlated rho=...``: the heterogeneous workload, with generation ``g`` of all
      models on a prompt correlated through a Gaussian copula with latent correlation
      ``rho`` (``simulate(draw_correlation=rho)``; the paper's "generations correlated
      between models"). No closed form exists here, so the bias is a Monte Carlo mean
      over ``n_sims`` data sets per rep of ``mean_n [max_l p_hat - p_hat_{l*}]`` (an
      unbiased, low-variance estimate of ``E[O_biased] - O_true``).

    Parameters
    ----------
    n_models : int
        ``L >= 2``.
    draws : ints
        The ``G`` grid (distinct, >= 1).
    correlation : float or floats
        ``rho`` in (0, 1) of the correlated scenario(s); 0 or ``()`` leaves it out.
    n_reps : int
        Simulated workloads per scenario (the bootstrap resamples these).
    seed : int
        Seeds everything; rep ``r`` of every scenario shares one truth seed.
    n_prompts, n_topics, specialisation, skill_sd :
        Workload shape and model spread (logit scale) of the heterogeneous and
        correlated scenarios, passed to :func:`capfront.simulate`.
    n_boot : int
        Bootstrap resamples for the ``lambda`` intervals.
    n_sims : int
        Monte Carlo data sets per rep for the correlated scenario(s).
    within_cell_correlation : float or floats
        Adds ``within-cell rho=...`` scenarios: the heterogeneous workload with each
        cell's ``p ~ Beta`` around the model's ``q`` with intra-class correlation
        ``rho`` (``simulate(within_cell_correlation=rho)``). The truth is the cell's
        ``p`` (the mean of infinitely many draws of that cell), so draws are i.i.d.
        given the truth and the bias is exact; the correlation only spreads ``p``.
    fit_windows : (name, G_min, G_max or None) tuples
        ``G`` windows for the fits; the first gives :attr:`BiasDecayResult.lambdas`.

    Returns
    -------
    BiasDecayResult
    """
    L = check_int(n_models, "n_models", 2)
    R = check_int(n_reps, "n_reps", 2)
    N = check_int(n_prompts, "n_prompts", 1)
    K = check_int(n_topics, "n_topics", 1)
    B = check_int(n_boot, "n_boot", 10)
    n_sims = check_int(n_sims, "n_sims", 1)
    g_grid = check_draws(draws)
    if specialisation < 0 or skill_sd < 0:
        raise ValueError("specialisation and skill_sd must be >= 0")
    rhos = _correlations(correlation, "correlation")
    cell_rhos = _correlations(within_cell_correlation, "within_cell_correlation")
    windows = []
    for name, lo, hi in fit_windows:
        sel = (g_grid >= lo) & (g_grid <= (np.inf if hi is None else hi))
        if sel.sum() >= 3:
            windows.append((name, lo, hi, sel))
    if not windows:
        raise ValueError("no fit window holds 3 or more values of draws")

    corr_of = {f"correlated rho={c:g}": c for c in rhos}
    corr_of.update({f"within-cell rho={c:g}": c for c in cell_rhos})
    scenarios = ["equal", "heterogeneous", *corr_of]
    g_max = int(g_grid.max())
    rep_seeds = np.random.SeedSequence(seed).generate_state(R)
    e_gauss = _expected_gauss_max(L)
    rows, fit_rows = [], []
    boot_rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    boot_idx = boot_rng.integers(0, R, size=(B, R))
    log_g = np.log(g_grid.astype(np.float64))
    equal_truth = None
    for name in scenarios:
        kw = _scenario_kwargs(
            name,
            n_topics=K,
            specialisation=specialisation,
            skill_sd=skill_sd,
            correlation=corr_of.get(name, 0.0),
        )
        bias = np.empty((R, len(g_grid)))
        realised = np.empty((R, len(g_grid)))
        sigmas = np.empty(R)
        for r in range(R):
            if "draw_correlation" in kw:
                res = simulate(
                    N, L, g_max * n_sims, seed=int(rep_seeds[r]), as_counts=False, **kw
                )
                bias[r], realised[r], _, sigmas[r] = _copula_curves(res, g_grid, n_sims)
                continue
            res = simulate(N, L, g_max, seed=int(rep_seeds[r]), as_counts=True, **kw)
            curve, o_true, sigmas[r] = _exact_curve(res, g_grid)
            bias[r] = curve - o_true
            successes = np.rint(res.successes).astype(np.int64)
            realised[r] = subsample_curve(successes, g_max, g_grid) - o_true
            if name == "equal" and r == 0:
                equal_truth = res.truth_p[:, 0].copy()
        mean_bias = bias.mean(axis=0)
        if not (mean_bias > 0).all():
            raise ValueError(
                f"scenario {name}: the bias is not positive at every G "
                "(degenerate workload); cannot fit a power law"
            )
        head = None
        for wname, _, _, sel in windows:
            lam, a = loglog_slope(log_g[sel], np.log(mean_bias[sel]))
            boot = np.maximum(bias[boot_idx][:, :, sel].mean(axis=1), 1e-300)
            lam_b, _ = loglog_slope(log_g[sel], np.log(boot))
            lo_ci, hi_ci = np.quantile(lam_b, [0.025, 0.975])
            fit_rows.append(
                {
                    "scenario": name,
                    "window": wname,
                    "g_min": int(g_grid[sel].min()),
                    "g_max": int(g_grid[sel].max()),
                    "lambda": float(lam),
                    "lambda_lo": float(lo_ci),
                    "lambda_hi": float(hi_ci),
                    "a": float(a),
                }
            )
            if head is None:
                head = (float(lam), float(a))
        sigma = float(sigmas.mean())
        local = np.full(len(g_grid), np.nan)
        local[1:] = -np.diff(np.log(mean_bias)) / np.diff(log_g)
        approx = sigma * np.sqrt(2.0 * np.log(L) / g_grid)
        for j, g in enumerate(g_grid):
            rows.append(
                {
                    "scenario": name,
                    "n_draws": int(g),
                    "bias": float(mean_bias[j]),
                    "bias_sd": float(bias[:, j].std(ddof=1)),
                    "bias_realised": float(realised[:, j].mean()),
                    "gaussian_approx": float(approx[j]),
                    "gaussian_exact": float(sigma * e_gauss / np.sqrt(g)),
                    "ratio_approx": float(mean_bias[j] / approx[j]),
                    "fitted": float(head[1] * g ** -head[0]),
                    "local_lambda": float(local[j]),
                    "sigma": sigma,
                }
            )
    table = pd.DataFrame(rows)
    fits = pd.DataFrame(fit_rows)
    gaussian = _gaussian_check(equal_truth)
    settings = {
        "n_models": L,
        "draws": tuple(int(g) for g in g_grid),
        "correlation": tuple(rhos),
        "within_cell_correlation": tuple(cell_rhos),
        "n_reps": R,
        "seed": seed,
        "n_prompts": N,
        "n_topics": K,
        "specialisation": specialisation,
        "skill_sd": skill_sd,
        "n_boot": B,
        "n_sims": n_sims,
        "rep_seeds": tuple(int(v) for v in rep_seeds),
    }
    return BiasDecayResult(table=table, fits=fits, gaussian=gaussian, settings=settings)


def _gaussian_check(p_prompt: np.ndarray) -> pd.DataFrame:
    """Equal-``p`` models (paper eq. 10): exact bias ``mean_n E[max_l Bin(G, p_n)/G]
    - mean_n p_n`` over a grid of ``L`` and ``G`` against ``sigma sqrt(2 log L / G)``
    and the exact-Gaussian ``sigma e_L / sqrt(G)``."""
    sigma = float(np.sqrt(p_prompt * (1.0 - p_prompt)).mean())
    rows = []
    for L in GAUSSIAN_MODELS:
        p = np.repeat(p_prompt[:, None], L, axis=1)
        e_l = _expected_gauss_max(L)
        for g in GAUSSIAN_DRAWS:
            bias = float(expected_max_binomial(p, g).mean() - p_prompt.mean())
            approx = sigma * np.sqrt(2.0 * np.log(L) / g)
            exact = sigma * e_l / np.sqrt(g)
            rows.append(
                {
                    "n_models": L,
                    "n_draws": g,
                    "bias": bias,
                    "gaussian_approx": approx,
                    "gaussian_exact": exact,
                    "ratio_approx": bias / approx,
                    "ratio_exact": bias / exact,
                }
            )
    return pd.DataFrame(rows)
