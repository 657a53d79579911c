// Bindings of the debiased-oracle kernels (cpp/include/capfront/debias.hpp).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "capfront/debias.hpp"
#include "capfront/debias_classes.hpp"
#include "register.hpp"

namespace py = pybind11;
using capfront_py::carray;
using capfront_py::require;

namespace {

void check_counts(const carray<std::int64_t>& successes, const carray<std::int64_t>& n_draws) {
    require(successes.ndim() == 2, "successes must be shaped (N, L)");
    require(n_draws.ndim() == 2 && n_draws.shape(0) == successes.shape(0) &&
                n_draws.shape(1) == successes.shape(1),
            "n_draws must have the shape of successes");
}

py::array_t<double> subsample_curve_rows(const carray<std::int64_t>& successes,
                                         const carray<std::int64_t>& n_draws,
                                         const carray<std::int64_t>& sizes) {
    check_counts(successes, n_draws);
    require(sizes.ndim() == 1, "sizes must be 1-D");
    const auto N = static_cast<std::size_t>(successes.shape(0));
    const auto L = static_cast<std::size_t>(successes.shape(1));
    const auto Z = static_cast<std::size_t>(sizes.shape(0));
    py::array_t<double> out({static_cast<py::ssize_t>(N), static_cast<py::ssize_t>(Z)});
    const std::int64_t* s = successes.data();
    const std::int64_t* g = n_draws.data();
    const std::int64_t* z = sizes.data();
    double* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        capfront::subsample_curve_rows(s, g, N, L, z, Z, o);
    }
    return out;
}

py::array_t<double> crossfit_rows(const carray<std::int64_t>& successes,
                                  const carray<std::int64_t>& n_draws) {
    check_counts(successes, n_draws);
    const auto N = static_cast<std::size_t>(successes.shape(0));
    const auto L = static_cast<std::size_t>(successes.shape(1));
    py::array_t<double> out(static_cast<py::ssize_t>(N));
    const std::int64_t* s = successes.data();
    const std::int64_t* g = n_draws.data();
    double* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        capfront::crossfit_rows(s, g, N, L, o);
    }
    return out;
}

template <class T>
bool is_c_of(const py::array& a) {
    // equivalent dtype (byte order included), not the same dtype object
    return py::isinstance<py::array_t<T>>(a) && (a.flags() & py::array::c_style);
}

// The cells' table rows as the caller stores them: C-contiguous int8, int16, int32
// or int64 are read in place (the fits keep them in the smallest of these that
// holds the table's rows); anything else is cast to int64 (a copy).
// run(rows, array) gets a typed pointer to the rows and the array holding them.
template <class F>
auto with_rows(const py::object& cell_row, F&& run) {
    if (py::isinstance<py::array>(cell_row)) {
        const auto a = py::reinterpret_borrow<py::array>(cell_row);
        if (is_c_of<std::int8_t>(a)) return run(static_cast<const std::int8_t*>(a.data()), a);
        if (is_c_of<std::int16_t>(a)) return run(static_cast<const std::int16_t*>(a.data()), a);
        if (is_c_of<std::int32_t>(a)) return run(static_cast<const std::int32_t*>(a.data()), a);
    }
    const auto c = carray<std::int64_t>::ensure(cell_row);
    require(static_cast<bool>(c), "cell_row must be an integer array");
    return run(c.data(), py::array(c));
}

// Every cell row below R and every topic code in [0, K).
template <class Row>
void check_rows_topics(const Row* rows, std::size_t n_cells, std::size_t R,
                       const std::int64_t* tp, std::size_t N, std::size_t K) {
    for (std::size_t i = 0; i < n_cells; ++i)
        require(static_cast<std::int64_t>(rows[i]) < static_cast<std::int64_t>(R),
                "cell_row out of range");
    for (std::size_t i = 0; i < N; ++i)
        require(tp[i] >= 0 && static_cast<std::size_t>(tp[i]) < K, "topic out of range");
}

