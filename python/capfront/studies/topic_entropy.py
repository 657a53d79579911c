"""Topic-entropy study: the oracle's gain over the best single model against the
entropy of the workload's topic mixture (design §8; the paper's contribution 5)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._protocol import ResultProtocol
from ..expected_max import expected_max_binomial
from ..results import EvalResults
from ..simulate import simulate
from ._common import check_int, entropy, markdown_table, new_axes, spearman

DEFAULT_ALPHAS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0)
_N_BINS = 8


@dataclass
class TopicEntropyResult(ResultProtocol):
    """Result of :func:`topic_entropy`.

    Attributes
    ----------
    table : DataFrame
        One row per simulated workload: ``alpha``, ``rep``, ``entropy`` ``H(pi)``
        (nats), ``entropy_norm = H / log K``, ``true_oracle``, ``true_best_single``,
        ``gain_true``, ``naive_oracle``, ``naive_best_single``, ``gain_naive``,
        ``debiased_oracle``, ``gain_debiased`` (the first debiasing method), and
        ``gain_<method>`` for each further method.
    summary : DataFrame
        Per estimate (``true``, ``naive``, ``debiased`` = the first method, then the
        further methods by name): ``spearman`` between ``H`` and the gain
        over all workloads, ``spearman_lo``/``spearman_hi`` (95% bootstrap over
        workloads), ``within_rep_spearman`` (mean over reps, each rep one model pool
        across all ``alpha``), ``bin_decreases`` (how often the mean gain falls from
        one entropy bin to the next, of ``n_bins - 1`` steps), ``mean_gain``, and
        ``mean_error`` (estimate minus true gain).
    binned : DataFrame
        Mean gains in equal-count entropy bins.
    debias_method : str
        Which debiased estimator gives ``gain_debiased``.
    debias_methods : list of str
        Every debiased estimator used, in order.
    """

    table: pd.DataFrame
    summary: pd.DataFrame
    binned: pd.DataFrame
    debias_method: str
    settings: dict = field(default_factory=dict)
    debias_methods: list[str] = field(default_factory=list)

    @property
    def estimates(self) -> list[str]:
        """Names of the gain columns (``gain_<name>``), as in :attr:`summary`."""
        return list(self.summary["estimate"])

    @property
    def spearman(self) -> float:
        """Spearman rank correlation of the true gain with ``H(pi)``."""
        return float(self.summary.set_index("estimate").loc["true", "spearman"])

    @property
    def level(self) -> float:
        """0.95: the bootstrap-over-workloads interval of ``spearman`` is a 95% one."""
        return 0.95

    @property
    def value(self) -> float:
        """The result protocol's headline: :attr:`spearman`."""
        return self.spearman

    @property
    def ci(self) -> tuple[float, float]:
        """The 95% bootstrap-over-workloads interval of :attr:`spearman`."""
        row = self.summary.set_index("estimate").loc["true"]
        return (float(row["spearman_lo"]), float(row["spearman_hi"]))

    def to_frame(self) -> pd.DataFrame:
        """:attr:`table`: one row per simulated workload."""
        return self.table

    def plot(self, ax=None):  # noqa: ANN001, ANN201 (matplotlib is optional at import)
        """Gain against ``H(pi)``: workloads as dots, entropy-bin means as lines."""
        ax = new_axes(ax)
        styles = [
            ("C0", "o"),
            ("C3", "^"),
            ("C2", "s"),
            ("C1", "D"),
            ("C4", "v"),
            ("C5", "P"),
            ("C6", "X"),
            ("C7", "*"),
        ]
        rho = self.summary.set_index("estimate")["spearman"]
        for i, est in enumerate(self.estimates):
            c, m = styles[i % len(styles)]
            ax.scatter(
                self.table["entropy"],
                self.table[f"gain_{est}"],
                s=9,
                color=c,
                marker=m,
                alpha=0.35,
                lw=0,
            )
            ax.plot(
                self.binned["entropy"],
                self.binned[f"gain_{est}"],
                "-",
                marker=m,
                color=c,
                ms=4,
                label=f"{est} gain (Spearman {rho[est]:.2f})",
            )
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.set_xlabel("topic-mixture entropy H(pi)  [nats]")
        ax.set_ylabel("oracle gain over best single model")
        ax.set_title(
            f"Oracle gain vs topic entropy (debiased: {self.debias_method})",
            fontsize=9,
        )
        ax.legend(fontsize=7)
        return ax

    def to_markdown(self) -> str:
        """Summary and entropy-bin table as markdown."""
        return "\n\n".join(
            [
                "Debiased estimate(s): " + "; ".join(self.debias_methods) + ".",
                "Rank correlation of the oracle gain with H(pi):",
                markdown_table(self.summary),
                "Mean gain per entropy bin:",
                markdown_table(self.binned),
            ]
        )


