// Bindings of the correlated logit-normal E-step (cpp/include/capfront/correlated.hpp).
#include <cmath>
#include <cstdint>

#include "capfront/correlated.hpp"
#include "register.hpp"

namespace py = pybind11;
using capfront_py::carray;
using capfront_py::require;

namespace {

py::tuple correlated_estep(const carray<double>& successes, const carray<double>& n_draws,
                           const carray<double>& mu, const carray<double>& precision,
                           double logdet, const carray<double>& m0, const carray<double>& z,
                           const carray<double>& log_q,
                           double inflate, std::int64_t newton_iters, bool moments) {
    require(successes.ndim() == 2, "successes must be shaped (N, L)");
    const auto N = static_cast<std::size_t>(successes.shape(0));
    const auto L = static_cast<std::size_t>(successes.shape(1));
    require(n_draws.ndim() == 2 && static_cast<std::size_t>(n_draws.shape(0)) == N &&
                static_cast<std::size_t>(n_draws.shape(1)) == L,
            "n_draws must have the shape of successes");
    require(mu.ndim() == 1 && static_cast<std::size_t>(mu.shape(0)) == L, "mu must have L entries");
    require(precision.ndim() == 2 && static_cast<std::size_t>(precision.shape(0)) == L &&
                static_cast<std::size_t>(precision.shape(1)) == L,
            "precision must be (L, L)");
    require(m0.ndim() == 2 && static_cast<std::size_t>(m0.shape(0)) == N &&
                static_cast<std::size_t>(m0.shape(1)) == L,
            "m0 must have the shape of successes");
    require(z.ndim() == 2 && static_cast<std::size_t>(z.shape(1)) == L, "z must be (K, L)");
    require(log_q.ndim() == 1 && log_q.shape(0) == z.shape(0), "log_q must have K entries");
    require(std::isfinite(inflate) && inflate > 0.0, "inflate must be finite and > 0");
    require(std::isfinite(logdet), "logdet must be finite");
    require(newton_iters >= 0, "newton_iters must be >= 0");
    const auto K = static_cast<std::size_t>(z.shape(0));
    const double* s = successes.data();
    const double* g = n_draws.data();
    for (std::size_t i = 0; i < N * L; ++i)
        require(g[i] >= 0.0 && s[i] >= 0.0 && s[i] <= g[i], "need 0 <= successes <= n_draws");
    const auto sN = static_cast<py::ssize_t>(N), sL = static_cast<py::ssize_t>(L);
    py::array_t<double> m({sN, sL}), s1(sL), s2({sL, sL}), ll(sN), post(sN);
    std::copy(m0.data(), m0.data() + N * L, m.mutable_data());
    capfront::CorrelatedArgs a{s, g, N, L, mu.data(), precision.data(), logdet, z.data(),
                               log_q.data(), K, inflate, static_cast<std::size_t>(newton_iters)};
    a.moments = moments;
    double* mo = m.mutable_data();
    double* o1 = s1.mutable_data();
    double* o2 = s2.mutable_data();
    double* o3 = ll.mutable_data();
    double* o4 = post.mutable_data();
    std::size_t bad;
    {
        py::gil_scoped_release release;
        bad = capfront::correlated_estep(a, mo, o1, o2, o3, o4);
    }
    require(bad == 0, "the precision is not positive definite");
    return py::make_tuple(m, s1, s2, ll, post);
}

}  // namespace

void register_correlated(py::module_& m) {
    m.def("correlated_estep", &correlated_estep, py::arg("successes"), py::arg("n_draws"),
          py::arg("mu"), py::arg("precision"), py::arg("logdet"), py::arg("m0"), py::arg("z"),
          py::arg("log_q"), py::arg("inflate"), py::arg("newton_iters"), py::arg("moments") = true,
          "Correlated logit-normal E-step: (modes (N, L), sum_n E[eta] (L,), "
          "sum_n E[eta eta'] (L, L), log marginal likelihood (N,), E[max_l p] (N,)) "
          "(GIL released).");
}
