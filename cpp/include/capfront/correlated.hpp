// The correlated logit-normal model's E-step (python/capfront/debias/correlated.py).
// Pure C++17, no Python headers.
//
// Model: eta_n ~ N(mu, Sigma) (L x L, full), S_nl ~ Binomial(G_nl, expit(eta_nl));
// cells with G_nl = 0 carry no likelihood term. Given mu, the precision P = Sigma^-1
// and logdet = log|Sigma|, per prompt n:
//
//   1. the Laplace mode m of log p(eta | S_n) by damped Newton from m0[n]
//      (gradient S - G s - P (m - mu), Hessian H = P + diag(D), D = G s (1 - s),
//      s = expit(m); each step scaled to at most 3 in its largest coordinate; at most
//      newton_iters steps, stopping after one whose largest coordinate is < 1e-8);
//   2. V = H^-1 at the mode and its lower Cholesky factor C0;
//   3. K importance draws eta_k = m + c C0 z_k (z_k the caller's draws of a
//      standardised proposal density q0, log_q[k] = log q0(z_k): standard normal or
//      Student t; c = inflate) with log weights
//        lw_k = log p(S_n | eta_k) + log N(eta_k; mu, Sigma) - log q(eta_k),
//        log q(eta_k) = log_q[k] - log|c C0|,
//      the prior quadratic form by the identity C0' P C0 = I - C0' diag(D) C0:
//        (eta - mu)' P (eta - mu) = a'Pa + 2 c (P a)'u + c^2 (z'z - sum_l D_l u_l^2),
//      a = m - mu, u = C0 z (O(L) per draw beyond u itself);
//   4. the self-normalised weights w_k = exp(lw_k) / sum_k' exp(lw_k'):
//        ll[n]   = log mean_k exp(lw_k) + sum_l log C(G_nl, S_nl) - log mean_k exp(lg_k),
//      the last term a ratio control variate: the same draws' estimate of the Laplace
//      Gaussian's normaliser (1), lg_k = log N(eta_k; m, V) - log q(eta_k), the same
//      for every prompt;
//        post[n] = sum_k w_k expit(max_l eta_kl)  (= E[max_l expit(eta_l) | S_n]),
//        s1 += sum_k w_k eta_k + (m - sum_k g_k eta_k),
//        s2 += sum_k w_k eta_k eta_k' + (m m' + V - sum_k g_k eta_k eta_k'),
//      the terms in brackets a control variate: the Laplace Gaussian N(m, V)'s exact
//      moments minus their self-normalised estimate from the same draws, weights
//      g_k ~ exp(-c^2 z_k'z_k / 2 - log_q[k]) (the same for every prompt). With
//      zbar = sum_k g_k z_k and Z = sum_k g_k z_k z_k' the brackets are
//      -c C0 zbar and C0 (I - c^2 Z) C0' - c (m ubar' + ubar m'), ubar = C0 zbar:
//      they remove the draws' error in the Gaussian part of each posterior, which
//      the EM would otherwise accumulate (the smallest eigenvalues of Sigma shrink).
//   K = 0: the Laplace approximation instead (ll the Laplace marginal likelihood,
//   moments m and m m' + V, post = expit(max_l m_l)).
//
// Prompts are cut into blocks of kCorrelatedBlock; each block sums s1, s2 into its
// own partial and the partials are added in block order: the results do not depend
// on the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "parallel.hpp"

