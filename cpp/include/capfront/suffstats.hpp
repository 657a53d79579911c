// Fused sufficient statistics of an (N, L, G) evaluation tensor.
//
// One pass over scores (and optional mask, cost, latency), writing per (n, l) cell:
//   successes = sum_g phi,  sum_sq = sum_g phi^2,  n_draws = #valid g,
//   max_score = max_g phi,  cost_sum = sum_g c,  latency_sum = sum_g t,
//   latency_max = max_g t.
// Also counts invalid values (NaN/inf, scores outside [0, 1], non-binary scores,
// negative or non-finite cost/latency) so the caller can name the problem.
// Complexity O(N L G); memory traffic one read of each input, O(N L) writes.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "parallel.hpp"

namespace capfront {

struct SuffStatsOut {
    double* successes;     // (N, L)
    double* sum_sq;        // (N, L)
    std::int64_t* n_draws; // (N, L)
    double* max_score;     // (N, L); NaN where n_draws == 0
    double* cost_sum;      // (N, L) or nullptr
    double* latency_sum;   // (N, L) or nullptr
    double* latency_max;   // (N, L) or nullptr
};

struct SuffStatsFlags {
    std::int64_t nonfinite_scores = 0;
    std::int64_t out_of_range_scores = 0;  // finite but outside [0, 1]
    std::int64_t nonbinary_scores = 0;     // finite and not exactly 0 or 1
    std::int64_t bad_cost = 0;             // NaN, inf or negative
    std::int64_t bad_latency = 0;
};

template <class T>
SuffStatsFlags sufficient_stats(const T* scores, const std::uint8_t* mask,
                                const double* cost, const double* latency,
                                std::size_t N, std::size_t L, std::size_t G,
                                const SuffStatsOut& out) {
    const std::size_t n_blocks = (N + kBlockRows - 1) / kBlockRows;
    std::vector<SuffStatsFlags> block_flags(n_blocks);
    parallel_blocks(N, kBlockRows, [&](std::size_t n0, std::size_t n1) {
        SuffStatsFlags f;
        for (std::size_t n = n0; n < n1; ++n) {
            for (std::size_t l = 0; l < L; ++l) {
                const std::size_t cell = n * L + l;
                const std::size_t base = cell * G;
                double s = 0.0, s2 = 0.0, mx = -std::numeric_limits<double>::infinity();
                double cs = 0.0, ls = 0.0, lm = 0.0;
                std::int64_t cnt = 0;
                for (std::size_t g = 0; g < G; ++g) {
                    if (mask && !mask[base + g]) continue;
                    const double v = static_cast<double>(scores[base + g]);
                    ++cnt;
                    if (!std::isfinite(v)) {
                        ++f.nonfinite_scores;
                    } else {
                        if (v < 0.0 || v > 1.0) ++f.out_of_range_scores;
                        if (v != 0.0 && v != 1.0) ++f.nonbinary_scores;
                    }
                    s += v;
                    s2 += v * v;
                    mx = v > mx ? v : mx;
                    if (cost) {
                        const double c = cost[base + g];
                        if (!(c >= 0.0) || !std::isfinite(c)) ++f.bad_cost;
                        cs += c;
                    }
                    if (latency) {
                        const double t = latency[base + g];
                        if (!(t >= 0.0) || !std::isfinite(t)) ++f.bad_latency;
                        ls += t;
                        lm = t > lm ? t : lm;
                    }
                }
                out.successes[cell] = s;
                out.sum_sq[cell] = s2;
                out.n_draws[cell] = cnt;
                out.max_score[cell] =
                    cnt ? mx : std::numeric_limits<double>::quiet_NaN();
                if (out.cost_sum) out.cost_sum[cell] = cs;
                if (out.latency_sum) out.latency_sum[cell] = ls;
                if (out.latency_max) out.latency_max[cell] = lm;
            }
        }
        block_flags[n0 / kBlockRows] = f;
    });
    SuffStatsFlags total;
    for (const auto& f : block_flags) {
        total.nonfinite_scores += f.nonfinite_scores;
        total.out_of_range_scores += f.out_of_range_scores;
        total.nonbinary_scores += f.nonbinary_scores;
        total.bad_cost += f.bad_cost;
        total.bad_latency += f.bad_latency;
    }
    return total;
}

}  // namespace capfront
