// Seeded Monte Carlo subsample estimators for graded (real-valued) scores (design §4a,
// 4d, 4e). With real-valued scores the per-cell sums are not sufficient, so the exact
// hypergeometric expectations of the binary path are replaced by an average over
// n_splits random orderings of each cell's valid draws.
//
// Random ordering (the same in python/capfront/debias/graded.py and
// _numba_graded.py, bit for bit): the m valid draws of cell (n, l) are taken in
// their original order a[0..m) and shuffled by forward Fisher-Yates,
//     for i = 0 .. m-2:  j = i + ((w[i] * (m - i)) >> 32),  swap(a[i], a[j]),
// whose first k steps already fix a[0..k) (a uniform random k-subset in random
// order), so the kernels stop after the largest prefix they need;
// where w[i] = word s * stride + i of the Philox4x32-10 stream (rep = prompt_key[n],
// stream = model_key[l]) in the bootstrap's layout (philox_stream_words), s the split,
// stride = 4 * ceil(m / 4) (whole blocks per split). The words depend only on (seed,
// split, prompt key, model key), never on threads or chunking, and a cell's splits
// are one contiguous stream, which the AVX2/AVX-512 Philox path fills in batches.
// (The multiply-shift index is biased by at most m / 2^32, far below Monte Carlo
// error.)
//
// Per prompt and split, with c[k] = a[0] + ... + a[k-1] summed in that order and
// T = the sum of the cell's valid draws in their original order:
// - crossfit: gmin = fewest valid draws of an observed cell; for g in
//   {floor(gmin/2), ceil(gmin/2)}: sel_l = c_l[g] / g, rest_l = (T_l - c_l[g]) /
//   (m_l - g); the value is the mean of rest_l over the models with
//   sel_l >= max_l sel_l - 1e-12 (ties shared, models in order); the split's
//   contribution is the mean over the two g (one when they are equal).
// - curve: for each requested size g, max over observed models of c_l[g] / g.
// Contributions are summed over splits in split order and divided by n_splits.
//
// Cost: O(n_splits * N * L * G) (Philox: ceil(m/4) blocks of 10 rounds per cell and
// split). Memory: the inputs, the (N,) or (N, K) output, and O(L (G + K) kSplitChunk)
// per thread: splits run in chunks, model by model, so each cell's words for a chunk
// come from one vectorised stream call.
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
constexpr std::size_t kGradedGrain = 16;   // prompts per parallel block
constexpr std::uint32_t kSplitChunk = 64;  // splits per batch of Philox words

// One prompt's valid draws, compacted per model, and the scratch of one cell.
struct PromptWork {
    std::size_t L, G;
    std::vector<double> compact;       // (L, G): valid draws of model l first, in order
    std::vector<std::int64_t> count;   // valid draws per model
    std::vector<double> total;         // their sum, in original order
    std::vector<double> shuffled;      // (G)
    std::vector<double> csum;          // (G + 1)
    std::vector<std::uint32_t> words;  // (kSplitChunk * stride)
    PromptWork(std::size_t L_, std::size_t G_)
        : L(L_),
          G(G_),
          compact(L_ * G_),
          count(L_),
          total(L_),
          shuffled(G_),
          csum(G_ + 1),
          words(kSplitChunk * 4 * ((G_ + 3) / 4)) {}

    // Returns the fewest valid draws of an observed model (0 if none observed).
    std::int64_t load(const double* scores, const bool* valid) {
        std::int64_t gmin = 0;
        for (std::size_t l = 0; l < L; ++l) {
            const double* s = scores + l * G;
            const bool* v = valid + l * G;
            double* c = compact.data() + l * G;
            std::int64_t m = 0;
            double sum = 0.0;
            for (std::size_t k = 0; k < G; ++k) {
                if (v[k]) {
                    c[m++] = s[k];
                    sum += s[k];
                }
            }
            count[l] = m;
            total[l] = sum;
            if (m > 0 && (gmin == 0 || m < gmin)) gmin = m;
        }
        return gmin;
    }

    // Words of model l's cell for splits [s0, s0 + ns); returns the stride.
    std::size_t fetch_words(std::size_t l, std::uint64_t seed, std::uint32_t s0,
                            std::uint32_t ns, std::uint32_t prompt_key,
                            std::uint32_t model_key) {
        const std::size_t stride = 4 * ((static_cast<std::size_t>(count[l]) + 3) / 4);
        philox_stream_words(seed, prompt_key, model_key, std::uint64_t{s0} * stride,
                            ns * stride, words.data());
        return stride;
    }

    // The first k (<= m) positions of model l's forward Fisher-Yates shuffle with
    // words w[0..k), and csum[0..k].
    void shuffle_prefix(std::size_t l, const std::uint32_t* w, std::int64_t k) {
        const std::int64_t m = count[l];
        const double* c = compact.data() + l * G;
        std::copy(c, c + m, shuffled.begin());
        for (std::int64_t i = 0; i < k; ++i) {
            const std::uint64_t j =
                static_cast<std::uint64_t>(i) +
                ((static_cast<std::uint64_t>(w[i]) * static_cast<std::uint64_t>(m - i)) >> 32);
            std::swap(shuffled[i], shuffled[j]);
        }
        csum[0] = 0.0;
        for (std::int64_t i = 0; i < k; ++i) csum[i + 1] = csum[i] + shuffled[i];
    }
};

