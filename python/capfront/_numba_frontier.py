"""Numba versions of the frontier kernels, line-for-line ports of
``cpp/include/capfront/frontier.hpp`` (same float operations in the same order, so
the segments are identical to the C++ ones). The 3-D Pareto port moved to
``capfront._kernels.pareto3d`` (re-exported here)."""

from __future__ import annotations

import numpy as np

from ._jit import njit, prange
from ._kernels.pareto3d import pareto_minima_3d_nb  # noqa: F401  (moved there)

_BLOCK = 512  # prompts per parallel block


@njit
def _prompt_hull_nb(c, q, hull, keep):
    """Upper-left hull of one prompt's options; returns its length (frontier.hpp).
    ``keep`` is scratch of size M."""
    M = c.shape[0]
    c_min = np.inf
    q_max = -np.inf
    for j in range(M):
        if not (np.isfinite(c[j]) and np.isfinite(q[j])):
            continue
        c_min = min(c_min, c[j])
        q_max = max(q_max, q[j])
    if not (c_min < np.inf):
        return 0
    c_star = np.inf
    q_base = -np.inf
    for j in range(M):
        if not (np.isfinite(c[j]) and np.isfinite(q[j])):
            continue
        if q[j] == q_max:
            c_star = min(c_star, c[j])
        if c[j] == c_min:
            q_base = max(q_base, q[j])
    m = 0
    for j in range(M):
        if not (np.isfinite(c[j]) and np.isfinite(q[j])):
            continue
        if c[j] <= c_star and q[j] >= q_base:
            keep[m] = j
            m += 1
    cand = keep[:m]
    order = cand[np.argsort(c[cand], kind="mergesort")]
    h = 0
    for i in range(m):
        o = order[i]
        co = c[o]
        qo = q[o]
        if h > 0:
            t = hull[h - 1]
            if qo <= q[t]:
                continue
            if co == c[t]:
                h -= 1
        while h >= 2:
            a = hull[h - 2]
            b = hull[h - 1]
            s_ab = (q[b] - q[a]) / (c[b] - c[a])
            s_bo = (qo - q[b]) / (co - c[b])
            if s_ab <= s_bo:
                h -= 1
            else:
                break
        hull[h] = o
        h += 1
    return h


@njit
def _posthoc_row_nb(S, G, cell_cost, K, c, q):
    L = S.shape[0]
    for l in range(L):
        r = 1.0
        for k in range(1, K + 1):
            j = l * K + (k - 1)
            if k > G[l]:
                c[j] = np.nan
                q[j] = np.nan
                continue
            num = G[l] - S[l] - k + 1
            if k == 1:
                q[j] = float(S[l]) / float(G[l])
                r = float(num) / float(G[l])
            else:
                if num > 0:
                    r = r * (float(num) / float(G[l] - k + 1))
                else:
                    r = 0.0
                q[j] = 1.0 - r
            c[j] = float(k) * cell_cost[l]


@njit
def _fill_row_nb(kind, n, a, b, d, K, c, q):
    if kind == 0:
        c[:] = a[n]
        q[:] = b[n]
    else:
        _posthoc_row_nb(a[n], b[n], d[n], K, c, q)


@njit(parallel=True)
def _hull_pass_nb(
    kind,
    a,
    b,
    d,
    K,
    N,
    M,
    counts,
    offsets,
    fill_out,
    base_cost,
    base_quality,
    base_option,
    prompt,
    dcost,
    dquality,
    option_from,
    option_to,
):
    # Pass 1 (fill_out False): hull lengths; pass 2: write the segments at offsets.
    # Blocks of prompts share scratch buffers.
    n_blocks = (N + _BLOCK - 1) // _BLOCK
    for blk in prange(n_blocks):
        c = np.empty(M)
        q = np.empty(M)
        hull = np.empty(M, dtype=np.int64)
        keep = np.empty(M, dtype=np.int64)
        for n in range(blk * _BLOCK, min(N, (blk + 1) * _BLOCK)):
            _fill_row_nb(kind, n, a, b, d, K, c, q)
            h = _prompt_hull_nb(c, q, hull, keep)
            if not fill_out:
                counts[n] = max(h - 1, 0)
                continue
            if h == 0:
                continue
            base_option[n] = hull[0]
            base_cost[n] = c[hull[0]]
            base_quality[n] = q[hull[0]]
            s = offsets[n]
            for i in range(1, h):
                x = hull[i - 1]
                z = hull[i]
                prompt[s] = n
                option_from[s] = x
                option_to[s] = z
                dcost[s] = c[z] - c[x]
                dquality[s] = q[z] - q[x]
                s += 1


