#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include <pybind11/stl.h>

#include "capfront/pareto3d.hpp"
#include "register.hpp"

namespace py = pybind11;
using capfront_py::carray;
using capfront_py::require;

namespace {

py::array_t<std::int64_t> pareto_minima_3d(const carray<double>& points,
                                           const std::array<bool, 3>& maximize) {
    require(points.ndim() == 2 && points.shape(1) == 3, "points must be shaped (M, 3)");
    const auto M = static_cast<std::size_t>(points.shape(0));
    const double* p = points.data();
    std::vector<std::int64_t> keep;
    {
        py::gil_scoped_release release;
        keep = capfront::pareto_minima_3d(p, M, maximize);
    }
    py::array_t<std::int64_t> out(static_cast<py::ssize_t>(keep.size()));
    std::copy(keep.begin(), keep.end(), out.mutable_data());
    return out;
}

}  // namespace

void register_pareto3d(py::module_& m) {
    m.def("pareto_minima_3d", &pareto_minima_3d, py::arg("points"),
          py::arg("maximize") = std::array<bool, 3>{false, false, false},
          "Indices (ascending) of the non-dominated rows, column d negated first where "
          "maximize[d] (-0.0 read as 0.0); ValueError on NaN.");
}
