// The exact cost-quality frontier by the per-prompt hull merge (SPEC 6).
//
// Per prompt n there are M options j with (cost c[n,j], quality q[n,j]); a non-finite
// cost or quality marks an unavailable option. A routing policy picks one option per
// prompt (possibly at random), so the reachable (mean cost, mean quality) set is the
// Minkowski average of the prompts' option sets, and its upper boundary is:
//   1. per prompt, the upper-left convex hull of its options, from the cheapest option
//      (highest quality among equally cheap ones) up to the cheapest option of highest
//      quality; every hull segment has dcost > 0, dquality > 0 and strictly decreasing
//      slopes along the prompt;
//   2. all segments of all prompts sorted by slope dquality / dcost, descending, ties
//      by (prompt, position along the prompt's hull) ascending: a total order, so the
//      result does not depend on the sort algorithm or the thread count;
//   3. every prompt at its cheapest option, then the segments applied in order; the
//      running (weighted) sums are the frontier's vertices.
// Cost: O(N M log M) for the hulls (per prompt: an O(M) filter of dominated options,
// then a sort of the survivors), O(S log S) for the merge of S segments. Memory: the
// segments (48 bytes each) plus per-block scratch of O(M).
//
// Tie and float conventions (the numba and numpy paths replicate them operation for
// operation, so all backends return identical segments):
// - options are scanned in (cost ascending, option index ascending) order (a stable
//   sort by cost); an option no better than the current hull top is skipped, an option
//   as cheap as the top but better replaces it;
// - the top is popped while slope(prev, top) <= slope(top, new), with
//   slope(a, b) = (q_b - q_a) / (c_b - c_a) in double; collinear points are dropped.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "parallel.hpp"

namespace capfront {

struct HullSegments {
    std::vector<double> base_cost, base_quality;
    std::vector<std::int64_t> base_option;
    std::vector<std::int64_t> prompt, option_from, option_to;
    std::vector<double> dcost, dquality;
};

namespace detail {

inline bool option_available(double c, double q) { return std::isfinite(c) && std::isfinite(q); }

// Upper-left hull of one prompt's m candidate options, given compactly: option
// idx[i] has cost c[i] and quality q[i]. Writes the hull's positions (into the compact
// arrays, cost ascending) into `hull` and returns their number (0 when no option is
// available). `scratch` and `order` are scratch of size m.
inline std::size_t prompt_hull(const double* c, const double* q, const std::int64_t* idx,
                               std::size_t m_all, std::pair<double, std::int64_t>* scratch,
                               std::int64_t* order, std::int64_t* hull) {
    // Pass 1: cheapest cost and highest quality; pass 2: the quality of the cheapest
    // option(s) and the cost of the cheapest best option. Options outside
    // [c_min, c_star] x [q_base, q_max] can never be on the hull: dropping them first
    // only saves sort work (the result is the same as without the filter).
    double c_min = INFINITY, q_max = -INFINITY;
    for (std::size_t j = 0; j < m_all; ++j) {
        if (!option_available(c[j], q[j])) continue;
        c_min = std::min(c_min, c[j]);
        q_max = std::max(q_max, q[j]);
    }
    if (!(c_min < INFINITY)) return 0;
    double c_star = INFINITY, q_base = -INFINITY;
    for (std::size_t j = 0; j < m_all; ++j) {
        if (!option_available(c[j], q[j])) continue;
        if (q[j] == q_max) c_star = std::min(c_star, c[j]);
        if (c[j] == c_min) q_base = std::max(q_base, q[j]);
    }
    // (cost, option index) pairs sorted lexicographically: a stable sort by cost.
    std::size_t m = 0;
    for (std::size_t j = 0; j < m_all; ++j) {
        if (!option_available(c[j], q[j])) continue;
        if (c[j] <= c_star && q[j] >= q_base)
            scratch[m++] = {c[j], (idx[j] << 32) | static_cast<std::int64_t>(j)};
    }
    std::sort(scratch, scratch + m);
    for (std::size_t i = 0; i < m; ++i) order[i] = scratch[i].second & 0xffffffff;
    std::size_t h = 0;
    for (std::size_t i = 0; i < m; ++i) {
        const std::int64_t o = order[i];
        const double co = c[o], qo = q[o];
        if (h > 0) {
            const std::int64_t t = hull[h - 1];
            if (qo <= q[t]) continue;  // dominated by the top (no dearer, at least as good)
            if (co == c[t]) --h;       // as cheap, better: replaces the top
        }
        while (h >= 2) {
            const std::int64_t a = hull[h - 2], b = hull[h - 1];
            const double s_ab = (q[b] - q[a]) / (c[b] - c[a]);
            const double s_bo = (qo - q[b]) / (co - c[b]);
            if (s_ab <= s_bo) {
                --h;
            } else {
                break;
            }
        }
        hull[h++] = o;
    }
    return h;
}

struct SegmentKey {
    double slope;
    std::size_t index;  // position in (prompt, hull position) order
};

struct KeyBefore {  // a functor, so that std::sort inlines it
    bool operator()(const SegmentKey& a, const SegmentKey& b) const {
        return a.slope > b.slope || (a.slope == b.slope && a.index < b.index);
    }
};

// Sorts keys by KeyBefore: fixed chunks sorted in parallel, then merged pairwise.
// KeyBefore is a total order, so the result is unique whatever the chunking.
inline void sort_keys(std::vector<SegmentKey>& keys) {
    const std::size_t n = keys.size();
    constexpr std::size_t kChunks = 8;
    if (n < (std::size_t{1} << 15)) {
        std::sort(keys.begin(), keys.end(), KeyBefore{});
        return;
    }
    std::vector<std::size_t> bounds(kChunks + 1);
    for (std::size_t i = 0; i <= kChunks; ++i) bounds[i] = n * i / kChunks;
    parallel_blocks(kChunks, 1, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t b = b0; b < b1; ++b)
            std::sort(keys.begin() + bounds[b], keys.begin() + bounds[b + 1],
                          KeyBefore{});
    });
    for (std::size_t width = 1; width < kChunks; width *= 2) {
        const std::size_t n_merges = (kChunks + 2 * width - 1) / (2 * width);
        parallel_blocks(n_merges, 1, [&](std::size_t m0, std::size_t m1) {
            for (std::size_t mi = m0; mi < m1; ++mi) {
                const std::size_t lo = 2 * width * mi;
                const std::size_t mid = std::min(lo + width, kChunks);
                const std::size_t hi = std::min(lo + 2 * width, kChunks);
                if (mid >= hi) continue;
                std::inplace_merge(keys.begin() + bounds[lo], keys.begin() + bounds[mid],
                                   keys.begin() + bounds[hi], KeyBefore{});
            }
        });
    }
}

}  // namespace detail

