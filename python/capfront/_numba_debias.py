"""Numba versions of the debiased-oracle kernels, line-for-line ports of
``cpp/include/capfront/debias.hpp``."""

from __future__ import annotations

import numpy as np

from ._jit import njit, prange
from ._kernels.expected_max import _subsample_rows_nb, hypergeom_cdf_nb

# default degrees of freedom of the logit Student-t cell effect (family 2,
# "logit_t"; the fits choose them from capfront.debias.latent.T_DF_GRID); the C++
# kernels' capfront::kLogitTDf is the same number
LOGIT_T_DF = 3.0


def subsample_curve_rows_nb(successes, n_draws, sizes):
    """Per-prompt exact subsample curve ``(N, len(sizes))``."""
    return _subsample_rows_nb(successes, n_draws, sizes)


@njit
def _crossfit_split_nb(S, G, g, gz, gw):
    L = S.shape[0]
    M = 0
    for l in range(L):
        if G[l] > 0:
            M += 1
    obs = np.empty(M, np.int64)
    i = 0
    for l in range(L):
        if G[l] > 0:
            obs[i] = l
            i += 1
    A = g + 1
    cdf = np.empty(A)
    pmf = np.zeros((M, A))
    cdfm = np.zeros((M, A))
    for i in range(M):
        l = obs[i]
        hypergeom_cdf_nb(G[l], S[l], g, cdf)
        prev = 0.0
        for a in range(A):
            pmf[i, a] = max(0.0, cdf[a] - prev)
            cdfm[i, a] = prev
            prev = cdf[a]
    pre = np.empty(M + 1)
    suf = np.empty(M + 1)
    value = 0.0
    for a in range(A):
        anyp = False
        for i in range(M):
            if pmf[i, a] > 0.0:
                anyp = True
        if not anyp:
            continue
        for q in range(gz.shape[0]):
            z = gz[q]
            pre[0] = 1.0
            for i in range(M):
                pre[i + 1] = pre[i] * (cdfm[i, a] + z * pmf[i, a])
            suf[M] = 1.0
            for i in range(M, 0, -1):
                suf[i - 1] = suf[i] * (cdfm[i - 1, a] + z * pmf[i - 1, a])
            for i in range(M):
                f = pmf[i, a]
                if f <= 0.0:
                    continue
                l = obs[i]
                rest = (S[l] - a) / (G[l] - g)
                value += gw[q] * f * rest * pre[i] * suf[i + 1]
    return value


@njit(parallel=True)
def crossfit_rows_nb(successes, n_draws, gz, gw):
    N, L = successes.shape
    out = np.empty(N)
    for n in prange(N):
        gmin = 1 << 62
        for l in range(L):
            if n_draws[n, l] > 0 and n_draws[n, l] < gmin:
                gmin = n_draws[n, l]
        g1 = gmin // 2
        g2 = gmin - gmin // 2
        v1 = _crossfit_split_nb(successes[n], n_draws[n], g1, gz, gw)
        v2 = (
            v1 if g2 == g1 else _crossfit_split_nb(successes[n], n_draws[n], g2, gz, gw)
        )
        out[n] = 0.5 * (v1 + v2)
    return out


@njit(parallel=True)
def _estep_nb(table, cell_row, topic, log_w, resp, ll, fused=False):
    N, L = cell_row.shape
    J = log_w.shape[0]
    for n in prange(N):
        r = resp[n]
        for j in range(J):
            r[j] = log_w[j]
        k = topic[n]
        for l in range(L):
            row = cell_row[n, l]
            if row < 0:
                continue
            for j in range(J):
                r[j] += table[l, k, row, j]
        mx = -np.inf
        for j in range(J):
            mx = max(mx, r[j])
        tot = 0.0
        if fused:  # as the C++ fused E-step: no exp below -30, one reciprocal
            for j in range(J):
                v = r[j] - mx
                r[j] = 0.0 if v < -30.0 else np.exp(v)
                tot += r[j]
            inv = 1.0 / tot
            for j in range(J):
                r[j] *= inv
                if r[j] < 1e-12:
                    r[j] = 0.0
        else:
            for j in range(J):
                r[j] = np.exp(r[j] - mx)
                tot += r[j]
            for j in range(J):
                r[j] /= tot
                if r[j] < 1e-12:
                    r[j] = 0.0
        ll[n] = mx + np.log(tot)


# prompts per block of the C++ E-step's log-likelihood sum (parallel.hpp
# kBlockRows): each block's terms are added in order, then the blocks in order
KERNEL_BLOCK_ROWS = 2048


