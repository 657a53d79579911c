"""Simulation studies (capfront.studies): closed forms, exact zeros, seeds, the CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure
from scipy import stats

import capfront
from capfront.studies import bias_decay, topic_entropy
from capfront.studies._common import entropy, loglog_slope, spearman
from capfront.studies.bias_decay import (
    _copula_curves,
    _exact_curve,
    _expected_gauss_max,
)
from capfront.studies.cli import main

SMALL_BIAS = dict(n_models=3, draws=(1, 2, 4, 8, 16), n_reps=3, n_prompts=60, n_boot=50)
SMALL_TOPIC = dict(
    n_topics=3,
    n_models=4,
    alphas=(0.05, 1.0, 50.0),
    n_reps=3,
    n_prompts=120,
    n_draws=5,
    n_boot=50,
)


def closed_form_equal_p(p_prompt: np.ndarray, n_models: int, G: int) -> np.ndarray:
    """The paper's eq. 10: ``(1/G) sum_{k=1..G} [1 - F(k-1; G, p_n)^L]``."""
    k = np.arange(1, G + 1)[:, None]
    cdf = stats.binom.cdf(k - 1, G, p_prompt[None, :])
    return (1.0 - cdf**n_models).sum(axis=0) / G


# --- bias decay -------------------------------------------------------------------


def test_equal_models_match_binomial_closed_form():
    res = bias_decay(correlation=0, seed=3, **SMALL_BIAS)
    table = res.table[res.table["scenario"] == "equal"]
    draws = res.settings["draws"]
    expected = np.zeros(len(draws))
    for rep_seed in res.settings["rep_seeds"]:
        sim = capfront.simulate(
            60,
            3,
            max(draws),
            n_topics=1,
            specialisation=0.0,
            skill_sd=0.0,
            seed=rep_seed,
            as_counts=True,
        )
        p = sim.truth_p
        assert np.allclose(p, p[:, :1])  # every model has the prompt's p
        for j, G in enumerate(draws):
            expected[j] += (closed_form_equal_p(p[:, 0], 3, G) - p[:, 0]).mean()
    expected /= len(res.settings["rep_seeds"])
    np.testing.assert_allclose(table["bias"], expected, rtol=1e-9, atol=1e-12)


def test_exact_curve_is_closed_form_and_g1_is_union_probability():
    sim = capfront.simulate(
        40, 5, 3, n_topics=1, specialisation=0.0, skill_sd=0.0, seed=11, as_counts=True
    )
    curve, o_true, sigma = _exact_curve(sim, np.array([1, 3, 7]))
    p = sim.truth_p[:, 0]
    for value, G in zip(curve, (1, 3, 7), strict=True):
        assert value == pytest.approx(closed_form_equal_p(p, 5, G).mean(), rel=1e-10)
    # G = 1: the max of L Bernoulli(p) is 1 - (1 - p)^L
    assert curve[0] == pytest.approx((1 - (1 - p) ** 5).mean(), rel=1e-10)
    assert o_true == pytest.approx(p.mean())
    assert sigma == pytest.approx(np.sqrt(p * (1 - p)).mean())


def test_single_model_has_no_bias():
    sim = capfront.simulate(30, 1, 4, n_topics=2, seed=2, as_counts=True)
    curve, o_true, _ = _exact_curve(sim, np.array([1, 2, 4]))
    np.testing.assert_allclose(curve, o_true, rtol=1e-12)
    with pytest.raises(ValueError, match="n_models"):
        bias_decay(n_models=1)


def test_gaussian_expected_max_known_values():
    assert _expected_gauss_max(1) == pytest.approx(0.0, abs=1e-9)
    assert _expected_gauss_max(2) == pytest.approx(1 / np.sqrt(np.pi), rel=1e-7)
    assert _expected_gauss_max(3) == pytest.approx(1.5 / np.sqrt(np.pi), rel=1e-7)


