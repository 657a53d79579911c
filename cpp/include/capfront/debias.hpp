// Kernels of the debiased oracle (SPEC 4): per-prompt subsample curves, the exact
// expected cross-fit oracle, and the E-step / posterior expected maximum of the
// latent-difficulty model. Pure C++17, no Python headers.
//
// Every kernel loops over prompts in fixed blocks (parallel.hpp) and writes only to
// its own rows, or reduces per-block partials in block order, so results are
// bit-identical for any thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "expected_max.hpp"
#include "parallel.hpp"

namespace capfront {

// parallel_blocks for work worth the threads: below `min_work` units the blocks run
// serially (same block boundaries, so the same results), since spawning threads on a
// loaded machine costs more than the work.
template <class Body>
void parallel_blocks_min(std::size_t n, std::size_t grain, double work, Body&& body) {
    constexpr double kMinWork = 2e6;
    if (work < kMinWork) {
        grain = std::max<std::size_t>(1, grain);
        for (std::size_t b0 = 0; b0 < n; b0 += grain) body(b0, std::min(n, b0 + grain));
        return;
    }
    parallel_blocks(n, grain, std::forward<Body>(body));
}

// out[n * n_sizes + j] = O_biased(sizes[j]) for prompt n alone (SPEC 3).
// Cost O(N L sum_j g_j); memory: the (N, n_sizes) output only.
inline void subsample_curve_rows(const std::int64_t* successes, const std::int64_t* n_draws,
                                 std::size_t N, std::size_t L, const std::int64_t* sizes,
                                 std::size_t n_sizes, double* out) {
    double work = 0.0;
    for (std::size_t j = 0; j < n_sizes; ++j) work += static_cast<double>(sizes[j]);
    work *= static_cast<double>(N * L);
    parallel_blocks_min(N, 256, work, [&](std::size_t r0, std::size_t r1) {
        std::vector<double> scratch, prod;
        for (std::size_t n = r0; n < r1; ++n)
            subsample_curve_row(successes + n * L, n_draws + n * L, L, sizes, n_sizes,
                                scratch, prod, out + n * n_sizes);
    });
}

// Expected cross-fit value of one prompt for one split size g: select
// argmax_l of the successes among g draws per model (a uniformly random size-g subset;
// ties broken uniformly at random), score the chosen model on its other G_l - g draws.
// With X_l ~ Hypergeom(G_l, S_l, g) independent across models,
//   value = sum_l sum_a P(X_l = a) * (S_l - a) / (G_l - g) * W_l(a),
//   W_l(a) = P(l wins | X_l = a) = int_0^1 prod_{m != l} [P(X_m < a) + z P(X_m = a)] dz,
// the integral (a polynomial of degree <= L - 1 in z) done exactly by Gauss-Legendre
// nodes gz/gw on [0, 1]. Cost O(g L n_nodes) per prompt.
struct CrossfitScratch {
    std::vector<double> cdf, pmf, cdfm, pre, suf, score;
    std::vector<std::size_t> obs;
};

inline double crossfit_row_split(const std::int64_t* S, const std::int64_t* G, std::size_t L,
                                 std::int64_t g, const double* gz, const double* gw,
                                 std::size_t n_nodes, CrossfitScratch& w) {
    w.obs.clear();
    for (std::size_t l = 0; l < L; ++l)
        if (G[l] > 0) w.obs.push_back(l);
    const std::size_t M = w.obs.size();
    const std::size_t A = static_cast<std::size_t>(g) + 1;
    w.cdf.assign(A, 0.0);
    w.pmf.assign(M * A, 0.0);
    w.cdfm.assign(M * A, 0.0);  // P(X_m <= a - 1)
    for (std::size_t i = 0; i < M; ++i) {
        const std::size_t l = w.obs[i];
        hypergeom_cdf(G[l], S[l], g, w.cdf.data());
        double prev = 0.0;
        for (std::size_t a = 0; a < A; ++a) {
            w.pmf[i * A + a] = std::max(0.0, w.cdf[a] - prev);
            w.cdfm[i * A + a] = prev;
            prev = w.cdf[a];
        }
    }
    w.pre.resize(M + 1);
    w.suf.resize(M + 1);
    double value = 0.0;
    for (std::size_t a = 0; a < A; ++a) {
        bool any = false;
        for (std::size_t i = 0; i < M; ++i) any = any || w.pmf[i * A + a] > 0.0;
        if (!any) continue;
        for (std::size_t q = 0; q < n_nodes; ++q) {
            const double z = gz[q];
            w.pre[0] = 1.0;
            for (std::size_t i = 0; i < M; ++i)
                w.pre[i + 1] = w.pre[i] * (w.cdfm[i * A + a] + z * w.pmf[i * A + a]);
            w.suf[M] = 1.0;
            for (std::size_t i = M; i > 0; --i)
                w.suf[i - 1] = w.suf[i] * (w.cdfm[(i - 1) * A + a] + z * w.pmf[(i - 1) * A + a]);
            for (std::size_t i = 0; i < M; ++i) {
                const double f = w.pmf[i * A + a];
                if (f <= 0.0) continue;
                const std::size_t l = w.obs[i];
                const double rest = static_cast<double>(S[l] - static_cast<std::int64_t>(a)) /
                                    static_cast<double>(G[l] - g);
                value += gw[q] * f * rest * w.pre[i] * w.suf[i + 1];
            }
        }
    }
    return value;
}

// out[n] = mean over the two split sizes floor(Gmin/2), ceil(Gmin/2) of the expected
// cross-fit value ("both ways"), Gmin the fewest draws of an observed cell of the row.
// The caller guarantees Gmin >= 2 on every row.
inline void crossfit_rows(const std::int64_t* successes, const std::int64_t* n_draws,
                          std::size_t N, std::size_t L, const double* gz, const double* gw,
                          std::size_t n_nodes, double* out) {
    const double work = static_cast<double>(N * L) * static_cast<double>(n_nodes) * 8.0;
    parallel_blocks_min(N, 128, work, [&](std::size_t r0, std::size_t r1) {
        CrossfitScratch w;
        for (std::size_t n = r0; n < r1; ++n) {
            const std::int64_t* S = successes + n * L;
            const std::int64_t* G = n_draws + n * L;
            std::int64_t gmin = std::numeric_limits<std::int64_t>::max();
            for (std::size_t l = 0; l < L; ++l)
                if (G[l] > 0) gmin = std::min(gmin, G[l]);
            const std::int64_t g1 = gmin / 2, g2 = gmin - gmin / 2;
            const double v1 = crossfit_row_split(S, G, L, g1, gz, gw, n_nodes, w);
            const double v2 =
                g2 == g1 ? v1 : crossfit_row_split(S, G, L, g2, gz, gw, n_nodes, w);
            out[n] = 0.5 * (v1 + v2);
        }
    });
}

// ---------------------------------------------------------------------------------
// Latent-difficulty model (SPEC 4b). Prompt difficulty d_n lives on a grid D_j
// (j < J) with prior weights w_j; the per-cell log marginal likelihood
// log h(S_nl | G_nl, theta[l, k(n)] - D_j) is tabulated by the caller as
// T[((l * K + k) * R + row) * J + j], row = the cell's (G, S) table row.
// cell_row[n * L + l] is that row (-1: model not run on the prompt).

// Posterior weights below this are set to zero (not renormalised): they change no
// estimate, and the M-step statistics become sparse.
constexpr double kRespFloor = 1e-12;

// E-step: resp[n, j] = posterior weight of D_j for prompt n. Returns the marginal
// log-likelihood sum_n log sum_j w_j prod_l h(...). Cost O(N L J), memory O(N J).
inline double pgm_estep(const double* T, const std::int64_t* cell_row,
                        const std::int64_t* topic, const double* log_w, std::size_t N,
                        std::size_t L, std::size_t K, std::size_t R, std::size_t J,
                        double* resp) {
    const std::size_t n_blocks = (N + kBlockRows - 1) / kBlockRows;
    std::vector<double> partial(n_blocks, 0.0);
    const double work = static_cast<double>(N * L * J);
    parallel_blocks_min(n_blocks, 1, work, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t b = b0; b < b1; ++b) {
            double acc_ll = 0.0;
            const std::size_t i1 = std::min(N, (b + 1) * kBlockRows);
            for (std::size_t n = b * kBlockRows; n < i1; ++n) {
                double* r = resp + n * J;
                for (std::size_t j = 0; j < J; ++j) r[j] = log_w[j];
                const std::size_t k = static_cast<std::size_t>(topic[n]);
                for (std::size_t l = 0; l < L; ++l) {
                    const std::int64_t row = cell_row[n * L + l];
                    if (row < 0) continue;
                    const double* t = T + ((l * K + k) * R + static_cast<std::size_t>(row)) * J;
                    for (std::size_t j = 0; j < J; ++j) r[j] += t[j];
                }
                double mx = -std::numeric_limits<double>::infinity();
                for (std::size_t j = 0; j < J; ++j) mx = std::max(mx, r[j]);
                double tot = 0.0;
                for (std::size_t j = 0; j < J; ++j) {
                    r[j] = std::exp(r[j] - mx);
                    tot += r[j];
                }
                for (std::size_t j = 0; j < J; ++j) {
                    r[j] /= tot;
                    if (r[j] < kRespFloor) r[j] = 0.0;  // keeps C sparse
                }
                acc_ll += mx + std::log(tot);
            }
            partial[b] = acc_ll;
        }
    });
    double ll = 0.0;
    for (double v : partial) ll += v;
    return ll;
}

