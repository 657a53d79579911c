#include <cstdint>
#include <string>

#include "capfront/oracle.hpp"
#include "register.hpp"

namespace py = pybind11;
using capfront_py::require;

namespace {

// The Python wrapper hands C-contiguous native arrays of these dtypes (it casts
// any other): S uint8/uint16/int32/int64/float64, G uint8/uint16/int32/int64.
template <class T>
bool is_c_of(const py::array& a) {
    // equivalent dtype (byte order included), not the same dtype object
    return py::isinstance<py::array_t<T>>(a) && (a.flags() & py::array::c_style);
}

template <class TS, class F>
py::tuple with_g(const py::array& S, const py::object& G, std::int64_t g_const,
                 const py::object& cost_sum, F&& run) {
    const auto N = static_cast<std::size_t>(S.shape(0));
    const auto L = static_cast<std::size_t>(S.shape(1));
    const double* cs = nullptr;
    bool shared = false;
    if (!cost_sum.is_none()) {
        auto c = py::cast<py::array>(cost_sum);
        require(is_c_of<double>(c) && c.ndim() == 2 &&
                    (c.shape(0) == S.shape(0) || c.shape(0) == 1) &&
                    c.shape(1) == S.shape(1),
                "cost_sum must be a C-contiguous float64 array shaped like successes, "
                "or one row of it shared by every prompt");
        cs = static_cast<const double*>(c.data());
        shared = c.shape(0) == 1;
    }
    const auto* s = static_cast<const TS*>(S.data());
    if (G.is_none()) {
        return run(
            capfront::OracleInput<TS, std::uint8_t>{s, nullptr, g_const, cs, N, L, shared});
    }
    auto g = py::cast<py::array>(G);
    require(g.ndim() == 2 && g.shape(0) == S.shape(0) && g.shape(1) == S.shape(1),
            "n_draws must be shaped like successes");
    auto in = [&](auto tag) {
        using TG = decltype(tag);
        return capfront::OracleInput<TS, TG>{s, static_cast<const TG*>(g.data()), 0, cs, N, L,
                                             shared};
    };
    if (is_c_of<std::uint8_t>(g)) return run(in(std::uint8_t{}));
    if (is_c_of<std::uint16_t>(g)) return run(in(std::uint16_t{}));
    if (is_c_of<std::int32_t>(g)) return run(in(std::int32_t{}));
    if (is_c_of<std::int64_t>(g)) return run(in(std::int64_t{}));
    throw std::invalid_argument("n_draws must be C-contiguous uint8, uint16, int32 or int64");
}

template <class F>
py::tuple with_types(const py::array& S, const py::object& G, std::int64_t g_const,
                     const py::object& cost_sum, F&& run) {
    require(S.ndim() == 2, "successes must be shaped (N, L)");
    if (is_c_of<std::uint8_t>(S)) return with_g<std::uint8_t>(S, G, g_const, cost_sum, run);
    if (is_c_of<std::uint16_t>(S)) return with_g<std::uint16_t>(S, G, g_const, cost_sum, run);
    if (is_c_of<std::int32_t>(S)) return with_g<std::int32_t>(S, G, g_const, cost_sum, run);
    if (is_c_of<std::int64_t>(S)) return with_g<std::int64_t>(S, G, g_const, cost_sum, run);
    if (is_c_of<double>(S)) return with_g<double>(S, G, g_const, cost_sum, run);
    throw std::invalid_argument(
        "successes must be C-contiguous uint8, uint16, int32, int64 or float64");
}

py::tuple prehoc_rows(const py::array& S, const py::object& G, std::int64_t g_const,
                      const py::object& cost_sum) {
    return with_types(S, G, g_const, cost_sum, [&](const auto& in) {
        py::array_t<std::int64_t> choice(static_cast<py::ssize_t>(in.N));
        py::array_t<double> value(static_cast<py::ssize_t>(in.N));
        py::array_t<double> cost(static_cast<py::ssize_t>(in.cost_sum ? in.N : 0));
        std::int64_t* ch = choice.mutable_data();
        double* v = value.mutable_data();
        double* c = in.cost_sum ? cost.mutable_data() : nullptr;
        {
            py::gil_scoped_release release;
            capfront::prehoc_oracle_rows(in, ch, v, c);
        }
        return py::make_tuple(choice, value, cost);
    });
}

py::tuple union_rows(const py::array& S, const py::object& G, std::int64_t g_const,
                     const py::object& cost_sum) {
    return with_types(S, G, g_const, cost_sum, [&](const auto& in) {
        py::array_t<double> miss(static_cast<py::ssize_t>(in.N));
        py::array_t<double> cost(static_cast<py::ssize_t>(in.cost_sum ? in.N : 0));
        double* m = miss.mutable_data();
        double* c = in.cost_sum ? cost.mutable_data() : nullptr;
        {
            py::gil_scoped_release release;
            capfront::union_oracle_rows(in, m, c);
        }
        return py::make_tuple(miss, cost);
    });
}

}  // namespace

void register_oracle(py::module_& m) {
    m.def("prehoc_oracle_rows", &prehoc_rows, py::arg("successes"), py::arg("n_draws"),
          py::arg("g_const"), py::arg("cost_sum"),
          "Per prompt: (choice, p_hat at the choice, its mean cost); n_draws None means "
          "g_const draws in every cell; cost_sum None gives an empty cost array.");
    m.def("union_oracle_rows", &union_rows, py::arg("successes"), py::arg("n_draws"),
          py::arg("g_const"), py::arg("cost_sum"),
          "Per prompt: (prod_l (1 - p_hat) over the run cells, sum_l mean cost over "
          "them in NumPy's pairwise order).");
}