def test_bias_decay_table_fits_and_gaussian_check():
    res = bias_decay(correlation=0.5, seed=0, **SMALL_BIAS)
    assert list(res.table["scenario"].unique()) == [
        "equal",
        "heterogeneous",
        "correlated rho=0.5",
    ]
    for _, part in res.table.groupby("scenario"):
        bias = part["bias"].to_numpy()
        assert (bias > 0).all() and (np.diff(bias) < 0).all()
    # the subsample curve's expectation is the exact curve: agree to MC noise
    het = res.table[res.table["scenario"] == "heterogeneous"]
    np.testing.assert_allclose(het["bias_realised"], het["bias"], atol=0.03)
    lam = res.lambdas
    assert set(lam.index) == set(res.table["scenario"])
    assert (
        (lam["lambda_lo"] <= lam["lambda"]) & (lam["lambda"] <= lam["lambda_hi"])
    ).all()
    # equal p, large G: the exact-Gaussian ratio approaches 1, the sqrt(2 log L)
    # approximation overstates the bias
    g = res.gaussian
    big = g[g["n_draws"] == g["n_draws"].max()]
    assert (big["ratio_exact"] > 0.9).all() and (big["ratio_exact"] < 1.05).all()
    assert (g["ratio_approx"] < 1).all()
    md = res.to_markdown()
    assert "lambda" in md and md.count("|") > 50


def test_copula_curve_matches_exact_when_uncorrelated_and_shrinks_with_rho():
    draws = np.array([1, 2, 5, 10])
    kw = dict(n_topics=3, specialisation=1.0, seed=5, as_counts=False)
    indep = capfront.simulate(1500, 4, 10, **kw)
    exact, o_true, _ = _exact_curve(indep, draws)
    near0 = capfront.simulate(1500, 4, 10 * 8, draw_correlation=1e-9, **kw)
    mc, raw, o_true_mc, _ = _copula_curves(near0, draws, 8)
    assert o_true_mc == pytest.approx(o_true)
    np.testing.assert_allclose(mc, exact - o_true, rtol=0.08, atol=2e-3)
    strong = capfront.simulate(1500, 4, 10 * 8, draw_correlation=0.9, **kw)
    mc_strong, *_ = _copula_curves(strong, draws, 8)
    assert (mc_strong < 0.7 * (exact - o_true)).all()


def test_within_cell_scenario_is_exact_and_smaller():
    res = bias_decay(correlation=0, within_cell_correlation=0.3, seed=2, **SMALL_BIAS)
    assert list(res.table["scenario"].unique()) == [
        "equal",
        "heterogeneous",
        "within-cell rho=0.3",
    ]
    cell = res.table[res.table["scenario"] == "within-cell rho=0.3"]
    # i.i.d. draws given the cell's p: the subsample curve's mean is the exact curve
    np.testing.assert_allclose(cell["bias_realised"], cell["bias"], atol=0.03)
    assert (cell["bias"] > 0).all()
    with pytest.raises(ValueError, match="within_cell_correlation"):
        bias_decay(**{**SMALL_BIAS, "within_cell_correlation": -0.1})


def test_bias_decay_reproducible_by_seed():
    a = bias_decay(correlation=0.3, seed=7, **SMALL_BIAS)
    b = bias_decay(correlation=0.3, seed=7, **SMALL_BIAS)
    c = bias_decay(correlation=0.3, seed=8, **SMALL_BIAS)
    pd.testing.assert_frame_equal(a.table, b.table)
    pd.testing.assert_frame_equal(a.fits, b.fits)
    assert not np.allclose(a.table["bias"], c.table["bias"])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(draws=(0, 1, 2)), "draws"),
        (dict(draws=(1, 2, 2, 3)), "repeated"),
        (dict(draws=(1.5, 2, 3)), "integers"),
        (dict(correlation=1.0), "correlation"),
        (dict(n_reps=1), "n_reps"),
        (dict(draws=(1, 2)), "fit window"),
    ],
)
def test_bias_decay_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bias_decay(**{**SMALL_BIAS, **kwargs})


@settings(max_examples=60, deadline=None)
@given(
    lam=st.floats(0.05, 2.0),
    a=st.floats(1e-3, 10.0),
    grid=st.lists(st.integers(1, 500), min_size=3, max_size=12, unique=True),
)
def test_loglog_slope_recovers_power_law(lam, a, grid):
    g = np.log(np.array(sorted(grid), dtype=float))
    est, a_hat = loglog_slope(g, np.log(a) - lam * g)
    assert est == pytest.approx(lam, rel=1e-7, abs=1e-9)
    assert a_hat == pytest.approx(a, rel=1e-6)


# --- topic entropy ----------------------------------------------------------------


@pytest.mark.parametrize("n_topics, specialisation", [(1, 0.0), (1, 1.5), (4, 0.0)])
def test_no_specialisation_or_one_topic_gives_zero_true_gain(n_topics, specialisation):
    res = topic_entropy(
        **{**SMALL_TOPIC, "n_topics": n_topics, "specialisation": specialisation}
    )
    t = res.table
    # the same model is best on every prompt: true oracle == best single model
    np.testing.assert_allclose(
        t["true_oracle"], t["true_best_single"], rtol=0, atol=1e-12
    )
    assert (t["gain_naive"] > 0).all()  # the naive oracle's bias alone
    # the debiased estimate removes part of that bias
    assert (t["gain_debiased"] < t["gain_naive"]).all()
    if n_topics == 1:
        assert (t["entropy"] == 0).all()