def _debiased_oracle(results: EvalResults, method: str | None) -> tuple[float, str]:
    """``capfront.debiased_oracle(results, method)``, or with ``method=None`` the
    parametric bootstrap bias correction of design §4c computed here:
    ``O_bc = 2 O_biased - mean_n E[max_l Bin(G, p_hat_nl) / G]``."""
    if method is not None:
        from ..debias import debiased_oracle

        out = debiased_oracle(results, method)
        return float(out.value), f"capfront.debiased_oracle({method!r})"
    p_hat = results.p_hat
    naive = float(p_hat.max(axis=1).mean())
    e1 = float(expected_max_binomial(p_hat, results.n_draws).mean())
    return 2.0 * naive - e1, "bootstrap bias correction, computed in studies"


def topic_entropy(
    *,
    n_topics: int = 8,
    n_models: int = 8,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    n_reps: int = 20,
    seed: int = 0,
    n_prompts: int = 2000,
    n_draws: int = 10,
    specialisation: float = 1.0,
    skill_sd: float = 0.7,
    cell_sd: float = 0.0,
    debias_method: str | Sequence[str] | None = "bootstrap_bc",
    n_boot: int = 1000,
) -> TopicEntropyResult:
    """Oracle gain over the best single model against the topic-mixture entropy.

    For rep ``r`` one pool of models is drawn, ``theta[l, t] = a_l + s z[l, t]``
    (``a_l ~ N(1, skill_sd^2)``, ``z ~ N(0, 1)``, ``s = specialisation``), and for each
    ``alpha`` a workload mixture ``pi ~ Dirichlet(alpha 1_K)`` with entropy
    ``H(pi) = -sum_t pi_t log pi_t``; :func:`capfront.simulate` then draws ``N``
    prompts with topics from ``pi``, ``logit p = theta[l, topic] - d[n] (+ u[n, l])``
    and ``G = n_draws`` Bernoulli draws per cell (counts). Reported per workload:

    - true gain ``O_true - max_l A_l`` with ``O_true = mean_n max_l p`` (paper eq. 4)
      and ``A_l = mean_n p[n, l]``;
    - naive gain ``O_biased - max_l mean_n p_hat`` (eq. 5);
    - debiased gain ``O_debiased - max_l mean_n p_hat``.

    and, per estimate, the Spearman rank correlation of the gain with ``H(pi)``.

    Parameters
    ----------
    n_topics : int
        ``K >= 1`` topics.
    n_models : int
        ``L >= 1`` models.
    alphas : floats
        Dirichlet concentrations (> 0): small = one dominant topic, large = uniform.
    n_reps : int
        Model pools; each is run on one mixture per ``alpha``.
    seed : int
        Seeds everything.
    n_prompts, n_draws : int
        ``N`` and ``G`` of each simulated evaluation.
    specialisation, skill_sd : float
        Topic-specific and overall spread of model skill (logit scale).
    cell_sd : float
        Model-by-prompt aptitude sd (``simulate(cell_sd=)``); with 0 the ranking of
        models is the same on every prompt of a topic, so a one-topic workload has
        zero true gain.
    debias_method : str, several, or None
        Passed to ``capfront.debiased_oracle(results, method)`` (e.g.
        ``"bootstrap_bc"``, ``"double_bc"``, ``"extrapolation"``, ``"pgm"``); the
        first gives ``gain_debiased``, further ones add ``gain_<method>`` columns.
        ``None``, or ``"bootstrap_bc"`` while ``capfront.debiased_oracle`` is absent,
        uses the bootstrap bias correction (design §4c) computed here with
        :func:`capfront.expected_max_binomial`.
    n_boot : int
        Bootstrap resamples for the Spearman intervals.

    Returns
    -------
    TopicEntropyResult
    """
    K = check_int(n_topics, "n_topics", 1)
    L = check_int(n_models, "n_models", 1)
    R = check_int(n_reps, "n_reps", 1)
    N = check_int(n_prompts, "n_prompts", 1)
    G = check_int(n_draws, "n_draws", 1)
    B = check_int(n_boot, "n_boot", 10)
    alpha_arr = np.asarray(alphas, dtype=np.float64).ravel()
    if (
        alpha_arr.size == 0
        or not np.isfinite(alpha_arr).all()
        or (alpha_arr <= 0).any()
    ):
        raise ValueError(f"alphas must be finite numbers > 0, got {list(alphas)}")
    if specialisation < 0 or skill_sd < 0 or cell_sd < 0:
        raise ValueError("specialisation, skill_sd and cell_sd must be >= 0")
    if debias_method is None or isinstance(debias_method, str):
        methods: list[str | None] = [debias_method]
    else:
        methods = list(debias_method)
        if not methods:
            raise ValueError("debias_method is an empty sequence")
    extra = [str(m) for m in methods[1:]]
    clash = {"true", "naive", "debiased"} & set(extra)
    if clash or len(set(extra)) != len(extra):
        raise ValueError(f"debias_method has repeated or reserved names: {methods}")

    root = np.random.SeedSequence(seed)
    rows = []
    methods_used: list[str] = []
    for r, rep_seq in enumerate(root.spawn(R)):
        pool_rng, mix_rng = (np.random.default_rng(s) for s in rep_seq.spawn(2))
        theta = pool_rng.normal(1.0, skill_sd, size=L)[:, None] + (
            specialisation * pool_rng.normal(size=(L, K))
        )
        sim_seeds = rep_seq.generate_state(len(alpha_arr))
        for j, alpha in enumerate(alpha_arr):
            pi = mix_rng.dirichlet(np.full(K, alpha)) if K > 1 else np.ones(1)
            pi = pi / pi.sum()
            res = simulate(
                N,
                L,
                G,
                n_topics=K,
                topic_weights=pi,
                model_skill=theta,
                cell_sd=cell_sd,
                seed=int(sim_seeds[j]),
                as_counts=True,
            )
            p = res.truth_p
            true_oracle = float(p.max(axis=1).mean())
            true_best = float(p.mean(axis=0).max())
            p_hat = res.p_hat
            naive = float(p_hat.max(axis=1).mean())
            naive_best = float(p_hat.mean(axis=0).max())
            estimates = [_debiased_oracle(res, m) for m in methods]
            methods_used = [name for _, name in estimates]
            debiased = estimates[0][0]
            h = float(entropy(pi))
            rows.append(
                {
                    "alpha": float(alpha),
                    "rep": r,
                    "entropy": h,
                    "entropy_norm": h / np.log(K) if K > 1 else 0.0,
                    "true_oracle": true_oracle,
                    "true_best_single": true_best,
                    "gain_true": true_oracle - true_best,
                    "naive_oracle": naive,
                    "naive_best_single": naive_best,
                    "gain_naive": naive - naive_best,
                    "debiased_oracle": debiased,
                    "gain_debiased": debiased - naive_best,
                    **{
                        f"gain_{m}": value - naive_best
                        for m, (value, _) in zip(extra, estimates[1:], strict=True)
                    },
                }
            )
    table = pd.DataFrame(rows)
    names = ["true", "naive", "debiased", *extra]
    summary, binned = _summarise(table, names, B, np.random.default_rng([seed, 7]))
    settings = {
        "n_topics": K,
        "n_models": L,
        "alphas": tuple(alpha_arr.tolist()),
        "n_reps": R,
        "seed": seed,
        "n_prompts": N,
        "n_draws": G,
        "specialisation": specialisation,
        "skill_sd": skill_sd,
        "cell_sd": cell_sd,
        "n_boot": B,
        "debias_method": methods,
    }
    return TopicEntropyResult(
        table=table,
        summary=summary,
        binned=binned,
        debias_method=methods_used[0],
        settings=settings,
        debias_methods=methods_used,
    )


