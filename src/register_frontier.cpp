#include <algorithm>
#include <cstdint>
#include <vector>

#include "capfront/frontier.hpp"
#include "register.hpp"

namespace py = pybind11;
using capfront_py::carray;
using capfront_py::require;

namespace {

template <class T>
py::array_t<T> to_array(const std::vector<T>& v) {
    py::array_t<T> out(static_cast<py::ssize_t>(v.size()));
    std::copy(v.begin(), v.end(), out.mutable_data());
    return out;
}

py::dict to_dict(const capfront::HullSegments& s) {
    py::dict d;
    d["base_cost"] = to_array(s.base_cost);
    d["base_quality"] = to_array(s.base_quality);
    d["base_option"] = to_array(s.base_option);
    d["prompt"] = to_array(s.prompt);
    d["dcost"] = to_array(s.dcost);
    d["dquality"] = to_array(s.dquality);
    d["option_from"] = to_array(s.option_from);
    d["option_to"] = to_array(s.option_to);
    return d;
}

py::dict hull_segments_dense(const carray<double>& cost, const carray<double>& quality) {
    require(cost.ndim() == 2, "option_cost must be shaped (N, M)");
    require(quality.ndim() == 2 && quality.shape(0) == cost.shape(0) &&
                quality.shape(1) == cost.shape(1),
            "option_quality must have the shape of option_cost");
    const auto N = static_cast<std::size_t>(cost.shape(0));
    const auto M = static_cast<std::size_t>(cost.shape(1));
    const double* c = cost.data();
    const double* q = quality.data();
    capfront::HullSegments s;
    {
        py::gil_scoped_release release;
        s = capfront::hull_segments_dense(c, q, N, M);
    }
    return to_dict(s);
}

py::dict hull_segments_posthoc(const carray<std::int64_t>& successes,
                               const carray<std::int64_t>& n_draws,
                               const carray<double>& cell_cost, std::int64_t max_k) {
    require(successes.ndim() == 2, "successes must be shaped (N, L)");
    auto same = [&](const py::array& a) {
        return a.ndim() == 2 && a.shape(0) == successes.shape(0) &&
               a.shape(1) == successes.shape(1);
    };
    require(same(n_draws), "n_draws must have the shape of successes");
    require(same(cell_cost), "cell_cost must have the shape of successes");
    require(max_k >= 1, "max_k must be >= 1");
    const auto N = static_cast<std::size_t>(successes.shape(0));
    const auto L = static_cast<std::size_t>(successes.shape(1));
    const std::int64_t* S = successes.data();
    const std::int64_t* G = n_draws.data();
    const double* c = cell_cost.data();
    capfront::HullSegments s;
    {
        py::gil_scoped_release release;
        s = capfront::hull_segments_posthoc(S, G, c, N, L, static_cast<std::size_t>(max_k));
    }
    return to_dict(s);
}

}  // namespace

void register_frontier(py::module_& m) {
    m.def("hull_segments_dense", &hull_segments_dense, py::arg("option_cost"),
          py::arg("option_quality"),
          "Per-prompt upper hulls of (N, M) options merged by slope (GIL released).");
    m.def("hull_segments_posthoc", &hull_segments_posthoc, py::arg("successes"),
          py::arg("n_draws"), py::arg("cell_cost"), py::arg("max_k"),
          "Hull segments of the binary best-of-k options, built on the fly.");
}