def test_cell_effects_give_gain_within_one_topic():
    res = topic_entropy(**{**SMALL_TOPIC, "n_topics": 1, "cell_sd": 1.0})
    assert (res.table["gain_true"] > 0.01).all()


def test_topic_entropy_gain_rises_with_entropy():
    res = topic_entropy(
        n_topics=4,
        n_models=5,
        alphas=(0.02, 0.2, 2.0, 50.0),
        n_reps=6,
        n_prompts=300,
        n_draws=10,
        n_boot=100,
        seed=1,
    )
    summ = res.summary.set_index("estimate")
    assert res.spearman == summ.loc["true", "spearman"]
    assert summ.loc["true", "spearman"] > 0.4
    assert summ.loc["naive", "mean_error"] > summ.loc["debiased", "mean_error"] > -0.01
    assert summ.loc["true", "mean_error"] == 0
    assert "bias correction" in res.debias_method or "debiased_oracle" in (
        res.debias_method
    )
    h = res.table["entropy"].to_numpy()
    assert (h >= 0).all() and (h <= np.log(4) + 1e-12).all()
    assert "Spearman" in res.to_markdown() or "spearman" in res.to_markdown()


def test_topic_entropy_reproducible_by_seed():
    a = topic_entropy(seed=4, **SMALL_TOPIC)
    b = topic_entropy(seed=4, **SMALL_TOPIC)
    c = topic_entropy(seed=5, **SMALL_TOPIC)
    pd.testing.assert_frame_equal(a.table, b.table)
    pd.testing.assert_frame_equal(a.summary, b.summary)
    assert not np.allclose(a.table["gain_naive"], c.table["gain_naive"])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(alphas=(0.0, 1.0)), "alphas"),
        (dict(alphas=()), "alphas"),
        (dict(n_topics=0), "n_topics"),
        (dict(cell_sd=-1.0), ">= 0"),
    ],
)
def test_topic_entropy_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        topic_entropy(**{**SMALL_TOPIC, **kwargs})


def test_entropy_and_spearman_helpers():
    assert entropy(np.array([1.0, 0.0, 0.0])) == 0.0
    assert entropy(np.full(4, 0.25)) == pytest.approx(np.log(4))
    x = np.arange(10.0)
    assert spearman(x, x**3) == pytest.approx(1.0)
    assert spearman(x, -x) == pytest.approx(-1.0)
    assert np.isnan(spearman(x, np.ones(10)))
    assert spearman(x, np.exp(x)) == pytest.approx(stats.spearmanr(x, np.exp(x))[0])


def test_debias_fallback_matches_library():
    from capfront.studies.topic_entropy import _debiased_oracle

    sim = capfront.simulate(300, 5, 8, n_topics=3, seed=3, as_counts=True)
    own, name = _debiased_oracle(sim, None)
    assert "computed in studies" in name
    p_hat = sim.p_hat
    expected = (
        2 * p_hat.max(axis=1).mean() - capfront.expected_max_binomial(p_hat, 8).mean()
    )
    assert own == pytest.approx(expected, rel=1e-12)
    lib, lib_name = _debiased_oracle(sim, "bootstrap_bc")
    assert "debiased_oracle" in lib_name
    assert lib == pytest.approx(own, rel=1e-10)


@pytest.mark.skipif(
    not hasattr(capfront, "debiased_oracle"), reason="capfront.debiased_oracle absent"
)
def test_topic_entropy_several_debias_methods():
    res = topic_entropy(
        **{**SMALL_TOPIC, "debias_method": ("bootstrap_bc", "double_bc")}
    )
    assert list(res.summary["estimate"]) == ["true", "naive", "debiased", "double_bc"]
    assert "gain_double_bc" in res.table and "gain_double_bc" in res.binned
    assert len(res.debias_methods) == 2
    fig = Figure()
    assert len(res.plot(ax=fig.subplots()).lines) >= 4
    with pytest.raises(ValueError, match="repeated or reserved"):
        topic_entropy(**{**SMALL_TOPIC, "debias_method": ("bootstrap_bc", "naive")})


# --- simulate's new keywords ------------------------------------------------------


