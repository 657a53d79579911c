// Kernels of the debiased oracle (design §4): per-prompt subsample curves, the exact
// expected cross-fit oracle, and the E-step / posterior expected maximum of the
// latent-difficulty model. Pure C++17, no Python headers.
//
// Every kernel loops over prompts in fixed blocks (parallel.hpp) and writes only to
// its own rows, or reduces per-block partials in block order, so results are
// bit-identical for any thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "expected_max.hpp"
#include "parallel.hpp"

namespace capfront {

// parallel_blocks for work worth the threads: below `min_work` units the blocks run
// serially (same block boundaries, so the same results), since spawning threads on a
// loaded machine costs more than the work.
template <class Body>
void parallel_blocks_min(std::size_t n, std::size_t grain, double work, Body&& body) {
    constexpr double kMinWork = 2e6;
    if (work < kMinWork) {
        grain = std::max<std::size_t>(1, grain);
        for (std::size_t b0 = 0; b0 < n; b0 += grain) body(b0, std::min(n, b0 + grain));
        return;
    }
    parallel_blocks(n, grain, std::forward<Body>(body));
}

// CDFs of Hypergeom(G, S, g) for every observed draw count G, every S = 0..G and
// every size g in `sizes` (g <= G), tabulated once per call: a cell's CDF is then a
// look-up instead of an O(g) recursion with divisions. Filled by hypergeom_cdf itself,
// so results are identical either way. Draw counts whose tables would exceed the
// budget are left out (get() returns nullptr: compute the CDF directly).
class HypergeomCdfTables {
  public:
    HypergeomCdfTables(const std::int64_t* n_draws, std::size_t n_cells,
                       std::vector<std::int64_t> sizes)
        : sizes_(std::move(sizes)) {
        std::int64_t g_max = 0;
        for (std::size_t i = 0; i < n_cells; ++i) g_max = std::max(g_max, n_draws[i]);
        if (g_max > (std::int64_t{1} << 20)) return;
        index_.assign(static_cast<std::size_t>(g_max) + 1, -1);
        std::vector<char> seen(static_cast<std::size_t>(g_max) + 1, 0);
        for (std::size_t i = 0; i < n_cells; ++i)
            if (n_draws[i] > 0) seen[static_cast<std::size_t>(n_draws[i])] = 1;
        stride_ = 0;
        offset_.resize(sizes_.size());
        for (std::size_t j = 0; j < sizes_.size(); ++j) {
            offset_[j] = stride_;
            stride_ += static_cast<std::size_t>(std::max<std::int64_t>(sizes_[j], 0)) + 1;
        }
        constexpr std::size_t kBudget = std::size_t{1} << 22;  // doubles
        std::size_t used = 0;
        for (std::int64_t G = 1; G <= g_max; ++G) {
            if (!seen[static_cast<std::size_t>(G)]) continue;
            const std::size_t need = static_cast<std::size_t>(G + 1) * stride_;
            if (used + need > kBudget) continue;
            index_[static_cast<std::size_t>(G)] = static_cast<std::int64_t>(used);
            used += need;
        }
        cdf_.assign(used, 0.0);
        for (std::int64_t G = 1; G <= g_max; ++G) {
            const std::int64_t o = index_[static_cast<std::size_t>(G)];
            if (o < 0) continue;
            for (std::int64_t S = 0; S <= G; ++S)
                for (std::size_t j = 0; j < sizes_.size(); ++j)
                    if (sizes_[j] >= 0 && sizes_[j] <= G)
                        hypergeom_cdf(G, S, sizes_[j],
                                      cdf_.data() + static_cast<std::size_t>(o) +
                                          static_cast<std::size_t>(S) * stride_ + offset_[j]);
        }
    }
    // CDF (sizes[j] + 1 values) of Hypergeom(G, S, sizes[j]), or nullptr
    const double* get(std::int64_t G, std::int64_t S, std::size_t j) const {
        if (j >= sizes_.size() || G < 0 || static_cast<std::size_t>(G) >= index_.size())
            return nullptr;
        const std::int64_t o = index_[static_cast<std::size_t>(G)];
        if (o < 0 || sizes_[j] > G) return nullptr;
        return cdf_.data() + static_cast<std::size_t>(o) + static_cast<std::size_t>(S) * stride_ +
               offset_[j];
    }
    std::size_t size_index(std::int64_t g) const {
        for (std::size_t j = 0; j < sizes_.size(); ++j)
            if (sizes_[j] == g) return j;
        return sizes_.size();
    }

