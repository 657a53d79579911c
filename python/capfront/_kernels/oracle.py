"""Per-prompt rows of the naive oracles (``cpp/include/capfront/oracle.hpp``).

Inputs, all ``(N, L)``: ``successes`` (counts or score sums), ``n_draws`` (a cell
with ``n_draws <= 0`` was not run; a broadcast view of one count is fine),
``cost_sum`` (float, or ``None`` without costs). Where a cell was run,
``p_hat = successes / n_draws`` and the mean cost of one generation is
``cost_sum / n_draws``.

Kernels:

- ``naive_oracle_rows -> (choice, value, cost)``: per prompt the model with the
  highest ``p_hat`` among the run cells; ties go to the lowest mean cost (NumPy's
  argmin rule: a NaN cost among the tied wins, the first one), then to the first
  model; ``value = p_hat`` and ``cost`` = mean cost at the choice (``cost`` is
  ``None`` without costs).
- ``union_oracle_rows -> (miss, cost)``: per prompt ``prod_l (1 - p_hat)`` over the
  run cells (in model order) and the sum of their mean costs (NumPy's pairwise
  order), or ``None``.

The NumPy reference is the plain array expression; the Numba port and the C++
kernel read each row once and give bit-identical arrays. The oracle value is the
mean of ``value`` (or of ``1 - miss``) over prompts.
"""

from __future__ import annotations

import numpy as np

from .._backend import core
from .._jit import njit, prange
from . import Kernel, register

_S_TYPES = (np.uint8, np.uint16, np.int32, np.int64, np.float64)
_G_TYPES = (np.uint8, np.uint16, np.int32, np.int64)
_BLOCK = 1024  # rows per parallel block


def _check(successes, n_draws, cost_sum):
    """Arrays with matching ``(N, L)`` shapes, ``L >= 1``."""
    S = np.asarray(successes)
    if S.ndim != 2:
        raise ValueError(f"successes must be shaped (N, L), got {S.shape}")
    if S.dtype.kind not in "buif":
        raise TypeError(f"successes must be numeric, got dtype {S.dtype}")
    if S.shape[1] == 0:
        raise ValueError("successes has no models (L = 0)")
    G = np.asarray(n_draws)
    if G.shape != S.shape or G.dtype.kind not in "bui":
        raise ValueError(
            f"n_draws must be an integer array shaped {S.shape}, got "
            f"{G.dtype} {G.shape}"
        )
    C = None if cost_sum is None else np.asarray(cost_sum, dtype=np.float64)
    if C is not None and C.shape != S.shape:
        raise ValueError(f"cost_sum must be shaped {S.shape}, got {C.shape}")
    return S, G, C


def _compiled_inputs(successes, n_draws, cost_sum):
    """C-contiguous native arrays of the kernels' dtypes; ``G`` is ``None`` with
    ``g_const`` the one count when ``n_draws`` is a broadcast view (or constant by
    construction); ``C`` has one row when ``cost_sum`` is one row broadcast over
    the prompts."""
    S, G, C = _check(successes, n_draws, cost_sum)

    def native(a, types, wide):
        if a.dtype.type not in types or not a.dtype.isnative:
            a = a.astype(a.dtype.type if a.dtype.type in types else wide)
        return np.ascontiguousarray(a)

    S = native(S, _S_TYPES, np.float64 if S.dtype.kind == "f" else np.int64)
    g_const = 0
    if S.shape[0] and G.strides == (0, 0):
        g_const, G = int(G[0, 0]), None
    else:
        G = native(G, _G_TYPES, np.int64)
    if C is not None:
        # _check made it native float64; per-model prices broadcast over the
        # prompts are passed as their one row (no (N, L) copy)
        shared = C.shape[0] > 1 and C.strides[0] == 0
        C = np.ascontiguousarray(C[:1] if shared else C)
    return S, G, g_const, C


# ------------------------------------------------------------------ NumPy reference
def _p_hat_np(S, G, C):
    obs = G > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        p_hat = np.where(obs, S / G, np.nan)
        mean_cost = None if C is None else np.where(obs, C / G, np.nan)
    return obs, p_hat, mean_cost