def test_simulate_draw_correlation_keeps_marginals_and_correlates_models():
    sim = capfront.simulate(400, 3, 200, draw_correlation=0.6, seed=0, as_counts=False)
    draws = sim.scores.astype(float)
    assert np.abs(draws.mean(axis=2) - sim.truth_p).mean() < 0.03
    resid = draws - sim.truth_p[:, :, None]
    corr = (resid[:, 0] * resid[:, 1]).mean() / np.sqrt(
        (resid[:, 0] ** 2).mean() * (resid[:, 1] ** 2).mean()
    )
    assert corr > 0.2
    counts = capfront.simulate(
        400, 3, 200, draw_correlation=0.6, seed=0, as_counts=True
    )
    np.testing.assert_array_equal(counts.successes, sim.successes)
    with pytest.raises(ValueError, match="draw_correlation"):
        capfront.simulate(10, 2, 2, draw_correlation=1.0)


def test_simulate_model_skill_and_cell_sd():
    theta = np.array([[2.0, -1.0], [-1.0, 2.0]])
    sim = capfront.simulate(50, 2, 3, n_topics=2, model_skill=theta, seed=1)
    np.testing.assert_array_equal(sim.truth["theta"], theta)
    plain = capfront.simulate(50, 2, 3, n_topics=2, seed=1)
    np.testing.assert_array_equal(sim.truth["difficulty"], plain.truth["difficulty"])
    with pytest.raises(ValueError, match="model_skill"):
        capfront.simulate(5, 2, 3, n_topics=2, model_skill=np.ones((3, 2)))
    with pytest.raises(ValueError, match="cell_sd"):
        capfront.simulate(5, 2, 3, cell_sd=-0.1)


# --- plots and CLI ----------------------------------------------------------------


def test_plots_draw_on_given_axes():
    bias = bias_decay(correlation=0.3, seed=0, **SMALL_BIAS)
    topic = topic_entropy(seed=0, **SMALL_TOPIC)
    fig = Figure()
    ax1, ax2, ax3 = fig.subplots(1, 3)
    assert bias.plot(ax=ax1) is ax1 and len(ax1.lines) >= 9
    assert bias.plot_slopes(ax=ax2) is ax2
    assert topic.plot(ax=ax3) is ax3 and len(ax3.lines) >= 3


def test_cli_writes_tables_and_png(tmp_path, capsys):
    out = tmp_path / "bias"
    assert (
        main(
            [
                "bias-decay",
                "--out",
                str(out),
                "--reps",
                "2",
                "--prompts",
                "40",
                "--models",
                "3",
                "--draws",
                "1,2,4,8",
                "--correlation",
                "0.4",
                "--within-cell",
                "0.2",
            ]
        )
        == 0
    )
    for name in (
        "study_bias_decay.csv",
        "study_bias_decay_fits.csv",
        "study_bias_decay_gaussian.csv",
        "study_bias_decay.md",
        "study_bias_decay.png",
    ):
        assert (out / name).stat().st_size > 0
    assert (out / "study_bias_decay.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = pd.read_csv(out / "study_bias_decay.csv")
    assert set(table["scenario"]) == {
        "equal",
        "heterogeneous",
        "correlated rho=0.4",
        "within-cell rho=0.2",
    }
    out2 = tmp_path / "topic"
    assert (
        main(
            [
                "study",
                "topic-entropy",
                "--out",
                str(out2),
                "--reps",
                "2",
                "--prompts",
                "60",
                "--topics",
                "3",
                "--alphas",
                "0.1,10",
            ]
        )
        == 0
    )
    for name in (
        "study_topic_entropy.csv",
        "study_topic_entropy_summary.csv",
        "study_topic_entropy_binned.csv",
        "study_topic_entropy.png",
    ):
        assert (out2 / name).stat().st_size > 0
    assert "topic-entropy" in capsys.readouterr().out


def test_cli_rejects_unknown_study(capsys):
    with pytest.raises(SystemExit):
        main(["nonsense"])
    with pytest.raises(SystemExit):
        main(["bias-decay", "--draws", "1,x"])


def test_capfront_cli_registers_study(tmp_path):
    cli = pytest.importorskip("capfront.cli")
    out = tmp_path / "via-capfront"
    code = cli.main(
        [
            "study",
            "topic-entropy",
            "--out",
            str(out),
            "--reps",
            "1",
            "--prompts",
            "40",
            "--topics",
            "2",
            "--alphas",
            "1",
        ]
    )
    assert code == 0
    assert (out / "study_topic_entropy.png").stat().st_size > 0
