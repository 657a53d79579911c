// Streaming bootstrap over prompts for mean-decomposable statistics (design §7).
//
// A statistic is decomposed into per-prompt columns V[n, k] and a finalize step on
// the weighted column means. Python encodes every column as integers,
// V[n, k] = scale_k * Z[k, n], either as int8 codes (p_hat = S / G takes only
// G + 1 values; G <= 127) or as int64 fixed point with N * max|Z| < 2^53. A replicate's
// weighted sums sum_n c_n Z[k, n] (c_n = multinomial draw counts) are then exact
// integers: the result is the same for any thread count, any summation order
// and any backend (C++, Numba, NumPy).
//
// Resampling (stream 0 of python/capfront/resampling/engine.py's layout): replicate b
// uses words w = 0..N-1 of Philox stream (seed, b, 0). Prompts are listed by
// stratum (order, offsets); slot w of stratum s (offsets[s] <= w < offsets[s+1],
// size n_s) draws order[offsets[s] + floor(u_w * n_s / 2^32)], so each stratum
// keeps its size exactly. (The multiply-shift map has a relative bias below
// n_s / 2^32 per prompt, 1e-4 at n_s = 400,000; no rejection keeps the stream
// layout fixed.)
//
// Cost per replicate: N Philox words (about 1 ns each with AVX2), N random
// increments into an N-byte count array (L2 resident), and N * K multiply-adds
// of uint8 (or int64) by the counts. Replicates are processed in groups of
// kGroupReplicates so one pass over a tile of Z (kTilePrompts prompts, in L2)
// serves the whole group: memory traffic per replicate is N bytes of counts plus
// N * K / kGroupReplicates bytes of Z. Extra memory: kGroupReplicates * N bytes
// of counts (at most about 8 MB) and 4 N bytes of words per thread.
//
// Two-level (binary, equal G): after the prompt draw, slot w's cell l gets
// S* = #{k < G : u >= T[S][k]} with u word w * L + l of stream (seed, b, 1) and
// T[s][k] = floor(2^32 F(k; G, s / G)) (thresholds computed once in Python), i.e.
// inversion of the Bin(G, p_hat) CDF. Columns: max_l S*_l and/or each S*_l.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "parallel.hpp"
#include "philox.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CAPFRONT_BOOTSTRAP_X86 1
#include <immintrin.h>
#endif
#if defined(__GNUC__) || defined(__clang__)
#define CAPFRONT_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define CAPFRONT_ALWAYS_INLINE inline
#endif

