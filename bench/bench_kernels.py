"""Foundation kernels: sufficient statistics, expected max of binomials, exact
subsample curve; C++ vs Numba vs the NumPy/SciPy reference path, in one group each.

Default sizes run in a few seconds (CI runs them with ``--benchmark-disable`` as
correctness checks). ``CAPFRONT_BENCH_LARGE=1`` uses the issue's size
N = 400,000 prompts, L = 33 models, G = 20 uint8 draws (the NumPy paths then take
minutes; they run one round). Every benchmark asserts its result.

Reference for the memory speed of the sufficient statistics (same run, same bytes):
``read_bandwidth`` sums the score tensor viewed as uint64 words
(``np.add.reduce``, one pass over the bytes, one thread); ``read_write_floor``
adds what the kernel must write: one fresh (N, L) uint8 array of counts filled once
(binary data is stored compactly: counts as bytes up to 255 draws, ``n_draws`` a
broadcast view of G and
``sum_sq``/``max_score`` follow from the counts).
"""

from __future__ import annotations

import numpy as np
import pytest

import capfront as cf
from capfront.suffstats import sufficient_stats
from conftest import LARGE, alternative, kernel_backends, run

N, L, G = (400_000, 33, 20) if LARGE else (2_000, 8, 6)
ROUNDS = {"cpp": 5, "numba": 5, "numpy": 1 if LARGE else 3}


@pytest.fixture(scope="module")
def data() -> dict:
    rng = np.random.default_rng(2024)
    p = rng.beta(0.7, 0.5, size=(N, L))  # many easy and many hard cells
    scores = np.empty((N, L, G), dtype=np.uint8)
    for start in range(0, N, 20_000):  # chunked: no (N, L, G) float temporary
        stop = min(N, start + 20_000)
        u = rng.random((stop - start, L, G), dtype=np.float32)
        scores[start:stop] = u < p[start:stop, :, None]
    successes = scores.sum(axis=2, dtype=np.int64)
    for name in cf.available_backends():  # compile / warm up outside the timings
        small = slice(0, 64)
        sufficient_stats(scores[small], backend=name)
        cf.expected_max_binomial(p[small], G, backend=name)
        cf.subsample_curve(successes[small], G, backend=name)
    return {"p": p, "scores": scores, "successes": successes}


# ------------------------------------------------------ sufficient statistics


@pytest.mark.benchmark(group="sufficient_stats")
@pytest.mark.parametrize("backend", kernel_backends("sufficient_stats"))
def test_sufficient_stats(benchmark, data, backend):
    out = run(
        benchmark,
        sufficient_stats,
        data["scores"],
        backend=backend,
        rounds=ROUNDS[backend],
    )
    np.testing.assert_array_equal(out.successes, data["successes"])
    np.testing.assert_array_equal(out.n_draws, np.full((N, L), G))
    np.testing.assert_array_equal(out.max_score, data["successes"] > 0)
    assert out.is_binary


@pytest.mark.benchmark(group="sufficient_stats")
def test_sufficient_stats_numpy_sum(benchmark, data):
    """What a user would write for the counts: one NumPy reduction."""
    alternative(benchmark, "scores.sum(axis=2, dtype=uint16)")
    out = run(benchmark, data["scores"].sum, axis=2, dtype=np.uint16, rounds=5)
    np.testing.assert_array_equal(out, data["successes"])


