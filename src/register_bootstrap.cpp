// Bindings for the streaming bootstrap (cpp/include/capfront/bootstrap.hpp) and the
// Philox4x32-10 stream (cpp/include/capfront/philox.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "capfront/bootstrap.hpp"
#include "capfront/philox.hpp"
#include "register.hpp"

namespace py = pybind11;
using capfront_py::carray;
using capfront_py::require;

namespace {

// Checks offsets (0 = o_0 < ... <= o_S = n, non-decreasing) and returns n.
std::size_t check_offsets(const carray<std::int64_t>& offsets) {
    require(offsets.ndim() == 1 && offsets.shape(0) >= 2,
            "offsets must be 1-D with at least 2 entries");
    const std::int64_t* o = offsets.data();
    require(o[0] == 0, "offsets must start at 0");
    for (py::ssize_t s = 1; s < offsets.shape(0); ++s)
        require(o[s] > o[s - 1], "offsets must increase strictly (no empty stratum)");
    return static_cast<std::size_t>(o[offsets.shape(0) - 1]);
}

void check_replicates(std::uint64_t b0, std::int64_t nb) {
    require(nb >= 0, "n_replicates must be >= 0");
    require(b0 + static_cast<std::uint64_t>(nb) <= (std::uint64_t{1} << 32),
            "replicate indices must stay below 2^32");
}

py::array_t<std::uint32_t> philox_words(std::uint64_t seed, std::uint32_t rep,
                                        std::uint32_t stream, std::uint64_t start,
                                        std::int64_t count) {
    require(count >= 0, "count must be >= 0");
    require(start % 4 == 0, "start must be a multiple of 4");
    std::vector<std::uint32_t> buf(static_cast<std::size_t>(count) + 4);
    capfront::philox_stream_words(seed, rep, stream, start, static_cast<std::size_t>(count),
                                  buf.data());
    py::array_t<std::uint32_t> out(static_cast<py::ssize_t>(count));
    std::copy(buf.begin(), buf.begin() + count, out.mutable_data());
    return out;
}

py::array_t<std::int64_t> bootstrap_sums(const carray<std::int64_t>& offsets,
                                         std::uint64_t seed, std::uint64_t b0,
                                         std::int64_t nb, const carray<std::int8_t>& z8,
                                         const carray<std::int64_t>& z64) {
    const std::size_t n = check_offsets(offsets);
    check_replicates(b0, nb);
    require(z8.ndim() == 2 && static_cast<std::size_t>(z8.shape(1)) == n,
            "z8 must be shaped (K8, n) with n = offsets[-1]");
    require(z64.ndim() == 2 && static_cast<std::size_t>(z64.shape(1)) == n,
            "z64 must be shaped (K64, n) with n = offsets[-1]");
    const auto K8 = static_cast<std::size_t>(z8.shape(0));
    const auto K64 = static_cast<std::size_t>(z64.shape(0));
    const std::size_t K = K8 + K64;
    py::array_t<std::int64_t> out(
        std::vector<py::ssize_t>{static_cast<py::ssize_t>(nb), static_cast<py::ssize_t>(K)});
    const capfront::Strata st{offsets.data(), static_cast<std::size_t>(offsets.shape(0) - 1),
                              n};
    const std::int8_t* p8 = z8.data();
    const std::int64_t* p64 = z64.data();
    std::int64_t* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        capfront::bootstrap_sums(st, seed, b0, static_cast<std::size_t>(nb), p8, K8, p64, K64,
                                 o);
    }
    return out;
}

py::array_t<std::uint8_t> bootstrap_counts(const carray<std::int64_t>& offsets,
                                           std::uint64_t seed, std::uint64_t b0,
                                           std::int64_t nb) {
    const std::size_t n = check_offsets(offsets);
    check_replicates(b0, nb);
    py::array_t<std::uint8_t> out(
        std::vector<py::ssize_t>{static_cast<py::ssize_t>(nb), static_cast<py::ssize_t>(n)});
    const capfront::Strata st{offsets.data(), static_cast<std::size_t>(offsets.shape(0) - 1),
                              n};
    std::uint8_t* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        capfront::bootstrap_counts(st, seed, b0, static_cast<std::size_t>(nb), o);
    }
    return out;
}

