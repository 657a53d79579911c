// C++ checks of the fused sufficient statistics against a plain loop: byte scores
// (bit-trick fast path for every G from 1 to 40, with and without a mask, rows with
// a byte > 1 falling back) and float scores, for 1 and 2 threads.
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
            x[(N / 2) * L * G] = 7;  // one row takes the general loop: flagged
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
                CHECK(flags.out_of_range_scores == (m[(N / 2) * L * G] ? 1 : 0));
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