def _hull_segments_nb(kind, a, b, d, K, N, M):
    counts = np.zeros(N, dtype=np.int64)
    offsets = np.zeros(N, dtype=np.int64)
    e_f = np.empty(0)
    e_i = np.empty(0, dtype=np.int64)
    _hull_pass_nb(
        kind,
        a,
        b,
        d,
        K,
        N,
        M,
        counts,
        offsets,
        False,
        e_f,
        e_f,
        e_i,
        e_i,
        e_f,
        e_f,
        e_i,
        e_i,
    )
    offsets[1:] = np.cumsum(counts)[:-1]
    S = int(counts.sum())
    base_cost = np.full(N, np.nan)
    base_quality = np.full(N, np.nan)
    base_option = np.full(N, -1, dtype=np.int64)
    prompt = np.empty(S, dtype=np.int64)
    option_from = np.empty(S, dtype=np.int64)
    option_to = np.empty(S, dtype=np.int64)
    dcost = np.empty(S)
    dquality = np.empty(S)
    _hull_pass_nb(
        kind,
        a,
        b,
        d,
        K,
        N,
        M,
        counts,
        offsets,
        True,
        base_cost,
        base_quality,
        base_option,
        prompt,
        dcost,
        dquality,
        option_from,
        option_to,
    )
    order = _slope_order_nb(dquality, dcost)
    return {
        "base_cost": base_cost,
        "base_quality": base_quality,
        "base_option": base_option,
        "prompt": prompt[order],
        "dcost": dcost[order],
        "dquality": dquality[order],
        "option_from": option_from[order],
        "option_to": option_to[order],
    }


@njit
def _slope_order_nb(dquality, dcost):
    # stable sort of -slope: ties keep (prompt, hull position) order
    return np.argsort(-(dquality / dcost), kind="mergesort")


def hull_segments_dense_nb(option_cost: np.ndarray, option_quality: np.ndarray) -> dict:
    N, M = option_cost.shape
    dummy = np.empty((N, 0))
    return _hull_segments_nb(0, option_cost, option_quality, dummy, 1, N, M)


def hull_segments_posthoc_nb(
    successes: np.ndarray, n_draws: np.ndarray, cell_cost: np.ndarray, max_k: int
) -> dict:
    N, L = successes.shape
    return _hull_segments_nb(
        1, successes, n_draws, cell_cost, int(max_k), N, L * int(max_k)
    )


@njit
def _vertices_close_nb(a, b):
    if np.isfinite(a) and np.isfinite(b):
        return abs(a - b) <= 0.0 + 1e-12 * abs(b)
    return a == b


@njit
def _frontier_vertices_nb(x0, y0, w, prompt, dcost, dquality, out):
    m = 0
    out[m, 0] = x0
    out[m, 1] = y0
    m += 1
    ax = 0.0
    ay = 0.0
    have_prev = False
    prev_slope = 0.0
    px = 0.0
    py = 0.0
    for s in range(prompt.shape[0]):
        ws = w[prompt[s]]
        if not ws > 0:
            continue
        slope = dquality[s] / dcost[s]
        if have_prev and not _vertices_close_nb(prev_slope, slope):
            out[m, 0] = px
            out[m, 1] = py
            m += 1
        ax += ws * dcost[s]
        ay += ws * dquality[s]
        px = x0 + ax
        py = y0 + ay
        prev_slope = slope
        have_prev = True
    if have_prev:
        out[m, 0] = px
        out[m, 1] = py
        m += 1
    return m


def frontier_vertices_nb(x0, y0, w, prompt, dcost, dquality):
    """frontier.hpp ``frontier_vertices``: sequential running sums, collinear
    points (slopes equal to a relative 1e-12) removed."""
    out = np.empty((prompt.shape[0] + 1, 2))
    m = _frontier_vertices_nb(
        float(x0),
        float(y0),
        np.ascontiguousarray(w, dtype=np.float64),
        np.ascontiguousarray(prompt, dtype=np.int64),
        np.ascontiguousarray(dcost, dtype=np.float64),
        np.ascontiguousarray(dquality, dtype=np.float64),
        out,
    )
    return out[:m].copy()
