#include <algorithm>
#include <cstdint>
#include <vector>

#include "capfront/expected_max.hpp"
#include "register.hpp"

namespace py = pybind11;
using capfront_py::carray;
using capfront_py::require;

namespace {

py::array_t<double> expected_max_binomial(const carray<double>& p,
                                          const carray<std::int64_t>& n_draws) {
    require(p.ndim() == 2, "p must be shaped (R, L)");
    require(n_draws.ndim() == 2 &&
                (n_draws.shape(0) == p.shape(0) || n_draws.shape(0) == 1) &&
                n_draws.shape(1) == p.shape(1),
            "n_draws must have the shape of p, or one row of it (the same for every row)");
    const auto R = static_cast<std::size_t>(p.shape(0));
    const auto L = static_cast<std::size_t>(p.shape(1));
    const std::size_t nd_rows = static_cast<std::size_t>(n_draws.shape(0));
    py::array_t<double> out(static_cast<py::ssize_t>(R));
    const double* pp = p.data();
    const std::int64_t* gg = n_draws.data();
    bool ok = true;
    for (std::size_t i = 0; i < nd_rows * L; ++i) ok &= gg[i] <= capfront::kMaxDraws;
    require(ok, "n_draws must be at most 2**31 - 1 (2147483647)");
    double* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        capfront::expected_max_binomial(pp, gg, R, L, o, nd_rows == 1 && R != 1 ? 0 : L);
    }
    return out;
}

py::array_t<double> subsample_curve(const carray<std::int64_t>& successes,
                                    const carray<std::int64_t>& n_draws,
                                    const carray<std::int64_t>& sizes) {
    require(successes.ndim() == 2, "successes must be shaped (N, L)");
    require(n_draws.ndim() == 2 && n_draws.shape(0) == successes.shape(0) &&
                n_draws.shape(1) == successes.shape(1),
            "n_draws must have the shape of successes");
    require(sizes.ndim() == 1, "sizes must be 1-D");
    const auto N = static_cast<std::size_t>(successes.shape(0));
    const auto L = static_cast<std::size_t>(successes.shape(1));
    const auto n_sizes = static_cast<std::size_t>(sizes.shape(0));
    std::vector<double> curve;
    const std::int64_t* s = successes.data();
    const std::int64_t* g = n_draws.data();
    const std::int64_t* z = sizes.data();
    // The kernel indexes tables by these: check them here, never crash.
    std::int64_t g_min = -1;
    for (std::size_t i = 0; i < N * L; ++i) {
        require(s[i] >= 0 && s[i] <= std::max<std::int64_t>(g[i], 0),
                "successes must lie between 0 and n_draws");
        if (g[i] > 0 && (g_min < 0 || g[i] < g_min)) g_min = g[i];
    }
    for (std::size_t j = 0; j < n_sizes; ++j)
        require(z[j] >= 1 && (g_min < 0 || z[j] <= g_min),
                "sizes must lie between 1 and the fewest draws of an observed cell");
    {
        py::gil_scoped_release release;
        curve = capfront::subsample_curve(s, g, N, L, z, n_sizes);
    }
    py::array_t<double> out(static_cast<py::ssize_t>(n_sizes));
    std::copy(curve.begin(), curve.end(), out.mutable_data());
    return out;
}

}  // namespace

void register_expected_max(py::module_& m) {
    m.def("expected_max_binomial", &expected_max_binomial, py::arg("p"), py::arg("n_draws"),
          "E[max_l Y_l / G_l] per row, Y_l ~ Bin(G_l, p_l) (GIL released); n_draws is "
          "(R, L) or (1, L), one row for all.");
    m.def("subsample_curve", &subsample_curve, py::arg("successes"), py::arg("n_draws"),
          py::arg("sizes"), "Exact hypergeometric subsample curve, mean over rows.");
}