// Generic driver: fill(n, c, q, idx) writes prompt n's candidate options compactly
// (at most M: option idx[i] with cost c[i], quality q[i]) and returns their number;
// it may leave out options that can never be on the hull (dominated ones).
// Prompts with no available option get NaN base values and no segments.
// Option indices must fit in 31 bits (M < 2^31).
template <class Fill>
HullSegments hull_segments(std::size_t N, std::size_t M, Fill&& fill) {
    struct Block {
        std::vector<std::int64_t> prompt, from, to;
        std::vector<double> dcost, dq;
    };
    constexpr std::size_t kGrain = 1024;  // prompts per block
    const std::size_t n_blocks = (N + kGrain - 1) / kGrain;
    std::vector<Block> blocks(n_blocks);
    HullSegments out;
    out.base_cost.assign(N, NAN);
    out.base_quality.assign(N, NAN);
    out.base_option.assign(N, -1);
    parallel_blocks(n_blocks, 1, [&](std::size_t b0, std::size_t b1) {
        std::vector<double> c(M), q(M);
        std::vector<std::int64_t> idx(M), order(M), hull(M);
        std::vector<std::pair<double, std::int64_t>> scratch(M);
        for (std::size_t b = b0; b < b1; ++b) {
            Block& blk = blocks[b];
            const std::size_t n1 = std::min(N, (b + 1) * kGrain);
            for (std::size_t n = b * kGrain; n < n1; ++n) {
                const std::size_t m = fill(n, c.data(), q.data(), idx.data());
                const std::size_t h = detail::prompt_hull(
                    c.data(), q.data(), idx.data(), m, scratch.data(), order.data(),
                    hull.data());
                if (h == 0) continue;
                out.base_option[n] = idx[hull[0]];
                out.base_cost[n] = c[hull[0]];
                out.base_quality[n] = q[hull[0]];
                for (std::size_t i = 1; i < h; ++i) {
                    const std::int64_t a = hull[i - 1], z = hull[i];
                    blk.prompt.push_back(static_cast<std::int64_t>(n));
                    blk.from.push_back(idx[a]);
                    blk.to.push_back(idx[z]);
                    blk.dcost.push_back(c[z] - c[a]);
                    blk.dq.push_back(q[z] - q[a]);
                }
            }
        }
    });
    std::vector<std::size_t> offset(n_blocks + 1, 0);
    for (std::size_t b = 0; b < n_blocks; ++b) offset[b + 1] = offset[b] + blocks[b].prompt.size();
    const std::size_t S = offset[n_blocks];
    std::vector<detail::SegmentKey> keys(S);
    parallel_blocks(n_blocks, 1, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t b = b0; b < b1; ++b) {
            const Block& blk = blocks[b];
            for (std::size_t i = 0; i < blk.prompt.size(); ++i)
                keys[offset[b] + i] = {blk.dq[i] / blk.dcost[i], offset[b] + i};
        }
    });
    detail::sort_keys(keys);
    // Gather: map a global (unsorted) index back to its block.
    std::vector<std::size_t> block_of(S);
    for (std::size_t b = 0; b < n_blocks; ++b)
        std::fill(block_of.begin() + offset[b], block_of.begin() + offset[b + 1], b);
    out.prompt.resize(S);
    out.option_from.resize(S);
    out.option_to.resize(S);
    out.dcost.resize(S);
    out.dquality.resize(S);
    parallel_blocks(S, kBlockRows * 16, [&](std::size_t s0, std::size_t s1) {
        for (std::size_t s = s0; s < s1; ++s) {
            const std::size_t g = keys[s].index;
            const Block& blk = blocks[block_of[g]];
            const std::size_t i = g - offset[block_of[g]];
            out.prompt[s] = blk.prompt[i];
            out.option_from[s] = blk.from[i];
            out.option_to[s] = blk.to[i];
            out.dcost[s] = blk.dcost[i];
            out.dquality[s] = blk.dq[i];
        }
    });
    return out;
}

