// Fused sufficient statistics of an (N, L, G) evaluation tensor.
//
// One pass over scores (and optional mask, cost, latency), writing per (n, l) cell:
//   successes = sum_g phi,  n_draws = #valid g,
//   and for non-byte scores also sum_sq = sum_g phi^2 and max_score = max_g phi,
//   cost_sum = sum_g c,  latency_sum = sum_g t,  latency_max = max_g t.
// Also counts invalid values (NaN/inf, scores outside [0, 1], non-binary scores,
// negative or non-finite cost/latency) so the caller can name the problem.
// Complexity O(N L G); memory traffic one read of each input, O(N L) writes.
//
// Compact output. Byte scores (uint8, bool) are integers, so their sums go to an
// int32 array (`counts`) and sum_sq / max_score are not written: for valid 0/1 data
// they follow from the counts (sum_sq = successes, max = [successes > 0]); a byte
// > 1 is flagged out of range. Without a mask every cell has G draws and n_draws may
// be left null. For binary data the pass then writes 4 bytes per cell against G
// bytes read, so it runs at the speed of reading the scores.
//
// Byte scores take a fast path: without a mask, with uint8 counts and G <= 32 a
// block of rows is one stream of cells, each counted from one 32-byte load (AVX2:
// movemask of bit 0, popcount of the low G bits); otherwise per prompt row, the
// row's bytes are packed into a bitmap (AVX2 movemask, or 8 at a time with one
// multiply) and each cell's count is the popcount of its G-bit window. Both check
// in the same pass, by OR-ing what they load, that every byte is 0 or 1. A block
// (row) with a byte > 1 falls back to the exact general loop (integer
// accumulators). Per-cell results never depend on the thread count: every cell is
// reduced by one thread in generation order.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "parallel.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace capfront {

