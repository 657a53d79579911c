#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "capfront/frontier.hpp"
#include "register.hpp"

namespace py = pybind11;
using capfront_py::carray;
using capfront_py::require;

namespace {

// Runs the hull merge with the GIL released and writes straight into new arrays.
template <class Fill>
py::dict run_merge(std::size_t N, std::size_t M, const Fill& fill) {
    py::array_t<double> base_cost(static_cast<py::ssize_t>(N));
    py::array_t<double> base_quality(static_cast<py::ssize_t>(N));
    py::array_t<std::int64_t> base_option(static_cast<py::ssize_t>(N));
    capfront::HullMerge merge;
    {
        double* bc = base_cost.mutable_data();
        double* bq = base_quality.mutable_data();
        std::int64_t* bo = base_option.mutable_data();
        py::gil_scoped_release release;
        merge.build(N, M, fill, bc, bq, bo);
    }
    const auto S = static_cast<py::ssize_t>(merge.size());
    py::array_t<std::int64_t> prompt(S), option_from(S), option_to(S);
    py::array_t<double> dcost(S), dquality(S);
    {
        std::int64_t* p = prompt.mutable_data();
        double* dc = dcost.mutable_data();
        double* dq = dquality.mutable_data();
        std::int64_t* fr = option_from.mutable_data();
        std::int64_t* to = option_to.mutable_data();
        py::gil_scoped_release release;
        merge.write(p, dc, dq, fr, to);
    }
    py::dict d;
    d["base_cost"] = base_cost;
    d["base_quality"] = base_quality;
    d["base_option"] = base_option;
    d["prompt"] = prompt;
    d["dcost"] = dcost;
    d["dquality"] = dquality;
    d["option_from"] = option_from;
    d["option_to"] = option_to;
    return d;
}

py::dict hull_segments_dense(const carray<double>& cost, const carray<double>& quality) {
    require(cost.ndim() == 2, "option_cost must be shaped (N, M)");
    require(quality.ndim() == 2 && quality.shape(0) == cost.shape(0) &&
                quality.shape(1) == cost.shape(1),
            "option_quality must have the shape of option_cost");
    const auto N = static_cast<std::size_t>(cost.shape(0));
    const auto M = static_cast<std::size_t>(cost.shape(1));
    require(M <= (std::size_t{1} << 22), "too many options per prompt (at most 2^22)");
    return run_merge(N, M, capfront::DenseFill{cost.data(), quality.data(), M});
}

// A 2-D view of any strides (0 broadcasts), in elements.
template <class T>
capfront::Strided2D<T> view2d(const py::array& a, const char* name) {
    require(a.ndim() == 2, std::string(name) + " must be 2-D");
    const auto item = static_cast<py::ssize_t>(sizeof(T));
    require(a.strides(0) % item == 0 && a.strides(1) % item == 0,
            std::string(name) + " has strides that are not a multiple of its item size");
    return {static_cast<const T*>(a.data()), a.strides(0) / item, a.strides(1) / item};
}

template <class T>
bool is_dtype(const py::array& a) {
    return py::isinstance<py::array_t<T>>(a);
}

template <class TS, class TG>
py::dict posthoc_typed(const py::array& successes, const py::array& n_draws,
                       const py::array& cell_cost, bool divide_cost, std::size_t K) {
    const auto N = static_cast<std::size_t>(successes.shape(0));
    const auto L = static_cast<std::size_t>(successes.shape(1));
    require(L * K <= (std::size_t{1} << 22), "too many options per prompt (L * max_k > 2^22)");
    capfront::PosthocFill<TS, TG> fill{view2d<TS>(successes, "successes"),
                                       view2d<TG>(n_draws, "n_draws"),
                                       view2d<double>(cell_cost, "cell_cost"),
                                       divide_cost,
                                       L,
                                       K};
    return run_merge(N, L * K, fill);
}

// The counts' dtypes read in place: int64/int32, and the compact uint8/uint16.
template <class F>
py::dict with_count_dtype(const py::array& a, const char* name, const F& f) {
    if (is_dtype<std::int64_t>(a)) return f(std::int64_t{});
    if (is_dtype<std::int32_t>(a)) return f(std::int32_t{});
    if (is_dtype<std::uint8_t>(a)) return f(std::uint8_t{});
    if (is_dtype<std::uint16_t>(a)) return f(std::uint16_t{});
    throw std::invalid_argument(std::string(name) + " must be int64, int32, uint16 or uint8");
}

// Posthoc options of binary counts (any strides; see PosthocFill).
py::dict hull_segments_posthoc(const py::array& successes, const py::array& n_draws,
                               const py::array& cell_cost, std::int64_t max_k,
                               bool divide_cost) {
    require(successes.ndim() == 2, "successes must be shaped (N, L)");
    auto same = [&](const py::array& a) {
        return a.ndim() == 2 && a.shape(0) == successes.shape(0) &&
               a.shape(1) == successes.shape(1);
    };
    require(same(n_draws), "n_draws must have the shape of successes (broadcast views are fine)");
    require(same(cell_cost), "cell_cost must have the shape of successes (broadcast views are fine)");
    require(is_dtype<double>(cell_cost), "cell_cost must be float64");
    require(max_k >= 1, "max_k must be >= 1");
    const auto K = static_cast<std::size_t>(max_k);
    return with_count_dtype(successes, "successes", [&](auto s) {
        return with_count_dtype(n_draws, "n_draws", [&](auto g) {
            return posthoc_typed<decltype(s), decltype(g)>(successes, n_draws, cell_cost,
                                                           divide_cost, K);
        });
    });
}

template <class TQ, class TG>
py::dict cells_typed(const py::array& qnum, const py::array& n_draws, const py::array& cnum,
                     bool divide_quality, bool divide_cost) {
    const auto N = static_cast<std::size_t>(qnum.shape(0));
    const auto L = static_cast<std::size_t>(qnum.shape(1));
    require(L <= (std::size_t{1} << 22), "too many models (at most 2^22)");
    std::atomic<bool> negative{false};
    capfront::CellFill<TQ, TG> fill{view2d<TQ>(qnum, "quality"),
                                    view2d<TG>(n_draws, "n_draws"),
                                    view2d<double>(cnum, "cost"),
                                    divide_quality,
                                    divide_cost,
                                    L,
                                    &negative};
    py::dict d = run_merge(N, L, fill);
    require(!negative.load(), "option_cost must be >= 0 (NaN/inf mark unavailable options)");
    return d;
}

template <class TQ>
py::dict cells_g(const py::array& qnum, const py::array& n_draws, const py::array& cnum,
                 bool dq, bool dc) {
    if (is_dtype<std::int64_t>(n_draws)) return cells_typed<TQ, std::int64_t>(qnum, n_draws, cnum, dq, dc);
    if (is_dtype<std::int32_t>(n_draws)) return cells_typed<TQ, std::int32_t>(qnum, n_draws, cnum, dq, dc);
    // the compact storage of EvalResults, read in place (no widened copy)
    if (is_dtype<std::uint8_t>(n_draws)) return cells_typed<TQ, std::uint8_t>(qnum, n_draws, cnum, dq, dc);
    if (is_dtype<std::uint16_t>(n_draws)) return cells_typed<TQ, std::uint16_t>(qnum, n_draws, cnum, dq, dc);
    throw std::invalid_argument("n_draws must be int64, int32, uint16 or uint8");
}

// Prehoc options straight from the per-cell arrays (any strides; see CellFill).
py::dict hull_segments_cells(const py::array& qnum, const py::array& n_draws,
                             const py::array& cnum, bool divide_quality, bool divide_cost) {
    require(qnum.ndim() == 2, "quality must be shaped (N, L)");
    auto same = [&](const py::array& a) {
        return a.ndim() == 2 && a.shape(0) == qnum.shape(0) && a.shape(1) == qnum.shape(1);
    };
    require(same(n_draws), "n_draws must have the shape of quality (broadcast views are fine)");
    require(same(cnum), "cost must have the shape of quality (broadcast views are fine)");
    require(is_dtype<double>(cnum), "cost must be float64");
    if (is_dtype<double>(qnum)) return cells_g<double>(qnum, n_draws, cnum, divide_quality, divide_cost);
    if (is_dtype<std::int64_t>(qnum)) return cells_g<std::int64_t>(qnum, n_draws, cnum, divide_quality, divide_cost);
    if (is_dtype<std::int32_t>(qnum)) return cells_g<std::int32_t>(qnum, n_draws, cnum, divide_quality, divide_cost);
    // binary counts as EvalResults stores them (uint8, uint16 above 255 draws)
    if (is_dtype<std::uint8_t>(qnum)) return cells_g<std::uint8_t>(qnum, n_draws, cnum, divide_quality, divide_cost);
    if (is_dtype<std::uint16_t>(qnum)) return cells_g<std::uint16_t>(qnum, n_draws, cnum, divide_quality, divide_cost);
    throw std::invalid_argument("quality must be float64, int64, int32, uint16 or uint8");
}

py::array_t<double> frontier_vertices(double x0, double y0, const carray<double>& weights,
                                      const carray<std::int64_t>& prompt,
                                      const carray<double>& dcost,
                                      const carray<double>& dquality) {
    require(weights.ndim() == 1 && prompt.ndim() == 1 && dcost.ndim() == 1 &&
                dquality.ndim() == 1,
            "frontier_vertices takes 1-D arrays");
    const auto S = static_cast<std::size_t>(prompt.shape(0));
    require(static_cast<std::size_t>(dcost.shape(0)) == S &&
                static_cast<std::size_t>(dquality.shape(0)) == S,
            "prompt, dcost and dquality must have the same length");
    const auto N = weights.shape(0);
    const std::int64_t* p = prompt.data();
    bool in_range = true;
    for (std::size_t s = 0; s < S; ++s) in_range &= p[s] >= 0 && p[s] < N;
    require(in_range, "segment prompt index out of range");
    std::vector<double> x, y;
    {
        py::gil_scoped_release release;
        capfront::frontier_vertices(x0, y0, weights.data(), p, dcost.data(), dquality.data(),
                                    S, x, y);
    }
    const std::size_t m = x.size();
    py::array_t<double> out({static_cast<py::ssize_t>(m), py::ssize_t{2}});
    double* o = out.mutable_data();
    for (std::size_t i = 0; i < m; ++i) {
        o[2 * i] = x[i];
        o[2 * i + 1] = y[i];
    }
    return out;
}

}  // namespace

