"""The exact binomial sampler behind the class-count bootstrap: inversion for
``n min(p, 1 - p) < 10``, Hormann's BTRD above, the same integers in every backend,
and the binomial distribution (checked against scipy.stats.binom)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import capfront as cf
from capfront._kernels import bootstrap as kb
from capfront._kernels import dispatch

_SAMPLERS = {
    "numpy": kb.binomial_draws_np,
    "numba": kb.binomial_draws_numba,
    "cpp": kb.binomial_draws_cpp,
}
COMPILED = [b for b in cf.available_backends() if b != "numpy"]
#: the fastest backend here, for the large distribution samples
FAST = _SAMPLERS[COMPILED[-1] if COMPILED else "numpy"]
#: draws per case of the distribution test (the NumPy reference is ~100x slower)
N_DRAWS = 1_000_000 if COMPILED else 20_000

# (n, a, b) for Bin(n, a / b): degenerate, tiny, both sides of the switch n p = 10
# (p = 1/2 and p = 1/10, from below and above), the flipped side p > 1/2, and huge n
EDGE_CASES = [
    (0, 1, 2),
    (0, 0, 1),
    (5, 0, 3),
    (7, 3, 3),
    (1, 1, 2),
    (2, 1, 3),
    (40, 1, 1000),
    (40, 999, 1000),
    (19, 1, 2),
    (20, 1, 2),
    (21, 1, 2),
    (99, 1, 10),
    (100, 1, 10),
    (101, 1, 10),
    (100, 9, 10),
    (101, 9, 10),
    (1000, 300, 700),
    (400_000, 20_000, 400_000),
    (400_000, 399_990, 400_000),
    (1_000_000, 5, 1_000_000),
    (10**12, 1, 3),
    (10**12, 1, 10**11),
    (2**53 - 1, 2**52, 2**53 - 1),
]


def _grid(cases, reps: int):
    n, a, b = (
        np.repeat(np.array(col, dtype=np.int64), reps)
        for col in zip(*cases, strict=True)
    )
    rep = np.tile(np.arange(reps, dtype=np.int64), len(cases))
    j = (rep * 7 + np.repeat(np.arange(len(cases)), reps)) % 23  # several binomials
    return n, a, b, rep, j


def test_backends_draw_the_same_integers():
    args = _grid(EDGE_CASES, 60)
    want = kb.binomial_draws_np(*args, 2024)
    n = args[0]
    assert ((want >= 0) & (want <= n)).all()
    deg = (args[1] == 0) | (n == 0)
    np.testing.assert_array_equal(want[deg], 0)
    full = args[1] == args[2]
    np.testing.assert_array_equal(want[full], n[full])
    for b in COMPILED:
        np.testing.assert_array_equal(_SAMPLERS[b](*args, 2024), want, err_msg=b)


def test_compiled_backends_agree_on_many_draws():
    """Thousands of BTRD draws (rejections, every branch of the test) per case."""
    if len(COMPILED) < 2:
        pytest.skip("needs both the numba and the C++ backend")
    cases = [
        (n, a, 10_000) for n in (30, 200, 5_000, 10**6) for a in (1_500, 5_000, 9_000)
    ]
    args = _grid(cases, 2_000)
    np.testing.assert_array_equal(
        kb.binomial_draws_numba(*args, 7), kb.binomial_draws_cpp(*args, 7)
    )


def _chi2_pvalue(draws: np.ndarray, n: int, p: float) -> float:
    """Chi-square of the draws against Bin(n, p), the tails pooled until every bin
    expects at least 20."""
    lo, hi = stats.binom.ppf([1e-7, 1 - 1e-7], n, p).astype(int)
    k = np.arange(lo, hi + 1)
    expect = stats.binom.pmf(k, n, p) * draws.size
    expect[0] += stats.binom.cdf(lo - 1, n, p) * draws.size
    expect[-1] += stats.binom.sf(hi, n, p) * draws.size
    seen = np.bincount(np.clip(draws, lo, hi) - lo, minlength=k.size).astype(float)
    # pool neighbouring bins until each expects >= 20
    edges, acc = [0], 0.0
    for i, e in enumerate(expect):
        acc += e
        if acc >= 20 and expect[i + 1 :].sum() >= 20:
            edges.append(i + 1)
            acc = 0.0
    edges.append(k.size)
    edges = sorted(set(edges))
    E = np.add.reduceat(expect, edges[:-1])
    O = np.add.reduceat(seen, edges[:-1])
    return float(stats.chisquare(O, E * O.sum() / E.sum()).pvalue)


@pytest.mark.parametrize(
    ("n", "a", "b"),
    [
        (19, 1, 2),  # inversion just below the switch
        (20, 1, 2),  # BTRD at the switch (m = 10)
        (100, 1, 10),
        (60, 7, 10),  # p > 1/2: BTRD on the other side, n - X
        (1_000, 3, 10),
        (400_000, 1, 20),  # the class path's size: sqrt(n p q) = 138
        (10**9, 37, 100),
    ],
)
def test_distribution_is_binomial(n, a, b):
    draws = FAST(*_grid([(n, a, b)], N_DRAWS), 11)
    p = a / b
    assert _chi2_pvalue(draws, n, p) > 1e-3
    # mean and variance to a few standard errors
    mean, var = n * p, n * p * (1 - p)
    assert abs(draws.mean() - mean) < 5 * np.sqrt(var / draws.size)
    assert draws.var() == pytest.approx(var, rel=10 / np.sqrt(draws.size))


def test_chi2_check_has_power():
    """The check above rejects a sampler that is slightly off (p 1% too large)."""
    draws = np.random.default_rng(0).binomial(400_000, 0.0505, 200_000)
    assert _chi2_pvalue(draws, 400_000, 0.05) < 1e-6


def test_class_counts_use_the_same_sampler():
    """A stratum of two classes (a, b - a) gives M_0 = binomial 0 of Bin(b, a / b):
    the word schedule of the class counts is that of binomial_draws."""
    offsets = np.array([0, 2], dtype=np.int64)
    size = np.array([3_000, 17_000], dtype=np.int64)
    reps = np.arange(40, dtype=np.int64)
    for backend in cf.available_backends():
        counts = dispatch("bootstrap_class_counts", backend)(offsets, size, 5, 0, 40)
        draws = _SAMPLERS[backend](
            np.full(40, 20_000),
            np.full(40, 3_000),
            np.full(40, 20_000),
            reps,
            0 * reps,
            5,
        )
        np.testing.assert_array_equal(counts[:, 0], draws, err_msg=backend)
        np.testing.assert_array_equal(counts.sum(axis=1), 20_000)


def test_class_counts_are_multinomial():
    """21 classes of a 400k-prompt stratum and 3 of a second: every replicate keeps
    each stratum's size, and the counts have the multinomial means, variances and
    covariances n p_c (1 - p_c), -n p_c p_d."""
    rng = np.random.default_rng(3)
    big = rng.multinomial(400_000, rng.dirichlet(np.full(21, 0.7)))
    big = np.maximum(big, 1)
    small = np.array([5, 1, 30])
    size = np.concatenate([big, small]).astype(np.int64)
    offsets = np.array([0, 21, 24], dtype=np.int64)
    B = 4_000
    backend = COMPILED[-1] if COMPILED else "numpy"
    M = dispatch("bootstrap_class_counts", backend)(offsets, size, 9, 0, B)
    np.testing.assert_array_equal(M[:, :21].sum(axis=1), big.sum())
    np.testing.assert_array_equal(M[:, 21:].sum(axis=1), small.sum())
    for block in (slice(0, 21), slice(21, 24)):
        n = size[block].sum()
        p = size[block] / n
        cov = n * (np.diag(p) - np.outer(p, p))
        sd = np.sqrt(np.diag(cov))
        mean = M[:, block].mean(axis=0)
        assert (np.abs(mean - n * p) < 5 * sd / np.sqrt(B)).all()
        # a sample covariance's standard error is at most sqrt(2 / B) sd_c sd_d
        got = np.cov(M[:, block], rowvar=False)
        excess = np.abs(got - cov) / np.outer(sd, sd)
        assert excess.max() < 0.1, excess.max()


def test_binding_refuses_bad_input():
    if "cpp" not in COMPILED:
        pytest.skip("the C++ backend is not built")
    one = np.ones(1, dtype=np.int64)
    with pytest.raises(ValueError, match="a <= b"):
        kb.binomial_draws_cpp(one, 3 * one, 2 * one, one, one, 0)
    with pytest.raises(ValueError, match="same length"):
        kb.binomial_draws_cpp(one, one, np.ones(2, dtype=np.int64), one, one, 0)


def test_reference_without_numba_draws_the_same():
    """Without numba the BTRD steps are plain Python (no compiled helper behind the
    reference): the same integers as with it."""
    import json

    import hiding

    args = _grid(EDGE_CASES[6:], 12)
    want = kb.binomial_draws_np(*args, 2024)
    # the body is str.format-ed by run_hidden: the JSON lists hold no braces
    lists = json.dumps([a.tolist() for a in args])
    child = f"""
import json
import numpy as np
from capfront._kernels import bootstrap as kb
assert not hasattr(kb.btrd_attempt_nb, "py_func")
args = [np.array(a, dtype=np.int64) for a in json.loads({lists!r})]
print(json.dumps(kb.binomial_draws_np(*args, 2024).tolist()))
"""
    got = json.loads(hiding.run_hidden(child, "numba").strip().splitlines()[-1])
    np.testing.assert_array_equal(got, want)
