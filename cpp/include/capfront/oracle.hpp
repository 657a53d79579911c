// Per-prompt rows of the naive (plug-in) oracles, fused: one read of the (N, L)
// counts and no (N, L) temporaries.
//
// Cell (n, l) was run when G[n, l] > 0; there p_hat = S / G and the mean cost of one
// generation is cost_sum / G (both one IEEE division, as NumPy computes them).
//
// Routed (prehoc) oracle, per prompt n:
//   p[l]      = p_hat[n, l] where run, else -inf; best = max_l p[l] (NaN if any is);
//   tied      = { l : p[l] == best };
//   choice[n] = with costs: argmin_l c[l], c[l] = mean cost where tied, else +inf,
//               with NumPy's argmin rule (the first NaN if there is one, else the
//               first minimum); without costs: the first tied l (0 if none);
//   value[n]  = p_hat[n, choice] (NaN if not run), cost[n] = mean cost there.
// Union oracle, per prompt n:
//   miss[n] = prod_l (1 - p_hat[n, l] where run, else 1), multiplied in l order;
//   cost[n] = sum_l (mean cost where run, else 0), summed in NumPy's pairwise order
//             (numpy.add.reduce over a contiguous row), so the results are
//             bit-identical to the NumPy expressions.
// The oracle values are the means over prompts of value (prehoc) and 1 - miss
// (union); the caller takes them with NumPy, so they too are bit-identical.
//
// Speed: with integer counts no division is needed to find the max and the ties:
// for 0 <= S, G < 2^26 two ratios S1/G1 and S2/G2 round to the same double exactly
// when S1*G2 == S2*G1 (distinct ratios differ by more than one ulp), and their
// rounded order is the order of the cross products. With one G for every cell the
// comparison is on S itself, and 1 - S/G comes from a table of the G + 1 values.
// Rows are split in fixed blocks over the threads; every output is per row, so the
// results do not depend on the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "capfront/parallel.hpp"

namespace capfront {

namespace oracle_detail {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::int64_t kExactBound = std::int64_t{1} << 26;  // cross products exact
constexpr std::size_t kRowsPerBlock = 1024;

// numpy.add.reduce of a contiguous float64 row: pairwise blocks of 8 accumulators
// up to 128 values, halves (multiples of 8) above, added to the identity +0.0.
inline double pairwise(const double* a, std::size_t n) {
    if (n < 8) {
        double res = -0.0;
        for (std::size_t i = 0; i < n; ++i) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; ++j) r[j] = a[j];
        std::size_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; ++j) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) res += a[i];
        return res;
    }
    std::size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise(a, n2) + pairwise(a + n2, n - n2);
}

inline double numpy_sum(const double* a, std::size_t n) { return 0.0 + pairwise(a, n); }

}  // namespace oracle_detail

// Inputs: S (N, L) row-major counts or sums; G (N, L) row-major draw counts, or
// nullptr with g_const the one draw count of every cell; cost_sum (N, L) row-major,
// or one row of L shared by every prompt (cost_shared: per-model prices with one
// draw count), or nullptr (no costs).
template <class TS, class TG>
struct OracleInput {
    const TS* S;
    const TG* G;
    std::int64_t g_const;
    const double* cost_sum;
    std::size_t N, L;
    bool cost_shared = false;

    std::int64_t g(std::size_t n, std::size_t l) const {
        return G ? static_cast<std::int64_t>(G[n * L + l]) : g_const;
    }
    // the cost sums of prompt n
    const double* costs(std::size_t n) const {
        return cost_sum + (cost_shared ? 0 : n * L);
    }
};

// Smallest and largest of a[0..n), n >= 1, in four lanes (no serial chain).
template <class T>
void min_max(const T* a, std::size_t n, T& lo, T& hi) {
    T l4[4] = {a[0], a[0], a[0], a[0]}, h4[4] = {a[0], a[0], a[0], a[0]};
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; ++k) {
            l4[k] = a[i + k] < l4[k] ? a[i + k] : l4[k];
            h4[k] = a[i + k] > h4[k] ? a[i + k] : h4[k];
        }
    for (; i < n; ++i) {
        l4[0] = a[i] < l4[0] ? a[i] : l4[0];
        h4[0] = a[i] > h4[0] ? a[i] : h4[0];
    }
    lo = std::min(std::min(l4[0], l4[1]), std::min(l4[2], l4[3]));
    hi = std::max(std::max(h4[0], h4[1]), std::max(h4[2], h4[3]));
}