def block_ordered_sum(x: np.ndarray) -> float:
    """``sum(x)`` in the C++ E-step's order (``KERNEL_BLOCK_ROWS`` blocks, each
    added in order; ``cumsum`` adds in order, NumPy's ``sum`` pairwise)."""
    out = 0.0
    for a in range(0, len(x), KERNEL_BLOCK_ROWS):
        out += float(np.cumsum(x[a : a + KERNEL_BLOCK_ROWS])[-1])
    return out


def pgm_estep_nb(table, cell_row, topic, log_w, resp, ll_out=None, fused=False):
    """E-step (see the C++ kernel); ``ll_out`` receives each prompt's term;
    ``fused``: the weights as the C++ fused E-step and statistics make them."""
    ll = np.empty(cell_row.shape[0]) if ll_out is None else ll_out
    _estep_nb(table, cell_row, topic, log_w, resp, ll, bool(fused))
    return block_ordered_sum(ll)


@njit(parallel=True)
def pgm_stats_nb(resp, cell_row, topic, n_topics, n_rows):
    N, L = cell_row.shape
    J = resp.shape[1]
    C = np.zeros((L, n_topics, n_rows, J))
    for l in prange(L):
        for n in range(N):
            row = cell_row[n, l]
            if row < 0:
                continue
            k = topic[n]
            for j in range(J):
                C[l, k, row, j] += resp[n, j]
    return C


@njit
def _log_sigmoid_nb(t):
    if t >= 0:
        return -np.log1p(np.exp(-t))
    return t - np.log1p(np.exp(t))


@njit
def _log_mix_nb(family, eta, tau, a, b, t):
    if family == 0:
        z = (t - eta) / tau
        return -0.5 * z * z
    if family == 2:  # a: the degrees of freedom
        z = (t - eta) / tau
        return -0.5 * (a + 1.0) * np.log1p(z * z / a)
    return a * _log_sigmoid_nb(t) + b * _log_sigmoid_nb(-t)


@njit(parallel=True)
def _emax_pair_nb(
    members,
    p0,
    p1,
    j,
    resp,
    cell_row,
    slot,
    R,
    lo,
    hi,
    off,
    cmean,
    store,
    h,
    hx,
    H1,
    H2,
    used,
    m1,
    m2,
    pmean,
):
    L = cell_row.shape[1]
    for i in prange(p0, p1):
        n = members[i]
        r = resp[n, j]
        k0 = 0
        k1 = 0
        for l in range(L):
            row = cell_row[n, l]
            if row < 0:
                continue
            c = slot[l * R + row]
            k0 = max(k0, lo[c])
            k1 = max(k1, hi[c])
            pmean[n, l] += r * cmean[c]
        s1 = H1[k0]
        s2 = H2[k0]
        if k1 > k0:
            prod = np.ones(k1 - k0)
            for l in range(L):
                row = cell_row[n, l]
                if row < 0:
                    continue
                c = slot[l * R + row]
                if hi[c] <= k0:
                    continue
                base = off[c] + (k0 - lo[c])
                for m in range(hi[c] - k0):
                    prod[m] *= store[base + m]
            for m in range(k1 - k0):
                tail = 1.0 - prod[m]
                s1 += h[k0 + m] * tail
                s2 += hx[k0 + m] * tail
        used[n] += r
        m1[n] += r * s1
        m2[n] += r * s2


