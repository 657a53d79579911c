// Bindings of the graded-score Monte Carlo kernels (cpp/include/capfront/graded.hpp).
#include <cstdint>
#include <string>

#include "capfront/graded.hpp"
#include "register.hpp"

namespace py = pybind11;
using capfront_py::carray;
using capfront_py::require;

namespace {

struct Shape {
    std::size_t N, L, G;
};

// Shapes and keys; returns the fewest valid draws of an observed cell after
// checking that every prompt has one (the kernels index prefix sums by it).
std::int64_t check_inputs(const carray<double>& scores, const carray<bool>& valid,
                          const carray<std::uint32_t>& prompt_key,
                          const carray<std::uint32_t>& model_key, std::int64_t n_splits,
                          Shape& shape) {
    require(scores.ndim() == 3, "scores must be shaped (N, L, G)");
    require(valid.ndim() == 3 && valid.shape(0) == scores.shape(0) &&
                valid.shape(1) == scores.shape(1) && valid.shape(2) == scores.shape(2),
            "valid must have the shape of scores");
    shape = {static_cast<std::size_t>(scores.shape(0)),
             static_cast<std::size_t>(scores.shape(1)),
             static_cast<std::size_t>(scores.shape(2))};
    require(prompt_key.ndim() == 1 && prompt_key.shape(0) == scores.shape(0),
            "prompt_key must have one entry per prompt (N,)");
    require(model_key.ndim() == 1 && model_key.shape(0) == scores.shape(1),
            "model_key must have one entry per model (L,)");
    require(n_splits >= 1 && n_splits <= 0xFFFFFFFFLL, "n_splits must lie in [1, 2^32)");
    require(shape.G < (std::size_t{1} << 34), "at most 2^34 draws per cell");
    const bool* v = valid.data();
    std::int64_t gmin = -1;
    bool every_prompt = true;
    {
        py::gil_scoped_release release;
        for (std::size_t n = 0; n < shape.N; ++n) {
            bool any = false;
            for (std::size_t l = 0; l < shape.L; ++l) {
                std::int64_t m = 0;
                const bool* c = v + (n * shape.L + l) * shape.G;
                for (std::size_t k = 0; k < shape.G; ++k) m += c[k] ? 1 : 0;
                if (m > 0) {
                    any = true;
                    if (gmin < 0 || m < gmin) gmin = m;
                }
            }
            every_prompt = every_prompt && any;
        }
    }
    require(every_prompt, "every prompt needs at least one model with a valid draw");
    return gmin;
}

py::array_t<double> graded_crossfit_rows(const carray<double>& scores,
                                         const carray<bool>& valid,
                                         const carray<std::uint32_t>& prompt_key,
                                         const carray<std::uint32_t>& model_key,
                                         std::uint64_t seed, std::int64_t n_splits) {
    Shape sh{};
    const std::int64_t gmin = check_inputs(scores, valid, prompt_key, model_key, n_splits, sh);
    require(gmin >= 2, "crossfit needs at least 2 valid draws in every observed cell");
    py::array_t<double> out(static_cast<py::ssize_t>(sh.N));
    const double* s = scores.data();
    const bool* v = valid.data();
    const std::uint32_t* pk = prompt_key.data();
    const std::uint32_t* mk = model_key.data();
    double* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        capfront::graded_crossfit_rows(s, v, sh.N, sh.L, sh.G, pk, mk, seed,
                                       static_cast<std::uint32_t>(n_splits), o);
    }
    return out;
}

py::array_t<double> graded_curve_rows(const carray<double>& scores, const carray<bool>& valid,
                                      const carray<std::int64_t>& sizes,
                                      const carray<std::uint32_t>& prompt_key,
                                      const carray<std::uint32_t>& model_key,
                                      std::uint64_t seed, std::int64_t n_splits) {
    Shape sh{};
    const std::int64_t gmin = check_inputs(scores, valid, prompt_key, model_key, n_splits, sh);
    require(sizes.ndim() == 1, "sizes must be 1-D");
    const auto K = static_cast<std::size_t>(sizes.shape(0));
    const std::int64_t* z = sizes.data();
    for (std::size_t k = 0; k < K; ++k)
        require(z[k] >= 1 && z[k] <= gmin,
                "sizes must lie between 1 and the fewest valid draws of an observed cell (" +
                    std::to_string(gmin) + ")");
    py::array_t<double> out({static_cast<py::ssize_t>(sh.N), static_cast<py::ssize_t>(K)});
    const double* s = scores.data();
    const bool* v = valid.data();
    const std::uint32_t* pk = prompt_key.data();
    const std::uint32_t* mk = model_key.data();
    double* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        capfront::graded_curve_rows(s, v, sh.N, sh.L, sh.G, pk, mk, seed,
                                    static_cast<std::uint32_t>(n_splits), z, K, o);
    }
    return out;
}

}  // namespace

void register_graded(py::module_& m) {
    m.def("graded_crossfit_rows", &graded_crossfit_rows, py::arg("scores"), py::arg("valid"),
          py::arg("prompt_key"), py::arg("model_key"), py::arg("seed"), py::arg("n_splits"),
          "Monte Carlo cross-fit value per prompt over n_splits Philox orderings of each "
          "cell's valid draws, (N,) (GIL released).");
    m.def("graded_curve_rows", &graded_curve_rows, py::arg("scores"), py::arg("valid"),
          py::arg("sizes"), py::arg("prompt_key"), py::arg("model_key"), py::arg("seed"),
          py::arg("n_splits"),
          "Monte Carlo subsample curve per prompt, (N, len(sizes)) (GIL released).");
}