py::array_t<std::int64_t> bootstrap_two_level_sums(
    const carray<std::int64_t>& offsets, std::uint64_t seed, std::uint64_t b0,
    std::int64_t nb, const carray<std::uint8_t>& successes,
    const carray<std::uint64_t>& thresholds, bool with_max, bool with_cells) {
    const std::size_t n = check_offsets(offsets);
    check_replicates(b0, nb);
    require(successes.ndim() == 2 && static_cast<std::size_t>(successes.shape(0)) == n,
            "successes must be shaped (n, L) with n = offsets[-1]");
    const auto L = static_cast<std::size_t>(successes.shape(1));
    require(L >= 1, "successes has no models");
    require(thresholds.ndim() == 2 && thresholds.shape(1) >= 1 &&
                thresholds.shape(0) == thresholds.shape(1) + 1,
            "thresholds must be shaped (G + 1, G)");
    const auto G = static_cast<std::size_t>(thresholds.shape(1));
    require(G <= 255, "two-level draws need G <= 255");
    const std::uint64_t* Tc = thresholds.data();
    for (std::size_t s = 0; s <= G; ++s)
        for (std::size_t k = 0; k + 1 < G; ++k)
            require(Tc[s * G + k] <= Tc[s * G + k + 1],
                    "thresholds must be non-decreasing along each row");
    const std::uint8_t* S = successes.data();
    for (std::size_t i = 0; i < n * L; ++i)
        require(S[i] <= G, "successes must lie in 0..G");
    require(with_max || with_cells, "nothing to sum (with_max and with_cells both false)");
    const std::size_t K = (with_max ? 1 : 0) + (with_cells ? L : 0);
    py::array_t<std::int64_t> out(
        std::vector<py::ssize_t>{static_cast<py::ssize_t>(nb), static_cast<py::ssize_t>(K)});
    const capfront::Strata st{offsets.data(), static_cast<std::size_t>(offsets.shape(0) - 1),
                              n};
    const std::uint64_t* T = thresholds.data();
    std::int64_t* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        capfront::bootstrap_two_level_sums(st, seed, b0, static_cast<std::size_t>(nb), S, L, G,
                                           T, with_max, with_cells, o);
    }
    return out;
}

// Checks the class tables and returns the number of strata.
std::size_t check_classes(const carray<std::int64_t>& class_offsets,
                          const carray<std::int64_t>& class_size) {
    require(class_offsets.ndim() == 1 && class_offsets.shape(0) >= 2,
            "class_offsets must be 1-D with at least 2 entries");
    const std::int64_t* o = class_offsets.data();
    const auto n_strata = static_cast<std::size_t>(class_offsets.shape(0) - 1);
    require(o[0] == 0, "class_offsets must start at 0");
    for (std::size_t s = 1; s <= n_strata; ++s)
        require(o[s] > o[s - 1], "every stratum needs at least one class");
    const std::int64_t n_classes = o[n_strata];
    require(class_size.ndim() == 1 && class_size.shape(0) == n_classes,
            "class_size must have class_offsets[-1] entries");
    const std::int64_t* size = class_size.data();
    for (std::int64_t c = 0; c < n_classes; ++c)
        require(size[c] >= 1 && size[c] < (std::int64_t{1} << 31),
                "class sizes must lie in [1, 2^31)");
    return n_strata;
}

py::array_t<std::int64_t> bootstrap_class_sums(const carray<std::int64_t>& class_offsets,
                                               const carray<std::int64_t>& class_size,
                                               const carray<std::int64_t>& class_value,
                                               std::uint64_t seed, std::uint64_t b0,
                                               std::int64_t nb) {
    check_replicates(b0, nb);
    const std::size_t n_strata = check_classes(class_offsets, class_size);
    require(class_value.ndim() == 1 && class_value.shape(0) == class_size.shape(0),
            "class_size and class_value must have class_offsets[-1] entries");
    py::array_t<std::int64_t> out(static_cast<py::ssize_t>(nb));
    const std::int64_t* o = class_offsets.data();
    const std::int64_t* size = class_size.data();
    const std::int64_t* value = class_value.data();
    std::int64_t* dst = out.mutable_data();
    {
        py::gil_scoped_release release;
        capfront::bootstrap_class_sums(o, n_strata, size, value, seed, b0,
                                       static_cast<std::size_t>(nb), dst);
    }
    return out;
}

