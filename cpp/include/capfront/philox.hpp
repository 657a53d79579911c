// Philox4x32-10 counter-based random numbers (Salmon et al., "Parallel random
// numbers: as easy as 1, 2, 3", SC'11; the Random123 reference constants).
//
// A counter-based generator is a keyed bijection of a 128-bit counter: the word
// for a given (key, counter) never depends on what was drawn before, so any
// thread can produce any part of the stream, and the C++, Numba and NumPy
// implementations (python/capfront/_philox.py, _numba_bootstrap.py) give the same
// words bit for bit. Validated against the Random123 known-answer vectors
// (tests/test_bootstrap_philox.py).
//
// Cost: 10 rounds of two 32x32->64 multiplies per 4 output words. The batch
// routine works on kLanes independent counters in structure-of-arrays form so
// the compiler vectorises the rounds (pmuludq / vpmuludq).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace capfront {

namespace philox_detail {
constexpr std::uint32_t kM0 = 0xD2511F53u;
constexpr std::uint32_t kM1 = 0xCD9E8D57u;
constexpr std::uint32_t kW0 = 0x9E3779B9u;  // golden ratio
constexpr std::uint32_t kW1 = 0xBB67AE85u;  // sqrt(3) - 1
}  // namespace philox_detail

using PhiloxCounter = std::array<std::uint32_t, 4>;
using PhiloxKey = std::array<std::uint32_t, 2>;

// One Philox4x32-10 block: 4 words for (counter, key).
inline PhiloxCounter philox4x32_10(PhiloxCounter ctr, PhiloxKey key) {
    using namespace philox_detail;
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            key[0] += kW0;
            key[1] += kW1;
        }
        const std::uint64_t p0 = static_cast<std::uint64_t>(kM0) * ctr[0];
        const std::uint64_t p1 = static_cast<std::uint64_t>(kM1) * ctr[2];
        const std::uint32_t hi0 = static_cast<std::uint32_t>(p0 >> 32);
        const std::uint32_t lo0 = static_cast<std::uint32_t>(p0);
        const std::uint32_t hi1 = static_cast<std::uint32_t>(p1 >> 32);
        const std::uint32_t lo1 = static_cast<std::uint32_t>(p1);
        ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
    }
    return ctr;
}