// Dense options: cost and quality shaped (N, M), row-major.
inline HullSegments hull_segments_dense(const double* cost, const double* quality,
                                        std::size_t N, std::size_t M) {
    return hull_segments(N, M, [&](std::size_t n, double* c, double* q, std::int64_t* idx) {
        std::size_t m = 0;
        for (std::size_t j = 0; j < M; ++j) {
            const double cj = cost[n * M + j], qj = quality[n * M + j];
            if (!detail::option_available(cj, qj)) continue;
            c[m] = cj;
            q[m] = qj;
            idx[m++] = static_cast<std::int64_t>(j);
        }
        return m;
    });
}

// Posthoc options of binary data built on the fly (no (N, L*K) arrays): option
// j = l*K + (k-1) is "best of k draws of model l" with cost k * cell_cost[n,l] and
// quality the unbiased pass@k = 1 - C(G-S, k) / C(G, k): S/G for k = 1, then
// 1 - r_k with r_k = r_{k-1} * (G-S-k+1) / (G-k+1), r_1 = (G-S)/G (O(K) per cell).
// Unavailable when k > G[n,l] (so cells with G = 0 have no option) or the cell cost
// is not finite. Options past the first k with pass@k = 1 (k = G-S+1), and k > 1
// when S = 0, are dominated by an option of the same model and are not generated.
inline HullSegments hull_segments_posthoc(const std::int64_t* successes,
                                          const std::int64_t* n_draws,
                                          const double* cell_cost, std::size_t N,
                                          std::size_t L, std::size_t K) {
    const auto KK = static_cast<std::int64_t>(K);
    return hull_segments(N, L * K, [&](std::size_t n, double* c, double* q,
                                       std::int64_t* idx) {
        std::size_t m = 0;
        for (std::size_t l = 0; l < L; ++l) {
            const std::int64_t S = successes[n * L + l], G = n_draws[n * L + l];
            const double cc = cell_cost[n * L + l];
            if (G <= 0 || !std::isfinite(cc)) continue;
            const std::int64_t k_last = S == 0 ? 1 : std::min({KK, G, G - S + 1});
            double r = 1.0;
            for (std::int64_t k = 1; k <= k_last; ++k) {
                const std::int64_t num = G - S - k + 1;
                double qk;
                if (k == 1) {
                    qk = static_cast<double>(S) / static_cast<double>(G);
                    r = static_cast<double>(num) / static_cast<double>(G);
                } else {
                    r = num > 0 ? r * (static_cast<double>(num) / static_cast<double>(G - k + 1))
                                : 0.0;
                    qk = 1.0 - r;
                }
                c[m] = static_cast<double>(k) * cc;
                q[m] = qk;
                idx[m++] = static_cast<std::int64_t>(l * K) + (k - 1);
            }
        }
        return m;
    });
}

}  // namespace capfront