struct SuffStatsOut {
    double* successes = nullptr;        // (N, L): sums of non-byte scores
    std::int32_t* counts = nullptr;     // (N, L): sums of byte (bool, uint8) scores
    std::uint8_t* counts8 = nullptr;    // (N, L): the same as bytes (instead of counts;
                                        // wraps above 255, where a score byte is > 1)
    double* sum_sq = nullptr;           // (N, L) or nullptr (non-byte scores only)
    std::int32_t* n_draws = nullptr;    // (N, L) or nullptr (then every cell has G)
    double* max_score = nullptr;        // (N, L) or nullptr; NaN where n_draws == 0
    double* cost_sum = nullptr;         // (N, L) or nullptr
    double* latency_sum = nullptr;      // (N, L) or nullptr
    double* latency_max = nullptr;      // (N, L) or nullptr
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

template <class T>
constexpr bool is_byte_score =
    std::is_same<T, std::uint8_t>::value || std::is_same<T, bool>::value;

// Sum of the 8 bytes of w when each is 0 or 1 (the sum lands in the top byte).
inline std::int32_t byte_sum(std::uint64_t w) {
    return static_cast<std::int32_t>((w * 0x0101010101010101ULL) >> 56);
}

// The len (1..7) bytes at row[off, off + len) in the low bytes of a word, with
// loads that stay inside the row of n bytes (little endian).
inline std::uint64_t tail_word(const std::uint8_t* row, std::size_t n, std::size_t off,
                               std::size_t len) {
    if (off + len >= 8) return load_u64(row + off + len - 8) >> (8 * (8 - len));
    if (off + 8 <= n) return load_u64(row + off) & (~0ULL >> (8 * (8 - len)));
    std::uint64_t w = 0;
    for (std::size_t j = 0; j < len; ++j) w |= std::uint64_t{row[off + j]} << (8 * j);
    return w;
}

// Fast path for one row of byte scores: each cell's G bytes are summed 8 at a time
// with one multiply (valid when every byte is 0 or 1, which the same pass checks by
// OR-ing the words); the last G % 8 bytes come from one word loaded inside the row.
// Returns false when a byte is > 1 (the caller then runs the general loop on the
// row, overwriting what was written).
#if defined(__GNUC__)
#define CAPFRONT_NOINLINE __attribute__((noinline))
#else
#define CAPFRONT_NOINLINE
#endif

// One row; FixedG > 0 compiles the cell loop for that G (unrolled, constant shifts:
// about 2.5x faster than the run-time G), FixedG == 0 takes G at run time.
template <bool HasMask, std::size_t FixedG>
CAPFRONT_NOINLINE bool binary_row_impl(const std::uint8_t* x, const std::uint8_t* mask,
                                       std::size_t L, std::size_t G_run,
                                       std::int32_t* counts, std::int32_t* nd) {
    const std::size_t G = FixedG ? FixedG : G_run;
    const std::size_t full = G / 8, tail = G % 8, n = L * G;
    std::uint64_t any = 0;
    for (std::size_t l = 0; l < L; ++l) {
        const std::size_t off = l * G;
        std::int32_t s = 0, cnt = 0;
        for (std::size_t k = 0; k < full; ++k) {
            std::uint64_t w = load_u64(x + off + 8 * k);
            any |= w;
            if constexpr (HasMask) {
                const std::uint64_t mw = load_u64(mask + off + 8 * k);
                any |= mw;
                w &= mw;
                cnt += byte_sum(mw);
            }
            s += byte_sum(w);
        }
        if (tail) {
            const std::size_t t0 = off + 8 * full;
            std::uint64_t w = tail_word(x, n, t0, tail);
            any |= w;
            if constexpr (HasMask) {
                const std::uint64_t mw = tail_word(mask, n, t0, tail);
                any |= mw;
                w &= mw;
                cnt += byte_sum(mw);
            }
            s += byte_sum(w);
        }
        counts[l] = s;
        if (nd) nd[l] = HasMask ? cnt : static_cast<std::int32_t>(G);
    }
    return (any & 0xFEFEFEFEFEFEFEFEULL) == 0;
}

using BinaryRowFn = bool (*)(const std::uint8_t*, const std::uint8_t*, std::size_t,
                             std::size_t, std::int32_t*, std::int32_t*);

template <bool HasMask, std::size_t... Gs>
BinaryRowFn pick_binary_row(std::size_t G, std::index_sequence<Gs...>) {
    BinaryRowFn fn = &binary_row_impl<HasMask, 0>;
    ((G == Gs + 1 ? (fn = &binary_row_impl<HasMask, Gs + 1>, 0) : 0), ...);
    return fn;
}

// The row function for this G and mask: compiled for G = 1..32, generic above.
inline BinaryRowFn binary_row_for(std::size_t G, bool has_mask) {
    using Gs = std::make_index_sequence<32>;
    return has_mask ? pick_binary_row<true>(G, Gs{}) : pick_binary_row<false>(G, Gs{});
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CAPFRONT_SUFFSTATS_X86 1
// AVX2 row of byte scores (G <= 56; chosen at run time, the build targets baseline
// x86-64): 32 bytes at a time, bit 0 of every byte goes to a bitmap of the row
// (shift by 7, movemask), the bytes are OR-ed to check that each is 0 or 1, and
// a cell's count is the popcount of its G-bit window (one unaligned 8-byte load
// of the bitmap, a shift and a mask). With a mask: the bitmaps of x & m and of m.
// About 1.5 instructions per 8 bytes read plus 5 per cell, against a multiply per
// 8 bytes and per-cell tail loads of the portable row. `bits` (and `mbits`) hold
// at least L G / 8 + 16 bytes. Returns false when a byte is > 1.
template <bool HasMask>
__attribute__((target("avx2,popcnt"))) CAPFRONT_NOINLINE bool binary_row_avx2(
    const std::uint8_t* x, const std::uint8_t* mask, std::size_t L, std::size_t G,
    std::int32_t* counts, std::int32_t* nd, std::uint8_t* bits, std::uint8_t* mbits) {
    const std::size_t n = L * G;
    __m256i any = _mm256_setzero_si256();
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
        any = _mm256_or_si256(any, v);
        if constexpr (HasMask) {
            const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(mask + i));
            any = _mm256_or_si256(any, m);
            v = _mm256_and_si256(v, m);
            const auto mb =
                static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_slli_epi16(m, 7)));
            std::memcpy(mbits + i / 8, &mb, sizeof mb);
        }
        const auto b = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_slli_epi16(v, 7)));
        std::memcpy(bits + i / 8, &b, sizeof b);
    }
    std::uint64_t tail = 0, mtail = 0, tail_any = 0;
    if (i < n && n >= 32) {
        // the last n - i bytes: the top bits of the row's last 32 bytes (a load that
        // overlaps bytes already read, harmless for the OR check)
        const std::size_t shift = 32 - (n - i);
        __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + n - 32));
        any = _mm256_or_si256(any, v);
        if constexpr (HasMask) {
            const __m256i m =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(mask + n - 32));
            any = _mm256_or_si256(any, m);
            v = _mm256_and_si256(v, m);
            mtail = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_slli_epi16(m, 7))) >>
                    shift;
        }
        tail = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_slli_epi16(v, 7))) >>
               shift;
        i = n;
    }
    for (std::size_t j = i; j < n; ++j) {
        std::uint64_t v = x[j];
        tail_any |= v;
        if constexpr (HasMask) {
            tail_any |= mask[j];
            v &= mask[j];
            mtail |= std::uint64_t{mask[j]} << (j - i);
        }
        tail |= v << (j - i);
    }
    const std::size_t at = (n / 32) * 4;  // bitmap byte of the first tail bit
    std::memcpy(bits + at, &tail, sizeof tail);
    if constexpr (HasMask) std::memcpy(mbits + at, &mtail, sizeof mtail);
    const bool binary = _mm256_testz_si256(any, _mm256_set1_epi8(static_cast<char>(0xFE))) &&
                        (tail_any & 0xFEu) == 0;
    if (!binary) return false;
    const std::uint64_t keep = (std::uint64_t{1} << G) - 1;
    for (std::size_t l = 0; l < L; ++l) {
        const std::size_t b0 = l * G;
        std::uint64_t w;
        std::memcpy(&w, bits + b0 / 8, sizeof w);
        counts[l] = static_cast<std::int32_t>(_mm_popcnt_u64((w >> (b0 % 8)) & keep));
        if constexpr (HasMask) {
            if (nd) {
                std::memcpy(&w, mbits + b0 / 8, sizeof w);
                nd[l] = static_cast<std::int32_t>(_mm_popcnt_u64((w >> (b0 % 8)) & keep));
            }
        } else if (nd) {
            nd[l] = static_cast<std::int32_t>(G);
        }
    }
    return true;
}