// Key for a 64-bit seed: (low word, high word).
inline PhiloxKey philox_key(std::uint64_t seed) {
    return {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
}

namespace philox_detail {

// Round keys for a key: rk[r] = key + r * (W0, W1).
struct RoundKeys {
    std::uint32_t k0[10], k1[10];
    explicit RoundKeys(PhiloxKey key) {
        k0[0] = key[0];
        k1[0] = key[1];
        for (int r = 1; r < 10; ++r) {
            k0[r] = k0[r - 1] + kW0;
            k1[r] = k1[r - 1] + kW1;
        }
    }
};

// Portable path: block by block.
inline void stream_blocks_scalar(const RoundKeys& rk, std::uint64_t j0, std::size_t n_blocks,
                                 std::uint32_t rep, std::uint32_t stream,
                                 std::uint32_t* out) {
    for (std::size_t b = 0; b < n_blocks; ++b) {
        const std::uint64_t j = j0 + b;
        std::uint32_t x0 = static_cast<std::uint32_t>(j), x1 = rep, x2 = stream,
                      x3 = static_cast<std::uint32_t>(j >> 32);
        for (int r = 0; r < 10; ++r) {
            const std::uint64_t p0 = static_cast<std::uint64_t>(kM0) * x0;
            const std::uint64_t p1 = static_cast<std::uint64_t>(kM1) * x2;
            x0 = static_cast<std::uint32_t>(p1 >> 32) ^ x1 ^ rk.k0[r];
            x2 = static_cast<std::uint32_t>(p0 >> 32) ^ x3 ^ rk.k1[r];
            x1 = static_cast<std::uint32_t>(p1);
            x3 = static_cast<std::uint32_t>(p0);
        }
        out[4 * b] = x0;
        out[4 * b + 1] = x1;
        out[4 * b + 2] = x2;
        out[4 * b + 3] = x3;
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CAPFRONT_PHILOX_AVX2 1
// kGroups x 8 blocks at a time in AVX2 registers (structure of arrays); the
// 32x32->64 multiplies are vpmuludq on the even and odd lanes. Several independent
// groups hide the multiply latency of the round chain.
__attribute__((target("avx2"))) inline void stream_blocks_avx2(
    const RoundKeys& rk, std::uint64_t j0, std::size_t n_blocks, std::uint32_t rep,
    std::uint32_t stream, std::uint32_t* out) {
    constexpr int kGroups = 4;
    constexpr std::size_t kStep = 8 * kGroups;
    const __m256i m0 = _mm256_set1_epi64x(kM0);
    const __m256i m1 = _mm256_set1_epi64x(kM1);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    std::size_t b = 0;
    alignas(32) std::uint32_t y[4][kStep];
    for (; b + kStep <= n_blocks; b += kStep) {
        __m256i x0[kGroups], x1[kGroups], x2[kGroups], x3[kGroups];
        for (int g = 0; g < kGroups; ++g) {
            const std::uint64_t j = j0 + b + 8 * g;
            if ((j >> 32) == ((j + 7) >> 32)) {
                x0[g] = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(j)), lane);
                x3[g] = _mm256_set1_epi32(static_cast<int>(j >> 32));
            } else {  // the low word wraps inside this group
                alignas(32) std::uint32_t lo[8], hi[8];
                for (int i = 0; i < 8; ++i) {
                    lo[i] = static_cast<std::uint32_t>(j + i);
                    hi[i] = static_cast<std::uint32_t>((j + i) >> 32);
                }
                x0[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
                x3[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
            }
            x1[g] = _mm256_set1_epi32(static_cast<int>(rep));
            x2[g] = _mm256_set1_epi32(static_cast<int>(stream));
        }
        for (int r = 0; r < 10; ++r) {
            const __m256i key0 = _mm256_set1_epi32(static_cast<int>(rk.k0[r]));
            const __m256i key1 = _mm256_set1_epi32(static_cast<int>(rk.k1[r]));
            for (int g = 0; g < kGroups; ++g) {
                const __m256i e0 = _mm256_mul_epu32(x0[g], m0);
                const __m256i o0 = _mm256_mul_epu32(_mm256_srli_epi64(x0[g], 32), m0);
                const __m256i e1 = _mm256_mul_epu32(x2[g], m1);
                const __m256i o1 = _mm256_mul_epu32(_mm256_srli_epi64(x2[g], 32), m1);
                const __m256i lo0 =
                    _mm256_blend_epi32(e0, _mm256_slli_epi64(o0, 32), 0xAA);
                const __m256i hi0 =
                    _mm256_blend_epi32(_mm256_srli_epi64(e0, 32), o0, 0xAA);
                const __m256i lo1 =
                    _mm256_blend_epi32(e1, _mm256_slli_epi64(o1, 32), 0xAA);
                const __m256i hi1 =
                    _mm256_blend_epi32(_mm256_srli_epi64(e1, 32), o1, 0xAA);
                x0[g] = _mm256_xor_si256(_mm256_xor_si256(hi1, x1[g]), key0);
                x2[g] = _mm256_xor_si256(_mm256_xor_si256(hi0, x3[g]), key1);
                x1[g] = lo1;
                x3[g] = lo0;
            }
        }
        for (int g = 0; g < kGroups; ++g) {
            _mm256_store_si256(reinterpret_cast<__m256i*>(y[0] + 8 * g), x0[g]);
            _mm256_store_si256(reinterpret_cast<__m256i*>(y[1] + 8 * g), x1[g]);
            _mm256_store_si256(reinterpret_cast<__m256i*>(y[2] + 8 * g), x2[g]);
            _mm256_store_si256(reinterpret_cast<__m256i*>(y[3] + 8 * g), x3[g]);
        }
        std::uint32_t* o = out + 4 * b;
        for (std::size_t i = 0; i < kStep; ++i) {
            o[4 * i] = y[0][i];
            o[4 * i + 1] = y[1][i];
            o[4 * i + 2] = y[2][i];
            o[4 * i + 3] = y[3][i];
        }
    }
    stream_blocks_scalar(rk, j0 + b, n_blocks - b, rep, stream, out + 4 * b);
}

// The same with 16 lanes per register (AVX-512F): 64 blocks per iteration.
// (GCC's _mm512_mul_epu32 trips a false -Wmaybe-uninitialized on its own
// undefined pass-through operand.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
__attribute__((target("avx512f"))) inline void stream_blocks_avx512(
    const RoundKeys& rk, std::uint64_t j0, std::size_t n_blocks, std::uint32_t rep,
    std::uint32_t stream, std::uint32_t* out) {
    constexpr int kGroups = 4;
    constexpr std::size_t kStep = 16 * kGroups;
    const __m512i m0 = _mm512_set1_epi64(kM0);
    const __m512i m1 = _mm512_set1_epi64(kM1);
    const __m512i lane =
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    constexpr __mmask16 kOdd = 0xAAAA;
    std::size_t b = 0;
    alignas(64) std::uint32_t y[4][kStep];
    for (; b + kStep <= n_blocks; b += kStep) {
        __m512i x0[kGroups], x1[kGroups], x2[kGroups], x3[kGroups];
        for (int g = 0; g < kGroups; ++g) {
            const std::uint64_t j = j0 + b + 16 * g;
            if ((j >> 32) == ((j + 15) >> 32)) {
                x0[g] = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(j)), lane);
                x3[g] = _mm512_set1_epi32(static_cast<int>(j >> 32));
            } else {  // the low word wraps inside this group
                alignas(64) std::uint32_t lo[16], hi[16];
                for (int i = 0; i < 16; ++i) {
                    lo[i] = static_cast<std::uint32_t>(j + i);
                    hi[i] = static_cast<std::uint32_t>((j + i) >> 32);
                }
                x0[g] = _mm512_load_si512(lo);
                x3[g] = _mm512_load_si512(hi);
            }
            x1[g] = _mm512_set1_epi32(static_cast<int>(rep));
            x2[g] = _mm512_set1_epi32(static_cast<int>(stream));
        }
        for (int r = 0; r < 10; ++r) {
            const __m512i key0 = _mm512_set1_epi32(static_cast<int>(rk.k0[r]));
            const __m512i key1 = _mm512_set1_epi32(static_cast<int>(rk.k1[r]));
            for (int g = 0; g < kGroups; ++g) {
                const __m512i e0 = _mm512_mul_epu32(x0[g], m0);
                const __m512i o0 = _mm512_mul_epu32(_mm512_srli_epi64(x0[g], 32), m0);
                const __m512i e1 = _mm512_mul_epu32(x2[g], m1);
                const __m512i o1 = _mm512_mul_epu32(_mm512_srli_epi64(x2[g], 32), m1);
                const __m512i lo0 = _mm512_mask_blend_epi32(kOdd, e0, _mm512_slli_epi64(o0, 32));
                const __m512i hi0 = _mm512_mask_blend_epi32(kOdd, _mm512_srli_epi64(e0, 32), o0);
                const __m512i lo1 = _mm512_mask_blend_epi32(kOdd, e1, _mm512_slli_epi64(o1, 32));
                const __m512i hi1 = _mm512_mask_blend_epi32(kOdd, _mm512_srli_epi64(e1, 32), o1);
                x0[g] = _mm512_xor_si512(_mm512_xor_si512(hi1, x1[g]), key0);
                x2[g] = _mm512_xor_si512(_mm512_xor_si512(hi0, x3[g]), key1);
                x1[g] = lo1;
                x3[g] = lo0;
            }
        }
        for (int g = 0; g < kGroups; ++g) {
            _mm512_store_si512(y[0] + 16 * g, x0[g]);
            _mm512_store_si512(y[1] + 16 * g, x1[g]);
            _mm512_store_si512(y[2] + 16 * g, x2[g]);
            _mm512_store_si512(y[3] + 16 * g, x3[g]);
        }
        std::uint32_t* o = out + 4 * b;
        for (std::size_t i = 0; i < kStep; ++i) {
            o[4 * i] = y[0][i];
            o[4 * i + 1] = y[1][i];
            o[4 * i + 2] = y[2][i];
            o[4 * i + 3] = y[3][i];
        }
    }
    stream_blocks_avx2(rk, j0 + b, n_blocks - b, rep, stream, out + 4 * b);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

inline bool has_avx512() {
    static const bool ok = __builtin_cpu_supports("avx512f");
    return ok;
}

inline bool has_avx2() {
    static const bool ok = __builtin_cpu_supports("avx2");
    return ok;
}
#endif

}  // namespace philox_detail

// The bootstrap's stream layout (see python/capfront/bootstrap.py): word w of
// stream `stream` for replicate `rep` is lane w % 4 of the block with counter
// (j mod 2^32, rep, stream, j >> 32), j = w / 4, key = philox_key(seed).
//
// Writes words [w0, w0 + count) of that stream into out; w0 must be a multiple
// of 4 (callers fetch whole blocks). out must have room for count rounded up to
// a multiple of 4.
inline void philox_stream_words(std::uint64_t seed, std::uint32_t rep, std::uint32_t stream,
                                std::uint64_t w0, std::size_t count, std::uint32_t* out) {
    using namespace philox_detail;
    const RoundKeys rk(philox_key(seed));
    const std::size_t n_blocks = (count + 3) / 4;
#ifdef CAPFRONT_PHILOX_AVX2
    if (has_avx512()) {
        stream_blocks_avx512(rk, w0 / 4, n_blocks, rep, stream, out);
        return;
    }
    if (has_avx2()) {
        stream_blocks_avx2(rk, w0 / 4, n_blocks, rep, stream, out);
        return;
    }
#endif
    stream_blocks_scalar(rk, w0 / 4, n_blocks, rep, stream, out);
}

}  // namespace capfront