// Integer counts whose cross products are exact for every cell, known from the
// types alone (or the one draw count).
template <class TS, class TG>
bool exact_by_type(const OracleInput<TS, TG>& in) {
    constexpr bool small_s = std::is_integral<TS>::value && sizeof(TS) <= 2;
    constexpr bool small_g = sizeof(TG) <= 2;
    return small_s && (in.G ? small_g : in.g_const < oracle_detail::kExactBound);
}

// Marks tied[l] (p[l] == max p) for row n; returns false when the row needs the
// floating-point path (non-integer or large values).
template <class TS, class TG>
bool ties_exact(const OracleInput<TS, TG>& in, std::size_t n, bool known_exact,
                unsigned char* tied) {
    using oracle_detail::kExactBound;
    const std::size_t L = in.L;
    const TS* s = in.S + n * L;
    if constexpr (!std::is_integral<TS>::value) {
        return false;
    } else {
        if (!in.G) {  // one draw count: compare the counts themselves
            if (in.g_const <= 0) {
                for (std::size_t l = 0; l < L; ++l) tied[l] = 1;
                return true;
            }
            TS best = s[0], low = s[0];  // one vectorisable pass
            for (std::size_t l = 1; l < L; ++l) {
                best = s[l] > best ? s[l] : best;
                low = s[l] < low ? s[l] : low;
            }
            if (!known_exact && (static_cast<std::int64_t>(low) < 0 ||
                                 static_cast<std::int64_t>(best) >= kExactBound ||
                                 in.g_const >= kExactBound))
                return false;
            for (std::size_t l = 0; l < L; ++l) tied[l] = s[l] == best;
            return true;
        }
        if (!known_exact) {
            for (std::size_t l = 0; l < L; ++l) {
                const auto sl = static_cast<std::int64_t>(s[l]);
                if (in.g(n, l) >= kExactBound || sl < 0 || sl >= kExactBound) return false;
            }
        }
        // best ratio as (bs, bg); bg == 0: no run cell (best = -inf, all tied)
        std::int64_t bs = 0, bg = 0;
        for (std::size_t l = 0; l < L; ++l) {
            const std::int64_t gl = in.g(n, l);
            if (gl <= 0) continue;
            const auto sl = static_cast<std::int64_t>(s[l]);
            if (bg == 0 || sl * bg > bs * gl) {
                bs = sl;
                bg = gl;
            }
        }
        for (std::size_t l = 0; l < L; ++l) {
            const std::int64_t gl = in.g(n, l);
            tied[l] = bg == 0 ? gl <= 0
                              : gl > 0 && static_cast<std::int64_t>(s[l]) * bg == bs * gl;
        }
        return true;
    }
}

// The choice of row n given its tie predicate: with costs NumPy's argmin of
// (tied ? mean cost : +inf), i.e. the first NaN, else the first minimum; without
// costs the first tied model (0 if none).
template <class TS, class TG, class Tied>
std::size_t choose(const OracleInput<TS, TG>& in, std::size_t n, Tied&& is_tied) {
    using namespace oracle_detail;
    const std::size_t L = in.L;
    std::size_t j = 0;
    if (!in.cost_sum) {
        while (j < L && !is_tied(j)) ++j;
        return j == L ? 0 : j;
    }
    const double* cs = in.costs(n);
    auto c = [&](std::size_t l) {
        const std::int64_t gl = in.g(n, l);
        return gl > 0 ? cs[l] / static_cast<double>(gl) : kNaN;
    };
    double m = is_tied(0) ? c(0) : kInf;
    if (std::isnan(m)) return 0;
    for (std::size_t l = 1; l < L; ++l) {
        if (!is_tied(l)) continue;
        const double v = c(l);
        if (std::isnan(v)) return l;
        if (v < m) {
            m = v;
            j = l;
        }
    }
    return j;
}