// cell_row (N, L), topic (N,) and log_w (J,): the shapes every E-step checks.
void check_cells_prior(const py::array& cell_row, std::size_t L,
                       const carray<std::int64_t>& topic, std::size_t N,
                       const carray<double>& log_w, std::size_t J) {
    require(static_cast<std::size_t>(cell_row.shape(1)) == L, "cell_row must have L columns");
    require(topic.ndim() == 1 && static_cast<std::size_t>(topic.shape(0)) == N,
            "topic must have N entries");
    require(log_w.ndim() == 1 && static_cast<std::size_t>(log_w.shape(0)) == J,
            "log_w must have J entries");
}

// Shapes of the E-step arguments, checked once for both E-step bindings.
struct EstepDims {
    std::size_t L, K, R, J, N;
};

template <class Row>
EstepDims check_estep_args(const carray<double>& table, const Row* rows,
                           const py::array& cell_row, const carray<std::int64_t>& topic,
                           const carray<double>& log_w,
                           const py::array_t<double, py::array::c_style>& resp) {
    require(table.ndim() == 4, "table must be shaped (L, K, R, J)");
    require(cell_row.ndim() == 2, "cell_row must be shaped (N, L)");
    const auto L = static_cast<std::size_t>(table.shape(0));
    const auto K = static_cast<std::size_t>(table.shape(1));
    const auto R = static_cast<std::size_t>(table.shape(2));
    const auto J = static_cast<std::size_t>(table.shape(3));
    const auto N = static_cast<std::size_t>(cell_row.shape(0));
    check_cells_prior(cell_row, L, topic, N, log_w, J);
    require(resp.ndim() == 2 && static_cast<std::size_t>(resp.shape(0)) == N &&
                static_cast<std::size_t>(resp.shape(1)) == J,
            "resp must be a writable (N, J) float64 array");
    check_rows_topics(rows, N * L, R, topic.data(), N, K);
    return {L, K, R, J, N};
}

double pgm_estep(const carray<double>& table, const py::object& cell_row,
                 const carray<std::int64_t>& topic, const carray<double>& log_w,
                 py::array_t<double, py::array::c_style>& resp, py::object ll_out) {
    return with_rows(cell_row, [&](const auto* rows, const py::array& cr) {
        const auto [L, K, R, J, N] = check_estep_args(table, rows, cr, topic, log_w, resp);
        double* llo = nullptr;
        py::array_t<double, py::array::c_style> ll_arr;
        if (!ll_out.is_none()) {
            ll_arr = ll_out.cast<py::array_t<double, py::array::c_style>>();
            require(ll_arr.ndim() == 1 && static_cast<std::size_t>(ll_arr.shape(0)) == N &&
                        ll_arr.writeable() && ll_arr.ptr() == ll_out.ptr(),
                    "ll_out must be a writable float64 array of N entries");
            llo = ll_arr.mutable_data();
        }
        const std::int64_t* tp = topic.data();
        const double* t = table.data();
        const double* lw = log_w.data();
        double* r = resp.mutable_data();
        double ll;
        {
            py::gil_scoped_release release;
            ll = capfront::pgm_estep(t, rows, tp, lw, N, L, K, R, J, r, llo);
        }
        return ll;
    });
}

py::tuple pgm_estep_stats(const carray<double>& table, const py::object& cell_row,
                          const carray<std::int64_t>& topic, const carray<double>& log_w,
                          py::array_t<double, py::array::c_style>& resp,
                          std::int64_t block_rows) {
    require(block_rows >= 1, "block_rows must be >= 1");
    return with_rows(cell_row, [&](const auto* rows, const py::array& cr) {
        const auto [L, K, R, J, N] = check_estep_args(table, rows, cr, topic, log_w, resp);
        const std::int64_t* tp = topic.data();
        py::array_t<double> C({static_cast<py::ssize_t>(L), static_cast<py::ssize_t>(K),
                               static_cast<py::ssize_t>(R), static_cast<py::ssize_t>(J)});
        const double* t = table.data();
        const double* lw = log_w.data();
        double* r = resp.mutable_data();
        double* c = C.mutable_data();
        const auto br = static_cast<std::size_t>(block_rows);
        double ll;
        {
            py::gil_scoped_release release;
            ll = capfront::pgm_estep_stats(t, rows, tp, lw, N, L, K, R, J, br, r, c);
        }
        return py::make_tuple(ll, C);
    });
}