  private:
    std::vector<std::int64_t> sizes_;
    std::vector<std::int64_t> index_;  // G -> offset into cdf_, -1: not tabulated
    std::vector<std::size_t> offset_;
    std::size_t stride_ = 0;
    std::vector<double> cdf_;
};

// out[n * n_sizes + j] = O_biased(sizes[j]) for prompt n alone (design §3):
// (1/g) sum_{a < g} (1 - prod_l P(X_l <= a)), X_l ~ Hypergeom(G_l, S_l, g).
// Cost O(N L sum_j g_j) multiplies plus the CDF tables; memory: the output.
inline void subsample_curve_rows(const std::int64_t* successes, const std::int64_t* n_draws,
                                 std::size_t N, std::size_t L, const std::int64_t* sizes,
                                 std::size_t n_sizes, double* out) {
    double work = 0.0;
    for (std::size_t j = 0; j < n_sizes; ++j) work += static_cast<double>(sizes[j]);
    work *= static_cast<double>(N * L);
    const HypergeomCdfTables tables(n_draws, N * L,
                                    std::vector<std::int64_t>(sizes, sizes + n_sizes));
    parallel_blocks_min(N, 256, work, [&](std::size_t r0, std::size_t r1) {
        std::vector<double> scratch, prod;
        for (std::size_t n = r0; n < r1; ++n) {
            const std::int64_t* S = successes + n * L;
            const std::int64_t* G = n_draws + n * L;
            double* row = out + n * n_sizes;
            for (std::size_t j = 0; j < n_sizes; ++j) {
                const std::int64_t g = sizes[j];
                prod.assign(static_cast<std::size_t>(g), 1.0);
                bool any = false;
                for (std::size_t l = 0; l < L; ++l) {
                    if (G[l] <= 0) continue;
                    any = true;
                    const double* cdf = tables.get(G[l], S[l], j);
                    if (cdf == nullptr) {
                        scratch.resize(static_cast<std::size_t>(g) + 1);
                        hypergeom_cdf(G[l], S[l], g, scratch.data());
                        cdf = scratch.data();
                    }
                    for (std::int64_t k = 0; k < g; ++k) prod[k] *= cdf[k];
                }
                double sum = 0.0;
                for (std::int64_t k = 0; k < g; ++k) sum += 1.0 - prod[k];
                row[j] = any ? sum / static_cast<double>(g)
                             : std::numeric_limits<double>::quiet_NaN();
            }
        }
    });
}

// Gauss-Legendre rules on [0, 1] with q = 1..q_max nodes: nodes[q] and weights[q].
struct GaussLegendre01 {
    std::vector<std::vector<double>> nodes, weights;
    explicit GaussLegendre01(std::size_t q_max) : nodes(q_max + 1), weights(q_max + 1) {
        const double pi = 3.14159265358979323846;
        for (std::size_t q = 1; q <= q_max; ++q) {
            nodes[q].resize(q);
            weights[q].resize(q);
            for (std::size_t i = 0; i < q; ++i) {
                // Newton on P_q from the usual initial guess
                double x = std::cos(pi * (static_cast<double>(i) + 0.75) /
                                    (static_cast<double>(q) + 0.5));
                double dp = 1.0;
                for (int it = 0; it < 100; ++it) {
                    double p0 = 1.0, p1 = x;
                    for (std::size_t k = 2; k <= q; ++k) {
                        const double p2 = ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k;
                        p0 = p1;
                        p1 = p2;
                    }
                    dp = static_cast<double>(q) * (x * p1 - p0) / (x * x - 1.0);
                    const double dx = p1 / dp;
                    x -= dx;
                    if (std::fabs(dx) < 1e-16) break;
                }
                {  // derivative at the converged root
                    double p0 = 1.0, p1 = x;
                    for (std::size_t k = 2; k <= q; ++k) {
                        const double p2 = ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k;
                        p0 = p1;
                        p1 = p2;
                    }
                    dp = static_cast<double>(q) * (x * p1 - p0) / (x * x - 1.0);
                }
                nodes[q][i] = 0.5 * (1.0 - x);
                weights[q][i] = 1.0 / ((1.0 - x * x) * dp * dp);  // 2/(..) on [-1,1], /2
            }
        }
    }
};

// Expected cross-fit value of one prompt for one split size g: select
// argmax_l of the successes among g draws per model (a uniformly random size-g subset;
// ties broken uniformly at random), score the chosen model on its other G_l - g draws.
// With X_l ~ Hypergeom(G_l, S_l, g) independent across models,
//   value = sum_l sum_a P(X_l = a) * (S_l - a) / (G_l - g) * W_l(a),
//   W_l(a) = P(l wins | X_l = a) = int_0^1 prod_{m != l} [P(X_m < a) + z P(X_m = a)] dz.
// At level a the models with P(X_m = a) = 0 give a constant factor P(X_m < a) (a level
// where some model surely exceeds a contributes nothing); the rest, d of them, make
// the integrand a polynomial of degree d - 1 in z, integrated exactly by the
// ceil(d / 2)-node Gauss-Legendre rule. Cost O(sum_a d_a^2) per prompt.
struct CrossfitScratch {
    std::vector<double> cdf, pmf, cdfm, pre, suf, c, f, rest;
    std::vector<std::size_t> obs;
};

inline double crossfit_row_split(const std::int64_t* S, const std::int64_t* G, std::size_t L,
                                 std::int64_t g, const GaussLegendre01& gl, CrossfitScratch& w,
                                 const HypergeomCdfTables* tables = nullptr,
                                 std::size_t size_index = 0) {
    w.obs.clear();
    for (std::size_t l = 0; l < L; ++l)
        if (G[l] > 0) w.obs.push_back(l);
    const std::size_t M = w.obs.size();
    const std::size_t A = static_cast<std::size_t>(g) + 1;
    w.cdf.assign(A, 0.0);
    w.pmf.assign(M * A, 0.0);
    w.cdfm.assign(M * A, 0.0);  // P(X_m <= a - 1)
    for (std::size_t i = 0; i < M; ++i) {
        const std::size_t l = w.obs[i];
        const double* cdf = tables ? tables->get(G[l], S[l], size_index) : nullptr;
        if (cdf == nullptr) {
            hypergeom_cdf(G[l], S[l], g, w.cdf.data());
            cdf = w.cdf.data();
        }
        double prev = 0.0;
        for (std::size_t a = 0; a < A; ++a) {
            w.pmf[i * A + a] = std::max(0.0, cdf[a] - prev);
            w.cdfm[i * A + a] = prev;
            prev = cdf[a];
        }
    }
    w.pre.resize(M + 1);
    w.suf.resize(M + 1);
    double value = 0.0;
    for (std::size_t a = 0; a < A; ++a) {
        double C = 1.0;  // product over the models with P(X_m = a) = 0
        w.c.clear();
        w.f.clear();
        w.rest.clear();
        for (std::size_t i = 0; i < M; ++i) {
            const double f = w.pmf[i * A + a];
            if (f > 0.0) {
                const std::size_t l = w.obs[i];
                w.c.push_back(w.cdfm[i * A + a]);
                w.f.push_back(f);
                w.rest.push_back(static_cast<double>(S[l] - static_cast<std::int64_t>(a)) /
                                 static_cast<double>(G[l] - g));
            } else {
                C *= w.cdfm[i * A + a];
            }
        }
        const std::size_t d = w.f.size();
        if (d == 0 || C <= 0.0) continue;
        const std::size_t q = (d + 1) / 2;
        const double* gz = gl.nodes[q].data();
        const double* gw = gl.weights[q].data();
        double acc = 0.0;
        for (std::size_t k = 0; k < q; ++k) {
            const double z = gz[k];
            w.pre[0] = 1.0;
            for (std::size_t i = 0; i < d; ++i) w.pre[i + 1] = w.pre[i] * (w.c[i] + z * w.f[i]);
            w.suf[d] = 1.0;
            for (std::size_t i = d; i > 0; --i)
                w.suf[i - 1] = w.suf[i] * (w.c[i - 1] + z * w.f[i - 1]);
            double s = 0.0;
            for (std::size_t i = 0; i < d; ++i) s += w.f[i] * w.rest[i] * w.pre[i] * w.suf[i + 1];
            acc += gw[k] * s;
        }
        value += C * acc;
    }
    return value;
}

// out[n] = mean over the two split sizes floor(Gmin/2), ceil(Gmin/2) of the expected
// cross-fit value ("both ways"), Gmin the fewest draws of an observed cell of the row.
// The caller guarantees Gmin >= 2 on every row.
inline void crossfit_rows(const std::int64_t* successes, const std::int64_t* n_draws,
                          std::size_t N, std::size_t L, double* out) {
    const double work = static_cast<double>(N * L) * static_cast<double>(L / 2 + 1) * 8.0;
    const GaussLegendre01 gl(L / 2 + 1);
    // split sizes that occur, for the CDF tables
    std::vector<char> seen;
    for (std::size_t n = 0; n < N; ++n) {
        std::int64_t gmin = std::numeric_limits<std::int64_t>::max();
        for (std::size_t l = 0; l < L; ++l)
            if (n_draws[n * L + l] > 0) gmin = std::min(gmin, n_draws[n * L + l]);
        if (gmin == std::numeric_limits<std::int64_t>::max() || gmin > (1 << 20)) continue;
        const auto hi = static_cast<std::size_t>(gmin - gmin / 2);
        if (seen.size() <= hi) seen.resize(hi + 1, 0);
        seen[static_cast<std::size_t>(gmin / 2)] = 1;
        seen[hi] = 1;
    }
    std::vector<std::int64_t> sizes;
    for (std::size_t g = 0; g < seen.size(); ++g)
        if (seen[g]) sizes.push_back(static_cast<std::int64_t>(g));
    const HypergeomCdfTables tables(n_draws, N * L, sizes);
    parallel_blocks_min(N, 128, work, [&](std::size_t r0, std::size_t r1) {
        CrossfitScratch w;
        for (std::size_t n = r0; n < r1; ++n) {
            const std::int64_t* S = successes + n * L;
            const std::int64_t* G = n_draws + n * L;
            std::int64_t gmin = std::numeric_limits<std::int64_t>::max();
            for (std::size_t l = 0; l < L; ++l)
                if (G[l] > 0) gmin = std::min(gmin, G[l]);
            const std::int64_t g1 = gmin / 2, g2 = gmin - gmin / 2;
            const double v1 =
                crossfit_row_split(S, G, L, g1, gl, w, &tables, tables.size_index(g1));
            const double v2 = g2 == g1 ? v1
                                       : crossfit_row_split(S, G, L, g2, gl, w, &tables,
                                                            tables.size_index(g2));
            out[n] = 0.5 * (v1 + v2);
        }
    });
}

// ---------------------------------------------------------------------------------
// Latent-difficulty model (design §4b). Prompt difficulty d_n lives on a grid D_j
// (j < J) with prior weights w_j; the per-cell log marginal likelihood
// log h(S_nl | G_nl, theta[l, k(n)] - D_j) is tabulated by the caller as
// T[((l * K + k) * R + row) * J + j], row = the cell's (G, S) table row.
// cell_row[n * L + l] is that row (-1: model not run on the prompt).
// The kernels are templates on the rows' signed integer type Row (int8, int16,
// int32 or int64, as the caller stores them: a table of at most 127 rows takes
// int8 rows, an eighth of int64's memory at N L cells); the arithmetic is the same.

// Posterior weights below this are set to zero (not renormalised): they change no
// estimate, and the M-step statistics become sparse.
constexpr double kRespFloor = 1e-12;

// The log posterior of one prompt's difficulty up to a constant,
// r[j] = log_w[j] + sum_l T[cell (n, l), j], computed only where it can matter.
// A coarse pass on every kCoarseStride-th grid point gives the log-likelihood
// loglik_c there and B = max_c (log_w + loglik_c), at most the best point's r. Each
// cell's log-likelihood is concave in the difficulty (a binomial likelihood in the
// logit, convolved with the cell-effect density), so left of the coarse maximum of
// the log-likelihood every grid point at or below a coarse point c has
// log-likelihood at most loglik_c and prior at most pl[c] (CoarsePlan); when
// pl[c] + loglik_c < B - kPostMargin - kWindowSlack they all lie more than 40 nats
// below the best point, where exp() gives 0 (the kernels cut at exp(-40) or
// exp(-30), or the weight is below rounding of a total >= 1 and then under
// kRespFloor): they are left out, and likewise on the right with pr. So r is the
// full grid's wherever it matters, bit for bit. Sharp posteriors (many models and
// draws) touch 25-45 of 121 points: the E-step's cost O(N L J) shrinks accordingly.
constexpr std::size_t kCoarseStride = 5;
constexpr double kPostMargin = 40.0;
constexpr double kWindowSlack = 10.0;

inline std::size_t coarse_points(std::size_t J) {
    return (J + kCoarseStride - 1) / kCoarseStride;
}

// What the coarse pass reads, prepared once per kernel call: the table's coarse
// points, contiguous (Tc[i * nc + c] = T[i * J + c * kCoarseStride] for every table
// row i < L K R, nc = coarse_points(J): 25 adjacent doubles per cell instead of every
// fifth of 121), and the prior's largest log weight at or below (pl[c]) and at or
// above (pr[c]) each coarse point.
struct CoarsePlan {
    std::vector<double> Tc, pl, pr;
};

inline CoarsePlan coarse_plan(const double* T, std::size_t n_rows, std::size_t J,
                              const double* log_w) {
    CoarsePlan p;
    const std::size_t nc = coarse_points(J);
    p.Tc.resize(n_rows * nc);
    for (std::size_t i = 0; i < n_rows; ++i)
        for (std::size_t c = 0; c < nc; ++c) p.Tc[i * nc + c] = T[i * J + c * kCoarseStride];
    const double ninf = -std::numeric_limits<double>::infinity();
    p.pl.assign(nc, ninf);
    p.pr.assign(nc, ninf);
    double m = ninf;
    for (std::size_t j = 0; j < J; ++j) {
        m = std::max(m, log_w[j]);
        if (j % kCoarseStride == 0) p.pl[j / kCoarseStride] = m;
    }
    m = ninf;
    for (std::size_t j = J; j-- > 0;) {
        m = std::max(m, log_w[j]);
        if (j % kCoarseStride == 0) p.pr[j / kCoarseStride] = m;
    }
    return p;
}

// out[j] = init[j] (0 when init is nullptr) + p[0][j] + p[1][j] + ... + p[n - 1][j]
// for j0 <= j < j1, added in that order (as a loop over the rows adding each into out
// would), eight (then two) points at a time in registers.
inline void sum_rows(const double* const* p, std::size_t n, const double* init,
                     std::size_t j0, std::size_t j1, double* out) {
    std::size_t j = j0;
    for (; j + 8 <= j1; j += 8) {
        double a[8];
        for (std::size_t u = 0; u < 8; ++u) a[u] = init != nullptr ? init[j + u] : 0.0;
        for (std::size_t i = 0; i < n; ++i) {
            const double* t = p[i] + j;
            for (std::size_t u = 0; u < 8; ++u) a[u] += t[u];
        }
        for (std::size_t u = 0; u < 8; ++u) out[j + u] = a[u];
    }
    for (; j + 2 <= j1; j += 2) {
        double a0 = init != nullptr ? init[j] : 0.0;
        double a1 = init != nullptr ? init[j + 1] : 0.0;
        for (std::size_t i = 0; i < n; ++i) {
            a0 += p[i][j];
            a1 += p[i][j + 1];
        }
        out[j] = a0;
        out[j + 1] = a1;
    }
    for (; j < j1; ++j) {
        double a = init != nullptr ? init[j] : 0.0;
        for (std::size_t i = 0; i < n; ++i) a += p[i][j];
        out[j] = a;
    }
}

// r (the log posterior above) on the window [j0, j1) where it can matter, which is
// returned; every point outside counts as r = -inf (it is not written). plan:
// coarse_plan(T, L K R, J, log_w).
template <class Row>
inline std::pair<std::size_t, std::size_t> pgm_prompt_logpost_window(
    const double* T, const CoarsePlan& plan, const Row* rows, std::size_t k, std::size_t L,
    std::size_t K, std::size_t R, std::size_t J, const double* log_w, double* r) {
    // the observed cells' table rows (up to kMaxCells of them, else loops over the
    // models): sums over them run in registers, each point's terms added in the
    // models' order (the same bits as adding row after row)
    constexpr std::size_t kMaxCells = 64;
    const double* pt[kMaxCells];
    std::size_t n_obs = 0;
    const bool gathered = L <= kMaxCells;
    if (gathered)
        for (std::size_t l = 0; l < L; ++l)
            if (rows[l] >= 0)
                pt[n_obs++] = T + ((l * K + k) * R + static_cast<std::size_t>(rows[l])) * J;
    auto fill = [&](std::size_t j0, std::size_t j1) {
        if (gathered) {
            sum_rows(pt, n_obs, log_w, j0, j1, r);
        } else {
            for (std::size_t j = j0; j < j1; ++j) r[j] = log_w[j];
            for (std::size_t l = 0; l < L; ++l) {
                if (rows[l] < 0) continue;
                const double* t =
                    T + ((l * K + k) * R + static_cast<std::size_t>(rows[l])) * J;
                for (std::size_t j = j0; j < j1; ++j) r[j] += t[j];
            }
        }
        return std::make_pair(j0, j1);
    };
    constexpr std::size_t kMaxCoarse = 256;
    const std::size_t nc = coarse_points(J);
    if (J < 4 * kCoarseStride || nc > kMaxCoarse) return fill(0, J);
    double cl[kMaxCoarse];
    if (gathered) {
        const double* pc[kMaxCells];  // the same rows' coarse points
        for (std::size_t i = 0; i < n_obs; ++i)
            pc[i] = plan.Tc.data() + static_cast<std::size_t>(pt[i] - T) / J * nc;
        sum_rows(pc, n_obs, nullptr, 0, nc, cl);
    } else {
        std::fill(cl, cl + nc, 0.0);
        for (std::size_t l = 0; l < L; ++l) {
            if (rows[l] < 0) continue;
            const double* t =
                plan.Tc.data() + ((l * K + k) * R + static_cast<std::size_t>(rows[l])) * nc;
            for (std::size_t c = 0; c < nc; ++c) cl[c] += t[c];
        }
    }
    std::size_t cm = 0;  // the coarse maximum of the log-likelihood
    for (std::size_t c = 1; c < nc; ++c)
        if (cl[c] > cl[cm]) cm = c;
    double B = -std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < nc; ++c) B = std::max(B, log_w[c * kCoarseStride] + cl[c]);
    const double thr = B - kPostMargin - kWindowSlack;
    if (!std::isfinite(thr)) return fill(0, J);
    const double* pl = plan.pl.data();
    const double* pr = plan.pr.data();
    std::size_t a = cm, b = cm;
    while (a > 0 && !(pl[a - 1] + cl[a - 1] < thr)) --a;
    while (b + 1 < nc && !(pr[b + 1] + cl[b + 1] < thr)) ++b;
    return fill(a > 0 ? (a - 1) * kCoarseStride + 1 : 0,
                b + 1 < nc ? (b + 1) * kCoarseStride : J);
}

