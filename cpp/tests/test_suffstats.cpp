// C++ checks of the fused sufficient statistics against a plain loop: byte scores
// (bit-trick fast paths for every G from 1 to 40, with and without a mask, int32
// and uint8 counts, rows with a byte > 1 falling back, also a byte > 1 at the very
// start of a block, which the cell stream of the block before reads too) and float
// scores, for 1 and 2 threads.
#include <capfront/parallel.hpp>
#include <capfront/suffstats.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "check.hpp"

int main() {
    std::mt19937_64 rng(11);
    for (std::size_t G = 1; G <= 40; ++G) {
        for (int masked = 0; masked < 2; ++masked) {
            const std::size_t N = 2 * capfront::kBlockRows + 5, L = 1 + G % 4;
            std::vector<std::uint8_t> x(N * L * G), m(N * L * G, 1);
            for (auto& v : x) v = static_cast<std::uint8_t>(rng() % 3 == 0);
            if (masked)
                for (auto& v : m) v = static_cast<std::uint8_t>(rng() % 5 != 0);
            const std::size_t bad1 = (N / 2) * L * G, bad2 = 2 * capfront::kBlockRows * L * G;
            x[bad1] = 7;  // one row takes the general loop: flagged
            x[bad2] = 5;  // the first byte of the last block
            const std::int64_t n_bad = m[bad1] + m[bad2];
            std::vector<std::int32_t> want_s(N * L), want_n(N * L);
            for (std::size_t c = 0; c < N * L; ++c) {
                for (std::size_t g = 0; g < G; ++g) {
                    if (!m[c * G + g]) continue;
                    want_s[c] += x[c * G + g];
                    ++want_n[c];
                }
            }
            for (int threads : {1, 2}) {
                capfront::set_num_threads(threads);
                std::vector<std::int32_t> s(N * L, -1), n(N * L, -1);
                capfront::SuffStatsOut out;
                out.counts = s.data();
                out.n_draws = n.data();
                const auto flags = capfront::sufficient_stats<std::uint8_t>(
                    x.data(), masked ? m.data() : nullptr, nullptr, nullptr, N, L, G,
                    out);
                CHECK(s == want_s);
                CHECK(n == want_n);
                CHECK(flags.out_of_range_scores == n_bad);
                // uint8 counts (the compact output; the AVX2 cell stream without a mask)
                std::vector<std::uint8_t> s8(N * L, 0xAA);
                capfront::SuffStatsOut out8;
                out8.counts8 = s8.data();
                const auto flags8 = capfront::sufficient_stats<std::uint8_t>(
                    x.data(), masked ? m.data() : nullptr, nullptr, nullptr, N, L, G,
                    out8);
                bool same = true;
                for (std::size_t c = 0; c < N * L; ++c)
                    same = same && s8[c] == static_cast<std::uint8_t>(want_s[c]);
                CHECK(same);
                CHECK(flags8.out_of_range_scores == n_bad);
            }
        }
    }
    // float scores: sums, squares, maxima, NaN where a cell has no draws
    const std::size_t N = 50, L = 3, G = 6;
    std::vector<double> x(N * L * G);
    std::uniform_real_distribution<double> U(0.0, 1.0);
    for (auto& v : x) v = U(rng);
    std::vector<std::uint8_t> m(N * L * G, 1);
    for (std::size_t g = 0; g < G; ++g) m[g] = 0;  // cell (0, 0) not run
    std::vector<double> s(N * L), s2(N * L), mx(N * L);
    std::vector<std::int32_t> n(N * L);
    capfront::SuffStatsOut out;
    out.successes = s.data();
    out.sum_sq = s2.data();
    out.max_score = mx.data();
    out.n_draws = n.data();
    const auto flags = capfront::sufficient_stats<double>(x.data(), m.data(), nullptr,
                                                          nullptr, N, L, G, out);
    CHECK(flags.nonbinary_scores == static_cast<std::int64_t>(N * L * G - G));
    CHECK(n[0] == 0 && std::isnan(mx[0]) && s[0] == 0.0);
    double a = 0, b = 0, c = 0;
    for (std::size_t g = 0; g < G; ++g) {
        a += x[G + g];
        b += x[G + g] * x[G + g];
        c = std::max(c, x[G + g]);
    }
    CHECK(s[1] == a && s2[1] == b && mx[1] == c && n[1] == static_cast<int>(G));
    if (failures) std::printf("%d check(s) failed\n", failures);
    else std::printf("sufficient statistics: all checks passed\n");
    return failures ? 1 : 0;
}
