// Fused sufficient statistics of an (N, L, G) evaluation tensor.
//
// One pass over scores (and optional mask, cost, latency), writing per (n, l) cell:
//   successes = sum_g phi,  sum_sq = sum_g phi^2,  n_draws = #valid g,
//   max_score = max_g phi,  cost_sum = sum_g c,  latency_sum = sum_g t,
//   latency_max = max_g t.
// Also counts invalid values (NaN/inf, scores outside [0, 1], non-binary scores,
// negative or non-finite cost/latency) so the caller can name the problem.
// Complexity O(N L G); memory traffic one read of each input, O(N L) writes.
//
// Byte scores (uint8, bool) take a fast path per prompt row: the row's bytes are
// packed 8 at a time into a bitmap with one multiply (valid when every byte is 0 or
// 1, which the same pass checks by OR-ing the words), and each cell's count is the
// popcount of its G-bit window. That is a few integer ops per 8 bytes, so the pass
// runs at memory speed. A row with a byte > 1 falls back to the exact general loop
// (integer accumulators for byte types). Per-cell results never depend on the
// thread count: every cell is reduced by one thread in generation order.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "parallel.hpp"

namespace capfront {

struct SuffStatsOut {
    double* successes;      // (N, L)
    double* sum_sq;         // (N, L)
    std::int64_t* n_draws;  // (N, L)
    double* max_score;      // (N, L); NaN where n_draws == 0
    double* cost_sum;       // (N, L) or nullptr
    double* latency_sum;    // (N, L) or nullptr
    double* latency_max;    // (N, L) or nullptr
};

struct SuffStatsFlags {
    std::int64_t nonfinite_scores = 0;
    std::int64_t out_of_range_scores = 0;  // finite but outside [0, 1]
    std::int64_t nonbinary_scores = 0;     // finite and not exactly 0 or 1
    std::int64_t bad_cost = 0;             // NaN, inf or negative
    std::int64_t bad_latency = 0;
};

namespace detail {

#if (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) || \
    defined(_M_X64) || defined(_M_IX86) || defined(_M_ARM64)
constexpr bool kLittleEndian = true;
#else
constexpr bool kLittleEndian = false;  // the bit packing below assumes little endian
#endif

inline std::uint64_t load_u64(const std::uint8_t* p) {
    std::uint64_t w;
    std::memcpy(&w, p, sizeof w);
    return w;
}

// Portable SWAR popcount (no -mpopcnt needed).
inline std::int64_t popcount64(std::uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return static_cast<std::int64_t>((x * 0x0101010101010101ULL) >> 56);
}

// bit i of out = bit 0 of in[i], for i < n; returns the OR of all n bytes (so the
// caller can check that every byte was 0 or 1). out needs n / 8 + 1 bytes.
inline std::uint8_t pack_bits(const std::uint8_t* in, std::size_t n, std::uint8_t* out) {
    std::uint64_t any = 0;
    std::size_t i = 0, o = 0;
    for (; i + 8 <= n; i += 8, ++o) {
        const std::uint64_t w = load_u64(in + i);
        any |= w;
        // byte j (bit 8j) lands at bit 56 + j: the shifts 56 - 7j never collide.
        out[o] = static_cast<std::uint8_t>(
            ((w & 0x0101010101010101ULL) * 0x0102040810204080ULL) >> 56);
    }
    if (i < n) {
        std::uint8_t b = 0;
        for (std::size_t j = 0; i + j < n; ++j) {
            any |= in[i + j];
            b = static_cast<std::uint8_t>(b | ((in[i + j] & 1u) << j));
        }
        out[o] = b;
    }
    any |= any >> 32;
    any |= any >> 16;
    any |= any >> 8;
    return static_cast<std::uint8_t>(any & 0xFF);
}

// Number of set bits in [a, a + len) of a bitmap with >= 8 readable bytes past
// the last bit.
inline std::int64_t count_bits(const std::uint8_t* bits, std::size_t a, std::size_t len) {
    std::int64_t s = 0;
    while (len > 0) {
        const std::size_t take = len < 56 ? len : 56;
        const std::uint64_t w = load_u64(bits + (a >> 3)) >> (a & 7);
        s += popcount64(w & ((std::uint64_t{1} << take) - 1));
        a += take;
        len -= take;
    }
    return s;
}

template <class T>
constexpr bool is_byte_score =
    std::is_same<T, std::uint8_t>::value || std::is_same<T, bool>::value;

// Fast path for one row of byte scores. Returns false (nothing written) when a
// byte is > 1, so the caller runs the general loop on the row.
template <class T>
bool binary_row(const T* scores, const std::uint8_t* mask, std::size_t L, std::size_t G,
                std::size_t cell0, std::vector<std::uint8_t>& sbits,
                std::vector<std::uint8_t>& mbits, const SuffStatsOut& out) {
    const std::size_t n = L * G;
    const std::size_t nbytes = n / 8 + 1 + 8;  // + 8: count_bits reads 8 bytes
    if (sbits.size() < nbytes) sbits.assign(nbytes, 0);
    if (pack_bits(reinterpret_cast<const std::uint8_t*>(scores), n, sbits.data()) > 1)
        return false;
    if (mask) {
        if (mbits.size() < nbytes) mbits.assign(nbytes, 0);
        if (pack_bits(mask, n, mbits.data()) > 1) return false;
        for (std::size_t i = 0; i < n / 8 + 1; ++i) sbits[i] &= mbits[i];
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t l = 0; l < L; ++l) {
        const std::size_t cell = cell0 + l;
        const std::int64_t s = count_bits(sbits.data(), l * G, G);
        const std::int64_t cnt =
            mask ? count_bits(mbits.data(), l * G, G) : static_cast<std::int64_t>(G);
        const double sd = static_cast<double>(s);
        out.successes[cell] = sd;
        out.sum_sq[cell] = sd;
        out.n_draws[cell] = cnt;
        out.max_score[cell] = cnt ? (s > 0 ? 1.0 : 0.0) : nan;
    }
    return true;
}

// General loop over one row's scores.
template <class T>
void general_row(const T* scores, const std::uint8_t* mask, std::size_t L, std::size_t G,
                 std::size_t cell0, SuffStatsFlags& f, const SuffStatsOut& out) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t l = 0; l < L; ++l) {
        const T* x = scores + l * G;
        const std::uint8_t* m = mask ? mask + l * G : nullptr;
        const std::size_t cell = cell0 + l;
        std::int64_t cnt = 0;
        if constexpr (is_byte_score<T>) {
            // Exact integer sums; a byte is never NaN and never < 0.
            std::int64_t s = 0, s2 = 0, big = 0;
            int mx = -1;
            for (std::size_t g = 0; g < G; ++g) {
                if (m && !m[g]) continue;
                const int v = static_cast<int>(x[g]);
                ++cnt;
                s += v;
                s2 += v * v;
                big += v > 1;
                mx = v > mx ? v : mx;
            }
            f.out_of_range_scores += big;
            f.nonbinary_scores += big;
            out.successes[cell] = static_cast<double>(s);
            out.sum_sq[cell] = static_cast<double>(s2);
            out.max_score[cell] = cnt ? static_cast<double>(mx) : nan;
        } else {
            double s = 0.0, s2 = 0.0, mx = -std::numeric_limits<double>::infinity();
            for (std::size_t g = 0; g < G; ++g) {
                if (m && !m[g]) continue;
                const double v = static_cast<double>(x[g]);
                ++cnt;
                if (!std::isfinite(v)) {
                    ++f.nonfinite_scores;
                } else {
                    f.out_of_range_scores += (v < 0.0) | (v > 1.0);
                    f.nonbinary_scores += (v != 0.0) & (v != 1.0);
                }
                s += v;
                s2 += v * v;
                mx = v > mx ? v : mx;
            }
            out.successes[cell] = s;
            out.sum_sq[cell] = s2;
            out.max_score[cell] = cnt ? mx : nan;
        }
        out.n_draws[cell] = cnt;
    }
}