// pgm_prompt_logpost_window with r = -inf written outside the window.
template <class Row>
inline void pgm_prompt_logpost(const double* T, const CoarsePlan& plan, const Row* rows,
                               std::size_t k, std::size_t L, std::size_t K, std::size_t R,
                               std::size_t J, const double* log_w, double* r) {
    const auto [j0, j1] = pgm_prompt_logpost_window(T, plan, rows, k, L, K, R, J, log_w, r);
    const double ninf = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < j0; ++j) r[j] = ninf;
    for (std::size_t j = j1; j < J; ++j) r[j] = ninf;
}

inline double max_of(const double* x, std::size_t n) {
    double m = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) m = std::max(m, x[i]);
    return m;
}

// E-step: resp[n, j] = posterior weight of D_j for prompt n. Returns the marginal
// log-likelihood sum_n log sum_j w_j prod_l h(...); ll_out (optional, N entries)
// receives each prompt's term (the latent-class fit needs them per prompt and
// class). Cost O(N L J), memory O(N J).
template <class Row>
inline double pgm_estep(const double* T, const Row* cell_row,
                        const std::int64_t* topic, const double* log_w, std::size_t N,
                        std::size_t L, std::size_t K, std::size_t R, std::size_t J,
                        double* resp, double* ll_out = nullptr) {
    const std::size_t n_blocks = (N + kBlockRows - 1) / kBlockRows;
    std::vector<double> partial(n_blocks, 0.0);
    const double work = static_cast<double>(N * L * J);
    const CoarsePlan plan = coarse_plan(T, L * K * R, J, log_w);
    parallel_blocks_min(n_blocks, 1, work, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t b = b0; b < b1; ++b) {
            double acc_ll = 0.0;
            const std::size_t i1 = std::min(N, (b + 1) * kBlockRows);
            for (std::size_t n = b * kBlockRows; n < i1; ++n) {
                double* r = resp + n * J;
                const std::size_t k = static_cast<std::size_t>(topic[n]);
                pgm_prompt_logpost(T, plan, cell_row + n * L, k, L, K, R, J, log_w, r);
                double mx = -std::numeric_limits<double>::infinity();
                for (std::size_t j = 0; j < J; ++j) mx = std::max(mx, r[j]);
                double tot = 0.0;
                for (std::size_t j = 0; j < J; ++j) {
                    r[j] = std::exp(r[j] - mx);
                    tot += r[j];
                }
                for (std::size_t j = 0; j < J; ++j) {
                    r[j] /= tot;
                    if (r[j] < kRespFloor) r[j] = 0.0;  // keeps C sparse
                }
                const double lln = mx + std::log(tot);
                if (ll_out != nullptr) ll_out[n] = lln;
                acc_ll += lln;
            }
            partial[b] = acc_ll;
        }
    });
    double ll = 0.0;
    for (double v : partial) ll += v;
    return ll;
}

