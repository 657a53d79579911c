// Non-dominated rows of an (M, 3) array, all coordinates minimised (the caller says
// which columns to negate first), in O(M log M) (Kung, Luccio & Preparata 1975),
// after an exact dominance pre-filter.
//
// Row a dominates row b when a <= b in every coordinate and a < b in at least one.
// Exact duplicates do not dominate each other, so every copy of a non-dominated point
// is kept.
//
// Pre-filter (large M only). Dominance is transitive and every dominated row is
// dominated by some non-dominated row, so dropping rows dominated by ANY row (a
// "pivot") never changes the answer: a surviving row that is dominated in the full
// set is still dominated by a non-dominated row, which always survives. Pivots come
// from a fixed strided sample of kSample rows: the sample's own maxima, then a greedy
// cover (up to kPivots pivots, each chosen for the most sample rows it newly
// dominates, ties to the lowest sample position). One pass over the rows, split in
// fixed blocks over the threads, drops every row a pivot dominates. The pass is
// skipped when the sample says it would drop little (front-heavy data: many sample
// maxima, or the pivots dominate under 1/16 of the sample), so such data costs what
// the sweep alone costs. Uniform points: about 95% of the rows go in that one pass.
//
// Sweep: rows sorted lexicographically by (x, y, z) (ties by row index); a std::map
// holds the 2-D staircase of the (y, z) minima seen so far (y ascending, z strictly
// descending). A row is dominated iff the staircase entry with the largest y <= its y
// has z <= its z (every earlier row has x no larger). Runs of identical rows are
// queried before any of them is inserted, so copies never knock each other out.
// Cost: the sort plus O(log M) per row; memory O(M).
//
// The result depends on the data only (not on the sample, the pivots or the thread
// count): it is the exact set of non-dominated rows.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "capfront/parallel.hpp"

namespace capfront {

namespace pareto_detail {

struct Row {
    double x, y, z;
    std::int64_t i;
};

constexpr std::size_t kPrefilterMin = 16384;  // fewer rows: sweep only
constexpr std::size_t kSample = 4096;         // sample rows for the pivots
constexpr std::size_t kMaxCandidates = 256;   // more sample maxima: front-heavy
constexpr std::size_t kPivots = 8;
constexpr std::size_t kFilterBlock = 16384;   // rows per parallel block

// Bitwise, not short-circuit: no data-dependent branches in the filter pass.
inline bool dominates(const Row& a, const Row& b) {
    const bool le = (a.x <= b.x) & (a.y <= b.y) & (a.z <= b.z);
    const bool lt = (a.x < b.x) | (a.y < b.y) | (a.z < b.z);
    return le & lt;
}

inline bool has_nan(const Row& r) {
    return std::isnan(r.x) || std::isnan(r.y) || std::isnan(r.z);
}

// Non-dominated entries of `rows` (any order; sorted in place). Returns their
// positions in the sorted `rows`, in sweep order.
inline std::vector<std::size_t> sweep(std::vector<Row>& rows) {
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
        if (a.x != b.x) return a.x < b.x;
        if (a.y != b.y) return a.y < b.y;
        if (a.z != b.z) return a.z < b.z;
        return a.i < b.i;
    });
    const std::size_t M = rows.size();
    std::map<double, double> stair;  // y -> z, z strictly decreasing in y
    std::vector<std::size_t> keep;
    std::size_t i = 0;
    while (i < M) {
        // run of identical rows [i, j)
        const Row& r = rows[i];
        std::size_t j = i + 1;
        while (j < M && rows[j].x == r.x && rows[j].y == r.y && rows[j].z == r.z) ++j;
        bool dominated = false;
        auto it = stair.upper_bound(r.y);
        if (it != stair.begin()) {
            --it;
            dominated = it->second <= r.z;
        }
        if (!dominated) {
            for (std::size_t t = i; t < j; ++t) keep.push_back(t);
            // insert (y, z); drop entries with y' >= y and z' >= z
            auto pos = stair.lower_bound(r.y);
            while (pos != stair.end() && pos->second >= r.z) pos = stair.erase(pos);
            stair.emplace_hint(pos, r.y, r.z);
        }
        i = j;
    }
    return keep;
}

