"""The lane-parallel path of ``expected_max_binomial`` (rows with one G <= 1000,
16 rows per SIMD block) against exact references, the row-broadcast ``n_draws``,
and the lazy SciPy import."""

from __future__ import annotations

import numpy as np
import pytest

import capfront as cf
import naive
from capfront._kernels import dispatch, kernels
from hiding import run_hidden

EXTREME_P = [0.0, 1.0, 0.5, np.nextafter(0.5, 0), np.nextafter(0.5, 1), 1e-300]
EXTREME_P += [1e-12, 1 - 1e-12, 1 - 2**-53, 0.999, 0.001]


def _mixed_rows(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """37 rows of 5 models: runs of equal-G rows (lane blocks, some cut short by a
    ragged or a different-G row), cells not run, and extreme probabilities."""
    R, L = 37, 5
    p = rng.random((R, L))
    extreme = rng.random((R, L)) < 0.3
    p[extreme] = rng.choice(EXTREME_P, size=int(extreme.sum()))
    g = np.full((R, L), 9)
    g[18:30] = 4  # a second run
    g[5, 0] = 0  # a cell not run: still the lane path
    g[20, [1, 3]] = 0
    g[11] = [9, 9, 8, 9, 9]  # ragged: the row-by-row path
    g[33] = [1000, 1000, 0, 1000, 1000]  # G = 1000 inside a run of G = 9
    return p, g


@pytest.fixture(scope="module")
def mixed_rows():
    p, g = _mixed_rows(np.random.default_rng(4))
    return p, g, [naive.expected_max_mp(p[r], g[r], dps=30) for r in range(len(p))]


@pytest.mark.parametrize("backend", cf.available_backends())
def test_lane_rows_match_mpmath(backend, mixed_rows):
    p, g, want = mixed_rows
    got = cf.expected_max_binomial(p, g, backend=backend)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("G", [1, 20, 1000, 1001])
def test_extreme_probabilities_against_mpmath(G):
    """Every lane of a block at an extreme p (the masses reach 2^G at p = 1/2);
    G = 1001 is the row-by-row path."""
    p = np.array(EXTREME_P * 2)[: 2 * 8].reshape(2, 8)
    want = [naive.expected_max_mp(row, G, dps=40) for row in p]
    for backend in cf.available_backends():
        got = cf.expected_max_binomial(p, G, backend=backend)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=backend)
    assert cf.expected_max_binomial([0.0, 0.0], G) == 0.0
    assert cf.expected_max_binomial([1.0, 0.3], G) == 1.0


def test_compiled_backends_agree_bit_for_bit_on_lane_rows():
    compiled = [b for b in cf.available_backends() if b != "numpy"]
    if len(compiled) < 2:
        pytest.skip("needs both compiled backends")
    rng = np.random.default_rng(8)
    p = rng.beta(0.7, 0.5, size=(301, 33))
    runs = [cf.expected_max_binomial(p, 20, backend=b) for b in compiled]
    assert runs[0].tobytes() == runs[1].tobytes()


@pytest.mark.parametrize("backend", cf.available_backends())
def test_one_row_of_draws_is_the_full_array(backend):
    """The kernels take n_draws as (1, L) when every row has the same draws: the
    same values as the full (R, L) array, bit for bit."""
    rng = np.random.default_rng(2)
    p = rng.random((40, 4))
    g_row = np.array([[6, 0, 6, 6]])
    run = dispatch("expected_max_binomial_rows", backend)
    full = run(p, np.ascontiguousarray(np.repeat(g_row, 40, axis=0)))
    assert run(p, g_row).tobytes() == full.tobytes()
    assert cf.expected_max_binomial(p, g_row[0], backend=backend).tobytes() == (
        full.tobytes()
    )


def test_registry_entries():
    ks = kernels()
    for name in ("expected_max_binomial_rows", "subsample_curve_mean"):
        assert ks[name].family == "expected_max"
        assert all(callable(ks[name].for_backend(b)) for b in cf.BACKENDS)


def test_naive_oracle_does_not_import_scipy_stats():
    """scipy.stats takes over a second to import: only the NumPy references of
    the expected-max kernels need it."""
    out = run_hidden(
        """
        import numpy as np
        import capfront as cf
        res = cf.EvalResults.from_counts(np.array([[1, 2], [3, 0]]), 4, cost=(1.0, 2.0))
        cf.naive_oracle(res)
        seen = ["scipy.stats" in sys.modules]
        for backend in cf.available_backends()[:-1]:  # the compiled ones
            cf.expected_max_binomial([0.2, 0.7], 5, backend=backend)
            cf.subsample_curve([[1, 2]], 3, backend=backend)
            seen.append("scipy.stats" in sys.modules)
        print(any(seen))
        """
    )
    assert out.strip() == "False"


@pytest.mark.parametrize(
    ("G", "S", "g"),
    [(10, 4, 7), (10, 4, 3), (10, 0, 5), (10, 10, 5), (12, 9, 11), (1, 1, 1)],
)
def test_hypergeom_cdf_recursion_against_scipy(G, S, g):
    """The ratio recursion with a support that starts above 0 (``g > G - S``)
    or ends below ``g`` (``S < g``), as the subsample curve calls it."""
    from scipy import stats

    from capfront._kernels.expected_max import hypergeom_cdf_nb

    cdf = np.empty(g + 1)
    hypergeom_cdf_nb(G, S, g, cdf)
    want = stats.hypergeom.cdf(np.arange(g + 1), G, S, g)
    np.testing.assert_allclose(cdf, want, rtol=0, atol=1e-14)
    assert cdf[g] == 1.0


@pytest.mark.parametrize("p", [0.0, 1.0, 1e-9, 0.3, 0.5, 0.97, 1 - 1e-9])
def test_binomial_cdf_recursion_against_scipy(p):
    from scipy import stats

    from capfront._kernels.expected_max import binomial_cdf_nb

    G = 37
    cdf = np.empty(G + 1)
    binomial_cdf_nb(G, p, cdf)
    want = stats.binom.cdf(np.arange(G + 1), G, p)
    np.testing.assert_allclose(cdf, want, rtol=0, atol=1e-14)
    assert cdf[G] == 1.0
