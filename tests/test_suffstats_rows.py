"""The byte-score rows of the C++ sufficient-statistics kernel (the AVX2 cell
stream without a mask for G <= 32, the AVX2 bitmap rows for G <= 56, the portable
word path above, the exact loop for rows with a byte > 1) give the NumPy
reference's counts, draw counts and flags on row lengths around the 32-byte
loads: shorter than one load, an exact multiple, and a tail; and over several
blocks of rows, for any thread count."""

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


@pytest.mark.parametrize("G", [1, 7, 20, 32])
def test_cell_stream_blocks_match_the_reference(G):
    """Several 2048-row blocks: a byte > 1 at the very start of a block (which the
    block before reads too, in its last cells' 32-byte loads) and one in the last
    cell of the tensor; cost and latency alongside; 1 and 2 threads."""
    rng = np.random.default_rng(G)
    N, L = 2 * 2048 + 3, 3
    x = (rng.random((N, L, G)) < 0.4).astype(np.uint8)
    cost = rng.random(x.shape)
    want_clean = dispatch("sufficient_stats", "numpy")(x, None, cost, cost)
    bad = x.copy()
    bad[2048, 0, 0] = 3
    bad[-1, -1, -1] = 9
    want_bad = dispatch("sufficient_stats", "numpy")(bad, None, None, None)
    threads = cf.get_num_threads()
    first = None
    try:
        for n in (1, 2):
            cf.set_num_threads(n)
            got = dispatch("sufficient_stats", "cpp")(x, None, cost, cost)
            np.testing.assert_array_equal(got["successes"], want_clean["successes"])
            first = first or got
            for key in ("cost_sum", "latency_sum", "latency_max"):
                # NumPy sums pairwise: the same to rounding; bit-identical over threads
                np.testing.assert_allclose(got[key], want_clean[key], rtol=1e-13)
                np.testing.assert_array_equal(got[key], first[key])
            assert got["out_of_range_scores"] == 0
            got = dispatch("sufficient_stats", "cpp")(bad, None, None, None)
            np.testing.assert_array_equal(got["successes"], want_bad["successes"])
            assert got["out_of_range_scores"] == want_bad["out_of_range_scores"] == 2
            with pytest.raises(ValueError, match=r"\[0, 1\]"):
                cf.EvalResults.from_arrays(bad)
    finally:
        cf.set_num_threads(threads)
