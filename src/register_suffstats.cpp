#include <cstdint>

#include "capfront/suffstats.hpp"
#include "register.hpp"

namespace py = pybind11;
using capfront_py::carray;
using capfront_py::require;

namespace {

template <class T>
py::dict suffstats_impl(const py::array& scores_obj, const py::object& mask_obj,
                        const py::object& cost_obj, const py::object& latency_obj) {
    carray<T> scores = py::cast<carray<T>>(scores_obj);
    require(scores.ndim() == 3, "scores must be shaped (N, L, G)");
    const auto N = static_cast<std::size_t>(scores.shape(0));
    const auto L = static_cast<std::size_t>(scores.shape(1));
    const auto G = static_cast<std::size_t>(scores.shape(2));
    auto same_shape = [&](const py::array& a, const char* name) {
        require(a.ndim() == 3 && static_cast<std::size_t>(a.shape(0)) == N &&
                    static_cast<std::size_t>(a.shape(1)) == L &&
                    static_cast<std::size_t>(a.shape(2)) == G,
                std::string(name) + " must have the shape of scores");
    };
    carray<std::uint8_t> mask;
    carray<double> cost, latency;
    // A default-constructed array_t is an empty array, not a null handle: keep flags.
    const bool has_mask = !mask_obj.is_none();
    const bool has_cost = !cost_obj.is_none();
    const bool has_latency = !latency_obj.is_none();
    if (has_mask) {
        mask = py::cast<carray<std::uint8_t>>(mask_obj);
        same_shape(mask, "mask");
    }
    if (has_cost) {
        cost = py::cast<carray<double>>(cost_obj);
        same_shape(cost, "cost");
    }
    if (has_latency) {
        latency = py::cast<carray<double>>(latency_obj);
        same_shape(latency, "latency");
    }
    require(G < (std::size_t{1} << 31), "at most 2^31 - 1 generations per cell");
    const std::vector<py::ssize_t> shape2{static_cast<py::ssize_t>(N), static_cast<py::ssize_t>(L)};
    constexpr bool byte_scores = capfront::detail::is_byte_score<T>;
    capfront::SuffStatsOut out;
    py::object successes, sum_sq = py::none(), max_score = py::none(), n_draws = py::none();
    if constexpr (byte_scores) {  // integer counts; sum_sq and max follow from them
        if (G <= 255) {  // a count of 0/1 scores fits in a byte: the compact storage
            py::array_t<std::uint8_t> a(shape2);
            out.counts8 = a.mutable_data();
            successes = a;
        } else {
            py::array_t<std::int32_t> a(shape2);
            out.counts = a.mutable_data();
            successes = a;
        }
    } else {
        py::array_t<double> a(shape2), b(shape2), c(shape2);
        out.successes = a.mutable_data();
        out.sum_sq = b.mutable_data();
        out.max_score = c.mutable_data();
        successes = a;
        sum_sq = b;
        max_score = c;
    }
    if (has_mask) {  // without a mask every cell has G draws: the caller broadcasts G
        py::array_t<std::int32_t> a(shape2);
        out.n_draws = a.mutable_data();
        n_draws = a;
    }
    py::object cost_sum = py::none(), latency_sum = py::none(), latency_max = py::none();
    if (has_cost) {
        py::array_t<double> a(shape2);
        out.cost_sum = a.mutable_data();
        cost_sum = a;
    }
    if (has_latency) {
        py::array_t<double> a(shape2), b(shape2);
        out.latency_sum = a.mutable_data();
        out.latency_max = b.mutable_data();
        latency_sum = a;
        latency_max = b;
    }
    const T* s = scores.data();
    const std::uint8_t* mk = has_mask ? mask.data() : nullptr;
    const double* c = has_cost ? cost.data() : nullptr;
    const double* t = has_latency ? latency.data() : nullptr;
    capfront::SuffStatsFlags flags;
    {
        py::gil_scoped_release release;
        flags = capfront::sufficient_stats<T>(s, mk, c, t, N, L, G, out);
    }
    py::dict d;
    d["successes"] = successes;
    d["sum_sq"] = sum_sq;
    d["n_draws"] = n_draws;
    d["max_score"] = max_score;
    d["cost_sum"] = cost_sum;
    d["latency_sum"] = latency_sum;
    d["latency_max"] = latency_max;
    d["nonfinite_scores"] = flags.nonfinite_scores;
    d["out_of_range_scores"] = flags.out_of_range_scores;
    d["nonbinary_scores"] = flags.nonbinary_scores;
    d["bad_cost"] = flags.bad_cost;
    d["bad_latency"] = flags.bad_latency;
    return d;
}

py::dict sufficient_stats(const py::array& scores, const py::object& mask,
                          const py::object& cost, const py::object& latency) {
    const auto kind = scores.dtype().kind();
    const auto size = scores.dtype().itemsize();
    if (kind == 'b') return suffstats_impl<bool>(scores, mask, cost, latency);
    if (kind == 'u' && size == 1) return suffstats_impl<std::uint8_t>(scores, mask, cost, latency);
    if (kind == 'f' && size == 4) return suffstats_impl<float>(scores, mask, cost, latency);
    if (kind == 'f' || kind == 'i' || kind == 'u')
        return suffstats_impl<double>(scores, mask, cost, latency);
    throw py::type_error("scores must be bool, integer or floating point");
}

}  // namespace

void register_suffstats(py::module_& m) {
    m.def("sufficient_stats", &sufficient_stats, py::arg("scores"), py::arg("mask") = py::none(),
          py::arg("cost") = py::none(), py::arg("latency") = py::none(),
          "Fused per-cell sums, counts and maxima of an (N, L, G) tensor (GIL released).");
}
