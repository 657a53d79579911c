"""compare / tied_with_best / the paired replicate engine: exact references
(scipy.stats.binomtest, explicit bootstrap counts, Holm by definition) and
simulation with known truth (interval coverage, clustered SEs)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

import capfront as cf
from capfront.bootstrap import PerPrompt, replicate_counts
from capfront.compare import holm, mcnemar_midp
from capfront.paired import cluster_replicate_means, replicate_means


def _binary_pair(rng, n, pa, pb, rho=0.5):
    """Correlated binary outcomes of two models on n prompts (single draw)."""
    u = rng.uniform(size=n)
    shared = rng.uniform(size=n) < rho
    v = np.where(shared, u, rng.uniform(size=n))
    return (u < pa).astype(float), (v < pb).astype(float)


def _results(x, y):
    scores = np.stack([x, y], axis=1)[:, :, None]
    return cf.EvalResults.from_arrays(scores)


# --------------------------------------------------------------------- engine
@pytest.mark.parametrize("stratify", [None, "topic"])
def test_replicate_means_are_cf_bootstrap_resamples(stratify) -> None:
    res = cf.simulate(250, 4, 5, n_topics=3, seed=2)
    V = np.column_stack(
        [res.p_hat[:, 0], res.p_hat[:, 1], np.random.default_rng(0).normal(size=250)]
    )
    m = replicate_means(res, V, n_resamples=64, seed=7, stratify=stratify)
    c = replicate_counts(res, 64, seed=7, stratify=stratify).astype(float)
    np.testing.assert_allclose(m, c @ V / 250, rtol=0, atol=1e-13)
    b = cf.bootstrap(
        res,
        PerPrompt(V, lambda x: x[0] - x[1] + x[2]),
        n_resamples=64,
        seed=7,
        stratify=stratify,
        keep_replicates=True,
    )
    np.testing.assert_allclose(b.replicates, m[:, 0] - m[:, 1] + m[:, 2], atol=1e-13)


def test_cluster_replicates_brute_force() -> None:
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 12, 300)
    V = rng.normal(size=(300, 2))
    m = cluster_replicate_means(V, codes, n_resamples=50, seed=3)
    w = replicate_counts(12, 50, seed=3).astype(float)
    for b in range(50):
        idx = np.concatenate(
            [np.flatnonzero(codes == c) for c in range(12) for _ in range(int(w[b, c]))]
        )
        np.testing.assert_allclose(m[b], V[idx].mean(axis=0), atol=1e-12)


# --------------------------------------------------------------------- McNemar
def test_mcnemar_midp_equals_exact_binomial() -> None:
    for n01, n10 in itertools.product(range(0, 26, 3), range(0, 31, 4)):
        n = n01 + n10
        got = mcnemar_midp(n01, n10)
        if n == 0:
            assert got == 1.0
            continue
        k = min(n01, n10)
        exact = stats.binomtest(k, n, 0.5).pvalue  # two-sided exact binomial
        want = 1.0 if 2 * k == n else exact - stats.binom.pmf(k, n, 0.5)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
        # by definition (Fagerland et al. 2013): twice the one-sided tail with the
        # observed outcome counted half, capped at 1
        pmf = [stats.binom.pmf(i, n, 0.5) for i in range(k + 1)]
        brute = 2 * (sum(pmf[:k]) + 0.5 * pmf[k])
        assert got == pytest.approx(min(1.0, brute), abs=1e-12)


def test_compare_binary_single_draw() -> None:
    rng = np.random.default_rng(4)
    x, y = _binary_pair(rng, 400, 0.7, 0.6)
    res = _results(x, y)
    c = cf.compare(res, "model_0", "model_1", n_resamples=500, seed=2)
    assert c.value == pytest.approx((x - y).mean())
    n01, n10 = int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
    assert c.discordant == (n01, n10)
    assert c.p_value == pytest.approx(mcnemar_midp(n01, n10))
    assert "McNemar" in c.p_value_method
    w = replicate_counts(res, 500, seed=2).astype(float) / 400
    a = 0.025
    ref = np.percentile(w @ (x - y), [100 * a, 100 * (1 - a)])
    assert c.ci == pytest.approx(tuple(ref), abs=1e-12)
    assert c.se == pytest.approx((x - y).std(ddof=1) / 20)
    assert c.to_frame().iloc[0]["value"] == c.value
    assert c.to_dict()["ci"] == list(c.ci)
    # b defaults to the best single model
    best = cf.compare(res, "model_1")
    assert best.b == "model_0" and best.value == pytest.approx(-c.value)


def test_paired_bootstrap_coverage_by_simulation() -> None:
    """The 95% interval of a known paired difference covers it ~95% of the time."""
    rng = np.random.default_rng(11)
    n_rep, hits = 300, 0
    truth = 0.65 - 0.6
    for r in range(n_rep):
        x, y = _binary_pair(rng, 300, 0.65, 0.6, rho=0.6)
        c = cf.compare(_results(x, y), "model_0", "model_1", n_resamples=400, seed=r)
        hits += c.ci[0] <= truth <= c.ci[1]
    cover = hits / n_rep
    # binomial SE of the coverage at 300 repetitions: 1.3 points
    assert 0.91 <= cover <= 0.985, cover


def test_clustered_se_matches_brute_force_cluster_bootstrap() -> None:
    rng = np.random.default_rng(5)
    C, per = 40, 15
    codes = np.repeat(np.arange(C), per)
    effect = rng.normal(0, 0.25, C)[codes]  # clusters shift the difference
    base = rng.uniform(0.3, 0.7, codes.size)
    pa = np.clip(base + effect, 0.02, 0.98)
    x = (rng.uniform(size=codes.size) < pa).astype(float)
    y = (rng.uniform(size=codes.size) < base).astype(float)
    res = _results(x, y)
    c = cf.compare(res, "model_0", "model_1", cluster=codes, n_resamples=2000)
    # brute force: resample clusters with numpy, SD of the mean difference
    d = x - y
    boot = []
    for _ in range(4000):
        pick = rng.integers(0, C, C)
        idx = (pick[:, None] * per + np.arange(per)).ravel()
        boot.append(d[idx].mean())
    assert c.se == pytest.approx(np.std(boot, ddof=1), rel=0.08)
    assert c.n_clusters == C
    assert "cluster" in c.ci_method and "cluster-robust" in c.p_value_method
    naive = cf.compare(res, "model_0", "model_1")
    assert c.se > 1.3 * naive.se  # clustering matters here
    lo, hi = c.ci
    assert hi - lo == pytest.approx(2 * 1.96 * c.se, rel=0.15)


def test_draws_within_prompt_se_by_simulation() -> None:
    """G > 1: the prompt-level SE matches the true sampling SD of the difference;
    treating every draw as independent understates it."""
    rng = np.random.default_rng(8)
    N, G = 200, 10
    diffs, ses, unpaired = [], [], []
    for _ in range(150):
        d = rng.normal(0, 1.5, N)
        pa = 1 / (1 + np.exp(-(0.5 + d)))
        pb = 1 / (1 + np.exp(-(0.2 + d)))  # same prompt difficulty: correlated
        S = np.stack([rng.binomial(G, pa), rng.binomial(G, pb)], axis=1)
        res = cf.EvalResults.from_counts(S, G)
        c = cf.compare(res, "model_0", "model_1", n_resamples=50)
        diffs.append(c.value)
        ses.append(c.se)
        unpaired.append(c.se_unpaired)
    sd = np.std(diffs, ddof=1)
    assert np.mean(ses) == pytest.approx(sd, rel=0.15)
    assert np.mean(unpaired) > 1.5 * sd  # unpaired ignores the shared difficulty


def test_compare_routers_and_errors() -> None:
    res = cf.simulate(200, 4, 5, seed=3)
    ch = np.random.default_rng(0).integers(0, 4, 200)
    c = cf.compare(res, "rnd", "best", routers={"rnd": ch})
    rows = np.arange(200)
    best = cf.best_single(res)[0]
    assert c.a == "rnd" and c.b == best
    want = (res.p_hat[rows, ch] - res.p_hat[:, list(res.models).index(best)]).mean()
    assert c.value == pytest.approx(want)
    r = cf.evaluate_router(res, ch, oracle=None, n_resamples=20, name="rr")
    assert cf.compare(res, r, "best").value == pytest.approx(want)
    assert cf.compare(res, ch, best).value == pytest.approx(want)
    assert "normal" in c.p_value_method  # G = 5: not McNemar
    with pytest.raises(ValueError, match="neither a model"):
        cf.compare(res, "nope", "best")
    with pytest.raises(ValueError, match="cluster"):
        cf.compare(res, best, "best", cluster="benchmark")
    with pytest.raises(ValueError, match="one label per prompt"):
        cf.compare(res, best, "best", cluster=[1, 2])


# --------------------------------------------------------------------- tied set
def test_holm_by_definition() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        p = rng.uniform(0, 0.2, 6)
        adj = holm(p)
        order = np.argsort(p)
        m = p.size
        for i, j in enumerate(order):
            want = max(min(1.0, (m - t) * p[order[t]]) for t in range(i + 1))
            assert adj[j] == pytest.approx(want)


def test_tied_with_best() -> None:
    rng = np.random.default_rng(3)
    N = 600
    p = np.array([0.80, 0.795, 0.60, 0.79])
    u = rng.uniform(size=N)  # one shared difficulty: paired outcomes
    noise = rng.uniform(size=(N, 4)) < 0.2
    scores = np.where(noise, rng.uniform(size=(N, 4)) < p, u[:, None] < p)
    res = cf.EvalResults.from_arrays(scores[:, :, None].astype(float))
    t = cf.tied_with_best(res)
    acc = scores.mean(axis=0)
    assert t.best == f"model_{int(acc.argmax())}"
    assert "model_2" not in t.tied  # 20 points worse
    assert {"model_0", "model_1", "model_3"} <= set(t.tied)
    assert not t.distinguishable
    tab = t.table
    tested = tab["p_value"].notna()
    np.testing.assert_allclose(
        tab.loc[tested, "p_holm"], holm(tab.loc[tested, "p_value"])
    )
    # the p-values are compare()'s
    for m in tab.index[tested]:
        assert tab.loc[m, "p_value"] == pytest.approx(
            cf.compare(res, t.best, m, n_resamples=10).p_value
        )
    assert t.ci[0] < t.value < t.ci[1]
    d = t.to_dict()
    assert d["tied"] == t.tied and d["distinguishable"] is False
    clear = cf.EvalResults.from_arrays(
        np.stack([u < 0.9, u < 0.3], axis=1)[:, :, None].astype(float)
    )
    assert cf.tied_with_best(clear).distinguishable
