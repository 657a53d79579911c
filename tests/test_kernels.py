"""Foundation kernels on every backend against the slow references in naive.py."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capfront as cf
import naive
from capfront.suffstats import count_dtype, sufficient_stats

STAT_NAMES = (
    "successes",
    "sum_sq",
    "n_draws",
    "max_score",
    "cost_sum",
    "latency_sum",
    "latency_max",
)
FLAG_NAMES = (
    "nonfinite_scores",
    "out_of_range_scores",
    "nonbinary_scores",
    "bad_cost",
    "bad_latency",
)


def relayout(x: np.ndarray, layout: str) -> np.ndarray:
    """The same values in a non-default memory layout."""
    if layout == "transposed":  # Fortran order: no axis is contiguous in C terms
        return np.asfortranarray(x)
    if layout == "sliced":  # every other element of a bigger buffer
        big = np.zeros((*x.shape[:-1], 2 * x.shape[-1]), dtype=x.dtype)
        big[..., ::2] = x
        return big[..., ::2]
    if layout == "byteswapped" and x.dtype.itemsize > 1:
        return x.astype(x.dtype.newbyteorder())
    if layout == "reversed":  # negative strides
        return np.ascontiguousarray(x[::-1])[::-1]
    return x


LAYOUTS = ("c", "transposed", "sliced", "byteswapped", "reversed")


# ----------------------------------------------------------- sufficient statistics


@st.composite
def score_tensors(draw):
    N = draw(st.integers(1, 5))
    L = draw(st.integers(1, 4))
    G = draw(st.integers(1, 9))
    dtype = draw(st.sampled_from(["bool", "uint8", "float32", "float64"]))
    content = draw(st.sampled_from(["binary", "all0", "all1", "graded", "bad"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = (N, L, G)
    if content == "all0":
        x = np.zeros(shape)
    elif content == "all1":
        x = np.ones(shape)
    else:
        x = (rng.random(shape) < rng.random()).astype(np.float64)
    if content == "graded" and dtype.startswith("float"):
        x = np.where(rng.random(shape) < 0.5, rng.random(shape), x)
    if content == "bad":  # values the flags must count
        pool = [2.0, 255.0] if dtype == "uint8" else [0.0]
        if dtype.startswith("float"):
            pool = [np.nan, np.inf, -np.inf, -0.5, 1.5, 0.25]
        x.flat[rng.integers(0, x.size, size=3)] = rng.choice(pool, size=3)
    x = x.astype(dtype)
    mask = None
    if draw(st.booleans()):
        mask = rng.random(shape) < 0.7
        mask[0, 0, :] = draw(st.booleans())  # a cell that was never run (or full)
    cost = latency = None
    if draw(st.booleans()):
        cost = rng.exponential(size=shape)
        latency = rng.exponential(size=shape)
        if content == "bad":
            cost.flat[0] = -1.0
            latency.flat[-1] = np.nan
    layout = draw(st.sampled_from(LAYOUTS))
    return x, mask, cost, latency, layout


@given(score_tensors())
def test_sufficient_stats_match_naive(case):
    x, mask, cost, latency, layout = case
    expected = naive.suffstats(x, mask, cost, latency)
    xs = relayout(x, layout)
    ms = None if mask is None else relayout(mask, layout)
    cs = None if cost is None else relayout(cost, layout)
    ls = None if latency is None else relayout(latency, layout)
    flagged = expected["nonfinite_scores"] or expected["out_of_range_scores"]
    for backend in cf.available_backends():
        got = sufficient_stats(xs, ms, cs, ls, backend=backend)
        # compact storage: binary counts in the smallest dtype holding G (as
        # from_counts stores them) with sum_sq / max_score derived, and without a
        # mask n_draws is a broadcast view of G
        if not flagged and expected["nonbinary_scores"] == 0:
            assert got.successes.dtype == count_dtype(x.shape[2]), backend
            assert got.arrays()["sum_sq"] is None and got.arrays()["max_score"] is None
        if mask is None:
            assert got.n_draws.strides == (0, 0), backend
        for name in STAT_NAMES:
            want, have = expected[name], getattr(got, name)
            if flagged and name in ("sum_sq", "max_score"):
                continue  # unspecified for data EvalResults rejects
            if want is None:
                assert have is None, (backend, name)
                continue
            assert have.shape == want.shape
            if name in ("max_score", "latency_max"):  # unspecified with NaN inputs
                defined = ~(expected["n_draws"] > 0) | np.isfinite(want)
                want, have = want[defined], have[defined]
            if name == "n_draws":
                assert have.dtype == np.int32
                np.testing.assert_array_equal(have, want, err_msg=f"{backend} {name}")
            else:
                np.testing.assert_allclose(
                    have, want, rtol=1e-12, atol=0, err_msg=f"{backend} {name}"
                )
        assert {k: got.flags[k] for k in FLAG_NAMES} == {
            k: expected[k] for k in FLAG_NAMES
        }, backend


def test_sufficient_stats_known_values(backend):
    scores = np.array([[[1, 0, 1], [0, 0, 0]], [[1, 1, 1], [0, 1, 0]]], np.uint8)
    mask = np.ones_like(scores, dtype=bool)
    mask[1, 1] = False  # cell not run
    cost = np.arange(12, dtype=float).reshape(2, 2, 3)
    s = sufficient_stats(scores, mask, cost, cost, backend=backend)
    np.testing.assert_array_equal(s.successes, [[2, 0], [3, 0]])
    np.testing.assert_array_equal(s.n_draws, [[3, 3], [3, 0]])
    np.testing.assert_array_equal(s.max_score, [[1, 0], [1, np.nan]])
    np.testing.assert_array_equal(s.cost_sum, [[3, 12], [21, 0]])
    np.testing.assert_array_equal(s.latency_max, [[2, 5], [8, 0]])
    assert s.is_binary


@pytest.mark.parametrize("dtype", ["bool", "uint8", "float32", "float64", "int64"])
def test_sufficient_stats_dtypes_agree(dtype, backend):
    rng = np.random.default_rng(3)
    x = (rng.random((7, 5, 33)) < 0.4).astype(dtype)  # G not a multiple of 8
    want = sufficient_stats(x.astype(np.float64), backend="numpy")
    got = sufficient_stats(x, backend=backend)
    np.testing.assert_array_equal(got.successes, want.successes)
    np.testing.assert_array_equal(got.max_score, want.max_score)
    assert got.flags == want.flags


def test_sufficient_stats_bad_arguments(backend):
    x = np.zeros((2, 3, 4), np.uint8)
    with pytest.raises(ValueError, match="shaped"):
        sufficient_stats(x[0], backend=backend)
    with pytest.raises(ValueError, match="mask"):
        sufficient_stats(x, np.ones((2, 3, 5), bool), backend=backend)
    with pytest.raises(ValueError, match="cost"):
        sufficient_stats(x, cost=np.ones((2, 3)), backend=backend)
    with pytest.raises(ValueError, match="dtype"):
        sufficient_stats(x.astype(str), backend=backend)


# ------------------------------------------------------- thread-count independence


@pytest.mark.skipif("cpp" not in cf.available_backends(), reason="no _core")
def test_cpp_bit_identical_for_1_and_2_threads(threads):
    rng = np.random.default_rng(11)
    N, L, G = 3 * 2048 + 37, 4, 6  # several fixed 2048-row blocks, plus a tail
    graded = rng.random((N, L, G))
    binary = (graded < 0.5).astype(np.uint8)
    mask = rng.random((N, L, G)) < 0.9
    cost = rng.exponential(size=(N, L, G))
    p = rng.random((N, L))
    n_draws = rng.integers(0, 30, size=(N, L))
    n_draws[:, 0] = 30
    S = rng.binomial(30, p)
    runs = []
    for n in (1, 2):
        threads(n)
        assert cf.get_num_threads() == n
        runs.append(
            [
                *sufficient_stats(graded, mask, cost, cost, backend="cpp")
                .arrays()
                .values(),
                *sufficient_stats(binary, mask, backend="cpp").arrays().values(),
                cf.expected_max_binomial(p, n_draws, backend="cpp"),
                cf.subsample_curve(S, 30, backend="cpp"),
            ]
        )
    for a, b in zip(*runs, strict=True):
        if a is None:
            assert b is None
        else:
            assert a.tobytes() == b.tobytes()  # bit for bit, NaN included


# --------------------------------------------------------- expected_max_binomial

probabilities = st.one_of(
    st.sampled_from([0.0, 1.0, 0.5, 1e-12, 1 - 1e-12]),
    st.floats(0.0, 1.0, allow_nan=False),
)


@st.composite
def small_binomial_rows(draw):
    R = draw(st.integers(1, 3))
    L = draw(st.integers(1, 3))
    p = np.array(draw(st.lists(probabilities, min_size=R * L, max_size=R * L)))
    p = p.reshape(R, L)
    if draw(st.booleans()):
        n_draws = np.array(
            draw(st.lists(st.integers(0, 5), min_size=R * L, max_size=R * L))
        ).reshape(R, L)
        n_draws[:, draw(st.integers(0, L - 1))] = draw(st.integers(1, 5))
    else:
        n_draws = draw(st.integers(1, 6))
    return p, n_draws


@settings(max_examples=80)
@given(small_binomial_rows(), st.sampled_from(LAYOUTS))
def test_expected_max_matches_enumeration(case, layout):
    p, n_draws = case
    G = np.broadcast_to(n_draws, p.shape)
    want = [naive.expected_max_enumerate(p[r], G[r]) for r in range(len(p))]
    for backend in cf.available_backends():
        got = cf.expected_max_binomial(relayout(p, layout), n_draws, backend=backend)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-13, err_msg=backend)


HIGH_PRECISION_CASES = [
    ([0.3], 1000),
    ([0.5, 0.5], 1000),
    ([0.9, 0.91, 0.05], 1000),
    ([1e-4, 0.999, 0.6, 0.61], 1000),
    ([0.0, 1.0, 0.37], 1000),
    ([0.7, 0.71], [1000, 999]),  # ragged
    ([0.2, 0.8, 0.5], [1000, 0, 317]),  # a cell not run
    ([0.123456789, 0.987654321], [997, 1000]),
    ([0.42] * 6, 500),
    ([0.01, 0.02, 0.03], 200),
]


@functools.cache
def _high_precision(case: int) -> float:
    p, n_draws = HIGH_PRECISION_CASES[case]
    return naive.expected_max_mp(np.array(p), np.array(n_draws))


@pytest.mark.parametrize("case", range(len(HIGH_PRECISION_CASES)))
def test_expected_max_exact_to_1e12_up_to_1000_draws(case, backend):
    p, n_draws = HIGH_PRECISION_CASES[case]
    want = _high_precision(case)
    got = cf.expected_max_binomial(np.array(p), np.array(n_draws), backend=backend)
    assert isinstance(got, float)
    assert abs(got - want) <= 1e-12


def test_expected_max_special_values(backend):
    f = lambda p, g: cf.expected_max_binomial(np.array(p), g, backend=backend)  # noqa: E731
    assert f([0.0, 0.0], 7) == 0.0
    assert f([1.0, 0.2], 7) == 1.0
    assert f([0.37], 11) == pytest.approx(0.37, abs=1e-14)  # L = 1: the mean
    assert f([0.3], 1) == pytest.approx(0.3, abs=1e-15)
    # G = 1, independent: P(any success)
    assert f([0.3, 0.5], 1) == pytest.approx(1 - 0.7 * 0.5, abs=1e-15)
    # more draws -> the max regresses towards max_l p
    assert f([0.5, 0.6], 1000) < f([0.5, 0.6], 10) < f([0.5, 0.6], 1)


def test_expected_max_shapes_and_layouts(backend):
    rng = np.random.default_rng(5)
    p = rng.random((2, 3, 4))
    n = rng.integers(1, 9, size=(2, 3, 4))
    want = np.array(
        [
            naive.expected_max_mp(p[i, j], n[i, j], dps=30)
            for i in range(2)
            for j in range(3)
        ]
    ).reshape(2, 3)
    for layout in LAYOUTS:
        got = cf.expected_max_binomial(
            relayout(p, layout), relayout(n, layout), backend=backend
        )
        assert got.shape == (2, 3)
        np.testing.assert_allclose(got, want, atol=1e-13, err_msg=layout)
    # n_draws broadcast from a scalar and from a per-model vector
    g = np.array([3, 4, 5, 6])
    got = cf.expected_max_binomial(p, g, backend=backend)
    want = [naive.expected_max_mp(row, g, dps=30) for row in p.reshape(-1, 4)]
    np.testing.assert_allclose(got.ravel(), want, atol=1e-13)


def test_expected_max_bad_input(backend):
    f = lambda p, g: cf.expected_max_binomial(p, g, backend=backend)  # noqa: E731
    for bad in ([0.5, 1.2], [-0.1, 0.5], [np.nan, 0.5], [np.inf, 0.2]):
        with pytest.raises(ValueError, match=r"p must lie in \[0, 1\]"):
            f(np.array(bad), 5)
    with pytest.raises(ValueError, match="n_draws must be >= 0"):
        f(np.array([0.5, 0.5]), np.array([3, -1]))
    with pytest.raises(ValueError, match="at least one cell"):
        f(np.array([[0.5, 0.5], [0.5, 0.5]]), np.array([[3, 3], [0, 0]]))
    with pytest.raises(ValueError, match="no models"):
        f(np.zeros((3, 0)), 5)
    with pytest.raises(ValueError, match="broadcast"):
        f(np.full((2, 3), 0.5), np.array([1, 2]))
    with pytest.raises(ValueError, match="whole numbers"):
        f(np.array([0.5]), 2.5)
    with pytest.raises(ValueError, match="numeric"):
        f(np.array(["a"]), 3)
    with pytest.raises(ValueError, match="at least one axis"):
        f(0.5, 3)


# ------------------------------------------------------------- subsample curve


@st.composite
def count_tables(draw, ragged=True):
    N = draw(st.integers(1, 4))
    L = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if ragged and draw(st.booleans()):
        G = rng.integers(0, 6, size=(N, L))
        G[:, rng.integers(0, L)] = rng.integers(1, 6, size=N)  # one cell per row
    else:
        G = np.full((N, L), draw(st.integers(1, 6)))
    content = draw(st.sampled_from(["random", "all0", "all1"]))
    S = {"all0": 0 * G, "all1": G}.get(content, rng.binomial(G, rng.random((N, L))))
    return S.astype(np.int64), G.astype(np.int64)


@settings(max_examples=30)
@given(count_tables())
def test_subsample_curve_matches_exact_fractions(case):
    S, G = case
    g_min = int(G[G > 0].min())
    sizes = np.arange(1, g_min + 1)
    want = [float(v) for v in naive.subsample_curve_exact(S, G, sizes)]
    for backend in cf.available_backends():
        got = cf.subsample_curve(S, G, backend=backend)  # default sizes 1..min G
        assert got.shape == (g_min,)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-13, err_msg=backend)
        sub = cf.subsample_curve(S, G, sizes[::-1], backend=backend)  # any order
        np.testing.assert_allclose(sub, want[::-1], atol=1e-13)


def test_subsample_curve_literal_subsets(backend):
    """Against listing every size-g subset of every model's draws."""
    S = np.array([[2, 1, 0], [4, 4, 3], [0, 1, 0]])
    G = np.array([[4, 4, 4], [4, 5, 4], [4, 4, 0]])
    for g in (1, 2, 3, 4):
        want = np.mean(
            [float(naive.subsample_value_enumerate(S[n], G[n], g)) for n in range(3)]
        )
        got = cf.subsample_curve(S, G, [g], backend=backend)
        assert got[0] == pytest.approx(want, abs=1e-14)


