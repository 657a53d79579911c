"""Graded-score Monte Carlo (capfront.debias.graded): the three backends agree bit
for bit, the orderings follow the documented Philox layout, the Monte Carlo
converges to the exact hypergeometric answers on 0/1 scores, and the estimate does
not depend on seeds' bookkeeping (threads, chunks, prompt and model order)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capfront as cf
from capfront import _philox
from capfront.debias import graded
from capfront.debias.crossfit import crossfit_rows
from capfront.debias.extrapolation import curve_rows

BACKENDS = cf.available_backends()


def _ragged(rng: np.random.Generator, N: int, L: int, G: int, p_valid: float):
    """Scores (graded or with ties) and a mask whose observed cells have >= 2
    valid draws and whose prompts all have an observed cell."""
    kind = rng.integers(3)
    if kind == 0:
        scores = rng.random((N, L, G))
    elif kind == 1:
        scores = rng.integers(0, 3, (N, L, G)) / 2.0  # many exact ties
    else:
        scores = (rng.random((N, L, G)) < 0.5).astype(float)
    valid = rng.random((N, L, G)) < p_valid
    valid[valid.sum(axis=2) == 1, :2] = True
    valid[:, 0, :2] = True  # every prompt has an observed cell
    return scores, valid


def _naive_orderings_crossfit_curve(scores, valid, sizes, pk, mk, seed, n_splits):
    """Slow reference written from the documented layout (plain loops and
    ``_philox.stream_words``): per-prompt cross-fit and curve values."""
    N, L, G = scores.shape
    cf_rows = np.zeros(N)
    curve = np.zeros((N, len(sizes)))
    for n in range(N):
        cells = [scores[n, l][valid[n, l]] for l in range(L)]
        gmin = min(len(a) for a in cells if len(a))
        for s in range(n_splits):
            prefix = []
            for l, a in enumerate(cells):
                m = len(a)
                if m == 0:
                    prefix.append(None)
                    continue
                stride = 4 * ((m + 3) // 4)
                w = _philox.stream_words(seed, int(pk[n]), int(mk[l]), s * stride, m)
                total = float(np.cumsum(a)[-1])  # original order
                a = a.copy()
                for i in range(m - 1):  # forward Fisher-Yates
                    j = i + ((int(w[i]) * (m - i)) >> 32)
                    a[i], a[j] = a[j], a[i]
                prefix.append((np.concatenate([[0.0], np.cumsum(a)]), total))
            obs = [p for p in prefix if p is not None]
            vals = []
            for g in sorted({gmin // 2, gmin - gmin // 2}):
                best = max(c[g] / g for c, _ in obs)
                rest = [
                    (total - c[g]) / (len(c) - 1 - g)
                    for c, total in obs
                    if c[g] / g >= best - 1e-12
                ]
                vals.append(np.mean(rest))
            cf_rows[n] += np.mean(vals)
            for k, g in enumerate(sizes):
                curve[n, k] += max(c[g] / g for c, _ in obs)
    return cf_rows / n_splits, curve / n_splits


# ----------------------------------------------------------- backends agree
@settings(max_examples=60, deadline=None)
@given(
    rng_seed=st.integers(0, 2**32 - 1),
    N=st.integers(1, 7),
    L=st.integers(1, 4),
    G=st.integers(2, 9),
    p_valid=st.sampled_from([1.0, 0.7, 0.4]),
    seed=st.integers(0, 2**64 - 1),
    n_splits=st.sampled_from([1, 2, 5, 64, 67]),
)
def test_backends_agree(rng_seed, N, L, G, p_valid, seed, n_splits):
    rng = np.random.default_rng(rng_seed)
    scores, valid = _ragged(rng, N, L, G, p_valid)
    pk = rng.integers(0, 2**32, N, dtype=np.uint32)
    mk = rng.permutation(2**16)[:L].astype(np.uint32)
    gmin = int(valid.sum(axis=2)[valid.any(axis=2)].min())
    sizes = np.arange(1, gmin + 1)
    kw = {"n_splits": n_splits, "seed": seed, "prompt_key": pk, "model_key": mk}
    ref_cf = graded.graded_crossfit_rows(scores, valid, backend="numpy", **kw)
    ref_cu = graded.graded_curve_rows(scores, valid, sizes, backend="numpy", **kw)
    assert ref_cf.shape == (N,) and ref_cu.shape == (N, gmin)
    for name in BACKENDS:
        got_cf = graded.graded_crossfit_rows(scores, valid, backend=name, **kw)
        got_cu = graded.graded_curve_rows(scores, valid, sizes, backend=name, **kw)
        np.testing.assert_allclose(got_cf, ref_cf, rtol=0, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(got_cu, ref_cu, rtol=0, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("case", range(4))
def test_matches_naive_layout(case):
    """The documented ordering (forward Fisher-Yates on the cell's Philox stream,
    the total in the original order) written out with plain loops."""
    rng = np.random.default_rng(100 + case)
    N, L, G = 3, 1 + case, 2 + 2 * case
    scores, valid = _ragged(rng, N, L, G, 0.6)
    pk = rng.integers(0, 2**32, N, dtype=np.uint32)
    mk = np.arange(7, 7 + L, dtype=np.uint32)
    gmin = int(valid.sum(axis=2)[valid.any(axis=2)].min())
    sizes = np.arange(1, gmin + 1)
    want_cf, want_cu = _naive_orderings_crossfit_curve(
        scores, valid, sizes, pk, mk, 2**40 + case, 6
    )
    kw = {"n_splits": 6, "seed": 2**40 + case, "prompt_key": pk, "model_key": mk}
    for name in BACKENDS:
        got_cf = graded.graded_crossfit_rows(scores, valid, backend=name, **kw)
        got_cu = graded.graded_curve_rows(scores, valid, sizes, backend=name, **kw)
        np.testing.assert_allclose(got_cf, want_cf, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got_cu, want_cu, rtol=0, atol=1e-12)


def test_edges_one_model_two_draws(backend):
    """L = 1, G = 2: each split scores the draw not selected, so with one split the
    value is one of the two draws; the curve at g = G is the cell mean."""
    x = np.array([[[0.2, 0.9]], [[0.4, 0.4]]])
    one = graded.graded_crossfit_rows(x, n_splits=1, seed=3, backend=backend)
    assert min(abs(one[0] - 0.2), abs(one[0] - 0.9)) < 1e-12  # c[2] - c[1]
    assert one[1] == pytest.approx(0.4, abs=1e-12)
    many = graded.graded_crossfit_rows(x, n_splits=4000, seed=3, backend=backend)
    assert many[0] == pytest.approx(0.55, abs=0.03)
    curve = graded.graded_curve_rows(x, None, [1, 2], n_splits=50, backend=backend)
    assert curve[:, 1] == pytest.approx([0.55, 0.4], abs=1e-12)
    assert 0.2 <= curve[0, 0] <= 0.9 and curve[1, 0] == pytest.approx(0.4)


def test_identical_models_and_constant_cells(backend):
    res = cf.EvalResults.from_arrays(np.full((3, 2, 4), 0.5))
    for m in ("crossfit", "extrapolation", "jackknife"):
        value = cf.debiased_oracle(res, m, backend=backend, n_splits=4).value
        assert value == pytest.approx(0.5, abs=1e-12)


# ------------------------------------------------ convergence on 0/1 scores
def test_converges_to_exact_binary():
    """With 0/1 scores the Monte Carlo estimates the exact hypergeometric
    expectations of the count path (ragged draws included)."""
    rng = np.random.default_rng(7)
    N, L, G = 200, 3, 8
    p = rng.beta(1, 1, (N, L, 1))
    scores = (rng.random((N, L, G)) < p).astype(float)
    mask = np.ones((N, L, G), dtype=bool)
    mask[: N // 2, 1, 6:] = False  # ragged: 6 draws in some cells
    res = cf.EvalResults.from_arrays(scores, mask=mask)
    S = np.rint(res.successes).astype(np.int64)
    n_draws = np.asarray(res.n_draws, dtype=np.int64)
    n_splits = 600

    mc = graded.crossfit_graded(res, n_splits=n_splits, seed=1).values[:, 0]
    exact = crossfit_rows(S, n_draws, backend="numpy")
    # per-prompt value lies in [0, 1]: MC SD <= 0.5 / sqrt(n_splits) per prompt
    sd = 0.5 / np.sqrt(n_splits)
    assert np.abs(mc - exact).max() < 5 * sd
    assert mc.mean() == pytest.approx(exact.mean(), abs=4 * sd / np.sqrt(N))

    sizes = np.arange(1, 7)
    mc_curve = graded.curve_rows_graded(res, sizes, n_splits=n_splits, seed=2)
    exact_rows = curve_rows(S, n_draws, sizes, "numpy")
    assert np.abs(mc_curve - exact_rows).max() < 5 * sd
    np.testing.assert_allclose(
        mc_curve.mean(axis=0),
        cf.subsample_curve(S, n_draws, sizes),
        atol=4 * sd / np.sqrt(N),
    )


def test_debiased_oracle_graded_uses_backend(monkeypatch):
    rng = np.random.default_rng(3)
    res = cf.EvalResults.from_arrays(rng.random((20, 3, 6)))
    values = {
        name: cf.debiased_oracle(res, "crossfit", backend=name, n_splits=8).value
        for name in BACKENDS
    }
    assert max(values.values()) - min(values.values()) < 1e-12

    def boom(*args, **kwargs):
        raise RuntimeError("numpy path taken")

    from capfront._kernels import graded as graded_kernels

    monkeypatch.setattr(graded_kernels, "_crossfit_rows_np", boom)
    monkeypatch.setattr(graded_kernels, "_curve_rows_np", boom)
    for m in ("crossfit", "extrapolation", "jackknife"):
        with pytest.raises(RuntimeError, match="numpy path"):
            cf.debiased_oracle(res, m, backend="numpy")


# ------------------------------------------------------------ determinism
def test_deterministic_for_a_seed(backend, threads, monkeypatch):
    rng = np.random.default_rng(5)
    scores = rng.random((45, 4, 7))
    valid = rng.random(scores.shape) < 0.8
    valid[:, :, :2] = True
    kw = {"n_splits": 70, "backend": backend}
    a = graded.graded_crossfit_rows(scores, valid, seed=11, **kw)
    threads(1)
    b = graded.graded_crossfit_rows(scores, valid, seed=11, **kw)
    threads(2)
    c = graded.graded_crossfit_rows(scores, valid, seed=11, **kw)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(
        a, graded.graded_crossfit_rows(scores, valid, seed=12, **kw)
    )
    from capfront._kernels import graded as graded_kernels

    # NumPy chunking does not matter
    monkeypatch.setattr(graded_kernels, "_NUMPY_CHUNK", 4)
    d = graded.graded_curve_rows(scores, valid, [1, 3], seed=11, **kw)
    e = graded.graded_curve_rows(
        scores, valid, [1, 3], seed=11, backend="numpy", n_splits=70
    )
    np.testing.assert_allclose(d, e, rtol=0, atol=1e-12)


def test_prompt_and_model_permutations():
    """Streams are keyed by the labels: permuting prompts or models of the results
    permutes the per-prompt values along and leaves the estimate unchanged."""
    rng = np.random.default_rng(9)
    N, L, G = 30, 4, 6
    scores = rng.random((N, L, G))
    mask = rng.random((N, L, G)) < 0.8
    mask[:, :, :4] = True
    models = [f"m{i}" for i in range(L)]
    prompts = [f"q{i}" for i in range(N)]
    res = cf.EvalResults.from_arrays(scores, mask=mask, models=models, prompts=prompts)
    pp, pm = rng.permutation(N), rng.permutation(L)
    perm = cf.EvalResults.from_arrays(
        scores[pp][:, pm],
        mask=mask[pp][:, pm],
        models=[models[i] for i in pm],
        prompts=[prompts[i] for i in pp],
    )
    for name in BACKENDS:
        a = graded.crossfit_graded(res, n_splits=9, seed=4, backend=name)
        b = graded.crossfit_graded(perm, n_splits=9, seed=4, backend=name)
        np.testing.assert_allclose(b.values, a.values[pp], rtol=0, atol=1e-12)
        assert b.estimate() == pytest.approx(a.estimate(), abs=1e-12)
        ca = graded.curve_rows_graded(res, [1, 2, 4], n_splits=9, backend=name)
        cb = graded.curve_rows_graded(perm, [1, 2, 4], n_splits=9, backend=name)
        np.testing.assert_allclose(cb, ca[pp], rtol=0, atol=1e-12)
        for m in ("extrapolation", "jackknife"):
            va = cf.debiased_oracle(res, m, backend=name, n_splits=9).value
            vb = cf.debiased_oracle(perm, m, backend=name, n_splits=9).value
            assert va == pytest.approx(vb, abs=1e-9)
    # keys follow the labels, so a subset of models keeps its cells' orderings
    np.testing.assert_array_equal(
        graded.model_keys(models)[1:3], graded.model_keys(models[1:3])
    )


def test_model_key_collisions_fall_back_to_ranks(monkeypatch):
    monkeypatch.setattr(graded, "label_keys", lambda x: np.zeros(len(x), np.uint32))
    np.testing.assert_array_equal(graded.model_keys(["b", "a", "c"]), [1, 0, 2])


# ----------------------------------------------------------------- errors
def test_errors():
    one = cf.EvalResults.from_arrays(np.random.default_rng(0).random((3, 2, 1)))
    for f in (graded.crossfit_graded, graded.jackknife_graded):
        with pytest.raises(ValueError, match="at least 2 generations"):
            f(one)
    three = cf.EvalResults.from_arrays(np.full((2, 2, 3), 0.3))
    with pytest.raises(ValueError, match="at least 4 generations"):
        graded.extrapolation_graded(three)
    res = cf.EvalResults.from_arrays(np.full((2, 2, 4), 0.3))
    with pytest.raises(ValueError, match="lam"):
        graded.extrapolation_graded(res, lam=-1.0)
    with pytest.raises(ValueError, match="n_splits"):
        graded.crossfit_graded(res, n_splits=0)
    with pytest.raises(ValueError, match="seed"):
        graded.crossfit_graded(res, seed=-1)
    with pytest.raises(ValueError, match="sizes must lie in 1..4"):
        graded.curve_rows_graded(res, [5])
    with pytest.raises(ValueError, match="unknown backend"):
        graded.crossfit_graded(res, backend="fortran")
    sums = cf.EvalResults.from_arrays(np.full((2, 2, 4), 0.3), keep_scores=False)
    with pytest.raises(ValueError, match="raw"):
        graded.crossfit_graded(sums)
    x = np.full((2, 2, 3), 0.5)
    ragged = np.ones(x.shape, dtype=bool)
    ragged[1, 1, 1:] = False  # one observed cell with a single draw
    for name in BACKENDS:
        with pytest.raises(ValueError, match="at least 2 generations"):
            graded.graded_crossfit_rows(x, ragged, backend=name)
    with pytest.raises(ValueError, match="valid must be a boolean"):
        graded.graded_crossfit_rows(x, ragged.astype(int))
    with pytest.raises(ValueError, match="shaped"):
        graded.graded_crossfit_rows(x[0])
    empty = np.ones(x.shape, dtype=bool)
    empty[0] = False
    with pytest.raises(ValueError, match="no model with a valid draw"):
        graded.graded_crossfit_rows(x, empty)
    with pytest.raises(ValueError, match="NaN"):
        graded.graded_crossfit_rows(np.where(ragged, np.nan, x), ragged)
    with pytest.raises(ValueError, match="prompt_key"):
        graded.graded_crossfit_rows(x, prompt_key=np.arange(5))


@pytest.mark.skipif("cpp" not in BACKENDS, reason="compiled extension not built")
def test_binding_checks():
    core = cf._backend.core()
    x = np.full((2, 2, 3), 0.5)
    ok = np.ones(x.shape, dtype=bool)
    pk, mk = np.arange(2, dtype=np.uint32), np.arange(2, dtype=np.uint32)
    bad = ok.copy()
    bad[0, 0, 1:] = False
    with pytest.raises(ValueError, match="at least 2 valid draws"):
        core.graded_crossfit_rows(x, bad, pk, mk, 0, 4)
    none = ok.copy()
    none[1] = False
    with pytest.raises(ValueError, match="every prompt"):
        core.graded_curve_rows(x, none, np.array([1]), pk, mk, 0, 4)
    with pytest.raises(ValueError, match="sizes"):
        core.graded_curve_rows(x, ok, np.array([4]), pk, mk, 0, 4)
    with pytest.raises(ValueError, match="n_splits"):
        core.graded_crossfit_rows(x, ok, pk, mk, 0, 0)
    with pytest.raises(ValueError, match="model_key"):
        core.graded_crossfit_rows(x, ok, pk, mk[:1], 0, 4)
    with pytest.raises(ValueError, match="valid"):
        core.graded_crossfit_rows(x, ok[:, :1], pk, mk, 0, 4)


def test_numba_bodies_as_python():
    """The Numba kernels' bodies run as plain Python (no numba) and agree."""
    from capfront._kernels import graded as nbg

    rng = np.random.default_rng(4)
    scores, valid = _ragged(rng, 3, 2, 5, 0.7)
    pk = np.array([5, 6, 7], dtype=np.uint32)
    mk = np.array([1, 9], dtype=np.uint32)
    sizes = np.array([1, 2], dtype=np.int64)
    seed = 2**33 + 5
    lo, hi = _philox.philox_key(seed)
    kw = {"n_splits": 3, "seed": seed, "prompt_key": pk, "model_key": mk}
    cross = getattr(nbg.graded_crossfit_rows_nb, "py_func", nbg.graded_crossfit_rows_nb)
    curve = getattr(nbg.graded_curve_rows_nb, "py_func", nbg.graded_curve_rows_nb)
    np.testing.assert_allclose(
        cross(scores, valid, pk, mk, lo, hi, 3),
        graded.graded_crossfit_rows(scores, valid, backend="numpy", **kw),
        rtol=0,
        atol=1e-12,
    )
    np.testing.assert_allclose(
        curve(scores, valid, sizes, pk, mk, lo, hi, 3),
        graded.graded_curve_rows(scores, valid, sizes, backend="numpy", **kw),
        rtol=0,
        atol=1e-12,
    )


def test_graded_jackknife_is_clipped_to_the_feasible_range():
    """Identical graded models with rare partial credit: the jackknife's correction
    overshoots below 0; the estimate is clipped, with a note (as for counts)."""
    rng = np.random.default_rng(0)
    x = (rng.random((50, 1, 6)) < 0.02) * 0.9
    res = cf.EvalResults.from_arrays(np.repeat(x, 3, axis=1))
    assert not res.is_binary
    out = cf.debiased_oracle(res, "jackknife")
    assert out.value == 0.0
    assert out.diagnostics["clipped"] and out.diagnostics["unclipped_value"] < 0
