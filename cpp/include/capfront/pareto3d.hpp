// Non-dominated rows of an (M, 3) array, all coordinates minimised (the caller negates
// the ones to maximise), in O(M log M) (Kung, Luccio & Preparata 1975).
//
// Row a dominates row b when a <= b in every coordinate and a < b in at least one.
// Exact duplicates do not dominate each other, so every copy of a non-dominated point
// is kept.
// Sweep: rows sorted lexicographically by (x, y, z) (ties by row index); a std::map
// holds the 2-D staircase of the (y, z) minima seen so far (y ascending, z strictly
// descending). A row is dominated iff the staircase entry with the largest y <= its y
// has z <= its z (every earlier row has x no larger). Runs of identical rows are
// queried before any of them is inserted, so copies never knock each other out.
// Cost: the sort plus O(log M) per row; memory O(M).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <numeric>
#include <vector>

namespace capfront {

// points: row-major (M, 3), no NaN. Returns the non-dominated row indices, ascending.
inline std::vector<std::int64_t> pareto_minima_3d(const double* points, std::size_t M) {
    std::vector<std::int64_t> order(M);
    std::iota(order.begin(), order.end(), std::int64_t{0});
    auto at = [points](std::int64_t i, int d) { return points[3 * i + d]; };
    std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
        for (int d = 0; d < 3; ++d) {
            const double u = at(a, d), v = at(b, d);
            if (u < v) return true;
            if (v < u) return false;
        }
        return a < b;
    });
    std::map<double, double> stair;  // y -> z, z strictly decreasing in y
    std::vector<std::int64_t> keep;
    std::size_t i = 0;
    while (i < M) {
        // run of identical rows [i, j)
        std::size_t j = i + 1;
        const std::int64_t r = order[i];
        const double x = at(r, 0), y = at(r, 1), z = at(r, 2);
        while (j < M && at(order[j], 0) == x && at(order[j], 1) == y && at(order[j], 2) == z)
            ++j;
        bool dominated = false;
        auto it = stair.upper_bound(y);
        if (it != stair.begin()) {
            --it;
            dominated = it->second <= z;
        }
        if (!dominated) {
            for (std::size_t t = i; t < j; ++t) keep.push_back(order[t]);
            // insert (y, z); drop entries with y' >= y and z' >= z
            auto pos = stair.lower_bound(y);
            while (pos != stair.end() && pos->second >= z) pos = stair.erase(pos);
            stair.emplace_hint(pos, y, z);
        }
        i = j;
    }
    std::sort(keep.begin(), keep.end());
    return keep;
}

}  // namespace capfront