@settings(max_examples=30)
@given(count_tables(ragged=False), st.sampled_from(LAYOUTS))
def test_subsample_curve_at_G_is_the_naive_oracle(case, layout):
    S, G = case
    g = int(G.max())
    G = G.copy()
    G[0, 0] = 0  # a model not run on prompt 0 is left out of the max ...
    S = S.copy()
    S[0, 0] = 0
    if G.shape[1] == 1:
        G[0, 0], S[0, 0] = g, 0  # ... but every prompt needs a model
    res = cf.EvalResults.from_counts(S, G)
    oracle = cf.naive_oracle(res, "prehoc", on="all").value
    want = np.nanmean(np.nanmax(res.p_hat, axis=1))
    assert oracle == pytest.approx(want, abs=1e-15)
    for backend in cf.available_backends():
        got = cf.subsample_curve(
            relayout(S, layout), relayout(G, layout), [g], backend=backend
        )
        assert got[0] == pytest.approx(oracle, abs=1e-13), backend


def test_subsample_curve_monotone_and_g1_is_union(backend):
    rng = np.random.default_rng(2)
    S = rng.binomial(10, rng.random((50, 4)))
    curve = cf.subsample_curve(S, 10, backend=backend)
    assert np.all(np.diff(curve) <= 1e-15)  # the naive oracle shrinks with g
    # g = 1: one draw per model, independent: the union oracle of p_hat
    union = cf.naive_oracle(cf.EvalResults.from_counts(S, 10), "union").value
    assert curve[0] == pytest.approx(union, abs=1e-13)