// AVX2 cell stream of byte scores without a mask, G <= 32 (chosen at run time).
// Without a mask the rows of a block are one contiguous stream of cells of G bytes
// (row boundaries do not matter), so each cell is one unaligned 32-byte load at its
// own start: bit 0 of every byte to a movemask (shift by 7), the low G bits kept,
// one popcount, and the count stored straight into the uint8 output (four cells per
// step, stores merged). Every load is OR-ed into a check that each byte is 0 or 1
// (a load also covers up to 32 - G bytes of the next cells, which belong to the
// tensor and are checked anyway: a byte > 1 just after the block sends this block
// to the exact row loop too). Against the per-row bitmap (bits stored, reloaded
// per cell, an int32 count narrowed afterwards): about half the instructions per
// cell and loads in address order, so one thread runs at the speed of a plain
// read of the bytes. `avail` is the number of bytes readable from x (to the end of
// the tensor); the cells whose load would pass it, and G == 0, are summed bytewise.
// Returns false when a byte is > 1 (the caller then redoes the block row by row,
// overwriting what was written).
__attribute__((target("avx2,popcnt"), always_inline)) inline std::uint8_t low_bits_count(
    __m256i v, std::uint32_t keep) {
    const auto b =
        static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_slli_epi16(v, 7)));
    return static_cast<std::uint8_t>(_mm_popcnt_u32(b & keep));
}

