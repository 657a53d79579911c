// Deterministic parallel loops over rows (prompts).
//
// Work is cut into fixed-size blocks whose boundaries do not depend on the number
// of threads, and reductions add block partial sums in block order, so every
// result is bit-identical for any thread count.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace capfront {

inline std::atomic<int>& thread_setting() {
    static std::atomic<int> n{0};  // 0 = use std::thread::hardware_concurrency()
    return n;
}

inline int num_threads() {
    int n = thread_setting().load();
    if (n <= 0) {
        n = static_cast<int>(std::thread::hardware_concurrency());
    }
    return std::max(1, n);
}

inline void set_num_threads(int n) { thread_setting().store(n < 0 ? 0 : n); }

// Rows per block. Fixed: changing it changes the floating-point summation order.
constexpr std::size_t kBlockRows = 2048;

// Calls body(block_begin, block_end) for consecutive blocks of `grain` rows, on up
// to num_threads() threads. Blocks are handed out dynamically; the body must only
// write to memory owned by its rows/blocks.
template <class Body>
void parallel_blocks(std::size_t n, std::size_t grain, Body&& body) {
    if (n == 0) return;
    grain = std::max<std::size_t>(1, grain);
    const std::size_t n_blocks = (n + grain - 1) / grain;
    const int n_threads =
        static_cast<int>(std::min<std::size_t>(num_threads(), n_blocks));
    if (n_threads <= 1) {
        for (std::size_t b = 0; b < n_blocks; ++b) {
            body(b * grain, std::min(n, (b + 1) * grain));
        }
        return;
    }
    std::atomic<std::size_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto worker = [&]() {
        try {
            for (;;) {
                const std::size_t b = next.fetch_add(1);
                if (b >= n_blocks) break;
                body(b * grain, std::min(n, (b + 1) * grain));
            }
        } catch (...) {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!error) error = std::current_exception();
            next.store(n_blocks);
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(n_threads - 1);
    for (int t = 1; t < n_threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& th : pool) th.join();
    if (error) std::rethrow_exception(error);
}

// Deterministic sum over rows of m-vector row values:
// out[j] = sum_i value(i)[j], with value(i, double* out_m) writing m values.
// Returns the sums; per-block partials are added in block order.
template <class RowValue>
std::vector<double> block_sum(std::size_t n, std::size_t m, RowValue&& row_value) {
    const std::size_t n_blocks = (n + kBlockRows - 1) / kBlockRows;
    std::vector<double> partial(n_blocks * m, 0.0);
    parallel_blocks(n_blocks, 1, [&](std::size_t b0, std::size_t b1) {
        std::vector<double> row(m);
        for (std::size_t b = b0; b < b1; ++b) {
            double* acc = partial.data() + b * m;
            const std::size_t i1 = std::min(n, (b + 1) * kBlockRows);
            for (std::size_t i = b * kBlockRows; i < i1; ++i) {
                row_value(i, row.data());
                for (std::size_t j = 0; j < m; ++j) acc[j] += row[j];
            }
        }
    });
    std::vector<double> out(m, 0.0);
    for (std::size_t b = 0; b < n_blocks; ++b)
        for (std::size_t j = 0; j < m; ++j) out[j] += partial[b * m + j];
    return out;
}

}  // namespace capfront