// Fused E-step and M-step statistics: one pass over the prompts fills resp (as
// pgm_estep) and C (as pgm_stats). Prompts are cut into n_blocks fixed blocks of
// block_rows (a function of N only); each block sums into its own partial C and the
// partials are added in block order, so C does not depend on the thread count.
// Memory: n_blocks * L K R J doubles of partials.
inline double pgm_estep_stats(const double* T, const std::int64_t* cell_row,
                              const std::int64_t* topic, const double* log_w, std::size_t N,
                              std::size_t L, std::size_t K, std::size_t R, std::size_t J,
                              std::size_t block_rows, double* resp, double* C) {
    const std::size_t P = L * K * R * J;
    block_rows = std::max<std::size_t>(1, block_rows);
    const std::size_t n_blocks = (N + block_rows - 1) / block_rows;
    std::vector<double> partial(n_blocks * P, 0.0);
    std::vector<double> part_ll(n_blocks, 0.0);
    const double work = static_cast<double>(N * L * J) * 2.0;
    parallel_blocks_min(n_blocks, 1, work, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t b = b0; b < b1; ++b) {
            double* cb = partial.data() + b * P;
            double acc_ll = 0.0;
            const std::size_t i1 = std::min(N, (b + 1) * block_rows);
            for (std::size_t n = b * block_rows; n < i1; ++n) {
                double* r = resp + n * J;
                for (std::size_t j = 0; j < J; ++j) r[j] = log_w[j];
                const std::size_t k = static_cast<std::size_t>(topic[n]);
                const std::int64_t* rows = cell_row + n * L;
                for (std::size_t l = 0; l < L; ++l) {
                    if (rows[l] < 0) continue;
                    const double* t =
                        T + ((l * K + k) * R + static_cast<std::size_t>(rows[l])) * J;
                    for (std::size_t j = 0; j < J; ++j) r[j] += t[j];
                }
                double mx = -std::numeric_limits<double>::infinity();
                for (std::size_t j = 0; j < J; ++j) mx = std::max(mx, r[j]);
                double tot = 0.0;
                for (std::size_t j = 0; j < J; ++j) {
                    r[j] = std::exp(r[j] - mx);
                    tot += r[j];
                }
                const double inv = 1.0 / tot;
                for (std::size_t j = 0; j < J; ++j) {
                    r[j] *= inv;
                    if (r[j] < kRespFloor) r[j] = 0.0;  // keeps C sparse
                }
                acc_ll += mx + std::log(tot);
                std::size_t j0 = 0, j1 = J;  // the non-zero range of r
                while (j0 < J && r[j0] == 0.0) ++j0;
                while (j1 > j0 && r[j1 - 1] == 0.0) --j1;
                for (std::size_t l = 0; l < L; ++l) {
                    if (rows[l] < 0) continue;
                    double* c = cb + ((l * K + k) * R + static_cast<std::size_t>(rows[l])) * J;
                    for (std::size_t j = j0; j < j1; ++j) c[j] += r[j];
                }
            }
            part_ll[b] = acc_ll;
        }
    });
    std::fill(C, C + P, 0.0);
    double ll = 0.0;
    for (std::size_t b = 0; b < n_blocks; ++b) {
        const double* cb = partial.data() + b * P;
        for (std::size_t i = 0; i < P; ++i) C[i] += cb[i];
        ll += part_ll[b];
    }
    return ll;
}

