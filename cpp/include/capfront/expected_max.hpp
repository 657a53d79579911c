// Expected maxima of independent binomial and hypergeometric proportions (design §3).
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
// Large G (above kDenseMaxDraws): each CDF is built only on a window around the
// mean outside which it is 0 or 1 to within 1e-40 (Bernstein's inequality), so time
// and memory per cell are O(sqrt(G)) instead of O(G); the callers cap G at
// kMaxDraws = 2^31 - 1, which keeps j * G products of the ragged walk in int64.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "parallel.hpp"

namespace capfront {

// Ratios of consecutive binomial coefficients for one G, shared by every cell with
// that G: up[k] = C(G, k+1) / C(G, k) = (G-k)/(k+1), down[k] = C(G, k-1) / C(G, k)
// = k/(G-k+1). With them the CDF recursion below needs no division.
// padded_up/padded_down hold the same values at offset G + 1, with zeros on
// [-(G+1), 0) and (G, 2G+1]: chains that run past either end then just write zeros.
struct BinomialFactors {
    std::int64_t G = -1;
    std::vector<double> up, down, padded_up, padded_down;
    void set(std::int64_t g) {
        if (g == G) return;
        G = g;
        up.resize(g + 1);
        down.resize(g + 1);
        padded_up.assign(3 * (g + 1) + 1, 0.0);
        padded_down.assign(3 * (g + 1) + 1, 0.0);
        for (std::int64_t k = 0; k <= g; ++k) {
            up[k] = static_cast<double>(g - k) / static_cast<double>(k + 1);
            down[k] = static_cast<double>(k) / static_cast<double>(g - k + 1);
            padded_up[k + g + 1] = up[k];
            padded_down[k + g + 1] = down[k];
        }
    }
};

namespace detail {

// Unnormalised Bin(G, p) masses into pmf[0..G] (pmf[mode] = 1, ratio recursion
// outward from the mode, so nothing under- or overflows near the bulk). The up and
// down chains are independent, so they overlap in the pipeline. 0 < p < 1.
inline void binomial_masses(std::int64_t G, double p, const double* up,
                            const double* down, double* pmf) {
    // p >= 0: truncation is floor (and needs no libm call without SSE4.1)
    std::int64_t m = static_cast<std::int64_t>(static_cast<double>(G + 1) * p);
    m = std::min(std::max<std::int64_t>(m, 0), G);
    const double r = p / (1.0 - p);
    const double rinv = (1.0 - p) / p;
    pmf[m] = 1.0;
    for (std::int64_t k = m; k < G; ++k) pmf[k + 1] = pmf[k] * (up[k] * r);
    for (std::int64_t k = m; k > 0; --k) pmf[k - 1] = pmf[k] * (down[k] * rinv);
}

}  // namespace detail

// prod[k] *= F(k; G, p) for k = 0..G-1, F the Bin(G, p) CDF, with exactly the
// arithmetic of binomial_cdf (same results, bit for bit), but branch-free: both
// chains run G steps from the mode into the zero padding, so no loop bound depends
// on p (no mispredicted exits) and the two chains overlap. buf has 3 (G+1) + 1
// entries; factors must be set for G.
inline void multiply_binomial_cdf(std::int64_t G, double p, const BinomialFactors& f,
                                  double* buf, double* prod) {
    if (!(p > 0.0)) return;  // F = 1
    if (!(p < 1.0)) {         // F(k) = 0 for k < G
        for (std::int64_t k = 0; k < G; ++k) prod[k] *= 0.0;
        return;
    }
    const std::int64_t off = G + 1;
    const double* up = f.padded_up.data() + off;
    const double* down = f.padded_down.data() + off;
    double* pmf = buf + off;
    std::int64_t m = static_cast<std::int64_t>(static_cast<double>(G + 1) * p);
    m = std::min(std::max<std::int64_t>(m, 0), G);
    const double r = p / (1.0 - p);
    const double rinv = (1.0 - p) / p;
    pmf[m] = 1.0;
    double a = 1.0, b = 1.0;
    for (std::int64_t d = 0; d < G; ++d) {
        a = a * (up[m + d] * r);
        pmf[m + d + 1] = a;
        b = b * (down[m - d] * rinv);
        pmf[m - d - 1] = b;
    }
    for (std::int64_t k = 1; k <= G; ++k) pmf[k] += pmf[k - 1];
    const double inv = 1.0 / pmf[G];
    for (std::int64_t k = 0; k < G; ++k) prod[k] *= std::min(pmf[k] * inv, 1.0);
}

// Writes the Bin(G, p) CDF F[0..G] into cdf (size G + 1); factors, if given, must
// be set for G (they only save the divisions; results are identical).
inline void binomial_cdf(std::int64_t G, double p, double* cdf,
                         const BinomialFactors* factors = nullptr) {
    if (!(p > 0.0)) {
        for (std::int64_t k = 0; k <= G; ++k) cdf[k] = 1.0;
        return;
    }
    if (!(p < 1.0)) {
        for (std::int64_t k = 0; k < G; ++k) cdf[k] = 0.0;
        cdf[G] = 1.0;
        return;
    }
    BinomialFactors local;
    if (!factors || factors->G != G) {
        local.set(G);
        factors = &local;
    }
    detail::binomial_masses(G, p, factors->up.data(), factors->down.data(), cdf);
    // Running sums, then normalise by the last one (the total): F(k) keeps full
    // relative accuracy in the lower tail and O(eps) absolute error near 1.
    for (std::int64_t k = 1; k <= G; ++k) cdf[k] += cdf[k - 1];
    const double inv = 1.0 / cdf[G];
    for (std::int64_t k = 0; k < G; ++k) cdf[k] = std::min(cdf[k] * inv, 1.0);
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

// Largest n_draws the expected-max kernel takes (callers check it).
constexpr std::int64_t kMaxDraws = 2147483647;  // 2^31 - 1
// Above this G the windowed path is used (the dense one is exact to O(G eps)).
constexpr std::int64_t kDenseMaxDraws = std::int64_t{1} << 16;

// Window [lo, hi] of Bin(G, p) outside which the CDF is 0 (k < lo) or 1 (k >= hi)
// to within 1e-40: Bernstein's inequality P(|Y - Gp| >= t) <= 2 exp(-t^2 / (2 (v +
// t / 3))), v = G p (1 - p), with the exponent E = 92 solved for t.
struct BinomialWindow {
    std::int64_t lo, hi;
};

inline BinomialWindow binomial_window(std::int64_t G, double p) {
    if (!(p > 0.0)) return {0, 0};  // F = 1 from k = 0
    if (!(p < 1.0)) return {G, G};  // F = 0 below G
    constexpr double E = 92.0;
    const double mu = static_cast<double>(G) * p;
    const double v = mu * (1.0 - p);
    const double t = E / 3.0 + std::sqrt(E * E / 9.0 + 2.0 * E * v);
    const std::int64_t lo = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::floor(mu - t)));
    const std::int64_t hi = std::min<std::int64_t>(G, static_cast<std::int64_t>(std::ceil(mu + t)));
    return {lo, std::max(lo, hi)};
}