py::array_t<std::int64_t> bootstrap_class_counts(const carray<std::int64_t>& class_offsets,
                                                 const carray<std::int64_t>& class_size,
                                                 std::uint64_t seed, std::uint64_t b0,
                                                 std::int64_t nb) {
    check_replicates(b0, nb);
    const std::size_t n_strata = check_classes(class_offsets, class_size);
    const py::ssize_t n_classes = class_size.shape(0);
    py::array_t<std::int64_t> out({static_cast<py::ssize_t>(nb), n_classes});
    const std::int64_t* o = class_offsets.data();
    const std::int64_t* size = class_size.data();
    std::int64_t* dst = out.mutable_data();
    {
        py::gil_scoped_release release;
        capfront::bootstrap_class_counts(o, n_strata, size, seed, b0,
                                         static_cast<std::size_t>(nb), dst);
    }
    return out;
}

py::array_t<std::int64_t> binomial_draws(const carray<std::int64_t>& n,
                                         const carray<std::int64_t>& a,
                                         const carray<std::int64_t>& b,
                                         const carray<std::int64_t>& rep,
                                         const carray<std::int64_t>& j, std::uint64_t seed) {
    require(n.ndim() == 1 && a.ndim() == 1 && b.ndim() == 1 && rep.ndim() == 1 &&
                j.ndim() == 1,
            "n, a, b, rep and j must be 1-D");
    const py::ssize_t count = n.shape(0);
    require(a.shape(0) == count && b.shape(0) == count && rep.shape(0) == count &&
                j.shape(0) == count,
            "n, a, b, rep and j must have the same length");
    for (py::ssize_t i = 0; i < count; ++i) {
        require(n.data()[i] >= 0 && n.data()[i] < (std::int64_t{1} << 53),
                "n must lie in [0, 2^53)");
        require(b.data()[i] >= 1 && b.data()[i] < (std::int64_t{1} << 53) &&
                    a.data()[i] >= 0 && a.data()[i] <= b.data()[i],
                "need 0 <= a <= b and 1 <= b < 2^53");
        require(rep.data()[i] >= 0 && rep.data()[i] < (std::int64_t{1} << 32) &&
                    j.data()[i] >= 0 && j.data()[i] < (std::int64_t{1} << 32),
                "rep and j must lie in [0, 2^32)");
    }
    py::array_t<std::int64_t> out(count);
    std::int64_t* dst = out.mutable_data();
    {
        py::gil_scoped_release release;
        capfront::binomial_draws(n.data(), a.data(), b.data(), rep.data(), j.data(),
                                 static_cast<std::size_t>(count), seed, dst);
    }
    return out;
}

py::array_t<std::int64_t> row_max_counts(const carray<std::uint8_t>& successes,
                                         const carray<std::int64_t>& order,
                                         const carray<std::int64_t>& offsets,
                                         std::int64_t n_values) {
    const std::size_t n = check_offsets(offsets);
    require(successes.ndim() == 2 && successes.shape(1) >= 1,
            "successes must be shaped (N, L) with L >= 1");
    const auto N = static_cast<std::size_t>(successes.shape(0));
    require(order.ndim() == 1, "order must be 1-D");
    const bool identity = order.shape(0) == 0;
    require(identity ? n == N : static_cast<std::size_t>(order.shape(0)) == n,
            "order must be empty (n = N prompts) or hold offsets[-1] prompt indices");
    const std::int64_t* ord = order.data();
    for (py::ssize_t i = 0; i < order.shape(0); ++i)
        require(ord[i] >= 0 && static_cast<std::size_t>(ord[i]) < N,
                "order must hold prompt indices in [0, N)");
    require(n_values >= 1 && n_values <= 256, "n_values must lie in [1, 256]");
    const auto n_strata = static_cast<std::size_t>(offsets.shape(0) - 1);
    py::array_t<std::int64_t> out(
        std::vector<py::ssize_t>{static_cast<py::ssize_t>(n_strata),
                                 static_cast<py::ssize_t>(n_values)});
    const std::uint8_t* S = successes.data();
    const std::int64_t* o = offsets.data();
    std::int64_t* dst = out.mutable_data();
    const auto L = static_cast<std::size_t>(successes.shape(1));
    bool ok = false;
    {
        py::gil_scoped_release release;
        ok = capfront::row_max_counts(S, L, ord, identity, o, n_strata,
                                      static_cast<std::size_t>(n_values), dst);
    }
    require(ok, "successes: some row maximum is >= n_values");
    return out;
}