namespace capfront {

constexpr std::size_t kCorrelatedBlock = 32;
constexpr double kCorrelatedNewtonTol = 1e-8;
constexpr double kCorrelatedMaxStep = 3.0;
constexpr double kHalfLog2Pi = 0.91893853320467274178;  // log(2 pi) / 2

struct CorrelatedArgs {
    const double* S;     // (N, L) successes
    const double* G;     // (N, L) draws (0: no term)
    std::size_t N, L;
    const double* mu;    // (L,)
    const double* P;     // (L, L) precision
    double logdet;       // log |Sigma|
    const double* z;     // (K, L) draws of the standardised proposal
    const double* log_q; // (K,) their log densities under it
    std::size_t K;
    double inflate;
    std::size_t newton_iters;
    bool moments = true;              // false: s1, s2 left at 0 (not accumulated)
    bool antithetic = false;          // z[k + K/2] == -z[k] for k < K/2 (set by the E-step)
    const double* cv_zbar = nullptr;  // (L,) control variate: sum_k g_k z_k
    const double* cv_B = nullptr;     // (L, L): I - c^2 sum_k g_k z_k z_k'
    double cv_log_norm = 0.0;         // log mean_k of the Gaussian's weights
    const double* zt = nullptr;       // (L, n_u): z' of the draws whose u is computed
    const double* Pt = nullptr;       // (L, L): P' (set by the E-step)
};

// The importance draws' loop (steps 3 and 4's sums) is the kernel's hot part. It
// runs over the draws with the cells outside, so that it vectorises: exp and
// log1p by branchless polynomials (exp_neg, log1p_01: within 2 ulp of the C
// library's, so the backends agree to rounding). The per-prompt function has
// copies for AVX-512 and AVX2 (GCC's target_clones, chosen at load time) beside
// the baseline one (not with CAPFRONT_NO_CLONES defined); none contracts a * b + c
// to an FMA, so all give the same bits.
// GCC vectorises the selects only without -ftrapping-math (the values do not
// change).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math", "fp-contract=off")
#if defined(__x86_64__) && defined(__linux__) && !defined(CAPFRONT_NO_CLONES)
#define CAPFRONT_CORR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef CAPFRONT_CORR_CLONES
#define CAPFRONT_CORR_CLONES
#endif

namespace corr_detail {

// std::max, std::min and std::abs as in <algorithm>, <cmath>, defined here: GCC
// does not inline functions compiled with other optimisation options (the
// pragma above) into this region's.
template <class T>
inline T max_(T a, T b) { return a < b ? b : a; }
template <class T>
inline T min_(T a, T b) { return b < a ? b : a; }

inline double softplus(double x) {
    return x > 0.0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

inline double expit(double x) {
    if (x >= 0.0) return 1.0 / (1.0 + std::exp(-x));
    const double e = std::exp(x);
    return e / (1.0 + e);
}

// The lower Cholesky factor R of a symmetric (L, L) matrix A, by columns: on entry
// T[j L + i] = A[i, j] for i >= j, on return T[j L + i] = R[i, j] (i >= j; the
// rest is not written and does not change the result). Every entry is the
// textbook row form's (R[i, j] = (A[i, j] - sum_{k < j} R[i, k] R[j, k]) / R[j, j],
// the sum in k order): the same operations in the same order, kPad rows at once
// with the k loop inside (vectorised, no memory round trip per k). false if A is
// not positive definite. (T holds L * L + kPad doubles: a block of kPad rows reads
// past a row's end; those lanes are dropped.)
constexpr std::size_t kPad = 8;

inline bool cholesky_t(double* T, std::size_t L) {
    for (std::size_t j = 0; j < L; ++j) {
        double* tj = T + j * L;
        double d = 0.0;
        for (std::size_t i0 = j; i0 < L; i0 += kPad) {  // rows i0.. at once, k inside
            double acc[kPad];
            for (std::size_t q = 0; q < kPad; ++q) acc[q] = tj[i0 + q];
            for (std::size_t k = 0; k < j; ++k) {
                const double* tk = T + k * L + i0;
                const double r = T[k * L + j];
                for (std::size_t q = 0; q < kPad; ++q) acc[q] -= tk[q] * r;
            }
            if (i0 == j) {  // the diagonal first
                if (!(acc[0] > 0.0)) return false;
                d = std::sqrt(acc[0]);
                acc[0] = d * d;  // (tj[j] = d below)
            }
            const std::size_t n = corr_detail::min_(kPad, L - i0);
            for (std::size_t q = 0; q < n; ++q) tj[i0 + q] = acc[q] / d;
        }
        tj[j] = d;
    }
    return true;
}

// x <- (R R')^-1 x for R by columns (cholesky_t): forward R y = x (by columns: each
// y[i] gets its terms in k order, as by rows), back R' x = y (by rows).
inline void chol_solve_t(const double* T, std::size_t L, double* x) {
    for (std::size_t k = 0; k < L; ++k) {
        const double* __restrict tk = T + k * L;
        const double xk = x[k] / tk[k];
        x[k] = xk;
        for (std::size_t i = k + 1; i < L; ++i) x[i] -= tk[i] * xk;
    }
    for (std::size_t i = L; i-- > 0;) {
        const double* __restrict ti = T + i * L;
        double v = x[i];
        for (std::size_t k = i + 1; k < L; ++k) v -= ti[k] * x[k];
        x[i] = v / ti[i];
    }
}

// X <- (R R')^-1 (row-major, full) for R by columns: chol_solve_t of every column
// of I, all columns at once (the same operations for each column; the forward
// solve skips the terms that are exactly 0).
inline void chol_inverse_t(const double* T, std::size_t L, double* X) {
    for (std::size_t i = 0; i < L * L + kPad; ++i) X[i] = 0.0;
    for (std::size_t i = 0; i < L; ++i) {  // columns j0.. at once, k inside
        double* xi = X + i * L;
        xi[i] = 1.0;
        const double d = T[i * L + i];
        for (std::size_t j0 = 0; j0 <= i; j0 += kPad) {
            double acc[kPad];
            for (std::size_t q = 0; q < kPad; ++q) acc[q] = xi[j0 + q];
            // (row k is 0 beyond column k: those terms add exact zeros)
            for (std::size_t k = j0; k < i; ++k) {
                const double r = T[k * L + i];
                const double* xk = X + k * L + j0;
                for (std::size_t q = 0; q < kPad; ++q) acc[q] -= r * xk[q];
            }
            const std::size_t n = corr_detail::min_(kPad, i + 1 - j0);
            for (std::size_t q = 0; q < n; ++q) xi[j0 + q] = acc[q] / d;
        }
    }
    for (std::size_t i = L; i-- > 0;) {
        double* xi = X + i * L;
        const double* ti = T + i * L;
        const double d = ti[i];
        for (std::size_t j0 = 0; j0 < L; j0 += kPad) {
            double acc[kPad];
            for (std::size_t q = 0; q < kPad; ++q) acc[q] = xi[j0 + q];
            for (std::size_t k = i + 1; k < L; ++k) {
                const double r = ti[k];
                const double* xk = X + k * L + j0;
                for (std::size_t q = 0; q < kPad; ++q) acc[q] -= r * xk[q];
            }
            const std::size_t n = corr_detail::min_(kPad, L - j0);
            for (std::size_t q = 0; q < n; ++q) xi[j0 + q] = acc[q] / d;
        }
    }
}

struct Scratch {
    std::vector<double> H, R, V, g, step, s, D, Pa, u, lw, emax, ubar, uu, cb, ug, ws, wd, wu;
    Scratch(std::size_t L, std::size_t K)
        : H(L * L + kPad), R(L * L + kPad), V(L * L + kPad), g(L), step(L), s(L), D(L), Pa(L),
          u(K * L), lw(K), emax(K), ubar(L), uu(L * L), cb(L * L), ug(L), ws(K), wd(K),
          wu(K) {}
};

// The Hessian H = P + diag(D) at m, D = G s (1 - s), s = expit(m), by columns into
// sc.R (cholesky_t's input; and D, s).
inline void hessian(const CorrelatedArgs& a, const double* Gn, const double* m, Scratch& sc) {
    const std::size_t L = a.L;
    for (std::size_t l = 0; l < L; ++l) {
        sc.s[l] = expit(m[l]);
        sc.D[l] = Gn[l] * sc.s[l] * (1.0 - sc.s[l]);
    }
    for (std::size_t i = 0; i < L * L; ++i) sc.R[i] = a.Pt[i];
    for (std::size_t l = 0; l < L; ++l) sc.R[l * L + l] += sc.D[l];
}

// exp(x) for x <= 0 (0 below -708): x = n log 2 + r, |r| <= log(2) / 2, exp(r) by
// its Taylor polynomial to degree 13 (truncation < 5e-18 relative), 2^n by the
// exponent bits.
inline double exp_neg(double x) {
    const double xc = x < -708.0 ? -708.0 : x;
    const double shift = 0x1.8p52;
    const double kd = xc * 0x1.71547652b82fep0 + shift;  // n in its low bits
    const double n = kd - shift;
    const double r = (xc - n * 0x1.62e42fee00000p-1) - n * 0x1.a39ef35793c76p-33;
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    std::uint64_t b;
    std::memcpy(&b, &kd, sizeof b);
    b = (b + 1023) << 52;
    double scale;
    std::memcpy(&scale, &b, sizeof scale);
    const double y = p * scale;
    return x < -708.0 ? 0.0 : y;
}

// log1p(t) for 0 <= t <= 1: fdlibm's s_log1p (1 + t = 2^k (1 + f), sqrt(2) / 2 <=
// 1 + f < sqrt(2), log(1 + f) = 2 atanh(f / (2 + f)) by its minimax polynomial,
// c the rounding error of 1 + t), branchless.
inline double log1p_01(double t) {
    const double u = 1.0 + t;
    const bool big = u > 1.4142135623730951;
    const double fb = 0.5 * u - 1.0;  // exact
    // (1 + t - u) / u, with 1 / u to a few per cent (c is below 2^-53)
    const double cb = (t - (u - 1.0)) * (1.2071067811865475 - 0.35355339059327373 * u);
    const double f = big ? fb : t;
    const double k = big ? 1.0 : 0.0;
    const double c = big ? cb : 0.0;
    const double hfsq = 0.5 * f * f;
    const double s = f / (2.0 + f);
    const double z = s * s;
    const double R =
        z * (6.666666666666735130e-01 +
             z * (3.999999999940941908e-01 +
                  z * (2.857142874366239149e-01 +
                       z * (2.222219843214978396e-01 +
                            z * (1.818357216161805012e-01 +
                                 z * (1.531383769920937332e-01 + z * 1.479819860511658591e-01))))));
    return k * 6.93147180369123816490e-01 -
           ((hfsq - (s * (hfsq + R) + (k * 1.90821492927058770002e-10 + c))) - f);
}

// softplus(x) = max(x, 0) + log1p(exp(-|x|)) and expit(x), branchless
inline double softplus_v(double x) {
    const double ax = std::fabs(x);
    const double pos = 0.5 * (x + ax);  // max(x, 0), exact
    return pos + log1p_01(exp_neg(-ax));
}

inline double expit_v(double x) {
    const double t = exp_neg(-std::fabs(x));
    const double num = x >= 0.0 ? 1.0 : t;
    return num / (1.0 + t);
}

constexpr std::size_t kCorrelatedChunk = 64;  // draws per pass over the cells

// Steps 3 and 4 for one prompt with K > 0: u = C0 z_k (sc.u, by cells: u[l n_u + k]),
// the log weights (their max top), the weights' sum tot and sum_k w_k
// expit(max_l eta_kl) in pm, and with moments ubar = sum_k w_k u_k and the lower
// triangle of uu = sum_k w_k u_k u_k' (not yet divided by tot).
CAPFRONT_CORR_CLONES inline void draws(const CorrelatedArgs& a, const double* C0t, const double* m,
                                       const double* Sn, const double* Gn, Scratch& sc,
                                       double base, const double* zz, double& top, double& tot,
                                       double& pm) {
    const std::size_t L = a.L, K = a.K;
    const bool pair = a.antithetic;
    // with antithetic draws (z_{k + K/2} = -z_k, exactly) u is computed for the
    // first half only: the second half's is -u, bit for bit
    const std::size_t n_u = pair ? K / 2 : K;
    const double c = a.inflate;
    double* __restrict U = sc.u.data();
    for (std::size_t l = 0; l < L; ++l) {  // u_l = sum_{j <= l} C0[l, j] z_j, in j order
        double* __restrict ur = U + l * n_u;
        const double* __restrict z0 = a.zt;
        const double c0 = C0t[l];
        for (std::size_t k = 0; k < n_u; ++k) ur[k] = c0 * z0[k];
        for (std::size_t j = 1; j <= l; ++j) {
            const double cj = C0t[j * L + l];
            const double* __restrict zj = a.zt + j * n_u;
            for (std::size_t k = 0; k < n_u; ++k) ur[k] += cj * zj[k];
        }
    }
    const double* __restrict Pa = sc.Pa.data();
    const double* __restrict D = sc.D.data();
    double* __restrict lw = sc.lw.data();
    double* __restrict emax = sc.emax.data();
    const double* __restrict log_q = a.log_q;
    const double inf = std::numeric_limits<double>::infinity();
    alignas(64) double lik1[kCorrelatedChunk], lik2[kCorrelatedChunk], mx1[kCorrelatedChunk],
        mx2[kCorrelatedChunk], pu[kCorrelatedChunk], du[kCorrelatedChunk];
    for (std::size_t k0 = 0; k0 < n_u; k0 += kCorrelatedChunk) {
        const std::size_t kn = corr_detail::min_(kCorrelatedChunk, n_u - k0);
        for (std::size_t q = 0; q < kn; ++q) {
            lik1[q] = lik2[q] = pu[q] = du[q] = 0.0;
            mx1[q] = mx2[q] = -inf;
        }
        // a missing cell (S = G = 0) adds 0 to lik (softplus is finite)
        for (std::size_t l = 0; l < L; ++l) {
            const double* __restrict ur = U + l * n_u + k0;
            const double Sl = Sn[l], Gl = Gn[l], ml = m[l], pa = Pa[l], dl = D[l];
            if (pair) {
                for (std::size_t q = 0; q < kn; ++q) {
                    const double v = ur[q], cv = c * v;
                    const double e1 = ml + cv, e2 = ml - cv;
                    mx1[q] = e1 > mx1[q] ? e1 : mx1[q];
                    mx2[q] = e2 > mx2[q] ? e2 : mx2[q];
                    lik1[q] += Sl * e1 - Gl * softplus_v(e1);
                    lik2[q] += Sl * e2 - Gl * softplus_v(e2);
                    pu[q] += pa * v;
                    du[q] += dl * v * v;
                }
            } else {
                for (std::size_t q = 0; q < kn; ++q) {
                    const double v = ur[q];
                    const double e1 = ml + c * v;
                    mx1[q] = e1 > mx1[q] ? e1 : mx1[q];
                    lik1[q] += Sl * e1 - Gl * softplus_v(e1);
                    pu[q] += pa * v;
                    du[q] += dl * v * v;
                }
            }
        }
        for (std::size_t q = 0; q < kn; ++q) {
            const std::size_t k = k0 + q;
            lw[k] = lik1[q] + base - c * pu[q] - 0.5 * c * c * (zz[k] - du[q]) - log_q[k];
            emax[k] = mx1[q];
        }
        if (pair)
            for (std::size_t q = 0; q < kn; ++q) {
                const std::size_t k = k0 + q + n_u;
                lw[k] = lik2[q] + base - c * (-pu[q]) - 0.5 * c * c * (zz[k] - du[q]) - log_q[k];
                emax[k] = mx2[q];
            }
    }
    double t = -inf;
    for (std::size_t k = 0; k < K; ++k) t = lw[k] > t ? lw[k] : t;
    top = t;
    for (std::size_t k = 0; k < K; ++k) {
        lw[k] = exp_neg(lw[k] - t);  // the weights
        emax[k] = expit_v(emax[k]);
    }
    double s = 0.0, p = 0.0;  // in draw order
    for (std::size_t k = 0; k < K; ++k) {
        s += lw[k];
        p += lw[k] * emax[k];
    }
    tot = s;
    pm = p;
    if (!a.moments) return;
    // a draw and its antithetic copy: weights w1 and w2 on u and -u
    double* __restrict ws = sc.ws.data();
    double* __restrict wd = sc.wd.data();
    double* __restrict wu = sc.wu.data();
    for (std::size_t k = 0; k < n_u; ++k) {
        const double w1 = lw[k], w2 = pair ? lw[k + n_u] : 0.0;
        ws[k] = w1 + w2;
        wd[k] = w1 - w2;
    }
    // sums over the draws in 8 interleaved partial sums (fixed order)
    constexpr std::size_t W = 8;
    const std::size_t nb = n_u - n_u % W;
    auto dot = [&](const double* __restrict x, const double* __restrict y) {
        double acc[W] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
        for (std::size_t k = 0; k < nb; k += W)
            for (std::size_t q = 0; q < W; ++q) acc[q] += x[k + q] * y[k + q];
        for (std::size_t k = nb; k < n_u; ++k) acc[k - nb] += x[k] * y[k];
        return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    };
    for (std::size_t i = 0; i < L; ++i) {
        const double* __restrict ui = U + i * n_u;
        sc.ubar[i] = dot(wd, ui);
        for (std::size_t k = 0; k < n_u; ++k) wu[k] = ws[k] * ui[k];
        double* row = sc.uu.data() + i * L;
        for (std::size_t j = 0; j <= i; ++j) row[j] = dot(wu, U + j * n_u);
    }
}

// One prompt: mode into m (in place), moments into s1/s2 (added), ll and post.
// Returns false if a Hessian was not positive definite.
CAPFRONT_CORR_CLONES inline bool prompt(const CorrelatedArgs& a, std::size_t n, double* m, Scratch& sc,
                   const double* zz, double* s1, double* s2, double& ll, double& post) {
    const std::size_t L = a.L, K = a.K;
    const double* Sn = a.S + n * L;
    const double* Gn = a.G + n * L;
    for (std::size_t it = 0; it < a.newton_iters; ++it) {
        hessian(a, Gn, m, sc);
        // the gradient S - G s - P (m - mu) (by columns of P: each entry's terms in
        // j order)
        for (std::size_t i = 0; i < L; ++i) sc.step[i] = Sn[i] - Gn[i] * sc.s[i];
        for (std::size_t j = 0; j < L; ++j) {
            const double dj = m[j] - a.mu[j];
            const double* __restrict pj = a.Pt + j * L;
            for (std::size_t i = 0; i < L; ++i) sc.step[i] -= pj[i] * dj;
        }
        if (!cholesky_t(sc.R.data(), L)) return false;
        chol_solve_t(sc.R.data(), L, sc.step.data());
        double big = 0.0;
        for (std::size_t l = 0; l < L; ++l) big = corr_detail::max_(big, std::fabs(sc.step[l]));
        const double f = corr_detail::min_(1.0, kCorrelatedMaxStep / corr_detail::max_(big, 1e-12));
        for (std::size_t l = 0; l < L; ++l) m[l] += sc.step[l] * f;
        if (big < kCorrelatedNewtonTol) break;
    }
    hessian(a, Gn, m, sc);
    if (!cholesky_t(sc.R.data(), L)) return false;
    // V = H^-1 (sc.V, symmetrised), then its lower factor C0 by columns (sc.H:
    // C0t[j L + i] = C0[i, j], i >= j)
    chol_inverse_t(sc.R.data(), L, sc.V.data());
    for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = 0; j < i; ++j)
            sc.V[i * L + j] = sc.V[j * L + i] = 0.5 * (sc.V[i * L + j] + sc.V[j * L + i]);
    const std::vector<double>& Vfull = sc.V;  // V for the Laplace moments
    sc.H = sc.V;  // row j of V holds V[i, j], i >= j (symmetric)
    if (!cholesky_t(sc.H.data(), L)) return false;
    const double* C0t = sc.H.data();
    double log_c0 = 0.0;
    for (std::size_t l = 0; l < L; ++l) log_c0 += std::log(C0t[l * L + l]);
    double q0 = 0.0, lc = 0.0, loglik_m = 0.0;
    // Pa = P (m - mu), by columns of P (each entry's terms in j order)
    std::fill(sc.Pa.begin(), sc.Pa.end(), 0.0);
    for (std::size_t j = 0; j < L; ++j) {
        const double dj = m[j] - a.mu[j];
        const double* __restrict pj = a.Pt + j * L;
        for (std::size_t i = 0; i < L; ++i) sc.Pa[i] += pj[i] * dj;
    }
    for (std::size_t i = 0; i < L; ++i) {
        const double v = sc.Pa[i];
        q0 += (m[i] - a.mu[i]) * v;
        if (Gn[i] > 0.0) {
            lc += std::lgamma(Gn[i] + 1.0) - std::lgamma(Sn[i] + 1.0) -
                  std::lgamma(Gn[i] - Sn[i] + 1.0);
            loglik_m += Sn[i] * m[i] - Gn[i] * softplus(m[i]);
        }
    }
    if (K == 0) {
        ll = loglik_m - 0.5 * q0 - 0.5 * a.logdet + log_c0 + lc;
        double mx = -std::numeric_limits<double>::infinity();
        for (std::size_t l = 0; l < L; ++l) mx = corr_detail::max_(mx, m[l]);
        post = expit(mx);
        if (!a.moments) return true;
        for (std::size_t i = 0; i < L; ++i) {
            s1[i] += m[i];
            for (std::size_t j = 0; j < L; ++j) s2[i * L + j] += m[i] * m[j] + Vfull[i * L + j];
        }
        return true;
    }
    const double c = a.inflate;
    const double base = -0.5 * q0 - 0.5 * a.logdet + log_c0 +
                        static_cast<double>(L) * (std::log(c) - kHalfLog2Pi);
    double top = -std::numeric_limits<double>::infinity();
    double tot = 0.0, pm = 0.0;
    draws(a, C0t, m, Sn, Gn, sc, base, zz, top, tot, pm);
    ll = top + std::log(tot / static_cast<double>(K)) + lc - a.cv_log_norm;
    post = pm / tot;
    if (!a.moments) return true;
    for (std::size_t i = 0; i < L; ++i) sc.ubar[i] /= tot;
    // the control variate: ug = C0 zbar, cb = C0 B C0' (lower triangle); by rows
    // of C0' and B (each entry's terms in k order)
    std::fill(sc.ug.begin(), sc.ug.end(), 0.0);
    for (std::size_t j = 0; j < L; ++j) {
        const double zj = a.cv_zbar[j];
        const double* __restrict cj = C0t + j * L;
        for (std::size_t i = j; i < L; ++i) sc.ug[i] += cj[i] * zj;
    }
    std::fill(sc.R.begin(), sc.R.end(), 0.0);
    std::fill(sc.cb.begin(), sc.cb.end(), 0.0);
    for (std::size_t i = 0; i < L; ++i) {
        double* __restrict ri = sc.R.data() + i * L;  // R <- C0 B (row i)
        for (std::size_t k = 0; k <= i; ++k) {
            const double cik = C0t[k * L + i];
            const double* __restrict bk = a.cv_B + k * L;
            for (std::size_t j = 0; j < L; ++j) ri[j] += cik * bk[j];
        }
        double* __restrict cbi = sc.cb.data() + i * L;
        for (std::size_t k = 0; k <= i; ++k) {
            const double rik = ri[k];
            const double* __restrict ck = C0t + k * L;
            for (std::size_t j = k; j <= i; ++j) cbi[j] += rik * ck[j];
        }
    }
    for (std::size_t i = 0; i < L; ++i) {
        s1[i] += m[i] + c * (sc.ubar[i] - sc.ug[i]);
        for (std::size_t j = 0; j <= i; ++j) {
            const double v = m[i] * m[j] +
                             c * (m[i] * (sc.ubar[j] - sc.ug[j]) + (sc.ubar[i] - sc.ug[i]) * m[j]) +
                             c * c * sc.uu[i * L + j] / tot + sc.cb[i * L + j];
            s2[i * L + j] += v;
            if (j < i) s2[j * L + i] += v;
        }
    }
    return true;
}

}  // namespace corr_detail

// The E-step over all prompts (see the header comment). m (N, L): the Newton starts
// on entry, the modes on return. s1 (L), s2 (L, L), ll (N), post (N) are written.
// Returns the number of prompts whose Hessian was not positive definite (their
// ll and post are NaN and they add nothing to s1, s2).
inline std::size_t correlated_estep(const CorrelatedArgs& a, double* m, double* s1, double* s2,
                                    double* ll, double* post) {
    const std::size_t N = a.N, L = a.L, K = a.K;
    const std::size_t n_blocks = (N + kCorrelatedBlock - 1) / kCorrelatedBlock;
    std::vector<double> part1(n_blocks * L, 0.0), part2(n_blocks * L * L, 0.0);
    std::vector<std::size_t> bad(n_blocks, 0);
    std::vector<double> zz(K);
    for (std::size_t k = 0; k < K; ++k) {
        double v = 0.0;
        for (std::size_t l = 0; l < L; ++l) v += a.z[k * L + l] * a.z[k * L + l];
        zz[k] = v;
    }
    // the control variate's weights g_k ~ exp(-c^2 z'z / 2 - log_q)
    std::vector<double> zbar(L, 0.0), B(L * L, 0.0);
    if (K > 0) {
        const double c2 = a.inflate * a.inflate;
        double top = -std::numeric_limits<double>::infinity();
        std::vector<double> gk(K);
        for (std::size_t k = 0; k < K; ++k) {
            gk[k] = -0.5 * c2 * zz[k] - a.log_q[k];
            top = corr_detail::max_(top, gk[k]);
        }
        double tot = 0.0;
        for (std::size_t k = 0; k < K; ++k) tot += (gk[k] = std::exp(gk[k] - top));
        for (std::size_t k = 0; k < K; ++k) {
            const double w = gk[k] / tot;
            const double* zk = a.z + k * L;
            for (std::size_t i = 0; i < L; ++i) {
                zbar[i] += w * zk[i];
                for (std::size_t j = 0; j < L; ++j) B[i * L + j] -= c2 * w * zk[i] * zk[j];
            }
        }
        for (std::size_t i = 0; i < L; ++i) B[i * L + i] += 1.0;
    }
    // the Gaussian's normaliser estimated by the same draws: log mean_k exp(lg_k),
    // lg_k = log N(c z_k; 0, c^2 I) + L log c - log_q[k] (ll's ratio control variate)
    double cv_log_norm = 0.0;
    if (K > 0) {
        const double c = a.inflate;
        double top = -std::numeric_limits<double>::infinity();
        std::vector<double> lg(K);
        for (std::size_t k = 0; k < K; ++k) {
            lg[k] = -0.5 * c * c * zz[k] - a.log_q[k] +
                    static_cast<double>(L) * (std::log(c) - kHalfLog2Pi);
            top = corr_detail::max_(top, lg[k]);
        }
        double tot = 0.0;
        for (std::size_t k = 0; k < K; ++k) tot += std::exp(lg[k] - top);
        cv_log_norm = top + std::log(tot / static_cast<double>(K));
    }
    CorrelatedArgs args = a;
    args.cv_log_norm = cv_log_norm;
    args.antithetic = K >= 2 && K % 2 == 0;
    for (std::size_t i = 0; args.antithetic && i < (K / 2) * L; ++i)
        args.antithetic = a.z[(K / 2) * L + i] == -a.z[i];
    args.cv_zbar = zbar.data();
    args.cv_B = B.data();
    // z' of the draws whose u is computed (the first half with antithetic draws)
    const std::size_t n_u = args.antithetic ? K / 2 : K;
    std::vector<double> zt(L * n_u);
    for (std::size_t k = 0; k < n_u; ++k)
        for (std::size_t l = 0; l < L; ++l) zt[l * n_u + k] = a.z[k * L + l];
    args.zt = zt.data();
    std::vector<double> Pt(L * L);
    for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = 0; j < L; ++j) Pt[j * L + i] = a.P[i * L + j];
    args.Pt = Pt.data();
    parallel_blocks(n_blocks, 1, [&](std::size_t b0, std::size_t b1) {
        corr_detail::Scratch sc(L, K);
        for (std::size_t b = b0; b < b1; ++b) {
            const std::size_t i1 = corr_detail::min_(N, (b + 1) * kCorrelatedBlock);
            for (std::size_t n = b * kCorrelatedBlock; n < i1; ++n) {
                if (!corr_detail::prompt(args, n, m + n * L, sc, zz.data(), part1.data() + b * L,
                                         part2.data() + b * L * L, ll[n], post[n])) {
                    ll[n] = post[n] = std::numeric_limits<double>::quiet_NaN();
                    ++bad[b];
                }
            }
        }
    });
    std::fill(s1, s1 + L, 0.0);
    std::fill(s2, s2 + L * L, 0.0);
    std::size_t n_bad = 0;
    for (std::size_t b = 0; b < n_blocks; ++b) {
        for (std::size_t i = 0; i < L; ++i) s1[i] += part1[b * L + i];
        for (std::size_t i = 0; i < L * L; ++i) s2[i] += part2[b * L * L + i];
        n_bad += bad[b];
    }
    return n_bad;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
#undef CAPFRONT_CORR_CLONES

}  // namespace capfront
