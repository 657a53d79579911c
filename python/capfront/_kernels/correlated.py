"""The correlated logit-normal model's E-step (``cpp/include/capfront/correlated.hpp``):
the NumPy reference beside the Numba port and the C++ binding (see
:mod:`capfront.debias.correlated` for the model and the fit).

Kernel ``correlated_estep(successes, n_draws, mu, precision, logdet, m0, z,
log_q, inflate, newton_iters) -> (m, s1, s2, ll, post)``: ``successes``, ``n_draws``
``(N, L)`` (``n_draws == 0``: a missing cell, no likelihood term), ``mu (L,)``, the
prior precision ``P = Sigma^-1 (L, L)`` and ``logdet = log|Sigma|``, ``m0 (N, L)``
the Newton starts, ``z (K, L)`` draws of a standardised proposal density ``q0``
(standard normal or Student t; the same for every prompt) and ``log_q (K,)`` their
log densities ``log q0(z_k)``, ``inflate`` the proposal's scale factor ``c``. Per
prompt: the Laplace mode ``m`` of ``log p(eta | S_n)`` (damped Newton, each step
at most 3 in its largest coordinate, at most ``newton_iters`` steps, stopping after
one below 1e-8), ``V = H^-1`` (``H = P + diag(G s (1 - s))``) and its lower
Cholesky factor ``C0``; draws ``eta_k = m + c C0 z_k`` weighted by ``p(S_n | eta)
N(eta; mu, Sigma) / q(eta)`` (``log q(eta_k) = log_q[k] - log|c C0|``), self-normalised:

- ``ll[n] = log mean_k exp(lw_k) + sum_l log C(G_nl, S_nl)`` (the log marginal
  likelihood, binomial coefficients included),
- ``post[n] = sum_k w_k expit(max_l eta_kl)``,
- ``s1 = sum_n [sum_k w_k eta_k + (m - sum_k g_k eta_k)]``,
  ``s2 = sum_n [sum_k w_k eta_k eta_k' + (m m' + V - sum_k g_k eta_k eta_k')]``:
  the brackets are a control variate, the Laplace Gaussian ``N(m, V)``'s exact
  moments minus their self-normalised estimate from the same draws (weights
  ``g_k ~ exp(-c^2 z_k'z_k / 2 - log_q[k])``, the same for every prompt). They
  remove the draws' error in the Gaussian part of each posterior, which the EM
  otherwise accumulates (with 256 draws the smallest eigenvalue of ``Sigma`` falls
  by a tenth per step on the model's own data; with the control variate it holds).

``K = 0``: the Laplace approximation (``ll`` the Laplace marginal likelihood,
moments ``m`` and ``m m' + V``, ``post = expit(max_l m_l)``). A Hessian that is not
positive definite raises ``ValueError``. The compiled kernels use the identity
``C0' P C0 = I - C0' diag(D) C0`` for the prior's quadratic form (O(L) per draw) and
sum in blocks of 32 prompts in block order (thread-count independent); the NumPy
reference evaluates ``(eta - mu)' P (eta - mu)`` directly: they agree to rounding.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit, gammaln

from .._backend import core
from .._jit import njit, prange
from . import Kernel, register

BLOCK = 32  # prompts per block (the compiled kernels' partial sums)
_NEWTON_TOL = 1e-8
_MAX_STEP = 3.0
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_NOT_PD = "the precision is not positive definite"


def _check(S, G, mu, P, logdet, m0, z, log_q, inflate, newton_iters):
    S = np.ascontiguousarray(S, dtype=np.float64)
    if S.ndim != 2:
        raise ValueError("successes must be shaped (N, L)")
    N, L = S.shape
    G = np.ascontiguousarray(G, dtype=np.float64)
    if G.shape != (N, L):
        raise ValueError("n_draws must have the shape of successes")
    mu = np.ascontiguousarray(mu, dtype=np.float64)
    if mu.shape != (L,):
        raise ValueError("mu must have L entries")
    P = np.ascontiguousarray(P, dtype=np.float64)
    if P.shape != (L, L):
        raise ValueError("precision must be (L, L)")
    m0 = np.ascontiguousarray(m0, dtype=np.float64)
    if m0.shape != (N, L):
        raise ValueError("m0 must have the shape of successes")
    z = np.ascontiguousarray(z, dtype=np.float64)
    if z.ndim != 2 or z.shape[1] != L:
        raise ValueError("z must be (K, L)")
    log_q = np.ascontiguousarray(log_q, dtype=np.float64)
    if log_q.shape != (z.shape[0],):
        raise ValueError("log_q must have K entries")
    if not (math.isfinite(inflate) and inflate > 0):
        raise ValueError("inflate must be finite and > 0")
    if not math.isfinite(logdet):
        raise ValueError("logdet must be finite")
    if int(newton_iters) < 0:
        raise ValueError("newton_iters must be >= 0")
    if not ((G >= 0) & (S >= 0) & (S <= G)).all():
        raise ValueError("need 0 <= successes <= n_draws")
    return S, G, mu, P, float(logdet), m0, z, log_q, float(inflate), int(newton_iters)


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def _control(z: np.ndarray, log_q: np.ndarray, c: float) -> tuple:
    """``(zbar, B)``: ``sum_k g_k z_k`` and ``I - c^2 sum_k g_k z_k z_k'`` with the
    Laplace Gaussian's self-normalised weights ``g_k ~ exp(-c^2 z'z / 2 - log_q)``."""
    L = z.shape[1]
    if z.shape[0] == 0:
        return np.zeros(L), np.zeros((L, L))
    lg = -0.5 * c * c * (z * z).sum(1) - log_q
    g = np.exp(lg - lg.max())
    g /= g.sum()
    return g @ z, np.eye(L) - c * c * np.einsum("k,ki,kj->ij", g, z, z)


def _log_norm(z: np.ndarray, log_q: np.ndarray, c: float) -> float:
    """``log mean_k exp(lg_k)``, ``lg_k = log N(c z_k; 0, c^2 I) + L log c -
    log_q[k]``: the draws' estimate of the Laplace Gaussian's normaliser (1)."""
    K, L = z.shape
    if K == 0:
        return 0.0
    lg = -0.5 * c * c * (z * z).sum(1) - log_q + L * (math.log(c) - _HALF_LOG_2PI)
    top = lg.max()
    return float(top + math.log(np.exp(lg - top).sum() / K))


def _chol(a: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        raise ValueError(_NOT_PD) from None


def correlated_estep_numpy(
    S, G, mu, P, logdet, m0, z, log_q, inflate, newton_iters, moments=True
):
    S, G, mu, P, logdet, m, z, log_q, c, iters = _check(
        S, G, mu, P, logdet, m0, z, log_q, inflate, newton_iters
    )
    m = m.copy()
    N, L = S.shape
    K = z.shape[0]
    eye = np.eye(L)
    active = np.arange(N)
    for _ in range(iters):
        if active.size == 0:
            break
        mm = m[active]
        s = expit(mm)
        g = S[active] - G[active] * s - np.einsum("nj,ij->ni", mm - mu, P)
        H = P[None] + (G[active] * s * (1 - s))[:, :, None] * eye
        _chol(H)
        step = np.linalg.solve(H, g[..., None])[..., 0]
        big = np.abs(step).max(1)
        f = np.minimum(1.0, _MAX_STEP / np.maximum(big, 1e-12))
        m[active] = mm + step * f[:, None]
        active = active[big >= _NEWTON_TOL]
    s1, s2 = np.zeros(L), np.zeros((L, L))
    ll, post = np.empty(N), np.empty(N)
    zbar, B = _control(z, log_q, c)
    log_norm = _log_norm(z, log_q, c)
    lc_all = (gammaln(G + 1) - gammaln(S + 1) - gammaln(G - S + 1)).sum(1)
    for a in range(0, N, BLOCK):
        b = min(N, a + BLOCK)
        mb, Sb, Gb = m[a:b], S[a:b], G[a:b]
        s = expit(mb)
        H = P[None] + (Gb * s * (1 - s))[:, :, None] * eye
        _chol(H)
        V = np.linalg.inv(H)
        V = 0.5 * (V + np.swapaxes(V, 1, 2))
        C0 = _chol(V)
        log_c0 = np.log(np.diagonal(C0, axis1=1, axis2=2)).sum(1)
        lc = lc_all[a:b]
        if K == 0:
            d = mb - mu
            q0 = np.einsum("ni,ij,nj->n", d, P, d)
            lik = (Sb * mb - Gb * _softplus(mb)).sum(1)
            ll[a:b] = lik - 0.5 * q0 - 0.5 * logdet + log_c0 + lc
            post[a:b] = expit(mb.max(1))
            if moments:
                s1 += mb.sum(0)
                s2 += np.einsum("ni,nj->ij", mb, mb) + V.sum(0)
            continue
        e = mb[:, None, :] + c * np.einsum("kj,nij->nki", z, C0)
        lik = (Sb[:, None] * e - Gb[:, None] * _softplus(e)).sum(2)
        d = e - mu
        quad = np.einsum("nki,ij,nkj->nk", d, P, d)
        lw = lik - 0.5 * quad - 0.5 * logdet - log_q[None]
        lw += (log_c0 + L * (np.log(c) - _HALF_LOG_2PI))[:, None]
        top = lw.max(1, keepdims=True)
        w = np.exp(lw - top)
        tot = w.sum(1, keepdims=True)
        ll[a:b] = top[:, 0] + np.log(tot[:, 0] / K) + lc - log_norm
        w /= tot
        post[a:b] = (w * expit(e.max(2))).sum(1)
        if not moments:
            continue
        # the control variate: N(m, V)'s moments minus their estimate by g
        ug = np.einsum("nij,j->ni", C0, zbar)
        s1 += np.einsum("nk,nki->i", w, e) - c * ug.sum(0)
        cross = np.einsum("ni,nj->ij", mb, ug)
        s2 += np.einsum("nk,nki,nkj->ij", w, e, e) - c * (cross + cross.T)
        s2 += np.einsum("nij,jk,nlk->il", C0, B, C0)
    return m, s1, s2, ll, post


# ------------------------------------------------------------------ Numba port


@njit
def _softplus_nb(x):
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@njit
def _expit_nb(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@njit
def _cholesky_nb(a, L):
    for j in range(L):
        d = a[j, j]
        for k in range(j):
            d -= a[j, k] * a[j, k]
        if not d > 0.0:
            return False
        d = math.sqrt(d)
        a[j, j] = d
        for i in range(j + 1, L):
            v = a[i, j]
            for k in range(j):
                v -= a[i, k] * a[j, k]
            a[i, j] = v / d
        for k in range(j + 1, L):
            a[j, k] = 0.0
    return True


@njit
def _chol_solve_nb(R, L, x):
    for i in range(L):
        v = x[i]
        for k in range(i):
            v -= R[i, k] * x[k]
        x[i] = v / R[i, i]
    for i in range(L - 1, -1, -1):
        v = x[i]
        for k in range(i + 1, L):
            v -= R[k, i] * x[k]
        x[i] = v / R[i, i]


@njit
def _hessian_nb(P, Gn, m, H, s, D, L):
    for l in range(L):
        s[l] = _expit_nb(m[l])
        D[l] = Gn[l] * s[l] * (1.0 - s[l])
    for i in range(L):
        for j in range(L):
            H[i, j] = P[i, j]
        H[i, i] += D[i]


@njit
def _prompt_nb(
    Sn,
    Gn,
    mu,
    P,
    logdet,
    m,
    z,
    zz,
    log_q,
    zbar,
    B,
    c,
    log_norm,
    moments,
    iters,
    s1,
    s2,
    out,
    sq,
    vec,
    kv,
    u,
):
    L = m.shape[0]
    K = z.shape[0]
    H, R, V, Vfull, uu = sq[0], sq[1], sq[2], sq[3], sq[4]
    g, step, s, D, Pa, ubar, ug = vec[0], vec[1], vec[2], vec[3], vec[4], vec[5], vec[6]
    lw, emax = kv[0], kv[1]
    for _ in range(iters):
        _hessian_nb(P, Gn, m, H, s, D, L)
        for i in range(L):
            v = Sn[i] - Gn[i] * s[i]
            for j in range(L):
                v -= P[i, j] * (m[j] - mu[j])
            step[i] = v
        R[:, :] = H
        if not _cholesky_nb(R, L):
            return False
        _chol_solve_nb(R, L, step)
        big = 0.0
        for l in range(L):
            big = max(big, abs(step[l]))
        f = min(1.0, _MAX_STEP / max(big, 1e-12))
        for l in range(L):
            m[l] += step[l] * f
        if big < _NEWTON_TOL:
            break
    _hessian_nb(P, Gn, m, H, s, D, L)
    R[:, :] = H
    if not _cholesky_nb(R, L):
        return False
    for j in range(L):
        for i in range(L):
            g[i] = 0.0
        g[j] = 1.0
        _chol_solve_nb(R, L, g)
        for i in range(L):
            V[i, j] = g[i]
    for i in range(L):
        for j in range(i):
            v = 0.5 * (V[i, j] + V[j, i])
            V[i, j] = v
            V[j, i] = v
    Vfull[:, :] = V
    if not _cholesky_nb(V, L):
        return False
    log_c0 = 0.0
    for l in range(L):
        log_c0 += math.log(V[l, l])
    q0 = 0.0
    lc = 0.0
    lik_m = 0.0
    for i in range(L):
        v = 0.0
        for j in range(L):
            v += P[i, j] * (m[j] - mu[j])
        Pa[i] = v
        q0 += (m[i] - mu[i]) * v
        if Gn[i] > 0.0:
            lc += (
                math.lgamma(Gn[i] + 1.0)
                - math.lgamma(Sn[i] + 1.0)
                - math.lgamma(Gn[i] - Sn[i] + 1.0)
            )
            lik_m += Sn[i] * m[i] - Gn[i] * _softplus_nb(m[i])
    if K == 0:
        out[0] = lik_m - 0.5 * q0 - 0.5 * logdet + log_c0 + lc
        mx = -np.inf
        for l in range(L):
            mx = max(mx, m[l])
        out[1] = _expit_nb(mx)
        if not moments:
            return True
        for i in range(L):
            s1[i] += m[i]
            for j in range(L):
                s2[i, j] += m[i] * m[j] + Vfull[i, j]
        return True
    base = -0.5 * q0 - 0.5 * logdet + log_c0 + L * (math.log(c) - _HALF_LOG_2PI)
    top = -np.inf
    for k in range(K):
        lik = 0.0
        pu = 0.0
        du = 0.0
        mx = -np.inf
        for l in range(L):
            v = 0.0
            for j in range(l + 1):
                v += V[l, j] * z[k, j]
            u[k, l] = v
            e = m[l] + c * v
            mx = max(mx, e)
            if Gn[l] > 0.0:
                lik += Sn[l] * e - Gn[l] * _softplus_nb(e)
            pu += Pa[l] * v
            du += D[l] * v * v
        w = lik + base - c * pu - 0.5 * c * c * (zz[k] - du) - log_q[k]
        lw[k] = w
        emax[k] = mx
        top = max(top, w)
    tot = 0.0
    pm = 0.0
    ubar[:] = 0.0
    uu[:, :] = 0.0
    for k in range(K):
        w = math.exp(lw[k] - top)
        tot += w
        pm += w * _expit_nb(emax[k])
        if not moments:
            continue
        for i in range(L):
            wu = w * u[k, i]
            ubar[i] += wu
            for j in range(i + 1):
                uu[i, j] += wu * u[k, j]
    out[0] = top + math.log(tot / K) + lc - log_norm
    out[1] = pm / tot
    if not moments:
        return True
    for i in range(L):
        ubar[i] /= tot
    # the control variate: ug = C0 zbar, cb = C0 B C0'
    ug[:] = 0.0
    for i in range(L):
        for j in range(i + 1):
            ug[i] += V[i, j] * zbar[j]
        ubar[i] -= ug[i]
    for i in range(L):
        for j in range(L):
            v = 0.0
            for k in range(i + 1):
                v += V[i, k] * B[k, j]
            R[i, j] = v
    for i in range(L):
        s1[i] += m[i] + c * ubar[i]
        for j in range(i + 1):
            cb = 0.0
            for k in range(j + 1):
                cb += R[i, k] * V[j, k]
            v = m[i] * m[j] + c * (m[i] * ubar[j] + ubar[i] * m[j])
            v += c * c * uu[i, j] / tot + cb
            s2[i, j] += v
            if j < i:
                s2[j, i] += v
    return True


@njit(parallel=True)
def _estep_nb(S, G, mu, P, logdet, m, z, log_q, c, log_norm, moments, it, ll, post):
    N, L = S.shape
    K = z.shape[0]
    n_blocks = (N + BLOCK - 1) // BLOCK
    part1 = np.zeros((n_blocks, L))
    part2 = np.zeros((n_blocks, L, L))
    bad = np.zeros(n_blocks, np.int64)
    zz = np.zeros(K)
    for k in range(K):
        for l in range(L):
            zz[k] += z[k, l] * z[k, l]
    zbar = np.zeros(L)
    B = np.zeros((L, L))
    if K > 0:
        lg = np.empty(K)
        for k in range(K):
            lg[k] = -0.5 * c * c * zz[k] - log_q[k]
        top = lg.max()
        tot = 0.0
        for k in range(K):
            lg[k] = math.exp(lg[k] - top)
            tot += lg[k]
        for k in range(K):
            w = lg[k] / tot
            for i in range(L):
                zbar[i] += w * z[k, i]
                for j in range(L):
                    B[i, j] -= c * c * w * z[k, i] * z[k, j]
        for i in range(L):
            B[i, i] += 1.0
    for b in prange(n_blocks):
        out = np.empty(2)
        sq = np.zeros((5, L, L))
        vec = np.zeros((7, L))
        kv = np.zeros((2, K))
        u = np.zeros((K, L))
        for n in range(b * BLOCK, min(N, (b + 1) * BLOCK)):
            ok = _prompt_nb(
                S[n],
                G[n],
                mu,
                P,
                logdet,
                m[n],
                z,
                zz,
                log_q,
                zbar,
                B,
                c,
                log_norm,
                moments,
                it,
                part1[b],
                part2[b],
                out,
                sq,
                vec,
                kv,
                u,
            )
            if ok:
                ll[n] = out[0]
                post[n] = out[1]
            else:
                ll[n] = np.nan
                post[n] = np.nan
                bad[b] += 1
    s1 = np.zeros(L)
    s2 = np.zeros((L, L))
    for b in range(n_blocks):
        s1 += part1[b]
        s2 += part2[b]
    return s1, s2, bad.sum()


def correlated_estep_numba(
    S, G, mu, P, logdet, m0, z, log_q, inflate, newton_iters, moments=True
):
    S, G, mu, P, logdet, m0, z, log_q, c, iters = _check(
        S, G, mu, P, logdet, m0, z, log_q, inflate, newton_iters
    )
    m = m0.copy()
    N = S.shape[0]
    ll, post = np.empty(N), np.empty(N)
    log_norm = _log_norm(z, log_q, c)
    s1, s2, bad = _estep_nb(
        S, G, mu, P, logdet, m, z, log_q, c, log_norm, bool(moments), iters, ll, post
    )
    if bad:
        raise ValueError(_NOT_PD)
    return m, s1, s2, ll, post


def correlated_estep_cpp(
    S, G, mu, P, logdet, m0, z, log_q, inflate, newton_iters, moments=True
):
    args = _check(S, G, mu, P, logdet, m0, z, log_q, inflate, newton_iters)
    return tuple(core().correlated_estep(*args, bool(moments)))


register(
    Kernel(
        "correlated_estep",
        numpy=correlated_estep_numpy,
        numba=correlated_estep_numba,
        cpp=correlated_estep_cpp,
        family="correlated",
    )
)
