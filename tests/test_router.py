"""evaluate_router: against brute-force references (explicit bootstrap counts,
loops, math.comb) and the library's own scalar functions."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import capfront as cf
from capfront.bootstrap import replicate_counts
from capfront.debias import decomposition
from capfront.router import RouterResult, RouterTable, plot_routers


@pytest.fixture(scope="module")
def res() -> cf.EvalResults:
    return cf.simulate(300, 5, 20, n_topics=3, seed=4)


@pytest.fixture(scope="module")
def choice(res) -> np.ndarray:
    return np.random.default_rng(1).integers(0, res.n_models, res.n_prompts)


def _percentile(x: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    a = (1 - level) / 2
    return tuple(np.percentile(x, [100 * a, 100 * (1 - a)]))


def test_value_cost_and_paired_intervals_match_brute_force(res, choice) -> None:
    B = 300
    r = cf.evaluate_router(res, choice, n_resamples=B, seed=5, oracle="crossfit")
    rows = np.arange(res.n_prompts)
    q = res.p_hat[rows, choice]
    c = res.mean_cost[rows, choice]
    assert r.value == pytest.approx(q.mean(), abs=1e-15)
    assert r.cost == pytest.approx(c.mean())
    assert r.latency == pytest.approx(res.mean_latency[rows, choice].mean())
    # the resamples of cf.bootstrap for this seed, applied by hand
    w = replicate_counts(res, B, seed=5).astype(np.float64) / res.n_prompts
    R = w @ q
    assert r.ci == pytest.approx(_percentile(R), abs=1e-12)
    assert r.cost_ci == pytest.approx(_percentile(w @ c), rel=1e-12)
    best = (w @ res.p_hat).max(axis=1)  # every model, re-maximised
    assert r.gain_ci == pytest.approx(_percentile(R - best), abs=1e-12)
    vals, fin = decomposition(res, "crossfit")
    O = np.array([fin(m) for m in w @ vals])
    share = (R - best) / (O - best)
    assert r.share_ci == pytest.approx(_percentile(share), abs=1e-10)
    assert r.oracle == pytest.approx(cf.debiased_oracle(res, "crossfit").value)
    name, acc, _ = cf.best_single(res)
    assert (r.best_single, r.best_accuracy) == (name, pytest.approx(acc))
    assert r.oracle_gain_share == pytest.approx((r.value - acc) / (r.oracle - acc))


def test_same_prompts_as_cf_bootstrap(res, choice) -> None:
    from capfront.bootstrap import PerPrompt

    r = cf.evaluate_router(res, choice, n_resamples=200, seed=9, oracle=None)
    q = res.p_hat[np.arange(res.n_prompts), choice]
    two = np.column_stack([q, np.zeros_like(q)])  # two columns: stream 0
    b = cf.bootstrap(
        res, PerPrompt(two, lambda m: m[0]), n_resamples=200, seed=9, level=0.95
    )
    assert r.ci == pytest.approx(b.ci, abs=1e-12)


def test_best_of_k_is_unbiased_pass_at_k(res) -> None:
    rng = np.random.default_rng(2)
    choice = rng.integers(0, res.n_models, res.n_prompts)
    k = rng.integers(1, 6, res.n_prompts)
    r = cf.evaluate_router(res, choice, k=k, oracle=None, n_resamples=50)
    rows = np.arange(res.n_prompts)
    S = np.rint(res.successes[rows, choice]).astype(int)
    G = res.n_draws[rows, choice]
    brute = [
        1 - math.comb(int(g - s), int(kk)) / math.comb(int(g), int(kk))
        for s, g, kk in zip(S, G, k, strict=True)
    ]
    assert r.value == pytest.approx(np.mean(brute), abs=1e-12)
    assert r.cost == pytest.approx((res.mean_cost[rows, choice] * k).mean())
    assert r.mean_k == pytest.approx(k.mean())
    assert any("best-of-k" in n for n in r.notes)


def test_regret_table_brute_force(res, choice) -> None:
    r = cf.evaluate_router(res, choice, oracle=None, n_resamples=20)
    p = res.p_hat
    for model, row in r.regret.iterrows():
        m = list(res.models).index(model)
        picked = [n for n in range(res.n_prompts) if choice[n] == m]
        worse = [n for n in picked if p[n, m] < p[n].max()]
        assert row["picks"] == len(picked)
        assert row["strictly_worse"] == len(worse)
        regret = np.mean([p[n].max() - p[n, m] for n in picked])
        assert row["mean_regret"] == pytest.approx(regret)
    assert r.regret["picks"].sum() == res.n_prompts
    # the per-prompt best model is never strictly worse
    top = cf.naive_oracle(res, "prehoc").choice
    rt = cf.evaluate_router(res, top, oracle=None, n_resamples=20)
    assert rt.regret["strictly_worse"].sum() == 0


def test_frontier_position(res) -> None:
    fr = cf.frontier(res)
    rng = np.random.default_rng(3)
    choice = rng.integers(0, res.n_models, res.n_prompts)
    r = cf.evaluate_router(res, choice, oracle=None, n_resamples=20)
    assert r.frontier_quality_at_cost == pytest.approx(fr.quality_at(r.cost))
    assert r.frontier_cost_at_quality == pytest.approx(fr.cost_at(r.value))
    # a random router lies below the frontier, and the frontier is cheaper
    assert r.frontier_quality_at_cost > r.value
    assert r.frontier_cost_at_quality < r.cost
    # the prehoc oracle's choices are the frontier's end point
    top = cf.naive_oracle(res, "prehoc")
    rt = cf.evaluate_router(res, top.choice, oracle=None, n_resamples=20)
    assert rt.value == pytest.approx(fr.max_quality)
    assert rt.frontier_cost_at_quality == pytest.approx(rt.cost, rel=1e-9)


def test_gap_decomposition_from_the_choices(res, choice) -> None:
    r = cf.evaluate_router(res, choice, oracle=None, n_resamples=200)
    g = cf.gap_decomposition(res, router_accuracy=r.value, clusters=None)
    gap = r.gap
    assert gap["o_exp"] == pytest.approx(g.o_exp)
    assert gap["o_repro_crossfit"] == pytest.approx(g.o_repro_crossfit)
    assert gap["noise_share_plugin"] == pytest.approx(g.noise_share["plugin"])
    assert gap["noise_share_crossfit"] == pytest.approx(g.noise_share["crossfit"])
    # the bound includes the router's own noise: delta method by hand
    union = 1 - np.prod(1 - res.p_hat, axis=1)
    from capfront.debias.crossfit import crossfit_rows

    cfr = crossfit_rows(
        np.rint(res.successes).astype(np.int64), res.n_draws.astype(np.int64)
    )
    q = res.p_hat[np.arange(res.n_prompts), choice]
    d, e = union - cfr, union - q
    share = d.mean() / e.mean()
    infl = (d - share * e) / e.mean()
    upper = share + 1.6448536269514722 * infl.std(ddof=1) / np.sqrt(d.size)
    assert gap["noise_share_upper"] == pytest.approx(upper, rel=1e-9)
    assert gap["noise_share_upper"] > gap["noise_share_crossfit"]
    lo, hi = gap["noise_share_ci"]
    assert lo < gap["noise_share_crossfit"] < hi


def test_subsampled_oracle_and_crossfit_are_paired_ratios(res, choice) -> None:
    """Above subsample_prompts the fitted oracle and the cross-fit rows come from
    an evenly spaced subsample; replicates are ratios over the drawn subsample
    prompts (brute force with the explicit counts)."""
    from capfront.debias.crossfit import crossfit_rows

    B, n = 300, 120
    r = cf.evaluate_router(
        res,
        choice,
        n_resamples=B,
        seed=5,
        oracle="crossfit",
        subsample_prompts=n,
        clusters=None,
    )
    sub = np.unique(np.linspace(0, res.n_prompts - 1, n).round().astype(int))
    assert r.fit_prompts == sub.size == n
    assert any("subsample of 120 of the 300" in x for x in r.notes)
    vals, fin = decomposition(res.select(sub), "crossfit")
    assert r.oracle == pytest.approx(fin(vals.mean(axis=0)))
    w = replicate_counts(res, B, seed=5).astype(np.float64)
    q = res.p_hat[np.arange(res.n_prompts), choice]
    R = w @ q / res.n_prompts
    best = (w @ res.p_hat / res.n_prompts).max(axis=1)
    O = (w[:, sub] @ vals[:, 0]) / w[:, sub].sum(axis=1)
    assert r.share_ci == pytest.approx(_percentile((R - best) / (O - best)), abs=1e-10)
    # the gap: Delta on the subsample (difference estimator), E on all prompts
    union = 1 - np.prod(1 - res.p_hat, axis=1)
    S, G = np.rint(res.successes).astype(np.int64), res.n_draws.astype(np.int64)
    d = union[sub] - crossfit_rows(S[sub], G[sub])
    assert r.gap["delta_crossfit"] == pytest.approx(d.mean())
    assert r.gap["o_repro_crossfit"] == pytest.approx(union.mean() - d.mean())
    D_rep = (w[:, sub] @ d) / w[:, sub].sum(axis=1)
    share_rep = D_rep / (w @ (union - q) / res.n_prompts)
    assert r.gap["noise_share_ci"] == pytest.approx(_percentile(share_rep), abs=1e-10)
    # the delta-method bound's SE agrees with the paired bootstrap's SD
    z = 1.6448536269514722
    se = (r.gap["noise_share_upper"] - r.gap["noise_share_crossfit"]) / z
    assert se == pytest.approx(share_rep.std(ddof=1), rel=0.2)
    # without subsampling the SE is smaller (more prompts carry Delta)
    full = cf.evaluate_router(res, choice, n_resamples=20, oracle=None)
    se_full = (full.gap["noise_share_upper"] - full.gap["noise_share_crossfit"]) / z
    assert se_full < se
    assert full.fit_prompts == res.n_prompts and full.to_dict()["fit_prompts"] == 300
    with pytest.raises(ValueError, match="subsample_prompts"):
        cf.evaluate_router(res, choice, subsample_prompts=10)


def test_precomputed_decomposition_oracle_is_reused_paired(res, choice) -> None:
    dec = decomposition(res, "crossfit")
    a = cf.evaluate_router(res, choice, n_resamples=200, oracle="crossfit", gap=False)
    b = cf.evaluate_router(res, choice, n_resamples=200, oracle=dec, gap=False)
    assert b.oracle == a.oracle and b.share_ci == a.share_ci
    with pytest.raises(ValueError, match="one row per prompt"):
        cf.evaluate_router(res.select(np.arange(50)), choice[:50], oracle=dec)


def test_few_draws_no_bound_and_graded_no_gap() -> None:
    small = cf.simulate(200, 4, 5, seed=1)
    ch = np.zeros(200, dtype=int)
    r = cf.evaluate_router(small, ch, oracle=None, n_resamples=20)
    assert r.gap["noise_share_upper"] is None
    assert "20 draws" in r.gap["bound_method"]
    graded = cf.EvalResults.from_arrays(
        np.random.default_rng(0).uniform(size=(50, 3, 4))
    )
    rg = cf.evaluate_router(graded, np.ones(50, dtype=int), oracle=None, n_resamples=20)
    assert rg.gap is None
    assert np.isnan(rg.cost)
    assert any("no cost" in n for n in rg.notes)


def test_several_routers_one_table(res, choice) -> None:
    other = np.full(res.n_prompts, str(res.models[0]))
    t = cf.evaluate_router(
        res, {"random": choice, "first": other}, oracle=None, n_resamples=100, seed=3
    )
    assert isinstance(t, RouterTable)
    single = cf.evaluate_router(res, choice, oracle=None, n_resamples=100, seed=3)
    assert t["random"].ci == single.ci
    frame = t.to_frame()
    assert list(frame.index) == ["random", "first"]
    assert frame.loc["first", "value"] == pytest.approx(res.p_hat[:, 0].mean())
    assert set(t.value.index) == {"random", "first"}
    d = t.to_dict()
    json.dumps(d, default=float)  # scalars and records only
    assert d["routers"]["first"]["regret"][0]["model"] == str(res.models[0])


def test_protocol_single(res, choice) -> None:
    r = cf.evaluate_router(res, choice, oracle=None, n_resamples=50, name="mine")
    assert isinstance(r, RouterResult)
    assert r.level == 0.95 and len(r.ci) == 2 and r.ci[0] < r.value < r.ci[1]
    f = r.to_frame()
    assert f.index[0] == "mine" and f.loc["mine", "value"] == r.value
    assert r.to_dict()["ci"] == list(r.ci)


def test_choice_forms(tmp_path, res, choice) -> None:
    names = res.models[choice].astype(str)
    ref = cf.evaluate_router(res, choice, oracle=None, n_resamples=20).value
    frame = pd.DataFrame({"prompt_id": res.prompts.astype(str), "model": names})
    shuffled = frame.sample(frac=1.0, random_state=0)
    csv = tmp_path / "c.csv"
    shuffled.to_csv(csv, index=False)
    js = tmp_path / "c.json"
    js.write_text(json.dumps(dict(zip(frame.prompt_id, frame.model, strict=True))))
    jsl = tmp_path / "c.jsonl"
    shuffled.to_json(jsl, orient="records", lines=True)
    long = frame.loc[frame.index.repeat(3)].rename(columns={"model": "router_a"})
    series = pd.Series(names, index=res.prompts).iloc[::-1]
    for form in (names, list(names), csv, str(csv), js, jsl, shuffled, series):
        got = cf.evaluate_router(res, form, oracle=None, n_resamples=20)
        assert got.value == ref
    got = cf.evaluate_router(res, (long, "router_a"), oracle=None, n_resamples=20)
    assert got.value == ref
    with_k = shuffled.assign(k=2)
    assert cf.evaluate_router(res, with_k, oracle=None, n_resamples=20).mean_k == 2


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda f: f.assign(model="nope"), "unknown model"),
        (lambda f: f.iloc[1:], "no choice for 1 of"),
        (lambda f: pd.concat([f, f.iloc[:1].assign(model="sim_1")]), "more than one"),
        (lambda f: f.assign(prompt_id="zz" + f.prompt_id), "not in the results"),
        (lambda f: f.assign(k=99), "fewer draws than k"),
        (lambda f: f.rename(columns={"model": "m"}), "no model column"),
    ],
)
def test_bad_choices(tmp_path, res, mutate, message) -> None:
    frame = pd.DataFrame({"prompt_id": res.prompts.astype(str), "model": res.models[0]})
    path = tmp_path / "bad.csv"
    mutate(frame).to_csv(path, index=False)
    with pytest.raises(ValueError, match=message) as err:
        cf.evaluate_router(res, path, oracle=None)
    assert "bad.csv" in str(err.value)


def test_bad_arguments(res) -> None:
    with pytest.raises(ValueError, match="not a file"):
        cf.evaluate_router(res, "missing.csv")
    with pytest.raises(ValueError, match="one choice per prompt"):
        cf.evaluate_router(res, [0, 1])
    with pytest.raises(ValueError, match="indices must lie"):
        cf.evaluate_router(res, np.full(res.n_prompts, 9))
    with pytest.raises(ValueError, match="level"):
        cf.evaluate_router(res, np.zeros(res.n_prompts, int), level=2)
    with pytest.raises(ValueError, match="oracle must be"):
        cf.evaluate_router(res, np.zeros(res.n_prompts, int), oracle=[1])
    with pytest.raises(ValueError, match="cost must be shaped"):
        cf.evaluate_router(res, np.zeros(res.n_prompts, int), cost=np.ones(3))


def test_missing_cells() -> None:
    scores = np.random.default_rng(0).integers(0, 2, (60, 3, 2)).astype(float)
    mask = np.ones((60, 3, 2), bool)
    mask[:10, 2] = False
    r = cf.EvalResults.from_arrays(scores, mask=mask)
    ch = np.zeros(60, dtype=int)
    out = cf.evaluate_router(r, ch, oracle=None, n_resamples=50, cost="unit")
    assert out.value == pytest.approx(r.p_hat[:, 0].mean())
    with pytest.raises(ValueError, match="not run"):
        cf.evaluate_router(r, np.full(60, 2), oracle=None)


def test_plot_routers(res, choice) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = cf.evaluate_router(res, {"a": choice}, oracle=None, n_resamples=20)
    ax = t.plot(frontier=cf.frontier(res))
    labels = ax.get_legend_handles_labels()[1]
    assert "router: a" in labels
    ax2 = plot_routers([{"name": "x", "cost": 1.0, "value": 0.5}])
    assert "router: x" in ax2.get_legend_handles_labels()[1]
    plt.close("all")


def test_report_router_section_and_cli(tmp_path) -> None:
    from capfront.cli import main
    from capfront.report import build_report

    res = cf.simulate(150, 4, 20, n_topics=3, seed=2)
    rng = np.random.default_rng(0)
    choice = res.models[rng.integers(0, 4, 150)].astype(str)
    path = tmp_path / "rnd.csv"
    pd.DataFrame({"prompt_id": res.prompts, "model": choice}).to_csv(path, index=False)
    rep = build_report(res, n_resamples=50, audit_sims=0, routers={"rnd": path})
    sec = rep.data["routers"]
    direct = cf.evaluate_router(
        res, path, oracle="bootstrap_bc", n_resamples=50, frontier=cf.frontier(res)
    )
    row = sec["routers"][0]
    assert row["name"] == "rnd" and row["value"] == pytest.approx(direct.value)
    assert row["ci"] == pytest.approx(list(direct.ci))
    assert np.isfinite(direct.oracle_gain_share)
    assert row["oracle_gain_share"] == pytest.approx(direct.oracle_gain_share)
    assert sec["best_single"]["tied"][0] == cf.best_single(res)[0]
    md = rep.to_markdown()
    assert "Routers (paired prompt bootstrap)" in md
    assert "Best single model and the models tied with it" in md
    assert "routers" not in build_report(res, n_resamples=20, audit_sims=0).data
    out = tmp_path / "out"
    code = main(
        [
            "report",
            str(_long_csv(res, tmp_path)),
            "--router",
            f"rnd={path}",
            "--resamples",
            "50",
            "--audit-sims",
            "0",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    data = json.loads((out / "report.json").read_text())
    assert data["routers"]["routers"][0]["name"] == "rnd"
    assert (out / "frontier.png").stat().st_size > 0
    assert main(["report", str(path), "--router", "bad"]) == 1


def _long_csv(res: cf.EvalResults, tmp_path) -> object:
    from capfront.cli import simulated_frame

    path = tmp_path / "long.csv"
    simulated_frame(res).to_csv(path, index=False)
    return path