def naive_oracle_rows_np(successes, n_draws, cost_sum):
    """NumPy reference of the routed oracle's rows (the array expressions)."""
    S, G, C = _check(successes, n_draws, cost_sum)
    obs, p_hat, mean_cost = _p_hat_np(S, G, C)
    p = np.where(obs, p_hat, -np.inf)
    tied = p == p.max(axis=1, keepdims=True)
    if mean_cost is not None:
        choice = np.argmin(np.where(tied, mean_cost, np.inf), axis=1)
    else:
        choice = np.argmax(tied, axis=1)
    choice = choice.astype(np.int64)
    rows = np.arange(S.shape[0])
    cost = None if mean_cost is None else mean_cost[rows, choice]
    return choice, p_hat[rows, choice], cost


def union_oracle_rows_np(successes, n_draws, cost_sum):
    """NumPy reference of the union oracle's rows."""
    S, G, C = _check(successes, n_draws, cost_sum)
    obs, p_hat, mean_cost = _p_hat_np(S, G, C)
    miss = np.where(obs, 1.0 - p_hat, 1.0).prod(axis=1)
    cost = None if mean_cost is None else np.where(obs, mean_cost, 0.0).sum(axis=1)
    return miss, cost


# ------------------------------------------------------------------ Numba port
@njit
def _g_nb(G, g_const, n, l):
    return np.int64(G[n, l]) if G.shape[0] > 0 else np.int64(g_const)


@njit
def _c_nb(C, n, l):
    """Cost sum of cell (n, l); ``C`` may be one row shared by every prompt."""
    return C[n, l] if C.shape[0] > 1 else C[0, l]


@njit
def _prehoc_row_nb(S, G, g_const, C, has_cost, n, p, tied):
    """Choice of row ``n`` (oracle.hpp's floating-point path; ``p`` and ``tied`` are
    scratch of size L)."""
    L = S.shape[1]
    any_nan = False
    best = -np.inf
    for l in range(L):
        g = _g_nb(G, g_const, n, l)
        p[l] = float(S[n, l]) / float(g) if g > 0 else -np.inf
        if np.isnan(p[l]):
            any_nan = True
        elif p[l] > best:
            best = p[l]
    if any_nan:
        best = np.nan  # numpy's max propagates NaN: nothing ties
    for l in range(L):
        tied[l] = p[l] == best
    j = 0
    if has_cost:
        # NumPy argmin of (tied ? mean cost : +inf): the first NaN, else first min
        m = np.inf
        if tied[0]:
            g = _g_nb(G, g_const, n, 0)
            m = _c_nb(C, n, 0) / float(g) if g > 0 else np.nan
        if not np.isnan(m):
            for l in range(1, L):
                if not tied[l]:
                    continue
                g = _g_nb(G, g_const, n, l)
                v = _c_nb(C, n, l) / float(g) if g > 0 else np.nan
                if np.isnan(v):
                    j = l
                    break
                if v < m:
                    m = v
                    j = l
    else:
        while j < L and not tied[j]:
            j += 1
        if j == L:
            j = 0
    return j


