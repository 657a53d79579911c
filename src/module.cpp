// capfront._core: pybind11 bindings only. Kernels live in cpp/include/capfront.
#include <pybind11/pybind11.h>

#include "capfront/parallel.hpp"
#include "register.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
    m.doc() = "capfront C++ kernels (see cpp/include/capfront for the algorithms)";
    m.def("num_threads", &capfront::num_threads, "Threads the kernels use.");
    m.def("set_num_threads", &capfront::set_num_threads, py::arg("n"),
          "Set the kernels' thread count (0 = all cores). Results do not depend on it.");
    register_suffstats(m);
    register_expected_max(m);
    register_frontier(m);
    register_pareto3d(m);
    register_bootstrap(m);
    register_debias(m);
    register_graded(m);
    register_oracle(m);
    register_correlated(m);
}
