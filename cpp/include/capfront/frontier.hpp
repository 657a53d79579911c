// The exact cost-quality frontier by the per-prompt hull merge (design §6).
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
// Cost: O(N M) for the hulls (per prompt: one O(M) pass for the cheapest and the best
// option, a filter of the options outside that box, an insertion sort of the few
// survivors, the monotone chain), O(S) for the merge of S segments (a stable LSD radix
// sort of the slopes' bit patterns, 8 bits a pass, passes with one digit skipped;
// fixed blocks, so the result is the same for any thread count). Memory: the segments
// (32 bytes each) plus 24 bytes of sort keys per segment.
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
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "parallel.hpp"

#if defined(__GNUC__) && !defined(__clang__)
#define CAPFRONT_FRONTIER_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define CAPFRONT_FRONTIER_NO_CONTRACT
#endif

namespace capfront {

struct HullSegments {
    std::vector<double> base_cost, base_quality;
    std::vector<std::int64_t> base_option;
    std::vector<std::int64_t> prompt, option_from, option_to;
    std::vector<double> dcost, dquality;
};

namespace detail {

inline bool option_available(double c, double q) { return std::isfinite(c) && std::isfinite(q); }

// Upper-left hull of one prompt's m options, all available (finite), given compactly
// in increasing option-index order: option i has cost c[i], quality q[i]. Writes the
// hull's positions (cost ascending) into `hull` and returns their number (0 when
// m == 0). `order` is scratch of size m.
//
// One pass finds the cheapest cost c_min (q_base: the best quality at that cost) and
// the highest quality q_max (c_star: the cheapest cost reaching it). Options outside
// [c_min, c_star] x [q_base, q_max] can never be on the hull: dropping them first
// only saves work (the result is the same as without the filter). The survivors are
// insertion-sorted by cost (stable: ties stay in option order), then the chain runs.
inline std::size_t prompt_hull(const double* c, const double* q, std::size_t m,
                               std::int32_t* order, std::int32_t* hull) {
    if (m == 0) return 0;
    double c_min = c[0], q_base = q[0], q_max = q[0], c_star = c[0];
    for (std::size_t j = 1; j < m; ++j) {
        const double cj = c[j], qj = q[j];
        if (cj < c_min) {
            c_min = cj;
            q_base = qj;
        } else if (cj == c_min && qj > q_base) {
            q_base = qj;
        }
        if (qj > q_max) {
            q_max = qj;
            c_star = cj;
        } else if (qj == q_max && cj < c_star) {
            c_star = cj;
        }
    }
    std::size_t s = 0;
    for (std::size_t j = 0; j < m; ++j) {
        const double cj = c[j];
        if (!(cj <= c_star && q[j] >= q_base)) continue;
        std::size_t i = s++;
        while (i > 0 && c[order[i - 1]] > cj) {
            order[i] = order[i - 1];
            --i;
        }
        order[i] = static_cast<std::int32_t>(j);
    }
    std::size_t h = 0;
    for (std::size_t i = 0; i < s; ++i) {
        const std::int32_t o = order[i];
        const double co = c[o], qo = q[o];
        if (h > 0) {
            const std::int32_t t = hull[h - 1];
            if (qo <= q[t]) continue;  // dominated by the top (no dearer, at least as good)
            if (co == c[t]) --h;       // as cheap, better: replaces the top
        }
        while (h >= 2) {
            const std::int32_t a = hull[h - 2], b = hull[h - 1];
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

// The monotone chain over options visited in `order` (cost ascending, ties by option
// position ascending); writes the hull into `hull`, returns its length.
inline std::size_t sorted_chain(const double* c, const double* q, const std::int32_t* order,
                                std::size_t s, std::int32_t* hull) {
    std::size_t h = 0;
    for (std::size_t i = 0; i < s; ++i) {
        const std::int32_t o = order[i];
        const double co = c[o], qo = q[o];
        if (h > 0) {
            const std::int32_t t = hull[h - 1];
            if (qo <= q[t]) continue;
            if (co == c[t]) --h;
        }
        while (h >= 2) {
            const std::int32_t a = hull[h - 2], b = hull[h - 1];
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

// Per-thread scratch for prompt hulls that reuses the previous prompt's cost order:
// when prompts share their models' cost ranking (per-model prices), checking that
// order (O(m)) replaces the sort, and the chain runs over all options (the box
// filter of prompt_hull only saves sort work; the hull is the same). When the order
// does not fit, prompt_hull runs; the cached order is rebuilt from that prompt while
// reuse keeps paying off (the result never depends on which path ran).
class HullWorkspace {
   public:
    explicit HullWorkspace(std::size_t M) : order_(M), cached_(M) {}

    std::size_t hull(const double* c, const double* q, std::size_t m, std::int32_t* hull) {
        if (m == cached_m_ && m > 0) {
            bool sorted = true;
            for (std::size_t i = 0; i + 1 < m; ++i) {
                const std::int32_t a = cached_[i], b = cached_[i + 1];
                sorted &= c[a] < c[b] || (c[a] == c[b] && a < b);
            }
            if (sorted) {
                misses_ = 0;
                return sorted_chain(c, q, cached_.data(), m, hull);
            }
        }
        ++misses_;
        if (misses_ <= 4 || (misses_ & 63) == 0) rebuild(c, m);
        return prompt_hull(c, q, m, order_.data(), hull);
    }

   private:
    std::vector<std::int32_t> order_, cached_;
    std::size_t cached_m_ = 0;
    std::size_t misses_ = 0;

    void rebuild(const double* c, std::size_t m) {
        for (std::size_t j = 0; j < m; ++j) {
            std::size_t i = j;
            while (i > 0 && c[cached_[i - 1]] > c[j]) {
                cached_[i] = cached_[i - 1];
                --i;
            }
            cached_[i] = static_cast<std::int32_t>(j);
        }
        cached_m_ = m;
    }
};

// Sort key of a slope > 0 (finite or +inf): the bit pattern of a positive double
// orders like the double, so ~bits ascending = slope descending.
inline std::uint64_t slope_key(double slope) {
    std::uint64_t bits;
    std::memcpy(&bits, &slope, sizeof bits);
    return ~bits;
}

// Stable LSD radix sort of (key, payload) by key ascending, 8 bits a pass; a pass
// whose digit is the same for every key is skipped. The counts of every digit do not
// depend on the order, so one pass (in parallel over fixed blocks, summed in block
// order) counts all eight; the scatter passes run serially (at this size they are
// bound by memory, and a parallel scatter would need per-block counts every pass).
// A stable sort's result is unique, so it does not depend on the thread count.
template <class Idx>
void radix_sort_pairs(std::vector<std::uint64_t>& key, std::vector<Idx>& idx) {
    const std::size_t n = key.size();
    if (n < 2) return;
    constexpr std::size_t kDigits = 8, kRadix = 256;
    const std::size_t n_blocks = n < (std::size_t{1} << 16) ? 1 : 16;
    std::vector<std::size_t> part(n_blocks * kDigits * kRadix, 0);
    parallel_blocks(n_blocks, 1, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t b = b0; b < b1; ++b) {
            std::size_t* h = part.data() + b * kDigits * kRadix;
            const std::size_t i1 = n * (b + 1) / n_blocks;
            for (std::size_t i = n * b / n_blocks; i < i1; ++i) {
                const std::uint64_t k = key[i];
                for (std::size_t d = 0; d < kDigits; ++d) ++h[d * kRadix + ((k >> (8 * d)) & 255)];
            }
        }
    });
    std::vector<std::size_t> hist(kDigits * kRadix, 0);
    for (std::size_t b = 0; b < n_blocks; ++b)
        for (std::size_t j = 0; j < kDigits * kRadix; ++j) hist[j] += part[b * kDigits * kRadix + j];
    std::vector<std::uint64_t> key2(n);
    std::vector<Idx> idx2(n);
    for (std::size_t d = 0; d < kDigits; ++d) {
        std::size_t* off = hist.data() + d * kRadix;
        bool trivial = false;
        std::size_t run = 0;
        for (std::size_t v = 0; v < kRadix; ++v) {
            trivial |= off[v] == n;
            const std::size_t cnt = off[v];
            off[v] = run;
            run += cnt;
        }
        if (trivial) continue;
        const int shift = static_cast<int>(8 * d);
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t pos = off[(key[i] >> shift) & 255]++;
            key2[pos] = key[i];
            idx2[pos] = idx[i];
        }
        key.swap(key2);
        idx.swap(idx2);
    }
}

struct Segment {
    double dcost, dquality;
    std::int64_t prompt;
    std::int32_t from, to;
};

}  // namespace detail

// The per-prompt hulls and their merge, in two steps so that a caller can allocate
// the outputs once the number of segments is known:
//   HullMerge merge;
//   merge.build(N, M, fill, base_cost, base_quality, base_option);  // hulls + sort
//   merge.write(prompt, dcost, dquality, option_from, option_to);   // merge.size() each
// fill(n, c, q, idx) writes prompt n's available options compactly (at most M:
// option idx[i] with finite cost c[i] and quality q[i], idx ascending) and returns
// their number; it may leave out options that can never be on the hull. Prompts with
// no available option get NaN base values, base option -1 and no segments.
// M <= 2^22 options per prompt (a block of 1024 prompts then holds < 2^32 segments).
class HullMerge {
   public:
    template <class Fill>
    void build(std::size_t N, std::size_t M, Fill&& fill, double* base_cost,
               double* base_quality, std::int64_t* base_option) {
        constexpr std::size_t kGrain = 1024;  // prompts per block
        const std::size_t n_blocks = (N + kGrain - 1) / kGrain;
        blocks_.assign(n_blocks, {});
        parallel_blocks(n_blocks, 1, [&](std::size_t b0, std::size_t b1) {
            std::vector<double> c(M), q(M);
            std::vector<std::int64_t> idx(M);
            std::vector<std::int32_t> hull(M);
            detail::HullWorkspace work(M);
            for (std::size_t b = b0; b < b1; ++b) {
                std::vector<detail::Segment>& blk = blocks_[b];
                blk.reserve(2 * kGrain);
                const std::size_t n1 = std::min(N, (b + 1) * kGrain);
                for (std::size_t n = b * kGrain; n < n1; ++n) {
                    const std::size_t m = fill(n, c.data(), q.data(), idx.data());
                    const std::size_t h = work.hull(c.data(), q.data(), m, hull.data());
                    if (h == 0) {
                        base_option[n] = -1;
                        base_cost[n] = NAN;
                        base_quality[n] = NAN;
                        continue;
                    }
                    base_option[n] = idx[hull[0]];
                    base_cost[n] = c[hull[0]];
                    base_quality[n] = q[hull[0]];
                    for (std::size_t i = 1; i < h; ++i) {
                        const std::int32_t a = hull[i - 1], z = hull[i];
                        blk.push_back({c[z] - c[a], q[z] - q[a], static_cast<std::int64_t>(n),
                                       static_cast<std::int32_t>(idx[a]),
                                       static_cast<std::int32_t>(idx[z])});
                    }
                }
            }
        });
        offset_.assign(n_blocks + 1, 0);
        for (std::size_t b = 0; b < n_blocks; ++b)
            offset_[b + 1] = offset_[b] + blocks_[b].size();
        sort_by_slope();
    }

    std::size_t size() const { return offset_.empty() ? 0 : offset_.back(); }

    // Writes the segments in merge order (slope descending, ties by prompt and
    // position along the prompt's hull); each output has size() entries.
    void write(std::int64_t* prompt, double* dcost, double* dquality,
               std::int64_t* option_from, std::int64_t* option_to) const {
        parallel_blocks(idx_.size(), kBlockRows * 16, [&](std::size_t s0, std::size_t s1) {
            constexpr std::size_t kAhead = 16;
            for (std::size_t s = s0; s < s1; ++s) {
                if (s + kAhead < s1) __builtin_prefetch(segment(idx_[s + kAhead]));
                const detail::Segment& seg = *segment(idx_[s]);
                prompt[s] = seg.prompt;
                dcost[s] = seg.dcost;
                dquality[s] = seg.dquality;
                option_from[s] = seg.from;
                option_to[s] = seg.to;
            }
        });
    }

   private:
    std::vector<std::vector<detail::Segment>> blocks_;
    std::vector<std::size_t> offset_;
    std::vector<std::uint64_t> idx_;  // sorted: (block << 32) | position in block

    const detail::Segment* segment(std::uint64_t id) const {
        return blocks_[id >> 32].data() + (id & 0xffffffffu);
    }

    // Keys in (prompt, position) order, payload (block, position): the stable sort
    // keeps that order among equal slopes.
    void sort_by_slope() {
        const std::size_t S = size();
        std::vector<std::uint64_t> key(S);
        idx_.resize(S);
        parallel_blocks(blocks_.size(), 1, [&](std::size_t b0, std::size_t b1) {
            for (std::size_t b = b0; b < b1; ++b) {
                const std::vector<detail::Segment>& blk = blocks_[b];
                for (std::size_t i = 0; i < blk.size(); ++i) {
                    const std::size_t g = offset_[b] + i;
                    key[g] = detail::slope_key(blk[i].dquality / blk[i].dcost);
                    idx_[g] = (static_cast<std::uint64_t>(b) << 32) | i;
                }
            }
        });
        detail::radix_sort_pairs(key, idx_);
    }
};

// Generic driver returning the segments as vectors (see HullMerge for `fill`).
template <class Fill>
HullSegments hull_segments(std::size_t N, std::size_t M, Fill&& fill) {
    HullSegments out;
    out.base_cost.resize(N);
    out.base_quality.resize(N);
    out.base_option.resize(N);
    HullMerge merge;
    merge.build(N, M, fill, out.base_cost.data(), out.base_quality.data(),
                out.base_option.data());
    const std::size_t S = merge.size();
    out.prompt.resize(S);
    out.dcost.resize(S);
    out.dquality.resize(S);
    out.option_from.resize(S);
    out.option_to.resize(S);
    merge.write(out.prompt.data(), out.dcost.data(), out.dquality.data(),
                out.option_from.data(), out.option_to.data());
    return out;
}

// fill for dense options: cost and quality shaped (N, M), row-major.
struct DenseFill {
    const double* cost;
    const double* quality;
    std::size_t M;
    std::size_t operator()(std::size_t n, double* c, double* q, std::int64_t* idx) const {
        std::size_t m = 0;
        for (std::size_t j = 0; j < M; ++j) {
            const double cj = cost[n * M + j], qj = quality[n * M + j];
            if (!detail::option_available(cj, qj)) continue;
            c[m] = cj;
            q[m] = qj;
            idx[m++] = static_cast<std::int64_t>(j);
        }
        return m;
    }
};

inline HullSegments hull_segments_dense(const double* cost, const double* quality,
                                        std::size_t N, std::size_t M) {
    return hull_segments(N, M, DenseFill{cost, quality, M});
}

// A strided (N, L) view (strides in elements; 0 broadcasts).
template <class T>
struct Strided2D {
    const T* data;
    std::ptrdiff_t s0, s1;
    T operator()(std::size_t n, std::size_t l) const {
        return data[static_cast<std::ptrdiff_t>(n) * s0 + static_cast<std::ptrdiff_t>(l) * s1];
    }
};

// fill for the prehoc options straight from the per-cell statistics (no (N, L) option
// arrays): cell (n, l) with g = n_draws[n, l] has quality qnum / g (divide_quality)
// or qnum, and cost cnum / g (divide_cost) or cnum, all in double (the same
// operations as NumPy's true division of the arrays); it is available when g > 0
// and both are finite. `negative_cost` is set when some cell's cost is < 0 (NaN
// compares false; available or not), which the caller reports as an error.
template <class TQ, class TG>
struct CellFill {
    Strided2D<TQ> qnum;
    Strided2D<TG> n_draws;
    Strided2D<double> cnum;
    bool divide_quality, divide_cost;
    std::size_t L;
    std::atomic<bool>* negative_cost;
    // Two passes over the row: the values (all divisions issue back to back), then
    // the compaction of the available ones (c, q, idx are scratch of size >= L).
    std::size_t operator()(std::size_t n, double* c, double* q, std::int64_t* idx) const {
        const auto row = static_cast<std::ptrdiff_t>(n);
        const TQ* qr = qnum.data + row * qnum.s0;
        const TG* gr = n_draws.data + row * n_draws.s0;
        const double* cr = cnum.data + row * cnum.s0;
        const std::ptrdiff_t qs = qnum.s1, gs = n_draws.s1, cs = cnum.s1;
        const auto LL = static_cast<std::ptrdiff_t>(L);
        if (divide_quality && divide_cost && qs == 1 && gs == 0 && cs == 1) {
            // one n_draws per row (a broadcast array): one fused pass
            const TG g = gr[0];
            const double gd = static_cast<double>(g);
            std::size_t m = 0;
            bool neg = false;
            for (std::ptrdiff_t l = 0; l < LL; ++l) {
                const double ql = static_cast<double>(qr[l]) / gd;
                const double cl = cr[l] / gd;
                neg |= cl < 0;
                if (std::isfinite(cl) && std::isfinite(ql)) {
                    c[m] = cl;
                    q[m] = ql;
                    idx[m++] = l;
                }
            }
            if (neg) negative_cost->store(true, std::memory_order_relaxed);
            return g > 0 ? m : 0;
        } else if (divide_quality && divide_cost && qs == 1 && gs == 1 && cs == 1) {
            for (std::ptrdiff_t l = 0; l < LL; ++l) {  // contiguous rows: vectorisable
                const double gd = static_cast<double>(gr[l]);
                q[l] = static_cast<double>(qr[l]) / gd;
                c[l] = cr[l] / gd;
                idx[l] = gr[l] > 0;
            }
        } else if (divide_quality && divide_cost) {
            for (std::ptrdiff_t l = 0; l < LL; ++l) {
                const TG g = gr[l * gs];
                const double gd = static_cast<double>(g);
                q[l] = static_cast<double>(qr[l * qs]) / gd;
                c[l] = cr[l * cs] / gd;
                idx[l] = g > 0;
            }
        } else {
            for (std::ptrdiff_t l = 0; l < LL; ++l) {
                const TG g = gr[l * gs];
                const double gd = static_cast<double>(g);
                const double qv = static_cast<double>(qr[l * qs]);
                const double cv = cr[l * cs];
                q[l] = divide_quality ? qv / gd : qv;
                c[l] = divide_cost ? cv / gd : cv;
                idx[l] = g > 0;
            }
        }
        std::size_t m = 0;
        bool neg = false;
        for (std::ptrdiff_t l = 0; l < LL; ++l) {
            const double cl = c[l], ql = q[l];
            neg |= cl < 0;
            if (idx[l] && std::isfinite(cl) && std::isfinite(ql)) {
                c[m] = cl;
                q[m] = ql;
                idx[m++] = l;
            }
        }
        if (neg) negative_cost->store(true, std::memory_order_relaxed);
        return m;
    }
};

// Posthoc options of binary data built on the fly (no (N, L*K) arrays): option
// j = l*K + (k-1) is "best of k draws of model l" with cost k * c[n,l] and
// quality the unbiased pass@k = 1 - C(G-S, k) / C(G, k): S/G for k = 1, then
// 1 - r_k with r_k = r_{k-1} * (G-S-k+1) / (G-k+1), r_1 = (G-S)/G (O(K) per cell).
// The cost of one generation c[n,l] is cell_cost[n,l], or cell_cost[n,l] / G[n,l]
// in double (divide_cost: cost sums, the same division as NumPy's). Unavailable
// when k > G[n,l] (so cells with G = 0 have no option) or the cost is not finite.
// Options past the first k with pass@k = 1 (k = G-S+1), and k > 1 when S = 0, are
// dominated by an option of the same model and are not generated. The counts are
// read as stored (compact uint8/uint16 included, any strides: a broadcast n_draws
// costs no memory) and widened to int64 as they are read, so the options do not
// depend on their dtype.
template <class TS, class TG>
struct PosthocFill {
    Strided2D<TS> successes;
    Strided2D<TG> n_draws;
    Strided2D<double> cell_cost;
    bool divide_cost;
    std::size_t L, K;
    std::size_t operator()(std::size_t n, double* c, double* q, std::int64_t* idx) const {
        const auto KK = static_cast<std::int64_t>(K);
        std::size_t m = 0;
        for (std::size_t l = 0; l < L; ++l) {
            const auto S = static_cast<std::int64_t>(successes(n, l));
            const auto G = static_cast<std::int64_t>(n_draws(n, l));
            if (G <= 0) continue;
            const double cc = divide_cost ? cell_cost(n, l) / static_cast<double>(G)
                                          : cell_cost(n, l);
            if (!std::isfinite(cc)) continue;
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
    }
};

inline HullSegments hull_segments_posthoc(const std::int64_t* successes,
                                          const std::int64_t* n_draws,
                                          const double* cell_cost, std::size_t N,
                                          std::size_t L, std::size_t K) {
    const auto LL = static_cast<std::ptrdiff_t>(L);
    return hull_segments(N, L * K,
                         PosthocFill<std::int64_t, std::int64_t>{{successes, LL, 1},
                                                                 {n_draws, LL, 1},
                                                                 {cell_cost, LL, 1},
                                                                 false,
                                                                 L,
                                                                 K});
}

// The frontier's vertices for prompt weights w (summing to 1): from (x0, y0) =
// (sum w * base_cost, sum w * base_quality) (the caller's sums), the running points
// x0 + cumsum(w[prompt] * dcost), y0 + cumsum(w[prompt] * dquality) over the segments
// with w[prompt] > 0 (sequential sums, as numpy.cumsum), keeping the first and last
// point and every point between two segments whose slopes dquality / dcost are not
// equal to a relative 1e-12 (numpy.isclose(a, b, rtol=1e-12, atol=0):
// |a - b| <= 0 + 1e-12 |b|; infinite slopes are close only when equal).
// Appends the kept points to x and y.
CAPFRONT_FRONTIER_NO_CONTRACT inline void frontier_vertices(
    double x0, double y0, const double* w, const std::int64_t* prompt, const double* dcost,
    const double* dquality, std::size_t S, std::vector<double>& x, std::vector<double>& y) {
    auto close = [](double a, double b) {
        if (std::isfinite(a) && std::isfinite(b)) return std::abs(a - b) <= 0.0 + 1e-12 * std::abs(b);
        return a == b;
    };
    x.push_back(x0);
    y.push_back(y0);
    double ax = 0.0, ay = 0.0;
    bool have_prev = false;
    double prev_slope = 0.0, px = 0.0, py = 0.0;  // the pending point after the previous segment
    for (std::size_t s = 0; s < S; ++s) {
        const double ws = w[prompt[s]];
        if (!(ws > 0)) continue;
        const double slope = dquality[s] / dcost[s];
        if (have_prev && !close(prev_slope, slope)) {
            x.push_back(px);
            y.push_back(py);
        }
        const double dx = ws * dcost[s];
        const double dy = ws * dquality[s];
        ax += dx;
        ay += dy;
        px = x0 + ax;
        py = y0 + ay;
        prev_slope = slope;
        have_prev = true;
    }
    if (have_prev) {
        x.push_back(px);
        y.push_back(py);
    }
}

}  // namespace capfront