@njit(parallel=True)
def _prehoc_rows_nb(S, G, g_const, C, has_cost, choice, value, cost):
    N, L = S.shape
    for b in prange((N + _BLOCK - 1) // _BLOCK):
        p = np.empty(L)
        tied = np.empty(L, dtype=np.bool_)
        for n in range(b * _BLOCK, min(N, (b + 1) * _BLOCK)):
            j = _prehoc_row_nb(S, G, g_const, C, has_cost, n, p, tied)
            g = _g_nb(G, g_const, n, j)
            choice[n] = j
            value[n] = float(S[n, j]) / float(g) if g > 0 else np.nan
            if has_cost:
                cost[n] = _c_nb(C, n, j) / float(g) if g > 0 else np.nan


@njit
def _pairwise_leaf_nb(a, lo, n):
    """numpy.add.reduce's pairwise sum of ``a[lo:lo + n]`` for ``n <= 128``."""
    if n < 8:
        res = -0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r = a[lo : lo + 8].copy()
    i = 8
    while i < n - (n % 8):
        for k in range(8):
            r[k] += a[lo + i + k]
        i += 8
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit
def _pairwise_nb(a, n):
    """numpy.add.reduce's pairwise sum of ``a[:n]`` (oracle.hpp): halves that are
    multiples of 8 above 128 values. The recursion runs on an explicit stack
    (Numba's cache mishandles recursive functions)."""
    if n <= 128:
        return _pairwise_leaf_nb(a, 0, n)
    depth = 2
    m = n
    while m > 128:
        m = m // 2 + 8
        depth += 1
    seg_lo = np.empty(depth, dtype=np.int64)
    seg_n = np.empty(depth, dtype=np.int64)
    stage = np.empty(depth, dtype=np.int64)
    left = np.empty(depth)
    top = 0
    seg_lo[0], seg_n[0], stage[0] = 0, n, 0
    ret = 0.0
    while top >= 0:
        lo, cn = seg_lo[top], seg_n[top]
        if cn <= 128:
            ret = _pairwise_leaf_nb(a, lo, cn)
            top -= 1
            continue
        n2 = cn // 2
        n2 -= n2 % 8
        if stage[top] == 0:  # sum the left half first
            stage[top] = 1
            top += 1
            seg_lo[top], seg_n[top], stage[top] = lo, n2, 0
        elif stage[top] == 1:  # left half in ret: now the right half
            left[top] = ret
            stage[top] = 2
            top += 1
            seg_lo[top], seg_n[top], stage[top] = lo + n2, cn - n2, 0
        else:
            ret = left[top] + ret
            top -= 1
    return ret


@njit(parallel=True)
def _union_rows_nb(S, G, g_const, C, has_cost, miss, cost):
    N, L = S.shape
    for b in prange((N + _BLOCK - 1) // _BLOCK):
        c = np.empty(L)
        for n in range(b * _BLOCK, min(N, (b + 1) * _BLOCK)):
            prod = 1.0
            for l in range(L):
                g = _g_nb(G, g_const, n, l)
                prod *= 1.0 - float(S[n, l]) / float(g) if g > 0 else 1.0
            miss[n] = prod
            if has_cost:
                for l in range(L):
                    g = _g_nb(G, g_const, n, l)
                    c[l] = _c_nb(C, n, l) / float(g) if g > 0 else 0.0
                cost[n] = 0.0 + _pairwise_nb(c, L)


def _numba_args(successes, n_draws, cost_sum):
    """Inputs widened to int64 (float64 scores) so that Numba compiles each kernel
    twice only; the values (and the divisions) are unchanged."""
    S, G, g_const, C = _compiled_inputs(successes, n_draws, cost_sum)
    S = S.astype(np.float64 if S.dtype.kind == "f" else np.int64, copy=False)
    G = (
        np.zeros((0, 0), dtype=np.int64)
        if G is None
        else G.astype(np.int64, copy=False)
    )
    has_cost = C is not None
    return S, G, g_const, (C if has_cost else np.zeros((0, 0))), has_cost


def naive_oracle_rows_numba(successes, n_draws, cost_sum):
    S, G, g_const, C, has_cost = _numba_args(successes, n_draws, cost_sum)
    N = S.shape[0]
    choice = np.empty(N, dtype=np.int64)
    value = np.empty(N)
    cost = np.empty(N if has_cost else 0)
    _prehoc_rows_nb(S, G, g_const, C, has_cost, choice, value, cost)
    return choice, value, cost if has_cost else None


def union_oracle_rows_numba(successes, n_draws, cost_sum):
    S, G, g_const, C, has_cost = _numba_args(successes, n_draws, cost_sum)
    N = S.shape[0]
    miss = np.empty(N)
    cost = np.empty(N if has_cost else 0)
    _union_rows_nb(S, G, g_const, C, has_cost, miss, cost)
    return miss, cost if has_cost else None


# ------------------------------------------------------------------ C++
def naive_oracle_rows_cpp(successes, n_draws, cost_sum):
    S, G, g_const, C = _compiled_inputs(successes, n_draws, cost_sum)
    choice, value, cost = core().prehoc_oracle_rows(S, G, g_const, C)
    return choice, value, cost if C is not None else None


def union_oracle_rows_cpp(successes, n_draws, cost_sum):
    S, G, g_const, C = _compiled_inputs(successes, n_draws, cost_sum)
    miss, cost = core().union_oracle_rows(S, G, g_const, C)
    return miss, cost if C is not None else None


for _name, _np, _nb, _cpp in (
    (
        "naive_oracle_rows",
        naive_oracle_rows_np,
        naive_oracle_rows_numba,
        naive_oracle_rows_cpp,
    ),
    (
        "union_oracle_rows",
        union_oracle_rows_np,
        union_oracle_rows_numba,
        union_oracle_rows_cpp,
    ),
):
    register(Kernel(_name, numpy=_np, numba=_nb, cpp=_cpp, family="oracle"))