def test_subsample_curve_bigger_G_against_fractions(backend):
    rng = np.random.default_rng(9)
    G = rng.choice([40, 100], size=(6, 3))
    S = rng.binomial(G, rng.random((6, 3)))
    sizes = [1, 7, 40]
    want = [float(v) for v in naive.subsample_curve_exact(S, G, sizes)]
    got = cf.subsample_curve(S, G, sizes, backend=backend)
    np.testing.assert_allclose(got, want, atol=1e-13)


def test_subsample_curve_bad_input(backend):
    f = lambda *a: cf.subsample_curve(*a, backend=backend)  # noqa: E731
    S = np.array([[1, 2], [0, 3]])
    with pytest.raises(ValueError, match=r"sizes must lie in 1\.\.3"):
        f(S, 3, [4])
    with pytest.raises(ValueError, match="sizes must lie"):
        f(S, 3, [0])
    with pytest.raises(ValueError, match="between 0 and n_draws"):
        f(S, 1)
    with pytest.raises(ValueError, match="between 0 and n_draws"):
        f(-S, 3)
    with pytest.raises(ValueError, match="shaped"):
        f(S[0], 3)
    with pytest.raises(ValueError, match="at least one model"):
        f(np.array([[1, 2], [0, 0]]), np.array([[3, 3], [0, 0]]))
    with pytest.raises(ValueError, match="empty"):
        f(np.zeros((0, 2), int), 3)
    with pytest.raises(ValueError, match="sizes is empty"):
        f(S, 3, [])


