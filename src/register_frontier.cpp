#include "register.hpp"

namespace py = pybind11;

void register_frontier(py::module_& m) { (void)m; }