py::array_t<double> pgm_stats(const carray<double>& resp, const py::object& cell_row,
                              const carray<std::int64_t>& topic, std::int64_t n_topics,
                              std::int64_t n_rows) {
    return with_rows(cell_row, [&](const auto* rows, const py::array& cr) {
        require(resp.ndim() == 2 && cr.ndim() == 2 && resp.shape(0) == cr.shape(0),
                "resp (N, J) and cell_row (N, L) must agree in N");
        require(n_topics >= 1 && n_rows >= 1, "n_topics and n_rows must be >= 1");
        const auto N = static_cast<std::size_t>(resp.shape(0));
        const auto J = static_cast<std::size_t>(resp.shape(1));
        const auto L = static_cast<std::size_t>(cr.shape(1));
        const auto K = static_cast<std::size_t>(n_topics);
        const auto R = static_cast<std::size_t>(n_rows);
        require(topic.ndim() == 1 && static_cast<std::size_t>(topic.shape(0)) == N,
                "topic must have N entries");
        const std::int64_t* tp = topic.data();
        check_rows_topics(rows, N * L, R, tp, N, K);
        py::array_t<double> out({static_cast<py::ssize_t>(L), static_cast<py::ssize_t>(K),
                                 static_cast<py::ssize_t>(R), static_cast<py::ssize_t>(J)});
        const double* r = resp.data();
        double* c = out.mutable_data();
        {
            py::gil_scoped_release release;
            capfront::pgm_stats(r, rows, tp, N, L, K, R, J, c);
        }
        return out;
    });
}

py::array_t<double> pgm_mstep_scores(const carray<double>& stats, const carray<double>& logh,
                                     const carray<std::int64_t>& cand) {
    require(stats.ndim() == 3, "stats must be shaped (LK, R, J)");
    require(logh.ndim() == 2 && logh.shape(0) == stats.shape(1), "logh must be (R, E)");
    require(cand.ndim() == 2 && cand.shape(0) == stats.shape(2), "cand must be (J, n_cand)");
    const auto LK = static_cast<std::size_t>(stats.shape(0));
    const auto R = static_cast<std::size_t>(stats.shape(1));
    const auto J = static_cast<std::size_t>(stats.shape(2));
    const auto E = static_cast<std::size_t>(logh.shape(1));
    const auto Cn = static_cast<std::size_t>(cand.shape(1));
    const std::int64_t* ci = cand.data();
    for (std::size_t i = 0; i < J * Cn; ++i)
        require(ci[i] >= 0 && ci[i] < static_cast<std::int64_t>(E), "cand out of range");
    py::array_t<double> out({static_cast<py::ssize_t>(LK), static_cast<py::ssize_t>(Cn)});
    const double* c = stats.data();
    const double* lh = logh.data();
    double* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        capfront::pgm_mstep_scores(c, lh, ci, LK, R, J, E, Cn, o);
    }
    return out;
}

py::array_t<double> pgm_mstep_scores_window(const carray<double>& stats,
                                            const carray<double>& logh,
                                            const carray<std::int64_t>& cand,
                                            const carray<std::int64_t>& lo, std::int64_t width) {
    require(stats.ndim() == 3, "stats must be shaped (LK, R, J)");
    require(logh.ndim() == 2 && logh.shape(0) == stats.shape(1), "logh must be (R, E)");
    require(cand.ndim() == 2 && cand.shape(0) == stats.shape(2), "cand must be (J, n_cand)");
    require(lo.ndim() == 1 && lo.shape(0) == stats.shape(0), "lo must have LK entries");
    const auto LK = static_cast<std::size_t>(stats.shape(0));
    const auto R = static_cast<std::size_t>(stats.shape(1));
    const auto J = static_cast<std::size_t>(stats.shape(2));
    const auto E = static_cast<std::size_t>(logh.shape(1));
    const auto Cn = static_cast<std::size_t>(cand.shape(1));
    require(width >= 1 && static_cast<std::size_t>(width) <= Cn, "width must lie in 1..n_cand");
    const auto W = static_cast<std::size_t>(width);
    const std::int64_t* ci = cand.data();
    const std::int64_t* l0 = lo.data();
    for (std::size_t i = 0; i < J * Cn; ++i)
        require(ci[i] >= 0 && ci[i] < static_cast<std::int64_t>(E), "cand out of range");
    for (std::size_t a = 0; a < LK; ++a)
        require(l0[a] >= 0 && static_cast<std::size_t>(l0[a]) + W <= Cn, "lo out of range");
    py::array_t<double> out({static_cast<py::ssize_t>(LK), static_cast<py::ssize_t>(W)});
    const double* c = stats.data();
    const double* lh = logh.data();
    double* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        capfront::pgm_mstep_scores_window(c, lh, ci, l0, LK, R, J, E, Cn, W, o);
    }
    return out;
}