@njit
def _emax_nb(
    resp,
    cell_row,
    topic,
    theta,
    d_grid,
    loglik,
    t_grid,
    family,
    scale,
    cut,
    h,
    hx,
    min_resp,
    eps,
    tails,
    edge_loglik,
    emax,
    emax2,
    pmean,
    t_df,
):
    N, L = cell_row.shape
    J = resp.shape[1]
    K = theta.shape[1]
    R, T = loglik.shape
    M1 = cut.shape[0]
    t0 = t_grid[0]
    dt = t_grid[1] - t_grid[0]
    used = np.zeros(N)
    m1 = np.zeros(N)
    m2 = np.zeros(N)
    count = np.zeros(K * J + 1, np.int64)
    for n in range(N):
        for j in range(J):
            if resp[n, j] >= min_resp:
                count[topic[n] * J + j + 1] += 1
    for q in range(K * J):
        count[q + 1] += count[q]
    members = np.empty(count[K * J], np.int64)
    fill = count[:-1].copy()
    for n in range(N):
        for j in range(J):
            if resp[n, j] >= min_resp:
                q = topic[n] * J + j
                members[fill[q]] = n
                fill[q] += 1
    H1 = np.zeros(M1 + 1)
    H2 = np.zeros(M1 + 1)
    for m in range(M1):
        H1[m + 1] = H1[m] + h[m]
        H2[m + 1] = H2[m] + hx[m]
    sig = 1.0 / (1.0 + np.exp(-t_grid))
    lik = np.empty((R, T))
    lik_edge = np.empty((R, 2))  # the atoms' likelihoods, same scale
    for r in range(R):
        mx = loglik[r].max()
        for i in range(T):
            lik[r, i] = np.exp(loglik[r, i] - mx)
        for e in range(2):
            lik_edge[r, e] = np.exp(edge_loglik[r, e] - mx)
    point_mass = not scale > 0.0
    slot = np.full(L * R, -1, np.int64)
    mix = np.zeros((L, T))
    wlo = np.zeros(L, np.int64)
    whi = np.zeros(L, np.int64)
    atom_lo = np.zeros(L)  # in units of the window's mix
    atom_hi = np.zeros(L)
    peta = np.empty(L)
    w = np.empty(T)
    for k in range(K):
        for j in range(J):
            p0 = count[k * J + j]
            p1 = count[k * J + j + 1]
            if p0 == p1:
                continue
            for l in range(L):
                peta[l] = theta[l, k] - d_grid[j]
            if point_mass:
                for i in range(p0, p1):
                    n = members[i]
                    r = resp[n, j]
                    best = 0.0
                    for l in range(L):
                        if cell_row[n, l] < 0:
                            continue
                        sv = 1.0 / (1.0 + np.exp(-peta[l]))
                        best = max(best, sv)
                        pmean[n, l] += r * sv
                    used[n] += r
                    m1[n] += r * best
                    m2[n] += r * best * best
                continue
            slot[:] = -1
            have_m = np.zeros(L, np.bool_)
            n_cells = 0
            for i in range(p0, p1):
                n = members[i]
                for l in range(L):
                    row = cell_row[n, l]
                    if row >= 0 and slot[l * R + row] < 0:
                        slot[l * R + row] = n_cells
                        n_cells += 1
            lo = np.zeros(n_cells, np.int64)
            hi = np.zeros(n_cells, np.int64)
            off = np.zeros(n_cells, np.int64)
            cmean = np.zeros(n_cells)
            store = np.empty(n_cells * M1)
            used_store = 0
            for q in range(L * R):
                c = slot[q]
                if c < 0:
                    continue
                l = q // R
                row = q - l * R
                a_mix = 0.0
                b_mix = 0.0
                if family == 2:
                    a_mix = t_df
                elif family != 0:
                    cc = (1.0 - scale) / scale
                    qq = 1.0 / (1.0 + np.exp(-peta[l]))
                    a_mix = qq * cc
                    b_mix = (1.0 - qq) * cc
                if not have_m[l]:
                    have_m[l] = True
                    pos = np.round((peta[l] - t0) / dt)
                    c0 = int(min(max(pos, 0.0), T - 1.0))
                    ref = _log_mix_nb(family, peta[l], scale, a_mix, b_mix, t_grid[c0])
                    if c0 > 0:
                        ref = max(
                            ref,
                            _log_mix_nb(
                                family, peta[l], scale, a_mix, b_mix, t_grid[c0 - 1]
                            ),
                        )
                    if c0 + 1 < T:
                        ref = max(
                            ref,
                            _log_mix_nb(
                                family, peta[l], scale, a_mix, b_mix, t_grid[c0 + 1]
                            ),
                        )
                    mix[l, c0] = np.exp(
                        _log_mix_nb(family, peta[l], scale, a_mix, b_mix, t_grid[c0])
                        - ref
                    )
                    a = c0
                    b = c0 + 1
                    while a > 0:
                        v = (
                            _log_mix_nb(
                                family, peta[l], scale, a_mix, b_mix, t_grid[a - 1]
                            )
                            - ref
                        )
                        if v < -40.0:
                            break
                        a -= 1
                        mix[l, a] = np.exp(v)
                    while b < T:
                        v = (
                            _log_mix_nb(family, peta[l], scale, a_mix, b_mix, t_grid[b])
                            - ref
                        )
                        if v < -40.0:
                            break
                        mix[l, b] = np.exp(v)
                        b += 1
                    wlo[l] = a
                    whi[l] = b
                    # the mass outside the grid, in the units of mix
                    zw = 0.0
                    for i2 in range(a, b):
                        zw += mix[l, i2]
                    if tails[l, k, j, 2] > 1e-300:
                        atom_lo[l] = tails[l, k, j, 0] / tails[l, k, j, 2] * zw
                        atom_hi[l] = tails[l, k, j, 1] / tails[l, k, j, 2] * zw
                    else:  # (nearly) all of it outside
                        for i2 in range(a, b):
                            mix[l, i2] = 0.0
                        atom_lo[l] = tails[l, k, j, 0]
                        atom_hi[l] = tails[l, k, j, 1]
                a = wlo[l]
                b = whi[l]
                alo = lik_edge[row, 0] * atom_lo[l]
                ahi = lik_edge[row, 1] * atom_hi[l]
                tot = alo + ahi
                mean = ahi
                for i2 in range(a, b):
                    v = lik[row, i2] * mix[l, i2]
                    w[i2] = v
                    tot += v
                    mean += v * sig[i2]
                if not tot > 1e-280:
                    l_lo = edge_loglik[row, 0] + np.log(atom_lo[l])
                    l_hi = edge_loglik[row, 1] + np.log(atom_hi[l])
                    mx = max(l_lo, l_hi)
                    for i2 in range(a, b):
                        mx = max(mx, loglik[row, i2] + np.log(mix[l, i2]))
                    alo = np.exp(l_lo - mx)
                    ahi = np.exp(l_hi - mx)
                    tot = alo + ahi
                    mean = ahi
                    for i2 in range(a, b):
                        v = np.exp(loglik[row, i2] + np.log(mix[l, i2]) - mx)
                        w[i2] = v
                        tot += v
                        mean += v * sig[i2]
                cmean[c] = mean / tot
                inv = 1.0 / tot
                m = 0
                if not alo * inv > eps:
                    while m < M1 and cut[m] <= a:
                        m += 1
                acc = alo
                i2 = a
                off[c] = used_store
                started = False
                lo[c] = M1
                hi[c] = M1
                while m < M1:
                    cm = min(cut[m], b)
                    while i2 < cm:
                        acc += w[i2]
                        i2 += 1
                    wr = w[cut[m]] if (cut[m] >= a and cut[m] < b) else 0.0
                    wl = w[cut[m] - 1] if (cut[m] > a and cut[m] - 1 < b) else 0.0
                    F = min(1.0, max(0.0, (acc + (wr - wl) / 24.0) * inv))
                    if not started:
                        if F <= eps:
                            m += 1
                            continue
                        started = True
                        lo[c] = m
                    if F >= 1.0 - eps:
                        hi[c] = m
                        break
                    store[used_store] = F
                    used_store += 1
                    m += 1
                if not started:
                    lo[c] = hi[c]
            _emax_pair_nb(
                members,
                p0,
                p1,
                j,
                resp,
                cell_row,
                slot,
                R,
                lo,
                hi,
                off,
                cmean,
                store,
                h,
                hx,
                H1,
                H2,
                used,
                m1,
                m2,
                pmean,
            )
    for n in range(N):
        emax[n] = m1[n] / used[n]
        emax2[n] = m2[n] / used[n]
        for l in range(L):
            pmean[n, l] /= used[n]


