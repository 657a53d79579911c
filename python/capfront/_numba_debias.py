"""Numba versions of the debiased-oracle kernels, line-for-line ports of
``cpp/include/capfront/debias.hpp``."""

from __future__ import annotations

import numpy as np

from ._jit import njit, prange
from ._numba_kernels import _subsample_rows_nb, hypergeom_cdf_nb


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
def _estep_nb(table, cell_row, topic, log_w, resp, ll):
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
        for j in range(J):
            r[j] = np.exp(r[j] - mx)
            tot += r[j]
        for j in range(J):
            r[j] /= tot
            if r[j] < 1e-12:
                r[j] = 0.0
        ll[n] = mx + np.log(tot)


def pgm_estep_nb(table, cell_row, topic, log_w, resp):
    ll = np.empty(cell_row.shape[0])
    _estep_nb(table, cell_row, topic, log_w, resp, ll)
    return float(ll.sum())


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


@njit(parallel=True)
def pgm_emax_nb(
    resp, cell_row, topic, eta_idx, eta_wt, cdf_table, mean_table, x, min_resp
):
    N, L = cell_row.shape
    J = resp.shape[1]
    M = cdf_table.shape[2] - 1
    h = np.empty(M + 1)
    for m in range(M + 1):
        h[m] = 0.5 * ((x[m + 1] if m < M else x[M]) - (x[m - 1] if m > 0 else x[0]))
    emax = np.empty(N)
    emax2 = np.empty(N)
    pmean = np.zeros((N, L))
    for n in prange(N):
        prod = np.empty(M + 1)
        k = topic[n]
        m1 = 0.0
        m2 = 0.0
        used = 0.0
        for j in range(J):
            rj = resp[n, j]
            if rj < min_resp:
                continue
            used += rj
            prod[:] = 1.0
            for l in range(L):
                row = cell_row[n, l]
                if row < 0:
                    continue
                e = eta_idx[l, k, j]
                wt = eta_wt[l, k, j]
                for m in range(M + 1):
                    fa = cdf_table[row, e, m]
                    prod[m] *= fa + wt * (cdf_table[row, e + 1, m] - fa)
                pa = mean_table[row, e]
                pmean[n, l] += rj * (pa + wt * (mean_table[row, e + 1] - pa))
            s1 = 0.0
            s2 = 0.0
            for m in range(M + 1):
                tail = 1.0 - prod[m]
                s1 += h[m] * tail
                s2 += h[m] * 2.0 * x[m] * tail
            m1 += rj * s1
            m2 += rj * s2
        emax[n] = m1 / used
        emax2[n] = m2 / used
        for l in range(L):
            pmean[n, l] /= used
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
