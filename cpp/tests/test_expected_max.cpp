// C++ checks of the expected-max kernels against brute-force enumeration.
#include <capfront/expected_max.hpp>
#include <capfront/parallel.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "check.hpp"

static double binom_pmf(int G, int k, double p) {
    return std::exp(std::lgamma(G + 1.0) - std::lgamma(k + 1.0) - std::lgamma(G - k + 1.0)) *
           std::pow(p, k) * std::pow(1 - p, G - k);
}

// E[max(Y1/G1, Y2/G2)] by enumerating both binomials.
static double brute_max2(double p1, int G1, double p2, int G2) {
    double e = 0.0;
    for (int a = 0; a <= G1; ++a)
        for (int b = 0; b <= G2; ++b)
            e += binom_pmf(G1, a, p1) * binom_pmf(G2, b, p2) *
                 std::max(double(a) / G1, double(b) / G2);
    return e;
}

int main() {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> U(0.0, 1.0);
    for (int t = 0; t < 200; ++t) {
        const int G1 = 1 + static_cast<int>(rng() % 12);
        const int G2 = (t % 2) ? G1 : 1 + static_cast<int>(rng() % 12);
        const double p[2] = {U(rng), U(rng)};
        const std::int64_t g[2] = {G1, G2};
        double out = 0.0;
        capfront::expected_max_binomial(p, g, 1, 2, &out);
        CHECK(std::fabs(out - brute_max2(p[0], G1, p[1], G2)) < 1e-12);
    }
    // Large G (windowed CDFs): one model gives E[Y / G] = p; two models agree with
    // the dense CDF product built by multiply_binomial_cdf.
    for (const double p1 : {1e-9, 0.3, 0.5, 0.999999}) {
        const std::int64_t g1 = capfront::kMaxDraws;
        double out = 0.0;
        capfront::expected_max_binomial(&p1, &g1, 1, 1, &out);
        CHECK(std::fabs(out - p1) < 1e-12);
    }
    {
        const std::int64_t G = 200000;
        const double p2[2] = {0.3, 0.3004};
        const std::int64_t g2[2] = {G, G};
        double windowed = 0.0;
        capfront::expected_max_binomial(p2, g2, 1, 2, &windowed);
        capfront::BinomialFactors f;
        f.set(G);
        std::vector<double> buf(3 * (G + 1) + 1), prod(G, 1.0);
        for (const double pl : p2) capfront::multiply_binomial_cdf(G, pl, f, buf.data(), prod.data());
        double dense = 0.0;
        for (std::int64_t k = 0; k < G; ++k) dense += 1.0 - prod[k];
        CHECK(std::fabs(windowed - dense / G) < 1e-11);
    }
    // Hypergeometric CDFs end at 1 and are non-decreasing.
    std::vector<double> cdf(31);
    for (int S = 0; S <= 30; ++S) {
        capfront::hypergeom_cdf(30, S, 17, cdf.data());
        CHECK(std::fabs(cdf[17] - 1.0) < 1e-15);
        for (int k = 1; k <= 17; ++k) CHECK(cdf[k] + 1e-15 >= cdf[k - 1]);
    }
    // Lane-parallel rows (one G <= kLaneMaxDraws per row, 16 rows per block) agree
    // with the scalar walk from the mode, for runs of rows cut by other G, cells
    // not run, p in {0, 1/2, 1}, and one shared row of n_draws (nd_stride 0).
    {
        const std::size_t R = 203, L = 7;
        std::vector<double> p(R * L), lanes(R), shared(R);
        std::vector<std::int64_t> g(R * L);
        const double special[] = {0.0, 1.0, 0.5, 1e-300, 1.0 - 1e-16};
        for (std::size_t r = 0; r < R; ++r) {
            const std::int64_t G = r < 100 ? 1 + static_cast<std::int64_t>(r / 9) * 7
                                           : (r % 3 ? 1000 : 37);
            for (std::size_t l = 0; l < L; ++l) {
                p[r * L + l] = rng() % 4 ? U(rng) : special[rng() % 5];
                g[r * L + l] = rng() % 6 ? G : 0;
            }
            g[r * L] = G;
        }
        capfront::expected_max_binomial(p.data(), g.data(), R, L, lanes.data());
        std::vector<double> scratch, prod;
        for (std::size_t r = 0; r < R; ++r) {
            const double want = capfront::expected_max_binomial_row(
                p.data() + r * L, g.data() + r * L, L, scratch, prod);
            CHECK(std::fabs(lanes[r] - want) < 1e-13);
        }
        const std::vector<std::int64_t> row(L, 20), full(R * L, 20);
        capfront::expected_max_binomial(p.data(), row.data(), R, L, shared.data(), 0);
        capfront::expected_max_binomial(p.data(), full.data(), R, L, lanes.data());
        for (std::size_t r = 0; r < R; ++r) CHECK(shared[r] == lanes[r]);
    }
    // The subsample curve is bit-identical for 1 and 2 threads.
    const std::size_t N = 10000, L = 5;
    std::vector<std::int64_t> S(N * L), G(N * L, 20);
    for (auto& s : S) s = static_cast<std::int64_t>(rng() % 21);
    const std::vector<std::int64_t> sizes{1, 2, 5, 10, 20};
    capfront::set_num_threads(1);
    const auto c1 = capfront::subsample_curve(S.data(), G.data(), N, L, sizes.data(), 5);
    capfront::set_num_threads(2);
    const auto c2 = capfront::subsample_curve(S.data(), G.data(), N, L, sizes.data(), 5);
    for (int j = 0; j < 5; ++j) CHECK(c1[j] == c2[j]);
    std::printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