py::tuple pgm_emax(const carray<double>& resp, const py::object& cell_row_in,
                   const carray<std::int64_t>& topic, const carray<double>& theta,
                   const carray<double>& d_grid, const carray<double>& loglik,
                   const carray<double>& t_grid, int family, double scale,
                   const carray<std::int64_t>& cut, const carray<double>& w1,
                   const carray<double>& w2,
                   double min_resp, double eps, const carray<double>& tails,
                   const carray<double>& edge_loglik, double t_df) {
    return with_rows(cell_row_in, [&](const auto* rows, const py::array& cell_row) {
        require(resp.ndim() == 2 && cell_row.ndim() == 2 && resp.shape(0) == cell_row.shape(0),
                "resp (N, J) and cell_row (N, L) must agree in N");
        require(theta.ndim() == 2 && theta.shape(0) == cell_row.shape(1), "theta must be (L, K)");
        require(d_grid.ndim() == 1 && d_grid.shape(0) == resp.shape(1), "d_grid must have J points");
        require(t_grid.ndim() == 1 && t_grid.shape(0) >= 2, "t_grid must be 1-D, >= 2 points");
        require(loglik.ndim() == 2 && loglik.shape(1) == t_grid.shape(0), "loglik must be (R, T)");
        require(cut.ndim() == 1 && w1.ndim() == 1 && w2.ndim() == 1 &&
                    cut.shape(0) == w1.shape(0) && cut.shape(0) == w2.shape(0) && cut.shape(0) >= 2,
                "cut, w1 and w2 must be 1-D of equal length >= 2");
        require(family >= 0 && family <= 2,
                "family must be 0 (logitnormal), 1 (betabinomial) or 2 (logit_t)");
        require(std::isfinite(scale) && scale >= 0.0 && (family != 1 || scale < 1.0),
                "scale out of range");
        require(eps >= 0.0 && eps < 0.5, "eps must lie in [0, 0.5)");
        require(std::isfinite(t_df) && t_df > 0.0, "t_df must be finite and > 0");
        const auto N = static_cast<std::size_t>(resp.shape(0));
        const auto J = static_cast<std::size_t>(resp.shape(1));
        const auto L = static_cast<std::size_t>(cell_row.shape(1));
        const auto K = static_cast<std::size_t>(theta.shape(1));
        const auto R = static_cast<std::size_t>(loglik.shape(0));
        const auto T = static_cast<std::size_t>(t_grid.shape(0));
        const auto M1 = static_cast<std::size_t>(cut.shape(0));
        require(topic.ndim() == 1 && static_cast<std::size_t>(topic.shape(0)) == N,
                "topic must have N entries");
        require(N < (std::size_t{1} << 32), "too many prompts");
        const std::int64_t* tp = topic.data();
        const std::int64_t* ct = cut.data();
        check_rows_topics(rows, N * L, R, tp, N, K);
        for (std::size_t m = 0; m < M1; ++m)
            require(ct[m] >= 0 && ct[m] <= static_cast<std::int64_t>(T) && (m == 0 || ct[m] >= ct[m - 1]),
                    "cut must be non-decreasing in [0, T]");
        require(ct[M1 - 1] == static_cast<std::int64_t>(T), "the last node must cut at T");
        require(tails.ndim() == 4 && static_cast<std::size_t>(tails.shape(0)) == L &&
                    static_cast<std::size_t>(tails.shape(1)) == K &&
                    static_cast<std::size_t>(tails.shape(2)) == J && tails.shape(3) == 3,
                "tails must be (L, K, J, 3)");
        require(edge_loglik.ndim() == 2 && static_cast<std::size_t>(edge_loglik.shape(0)) == R &&
                    edge_loglik.shape(1) == 2,
                "edge_loglik must be (R, 2)");
        {
            const double* tl = tails.data();
            for (std::size_t i = 0; i < L * K * J * 3; ++i)
                require(tl[i] >= 0.0 && tl[i] <= 1.0, "tails must be probabilities");
            const double* el = edge_loglik.data();
            for (std::size_t i = 0; i < R * 2; ++i)
                require(!(el[i] > 0.0) && !std::isnan(el[i]), "edge_loglik must be <= 0");
        }
        py::array_t<double> emax(static_cast<py::ssize_t>(N)), emax2(static_cast<py::ssize_t>(N));
        py::array_t<double> pmean({static_cast<py::ssize_t>(N), static_cast<py::ssize_t>(L)});
        capfront::EmaxModel md{theta.data(), d_grid.data(), loglik.data(), t_grid.data(), T,
                               family, scale, ct, w1.data(), w2.data(), M1, eps,
                               tails.data(), edge_loglik.data(), t_df};
        const double* r = resp.data();
        double* o1 = emax.mutable_data();
        double* o2 = emax2.mutable_data();
        double* o3 = pmean.mutable_data();
        {
            py::gil_scoped_release release;
            capfront::pgm_emax(r, rows, tp, N, L, K, J, R, md, min_resp, o1, o2, o3);
        }
        return py::make_tuple(emax, emax2, pmean);
    });

}