@pytest.mark.benchmark(group="sufficient_stats")
@pytest.mark.parametrize("backend", ["read_bandwidth"])
def test_sufficient_stats_read_bandwidth(benchmark, data, backend):
    flat = data["scores"].reshape(-1)
    words = flat[: flat.size // 8 * 8].view(np.uint64)
    total = run(benchmark, np.add.reduce, words, rounds=5)
    # independent check: the sum of little-endian words, mod 2^64, from the sums of
    # the bytes at each of the 8 positions
    by_position = flat[: words.size * 8].reshape(-1, 8).sum(axis=0, dtype=np.int64)
    want = sum(int(b) << (8 * i) for i, b in enumerate(by_position)) % 2**64
    assert int(total) == want


@pytest.mark.benchmark(group="sufficient_stats")
@pytest.mark.parametrize("backend", ["read_write_floor"])
def test_sufficient_stats_read_write_floor(benchmark, data, backend):
    words = data["scores"].reshape(-1)[: N * L * G // 8 * 8].view(np.uint64)

    def floor():
        total = np.add.reduce(words)
        out = np.empty((N, L), dtype=np.uint8)  # the counts, as the kernel stores them
        out.fill(1)
        return total, out

    total, out = run(benchmark, floor, rounds=5)
    assert out[0, 0] == 1 and total >= 0


# ------------------------------------------------------ expected max of binomials


@pytest.fixture(scope="module")
def expected_max_want(data) -> np.ndarray:
    want = cf.expected_max_binomial(data["p"], G)  # the fastest backend
    # anchor the fastest backend on a few rows of the exact (mpmath) reference
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import naive

    for row in (0, N // 2, N - 1):
        assert abs(want[row] - naive.expected_max_mp(data["p"][row], G)) < 1e-12
    return want


@pytest.mark.benchmark(group="expected_max_binomial")
@pytest.mark.parametrize("backend", kernel_backends("expected_max_binomial_rows"))
def test_expected_max_binomial(benchmark, data, expected_max_want, backend):
    out = run(
        benchmark,
        cf.expected_max_binomial,
        data["p"],
        G,
        backend=backend,
        rounds=ROUNDS[backend],
    )
    np.testing.assert_allclose(out, expected_max_want, rtol=0, atol=1e-12)


def _expected_max_loop(p: np.ndarray, g: int) -> np.ndarray:
    """The vectorised loop over k a user would write with SciPy:
    ``(1/G) sum_k [1 - prod_l F(k - 1; G, p_l)]``, ``scipy.stats.binom.cdf``."""
    from scipy import stats

    total = np.zeros(p.shape[0])
    for k in range(1, g + 1):
        total += 1.0 - stats.binom.cdf(k - 1, g, p).prod(axis=1)
    return total / g


def _expected_max_recursion(p: np.ndarray, g: int) -> np.ndarray:
    """The faster NumPy version: the masses by their ratio recursion from
    ``(1 - p)^G``, vectorised over cells (fine for ``p < 1`` and small G)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        pmf = (1.0 - p) ** g
        cdf = pmf.copy()
        r = p / (1.0 - p)
        total = 1.0 - np.minimum(cdf, 1.0).prod(axis=1)
        for k in range(1, g):
            pmf *= r * ((g - k + 1) / k)
            cdf += pmf
            total += 1.0 - np.minimum(cdf, 1.0).prod(axis=1)
    return total / g


@pytest.mark.benchmark(group="expected_max_binomial")
@pytest.mark.parametrize(
    "alt",
    [
        ("scipy.stats.binom.cdf loop over k", _expected_max_loop),
        ("NumPy mass recursion", _expected_max_recursion),
    ],
    ids=["scipy-loop", "numpy-recursion"],
)
def test_expected_max_alternatives(benchmark, data, expected_max_want, alt):
    name, fn = alt
    alternative(benchmark, name)
    out = run(benchmark, fn, data["p"], G, rounds=3)
    np.testing.assert_allclose(out, expected_max_want, rtol=0, atol=1e-12)


# ------------------------------------------------------ subsample curve


@pytest.mark.benchmark(group="subsample_curve")
@pytest.mark.parametrize("backend", kernel_backends("subsample_curve_mean"))
def test_subsample_curve(benchmark, data, backend):
    S = data["successes"]
    curve = run(
        benchmark, cf.subsample_curve, S, G, backend=backend, rounds=ROUNDS[backend]
    )
    assert curve.shape == (G,)
    # g = G is the naive oracle mean_n max_l S / G; the curve falls with g
    assert curve[-1] == pytest.approx((S.max(axis=1) / G).mean(), abs=1e-12)
    assert np.all(np.diff(curve) <= 1e-12)
    # g = 1 is the union oracle of p_hat = S / G
    union = (1.0 - np.prod(1.0 - S / G, axis=1)).mean()
    assert curve[0] == pytest.approx(union, abs=1e-12)