// M-step statistics: C[((l * K + k) * R + row) * J + j] = sum over prompts n of topic k
// whose cell (n, l) is in table row `row` of resp[n, j]. Parallel over models, each
// model's sums run over prompts in order. Cost O(N L J).
inline void pgm_stats(const double* resp, const std::int64_t* cell_row,
                      const std::int64_t* topic, std::size_t N, std::size_t L, std::size_t K,
                      std::size_t R, std::size_t J, double* C) {
    std::fill(C, C + L * K * R * J, 0.0);
    const double work = static_cast<double>(N * L * J);
    parallel_blocks_min(L, 1, work, [&](std::size_t l0, std::size_t l1) {
        for (std::size_t l = l0; l < l1; ++l) {
            for (std::size_t n = 0; n < N; ++n) {
                const std::int64_t row = cell_row[n * L + l];
                if (row < 0) continue;
                const std::size_t k = static_cast<std::size_t>(topic[n]);
                double* c = C + ((l * K + k) * R + static_cast<std::size_t>(row)) * J;
                const double* r = resp + n * J;
                for (std::size_t j = 0; j < J; ++j) c[j] += r[j];
            }
        }
    });
}

// M-step scores: f[lk, c] = sum_{row, j} C[lk, row, j] * logh[row, cand[j, c]], the
// expected complete log-likelihood of candidate theta_c for model/topic lk (cand
// holds the eta-grid index of theta_c - D_j). Zero statistics are skipped (most
// (row, j) pairs are empty). Parallel over lk; cost O(LK * nnz(C) / LK * n_cand).
inline void pgm_mstep_scores(const double* C, const double* logh, const std::int64_t* cand,
                             std::size_t LK, std::size_t R, std::size_t J, std::size_t E,
                             std::size_t n_cand, double* f) {
    const double work = static_cast<double>(LK * R * J) * static_cast<double>(n_cand) / 4.0;
    parallel_blocks_min(LK, 1, work, [&](std::size_t a0, std::size_t a1) {
        for (std::size_t a = a0; a < a1; ++a) {
            double* out = f + a * n_cand;
            for (std::size_t c = 0; c < n_cand; ++c) out[c] = 0.0;
            for (std::size_t r = 0; r < R; ++r) {
                const double* row = logh + r * E;
                for (std::size_t j = 0; j < J; ++j) {
                    const double w = C[(a * R + r) * J + j];
                    if (w == 0.0) continue;
                    const std::int64_t* idx = cand + j * n_cand;
                    for (std::size_t c = 0; c < n_cand; ++c) out[c] += w * row[idx[c]];
                }
            }
        }
    });
}

