"""Philox4x32-10: known-answer vectors and identical streams in every backend."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import capfront
from capfront import _philox
from capfront._kernels import dispatch
from capfront._kernels.bootstrap import stream_words_nb


def _words(seed, rep, stream, start, count, backend):  # noqa: ANN001, ANN202
    return dispatch("philox_words", backend)(seed, rep, stream, start, count)


# Random123 kat_vectors: counter (4 words), key (2 words) -> output (4 words).
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    (
        (0xFFFFFFFF,) * 4,
        (0xFFFFFFFF,) * 2,
        (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
    ),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize(("ctr", "key", "want"), KAT)
def test_known_answers_numpy(ctr, key, want):
    out = _philox.philox4x32_10(np.array([ctr], dtype=np.uint32), key)
    assert tuple(int(x) for x in out[0]) == want


@pytest.mark.parametrize(("ctr", "key", "want"), [KAT[0], KAT[2]])
def test_known_answers_stream(ctr, key, want, backend):
    """The stream words of block j are Philox(counter (j lo, rep, stream, j hi)).
    (The all-ones counter needs a word index beyond 2^64.)"""
    seed = key[0] | (key[1] << 32)
    j = ctr[0] | (ctr[3] << 32)
    words = _words(seed, ctr[1], ctr[2], 4 * j, 4, backend)
    assert tuple(int(x) for x in words) == want


@given(
    seed=st.integers(0, 2**64 - 1),
    rep=st.integers(0, 2**32 - 1),
    stream=st.integers(0, 3),
    start_block=st.integers(0, 2**33),
    count=st.integers(0, 300),
)
def test_streams_identical(seed, rep, stream, start_block, count):
    ref = _philox.stream_words(seed, rep, stream, 4 * start_block, count)
    assert ref.dtype == np.uint32 and ref.shape == (count,)
    for name in capfront.available_backends():
        got = _words(seed, rep, stream, 4 * start_block, count, name)
        np.testing.assert_array_equal(got, ref, err_msg=name)


def test_counter_wrap_inside_a_vector_group():
    """The low counter word wraps to the high word within one SIMD group."""
    start = 4 * (2**32 - 5)
    ref = _philox.stream_words(3, 1, 0, start, 200)
    for name in capfront.available_backends():
        np.testing.assert_array_equal(_words(3, 1, 0, start, 200, name), ref)


def test_numba_kernel_direct():
    out = np.empty(12, dtype=np.uint32)
    stream_words_nb(5, 0, 2, 1, 8, 9, out)
    np.testing.assert_array_equal(out[:9], _philox.stream_words(5, 2, 1, 8, 9))


def test_bad_seed():
    with pytest.raises(ValueError, match="seed"):
        _philox.philox_key(-1)
    with pytest.raises(ValueError, match="seed"):
        _philox.philox_key(2**64)
    with pytest.raises(ValueError, match="multiple of 4"):
        _philox.stream_words(0, 0, 0, 2, 4)


def test_words_are_uniform():
    """A crude sanity check of the stream: mean and lag-1 correlation of 1e5 words."""
    u = _philox.stream_words(0, 0, 0, 0, 100_000) / 2.0**32
    assert abs(u.mean() - 0.5) < 0.005
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.01