// Fused E-step and M-step statistics: one pass over the prompts fills resp (as
// pgm_estep) and C (as pgm_stats). Prompts are cut into n_blocks fixed blocks of
// block_rows (a function of N only); each block sums into its own partial C and the
// partials are added in block order, so C does not depend on the thread count.
// Memory: n_blocks * L K R J doubles of partials.
template <class Row>
inline double pgm_estep_stats(const double* T, const Row* cell_row,
                              const std::int64_t* topic, const double* log_w, std::size_t N,
                              std::size_t L, std::size_t K, std::size_t R, std::size_t J,
                              std::size_t block_rows, double* resp, double* C) {
    const std::size_t P = L * K * R * J;
    block_rows = std::max<std::size_t>(1, block_rows);
    const std::size_t n_blocks = (N + block_rows - 1) / block_rows;
    // one block (up to block_rows prompts): its sums go straight into C, the
    // same numbers as C = 0 + partial (no second (L, K, R, J) array to zero,
    // fault in and add: at many table rows most of the kernel's time)
    const bool direct = n_blocks == 1;
    std::vector<double> partial(direct ? 0 : n_blocks * P, 0.0);
    if (direct) std::fill(C, C + P, 0.0);
    std::vector<double> part_ll(n_blocks, 0.0);
    const double work = static_cast<double>(N * L * J) * 2.0;
    const CoarsePlan plan = coarse_plan(T, L * K * R, J, log_w);
    parallel_blocks_min(n_blocks, 1, work, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t b = b0; b < b1; ++b) {
            double* cb = direct ? C : partial.data() + b * P;
            double acc_ll = 0.0;
            const std::size_t i1 = std::min(N, (b + 1) * block_rows);
            for (std::size_t n = b * block_rows; n < i1; ++n) {
                double* r = resp + n * J;
                const std::size_t k = static_cast<std::size_t>(topic[n]);
                const Row* rows = cell_row + n * L;
                pgm_prompt_logpost(T, plan, rows, k, L, K, R, J, log_w, r);
                double mx = -std::numeric_limits<double>::infinity();
                for (std::size_t j = 0; j < J; ++j) mx = std::max(mx, r[j]);
                double tot = 0.0;
                for (std::size_t j = 0; j < J; ++j) {
                    // below exp(-30) a weight ends under kRespFloor anyway (tot >= 1)
                    const double v = r[j] - mx;
                    r[j] = v < -30.0 ? 0.0 : std::exp(v);
                    tot += r[j];
                }
                const double inv = 1.0 / tot;
                for (std::size_t j = 0; j < J; ++j) {
                    r[j] *= inv;
                    if (r[j] < kRespFloor) r[j] = 0.0;  // keeps C sparse
                }
                acc_ll += mx + std::log(tot);
                std::size_t j0 = 0, j1 = J;  // the non-zero range of r
                while (j0 < J && r[j0] == 0.0) ++j0;
                while (j1 > j0 && r[j1 - 1] == 0.0) --j1;
                for (std::size_t l = 0; l < L; ++l) {
                    if (rows[l] < 0) continue;
                    double* c = cb + ((l * K + k) * R + static_cast<std::size_t>(rows[l])) * J;
                    for (std::size_t j = j0; j < j1; ++j) c[j] += r[j];
                }
            }
            part_ll[b] = acc_ll;
        }
    });
    if (!direct) std::fill(C, C + P, 0.0);
    double ll = 0.0;
    for (std::size_t b = 0; b < n_blocks; ++b) {
        if (!direct) {
            const double* cb = partial.data() + b * P;
            for (std::size_t i = 0; i < P; ++i) C[i] += cb[i];
        }
        ll += part_ll[b];
    }
    return ll;
}