__attribute__((target("avx2,popcnt"))) CAPFRONT_NOINLINE inline bool binary_cells_avx2(
    const std::uint8_t* x, std::size_t M, std::size_t G, std::size_t avail,
    std::uint8_t* out) {
    const std::uint32_t keep = G >= 32 ? ~0u : (std::uint32_t{1} << G) - 1;
    // cells k with k G + 32 <= avail
    const std::size_t safe =
        avail < 32 || G == 0 ? 0 : std::min(M, (avail - 32) / G + 1);
    __m256i any = _mm256_setzero_si256();
    const std::uint8_t* p = x;
    std::size_t k = 0;
    for (; k + 4 <= safe; k += 4, p += 4 * G) {
        const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + G));
        const __m256i v2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * G));
        const __m256i v3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 3 * G));
        any = _mm256_or_si256(
            any, _mm256_or_si256(_mm256_or_si256(v0, v1), _mm256_or_si256(v2, v3)));
        out[k] = low_bits_count(v0, keep);
        out[k + 1] = low_bits_count(v1, keep);
        out[k + 2] = low_bits_count(v2, keep);
        out[k + 3] = low_bits_count(v3, keep);
    }
    for (; k < safe; ++k, p += G) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        any = _mm256_or_si256(any, v);
        out[k] = low_bits_count(v, keep);
    }
    unsigned tail_any = 0;
    for (; k < M; ++k, p += G) {
        unsigned c = 0;
        for (std::size_t g = 0; g < G; ++g) {
            c += p[g];
            tail_any |= p[g];
        }
        out[k] = static_cast<std::uint8_t>(c);
    }
    return _mm256_testz_si256(any, _mm256_set1_epi8(static_cast<char>(0xFE))) &&
           (tail_any & 0xFEu) == 0;
}

inline bool has_avx2_popcnt() {
    static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
    return ok;
}
#endif