namespace capfront {

constexpr std::size_t kGroupReplicates = 16;
constexpr std::size_t kTilePrompts = 4096;  // keeps a uint32 tile dot below 2^32

// Prompts listed by stratum ("stratum order"): positions offsets[s] ..
// offsets[s+1] - 1 are stratum s. The kernels work in stratum order (counts and
// the rows of Z are permuted by the caller), which removes an indirection from
// the random increments; sums are permutation invariant.
struct Strata {
    const std::int64_t* offsets;
    std::size_t n_strata;
    std::size_t n;
};

// Draw counts of replicate rep (stream 0), in stratum order. words needs n + 4
// entries.
inline void resample_counts(const Strata& st, std::uint64_t seed, std::uint32_t rep,
                            std::uint32_t* words, std::uint8_t* counts) {
    philox_stream_words(seed, rep, 0, 0, st.n, words);
    std::memset(counts, 0, st.n);
    for (std::size_t s = 0; s < st.n_strata; ++s) {
        const std::int64_t lo = st.offsets[s], hi = st.offsets[s + 1];
        const std::uint64_t size = static_cast<std::uint64_t>(hi - lo);
        std::uint8_t* members = counts + lo;
        for (std::int64_t w = lo; w < hi; ++w) {
            const std::uint64_t pos = (static_cast<std::uint64_t>(words[w]) * size) >> 32;
            ++members[pos];
        }
    }
    // A uint8 count wraps only if a prompt is drawn 256 times (probability
    // < 1/256! per prompt); a wrap shows as a deficit in the total.
    std::size_t total = 0;
    for (std::size_t i = 0; i < st.n; ++i) total += counts[i];
    if (total != st.n) throw std::overflow_error("bootstrap: a prompt was drawn over 255 times");
}

namespace bootstrap_detail {

// acc[r] += sum_{i < len} counts[r][i] * z[i] for 4 replicates (rows of counts
// with stride `stride`). uint8 counts times int8 codes is the vpdpbusd (VNNI)
// pattern; len <= kTilePrompts keeps the int32 sums exact (|sum| < 2^23).
CAPFRONT_ALWAYS_INLINE void dot4_u8(const std::uint8_t* counts, std::size_t stride,
                                    const std::int8_t* z, std::size_t len,
                                    std::int64_t* acc) {
    const std::uint8_t* c0 = counts;
    const std::uint8_t* c1 = counts + stride;
    const std::uint8_t* c2 = counts + 2 * stride;
    const std::uint8_t* c3 = counts + 3 * stride;
    std::int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (std::size_t i = 0; i < len; ++i) {
        const std::int32_t zi = z[i];
        s0 += static_cast<std::int32_t>(c0[i]) * zi;
        s1 += static_cast<std::int32_t>(c1[i]) * zi;
        s2 += static_cast<std::int32_t>(c2[i]) * zi;
        s3 += static_cast<std::int32_t>(c3[i]) * zi;
    }
    acc[0] += s0;
    acc[1] += s1;
    acc[2] += s2;
    acc[3] += s3;
}

CAPFRONT_ALWAYS_INLINE void dot1_u8(const std::uint8_t* c, const std::int8_t* z,
                                    std::size_t len, std::int64_t* acc) {
    std::int32_t s = 0;
    for (std::size_t i = 0; i < len; ++i)
        s += static_cast<std::int32_t>(c[i]) * static_cast<std::int32_t>(z[i]);
    *acc += s;
}

CAPFRONT_ALWAYS_INLINE void dot1_i64(const std::uint8_t* c, const std::int64_t* z,
                                     std::size_t len, std::int64_t* acc) {
    std::int64_t s = 0;
    for (std::size_t i = 0; i < len; ++i) s += static_cast<std::int64_t>(c[i]) * z[i];
    *acc += s;
}

// out[r * K + k] += sum_n counts[r][n] Z[k][n] for R <= kGroupReplicates
// replicates, tile by tile so a tile of Z (K x kTilePrompts) stays in L2 while
// the whole group passes over it.
CAPFRONT_ALWAYS_INLINE void accumulate_group_body(const std::uint8_t* counts, std::size_t R,
                                                  std::size_t n, const std::int8_t* z8,
                                                  std::size_t K8, const std::int64_t* z64,
                                                  std::size_t K64, std::int64_t* out) {
    const std::size_t K = K8 + K64;
    std::int64_t acc4[4];
    for (std::size_t t0 = 0; t0 < n; t0 += kTilePrompts) {
        const std::size_t len = std::min(kTilePrompts, n - t0);
        for (std::size_t k = 0; k < K8; ++k) {
            const std::int8_t* z = z8 + k * n + t0;
            std::size_t r = 0;
            for (; r + 4 <= R; r += 4) {
                acc4[0] = acc4[1] = acc4[2] = acc4[3] = 0;
                dot4_u8(counts + r * n + t0, n, z, len, acc4);
                for (std::size_t q = 0; q < 4; ++q) out[(r + q) * K + k] += acc4[q];
            }
            for (; r < R; ++r) dot1_u8(counts + r * n + t0, z, len, out + r * K + k);
        }
        for (std::size_t k = 0; k < K64; ++k) {
            const std::int64_t* z = z64 + k * n + t0;
            for (std::size_t r = 0; r < R; ++r)
                dot1_i64(counts + r * n + t0, z, len, out + r * K + K8 + k);
        }
    }
}

using AccumulateFn = void (*)(const std::uint8_t*, std::size_t, std::size_t,
                              const std::int8_t*, std::size_t, const std::int64_t*,
                              std::size_t, std::int64_t*);

inline void accumulate_group_default(const std::uint8_t* counts, std::size_t R,
                                     std::size_t n, const std::int8_t* z8, std::size_t K8,
                                     const std::int64_t* z64, std::size_t K64,
                                     std::int64_t* out) {
    accumulate_group_body(counts, R, n, z8, K8, z64, K64, out);
}

#ifdef CAPFRONT_BOOTSTRAP_X86
// The same body compiled for wider vectors, chosen at run time (the build
// targets baseline x86-64).
__attribute__((target("avx2"))) inline void accumulate_group_avx2(
    const std::uint8_t* counts, std::size_t R, std::size_t n, const std::int8_t* z8,
    std::size_t K8, const std::int64_t* z64, std::size_t K64, std::int64_t* out) {
    accumulate_group_body(counts, R, n, z8, K8, z64, K64, out);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2"))) inline void
accumulate_group_avx512vnni(const std::uint8_t* counts, std::size_t R, std::size_t n,
                        const std::int8_t* z8, std::size_t K8, const std::int64_t* z64,
                        std::size_t K64, std::int64_t* out) {
    accumulate_group_body(counts, R, n, z8, K8, z64, K64, out);
}
#endif

inline AccumulateFn accumulate_group() {
#ifdef CAPFRONT_BOOTSTRAP_X86
    static const AccumulateFn fn =
        __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw")
            ? &accumulate_group_avx512vnni
        : __builtin_cpu_supports("avx2") ? &accumulate_group_avx2
                                         : &accumulate_group_default;
    return fn;
#else
    return &accumulate_group_default;
#endif
}

}  // namespace bootstrap_detail

// sums[(b - b0) * K + k] = sum_n c_bn Z[k, n] for replicates b = b0 .. b0 + nb - 1,
// K = K8 + K64: first the int8 rows z8 (K8 x n), then the int64 rows z64
// (K64 x n), both in stratum order. Exact integer arithmetic; parallel over
// groups of replicates.
inline void bootstrap_sums(const Strata& st, std::uint64_t seed, std::uint64_t b0,
                           std::size_t nb, const std::int8_t* z8, std::size_t K8,
                           const std::int64_t* z64, std::size_t K64, std::int64_t* sums) {
    const std::size_t n = st.n, K = K8 + K64;
    // Smaller groups for huge n keep the per-thread counts under ~8 MB (the sums
    // are exact, so the grouping does not change them).
    const std::size_t group = std::max<std::size_t>(
        1, std::min(kGroupReplicates, (std::size_t{8} << 20) / std::max<std::size_t>(n, 1)));
    const std::size_t n_groups = (nb + group - 1) / group;
    const bootstrap_detail::AccumulateFn accumulate = bootstrap_detail::accumulate_group();
    parallel_blocks(n_groups, 1, [&](std::size_t g0, std::size_t g1) {
        std::vector<std::uint32_t> words(n + 4);
        std::vector<std::uint8_t> counts(group * n);
        for (std::size_t g = g0; g < g1; ++g) {
            const std::size_t r0 = g * group;
            const std::size_t R = std::min(group, nb - r0);
            for (std::size_t r = 0; r < R; ++r)
                resample_counts(st, seed, static_cast<std::uint32_t>(b0 + r0 + r),
                                words.data(), counts.data() + r * n);
            std::int64_t* out = sums + r0 * K;
            std::fill(out, out + R * K, 0);
            accumulate(counts.data(), R, n, z8, K8, z64, K64, out);
        }
    });
}

// The draw counts themselves (nb x n, uint8), for keep_counts / tests.
inline void bootstrap_counts(const Strata& st, std::uint64_t seed, std::uint64_t b0,
                             std::size_t nb, std::uint8_t* counts) {
    parallel_blocks(nb, 1, [&](std::size_t r0, std::size_t r1) {
        std::vector<std::uint32_t> words(st.n + 4);
        for (std::size_t r = r0; r < r1; ++r)
            resample_counts(st, seed, static_cast<std::uint32_t>(b0 + r), words.data(),
                            counts + r * st.n);
    });
}

// Two-level replicates for binary data with G draws in every cell.
// successes: n x L uint8 (row-major, rows in stratum order); thresholds: (G + 1) x G uint64,
// thresholds[s * G + k] = floor(2^32 F(k; G, s / G)) (2^32 when F = 1).
// Output columns per replicate: [max_l S*] if with_max, then [S*_l, l < L] if
// with_cells: sums of those integers over the n slots.
inline void bootstrap_two_level_sums(const Strata& st, std::uint64_t seed, std::uint64_t b0,
                                     std::size_t nb, const std::uint8_t* successes,
                                     std::size_t L, std::size_t G,
                                     const std::uint64_t* thresholds, bool with_max,
                                     bool with_cells, std::int64_t* sums) {
    const std::size_t n = st.n;
    const std::size_t K = (with_max ? 1 : 0) + (with_cells ? L : 0);
    // guide[s * 256 + h] = #{k : T[s][k] <= h 2^24}, a start for the inversion.
    std::vector<std::uint8_t> guide((G + 1) * 256);
    for (std::size_t s = 0; s <= G; ++s)
        for (std::size_t h = 0; h < 256; ++h) {
            const std::uint64_t* T = thresholds + s * G;
            guide[s * 256 + h] = static_cast<std::uint8_t>(
                std::upper_bound(T, T + G, static_cast<std::uint64_t>(h) << 24) - T);
        }
    parallel_blocks(nb, 1, [&](std::size_t r0, std::size_t r1) {
        std::vector<std::uint32_t> words(n + 4);
        std::vector<std::uint32_t> cell_words;
        std::vector<std::int64_t> prompt_of_slot(n);
        constexpr std::size_t kSlotChunk = 1024;
        cell_words.resize(kSlotChunk * L + 4);
        for (std::size_t r = r0; r < r1; ++r) {
            const std::uint32_t rep = static_cast<std::uint32_t>(b0 + r);
            philox_stream_words(seed, rep, 0, 0, n, words.data());
            for (std::size_t s = 0; s < st.n_strata; ++s) {
                const std::int64_t lo = st.offsets[s], hi = st.offsets[s + 1];
                const std::uint64_t size = static_cast<std::uint64_t>(hi - lo);
                for (std::int64_t w = lo; w < hi; ++w)
                    prompt_of_slot[w] =
                        lo + static_cast<std::int64_t>(
                                 (static_cast<std::uint64_t>(words[w]) * size) >> 32);
            }
            std::int64_t* out = sums + r * K;
            std::fill(out, out + K, 0);
            for (std::size_t w0 = 0; w0 < n; w0 += kSlotChunk) {
                const std::size_t len = std::min(kSlotChunk, n - w0);
                // w0 * L is a multiple of 4 because kSlotChunk is.
                philox_stream_words(seed, rep, 1, static_cast<std::uint64_t>(w0) * L,
                                    len * L, cell_words.data());
                for (std::size_t i = 0; i < len; ++i) {
                    const std::uint8_t* S = successes + prompt_of_slot[w0 + i] * L;
                    const std::uint32_t* u = cell_words.data() + i * L;
                    std::int64_t best = 0;
                    for (std::size_t l = 0; l < L; ++l) {
                        // #{k : u >= T[k]} (T non-decreasing): start from the
                        // count below u's top byte, then scan the few left.
                        const std::uint64_t* T = thresholds + S[l] * G;
                        std::size_t k = guide[S[l] * 256 + (u[l] >> 24)];
                        while (k < G && T[k] <= u[l]) ++k;
                        best = std::max<std::int64_t>(best, static_cast<std::int64_t>(k));
                        if (with_cells) out[(with_max ? 1 : 0) + l] += static_cast<std::int64_t>(k);
                    }
                    if (with_max) out[0] += best;
                }
            }
        }
    });
}

// ---------------------------------------------------------------------------
// One int8 column: class counts instead of prompt counts.
//
// The sum of a single coded column over a resample depends only on how many
// draws land in each value class (p_hat = S / G has G + 1 classes), and those
// counts are multinomial. They are drawn as conditional binomials, class by
// class within each stratum: M_c ~ Bin(draws left, n_c / prompts left). Cost per
// replicate: O(classes) expected (the binomial sampler below takes O(1) expected
// time), instead of O(N).
//
// Binomial sampler Bin(n, a / b) (identical in C++, Numba and NumPy): with
// p = min(a, b - a) / b (by symmetry, n - X for the larger side),
// - n p < kBtrdMin: exact inversion. Weights w_k relative to the mode
//   m = floor((n + 1) a / b) by the ratio recursion w_{k+1} = w_k ((n - k) odds) /
//   (k + 1) upward and w_{k-1} = w_k k / ((n - k + 1) odds) downward (odds = a /
//   (b - a)), each side stopping before the first weight below kBinomialCut; then
//   the smallest k with W_k > U W_total on the running sums W (U a 53-bit uniform).
//   O(sqrt(n p q)) = O(1) operations here;
// - n p >= kBtrdMin: Hormann's BTRD (transformed rejection with decomposition,
//   "The generation of binomial random variates", J. Statist. Comput. Simul. 46,
//   1993), exact, about 1.1-1.2 attempts per draw (measured at n p = 300 and 20,000).
//   Each attempt uses two open uniforms; the final test evaluates log f(k) / f(m)
//   from Stirling's series with the tail correction fc.
// Only +, -, *, /, sqrt, floor and log (the C library's, the one Python's math.log
// and Numba call) in a fixed order, without fused multiply-adds, so every backend
// gives the same integer.
//
// Word schedule: attempt t of binomial j of replicate b uses the Philox block with
// counter (j, b, 2, t), i.e. words 4 (j + t 2^32) .. +3 of stream (seed, b, 2); the
// first attempts of all binomials are words 0 .. 4 J - 1 of that stream. The
// inversion uses words 0, 1 of the first block; BTRD attempt t uses words 0, 1 then
// 2, 3 of its block as the open uniforms V and U.

constexpr double kBinomialCut = 1e-17;
constexpr double kBtrdMin = 10.0;  // BTRD's constants hold for n p >= 10

#if defined(__GNUC__) && !defined(__clang__)
#define CAPFRONT_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define CAPFRONT_NO_CONTRACT
#endif

// U in [0, 1) from two words: (w0 >> 5) 2^26 + (w1 >> 6), over 2^53.
inline double uniform53(std::uint32_t w0, std::uint32_t w1) {
    return (static_cast<double>(w0 >> 5) * 67108864.0 + static_cast<double>(w1 >> 6)) *
           (1.0 / 9007199254740992.0);
}

// U in (0, 1) from two words: ((w0 >> 6) 2^26 + (w1 >> 6) + 1/2) / 2^52 (exact).
inline double uniform_open(std::uint32_t w0, std::uint32_t w1) {
    return (static_cast<double>(w0 >> 6) * 67108864.0 + static_cast<double>(w1 >> 6) + 0.5) *
           (1.0 / 4503599627370496.0);
}

// Bin(n, a / b) for 0 <= a <= b, b >= 1, by inversion on the ratio recursion.
CAPFRONT_NO_CONTRACT inline std::int64_t binomial_ratio(std::int64_t n, std::int64_t a,
                                                        std::int64_t b, double u,
                                                        std::vector<double>& w) {
    if (n == 0 || a == 0) return 0;
    if (a == b) return n;
    const std::int64_t m = static_cast<std::int64_t>(
        (static_cast<unsigned __int128>(n + 1) * static_cast<std::uint64_t>(a)) /
        static_cast<std::uint64_t>(b));
    const std::int64_t mode = std::min(m, n);
    const double odds = static_cast<double>(a) / static_cast<double>(b - a);
    // downward weights (stored from the mode outwards), then upward
    w.clear();
    double x = 1.0;
    std::int64_t lo = mode;
    for (std::int64_t k = mode; k > 0; --k) {
        const double next =
            x * (static_cast<double>(k) / (static_cast<double>(n - k + 1) * odds));
        if (next < kBinomialCut) break;
        x = next;
        w.push_back(x);
        lo = k - 1;
    }
    std::reverse(w.begin(), w.end());
    w.push_back(1.0);
    x = 1.0;
    for (std::int64_t k = mode; k < n; ++k) {
        const double next =
            x * ((static_cast<double>(n - k) * odds) / static_cast<double>(k + 1));
        if (next < kBinomialCut) break;
        x = next;
        w.push_back(x);
    }
    double total = 0.0;
    for (double& v : w) {
        total += v;
        v = total;
    }
    const double t = u * total;
    std::size_t k = 0;
    while (k + 1 < w.size() && w[k] <= t) ++k;
    return lo + static_cast<std::int64_t>(k);
}

// fc(k) = log k! - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2]: tabulated below
// 10, else the first three terms of its Stirling series.
inline double stirling_tail(std::int64_t k) {
    static constexpr double table[10] = {
        0.08106146679532726,  0.0413406959554093,   0.02767792568499834,
        0.020790672103765093, 0.016644691189821193, 0.013876128823070748,
        0.01189670994589177,  0.010411265261972096, 0.009255462182712733,
        0.00833056343336287};
    if (k < 10) return table[k];
    const double kp = static_cast<double>(k) + 1.0;
    const double kp2 = kp * kp;
    return (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / 1260.0 / kp2) / kp2) / kp;
}

// BTRD's constants for Bin(n, p), p <= 1/2, n p >= kBtrdMin.
struct Btrd {
    double n, p, r, nr, npq, b, a, c, alpha, vr, urvr, m;
    CAPFRONT_NO_CONTRACT Btrd(std::int64_t n_, double p_) : n(static_cast<double>(n_)), p(p_) {
        const double q = 1.0 - p;
        r = p / q;
        nr = (n + 1.0) * r;
        npq = n * p * q;
        const double spq = std::sqrt(npq);
        b = 1.15 + 2.53 * spq;
        a = -0.0873 + 0.0248 * b + 0.01 * p;
        c = n * p + 0.5;
        alpha = (2.83 + 5.1 / b) * spq;
        vr = 0.92 - 4.2 / b;
        urvr = 0.86 * vr;
        m = std::floor((n + 1.0) * p);
    }

