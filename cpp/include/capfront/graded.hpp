// Seeded Monte Carlo subsample estimators for graded (real-valued) scores (SPEC 4a,
// 4d, 4e). With real-valued scores the per-cell sums are not sufficient, so the exact
// hypergeometric expectations of the binary path are replaced by an average over
// n_splits random orderings of each cell's valid draws.
//
// Random ordering (the same in python/capfront/debias/graded.py and
// _numba_graded.py, bit for bit): the m valid draws of cell (n, l) are taken in
// their original order a[0..m) and shuffled by Fisher-Yates,
//     for i = m-1 .. 1:  j = (w[i] * (i + 1)) >> 32,  swap(a[i], a[j]),
// where w[i] is word i of the Philox4x32-10 stream of the cell in split s: lane
// i % 4 of the block with counter (i / 4, s, prompt_key[n], model_key[l]) and key
// (seed mod 2^32, seed >> 32). The words depend only on (seed, split, prompt key,
// model key), never on threads or chunking. (The multiply-shift index is biased by
// at most m / 2^32, far below Monte Carlo error.)
//
// Per prompt and split, with c[k] = a[0] + ... + a[k-1] summed in that order:
// - crossfit: gmin = fewest valid draws of an observed cell; for g in
//   {floor(gmin/2), ceil(gmin/2)}: sel_l = c_l[g] / g, rest_l = (c_l[m_l] - c_l[g]) /
//   (m_l - g); the value is the mean of rest_l over the models with
//   sel_l >= max_l sel_l - 1e-12 (ties shared, models in order); the split's
//   contribution is the mean over the two g (one when they are equal).
// - curve: for each requested size g, max over observed models of c_l[g] / g.
// Contributions are summed over splits in split order and divided by n_splits.
//
// Cost: O(n_splits * N * L * G) (Philox: ceil(m/4) blocks of 10 rounds per cell and
// split). Memory: the inputs, the (N,) or (N, K) output, and O(L G) per thread.
// Rows are independent, so results are bit-identical for any thread count.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "parallel.hpp"
#include "philox.hpp"

namespace capfront {

namespace graded_detail {

constexpr double kTieTol = 1e-12;
constexpr std::size_t kGradedGrain = 16;  // prompts per parallel block

// One prompt's valid draws, compacted per model, and the scratch of one split.
struct PromptWork {
    std::size_t L, G;
    std::vector<double> compact;  // (L, G): valid draws of model l first, in order
    std::vector<std::int64_t> count;  // valid draws per model
    std::vector<double> shuffled;     // (G)
    std::vector<double> csum;         // (G + 1)
    std::vector<std::uint32_t> words;  // (G rounded up to 4)
    PromptWork(std::size_t L_, std::size_t G_)
        : L(L_),
          G(G_),
          compact(L_ * G_),
          count(L_),
          shuffled(G_),
          csum(G_ + 1),
          words(4 * ((G_ + 3) / 4)) {}

    // Returns the fewest valid draws of an observed model (0 if none observed).
    std::int64_t load(const double* scores, const bool* valid) {
        std::int64_t gmin = 0;
        for (std::size_t l = 0; l < L; ++l) {
            const double* s = scores + l * G;
            const bool* v = valid + l * G;
            double* c = compact.data() + l * G;
            std::int64_t m = 0;
            for (std::size_t k = 0; k < G; ++k)
                if (v[k]) c[m++] = s[k];
            count[l] = m;
            if (m > 0 && (gmin == 0 || m < gmin)) gmin = m;
        }
        return gmin;
    }