void register_frontier(py::module_& m) {
    m.def("hull_segments_dense", &hull_segments_dense, py::arg("option_cost"),
          py::arg("option_quality"),
          "Per-prompt upper hulls of (N, M) options merged by slope (GIL released).");
    m.def("hull_segments_posthoc", &hull_segments_posthoc, py::arg("successes"),
          py::arg("n_draws"), py::arg("cell_cost"), py::arg("max_k"),
          py::arg("divide_cost") = false,
          "Hull segments of the binary best-of-k options, built on the fly from (N, L) "
          "counts of any strides and integer dtype (read in place); the cost of one "
          "generation is cell_cost, or cell_cost / n_draws with divide_cost.");
    m.def("hull_segments_cells", &hull_segments_cells, py::arg("quality"), py::arg("n_draws"),
          py::arg("cost"), py::arg("divide_quality"), py::arg("divide_cost"),
          "Hull segments of the prehoc options built from (N, L) per-cell arrays of any "
          "strides: quality (/ n_draws), cost (/ n_draws); a cell with n_draws == 0 or a "
          "non-finite value has no option.");
    m.def("frontier_vertices", &frontier_vertices, py::arg("x0"), py::arg("y0"),
          py::arg("weights"), py::arg("prompt"), py::arg("dcost"), py::arg("dquality"),
          "Running points of the weighted segments, collinear points removed.");
}