// Posterior expected maximum per prompt. Given D_j, the cells are independent and
// p_nl has the tabulated posterior CDF Fx[(row * E + e) * (M + 1) + m] at x_m (a grid
// on [0, 1], dense near 0 and 1 where maxima of easy prompts sit)
// for linear predictor eta_e; eta = theta[l, k] - D_j is interpolated between grid
// points eta_idx[(l K + k) J + j] and +1 with weight eta_wt. Then
//   E[max_l p | D_j] = int_0^1 (1 - prod_l F_l(x)) dx,
//   E[max_l p^2 | D_j] = int_0^1 2x (1 - prod_l F_l(x)) dx   (trapezoid on x),
// mixed over j with resp[n, j] (grid points below min_resp are skipped and the rest
// renormalised). post_mean[n, l] = E_post[p_nl] from the table PM[row * E + e].
// Cost O(N L M) per active grid point.
inline void pgm_emax(const double* resp, const std::int64_t* cell_row,
                     const std::int64_t* topic, const std::int64_t* eta_idx,
                     const double* eta_wt, const double* Fx, const double* PM,
                     const double* x, std::size_t N, std::size_t L, std::size_t K, std::size_t J,
                     std::size_t E, std::size_t M, double min_resp, double* emax,
                     double* emax2, double* post_mean) {
    const double work = static_cast<double>(N * L * (M + 1)) * 4.0;
    parallel_blocks_min(N, 64, work, [&](std::size_t r0, std::size_t r1) {
        std::vector<double> prod(M + 1), h(M + 1);
        // trapezoid weights of the (non-uniform) x grid
        for (std::size_t m = 0; m <= M; ++m)
            h[m] = 0.5 * ((m < M ? x[m + 1] : x[M]) - (m > 0 ? x[m - 1] : x[0]));
        for (std::size_t n = r0; n < r1; ++n) {
            const double* r = resp + n * J;
            const std::size_t k = static_cast<std::size_t>(topic[n]);
            double m1 = 0.0, m2 = 0.0, used = 0.0;
            double* pm = post_mean + n * L;
            for (std::size_t l = 0; l < L; ++l) pm[l] = 0.0;
            for (std::size_t j = 0; j < J; ++j) {
                if (r[j] < min_resp) continue;
                used += r[j];
                std::fill(prod.begin(), prod.end(), 1.0);
                for (std::size_t l = 0; l < L; ++l) {
                    const std::int64_t row = cell_row[n * L + l];
                    if (row < 0) continue;
                    const std::size_t q = (l * K + k) * J + j;
                    const std::size_t e = static_cast<std::size_t>(eta_idx[q]);
                    const double wt = eta_wt[q];
                    const std::size_t base = static_cast<std::size_t>(row) * E + e;
                    const double* fa = Fx + base * (M + 1);
                    const double* fb = fa + (M + 1);
                    for (std::size_t m = 0; m <= M; ++m)
                        prod[m] *= fa[m] + wt * (fb[m] - fa[m]);
                    pm[l] += r[j] * (PM[base] + wt * (PM[base + 1] - PM[base]));
                }
                double s1 = 0.0, s2 = 0.0;
                for (std::size_t m = 0; m <= M; ++m) {
                    const double tail = 1.0 - prod[m];
                    s1 += h[m] * tail;
                    s2 += h[m] * 2.0 * x[m] * tail;
                }
                m1 += r[j] * s1;
                m2 += r[j] * s2;
            }
            emax[n] = m1 / used;
            emax2[n] = m2 / used;
            for (std::size_t l = 0; l < L; ++l) pm[l] /= used;
        }
    });
}

}  // namespace capfront