// choose() with costs for one draw count g and the ties {l : S[l] == best}, with
// a division only where it can matter. x -> fl(x / g) is non-decreasing, so the
// smallest rounded mean cost T is fl(m / g) with m the smallest tied cost sum, and
// the answer is the first tied l with fl(cs[l] / g) == T: any l with cs[l] == m,
// or one a rounding step above m (checked by dividing).
template <class TS, class TG>
std::size_t choose_one_g(const OracleInput<TS, TG>& in, std::size_t n, TS best,
                         std::uint32_t* tied) {
    using namespace oracle_detail;
    const std::size_t L = in.L;
    const TS* s = in.S + n * L;
    const double* cs = in.costs(n);
    // the tied positions, in order (branch-free compaction: no cost read yet)
    std::size_t k = 0;
    for (std::size_t l = 0; l < L; ++l) {
        tied[k] = static_cast<std::uint32_t>(l);
        k += s[l] == best;
    }
    if (k == 1)  // one tie: no comparison (a NaN cost wins too; all +inf gives 0)
        return cs[tied[0]] == kInf ? 0 : tied[0];
    double m = kInf;
    bool any_nan = false;
    for (std::size_t t = 0; t < k; ++t) {
        const double v = cs[tied[t]];
        any_nan |= std::isnan(v);
        m = v < m ? v : m;
    }
    if (any_nan) {  // NumPy's argmin returns the first NaN
        for (std::size_t t = 0; t < k; ++t)
            if (std::isnan(cs[tied[t]])) return tied[t];
    }
    const double g = static_cast<double>(in.g_const);
    const double T = m / g;
    if (T == kInf) return 0;  // every value is +inf: NumPy returns index 0
    // fl(x / g) == T needs x - m below a rounding step of T (times g)
    const double reach = m + std::fabs(m) * 0x1p-48 + g * 0x1p-1000;
    for (std::size_t t = 0; t < k; ++t) {
        const double v = cs[tied[t]];
        if (v == m || (v <= reach && v / g == T)) return tied[t];
    }
    return 0;  // not reached: m is one of the tied values
}

// choice, value: length N; cost: length N or nullptr (ignored without costs).
template <class TS, class TG>
void prehoc_oracle_rows(const OracleInput<TS, TG>& in, std::int64_t* choice,
                        double* value, double* cost) {
    using namespace oracle_detail;
    const std::size_t L = in.L;
    const bool known_exact = exact_by_type(in);
    // one draw count and integer counts: the ties are the cells with the max count
    const bool fast = std::is_integral<TS>::value && !in.G && in.g_const > 0 &&
                      in.g_const < kExactBound;
    parallel_blocks(in.N, kRowsPerBlock, [&](std::size_t n0, std::size_t n1) {
        std::vector<double> p(L);
        std::vector<unsigned char> tied(L);
        std::vector<std::uint32_t> tied_at(L + 1);
        for (std::size_t n = n0; n < n1; ++n) {
            const TS* s = in.S + n * L;
            std::size_t j = 0;
            bool done = false;
            if (fast) {
                TS best, low;
                min_max(s, L, low, best);
                if (known_exact || (static_cast<std::int64_t>(low) >= 0 &&
                                    static_cast<std::int64_t>(best) < kExactBound)) {
                    j = in.cost_sum ? choose_one_g(in, n, best, tied_at.data())
                                    : choose(in, n, [&](std::size_t l) { return s[l] == best; });
                    done = true;
                }
            }
            if (!done) {
                if (!ties_exact(in, n, known_exact, tied.data())) {
                    bool any_nan = false;
                    double best = -kInf;
                    for (std::size_t l = 0; l < L; ++l) {
                        const std::int64_t gl = in.g(n, l);
                        p[l] = gl > 0 ? static_cast<double>(s[l]) / static_cast<double>(gl)
                                      : -kInf;
                        if (std::isnan(p[l])) {
                            any_nan = true;
                        } else if (p[l] > best) {
                            best = p[l];
                        }
                    }
                    if (any_nan) best = kNaN;  // numpy's max propagates NaN: no ties
                    for (std::size_t l = 0; l < L; ++l) tied[l] = p[l] == best;
                }
                j = choose(in, n, [&](std::size_t l) { return tied[l] != 0; });
            }
            const std::int64_t gj = in.g(n, j);
            choice[n] = static_cast<std::int64_t>(j);
            value[n] = gj > 0 ? static_cast<double>(s[j]) / static_cast<double>(gj) : kNaN;
            if (in.cost_sum && cost)
                cost[n] = gj > 0 ? in.costs(n)[j] / static_cast<double>(gj) : kNaN;
        }
    });
}