// M-step statistics: C[((l * K + k) * R + row) * J + j] = sum over prompts n of topic k
// whose cell (n, l) is in table row `row` of resp[n, j]. Parallel over models, each
// model's sums run over prompts in order. Cost O(N L J).
template <class Row>
inline void pgm_stats(const double* resp, const Row* cell_row,
                      const std::int64_t* topic, std::size_t N, std::size_t L, std::size_t K,
                      std::size_t R, std::size_t J, double* C) {
    std::fill(C, C + L * K * R * J, 0.0);
    const double work = static_cast<double>(N * L * J);
    parallel_blocks_min(L, 1, work, [&](std::size_t l0, std::size_t l1) {
        for (std::size_t l = l0; l < l1; ++l) {
            for (std::size_t n = 0; n < N; ++n) {
                const std::int64_t row = cell_row[n * L + l];
                if (row < 0) continue;
                const std::size_t k = static_cast<std::size_t>(topic[n]);
                double* c = C + ((l * K + k) * R + static_cast<std::size_t>(row)) * J;
                const double* r = resp + n * J;
                for (std::size_t j = 0; j < J; ++j) c[j] += r[j];
            }
        }
    });
}

// M-step scores: f[lk, c] = sum_{row, j} C[lk, row, j] * logh[row, cand[j, c]], the
// expected complete log-likelihood of candidate theta_c for model/topic lk (cand
// holds the eta-grid index of theta_c - D_j). Zero statistics are skipped (most
// (row, j) pairs are empty). Parallel over lk; cost O(LK * nnz(C) / LK * n_cand).
inline void pgm_mstep_scores(const double* C, const double* logh, const std::int64_t* cand,
                             std::size_t LK, std::size_t R, std::size_t J, std::size_t E,
                             std::size_t n_cand, double* f) {
    const double work = static_cast<double>(LK * R * J) * static_cast<double>(n_cand) / 4.0;
    parallel_blocks_min(LK, 1, work, [&](std::size_t a0, std::size_t a1) {
        for (std::size_t a = a0; a < a1; ++a) {
            double* out = f + a * n_cand;
            for (std::size_t c = 0; c < n_cand; ++c) out[c] = 0.0;
            for (std::size_t r = 0; r < R; ++r) {
                const double* row = logh + r * E;
                for (std::size_t j = 0; j < J; ++j) {
                    const double w = C[(a * R + r) * J + j];
                    if (w == 0.0) continue;
                    const std::int64_t* idx = cand + j * n_cand;
                    for (std::size_t c = 0; c < n_cand; ++c) out[c] += w * row[idx[c]];
                }
            }
        }
    });
}