    // One attempt with the open uniforms v (first) and u01 (second, used only past
    // the quick acceptance): the draw, or -1 to try again.
    CAPFRONT_NO_CONTRACT std::int64_t attempt(double v, double u01) const {
        double u;
        if (v <= urvr) {  // quick acceptance: the inner box of the hat
            u = v / vr - 0.43;
            const double x = (2.0 * a / (0.5 - std::fabs(u)) + b) * u + c;
            if (!(x >= 0.0 && x < n + 1.0)) return -1;
            return static_cast<std::int64_t>(std::floor(x));
        }
        if (v >= vr) {
            u = u01 - 0.5;
        } else {
            u = v / vr - 0.93;
            u = (u < 0.0 ? -0.5 : 0.5) - u;
            v = u01 * vr;
        }
        const double us = 0.5 - std::fabs(u);
        if (!(us > 0.0)) return -1;
        const double x = (2.0 * a / us + b) * u + c;
        if (!(x >= 0.0 && x < n + 1.0)) return -1;
        const double k = std::floor(x);
        v = v * alpha / (a / (us * us) + b);
        const double km = std::fabs(k - m);
        if (km <= 15.0) {  // f(k) / f(m) by the ratio recursion
            double f = 1.0;
            if (m < k) {
                for (double i = m + 1.0; i <= k; i = i + 1.0) f = f * (nr / i - r);
            } else if (m > k) {
                for (double i = k + 1.0; i <= m; i = i + 1.0) v = v * (nr / i - r);
            }
            return v <= f ? static_cast<std::int64_t>(k) : -1;
        }
        v = std::log(v);  // squeeze around the normal approximation of log f(k) / f(m)
        const double rho = (km / npq) * (((km / 3.0 + 0.625) * km + 1.0 / 6.0) / npq + 0.5);
        const double t = -(km * km) / (2.0 * npq);
        if (v < t - rho) return static_cast<std::int64_t>(k);
        if (v > t + rho) return -1;
        const double nm = n - m + 1.0;
        const double h = (m + 0.5) * std::log((m + 1.0) / (r * nm)) +
                         stirling_tail(static_cast<std::int64_t>(m)) +
                         stirling_tail(static_cast<std::int64_t>(n - m));
        const double nk = n - k + 1.0;
        const double bound = h + (n + 1.0) * std::log(nm / nk) +
                             (k + 0.5) * std::log(nk * r / (k + 1.0)) -
                             stirling_tail(static_cast<std::int64_t>(k)) -
                             stirling_tail(static_cast<std::int64_t>(n - k));
        return v <= bound ? static_cast<std::int64_t>(k) : -1;
    }
};

// Binomial j of replicate rep: Bin(n, a / b) from the word schedule above; first
// holds the 4 words of its first attempt.
CAPFRONT_NO_CONTRACT inline std::int64_t binomial_draw(std::int64_t n, std::int64_t a,
                                                       std::int64_t b, PhiloxKey key,
                                                       std::uint32_t rep, std::uint32_t j,
                                                       const std::uint32_t* first,
                                                       std::vector<double>& w) {
    if (n == 0 || a == 0) return 0;
    if (a == b) return n;
    const bool flip = 2 * a > b;
    const double p = static_cast<double>(flip ? b - a : a) / static_cast<double>(b);
    if (static_cast<double>(n) * p < kBtrdMin)
        return binomial_ratio(n, a, b, uniform53(first[0], first[1]), w);
    const Btrd btrd(n, p);
    PhiloxCounter block = {first[0], first[1], first[2], first[3]};
    for (std::uint32_t t = 1;; ++t) {
        const std::int64_t k =
            btrd.attempt(uniform_open(block[0], block[1]), uniform_open(block[2], block[3]));
        if (k >= 0) return flip ? n - k : k;
        block = philox4x32_10({j, rep, 2, t}, key);
    }
}

// Class tables: stratum s owns classes class_offsets[s] .. class_offsets[s+1]-1
// (non-empty, in a fixed order), with class_size prompts each. Replicate b0 + r draws
// the multinomial class counts of each stratum as conditional binomials,
// M_c ~ Bin(draws left, class_size[c] / prompts left), numbered j = 0, 1, ... over
// the strata (the last class of a stratum takes the draws left, without a
// binomial); sink(r, c, M_c) receives every count.
template <class Sink>
inline void bootstrap_class_draws(const std::int64_t* class_offsets, std::size_t n_strata,
                                  const std::int64_t* class_size, std::uint64_t seed,
                                  std::uint64_t b0, std::size_t nb, Sink&& sink) {
    const std::size_t n_classes = static_cast<std::size_t>(class_offsets[n_strata]);
    const std::size_t n_binomials = n_classes - n_strata;
    const std::size_t stride = 4 * n_binomials;  // words of one replicate
    const PhiloxKey key = philox_key(seed);
    // A replicate's binomials form one dependent chain (each takes the draws the
    // previous left), latency-bound; kLanes replicates advance class by class side
    // by side so the core overlaps their independent chains. Blocks of 64
    // replicates share their scratch. Each replicate's draws depend only on its
    // own words: neither the lanes nor the blocks change them.
    constexpr std::size_t kLanes = 4;
    parallel_blocks(nb, 64, [&](std::size_t r0, std::size_t r1) {
        std::vector<std::uint32_t> words(kLanes * stride + 4);
        std::vector<double> w;
        w.reserve(1024);
        for (std::size_t g0 = r0; g0 < r1; g0 += kLanes) {
            const std::size_t R = std::min(kLanes, r1 - g0);
            std::uint32_t rep[kLanes];
            for (std::size_t q = 0; q < R; ++q) {
                rep[q] = static_cast<std::uint32_t>(b0 + g0 + q);
                philox_stream_words(seed, rep[q], 2, 0, stride, words.data() + q * stride);
            }
            std::size_t j = 0;  // binomial index
            for (std::size_t s = 0; s < n_strata; ++s) {
                const std::int64_t c0 = class_offsets[s], c1 = class_offsets[s + 1];
                std::int64_t pop = 0;
                for (std::int64_t c = c0; c < c1; ++c) pop += class_size[c];
                std::int64_t left[kLanes];
                for (std::size_t q = 0; q < R; ++q) left[q] = pop;
                for (std::int64_t c = c0; c + 1 < c1; ++c) {
                    for (std::size_t q = 0; q < R; ++q) {
                        const std::int64_t m = binomial_draw(
                            left[q], class_size[c], pop, key, rep[q],
                            static_cast<std::uint32_t>(j), words.data() + q * stride + 4 * j, w);
                        sink(g0 + q, static_cast<std::size_t>(c), m);
                        left[q] -= m;
                    }
                    ++j;
                    pop -= class_size[c];
                }
                for (std::size_t q = 0; q < R; ++q)
                    sink(g0 + q, static_cast<std::size_t>(c1 - 1), left[q]);
            }
        }
    });
}

// Draws of binomial j[i] of replicate rep[i] for Bin(n[i], a[i] / b[i]) (the
// sampler and word schedule of the class counts), for tests.
inline void binomial_draws(const std::int64_t* n, const std::int64_t* a, const std::int64_t* b,
                           const std::int64_t* rep, const std::int64_t* j, std::size_t count,
                           std::uint64_t seed, std::int64_t* out) {
    const PhiloxKey key = philox_key(seed);
    parallel_blocks(count, 1024, [&](std::size_t i0, std::size_t i1) {
        std::vector<double> w;
        for (std::size_t i = i0; i < i1; ++i) {
            const auto r = static_cast<std::uint32_t>(rep[i]);
            const auto jj = static_cast<std::uint32_t>(j[i]);
            const PhiloxCounter first = philox4x32_10({jj, r, 2, 0}, key);
            out[i] = binomial_draw(n[i], a[i], b[i], key, r, jj, first.data(), w);
        }
    });
}

// sums[r] = sum over classes of class_value * draws of replicate b0 + r.
inline void bootstrap_class_sums(const std::int64_t* class_offsets, std::size_t n_strata,
                                 const std::int64_t* class_size,
                                 const std::int64_t* class_value, std::uint64_t seed,
                                 std::uint64_t b0, std::size_t nb, std::int64_t* sums) {
    for (std::size_t r = 0; r < nb; ++r) sums[r] = 0;
    bootstrap_class_draws(class_offsets, n_strata, class_size, seed, b0, nb,
                          [&](std::size_t r, std::size_t c, std::int64_t m) {
                              sums[r] += class_value[c] * m;
                          });
}

// counts[r * n_classes + c] = draws of class c in replicate b0 + r.
inline void bootstrap_class_counts(const std::int64_t* class_offsets, std::size_t n_strata,
                                   const std::int64_t* class_size, std::uint64_t seed,
                                   std::uint64_t b0, std::size_t nb, std::int64_t* counts) {
    const std::size_t n_classes = static_cast<std::size_t>(class_offsets[n_strata]);
    bootstrap_class_draws(class_offsets, n_strata, class_size, seed, b0, nb,
                          [&](std::size_t r, std::size_t c, std::int64_t m) {
                              counts[r * n_classes + c] = m;
                          });
}

namespace bootstrap_detail {
// max of p[0..L-1], L >= 1: 16 bytes at a time (SSE2, the x86-64 baseline; the
// last load overlaps the previous ones, harmless for a maximum), then a
// horizontal maximum in four shuffles.
inline std::uint8_t byte_max(const std::uint8_t* p, std::size_t L) {
#ifdef CAPFRONT_BOOTSTRAP_X86
    if (L >= 16) {
        __m128i m = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        for (std::size_t l = 16; l + 16 <= L; l += 16)
            m = _mm_max_epu8(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + l)));
        m = _mm_max_epu8(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + L - 16)));
        m = _mm_max_epu8(m, _mm_srli_si128(m, 8));
        m = _mm_max_epu8(m, _mm_srli_si128(m, 4));
        m = _mm_max_epu8(m, _mm_srli_si128(m, 2));
        m = _mm_max_epu8(m, _mm_srli_si128(m, 1));
        return static_cast<std::uint8_t>(_mm_cvtsi128_si32(m) & 0xFF);
    }