    // Shuffles model l's valid draws for (split, prompt key, model key) and fills
    // csum[0..m]. Returns m.
    std::int64_t shuffle_prefix(std::size_t l, const PhiloxKey& key, std::uint32_t split,
                                std::uint32_t prompt_key, std::uint32_t model_key) {
        const std::int64_t m = count[l];
        if (m == 0) return 0;
        const double* c = compact.data() + l * G;
        std::copy(c, c + m, shuffled.begin());
        const std::size_t n_blocks = (static_cast<std::size_t>(m) + 3) / 4;
        for (std::size_t b = 0; b < n_blocks; ++b) {
            const PhiloxCounter w = philox4x32_10(
                {static_cast<std::uint32_t>(b), split, prompt_key, model_key}, key);
            for (int i = 0; i < 4; ++i) words[4 * b + i] = w[i];
        }
        for (std::int64_t i = m - 1; i >= 1; --i) {
            const std::uint64_t j =
                (static_cast<std::uint64_t>(words[i]) * static_cast<std::uint64_t>(i + 1)) >>
                32;
            std::swap(shuffled[i], shuffled[j]);
        }
        csum[0] = 0.0;
        for (std::int64_t k = 0; k < m; ++k) csum[k + 1] = csum[k] + shuffled[k];
        return m;
    }
};

// Cross-fit value of one split size g from per-model (sel, rest); obs marks models.
inline double crossfit_value(const std::vector<double>& sel, const std::vector<double>& rest,
                             const std::vector<std::int64_t>& count) {
    double best = -std::numeric_limits<double>::infinity();
    for (std::size_t l = 0; l < sel.size(); ++l)
        if (count[l] > 0) best = std::max(best, sel[l]);
    double acc = 0.0;
    std::int64_t n_tied = 0;
    for (std::size_t l = 0; l < sel.size(); ++l) {
        if (count[l] > 0 && sel[l] >= best - kTieTol) {
            acc += rest[l];
            ++n_tied;
        }
    }
    return acc / static_cast<double>(n_tied);
}

}  // namespace graded_detail

// Monte Carlo cross-fit value per prompt (see the header comment).
// scores, valid: (N, L, G) row-major; prompt_key (N), model_key (L); out (N).
// Every prompt needs an observed model and every observed cell >= 2 valid draws
// (callers check; a prompt without an observed model gives NaN).
inline void graded_crossfit_rows(const double* scores, const bool* valid, std::size_t N,
                                 std::size_t L, std::size_t G,
                                 const std::uint32_t* prompt_key,
                                 const std::uint32_t* model_key, std::uint64_t seed,
                                 std::uint32_t n_splits, double* out) {
    using namespace graded_detail;
    const PhiloxKey key = philox_key(seed);
    parallel_blocks(N, kGradedGrain, [&](std::size_t r0, std::size_t r1) {
        PromptWork work(L, G);
        std::vector<double> sel1(L), rest1(L), sel2(L), rest2(L);
        for (std::size_t n = r0; n < r1; ++n) {
            const std::int64_t gmin = work.load(scores + n * L * G, valid + n * L * G);
            if (gmin == 0) {
                out[n] = std::numeric_limits<double>::quiet_NaN();
                continue;
            }
            const std::int64_t g1 = gmin / 2, g2 = gmin - gmin / 2;
            double acc = 0.0;
            for (std::uint32_t s = 0; s < n_splits; ++s) {
                for (std::size_t l = 0; l < L; ++l) {
                    const std::int64_t m = work.shuffle_prefix(l, key, s, prompt_key[n],
                                                               model_key[l]);
                    if (m == 0) continue;
                    const double* c = work.csum.data();
                    sel1[l] = c[g1] / static_cast<double>(g1);
                    rest1[l] = (c[m] - c[g1]) / static_cast<double>(m - g1);
                    sel2[l] = c[g2] / static_cast<double>(g2);
                    rest2[l] = (c[m] - c[g2]) / static_cast<double>(m - g2);
                }
                const double v1 = crossfit_value(sel1, rest1, work.count);
                if (g1 == g2) {
                    acc += v1;
                } else {
                    const double v2 = crossfit_value(sel2, rest2, work.count);
                    acc += 0.5 * (v1 + v2);
                }
            }
            out[n] = acc / static_cast<double>(n_splits);
        }
    });
}

// Monte Carlo subsample curve per prompt: out[n, k] = mean over splits of
// max_l c_l[sizes[k]] / sizes[k]. sizes must lie in 1..(fewest valid draws of an
// observed cell of the prompt) (callers check). out: (N, n_sizes).
inline void graded_curve_rows(const double* scores, const bool* valid, std::size_t N,
                              std::size_t L, std::size_t G, const std::uint32_t* prompt_key,
                              const std::uint32_t* model_key, std::uint64_t seed,
                              std::uint32_t n_splits, const std::int64_t* sizes,
                              std::size_t n_sizes, double* out) {
    using namespace graded_detail;
    const PhiloxKey key = philox_key(seed);
    constexpr double kNegInf = -std::numeric_limits<double>::infinity();
    parallel_blocks(N, kGradedGrain, [&](std::size_t r0, std::size_t r1) {
        PromptWork work(L, G);
        std::vector<double> best(n_sizes), acc(n_sizes);
        for (std::size_t n = r0; n < r1; ++n) {
            double* o = out + n * n_sizes;
            const std::int64_t gmin = work.load(scores + n * L * G, valid + n * L * G);
            if (gmin == 0) {
                std::fill(o, o + n_sizes, std::numeric_limits<double>::quiet_NaN());
                continue;
            }
            std::fill(acc.begin(), acc.end(), 0.0);
            for (std::uint32_t s = 0; s < n_splits; ++s) {
                std::fill(best.begin(), best.end(), kNegInf);
                for (std::size_t l = 0; l < L; ++l) {
                    const std::int64_t m = work.shuffle_prefix(l, key, s, prompt_key[n],
                                                               model_key[l]);
                    if (m == 0) continue;
                    for (std::size_t k = 0; k < n_sizes; ++k) {
                        const double v = work.csum[sizes[k]] / static_cast<double>(sizes[k]);
                        best[k] = std::max(best[k], v);
                    }
                }
                for (std::size_t k = 0; k < n_sizes; ++k) acc[k] += best[k];
            }
            for (std::size_t k = 0; k < n_sizes; ++k)
                o[k] = acc[k] / static_cast<double>(n_splits);
        }
    });
}

}  // namespace capfront
