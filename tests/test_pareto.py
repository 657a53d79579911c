"""3-D Pareto maxima: the O(M log M) sweep against a brute-force O(M^2) filter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capfront import available_backends, pareto_3d

BACKENDS = available_backends()


def brute_force(points: np.ndarray, maximize) -> np.ndarray:
    """Row i is kept unless some row is >= in every column and > in one (after
    flipping the maximised columns); duplicates never dominate each other."""
    sign = np.where(np.asarray(maximize), -1.0, 1.0)
    p = points * sign
    keep = [
        i
        for i in range(len(p))
        if not (np.all(p <= p[i], axis=1) & np.any(p < p[i], axis=1)).any()
    ]
    return np.asarray(keep, dtype=np.int64)


values = st.sampled_from([0.0, 1.0, 2.0, 2.5, -1.0, np.inf, -np.inf, 0.0])


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 40).flatmap(
        lambda m: st.lists(st.tuples(values, values, values), min_size=m, max_size=m)
    ),
    st.tuples(st.booleans(), st.booleans(), st.booleans()),
)
def test_equals_bruteforce_with_duplicates_and_ties(rows, maximize):
    pts = np.array(rows, dtype=np.float64).reshape(-1, 3)
    want = brute_force(pts, maximize)
    for b in BACKENDS:
        got = pareto_3d(pts, maximize=maximize, backend=b)
        np.testing.assert_array_equal(got, want, err_msg=b)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 300), st.integers(0, 2**32 - 1))
def test_random_continuous_points(m, seed):
    rng = np.random.default_rng(seed)
    pts = rng.random((m, 3))
    pts[:, 0] = pts[:, 1] + pts[:, 2] + 0.05 * rng.random(m)  # front-heavy
    want = brute_force(pts, (True, False, False))
    for b in BACKENDS:
        np.testing.assert_array_equal(pareto_3d(pts, backend=b), want)


def test_duplicates_kept_and_errors():
    pts = np.array(
        [
            [1.0, 1.0, 1.0],
            [1.0, 1.0, 1.0],
            [0.0, 2.0, 2.0],
            [1.0, 1.0, 1.0],
            [-0.0, 2.0, 2.0],
            [0.0, 2.0, 2.0],
        ]
    )
    for b in BACKENDS:
        np.testing.assert_array_equal(pareto_3d(pts, backend=b), [0, 1, 3])
        np.testing.assert_array_equal(
            pareto_3d(pts, maximize=(False, False, False), backend=b),
            [0, 1, 2, 3, 4, 5],
        )
        assert pareto_3d(np.zeros((0, 3)), backend=b).size == 0
    with pytest.raises(ValueError, match="NaN"):
        pareto_3d(np.array([[np.nan, 1.0, 2.0]]))
    with pytest.raises(ValueError, match=r"\(M, 3\)"):
        pareto_3d(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="3 entries"):
        pareto_3d(np.zeros((4, 3)), maximize=(True,))
    with pytest.raises(ValueError, match="numeric"):
        pareto_3d(np.array([["a", "b", "c"]]))


def _large_cases() -> dict[str, tuple[np.ndarray, tuple[bool, bool, bool]]]:
    """Inputs above the pre-filter threshold (16,384 rows): uniform (the filter
    drops most rows), a coarse grid (ties and exact duplicates of the pivots),
    infinities and signed zeros, and front-heavy points (the filter is skipped)."""
    rng = np.random.default_rng(7)
    uniform = rng.random((40_000, 3))
    grid = rng.integers(0, 12, (30_000, 3)).astype(np.float64)
    special = rng.choice([0.0, -0.0, 1.0, 3.0, np.inf, -np.inf], (20_000, 3))
    special[:5000] = rng.random((5000, 3))
    heavy = rng.random((20_000, 3))
    heavy[:, 0] = heavy[:, 1] + heavy[:, 2]
    dup = np.vstack([uniform, uniform[:2000]])  # every row twice for the first 2000
    return {
        "uniform": (uniform, (True, False, False)),
        "uniform-min": (uniform, (False, False, False)),
        "grid": (grid, (True, True, False)),
        "special": (special, (False, True, False)),
        "front-heavy": (heavy, (True, False, False)),
        "duplicates": (dup, (False, False, True)),
    }


@pytest.mark.parametrize("case", list(_large_cases()))
def test_prefilter_exact_on_large_inputs(case):
    """The pivot pre-filter of the compiled backends keeps exactly the reference
    sweep's set (the NumPy backend has no filter)."""
    pts, maximize = _large_cases()[case]
    want = pareto_3d(pts, maximize=maximize, backend="numpy")
    assert want.size > 0
    for b in BACKENDS:
        np.testing.assert_array_equal(
            pareto_3d(pts, maximize=maximize, backend=b), want, err_msg=b
        )


def test_prefilter_drops_rows_on_uniform_points():
    """On uniform points the sampled pivots dominate most rows (the filter runs)."""
    from capfront._kernels.pareto3d import _pivots_nb, _survivors_nb

    pts = np.random.default_rng(1).random((50_000, 3))
    pivots = _pivots_nb(pts)
    assert 1 <= pivots.size <= 8
    assert _survivors_nb(pts, pivots).size < 0.2 * len(pts)
    heavy = pts.copy()
    heavy[:, 0] = -(heavy[:, 1] + heavy[:, 2])  # every row on the front
    assert _pivots_nb(heavy).size == 0


def test_nan_far_from_the_sample_is_reported():
    """A NaN row is never dominated, so the filter cannot hide it."""
    pts = np.random.default_rng(2).random((40_000, 3))
    pts[12_345, 1] = np.nan  # not a sample row (rows k * M // 4096)
    for b in BACKENDS:
        with pytest.raises(ValueError, match="NaN"):
            pareto_3d(pts, backend=b)


def test_non_contiguous_and_integer_points():
    rng = np.random.default_rng(3)
    wide = rng.integers(0, 50, (30_000, 6))
    pts = wide[:, ::2]  # strided view, int dtype
    want = brute_force(pts[:300].astype(float), (True, False, False))
    for b in BACKENDS:
        np.testing.assert_array_equal(pareto_3d(pts[:300], backend=b), want)
        np.testing.assert_array_equal(
            pareto_3d(pts, backend=b), pareto_3d(pts, backend="numpy")
        )