#endif
    std::uint8_t m = p[0];
    for (std::size_t l = 1; l < L; ++l) m = p[l] > m ? p[l] : m;
    return m;
}
}  // namespace bootstrap_detail

// Value classes of the per-prompt maximum max_l S[n, l] of a compact (N, L) uint8
// table, by stratum: hist[s * n_values + v] = #{positions i of stratum s :
// max_l S[order[i], l] = v} (order empty: position i is prompt i). One pass over
// the table, no per-prompt column wider than a byte: pass 1 (parallel over fixed
// blocks of positions) writes the row maxima as bytes, pass 2 counts them per
// stratum with four interleaved histograms (independent increments). Integer
// counts: the result does not depend on the thread count. Returns false (and
// leaves hist partly written) when some maximum is >= n_values.
inline bool row_max_counts(const std::uint8_t* S, std::size_t L, const std::int64_t* order,
                           bool identity, const std::int64_t* offsets, std::size_t n_strata,
                           std::size_t n_values, std::int64_t* hist) {
    const std::size_t n = static_cast<std::size_t>(offsets[n_strata]);
    std::vector<std::uint8_t> top(n);
    parallel_blocks(n, 16384, [&](std::size_t i0, std::size_t i1) {
        for (std::size_t i = i0; i < i1; ++i) {
            const std::size_t row = identity ? i : static_cast<std::size_t>(order[i]);
            top[i] = bootstrap_detail::byte_max(S + row * L, L);
        }
    });
    std::vector<std::int64_t> part(4 * 256);
    for (std::size_t s = 0; s < n_strata; ++s) {
        std::fill(part.begin(), part.end(), 0);
        const auto i0 = static_cast<std::size_t>(offsets[s]);
        const auto i1 = static_cast<std::size_t>(offsets[s + 1]);
        std::size_t i = i0;
        for (; i + 4 <= i1; i += 4) {
            ++part[top[i]];
            ++part[256 + top[i + 1]];
            ++part[512 + top[i + 2]];
            ++part[768 + top[i + 3]];
        }
        for (; i < i1; ++i) ++part[top[i]];
        for (std::size_t v = 0; v < 256; ++v) {
            const std::int64_t c = part[v] + part[256 + v] + part[512 + v] + part[768 + v];
            if (v >= n_values) {
                if (c != 0) return false;
            } else {
                hist[s * n_values + v] = c;
            }
        }
    }
    return true;
}