// cdf[i] = F(w.lo + i; G, p) for i = 0..w.hi - w.lo (size w.hi - w.lo + 1): masses by
// ratio recursion from the mode inside the window, normalised by their sum (the
// mass outside the window is below 2e-40). 0 < p < 1.
inline void binomial_cdf_window(std::int64_t G, double p, BinomialWindow w, double* cdf) {
    const std::int64_t lo = w.lo, hi = w.hi;
    std::int64_t m = static_cast<std::int64_t>(static_cast<double>(G + 1) * p);
    m = std::min(std::max(m, lo), hi);
    const double r = p / (1.0 - p);
    const double rinv = (1.0 - p) / p;
    double* pmf = cdf - lo;  // pmf[k] for k in [lo, hi]
    pmf[m] = 1.0;
    for (std::int64_t k = m; k < hi; ++k)
        pmf[k + 1] = pmf[k] * (static_cast<double>(G - k) / static_cast<double>(k + 1) * r);
    for (std::int64_t k = m; k > lo; --k)
        pmf[k - 1] = pmf[k] * (static_cast<double>(k) / static_cast<double>(G - k + 1) * rinv);
    for (std::int64_t k = lo + 1; k <= hi; ++k) pmf[k] += pmf[k - 1];
    const double inv = 1.0 / pmf[hi];
    for (std::int64_t k = lo; k < hi; ++k) pmf[k] = std::min(pmf[k] * inv, 1.0);
    pmf[hi] = 1.0;
}