py::tuple pgm_class_estep(const carray<double>& table, const py::object& cell_row_in,
                          const carray<std::int64_t>& label, std::int64_t n_classes,
                          const carray<double>& log_w, const carray<double>& log_pi,
                          py::object prev_r, double sparse_r, double keep_r,
                          std::int64_t block_rows, bool stats, bool want_resp, bool want_ll) {
    return with_rows(cell_row_in, [&](const auto* rows, const py::array& cell_row) {
        require(table.ndim() == 4, "table must be shaped (L, TK, R, J)");
        require(cell_row.ndim() == 2, "cell_row must be shaped (N, L)");
        require(n_classes >= 1 && block_rows >= 1, "n_classes and block_rows must be >= 1");
        const auto L = static_cast<std::size_t>(table.shape(0));
        const auto TK = static_cast<std::size_t>(table.shape(1));
        const auto R = static_cast<std::size_t>(table.shape(2));
        const auto J = static_cast<std::size_t>(table.shape(3));
        const auto N = static_cast<std::size_t>(cell_row.shape(0));
        const auto K = static_cast<std::size_t>(n_classes);
        require(TK % K == 0, "the table's columns must be n_labels * n_classes");
        const std::size_t T = TK / K;
        check_cells_prior(cell_row, L, label, N, log_w, J);
        require(log_pi.ndim() == 2 && static_cast<std::size_t>(log_pi.shape(0)) == T &&
                    static_cast<std::size_t>(log_pi.shape(1)) == K,
                "log_pi must be (n_labels, n_classes)");
        const std::int64_t* tp = label.data();
        check_rows_topics(rows, N * L, R, tp, N, T);
        carray<double> prev;
        const double* pr = nullptr;
        if (!prev_r.is_none()) {
            prev = prev_r.cast<carray<double>>();
            require(prev.ndim() == 2 && static_cast<std::size_t>(prev.shape(0)) == N &&
                        static_cast<std::size_t>(prev.shape(1)) == K,
                    "prev_r must be (N, n_classes)");
            pr = prev.data();
        }
        const auto sN = static_cast<py::ssize_t>(N), sK = static_cast<py::ssize_t>(K);
        py::array_t<double> r({sN, sK});
        py::object C = py::none(), W = py::none(), RS = py::none(), LL = py::none();
        double *c = nullptr, *w = nullptr, *rs = nullptr, *ll = nullptr;
        if (stats) {
            py::array_t<double> a({static_cast<py::ssize_t>(L), static_cast<py::ssize_t>(TK),
                                   static_cast<py::ssize_t>(R), static_cast<py::ssize_t>(J)});
            py::array_t<double> b(static_cast<py::ssize_t>(J));
            c = a.mutable_data();
            w = b.mutable_data();
            C = a;
            W = b;
        }
        if (want_resp) {
            py::array_t<double> a({sN * sK, static_cast<py::ssize_t>(J)});
            rs = a.mutable_data();
            RS = a;
        }
        if (want_ll) {
            py::array_t<double> a(sN * sK);
            ll = a.mutable_data();
            LL = a;
        }
        using Row = std::remove_const_t<std::remove_pointer_t<decltype(rows)>>;
        capfront::ClassEstepArgs<Row> args{table.data(), rows, tp, log_w.data(), log_pi.data(), pr,
                                      sparse_r, keep_r, N, L, K, TK, R, J,
                                      static_cast<std::size_t>(block_rows)};
        double* ro = r.mutable_data();
        double total;
        {
            py::gil_scoped_release release;
            total = capfront::pgm_class_estep(args, ro, c, w, rs, ll);
        }
        return py::make_tuple(total, r, C, W, RS, LL);
    });

}

}  // namespace

