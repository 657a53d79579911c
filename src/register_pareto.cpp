#include "register.hpp"

namespace py = pybind11;

void register_pareto(py::module_& m) { (void)m; }