namespace detail {

// F(k) of a windowed CDF (0 below the window, 1 from its top).
inline double window_cdf_at(const double* cdf, BinomialWindow w, std::int64_t k) {
    if (k < w.lo) return 0.0;
    if (k >= w.hi) return 1.0;
    return cdf[k - w.lo];
}

// Windows and windowed CDFs of a row's observed cells; cdf of cell l starts at
// scratch[offset[l]].
inline void row_windows(const double* p, const std::int64_t* n_draws, std::size_t L,
                        std::vector<BinomialWindow>& win, std::vector<std::size_t>& offset,
                        std::vector<double>& scratch) {
    win.assign(L, BinomialWindow{0, 0});
    offset.assign(L + 1, 0);
    for (std::size_t l = 0; l < L; ++l) {
        std::size_t need = 0;
        if (n_draws[l] > 0) {
            win[l] = binomial_window(n_draws[l], p[l]);
            need = static_cast<std::size_t>(win[l].hi - win[l].lo) + 1;
        }
        offset[l + 1] = offset[l] + need;
    }
    scratch.resize(offset[L]);
    for (std::size_t l = 0; l < L; ++l)
        if (n_draws[l] > 0 && p[l] > 0.0 && p[l] < 1.0)
            binomial_cdf_window(n_draws[l], p[l], win[l], scratch.data() + offset[l]);
}

// The windowed version of expected_max_binomial_row: with x_lo = max_l lo_l / G_l
// and x_hi = max_l hi_l / G_l, P(max > x) is 1 below x_lo and 0 from x_hi on, so
// E[max] = x_lo + the integral of P(max > x) over [x_lo, x_hi], a sum over the grid
// points j / G_l inside the windows.
inline double expected_max_windowed_row(const double* p, const std::int64_t* n_draws,
                                        std::size_t L, bool equal, std::int64_t G,
                                        std::vector<double>& scratch,
                                        std::vector<double>& prod) {
    std::vector<BinomialWindow> win;
    std::vector<std::size_t> offset;
    row_windows(p, n_draws, L, win, offset, scratch);
    if (equal) {
        std::int64_t A = -1, B = -1;
        for (std::size_t l = 0; l < L; ++l) {
            if (n_draws[l] <= 0) continue;
            A = std::max(A, win[l].lo);
            B = std::max(B, win[l].hi);
        }
        prod.assign(static_cast<std::size_t>(B - A), 1.0);  // prod_l F_l(A + i)
        for (std::size_t l = 0; l < L; ++l) {
            if (n_draws[l] <= 0) continue;
            const double* cdf = scratch.data() + offset[l];
            for (std::int64_t k = A; k < B; ++k) prod[k - A] *= window_cdf_at(cdf, win[l], k);
        }
        double s = 0.0;
        for (std::int64_t k = A; k < B; ++k) s += 1.0 - prod[k - A];
        return (static_cast<double>(A) + s) / static_cast<double>(G);
    }
    struct Frac { std::int64_t a, b; };
    auto less = [](const Frac& x, const Frac& y) { return x.a * y.b < y.a * x.b; };
    Frac A{0, 1}, B{0, 1};
    for (std::size_t l = 0; l < L; ++l) {
        if (n_draws[l] <= 0) continue;
        const Frac lo{win[l].lo, n_draws[l]}, hi{win[l].hi, n_draws[l]};
        if (less(A, lo)) A = lo;
        if (less(B, hi)) B = hi;
    }
    std::vector<Frac> support{A, B};
    for (std::size_t l = 0; l < L; ++l) {
        if (n_draws[l] <= 0) continue;
        for (std::int64_t j = win[l].lo + 1; j <= win[l].hi; ++j) {
            const Frac v{j, n_draws[l]};
            if (less(A, v) && less(v, B)) support.push_back(v);
        }
    }
    std::sort(support.begin(), support.end(), less);
    double s = static_cast<double>(A.a) / static_cast<double>(A.b);
    Frac prev = A;
    for (const Frac& v : support) {
        if (!less(prev, v)) continue;  // A itself, or a duplicate value
        double below = 1.0;  // P(max <= prev)
        for (std::size_t l = 0; l < L; ++l) {
            if (n_draws[l] <= 0) continue;
            below *= window_cdf_at(scratch.data() + offset[l], win[l],
                                   (prev.a * n_draws[l]) / prev.b);
        }
        s += (static_cast<double>(v.a) / v.b - static_cast<double>(prev.a) / prev.b) *
             (1.0 - below);
        prev = v;
    }
    return s;
}

}  // namespace detail

