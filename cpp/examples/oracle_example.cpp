// Naive and expected oracle of a tiny count table, without Python.
#include <capfront/expected_max.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
    // 3 prompts x 2 models, 10 draws per cell: successes per cell.
    const std::vector<std::int64_t> successes{9, 2, 4, 5, 0, 10};
    const std::vector<std::int64_t> n_draws(6, 10);
    const std::vector<std::int64_t> sizes{1, 5, 10};
    const auto curve = capfront::subsample_curve(successes.data(), n_draws.data(), 3, 2,
                                                 sizes.data(), sizes.size());
    // subsample_curve at g = G is the naive oracle: mean of (0.9, 0.5, 1.0).
    const double naive = (0.9 + 0.5 + 1.0) / 3.0;
    std::printf("O_biased(g) for g = 1, 5, 10: %.6f %.6f %.6f\n", curve[0], curve[1], curve[2]);
    // Expected naive oracle if the observed proportions were the truth.
    std::vector<double> p{0.9, 0.2, 0.4, 0.5, 0.0, 1.0};
    std::vector<double> e(3);
    capfront::expected_max_binomial(p.data(), n_draws.data(), 3, 2, e.data());
    std::printf("E[max | p_hat] per prompt: %.6f %.6f %.6f\n", e[0], e[1], e[2]);
    const bool ok = std::fabs(curve[2] - naive) < 1e-12 && curve[0] >= curve[1] &&
                    curve[1] >= curve[2] && std::fabs(e[2] - 1.0) < 1e-12;
    std::printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