def pgm_emax_nb(
    resp,
    cell_row,
    topic,
    theta,
    d_grid,
    loglik,
    t_grid,
    family,
    scale,
    cut,
    w1,
    w2,
    min_resp,
    eps,
    tails,
    edge_loglik,
    t_df=LOGIT_T_DF,
):
    """Posterior ``E[max_l p]``, ``E[max_l p^2]`` per prompt and ``E[p]`` per cell
    (port of ``capfront::pgm_emax``; ``t_df``: the Student t's degrees of freedom,
    family 2)."""
    N, L = cell_row.shape
    emax = np.empty(N)
    emax2 = np.empty(N)
    pmean = np.zeros((N, L))
    _emax_nb(
        resp,
        cell_row,
        topic,
        theta,
        d_grid,
        loglik,
        t_grid,
        int(family),
        float(scale),
        cut,
        w1,
        w2,
        float(min_resp),
        float(eps),
        tails,
        edge_loglik,
        emax,
        emax2,
        pmean,
        float(t_df),
    )
    return emax, emax2, pmean


@njit(parallel=True)
def pgm_mstep_scores_nb(stats, logh, cand):
    LK, R, J = stats.shape
    n_cand = cand.shape[1]
    f = np.zeros((LK, n_cand))
    for a in prange(LK):
        for r in range(R):
            for j in range(J):
                w = stats[a, r, j]
                if w == 0.0:
                    continue
                for c in range(n_cand):
                    f[a, c] += w * logh[r, cand[j, c]]
    return f
