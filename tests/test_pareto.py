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