void register_debias(py::module_& m) {
    m.def("subsample_curve_rows", &subsample_curve_rows, py::arg("successes"),
          py::arg("n_draws"), py::arg("sizes"),
          "Per-prompt exact subsample curve, (N, len(sizes)) (GIL released).");
    m.def("crossfit_rows", &crossfit_rows, py::arg("successes"), py::arg("n_draws"),
          "Per-prompt expected cross-fit oracle over random half splits (GIL released).");
    m.def("pgm_estep", &pgm_estep, py::arg("table"), py::arg("cell_row"), py::arg("topic"),
          py::arg("log_w"), py::arg("resp"), py::arg("ll_out") = py::none(),
          "Latent-model E-step: fills resp (N, J) and, if given, ll_out (N,) with each "
          "prompt's log-likelihood; returns their sum.");
    m.def("pgm_estep_stats", &pgm_estep_stats, py::arg("table"), py::arg("cell_row"),
          py::arg("topic"), py::arg("log_w"), py::arg("resp"), py::arg("block_rows"),
          "Fused E-step and M-step statistics: (log-likelihood, C (L, K, R, J)).");
    m.def("pgm_stats", &pgm_stats, py::arg("resp"), py::arg("cell_row"), py::arg("topic"),
          py::arg("n_topics"), py::arg("n_rows"),
          "Latent-model M-step statistics (L, K, R, J).");
    m.def("pgm_mstep_scores", &pgm_mstep_scores, py::arg("stats"), py::arg("logh"),
          py::arg("cand"), "Latent-model M-step scores of candidate theta values.");
    m.def("pgm_mstep_scores_window", &pgm_mstep_scores_window, py::arg("stats"),
          py::arg("logh"), py::arg("cand"), py::arg("lo"), py::arg("width"),
          "M-step scores of candidates lo[a] .. lo[a] + width - 1 per model/topic.");
    m.def("pgm_emax", &pgm_emax, py::arg("resp"), py::arg("cell_row"), py::arg("topic"),
          py::arg("theta"), py::arg("d_grid"), py::arg("loglik"), py::arg("t_grid"),
          py::arg("family"), py::arg("scale"), py::arg("cut"), py::arg("w1"), py::arg("w2"),
          py::arg("min_resp"), py::arg("eps"), py::arg("tails"), py::arg("edge_loglik"),
          py::arg("t_df") = 3.0,
          "Posterior E[max_l p], E[max_l p^2] per prompt and E[p] per cell "
          "(t_df: the Student t's degrees of freedom, family 2).");
    m.def("pgm_class_estep", &pgm_class_estep, py::arg("table"), py::arg("cell_row"),
          py::arg("topic"), py::arg("n_classes"), py::arg("log_w"), py::arg("log_pi"),
          py::arg("prev_r"), py::arg("sparse_r"), py::arg("keep_r"), py::arg("block_rows"),
          py::arg("stats"), py::arg("want_resp"), py::arg("want_ll"),
          "Latent-class E-step over (prompt, class) pairs with the fused M-step "
          "statistics: (ll, r (N, K), C (L, TK, R, J) | None, wsum (J,) | None, "
          "resp (N K, J) | None, ll_pair (N K,) | None).");
}