# ------------------------------------------------------------------ pass@k


@settings(max_examples=100)
@given(st.data())
def test_pass_at_k_matches_exact_fractions(data):
    n = data.draw(st.one_of(st.integers(1, 30), st.integers(1, 10_000)))
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    want = naive.pass_at_k(n, c, k)
    got = cf.pass_at_k(n, c, k)
    assert isinstance(got, float)
    assert abs(Fraction(got) - want) <= Fraction(1, 10**12)
    if want < 1:  # small values keep their relative accuracy too
        assert got == pytest.approx(float(want), rel=1e-11)


def test_pass_at_k_vectorised():
    n = np.array([[10], [100], [10_000]])
    c = np.array([0, 1, 5, 10])
    k = 3
    got = cf.pass_at_k(n, np.minimum(c, n), k)
    assert got.shape == (3, 4)
    for i in range(3):
        for j in range(4):
            cc = min(c[j], n[i, 0])
            assert got[i, j] == pytest.approx(float(naive.pass_at_k(n[i, 0], cc, k)))
    assert cf.pass_at_k(5, 5, 5) == 1.0
    assert cf.pass_at_k(5, 0, 5) == 0.0
    assert cf.pass_at_k(10, 3, 1) == pytest.approx(0.3, abs=1e-15)  # pass@1 = c/n
    # Chen et al.'s product form at n = 10^4: no overflow, no cancellation
    assert cf.pass_at_k(10_000, 1, 1) == pytest.approx(1e-4, rel=1e-13)
    want = 1 - math.exp(sum(math.log1p(-100 / i) for i in range(9_001, 10_001)))
    assert cf.pass_at_k(10_000, 1_000, 100) == pytest.approx(want, rel=1e-12)