def _summarise(
    table: pd.DataFrame, names: list[str], n_boot: int, rng: np.random.Generator
) -> tuple[pd.DataFrame, pd.DataFrame]:
    h = table["entropy"].to_numpy()
    n_bins = min(_N_BINS, max(1, len(table) // 5))
    order = np.argsort(h, kind="stable")
    bin_of = np.empty(len(h), dtype=np.int64)
    bin_of[order] = np.arange(len(h)) * n_bins // len(h)
    binned = (
        table.assign(bin=bin_of)
        .groupby("bin")[["entropy"] + [f"gain_{e}" for e in names]]
        .mean()
        .reset_index()
    )
    binned.insert(1, "n_workloads", np.bincount(bin_of, minlength=n_bins))
    idx = rng.integers(0, len(h), size=(n_boot, len(h)))
    rows = []
    for est in names:
        gain = table[f"gain_{est}"].to_numpy()
        rho = spearman(h, gain)
        boot = np.array([spearman(h[i], gain[i]) for i in idx])
        boot = boot[np.isfinite(boot)]
        lo, hi = (
            np.quantile(boot, [0.025, 0.975])
            if boot.size
            else (float("nan"), float("nan"))
        )
        within = [
            spearman(part["entropy"], part[f"gain_{est}"])
            for _, part in table.groupby("rep")
        ]
        within = [w for w in within if np.isfinite(w)]
        steps = np.diff(binned[f"gain_{est}"].to_numpy())
        rows.append(
            {
                "estimate": est,
                "spearman": rho,
                "spearman_lo": float(lo),
                "spearman_hi": float(hi),
                "within_rep_spearman": float(np.mean(within))
                if within
                else float("nan"),
                "bin_decreases": int((steps < 0).sum()),
                "n_bins": len(binned),
                "mean_gain": float(gain.mean()),
                "mean_error": float((gain - table["gain_true"].to_numpy()).mean()),
            }
        )
    return pd.DataFrame(rows), binned
