// Latent prompt classes of the latent-difficulty model (design §4b): the fused
// E-step of the class EM. Pure C++17, no Python headers.
//
// Prompt n (topic label t_n) is carried once per class k; the pair's theta column is
// t_n * K + k of the table T[((l * TK + col) * R + row) * J + j] (TK = n_labels * K).
// Per prompt, the kernel computes every pair's difficulty posterior and log marginal
// likelihood ll[n, k] (as pgm_estep), the class responsibilities
//   r[n, k] = pi[t_n, k] exp(ll[n, k]) / sum_k' pi[t_n, k'] exp(ll[n, k']),
// and, in the same pass, the M-step statistics
//   C[l, col, row, j] += r[n, k] * resp_nk[j]     (pairs with r > keep_r),
//   wsum[j]           += sum_k r[n, k] resp_nk[j]  (the difficulty prior's update),
// so no (N K, J) array of pair posteriors is ever stored. Prompts are cut into fixed
// blocks of block_rows (a function of N only); each block sums into its own partial
// and the partials are added in block order: results do not depend on the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "debias.hpp"
#include "parallel.hpp"

namespace capfront {

// below exp(-40) of its maximum a pair posterior's weight is under kRespFloor and
// changes the normaliser by less than J * 4e-18 (rounding): it is not exponentiated
constexpr double kExpCut = -40.0;

template <class Row>
struct ClassEstepArgs {
    const double* T;          // (L, TK, R, J) log h table
    const Row* rows;          // (N, L) cell rows, -1: no draws
    const std::int64_t* label;// (N,) topic labels
    const double* log_w;      // (J,)
    const double* log_pi;     // (n_labels, K)
    const double* prev_r;     // (N, K) or nullptr: pairs with prev_r < sparse_r skipped
    double sparse_r;
    double keep_r;            // statistics only of pairs with r > keep_r
    std::size_t N, L, K, TK, R, J;
    std::size_t block_rows;
};

// Returns sum_n log sum_k pi exp(ll[n, k]); fills r_out (N, K) and, when given,
// C (L, TK, R, J), wsum (J) and resp_out (N K, J: the pair posteriors, 0 for skipped
// pairs) and ll_out (N K: the pairs' ll, -inf for skipped pairs).
template <class Row>
inline double pgm_class_estep(const ClassEstepArgs<Row>& a, double* r_out, double* C,
                              double* wsum, double* resp_out, double* ll_out) {
    const std::size_t N = a.N, L = a.L, K = a.K, TK = a.TK, R = a.R, J = a.J;
    const std::size_t P = C != nullptr ? L * TK * R * J : 0;
    const std::size_t br = std::max<std::size_t>(1, a.block_rows);
    const std::size_t n_blocks = (N + br - 1) / br;
    // one block: its statistics go straight into C (the same numbers as
    // C = 0 + part_c; no second (L, TK, R, J) array to zero, fault in and add)
    const bool direct = C != nullptr && n_blocks == 1;
    std::vector<double> part_c(direct ? 0 : n_blocks * P, 0.0);
    if (direct) std::fill(C, C + P, 0.0);
    std::vector<double> part_w(wsum != nullptr ? n_blocks * J : 0, 0.0);
    std::vector<double> part_ll(n_blocks, 0.0);
    const double ninf = -std::numeric_limits<double>::infinity();
    const double work = static_cast<double>(N * K * L * J) * (C != nullptr ? 2.0 : 1.0);
    // the coarse pass's table points and prior bounds (every pair reads them)
    const CoarsePlan plan = coarse_plan(a.T, L * TK * R, J, a.log_w);
    // prompts of a block are taken in sub-blocks of sb: first every pair's
    // difficulty posterior, class after class (class k's table rows T[:, k, :, :]
    // stay in cache while its prompts read them), then the class
    // responsibilities prompt by prompt, then the statistics class after class
    // (C[:, k, :, :] likewise). Each C entry belongs to one class, so its terms
    // are added in prompt order as before: the same bits as prompt-major order.
    const std::size_t sb = std::max<std::size_t>(1, (std::size_t{1} << 16) / (K * J));
    parallel_blocks_min(n_blocks, 1, work, [&](std::size_t b0, std::size_t b1) {
        std::vector<double> buf(sb * K * J);
        std::vector<double> llk(sb * K), rk(sb * K);
        std::vector<std::size_t> lo(sb * K), hi(sb * K), w0(sb * K), w1(sb * K);
        for (std::size_t b = b0; b < b1; ++b) {
            double* cb = C == nullptr ? nullptr : direct ? C : part_c.data() + b * P;
            double* wb = wsum != nullptr ? part_w.data() + b * J : nullptr;
            double acc_ll = 0.0;
            const std::size_t i1 = std::min(N, (b + 1) * br);
            for (std::size_t s0 = b * br; s0 < i1; s0 += sb) {
                const std::size_t s1 = std::min(i1, s0 + sb);
                for (std::size_t k = 0; k < K; ++k) {
                    for (std::size_t n = s0; n < s1; ++n) {
                        const std::size_t q = (n - s0) * K + k;  // the pair's slot
                        const Row* rows = a.rows + n * L;
                        const std::size_t t = static_cast<std::size_t>(a.label[n]);
                        double* r = buf.data() + q * J;
                        lo[q] = hi[q] = w0[q] = w1[q] = 0;
                        if (a.prev_r != nullptr && !(a.prev_r[n * K + k] >= a.sparse_r)) {
                            llk[q] = ninf;
                            continue;
                        }
                        // r on [j0, j1) only: -inf elsewhere, which exp() and the
                        // normalisation would turn into 0 (the same bits as the full grid)
                        const auto [j0w, j1w] = pgm_prompt_logpost_window(
                            a.T, plan, rows, t * K + k, L, TK, R, J, a.log_w, r);
                        w0[q] = j0w;
                        w1[q] = j1w;
                        double mx = ninf;
                        for (std::size_t j = j0w; j < j1w; ++j) mx = std::max(mx, r[j]);
                        double tot = 0.0;
                        for (std::size_t j = j0w; j < j1w; ++j) {
                            const double v = r[j] - mx;
                            r[j] = v < kExpCut ? 0.0 : std::exp(v);
                            tot += r[j];
                        }
                        std::size_t j0 = J, j1 = 0;
                        for (std::size_t j = j0w; j < j1w; ++j) {
                            r[j] /= tot;
                            if (r[j] < kRespFloor) {
                                r[j] = 0.0;
                            } else {
                                j0 = std::min(j0, j);
                                j1 = j + 1;
                            }
                        }
                        lo[q] = j0 < j1 ? j0 : 0;
                        hi[q] = j0 < j1 ? j1 : 0;
                        llk[q] = mx + std::log(tot);
                    }
                }
                for (std::size_t n = s0; n < s1; ++n) {
                    const std::size_t t = static_cast<std::size_t>(a.label[n]);
                    const std::size_t q0 = (n - s0) * K;
                    // class responsibilities: log-sum-exp over the classes
                    double m = ninf;
                    for (std::size_t k = 0; k < K; ++k)
                        m = std::max(m, llk[q0 + k] + a.log_pi[t * K + k]);
                    double s = 0.0;
                    for (std::size_t k = 0; k < K; ++k)
                        s += std::exp(llk[q0 + k] + a.log_pi[t * K + k] - m);
                    const double lse = m + std::log(s);
                    acc_ll += lse;
                    for (std::size_t k = 0; k < K; ++k) {
                        rk[q0 + k] = std::exp(llk[q0 + k] + a.log_pi[t * K + k] - lse);
                        r_out[n * K + k] = rk[q0 + k];
                        if (ll_out != nullptr) ll_out[n * K + k] = llk[q0 + k];
                    }
                    if (resp_out != nullptr) {
                        // the pair posteriors: 0 outside each pair's window (and for
                        // skipped pairs, whose window is empty)
                        double* ro = resp_out + n * K * J;
                        for (std::size_t k = 0; k < K; ++k) {
                            const std::size_t q = q0 + k;
                            double* o = ro + k * J;
                            const std::size_t u0 = llk[q] != ninf ? w0[q] : J;
                            const std::size_t u1 = llk[q] != ninf ? w1[q] : J;
                            const double* r = buf.data() + q * J;
                            std::fill(o, o + u0, 0.0);
                            std::copy(r + u0, r + u1, o + u0);
                            std::fill(o + u1, o + J, 0.0);
                        }
                    }
                    if (wb != nullptr) {
                        for (std::size_t k = 0; k < K; ++k) {
                            const std::size_t q = q0 + k;
                            const double* r = buf.data() + q * J;
                            for (std::size_t j = lo[q]; j < hi[q]; ++j) wb[j] += r[j] * rk[q];
                        }
                    }
                }
                if (cb == nullptr) continue;
                for (std::size_t k = 0; k < K; ++k) {
                    for (std::size_t n = s0; n < s1; ++n) {
                        const std::size_t q = (n - s0) * K + k;
                        if (!(rk[q] > a.keep_r)) continue;
                        const Row* rows = a.rows + n * L;
                        const std::size_t col = static_cast<std::size_t>(a.label[n]) * K + k;
                        double* r = buf.data() + q * J;
                        for (std::size_t j = lo[q]; j < hi[q]; ++j) r[j] *= rk[q];
                        for (std::size_t l = 0; l < L; ++l) {
                            if (rows[l] < 0) continue;
                            double* c =
                                cb + ((l * TK + col) * R + static_cast<std::size_t>(rows[l])) * J;
                            for (std::size_t j = lo[q]; j < hi[q]; ++j) c[j] += r[j];
                        }
                    }
                }
            }
            part_ll[b] = acc_ll;
        }
    });
    if (C != nullptr && !direct) {
        std::fill(C, C + P, 0.0);
        for (std::size_t b = 0; b < n_blocks; ++b) {
            const double* cb = part_c.data() + b * P;
            for (std::size_t i = 0; i < P; ++i) C[i] += cb[i];
        }
    }
    if (wsum != nullptr) {
        std::fill(wsum, wsum + J, 0.0);
        for (std::size_t b = 0; b < n_blocks; ++b)
            for (std::size_t j = 0; j < J; ++j) wsum[j] += part_w[b * J + j];
    }
    double ll = 0.0;
    for (double v : part_ll) ll += v;
    return ll;
}

}  // namespace capfront