// Cross-fit value of one split size from per-model (sel, rest) rows of length L;
// count marks the observed models.
inline double crossfit_value(const double* sel, const double* rest,
                             const std::vector<std::int64_t>& count) {
    const std::size_t L = count.size();
    double best = -std::numeric_limits<double>::infinity();
    for (std::size_t l = 0; l < L; ++l)
        if (count[l] > 0) best = std::max(best, sel[l]);
    double acc = 0.0;
    std::int64_t n_tied = 0;
    for (std::size_t l = 0; l < L; ++l) {
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
    parallel_blocks(N, kGradedGrain, [&](std::size_t r0, std::size_t r1) {
        PromptWork work(L, G);
        // (split in chunk, model): sel and rest for the two split sizes
        std::vector<double> sel1(kSplitChunk * L), rest1(kSplitChunk * L),
            sel2(kSplitChunk * L), rest2(kSplitChunk * L);
        for (std::size_t n = r0; n < r1; ++n) {
            const std::int64_t gmin = work.load(scores + n * L * G, valid + n * L * G);
            if (gmin == 0) {
                out[n] = std::numeric_limits<double>::quiet_NaN();
                continue;
            }
            const std::int64_t g1 = gmin / 2, g2 = gmin - gmin / 2;
            double acc = 0.0;
            for (std::uint32_t s0 = 0; s0 < n_splits; s0 += kSplitChunk) {
                const std::uint32_t ns = std::min(kSplitChunk, n_splits - s0);
                for (std::size_t l = 0; l < L; ++l) {
                    const std::int64_t m = work.count[l];
                    if (m == 0) continue;
                    const std::size_t stride =
                        work.fetch_words(l, seed, s0, ns, prompt_key[n], model_key[l]);
                    const double* c = work.csum.data();
                    for (std::uint32_t t = 0; t < ns; ++t) {
                        work.shuffle_prefix(l, work.words.data() + t * stride, g2);
                        const std::size_t i = t * L + l;
                        const double T = work.total[l];
                        sel1[i] = c[g1] / static_cast<double>(g1);
                        rest1[i] = (T - c[g1]) / static_cast<double>(m - g1);
                        sel2[i] = c[g2] / static_cast<double>(g2);
                        rest2[i] = (T - c[g2]) / static_cast<double>(m - g2);
                    }
                }
                for (std::uint32_t t = 0; t < ns; ++t) {
                    const double v1 =
                        crossfit_value(sel1.data() + t * L, rest1.data() + t * L, work.count);
                    if (g1 == g2) {
                        acc += v1;
                    } else {
                        const double v2 = crossfit_value(sel2.data() + t * L,
                                                         rest2.data() + t * L, work.count);
                        acc += 0.5 * (v1 + v2);
                    }
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
    constexpr double kNegInf = -std::numeric_limits<double>::infinity();
    parallel_blocks(N, kGradedGrain, [&](std::size_t r0, std::size_t r1) {
        PromptWork work(L, G);
        std::vector<double> best(kSplitChunk * n_sizes), acc(n_sizes);
        const std::int64_t k_max = n_sizes ? *std::max_element(sizes, sizes + n_sizes) : 0;
        for (std::size_t n = r0; n < r1; ++n) {
            double* o = out + n * n_sizes;
            const std::int64_t gmin = work.load(scores + n * L * G, valid + n * L * G);
            if (gmin == 0) {
                std::fill(o, o + n_sizes, std::numeric_limits<double>::quiet_NaN());
                continue;
            }
            std::fill(acc.begin(), acc.end(), 0.0);
            for (std::uint32_t s0 = 0; s0 < n_splits; s0 += kSplitChunk) {
                const std::uint32_t ns = std::min(kSplitChunk, n_splits - s0);
                std::fill(best.begin(), best.begin() + ns * n_sizes, kNegInf);
                for (std::size_t l = 0; l < L; ++l) {
                    if (work.count[l] == 0) continue;
                    const std::size_t stride =
                        work.fetch_words(l, seed, s0, ns, prompt_key[n], model_key[l]);
                    for (std::uint32_t t = 0; t < ns; ++t) {
                        work.shuffle_prefix(l, work.words.data() + t * stride, k_max);
                        double* b = best.data() + t * n_sizes;
                        for (std::size_t k = 0; k < n_sizes; ++k)
                            b[k] = std::max(b[k], work.csum[sizes[k]] /
                                                      static_cast<double>(sizes[k]));
                    }
                }
                for (std::uint32_t t = 0; t < ns; ++t)
                    for (std::size_t k = 0; k < n_sizes; ++k) acc[k] += best[t * n_sizes + k];
            }
            for (std::size_t k = 0; k < n_sizes; ++k)
                o[k] = acc[k] / static_cast<double>(n_splits);
        }
    });
}

}  // namespace capfront
