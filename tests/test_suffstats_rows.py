"""The byte-score rows of the C++ sufficient-statistics kernel (the AVX2 bitmap
path for G <= 56, the portable word path above, the exact loop for rows with a
byte > 1) give the NumPy reference's counts, draw counts and flags on row
lengths around the 32-byte loads: shorter than one load, an exact multiple, and
a tail."""

from __future__ import annotations

import numpy as np
import pytest

import capfront as cf
from capfront._kernels import dispatch

pytestmark = pytest.mark.skipif(
    "cpp" not in cf.available_backends(), reason="the C++ extension is not built"
)


@pytest.mark.parametrize(
    "L, G",
    [(1, 1), (3, 5), (2, 16), (4, 8), (33, 20), (5, 31), (3, 56), (2, 57), (3, 64)],
)
@pytest.mark.parametrize("masked", [False, True])
def test_byte_rows_match_the_reference(L, G, masked):
    rng = np.random.default_rng(L * 100 + G)
    x = (rng.random((9, L, G)) < 0.5).astype(np.uint8)
    x[4, -1, -1] = 2  # one row through the exact loop (flagged out of range)
    mask = (rng.random(x.shape) < 0.7).astype(np.uint8) if masked else None
    want = dispatch("sufficient_stats", "numpy")(x, mask, None, None)
    got = dispatch("sufficient_stats", "cpp")(x, mask, None, None)
    np.testing.assert_array_equal(got["successes"], want["successes"])
    if masked:
        np.testing.assert_array_equal(got["n_draws"], want["n_draws"])
    for flag in ("nonfinite_scores", "out_of_range_scores", "nonbinary_scores"):
        assert got[flag] == want[flag], flag
    clean = x.copy()
    clean[4, -1, -1] = 1
    got = dispatch("sufficient_stats", "cpp")(clean.astype(bool), mask, None, None)
    want = dispatch("sufficient_stats", "numpy")(clean, mask, None, None)
    np.testing.assert_array_equal(got["successes"], want["successes"])
    assert got["out_of_range_scores"] == 0