// E[max_l Y_l / G_l] for one row; scratch is resized as needed.
inline double expected_max_binomial_row(const double* p, const std::int64_t* n_draws,
                                        std::size_t L, std::vector<double>& scratch,
                                        std::vector<double>& prod,
                                        BinomialFactors& factors) {
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
    std::int64_t g_max = 0;
    for (std::size_t l = 0; l < L; ++l) g_max = std::max(g_max, n_draws[l]);
    if (g_max > kDenseMaxDraws)
        return detail::expected_max_windowed_row(p, n_draws, L, equal, G, scratch, prod);
    if (equal) {
        scratch.resize(3 * (G + 1) + 1);
        prod.assign(G, 1.0);  // prod[k-1] = prod_l F_l(k-1)
        factors.set(G);
        for (std::size_t l = 0; l < L; ++l) {
            if (n_draws[l] <= 0) continue;
            multiply_binomial_cdf(G, p[l], factors, scratch.data(), prod.data());
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

inline double expected_max_binomial_row(const double* p, const std::int64_t* n_draws,
                                        std::size_t L, std::vector<double>& scratch,
                                        std::vector<double>& prod) {
    BinomialFactors factors;
    return expected_max_binomial_row(p, n_draws, L, scratch, prod, factors);
}

// ---------------------------------------------------------------- lane-parallel rows
//
// Rows whose observed cells all have one G <= kLaneMaxDraws (the usual case) are
// computed kLanes rows at a time, one row per SIMD lane, for one model l at a time.
// Per cell, with q = min(p, 1 - p) <= 1/2 and r = q / (1 - q), the unnormalised
// masses of Bin(G, q) are e[0] = 1, e[i] = e[i-1] (c_i r), c_i = (G - i + 1) / i:
// every lane walks the same i = 0..G, so the walk has no lane-dependent index and
// no branch, and the lanes' chains overlap (the scalar walk from the mode is
// latency-bound). They grow by at most (1 - q)^-G <= 2^G, finite for G <= 1023.
// F(k) = P(Y <= k) is then the running sum of e[0..k] (p <= 1/2) or, by the
// symmetry Y = G - Y', of e[G], e[G-1], ..., e[G-k] (p > 1/2), over the total:
// both sums start in the small tail, so each F keeps its relative accuracy.
// p = 0 (and cells not run) give e = (1, 0, ..., 0), F = 1; p = 1 gives F = 0
// below G. Results are exact to O(G eps) like the scalar path, and each lane's
// arithmetic depends only on its own row, so they do not depend on which rows
// share a block or on the thread count.

// Largest G of the lane-parallel path (the masses stay below 2^G).
constexpr std::int64_t kLaneMaxDraws = 1000;
// Rows per lane block: 16 doubles are 4 AVX2 vectors, enough independent chains
// to hide the multiply and add latencies.
constexpr std::size_t kLanes = 16;

#if defined(__GNUC__) && !defined(__clang__)
#define CAPFRONT_EM_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define CAPFRONT_EM_NO_CONTRACT
#endif

namespace detail {

// The common n_draws of a row's observed cells when the row can take the lane
// path (1 <= G <= kLaneMaxDraws, every observed cell with that G), else -1.
inline std::int64_t lane_draws(const std::int64_t* n_draws, std::size_t L) {
    std::int64_t G = -1;
    for (std::size_t l = 0; l < L; ++l) {
        const std::int64_t g = n_draws[l];
        if (g <= 0) continue;
        if (G < 0) G = g;
        else if (g != G) return -1;
    }
    return G <= kLaneMaxDraws ? G : -1;
}

// GCC/Clang vector types: four doubles, lowered to two SSE2 operations in the
// baseline build and to one AVX2 operation in the avx2 clone below.
typedef double em_vd __attribute__((vector_size(32)));
typedef long long em_vi __attribute__((vector_size(32)));
constexpr std::size_t kLaneVec = 4;                  // doubles per em_vd
constexpr std::size_t kLaneVecs = kLanes / kLaneVec;  // em_vd per lane block

// E[max] of w <= kLanes consecutive rows (p's row stride L, n_draws' nd_stride: L,
// or 0 when every row has the same n_draws) that share lane_draws G; c[i] = (G -
// i + 1) / i for i = 1..G; e has (G + 1) kLanes doubles, prod G kLanes (both
// 32-byte aligned). Lanes past w compute a dummy row (p = 0), not written.
CAPFRONT_EM_NO_CONTRACT inline __attribute__((always_inline)) void expected_max_lanes_body(
    const double* p, const std::int64_t* n_draws, std::size_t L, std::size_t nd_stride,
    std::size_t w, std::int64_t G, const double* c, double* e_raw, double* prod_raw,
    double* out) {
    constexpr std::size_t V = kLaneVecs;
    const std::size_t K = static_cast<std::size_t>(G);
    em_vd* e = reinterpret_cast<em_vd*>(e_raw);        // e[i * V + v]
    em_vd* prod = reinterpret_cast<em_vd*>(prod_raw);  // prod[k * V + v]
    const em_vd one = {1.0, 1.0, 1.0, 1.0};
    const em_vd zero = {0.0, 0.0, 0.0, 0.0};
    for (std::size_t i = 0; i < K * V; ++i) prod[i] = one;
    for (std::size_t l = 0; l < L; ++l) {
        em_vd r[V], inv[V], tot[V], acc[V];
        em_vi flip[V];
        for (std::size_t v = 0; v < V; ++v) {
            alignas(32) double pv[kLaneVec];
            for (std::size_t t = 0; t < kLaneVec; ++t) {
                const std::size_t j = v * kLaneVec + t;
                pv[t] = j < w && n_draws[j * nd_stride + l] > 0 ? p[j * L + l] : 0.0;
            }
            em_vd pj;
            std::memcpy(&pj, pv, sizeof pj);
            const em_vd half = {0.5, 0.5, 0.5, 0.5};
            flip[v] = pj > half;
            const em_vd q = flip[v] ? one - pj : pj;  // exact for pj in [1/2, 1]
            r[v] = q / (one - q);
            e[v] = one;
            tot[v] = one;
            acc[v] = zero;
        }
        for (std::size_t i = 1; i <= K; ++i) {
            const double ci = c[i];
            for (std::size_t v = 0; v < V; ++v) {
                const em_vd x = e[(i - 1) * V + v] * (ci * r[v]);
                e[i * V + v] = x;
                tot[v] += x;
            }
        }
        for (std::size_t v = 0; v < V; ++v) inv[v] = one / tot[v];
        for (std::size_t k = 0; k < K; ++k) {
            for (std::size_t v = 0; v < V; ++v) {
                acc[v] += flip[v] ? e[(K - k) * V + v] : e[k * V + v];
                const em_vd f = acc[v] * inv[v];
                prod[k * V + v] *= f > one ? one : f;
            }
        }
    }
    em_vd s[V];
    for (std::size_t v = 0; v < V; ++v) s[v] = zero;
    for (std::size_t k = 0; k < K; ++k)
        for (std::size_t v = 0; v < V; ++v) s[v] += one - prod[k * V + v];
    alignas(32) double sums[kLanes];
    std::memcpy(sums, s, sizeof sums);
    for (std::size_t j = 0; j < w; ++j) out[j] = sums[j] / static_cast<double>(G);
}

// The first 32-byte aligned address at or after ptr (ptr has 4 doubles of slack).
inline double* align32(double* ptr) {
    const auto a = reinterpret_cast<std::uintptr_t>(ptr);
    return reinterpret_cast<double*>((a + 31) & ~std::uintptr_t{31});
}

using LanesFn = void (*)(const double*, const std::int64_t*, std::size_t, std::size_t,
                         std::size_t, std::int64_t, const double*, double*, double*,
                         double*);

#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__)
#define CAPFRONT_EM_X86 1
// The same body compiled for AVX2 (the build targets baseline x86-64), chosen at
// run time. No FMA: contraction is off, so both give the same bits.
__attribute__((target("avx2"))) CAPFRONT_EM_NO_CONTRACT inline void expected_max_lanes_avx2(
    const double* p, const std::int64_t* n_draws, std::size_t L, std::size_t nd_stride,
    std::size_t w, std::int64_t G, const double* c, double* e, double* prod, double* out) {
    expected_max_lanes_body(p, n_draws, L, nd_stride, w, G, c, e, prod, out);
}
#endif

CAPFRONT_EM_NO_CONTRACT inline void expected_max_lanes_sse2(
    const double* p, const std::int64_t* n_draws, std::size_t L, std::size_t nd_stride,
    std::size_t w, std::int64_t G, const double* c, double* e, double* prod, double* out) {
    expected_max_lanes_body(p, n_draws, L, nd_stride, w, G, c, e, prod, out);
}

inline LanesFn expected_max_lanes() {
#ifdef CAPFRONT_EM_X86
    static const LanesFn fn = __builtin_cpu_supports("avx2") ? &expected_max_lanes_avx2
                                                             : &expected_max_lanes_sse2;
    return fn;
#else
    return &expected_max_lanes_sse2;
#endif
}

}  // namespace detail

// out[r] = E[max_l Y_rl / G_rl] for R rows of L probabilities; n_draws has R rows
// (nd_stride = L) or one row shared by all (nd_stride = 0).
inline void expected_max_binomial(const double* p, const std::int64_t* n_draws,
                                  std::size_t R, std::size_t L, double* out,
                                  std::size_t nd_stride) {
    const detail::LanesFn lanes = detail::expected_max_lanes();
    parallel_blocks(R, 256, [&](std::size_t r0, std::size_t r1) {
        std::vector<double> scratch, prod;
        BinomialFactors factors;
        std::vector<double> c, e, lane_prod;
        std::int64_t c_for = -1;
        std::size_t r = r0;
        while (r < r1) {
            const std::int64_t* nd = n_draws + r * nd_stride;
            const std::int64_t G = detail::lane_draws(nd, L);
            if (G < 0) {  // ragged, huge G or no observed cell: one row at a time
                out[r] = expected_max_binomial_row(p + r * L, nd, L, scratch, prod, factors);
                ++r;
                continue;
            }
            std::size_t w = 1;
            while (w < kLanes && r + w < r1 &&
                   (nd_stride == 0 || detail::lane_draws(nd + w * nd_stride, L) == G))
                ++w;
            if (G != c_for) {
                c_for = G;
                c.assign(static_cast<std::size_t>(G) + 1, 0.0);
                for (std::int64_t i = 1; i <= G; ++i)
                    c[i] = static_cast<double>(G - i + 1) / static_cast<double>(i);
                // + 4 doubles of slack to align both to 32 bytes
                e.resize((static_cast<std::size_t>(G) + 1) * kLanes + 4);
                lane_prod.resize(static_cast<std::size_t>(G) * kLanes + 4);
            }
            lanes(p + r * L, nd, L, nd_stride, w, G, c.data(), detail::align32(e.data()),
                  detail::align32(lane_prod.data()), out + r);
            r += w;
        }
    });
}

inline void expected_max_binomial(const double* p, const std::int64_t* n_draws,
                                  std::size_t R, std::size_t L, double* out) {
    expected_max_binomial(p, n_draws, R, L, out, L);
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

// CDF tables of Hypergeom(G, S, g) for one population size G, every S = 0..G and
// every requested size g: each cell's CDF is then a lookup instead of an O(g)
// recursion. Filled by hypergeom_cdf itself, so results are identical either way.
struct HypergeomTable {
    std::size_t stride = 0;           // sum_j (sizes[j] + 1)
    std::vector<std::size_t> offset;  // start of size j within one S block
    std::vector<double> cdf;          // (G + 1) * stride
    const double* get(std::int64_t S, std::size_t j) const {
        return cdf.data() + static_cast<std::size_t>(S) * stride + offset[j];
    }
};

// Mean over rows of the subsample curve; deterministic for any thread count.
// The caller guarantees 0 <= successes <= n_draws and 1 <= sizes[j] <= n_draws for
// every observed cell (n_draws > 0).
// Cost: O(N L sum_j g_j) multiplies, plus O(G sum_j g_j) per distinct G for the
// tables (kept below ~16 MB; larger G fall back to the O(g) recursion per cell).
inline std::vector<double> subsample_curve(const std::int64_t* successes,
                                           const std::int64_t* n_draws, std::size_t N,
                                           std::size_t L, const std::int64_t* sizes,
                                           std::size_t n_sizes) {
    std::size_t stride = 0;
    std::vector<std::size_t> offset(n_sizes);
    for (std::size_t j = 0; j < n_sizes; ++j) {
        offset[j] = stride;
        stride += static_cast<std::size_t>(sizes[j]) + 1;
    }
    // One table per distinct observed G, while the total stays within budget.
    constexpr std::size_t kTableBudget = std::size_t{1} << 21;  // doubles
    constexpr std::int64_t kMaxIndexedG = std::int64_t{1} << 20;
    std::int64_t g_max = 0;
    for (std::size_t i = 0; i < N * L; ++i) g_max = std::max(g_max, n_draws[i]);
    std::vector<HypergeomTable> tables;
    std::vector<std::int32_t> table_of;  // G -> index into tables, or -1
    if (g_max <= kMaxIndexedG) {
        table_of.assign(static_cast<std::size_t>(g_max) + 1, -1);
        std::vector<char> seen(static_cast<std::size_t>(g_max) + 1, 0);
        for (std::size_t i = 0; i < N * L; ++i)
            if (n_draws[i] > 0) seen[static_cast<std::size_t>(n_draws[i])] = 1;
        std::size_t used = 0;
        for (std::int64_t G = 1; G <= g_max; ++G) {
            if (!seen[G]) continue;
            const std::size_t need = static_cast<std::size_t>(G + 1) * stride;
            if (used + need > kTableBudget) continue;
            used += need;
            HypergeomTable t;
            t.stride = stride;
            t.offset = offset;
            t.cdf.resize(need);
            for (std::int64_t S = 0; S <= G; ++S)
                for (std::size_t j = 0; j < n_sizes; ++j)
                    if (sizes[j] <= G)
                        hypergeom_cdf(G, S, sizes[j],
                                      t.cdf.data() + static_cast<std::size_t>(S) * stride +
                                          offset[j]);
            table_of[G] = static_cast<std::int32_t>(tables.size());
            tables.push_back(std::move(t));
        }
    }
    std::vector<double> sums = block_sum(N, n_sizes, [&](std::size_t n, double* row) {
        thread_local std::vector<double> scratch, prod;
        const std::int64_t* S = successes + n * L;
        const std::int64_t* G = n_draws + n * L;
        for (std::size_t j = 0; j < n_sizes; ++j) {
            const std::int64_t g = sizes[j];
            prod.assign(g, 1.0);
            bool any = false;
            for (std::size_t l = 0; l < L; ++l) {
                if (G[l] <= 0) continue;
                any = true;
                const double* cdf;
                const std::int32_t t =
                    G[l] <= g_max && !table_of.empty() ? table_of[G[l]] : -1;
                if (t >= 0) {
                    cdf = tables[t].get(S[l], j);
                } else {
                    scratch.resize(g + 1);
                    hypergeom_cdf(G[l], S[l], g, scratch.data());
                    cdf = scratch.data();
                }
                for (std::int64_t k = 0; k < g; ++k) prod[k] *= cdf[k];
            }
            double s = 0.0;
            for (std::int64_t k = 0; k < g; ++k) s += 1.0 - prod[k];
            row[j] = any ? s / static_cast<double>(g) : std::numeric_limits<double>::quiet_NaN();
        }
    });
    for (auto& v : sums) v /= static_cast<double>(N);
    return sums;
}

}  // namespace capfront