// General loop over one row's scores.
template <class T>
void general_row(const T* scores, const std::uint8_t* mask, std::size_t L, std::size_t G,
                 std::size_t cell0, SuffStatsFlags& f, const SuffStatsOut& out) {
    for (std::size_t l = 0; l < L; ++l) {
        const T* x = scores + l * G;
        const std::uint8_t* m = mask ? mask + l * G : nullptr;
        const std::size_t cell = cell0 + l;
        std::int64_t cnt = 0;
        if constexpr (is_byte_score<T>) {
            // Exact integer sums; a byte is never NaN and never < 0.
            std::int64_t s = 0, big = 0;
            for (std::size_t g = 0; g < G; ++g) {
                if (m && !m[g]) continue;
                const int v = static_cast<int>(x[g]);
                ++cnt;
                s += v;
                big += v > 1;
            }
            f.out_of_range_scores += big;
            f.nonbinary_scores += big;
            out.counts[cell] = static_cast<std::int32_t>(s);
        } else {
            const double nan = std::numeric_limits<double>::quiet_NaN();
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
            if (out.sum_sq) out.sum_sq[cell] = s2;
            if (out.max_score) out.max_score[cell] = cnt ? mx : nan;
        }
        if (out.n_draws) out.n_draws[cell] = static_cast<std::int32_t>(cnt);
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
    const detail::BinaryRowFn binary_row = detail::binary_row_for(G, mask != nullptr);
#ifdef CAPFRONT_SUFFSTATS_X86
    const bool bitmap_rows = detail::is_byte_score<T> && G >= 1 && G <= 56 &&
                             detail::has_avx2_popcnt();
#else
    const bool bitmap_rows = false;
#endif
    // byte scores, no mask, uint8 counts, G <= 32: the AVX2 cell stream per block
#ifdef CAPFRONT_SUFFSTATS_X86
    const bool cell_stream = detail::is_byte_score<T> && mask == nullptr &&
                             out.counts8 != nullptr && G >= 1 && G <= 32 &&
                             detail::has_avx2_popcnt();
#endif
    parallel_blocks(N, kBlockRows, [&](std::size_t n0, std::size_t n1) {
        SuffStatsFlags f;
        bool streamed = false;
#ifdef CAPFRONT_SUFFSTATS_X86
        if (cell_stream)
            streamed = detail::binary_cells_avx2(
                reinterpret_cast<const std::uint8_t*>(scores + n0 * row), (n1 - n0) * L,
                G, (N - n0) * row, out.counts8 + n0 * L);
#endif
        if (streamed) {
            if (out.n_draws)
                std::fill(out.n_draws + n0 * L, out.n_draws + n1 * L,
                          static_cast<std::int32_t>(G));
            for (std::size_t n = n0; n < n1; ++n) {
                if (cost)
                    detail::value_row(cost + n * row, nullptr, L, G, n * L, f.bad_cost,
                                      out.cost_sum, nullptr);
                if (latency)
                    detail::value_row(latency + n * row, nullptr, L, G, n * L,
                                      f.bad_latency, out.latency_sum, out.latency_max);
            }
            block_flags[n0 / kBlockRows] = f;
            return;
        }
        // the row bitmaps of the AVX2 path (x & m, then m)
        std::vector<std::uint8_t> bits(bitmap_rows ? 2 * (row / 8 + 16) : 0);
        // byte counts: the rows write int32 counts of this block (L2 resident),
        // narrowed to the output bytes after the block (4x less memory written)
        // (one buffer per thread, kept across calls: a fresh 270 kB vector per block
        // would be mmap-ed, faulted in and zeroed each time)
        thread_local std::vector<std::int32_t> block_counts;
        const std::size_t n_block_cells = out.counts8 ? (n1 - n0) * L : 0;
        if (block_counts.size() < n_block_cells) block_counts.resize(n_block_cells);
        SuffStatsOut bo = out;
        std::size_t first_cell = 0;  // cell index of the block's first cell in bo
        if (out.counts8) {
            bo.counts = block_counts.data();
            bo.n_draws = out.n_draws ? out.n_draws + n0 * L : nullptr;
            first_cell = n0 * L;
        }
        for (std::size_t n = n0; n < n1; ++n) {
            const T* x = scores + n * row;
            const std::uint8_t* m = mask ? mask + n * row : nullptr;
            const std::size_t cell0 = n * L - first_cell;
            bool done = false;
            if constexpr (detail::is_byte_score<T> && detail::kLittleEndian) {
                const auto* xb = reinterpret_cast<const std::uint8_t*>(x);
                std::int32_t* nd = bo.n_draws ? bo.n_draws + cell0 : nullptr;
                std::int32_t* cnt = bo.counts + cell0;
#ifdef CAPFRONT_SUFFSTATS_X86
                if (bitmap_rows) {
                    std::uint8_t* b = bits.data();
                    done = m ? detail::binary_row_avx2<true>(xb, m, L, G, cnt, nd, b,
                                                             b + row / 8 + 16)
                             : detail::binary_row_avx2<false>(xb, m, L, G, cnt, nd, b,
                                                              nullptr);
                } else
#endif
                    if (G > 0)
                    done = binary_row(xb, m, L, G, cnt, nd);
            }
            if (!done) detail::general_row(x, m, L, G, cell0, f, bo);
            if (cost)
                detail::value_row(cost + n * row, m, L, G, n * L, f.bad_cost,
                                  out.cost_sum, nullptr);
            if (latency)
                detail::value_row(latency + n * row, m, L, G, n * L, f.bad_latency,
                                  out.latency_sum, out.latency_max);
        }
        if (out.counts8) {
            std::uint8_t* dst = out.counts8 + n0 * L;
            const std::int32_t* src = block_counts.data();
            for (std::size_t i = 0; i < n_block_cells; ++i)
                dst[i] = static_cast<std::uint8_t>(src[i]);
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