// Poisson(1) by inversion of u: the smallest k (at most 30) with u < F(k), the
// CDF summed term by term (p_k = p_{k-1} / k from e^-1).
inline std::int64_t poisson1(double u) {
    std::int64_t k = 0;
    double p = 0.36787944117144233;  // e^-1
    double cdf = p;
    while (u >= cdf && k < 30) {
        ++k;
        p /= static_cast<double>(k);
        cdf += p;
    }
    return k;
}

// Poisson bootstrap of keyed rows: replicate b gives row i the weight
// w = Poisson1(U), U from words 0, 1 of the Philox block with counter
// (key_i mod 2^32, b, stream 7, key_i >> 32) -- a function of (seed, b, key) only,
// so the sums do not depend on how rows are split. out[b, k] = sum_i w values[i, k]
// (k < K), out[b, K] = sum_i w: exact integers.
CAPFRONT_NO_CONTRACT inline void poisson_sums(const std::int64_t* keys, std::size_t n,
                                              const std::int64_t* values, std::size_t K,
                                              std::uint64_t seed, std::size_t nb,
                                              std::int64_t* out) {
    parallel_blocks(nb, 1, [&](std::size_t r0, std::size_t r1) {
        std::uint32_t words[8];
        for (std::size_t b = r0; b < r1; ++b) {
            std::int64_t* row = out + b * (K + 1);
            for (std::size_t k = 0; k <= K; ++k) row[k] = 0;
            for (std::size_t i = 0; i < n; ++i) {
                philox_stream_words(seed, static_cast<std::uint32_t>(b), 7,
                                    4 * static_cast<std::uint64_t>(keys[i]), 4, words);
                const std::int64_t w = poisson1(uniform53(words[0], words[1]));
                if (w == 0) continue;
                for (std::size_t k = 0; k < K; ++k) row[k] += w * values[i * K + k];
                row[K] += w;
            }
        }
    });
}

}  // namespace capfront
