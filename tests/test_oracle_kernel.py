"""The naive-oracle row kernels: every registry backend bit-identical to the NumPy
reference on edge cases, and ``naive_oracle`` identical to the array expressions it
replaced (``prehoc_choice``'s tie rule and cost semantics)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capfront as cf
from capfront._kernels import dispatch, kernel, kernels
from capfront.baselines import naive_oracle, prehoc_choice
from capfront.suffstats import SufficientStats, constant_draws

BACKENDS = cf.available_backends()
NAMES = ("naive_oracle_rows", "union_oracle_rows")


def _same(got, want, what: str) -> None:
    """Arrays equal bit for bit (NaN == NaN, dtype kind and shape too); ``None``
    only where the reference has ``None``."""
    assert len(got) == len(want), what
    for g, w in zip(got, want, strict=True):
        if w is None:
            assert g is None, what
            continue
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype.kind == w.dtype.kind, what
        np.testing.assert_array_equal(g, w, err_msg=what, strict=False)
        if w.dtype.kind == "f":  # signed zeros too
            np.testing.assert_array_equal(np.signbit(g), np.signbit(w), err_msg=what)


def _check_all(S, G, C, what: str = "") -> None:
    for name in NAMES:
        want = kernel(name).numpy(S, G, C)
        for b in BACKENDS:
            _same(dispatch(name, b)(S, G, C), want, f"{name} {b} {what}")


def _rounded_cost_ties(rng) -> tuple:
    """One draw count, every model tied, and cost sums one ulp apart in either
    order: after the division by G some round to one mean cost (a tie NumPy breaks
    by position) and some do not."""
    x = rng.uniform(0.1, 10.0, 400)
    up = np.nextafter(x, np.inf)
    C = np.stack([up, x, up, np.nextafter(up, np.inf)], axis=1)
    C[::2] = C[::2, ::-1]
    S = np.full(C.shape, 2)
    return S, constant_draws(3, S.shape), C * 3


def _cases() -> dict[str, tuple]:
    """(successes, n_draws, cost_sum) edge cases."""
    rng = np.random.default_rng(11)
    S = rng.integers(0, 5, (64, 7))
    G = rng.integers(0, 5, (64, 7))
    S = np.minimum(S, G)
    C = rng.choice([0.5, 1.0, 2.0], (64, 7)) * G
    nan_c = C.copy()
    nan_c[::3, 2] = np.nan  # NaN costs, some on tied cells
    big_g = (G.astype(np.int64) << 27) + 1  # beyond the exact integer range
    big_s = np.minimum(S.astype(np.int64) << 27, big_g)
    one_g = constant_draws(4, (64, 7))
    graded = rng.choice([0.0, 0.25, 1.0, np.nan], (64, 7)) * 4
    none_run = np.zeros((3, 4), dtype=np.int32)
    return {
        "ints": (S, G, C),
        "no cost": (S, G, None),
        "one row": (S[:1], G[:1], C[:1]),
        "empty": (S[:0], G[:0], C[:0]),
        "nan cost": (S, G, nan_c),
        "inf cost": (S, G, np.where(S > 1, np.inf, C)),
        "uint8/uint16": (S.astype(np.uint8), G.astype(np.uint16), C),
        "big-endian": (S.astype(">i4"), G.astype(">i8"), C.astype(">f8")),
        "non-contiguous": (
            np.repeat(S, 2, axis=1)[:, ::2],
            np.repeat(G, 2, axis=1)[:, ::2],
            np.repeat(C, 2, axis=1)[:, ::2],
        ),
        "large counts": (big_s, big_g, C),
        "broadcast G": (np.minimum(S, 4), one_g, C),
        "broadcast G, inf and NaN costs": (
            np.minimum(S, 4),
            one_g,
            np.where(S > 2, np.inf, np.where(S == 1, np.nan, C)),
        ),
        "broadcast G uint8 no cost": (np.minimum(S, 4).astype(np.uint8), one_g, None),
        "graded with NaN": (graded, one_g, C),
        "no cell run": (np.zeros((3, 4), dtype=np.int32), none_run, np.ones((3, 4))),
        "negative counts": (S - 2, G, C),
        "one model": (S[:, :1], G[:, :1], C[:, :1]),
        "rounded cost ties": _rounded_cost_ties(rng),
        "many models": (
            rng.integers(0, 3, (5, 300)),
            np.full((5, 300), 2),
            rng.random((5, 300)),
        ),
    }


def test_registry_lists_the_kernels():
    ks = kernels()
    for name in NAMES:
        assert ks[name].family == "oracle"
        assert all(callable(ks[name].for_backend(b)) for b in cf.BACKENDS)
    assert "pareto_minima_3d" in ks
    with pytest.raises(ValueError, match="unknown kernel"):
        kernel("nope")
    with pytest.raises(ValueError, match="unknown backend"):
        dispatch(NAMES[0], "fortran")


@pytest.mark.parametrize("case", list(_cases()))
def test_backends_bit_identical(case):
    _check_all(*_cases()[case], what=case)


def test_reference_rules_on_a_hand_example():
    """Ties by value at different G (1/2 == 2/4), then the cheapest, then a NaN
    cost wins (NumPy's argmin); missing cells never chosen when one was run."""
    S = np.array([[1, 2, 0], [1, 2, 3], [0, 0, 0]])
    G = np.array([[2, 4, 0], [2, 4, 3], [1, 1, 1]])
    C = np.array([[3.0, 2.0, 0.0], [1.0, 1.0, 6.0], [2.0, np.nan, 1.0]])
    choice, value, cost = kernel("naive_oracle_rows").numpy(S, G, C)
    np.testing.assert_array_equal(choice, [1, 2, 1])
    np.testing.assert_array_equal(value, [0.5, 1.0, 0.0])
    np.testing.assert_array_equal(cost, [0.5, 2.0, np.nan])
    miss, ucost = kernel("union_oracle_rows").numpy(S, G, C)
    np.testing.assert_array_equal(miss, [0.25, 0.0, 1.0])
    np.testing.assert_array_equal(ucost, [1.5 + 0.5, 0.5 + 0.25 + 2.0, np.nan])
    _check_all(S, G, C, "hand")


def test_close_ratios_with_large_counts_are_not_merged():
    """Above 2^26 draws distinct ratios can round to one double (a tie for NumPy)
    or stay apart: the compiled kernels then divide as NumPy does."""
    g = 2**52 + 1
    S = np.array([[2**51, 2**51 + 1, 1]], dtype=np.int64)
    G = np.array([[2**52, g, 3]], dtype=np.int64)
    _check_all(S, G, np.array([[2.0, 1.0, 0.5]]))


def test_bad_inputs():
    for b in BACKENDS:
        run = dispatch("naive_oracle_rows", b)
        with pytest.raises(ValueError, match=r"\(N, L\)"):
            run(np.zeros(3), np.ones(3), None)
        with pytest.raises(ValueError, match="n_draws"):
            run(np.zeros((2, 3)), np.ones((3, 2)), None)
        with pytest.raises(ValueError, match="L = 0"):
            run(np.zeros((2, 0)), np.ones((2, 0), dtype=int), None)
        with pytest.raises(ValueError, match="cost_sum"):
            run(np.zeros((2, 3)), np.ones((2, 3), dtype=int), np.ones(3))


def _old_naive_oracle(results, kind):
    """The array expressions naive_oracle used before the kernels."""
    obs, cost, rows = results.observed, results.mean_cost, np.arange(results.n_prompts)
    if kind == "prehoc":
        choice = prehoc_choice(results)
        value = float(results.p_hat[rows, choice].mean())
        c = float(cost[rows, choice].mean()) if cost is not None else float("nan")
        return value, c, choice
    miss = np.where(obs, 1.0 - results.p_hat, 1.0).prod(axis=1)
    c = (
        float(np.where(obs, cost, 0.0).sum(axis=1).mean())
        if cost is not None
        else np.nan
    )
    return float((1.0 - miss).mean()), c, None


@settings(max_examples=40, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 40), st.integers(1, 12), st.integers(1, 6)),
    flags=st.tuples(st.booleans(), st.booleans()),
    seed=st.integers(0, 2**32 - 1),
)
def test_naive_oracle_identical_to_the_array_expressions(shape, flags, seed):
    (n, n_models, g_max), (ragged, with_cost) = shape, flags
    rng = np.random.default_rng(seed)
    G = rng.integers(0 if ragged else g_max, g_max + 1, (n, n_models))
    G[:, 0] = np.maximum(G[:, 0], 1)  # every prompt has a run cell
    S = rng.integers(0, g_max + 1, (n, n_models)) % (G + 1)
    cost = rng.choice([0.1, 0.2, 1.0], n_models) if with_cost else None
    results = cf.EvalResults.from_counts(S, G, cost=cost)
    common = results.common_prompts
    for on in ("all", "common"):
        if on == "common" and not common.any():
            continue
        ref = results if on == "all" else results.select(np.flatnonzero(common))
        for kind in ("prehoc", "union"):
            want_v, want_c, want_choice = _old_naive_oracle(ref, kind)
            for b in BACKENDS:
                got = naive_oracle(results, kind, on=on, backend=b)
                assert got.value == want_v, (on, kind, b)
                assert got.cost == want_c or (np.isnan(got.cost) and np.isnan(want_c))
                if want_choice is not None:
                    np.testing.assert_array_equal(got.choice, want_choice)


def test_naive_oracle_compact_storage_and_threads():
    """Compact uint8 counts (as chunks hold them; read in place) and any thread
    count."""
    rng = np.random.default_rng(3)
    S = rng.binomial(5, rng.random((3000, 9)))
    cost = np.linspace(1.0, 2.0, 9)
    wide = cf.EvalResults.from_counts(S, 5, cost=cost)
    stats = SufficientStats(
        successes=S.astype(np.uint8),
        n_draws=constant_draws(5, S.shape),
        cost_sum=wide.stats.cost_sum,
        flags={"nonbinary_scores": 0},
    )
    r = cf.EvalResults.from_stats(stats)
    want = [_old_naive_oracle(wide, k)[:2] for k in ("prehoc", "union")]
    threads = cf.get_num_threads()
    try:
        for t in (1, 3):
            cf.set_num_threads(t)
            for b in BACKENDS:
                got = [naive_oracle(r, k, backend=b) for k in ("prehoc", "union")]
                assert [(o.value, o.cost) for o in got] == want, (t, b)
    finally:
        cf.set_num_threads(threads)