// Sum (and optionally max) of one row's per-draw cost or latency.
inline void value_row(const double* v, const std::uint8_t* mask, std::size_t L,
                      std::size_t G, std::size_t cell0, std::int64_t& bad, double* sum,
                      double* vmax) {
    for (std::size_t l = 0; l < L; ++l) {
        const double* x = v + l * G;
        const std::uint8_t* m = mask ? mask + l * G : nullptr;
        double s = 0.0, mx = 0.0;
        for (std::size_t g = 0; g < G; ++g) {
            if (m && !m[g]) continue;
            const double t = x[g];
            bad += !(t >= 0.0) || !std::isfinite(t);
            s += t;
            mx = t > mx ? t : mx;
        }
        sum[cell0 + l] = s;
        if (vmax) vmax[cell0 + l] = mx;
    }
}

}  // namespace detail

template <class T>
SuffStatsFlags sufficient_stats(const T* scores, const std::uint8_t* mask,
                                const double* cost, const double* latency,
                                std::size_t N, std::size_t L, std::size_t G,
                                const SuffStatsOut& out) {
    const std::size_t n_blocks = (N + kBlockRows - 1) / kBlockRows;
    std::vector<SuffStatsFlags> block_flags(n_blocks);
    const std::size_t row = L * G;
    parallel_blocks(N, kBlockRows, [&](std::size_t n0, std::size_t n1) {
        SuffStatsFlags f;
        std::vector<std::uint8_t> sbits, mbits;
        for (std::size_t n = n0; n < n1; ++n) {
            const T* x = scores + n * row;
            const std::uint8_t* m = mask ? mask + n * row : nullptr;
            bool done = false;
            if constexpr (detail::is_byte_score<T> && detail::kLittleEndian) {
                if (G > 0) done = detail::binary_row(x, m, L, G, n * L, sbits, mbits, out);
            }
            if (!done) detail::general_row(x, m, L, G, n * L, f, out);
            if (cost)
                detail::value_row(cost + n * row, m, L, G, n * L, f.bad_cost,
                                  out.cost_sum, nullptr);
            if (latency)
                detail::value_row(latency + n * row, m, L, G, n * L, f.bad_latency,
                                  out.latency_sum, out.latency_max);
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