// miss: length N; cost: length N or nullptr (ignored without costs).
template <class TS, class TG>
void union_oracle_rows(const OracleInput<TS, TG>& in, double* miss, double* cost) {
    using namespace oracle_detail;
    const std::size_t L = in.L;
    // one G everywhere and integer counts: 1 - S/G from a table of G + 1 values
    std::vector<double> table;
    if (std::is_integral<TS>::value && !in.G && in.g_const > 0 && in.g_const <= 65536) {
        table.resize(static_cast<std::size_t>(in.g_const) + 1);
        for (std::size_t k = 0; k < table.size(); ++k)
            table[k] = 1.0 - static_cast<double>(k) / static_cast<double>(in.g_const);
    }
    auto one_minus_p = [&](TS sl, std::int64_t gl) {
        if constexpr (std::is_integral<TS>::value) {
            const auto k = static_cast<std::int64_t>(sl);
            if (k >= 0 && static_cast<std::size_t>(k) < table.size())
                return table[static_cast<std::size_t>(k)];
        }
        return 1.0 - static_cast<double>(sl) / static_cast<double>(gl);
    };
    const double g_d = static_cast<double>(in.g_const);
    parallel_blocks(in.N, kRowsPerBlock, [&](std::size_t n0, std::size_t n1) {
        std::vector<double> c(L);
        // products of kTile rows at once: independent multiply chains, each still
        // in model order (bit-identical to the row-by-row product)
        constexpr std::size_t kTile = 8;
        for (std::size_t t0 = n0; t0 < n1; t0 += kTile) {
            const std::size_t t1 = std::min(n1, t0 + kTile);
            double prod[kTile];
            for (std::size_t r = 0; r < kTile; ++r) prod[r] = 1.0;
            const TS* s = in.S + t0 * L;
            const std::size_t cells = (t1 - t0) * L;
            bool in_table = false;
            if constexpr (std::is_integral<TS>::value) {
                if (!table.empty()) {  // every count of the tile indexes the table
                    TS lo = s[0], hi = s[0];
                    for (std::size_t k = 1; k < cells; ++k) {
                        lo = s[k] < lo ? s[k] : lo;
                        hi = s[k] > hi ? s[k] : hi;
                    }
                    in_table = static_cast<std::int64_t>(lo) >= 0 &&
                               static_cast<std::int64_t>(hi) < static_cast<std::int64_t>(table.size());
                }
            }
            if (in_table) {
                const double* tab = table.data();
                for (std::size_t l = 0; l < L; ++l)
                    for (std::size_t r = 0; r < t1 - t0; ++r)
                        prod[r] *= tab[static_cast<std::size_t>(s[r * L + l])];
            } else {
                for (std::size_t l = 0; l < L; ++l)
                    for (std::size_t n = t0; n < t1; ++n) {
                        const std::int64_t gl = in.g(n, l);
                        prod[n - t0] *= gl > 0 ? one_minus_p(in.S[n * L + l], gl) : 1.0;
                    }
            }
            for (std::size_t n = t0; n < t1; ++n) miss[n] = prod[n - t0];
        }
        if (!(in.cost_sum && cost)) return;
        for (std::size_t n = n0; n < n1; ++n) {
            const double* cs = in.costs(n);
            if (!in.G && in.g_const > 0) {
                for (std::size_t l = 0; l < L; ++l) c[l] = cs[l] / g_d;  // vectorises
            } else {
                for (std::size_t l = 0; l < L; ++l) {
                    const std::int64_t gl = in.g(n, l);
                    c[l] = gl > 0 ? cs[l] / static_cast<double>(gl) : 0.0;
                }
            }
            cost[n] = numpy_sum(c.data(), L);
        }
    });
}

}  // namespace capfront
