#include "register.hpp"

namespace py = pybind11;

void register_bootstrap(py::module_& m) { (void)m; }
