// One registration function per kernel area, each in its own translation unit.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

void register_suffstats(pybind11::module_& m);
void register_expected_max(pybind11::module_& m);
void register_frontier(pybind11::module_& m);
void register_pareto3d(pybind11::module_& m);
void register_bootstrap(pybind11::module_& m);
void register_debias(pybind11::module_& m);
void register_graded(pybind11::module_& m);
void register_oracle(pybind11::module_& m);
void register_correlated(pybind11::module_& m);

namespace capfront_py {

// C-contiguous, native-endian arrays; forcecast copies only when it must.
template <class T>
using carray = pybind11::array_t<T, pybind11::array::c_style | pybind11::array::forcecast>;

inline void require(bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);  // -> ValueError
}

// The same for a literal message: no std::string is built unless the check fails
// (the overload above allocates one per call, which costs more than the kernels
// when a check runs once per cell).
inline void require(bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(what);
}

}  // namespace capfront_py