// Up to kPivots rows of the sample's maxima chosen greedily to dominate the most
// sample rows; empty when the filter would not pay.
inline std::vector<Row> choose_pivots(std::vector<Row> sample) {
    const std::size_t S = sample.size();
    const std::vector<std::size_t> front = sweep(sample);  // sample is now sorted
    if (front.size() > kMaxCandidates) return {};
    const std::size_t F = front.size(), W = (S + 63) / 64;
    std::vector<std::uint64_t> bits(F * W, 0);  // bits[f]: sample rows f dominates
    for (std::size_t f = 0; f < F; ++f) {
        const Row& a = sample[front[f]];
        std::uint64_t* b = bits.data() + f * W;
        for (std::size_t s = 0; s < S; ++s)
            if (dominates(a, sample[s])) b[s / 64] |= std::uint64_t{1} << (s % 64);
    }
    std::vector<std::uint64_t> covered(W, 0);
    std::vector<Row> pivots;
    std::size_t n_covered = 0;
    const std::size_t min_gain = std::max<std::size_t>(1, S / 512);
    while (pivots.size() < kPivots) {
        std::size_t best = F, best_gain = 0;
        for (std::size_t f = 0; f < F; ++f) {
            const std::uint64_t* b = bits.data() + f * W;
            std::size_t gain = 0;
            for (std::size_t w = 0; w < W; ++w)
                gain += static_cast<std::size_t>(__builtin_popcountll(b[w] & ~covered[w]));
            if (gain > best_gain) {
                best_gain = gain;
                best = f;
            }
        }
        if (best == F || best_gain < min_gain) break;
        const std::uint64_t* b = bits.data() + best * W;
        for (std::size_t w = 0; w < W; ++w) covered[w] |= b[w];
        n_covered += best_gain;
        pivots.push_back(sample[front[best]]);
    }
    if (16 * n_covered < S) return {};
    return pivots;
}

}  // namespace pareto_detail

// Non-dominated rows of the (M, 3) row-major array `points`, coordinate d negated
// first where maximize[d] (and -0.0 read as 0.0, so 0 and -0 are one value).
// Throws std::invalid_argument on NaN. Returns the row indices, ascending.
inline std::vector<std::int64_t> pareto_minima_3d(const double* points, std::size_t M,
                                                  const std::array<bool, 3>& maximize = {
                                                      false, false, false}) {
    using pareto_detail::Row;
    const double sx = maximize[0] ? -1.0 : 1.0, sy = maximize[1] ? -1.0 : 1.0,
                 sz = maximize[2] ? -1.0 : 1.0;
    auto row = [&](std::size_t i) {
        const double* p = points + 3 * i;
        return Row{sx * p[0] + 0.0, sy * p[1] + 0.0, sz * p[2] + 0.0,
                   static_cast<std::int64_t>(i)};
    };
    std::vector<Row> pivots;
    if (M >= pareto_detail::kPrefilterMin) {
        std::vector<Row> sample(pareto_detail::kSample);
        for (std::size_t k = 0; k < sample.size(); ++k) {
            sample[k] = row(static_cast<std::size_t>(
                static_cast<unsigned long long>(k) * M / sample.size()));
            if (pareto_detail::has_nan(sample[k]))
                throw std::invalid_argument("points contain NaN");
        }
        pivots = pareto_detail::choose_pivots(std::move(sample));
    }
    std::vector<Row> rows;
    if (pivots.empty()) {
        rows.resize(M);
        for (std::size_t i = 0; i < M; ++i) rows[i] = row(i);
    } else {
        // survivors per fixed block, concatenated in block order
        const std::size_t B = pareto_detail::kFilterBlock;
        const std::size_t n_blocks = (M + B - 1) / B;
        std::vector<std::vector<Row>> parts(n_blocks);
        const std::size_t K = pivots.size();
        parallel_blocks(n_blocks, 1, [&](std::size_t b0, std::size_t b1) {
            for (std::size_t b = b0; b < b1; ++b) {
                std::vector<Row>& out = parts[b];
                const std::size_t i1 = std::min(M, (b + 1) * B);
                for (std::size_t i = b * B; i < i1; ++i) {
                    const Row r = row(i);
                    bool dominated = false;
                    for (std::size_t k = 0; k < K && !dominated; ++k)
                        dominated = pareto_detail::dominates(pivots[k], r);
                    if (!dominated) out.push_back(r);
                }
            }
        });
        std::size_t total = 0;
        for (const auto& p : parts) total += p.size();
        rows.reserve(total);
        for (auto& p : parts) {
            rows.insert(rows.end(), p.begin(), p.end());
            std::vector<Row>().swap(p);
        }
    }
    // a NaN row is never dominated (its comparisons are false), so it is a survivor
    for (const Row& r : rows)
        if (pareto_detail::has_nan(r)) throw std::invalid_argument("points contain NaN");
    const std::vector<std::size_t> front = pareto_detail::sweep(rows);
    std::vector<std::int64_t> keep(front.size());
    for (std::size_t t = 0; t < front.size(); ++t) keep[t] = rows[front[t]].i;
    std::sort(keep.begin(), keep.end());
    return keep;
}

}  // namespace capfront
