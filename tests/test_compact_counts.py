"""``EvalResults.from_counts`` keeps compact storage (counts in the smallest
unsigned dtype, broadcast draw counts and per-model cost sums), and the oracle
kernels read a per-model cost row in place: same results as full arrays."""

from __future__ import annotations

import numpy as np
import pytest

import capfront as cf
from capfront._kernels import dispatch


def _counts(seed: int = 3, N: int = 500, L: int = 6, G: int = 7):
    rng = np.random.default_rng(seed)
    S = rng.binomial(G, rng.random((N, L))).astype(np.uint8)
    S[:3] = G  # ties at the top: the cheapest tied model wins
    return S, G, rng.uniform(0.1, 5.0, size=L)


def test_from_counts_storage_is_compact():
    S, G, cost = _counts()
    res = cf.EvalResults.from_counts(S, G, cost=cost, latency=cost / 2)
    st = res.stats
    assert st.successes.dtype == np.uint8 and st.successes.flags.c_contiguous
    assert not np.shares_memory(st.successes, S)  # a copy: the caller may reuse S
    for name in ("n_draws", "cost_sum", "latency_sum", "latency_max"):
        arr = getattr(st, name)
        assert arr.shape == S.shape and arr.strides[0] == 0, name
    np.testing.assert_array_equal(res.successes, S)
    np.testing.assert_array_equal(st.cost_sum, np.broadcast_to(cost * G, S.shape))
    np.testing.assert_allclose(
        res.mean_cost, np.broadcast_to(cost, S.shape), rtol=1e-15
    )
    np.testing.assert_array_equal(st.latency_max, np.broadcast_to(cost / 2, S.shape))


def test_from_counts_ragged_draws_and_input_dtypes():
    S, G, cost = _counts(N=40)
    g = np.full(S.shape, G, dtype=np.int16)
    g[5, 2] = 0
    S2 = S.astype(np.int64)
    S2[5, 2] = 0
    for succ in (S2, S2.astype(">i4"), S2.astype(float), S2.T.copy().T):
        res = cf.EvalResults.from_counts(succ, g, cost=cost)
        assert res.stats.n_draws.dtype == np.uint8
        np.testing.assert_array_equal(res.successes, S2)
        np.testing.assert_array_equal(res.stats.cost_sum, cost * g)
    with pytest.raises(ValueError, match="between 0 and n_draws"):
        cf.EvalResults.from_counts(S2 + (g == 0), g)
    with pytest.raises(ValueError, match="between 0 and n_draws"):
        cf.EvalResults.from_counts(S2 - 1, G)
    with pytest.raises(ValueError, match="whole numbers"):
        cf.EvalResults.from_counts(S2 + 0.5, G)
    with pytest.raises(ValueError, match="does not match"):
        cf.EvalResults.from_counts(S2, np.full((3, 2), G))
    bools = cf.EvalResults.from_counts(S > 3, 1)
    np.testing.assert_array_equal(bools.successes, S > 3)


@pytest.mark.parametrize("backend", cf.available_backends())
@pytest.mark.parametrize("name", ["naive_oracle_rows", "union_oracle_rows"])
def test_oracle_kernels_read_a_shared_cost_row(backend, name):
    S, G, cost = _counts()
    cost[2] = cost[4]  # equal prices among tied models
    shared = np.broadcast_to(cost * G, S.shape)
    run = dispatch(name, backend)
    got = run(S, np.broadcast_to(np.int32(G), S.shape), shared)
    want = run(S, np.broadcast_to(np.int32(G), S.shape), np.ascontiguousarray(shared))
    for a, b in zip(got, want, strict=True):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def test_from_arrays_per_model_cost_is_a_broadcast_row():
    rng = np.random.default_rng(5)
    x = rng.random((60, 4, 6)) < 0.5
    price = np.array([1.0, 2.0, 0.5, 4.0])
    res = cf.EvalResults.from_arrays(x, cost=price)
    assert res.stats.cost_sum.strides[0] == 0
    np.testing.assert_array_equal(
        res.stats.cost_sum, np.broadcast_to(price * 6, (60, 4))
    )
    mask = rng.random(x.shape) < 0.8
    ragged = cf.EvalResults.from_arrays(x, cost=price, mask=mask)
    np.testing.assert_array_equal(ragged.stats.cost_sum, price * mask.sum(axis=2))
    full = cf.EvalResults.from_arrays(x, cost=np.broadcast_to(price, (60, 4)).copy())
    a, b = cf.naive_oracle(res), cf.naive_oracle(full)
    assert (a.value, a.cost) == (b.value, b.cost)
    np.testing.assert_array_equal(a.choice, b.choice)