py::array_t<std::int64_t> poisson_sums(const carray<std::int64_t>& keys,
                                       const carray<std::int64_t>& values, std::uint64_t seed,
                                       std::int64_t nb) {
    check_replicates(0, nb);
    require(keys.ndim() == 1, "keys must be 1-D");
    require(values.ndim() == 2 && values.shape(0) == keys.shape(0),
            "values must be shaped (n, K) with n = len(keys)");
    const std::int64_t* k = keys.data();
    for (py::ssize_t i = 0; i < keys.shape(0); ++i)
        require(k[i] >= 0 && k[i] < (std::int64_t{1} << 62), "keys must lie in [0, 2^62)");
    const auto n = static_cast<std::size_t>(keys.shape(0));
    const auto K = static_cast<std::size_t>(values.shape(1));
    py::array_t<std::int64_t> out({static_cast<py::ssize_t>(nb), static_cast<py::ssize_t>(K + 1)});
    const std::int64_t* v = values.data();
    std::int64_t* dst = out.mutable_data();
    {
        py::gil_scoped_release release;
        capfront::poisson_sums(k, n, v, K, seed, static_cast<std::size_t>(nb), dst);
    }
    return out;
}

}  // namespace

void register_bootstrap(py::module_& m) {
    m.def("philox_words", &philox_words, py::arg("seed"), py::arg("rep"), py::arg("stream"),
          py::arg("start"), py::arg("count"),
          "Words [start, start + count) of the Philox4x32-10 stream (seed, rep, stream).");
    m.def("bootstrap_sums", &bootstrap_sums, py::arg("offsets"), py::arg("seed"),
          py::arg("b0"), py::arg("n_replicates"), py::arg("z8"), py::arg("z64"),
          "Exact integer sums sum_n c_bn Z[k, n] per replicate (GIL released).");
    m.def("bootstrap_counts", &bootstrap_counts, py::arg("offsets"), py::arg("seed"),
          py::arg("b0"), py::arg("n_replicates"),
          "Multinomial draw counts per replicate, in stratum order (GIL released).");
    m.def("bootstrap_class_sums", &bootstrap_class_sums, py::arg("class_offsets"),
          py::arg("class_size"), py::arg("class_value"), py::arg("seed"), py::arg("b0"),
          py::arg("n_replicates"),
          "Sum of one int8 column per replicate from multinomial class counts "
          "(conditional binomials; GIL released).");
    m.def("bootstrap_class_counts", &bootstrap_class_counts, py::arg("class_offsets"),
          py::arg("class_size"), py::arg("seed"), py::arg("b0"), py::arg("n_replicates"),
          "Multinomial class counts (n_replicates, n_classes) per replicate "
          "(conditional binomials, stream 2; GIL released).");
    m.def("binomial_draws", &binomial_draws, py::arg("n"), py::arg("a"), py::arg("b"),
          py::arg("rep"), py::arg("j"), py::arg("seed"),
          "Bin(n[i], a[i] / b[i]) draws of the class-count sampler: binomial j[i] of "
          "replicate rep[i] (inversion for n p < 10, else BTRD; GIL released).");
    m.def("row_max_counts", &row_max_counts, py::arg("successes"), py::arg("order"),
          py::arg("offsets"), py::arg("n_values"),
          "Per stratum, how many prompts have max_l successes[n, l] = v, v < n_values "
          "(uint8 table; one pass, GIL released).");
    m.def("poisson_sums", &poisson_sums, py::arg("keys"), py::arg("values"), py::arg("seed"),
          py::arg("n_replicates"),
          "Poisson(1)-weighted sums of keyed rows per replicate, and the weight total "
          "(stream 7 keyed by row; GIL released).");
    m.def("bootstrap_two_level_sums", &bootstrap_two_level_sums, py::arg("offsets"),
          py::arg("seed"), py::arg("b0"), py::arg("n_replicates"), py::arg("successes"),
          py::arg("thresholds"), py::arg("with_max"), py::arg("with_cells"),
          "Two-level replicates (prompts, then S* ~ Bin(G, p_hat)): integer sums of "
          "max_l S* and/or S*_l (GIL released).");
}
