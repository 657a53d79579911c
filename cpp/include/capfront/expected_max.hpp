// Expected maxima of independent binomial and hypergeometric proportions (SPEC 3).
//
// Binomial:  E[max_l Y_l / G] = (1/G) sum_{k=1..G} [1 - prod_l F(k-1; G, p_l)],
//            Y_l ~ Bin(G, p_l) independent.
// Subsample: O_biased(g) = (1/g) sum_{k=1..g} [1 - prod_l P(X_l <= k-1)],
//            X_l ~ Hypergeom(G_l, S_l, g): successes in a size-g subset of the draws.
// Probability masses are built by ratio recursion outward from the mode and then
// normalised, so no lgamma/exp is needed and nothing overflows; the absolute error
// of a CDF value is O(G eps).
// Cost per row: O(L G) for the binomial, O(L g) per subsample size.
// Cells with n_draws == 0 (model not run) are left out of the max; a row with no
// observed cell gives NaN.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "parallel.hpp"

namespace capfront {

// Writes the Bin(G, p) CDF F[0..G] into cdf (size G + 1).
inline void binomial_cdf(std::int64_t G, double p, double* cdf) {
    if (!(p > 0.0)) {
        for (std::int64_t k = 0; k <= G; ++k) cdf[k] = 1.0;
        return;
    }
    if (!(p < 1.0)) {
        for (std::int64_t k = 0; k < G; ++k) cdf[k] = 0.0;
        cdf[G] = 1.0;
        return;
    }
    std::int64_t m = static_cast<std::int64_t>(std::floor((G + 1) * p));
    m = std::min(std::max<std::int64_t>(m, 0), G);
    const double r = p / (1.0 - p);
    cdf[m] = 1.0;
    for (std::int64_t k = m; k < G; ++k)
        cdf[k + 1] = cdf[k] * (static_cast<double>(G - k) / static_cast<double>(k + 1)) * r;
    for (std::int64_t k = m; k > 0; --k)
        cdf[k - 1] = cdf[k] * (static_cast<double>(k) / static_cast<double>(G - k + 1)) / r;
    // Normalise the masses (summing small tails first), then accumulate.
    double total = 0.0;
    for (std::int64_t k = 0; k < m; ++k) total += cdf[k];
    for (std::int64_t k = G; k >= m; --k) total += cdf[k];
    double acc = 0.0;
    for (std::int64_t k = 0; k <= G; ++k) {
        acc += cdf[k] / total;
        cdf[k] = std::min(acc, 1.0);
    }
    cdf[G] = 1.0;
}

// Writes P(X <= k), k = 0..g, for X ~ Hypergeom(population G, successes S, draws g).
inline void hypergeom_cdf(std::int64_t G, std::int64_t S, std::int64_t g, double* cdf) {
    const std::int64_t lo = std::max<std::int64_t>(0, g - (G - S));
    const std::int64_t hi = std::min(g, S);
    for (std::int64_t k = 0; k <= g; ++k) cdf[k] = 0.0;
    std::int64_t m = static_cast<std::int64_t>(
        std::floor(static_cast<double>((g + 1) * (S + 1)) / static_cast<double>(G + 2)));
    m = std::min(std::max(m, lo), hi);
    cdf[m] = 1.0;
    // P(k+1)/P(k) = (S-k)(g-k) / ((k+1)(G-S-g+k+1))
    for (std::int64_t k = m; k < hi; ++k)
        cdf[k + 1] = cdf[k] * (static_cast<double>(S - k) * static_cast<double>(g - k)) /
                     (static_cast<double>(k + 1) * static_cast<double>(G - S - g + k + 1));
    for (std::int64_t k = m; k > lo; --k)
        cdf[k - 1] = cdf[k] * (static_cast<double>(k) * static_cast<double>(G - S - g + k)) /
                     (static_cast<double>(S - k + 1) * static_cast<double>(g - k + 1));
    double total = 0.0;
    for (std::int64_t k = lo; k < m; ++k) total += cdf[k];
    for (std::int64_t k = hi; k >= m; --k) total += cdf[k];
    double acc = 0.0;
    for (std::int64_t k = 0; k <= g; ++k) {
        acc += cdf[k] / total;
        cdf[k] = std::min(acc, 1.0);
    }
    cdf[g] = 1.0;
}

// E[max_l Y_l / G_l] for one row; scratch is resized as needed.
inline double expected_max_binomial_row(const double* p, const std::int64_t* n_draws,
                                        std::size_t L, std::vector<double>& scratch,
                                        std::vector<double>& prod) {
    std::int64_t G = -1;
    bool equal = true;
    std::size_t present = 0;
    std::int64_t total = 0;
    for (std::size_t l = 0; l < L; ++l) {
        if (n_draws[l] <= 0) continue;
        ++present;
        total += n_draws[l];
        if (G < 0) G = n_draws[l];
        else if (n_draws[l] != G) equal = false;
    }
    if (present == 0) return std::numeric_limits<double>::quiet_NaN();
    if (equal) {
        scratch.resize(G + 1);
        prod.assign(G, 1.0);  // prod[k-1] = prod_l F_l(k-1)
        for (std::size_t l = 0; l < L; ++l) {
            if (n_draws[l] <= 0) continue;
            binomial_cdf(G, p[l], scratch.data());
            for (std::int64_t k = 0; k < G; ++k) prod[k] *= scratch[k];
        }
        double s = 0.0;
        for (std::int64_t k = 0; k < G; ++k) s += 1.0 - prod[k];
        return s / static_cast<double>(G);
    }
    // Ragged row: the max lives on the union of the grids {j / G_l}. Walk the
    // distinct support values v_1 < v_2 < ... and add (v_i - v_{i-1}) P(M >= v_i).
    struct Frac { std::int64_t a, b; };
    std::vector<Frac> support;
    support.reserve(total);
    std::vector<std::size_t> offset(L + 1, 0);
    for (std::size_t l = 0; l < L; ++l)
        offset[l + 1] = offset[l] + (n_draws[l] > 0 ? n_draws[l] + 1 : 0);
    scratch.resize(offset[L]);
    for (std::size_t l = 0; l < L; ++l) {
        if (n_draws[l] <= 0) continue;
        binomial_cdf(n_draws[l], p[l], scratch.data() + offset[l]);
        for (std::int64_t j = 1; j <= n_draws[l]; ++j) support.push_back({j, n_draws[l]});
    }
    std::sort(support.begin(), support.end(), [](const Frac& x, const Frac& y) {
        return x.a * y.b < y.a * x.b;
    });
    double s = 0.0;
    Frac prev{0, 1};
    for (const Frac& v : support) {
        if (v.a * prev.b == prev.a * v.b) continue;  // duplicate value
        double below = 1.0;  // P(M <= prev)
        for (std::size_t l = 0; l < L; ++l) {
            if (n_draws[l] <= 0) continue;
            const std::int64_t j = (prev.a * n_draws[l]) / prev.b;
            below *= scratch[offset[l] + j];
        }
        s += (static_cast<double>(v.a) / v.b - static_cast<double>(prev.a) / prev.b) *
             (1.0 - below);
        prev = v;
    }
    return s;
}

// out[r] = E[max_l Y_rl / G_rl] for R rows of L probabilities.
inline void expected_max_binomial(const double* p, const std::int64_t* n_draws,
                                  std::size_t R, std::size_t L, double* out) {
    parallel_blocks(R, 256, [&](std::size_t r0, std::size_t r1) {
        std::vector<double> scratch, prod;
        for (std::size_t r = r0; r < r1; ++r)
            out[r] = expected_max_binomial_row(p + r * L, n_draws + r * L, L, scratch, prod);
    });
}

// Per-row subsample curve values for each size in sizes; row_out has sizes.size() values.
inline void subsample_curve_row(const std::int64_t* successes, const std::int64_t* n_draws,
                                std::size_t L, const std::int64_t* sizes,
                                std::size_t n_sizes, std::vector<double>& scratch,
                                std::vector<double>& prod, double* row_out) {
    for (std::size_t j = 0; j < n_sizes; ++j) {
        const std::int64_t g = sizes[j];
        scratch.resize(g + 1);
        prod.assign(g, 1.0);
        bool any = false;
        for (std::size_t l = 0; l < L; ++l) {
            if (n_draws[l] <= 0) continue;
            any = true;
            hypergeom_cdf(n_draws[l], successes[l], g, scratch.data());
            for (std::int64_t k = 0; k < g; ++k) prod[k] *= scratch[k];
        }
        double s = 0.0;
        for (std::int64_t k = 0; k < g; ++k) s += 1.0 - prod[k];
        row_out[j] = any ? s / static_cast<double>(g) : std::numeric_limits<double>::quiet_NaN();
    }
}

// Mean over rows of the subsample curve; deterministic for any thread count.
// The caller guarantees 1 <= sizes[j] <= n_draws for every observed cell.
inline std::vector<double> subsample_curve(const std::int64_t* successes,
                                           const std::int64_t* n_draws, std::size_t N,
                                           std::size_t L, const std::int64_t* sizes,
                                           std::size_t n_sizes) {
    // One scratch pair per block would be enough; a thread_local keeps it simple.
    std::vector<double> sums = block_sum(N, n_sizes, [&](std::size_t n, double* row) {
        thread_local std::vector<double> scratch, prod;
        subsample_curve_row(successes + n * L, n_draws + n * L, L, sizes, n_sizes, scratch,
                            prod, row);
    });
    for (auto& v : sums) v /= static_cast<double>(N);
    return sums;
}

}  // namespace capfront