// M-step scores on a window of candidates per model/topic: f[a, k] = score of
// candidate lo[a] + k (k < width), summed in the same order as pgm_mstep_scores, so
// the values equal the full kernel's. Cost O(nnz(C) * width).
inline void pgm_mstep_scores_window(const double* C, const double* logh, const std::int64_t* cand,
                                    const std::int64_t* lo, std::size_t LK, std::size_t R,
                                    std::size_t J, std::size_t E, std::size_t n_cand,
                                    std::size_t width, double* f) {
    const double work = static_cast<double>(LK * R * J) * static_cast<double>(width) / 4.0;
    parallel_blocks_min(LK, 1, work, [&](std::size_t a0, std::size_t a1) {
        // the non-zero statistics of a row: their weight and, for consecutive eta
        // indices (no clipping at the grid's ends), the first logh value, else the
        // logh row and the candidates' indices
        struct Term {
            double w;
            const double* rr;
            const double* row;
            const std::int64_t* idx;
        };
        std::vector<Term> terms;
        for (std::size_t a = a0; a < a1; ++a) {
            double* out = f + a * width;
            const std::size_t c0 = static_cast<std::size_t>(lo[a]);
            terms.clear();
            for (std::size_t r = 0; r < R; ++r) {
                const double* row = logh + r * E;
                for (std::size_t j = 0; j < J; ++j) {
                    const double w = C[(a * R + r) * J + j];
                    if (w == 0.0) continue;
                    const std::int64_t* idx = cand + j * n_cand + c0;
                    if (idx[width - 1] - idx[0] == static_cast<std::int64_t>(width) - 1)
                        terms.push_back({w, row + idx[0], nullptr, nullptr});
                    else
                        terms.push_back({w, nullptr, row, idx});
                }
            }
            // each candidate's sum over the terms in their order (the same sums as
            // adding term after term into out), eight candidates at a time in
            // registers
            std::size_t k0 = 0;
            for (; k0 + 8 <= width; k0 += 8) {
                double acc[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
                for (const Term& t : terms) {
                    if (t.rr != nullptr) {
                        for (std::size_t u = 0; u < 8; ++u) acc[u] += t.w * t.rr[k0 + u];
                    } else {
                        for (std::size_t u = 0; u < 8; ++u)
                            acc[u] += t.w * t.row[t.idx[k0 + u]];
                    }
                }
                for (std::size_t u = 0; u < 8; ++u) out[k0 + u] = acc[u];
            }
            for (std::size_t k = k0; k < width; ++k) {
                double acc = 0.0;
                for (const Term& t : terms)
                    acc += t.w * (t.rr != nullptr ? t.rr[k] : t.row[t.idx[k]]);
                out[k] = acc;
            }
        }
    });
}

// Posterior expected maximum per prompt (design §4b). Given the difficulty D_j, the
// cells of prompt n are independent; cell (l, row) has linear predictor
// eta = theta[l, k] - D_j (exact, no grid interpolation) and the posterior of
// t = logit p on the grid t_i (step dt) is
//   w_i  propto  lik[row, i] * m(t_i | eta),
//   m = exp(-(t - eta)^2 / (2 tau^2))                      (family 0, logit-normal)
//   m = sigma(t)^(q c) sigma(-t)^((1 - q) c), q = sigma(eta), c = (1 - rho) / rho
//                                                          (family 1, Beta around q)
//   m = (1 + (t - eta)^2 / (nu tau^2))^(-(nu + 1) / 2)     (family 2, logit Student t,
//                                                           nu = t_df, fitted)
// and its CDF at node m (x_m = sigma of the boundary below t_cut[m]) is the partial sum
// with the Euler-Maclaurin end correction, exact to O(dt^4) for a smooth density:
// F(x_m) = (sum_{i < cut[m]} w_i + (w_cut[m] - w_cut[m]-1) / 24) / sum_i w_i, and
//   E[max_l p | D_j]   = int_0^1 (1 - prod_l F_l(x)) dx,
//   E[max_l p^2 | D_j] = int_0^1 2x (1 - prod_l F_l(x)) dx      (trapezoid on x_m),
// mixed over j with resp[n, j] (grid points below min_resp are skipped and the
// rest renormalised). post_mean[n, l] = E_post[p_nl]. A zero scale is a point mass
// at t = eta: then E[max | D_j] = max_l sigma(eta) exactly.
//
// Work is organised per (topic k, grid point j): the posterior CDF of every
// (model, count) cell used by the prompts of that pair is built once (window of
// m above exp(-40) of its peak), trimmed to the nodes where eps < F < 1 - eps, and
// then each prompt multiplies only the cells that are below 1 - eps somewhere
// above the largest lower end: cost O(#pairs L R W + sum_{n,j} cells * range).
// Pairs run in a fixed order and every prompt is handled by one thread per pair,
// so results are bit-identical for any thread count.
struct EmaxModel {
    const double* theta;   // (L, K)
    const double* d_grid;  // (J)
    const double* loglik;  // (R, T): log P(S | G, t_i) of table row (G, S)
    const double* t_grid;  // (T), uniform
    std::size_t T;
    int family;  // 0 logit-normal, 1 beta, 2 logit Student t
    double scale;
    const std::int64_t* cut;  // (M + 1) nodes: number of t points below node m
    const double* h1;         // (M + 1) quadrature weights of int g(x) dx
    const double* h2;         // (M + 1) quadrature weights of int 2x g(x) dx
    std::size_t M1;           // M + 1
    double eps;
    // (L, K, J, 3): the cell effect's mass below, above and inside the t grid at
    // eta = theta[l, k] - d_grid[j]; the outside mass sits as atoms at p = 0, 1
    const double* tails;
    const double* edge_loglik;  // (R, 2): log P(S | G, p) at p = 0 and p = 1
    double t_df = 3.0;          // family 2: the Student t's degrees of freedom nu
};

// default degrees of freedom of the logit Student-t cell effect (family 2; the
// fits choose nu from capfront.debias.latent.T_DF_GRID); the same constant as
// capfront._kernels.latent.LOGIT_T_DF
constexpr double kLogitTDf = 3.0;

namespace detail {

inline double log_sigmoid(double t) { return t >= 0 ? -std::log1p(std::exp(-t)) : t - std::log1p(std::exp(t)); }

// log m(t_i | eta) up to a constant at grid point i (lsp, lsm: log sigma(+-t_i))
struct Mixing {
    int family;
    double eta, tau, a, b;
    const double* t;
    const double* lsp;
    const double* lsm;
    double operator()(std::size_t i) const {
        if (family == 0) {
            const double z = (t[i] - eta) / tau;
            return -0.5 * z * z;
        }
        if (family == 2) {  // a: the degrees of freedom
            const double z = (t[i] - eta) / tau;
            return -0.5 * (a + 1.0) * std::log1p(z * z / a);
        }
        return a * lsp[i] + b * lsm[i];
    }
};

// Posterior CDF of one cell at the nodes, trimmed: F[m] for m in [lo, hi); F = 0 below
// lo (<= eps) and 1 from hi on (>= 1 - eps). Appends to `store`; returns the mean.
struct CellTable {
    std::size_t lo = 0, hi = 0, off = 0;
    double mean = 0.0;
};

}  // namespace detail

template <class Row>
inline void pgm_emax(const double* resp, const Row* cell_row, const std::int64_t* topic,
                     std::size_t N, std::size_t L, std::size_t K, std::size_t J, std::size_t R,
                     const EmaxModel& md, double min_resp, double* emax, double* emax2,
                     double* post_mean) {
    const std::size_t T = md.T, M1 = md.M1;
    const double t0 = md.t_grid[0];
    const double dt = T > 1 ? md.t_grid[1] - md.t_grid[0] : 1.0;
    std::vector<double> used(N, 0.0), m1(N, 0.0), m2(N, 0.0);
    std::fill(post_mean, post_mean + N * L, 0.0);
    // prompts of each (k, j) pair with resp >= min_resp, in prompt order
    std::vector<std::size_t> count(K * J + 1, 0);
    for (std::size_t n = 0; n < N; ++n) {
        const std::size_t k = static_cast<std::size_t>(topic[n]);
        for (std::size_t j = 0; j < J; ++j)
            if (resp[n * J + j] >= min_resp) ++count[k * J + j + 1];
    }
    for (std::size_t p = 0; p < K * J; ++p) count[p + 1] += count[p];
    std::vector<std::uint32_t> members(count[K * J]);
    {
        std::vector<std::size_t> fill(count.begin(), count.end() - 1);
        for (std::size_t n = 0; n < N; ++n) {
            const std::size_t k = static_cast<std::size_t>(topic[n]);
            for (std::size_t j = 0; j < J; ++j)
                if (resp[n * J + j] >= min_resp)
                    members[fill[k * J + j]++] = static_cast<std::uint32_t>(n);
        }
    }
    // prefix sums of the quadrature weights (g = 1 below a prompt's range)
    const double* h = md.h1;
    const double* hx = md.h2;
    std::vector<double> H1(M1 + 1, 0.0), H2(M1 + 1, 0.0);
    for (std::size_t m = 0; m < M1; ++m) {
        H1[m + 1] = H1[m] + h[m];
        H2[m + 1] = H2[m] + hx[m];
    }
    // likelihood rows scaled to a maximum of 1, and sigma(t)
    std::vector<double> lik(R * T), sig(T), lsp(T), lsm(T);
    for (std::size_t i = 0; i < T; ++i) {
        sig[i] = 1.0 / (1.0 + std::exp(-md.t_grid[i]));
        lsp[i] = detail::log_sigmoid(md.t_grid[i]);
        lsm[i] = detail::log_sigmoid(-md.t_grid[i]);
    }
    std::vector<double> lik_edge(R * 2);  // the atoms' likelihoods, same scale
    for (std::size_t r = 0; r < R; ++r) {
        const double* ll = md.loglik + r * T;
        double mx = -std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < T; ++i) mx = std::max(mx, ll[i]);
        for (std::size_t i = 0; i < T; ++i) lik[r * T + i] = std::exp(ll[i] - mx);
        for (std::size_t e = 0; e < 2; ++e)
            lik_edge[r * 2 + e] = std::exp(md.edge_loglik[r * 2 + e] - mx);
    }
    const bool point_mass = !(md.scale > 0.0);
    // per pair scratch
    std::vector<std::int64_t> slot(L * R, -1);  // (l, row) -> index into cells
    std::vector<std::size_t> touched;
    std::vector<detail::CellTable> cells;
    std::vector<double> store, w, peta(L);
    std::vector<double> atom_lo(L), atom_hi(L);  // in units of the window's mm
    std::vector<std::size_t> wlo(L), whi(L);
    std::vector<char> have_m(L);
    std::vector<double> mix;  // (L, T) window values of m
    auto mixing = [&](std::size_t l) {
        detail::Mixing mf{md.family, peta[l], md.scale, 0.0, 0.0, md.t_grid, lsp.data(),
                          lsm.data()};
        if (md.family == 2) {
            mf.a = md.t_df;
        } else if (md.family != 0) {
            const double c = (1.0 - md.scale) / md.scale;
            const double qq = 1.0 / (1.0 + std::exp(-peta[l]));
            mf.a = qq * c;
            mf.b = (1.0 - qq) * c;
        }
        return mf;
    };
    for (std::size_t k = 0; k < K; ++k) {
        for (std::size_t j = 0; j < J; ++j) {
            const std::size_t p = k * J + j, p0 = count[p], p1 = count[p + 1];
            if (p0 == p1) continue;
            for (std::size_t l = 0; l < L; ++l)
                peta[l] = md.theta[l * K + k] - md.d_grid[j];
            if (point_mass) {
                parallel_blocks_min(p1 - p0, 256, static_cast<double>((p1 - p0) * L) * 4.0,
                                    [&](std::size_t i0, std::size_t i1) {
                    for (std::size_t i = p0 + i0; i < p0 + i1; ++i) {
                        const std::size_t n = members[i];
                        const double r = resp[n * J + j];
                        double best = 0.0;
                        for (std::size_t l = 0; l < L; ++l) {
                            if (cell_row[n * L + l] < 0) continue;
                            const double s = 1.0 / (1.0 + std::exp(-peta[l]));
                            best = std::max(best, s);
                            post_mean[n * L + l] += r * s;
                        }
                        used[n] += r;
                        m1[n] += r * best;
                        m2[n] += r * best * best;
                    }
                });
                continue;
            }
            // cells used by this pair's prompts
            for (std::size_t q : touched) slot[q] = -1;
            touched.clear();
            cells.clear();
            store.clear();
            std::fill(have_m.begin(), have_m.end(), 0);
            mix.resize(L * T);
            for (std::size_t i = p0; i < p1; ++i) {
                const std::size_t n = members[i];
                for (std::size_t l = 0; l < L; ++l) {
                    const std::int64_t row = cell_row[n * L + l];
                    if (row < 0) continue;
                    const std::size_t q = l * R + static_cast<std::size_t>(row);
                    if (slot[q] >= 0) continue;
                    slot[q] = static_cast<std::int64_t>(cells.size());
                    touched.push_back(q);
                    if (!have_m[l]) {  // mixing window of model l
                        have_m[l] = 1;
                        const detail::Mixing mf = mixing(l);
                        // the log density is concave in t with its mode at t = eta
                        const double pos = std::round((peta[l] - t0) / dt);
                        const std::size_t c0 = static_cast<std::size_t>(
                            std::clamp(pos, 0.0, static_cast<double>(T - 1)));
                        double ref = mf(c0);
                        if (c0 > 0) ref = std::max(ref, mf(c0 - 1));
                        if (c0 + 1 < T) ref = std::max(ref, mf(c0 + 1));
                        std::size_t a = c0, b = c0 + 1;
                        double* mm = mix.data() + l * T;
                        mm[c0] = std::exp(mf(c0) - ref);
                        while (a > 0) {
                            const double v = mf(a - 1) - ref;
                            if (v < -40.0) break;
                            mm[--a] = std::exp(v);
                        }
                        while (b < T) {
                            const double v = mf(b) - ref;
                            if (v < -40.0) break;
                            mm[b++] = std::exp(v);
                        }
                        wlo[l] = a;
                        whi[l] = b;
                        // the mass outside the grid, in the units of mm
                        const double* tl = md.tails + ((l * K + k) * J + j) * 3;
                        double zw = 0.0;
                        for (std::size_t i2 = a; i2 < b; ++i2) zw += mm[i2];
                        if (tl[2] > 1e-300) {
                            atom_lo[l] = tl[0] / tl[2] * zw;
                            atom_hi[l] = tl[1] / tl[2] * zw;
                        } else {  // (nearly) all of it outside
                            for (std::size_t i2 = a; i2 < b; ++i2) mm[i2] = 0.0;
                            atom_lo[l] = tl[0];
                            atom_hi[l] = tl[1];
                        }
                    }
                    // posterior of t on the window [a, b)
                    const std::size_t a = wlo[l], b = whi[l];
                    const double* lk = lik.data() + static_cast<std::size_t>(row) * T;
                    const double* mm = mix.data() + l * T;
                    w.resize(b - a);
                    const double* le = lik_edge.data() + static_cast<std::size_t>(row) * 2;
                    double alo = le[0] * atom_lo[l], ahi = le[1] * atom_hi[l];
                    double tot = alo + ahi, mean = ahi;
                    for (std::size_t i2 = a; i2 < b; ++i2) {
                        const double v = lk[i2] * mm[i2];
                        w[i2 - a] = v;
                        tot += v;
                        mean += v * sig[i2];
                    }
                    if (!(tot > 1e-280)) {  // far outlier: redo in log space
                        const double* ll = md.loglik + static_cast<std::size_t>(row) * T;
                        const double* el = md.edge_loglik + static_cast<std::size_t>(row) * 2;
                        const double l_lo = el[0] + std::log(atom_lo[l]);
                        const double l_hi = el[1] + std::log(atom_hi[l]);
                        double mx = std::max(l_lo, l_hi);
                        for (std::size_t i2 = a; i2 < b; ++i2)
                            mx = std::max(mx, ll[i2] + std::log(mm[i2]));
                        alo = std::exp(l_lo - mx);
                        ahi = std::exp(l_hi - mx);
                        tot = alo + ahi;
                        mean = ahi;
                        for (std::size_t i2 = a; i2 < b; ++i2) {
                            const double v = std::exp(ll[i2] + std::log(mm[i2]) - mx);
                            w[i2 - a] = v;
                            tot += v;
                            mean += v * sig[i2];
                        }
                    }
                    detail::CellTable ct;
                    ct.mean = mean / tot;
                    // CDF at the nodes: the atom at p = 0 and the window's partial
                    // sums; the last node (x = 1) takes F(1-), without the atom at
                    // p = 1, so that its weight integrates 1 - prod F over [x_hi, 1)
                    const double inv = 1.0 / tot;
                    // first node with cut > a (cut is non-decreasing), or every node
                    // when the atom at p = 0 alone exceeds eps
                    std::size_t m = alo * inv > md.eps
                                        ? 0
                                        : static_cast<std::size_t>(
                                              std::upper_bound(md.cut, md.cut + M1,
                                                               static_cast<std::int64_t>(a)) -
                                              md.cut);
                    double acc = alo;
                    std::size_t i2 = a;
                    ct.off = store.size();
                    bool started = false;
                    ct.lo = M1;
                    ct.hi = M1;
                    for (; m < M1; ++m) {
                        const std::size_t cm = static_cast<std::size_t>(md.cut[m]);
                        const std::size_t c = std::min(cm, b);
                        while (i2 < c) acc += w[(i2++) - a];
                        // end correction of the partial sum (O(dt^4) for a smooth
                        // density): + (w[cut] - w[cut - 1]) / 24
                        const double wr = cm >= a && cm < b ? w[cm - a] : 0.0;
                        const double wl = cm > a && cm - 1 < b ? w[cm - 1 - a] : 0.0;
                        const double F =
                            std::min(1.0, std::max(0.0, (acc + (wr - wl) / 24.0) * inv));
                        if (!started) {
                            if (F <= md.eps) continue;
                            started = true;
                            ct.lo = m;
                        }
                        if (F >= 1.0 - md.eps) {
                            ct.hi = m;
                            break;
                        }
                        store.push_back(F);
                    }
                    if (!started) ct.lo = ct.hi;  // (cannot happen: F reaches 1)
                    cells.push_back(ct);
                }
            }
            const double work = static_cast<double>((p1 - p0) * L) * 64.0;
            parallel_blocks_min(p1 - p0, 64, work, [&](std::size_t i0, std::size_t i1) {
                std::vector<double> prod(M1);
                std::vector<const detail::CellTable*> act(L);
                for (std::size_t i = p0 + i0; i < p0 + i1; ++i) {
                    const std::size_t n = members[i];
                    const double r = resp[n * J + j];
                    const Row* rows = cell_row + n * L;
                    double* pm = post_mean + n * L;
                    std::size_t k0 = 0, k1 = 0, n_act = 0;
                    for (std::size_t l = 0; l < L; ++l) {
                        if (rows[l] < 0) continue;
                        const detail::CellTable& ct = cells[static_cast<std::size_t>(
                            slot[l * R + static_cast<std::size_t>(rows[l])])];
                        k0 = std::max(k0, ct.lo);
                        k1 = std::max(k1, ct.hi);
                        pm[l] += r * ct.mean;
                        act[n_act++] = &ct;
                    }
                    double s1 = H1[k0], s2 = H2[k0];
                    if (k1 > k0) {
                        const std::size_t width = k1 - k0;
                        double* pr = prod.data();
                        bool first = true;
                        for (std::size_t c = 0; c < n_act; ++c) {
                            const detail::CellTable* ct = act[c];
                            if (ct->hi <= k0) continue;  // F = 1 on the whole range
                            const double* F = store.data() + ct->off + (k0 - ct->lo);
                            const std::size_t e = ct->hi - k0;
                            if (first) {  // prod = F (and 1 beyond the cell's hi)
                                for (std::size_t m = 0; m < e; ++m) pr[m] = F[m];
                                for (std::size_t m = e; m < width; ++m) pr[m] = 1.0;
                                first = false;
                            } else {
                                for (std::size_t m = 0; m < e; ++m) pr[m] *= F[m];
                            }
                        }
                        const double* hh = h + k0;
                        const double* hh2 = hx + k0;
                        for (std::size_t m = 0; m < width; ++m) {
                            const double tail = 1.0 - pr[m];
                            s1 += hh[m] * tail;
                            s2 += hh2[m] * tail;
                        }
                    }
                    used[n] += r;
                    m1[n] += r * s1;
                    m2[n] += r * s2;
                }
            });
        }
    }
    for (std::size_t n = 0; n < N; ++n) {
        emax[n] = m1[n] / used[n];
        emax2[n] = m2[n] / used[n];
        for (std::size_t l = 0; l < L; ++l) post_mean[n * L + l] /= used[n];
    }
}

}  // namespace capfront