def test_pass_at_k_errors():
    with pytest.raises(ValueError, match="k must not exceed n"):
        cf.pass_at_k(5, 2, 6)
    with pytest.raises(ValueError, match="k must not exceed n"):
        cf.pass_at_k(np.array([5, 10]), 2, 6)  # one bad element is enough
    with pytest.raises(ValueError, match="k must be >= 1"):
        cf.pass_at_k(5, 2, 0)
    with pytest.raises(ValueError, match="c must lie between 0 and n"):
        cf.pass_at_k(5, 6, 1)
    with pytest.raises(ValueError, match="c must lie between 0 and n"):
        cf.pass_at_k(5, -1, 1)
    with pytest.raises(ValueError, match="whole numbers"):
        cf.pass_at_k(5.5, 1, 1)


def test_byte_fast_path_falls_back_per_row(backend):
    """uint8 rows with a value > 1 take the exact general loop, the others the
    bit-packed path; masks, odd G and several 2048-row blocks included."""
    rng = np.random.default_rng(8)
    N, L, G = 2 * 2048 + 3, 3, 13
    x = (rng.random((N, L, G)) < 0.3).astype(np.uint8)
    bad_rows = rng.choice(N, size=40, replace=False)
    x[bad_rows, rng.integers(0, L, 40), rng.integers(0, G, 40)] = rng.choice(
        [2, 7, 255], size=40
    )
    mask = rng.random((N, L, G)) < 0.9
    for m in (None, mask):
        want = sufficient_stats(x.astype(np.float64), m, backend="numpy")
        got = sufficient_stats(x, m, backend=backend)
        for name in ("successes", "sum_sq", "n_draws", "max_score"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
        assert got.flags == want.flags
        assert not got.is_binary


# ------------------------------------------------------------------ huge n_draws


def _dense_scipy_expected_max(p: np.ndarray, G: int) -> float:
    """E[max] from scipy's CDF at every k = 0..G-1 (no window)."""
    from scipy import stats

    k = np.arange(G)[:, None]
    return float((1.0 - stats.binom.cdf(k, G, p[None, :]).prod(axis=1)).sum() / G)


@pytest.mark.parametrize("G", [70_001, 250_000])
def test_expected_max_windowed_against_dense_scipy(backend, G):
    """Above 2^16 draws the kernels use windowed CDFs; against scipy on all of
    0..G-1 (an independent computation) they agree to 1e-11."""
    p = np.array([0.3, 0.3004, 0.7, 0.6995, 1e-4, 0.0])
    want = _dense_scipy_expected_max(p, G)
    got = cf.expected_max_binomial(p, G, backend=backend)
    assert got == pytest.approx(want, abs=1e-11)


def test_expected_max_windowed_ragged_against_enumeration(backend):
    """A ragged row with one huge cell: E[max(Y1/G1, Y2/G2)] by direct summation
    over the small cell's values (P(max <= x) = F1(floor(x G1)) F2(floor(x G2)))."""
    from scipy import stats

    p = np.array([0.4, 0.45])
    g = np.array([100_000, 7])
    # E[max] = sum over y2 of P(Y2 = y2) E[max(Y1/G1, y2/7)]
    G1 = int(g[0])
    k = np.arange(G1 + 1)
    pmf1 = stats.binom.pmf(k, G1, p[0])
    want = 0.0
    for y2 in range(8):
        want += stats.binom.pmf(y2, 7, p[1]) * np.sum(pmf1 * np.maximum(k / G1, y2 / 7))
    got = cf.expected_max_binomial(p, g, backend=backend)
    assert got == pytest.approx(want, abs=1e-11)


@pytest.mark.parametrize("G", [10**8, 2**31 - 1])
def test_expected_max_huge_draws(backend, G):
    """One model: E[Y / G] = p exactly; two equal models at p = 1/2: the max
    exceeds 1/2 by sd / sqrt(pi) (normal limit, sd = sqrt(p (1-p) / G))."""
    if backend == "numpy" and G > 10**8:
        pytest.skip(
            "the scipy reference takes ~30 s here (tests/test_fuzz.py runs it once)"
        )
    for p in (1e-9, 0.3, 0.5, 0.999999):
        assert cf.expected_max_binomial([p], G, backend=backend) == pytest.approx(
            p, rel=1e-12, abs=1e-20
        )
    sd = math.sqrt(0.25 / G)
    two = cf.expected_max_binomial([0.5, 0.5], G, backend=backend)
    assert two - 0.5 == pytest.approx(sd / math.sqrt(math.pi), rel=1e-3)


def test_expected_max_huge_draws_agree_across_backends():
    p = np.array([[0.2, 0.21, 0.5], [0.9, 0.3, 0.0]])
    g = np.array([[2**31 - 1, 10**6, 5], [10**7, 10**7, 10**7]])
    runs = [cf.expected_max_binomial(p, g, backend=b) for b in cf.available_backends()]
    for r in runs[1:]:
        np.testing.assert_allclose(r, runs[0], rtol=0, atol=1e-11)


def test_expected_max_refuses_draws_above_cap(backend):
    with pytest.raises(ValueError, match=r"n_draws must be at most 2\*\*31 - 1"):
        cf.expected_max_binomial([0.5, 0.5], [2**31, 3], backend=backend)


@pytest.mark.skipif("cpp" not in cf.available_backends(), reason="no _core")
def test_cpp_binding_refuses_draws_above_cap():
    from capfront._core import expected_max_binomial as raw

    with pytest.raises(ValueError, match="2147483647"):
        raw(np.full((1, 1), 0.5), np.full((1, 1), 2**40, dtype=np.int64))


# -------------------------------------------------------------- argument checks


def test_pass_at_k_shape_mismatch_names_arguments():
    with pytest.raises(ValueError, match=r"n \(3,\), c \(2,\), k \(\)"):
        cf.pass_at_k([10, 10, 10], [1, 2], 1)


@pytest.mark.parametrize(
    ("n", "err", "match"),
    [
        (-1, ValueError, ">= 0"),
        (1.7, ValueError, "whole number"),
        ("2", TypeError, "integer"),
        (None, TypeError, "integer"),
        (True, TypeError, "integer"),
        (10**12, ValueError, "<= 4096"),
        (float("nan"), ValueError, "whole number"),
    ],
)
def test_set_num_threads_refuses_bad_counts(threads, n, err, match):
    before = cf.get_num_threads()
    with pytest.raises(err, match=match):
        threads(n)
    assert cf.get_num_threads() == before


def test_set_num_threads_takes_whole_floats_and_numpy_ints(threads):
    threads(2.0)
    assert cf.get_num_threads() == 2
    threads(np.int64(1))
    assert cf.get_num_threads() == 1


# ------------------------------------------------------------------ concurrency


@pytest.mark.parametrize(
    "backend", [b for b in cf.available_backends() if b != "numpy"]
)
def test_kernels_from_several_python_threads_match_serial(backend):
    """The kernels release the GIL (C++) or run in parallel regions (Numba): called
    from 4 Python threads at once they give the serial results, bit for bit."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(3)
    jobs = []
    for i in range(8):
        p = rng.random((500 + 37 * i, 4))
        g = rng.integers(1, 25, size=p.shape)
        S = rng.binomial(12, rng.random((400, 3)))
        jobs.append((p, g, S))

    def run(job):
        p, g, S = job
        return (
            cf.expected_max_binomial(p, g, backend=backend),
            cf.expected_max_binomial(p[:3], 100_000, backend=backend),
            cf.subsample_curve(S, 12, backend=backend),
            sufficient_stats(
                (S[:, :, None] > np.arange(12)).astype(np.uint8), backend=backend
            ).successes,
        )

    serial = [run(j) for j in jobs]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(run, jobs * 2))
    for got, want in zip(parallel, serial * 2, strict=True):
        for a, b in zip(got, want, strict=True):
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
