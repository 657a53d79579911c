// C++ checks of the correlated logit-normal E-step (capfront/correlated.hpp): the
// same bits for 1 and 2 threads; antithetic draws (the paired path) against the
// same draws with the pairs' order broken (the general path); a prompt without
// draws has the prior's moments (mean mu, second moment Sigma + mu mu'); a
// precision that is not positive definite is reported.
#include <capfront/correlated.hpp>
#include <capfront/parallel.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "check.hpp"

namespace {

struct Run {
    std::vector<double> m, s1, s2, ll, post;
    std::size_t bad;
};

Run run(const capfront::CorrelatedArgs& a, const std::vector<double>& m0) {
    Run r{m0, std::vector<double>(a.L), std::vector<double>(a.L * a.L),
          std::vector<double>(a.N), std::vector<double>(a.N), 0};
    r.bad = capfront::correlated_estep(a, r.m.data(), r.s1.data(), r.s2.data(), r.ll.data(),
                                       r.post.data());
    return r;
}

}  // namespace

int main() {
    std::mt19937_64 rng(5);
    std::normal_distribution<double> nd;
    const std::size_t N = 300, L = 4, half = 32, K = 2 * half;
    std::vector<double> S(N * L), G(N * L), m0(N * L, 0.0);
    for (std::size_t i = 0; i < N * L; ++i) {
        G[i] = static_cast<double>(rng() % 7);
        S[i] = std::floor(G[i] * static_cast<double>(rng() % 100) / 100.0);
    }
    // prompt 0 has no draws at all
    for (std::size_t l = 0; l < L; ++l) S[l] = G[l] = 0.0;
    // Sigma = 0.5 I + 0.5 (all ones); P its inverse; log|Sigma|
    std::vector<double> mu{0.2, -0.3, 0.5, 0.0}, Sig(L * L), P(L * L);
    for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = 0; j < L; ++j) Sig[i * L + j] = 0.5 * (i == j) + 0.5;
    // (a I + b J)^-1 = (1/a) (I - b / (a + L b) J)
    for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = 0; j < L; ++j)
            P[i * L + j] = 2.0 * ((i == j) - 0.5 / (0.5 + 0.5 * static_cast<double>(L)));
    const double logdet = 3.0 * std::log(0.5) + std::log(0.5 + 0.5 * static_cast<double>(L));
    std::vector<double> z(K * L), log_q(K), z2(K * L), log_q2(K);
    for (std::size_t k = 0; k < half; ++k) {
        double zz = 0.0;
        for (std::size_t l = 0; l < L; ++l) {
            const double v = nd(rng);
            z[k * L + l] = v;
            z[(k + half) * L + l] = -v;
            zz += v * v;
        }
        log_q[k] = log_q[k + half] = -0.5 * zz - static_cast<double>(L) * capfront::kHalfLog2Pi;
    }
    // the same draws, each pair's second member first: not antithetic by position
    for (std::size_t k = 0; k < K; ++k) {
        const std::size_t src = k == 0 ? K - 1 : k == K - 1 ? 0 : k;
        for (std::size_t l = 0; l < L; ++l) z2[k * L + l] = z[src * L + l];
        log_q2[k] = log_q[src];
    }
    capfront::CorrelatedArgs a{S.data(), G.data(), N, L, mu.data(), P.data(), logdet, z.data(),
                               log_q.data(), K, 1.2, 30};
    capfront::set_num_threads(1);
    const Run one = run(a, m0);
    capfront::set_num_threads(2);
    const Run two = run(a, m0);
    CHECK(one.bad == 0 && two.bad == 0);
    CHECK(one.s1 == two.s1 && one.s2 == two.s2 && one.ll == two.ll && one.post == two.post);
    capfront::CorrelatedArgs b = a;
    b.z = z2.data();
    b.log_q = log_q2.data();
    const Run mixed = run(b, m0);
    double d = 0.0;
    for (std::size_t i = 0; i < L * L; ++i) d = std::fmax(d, std::fabs(mixed.s2[i] - one.s2[i]));
    for (std::size_t n = 0; n < N; ++n) {
        d = std::fmax(d, std::fabs(mixed.ll[n] - one.ll[n]));
        d = std::fmax(d, std::fabs(mixed.post[n] - one.post[n]));
    }
    CHECK(d < 1e-9);
    // prompt 0 alone: no likelihood, the posterior is the prior
    capfront::CorrelatedArgs p = a;
    p.N = 1;
    const Run prior = run(p, std::vector<double>(L, 0.0));
    for (std::size_t i = 0; i < L; ++i) {
        CHECK(std::fabs(prior.s1[i] - mu[i]) < 1e-9);
        for (std::size_t j = 0; j < L; ++j)
            CHECK(std::fabs(prior.s2[i * L + j] - (Sig[i * L + j] + mu[i] * mu[j])) < 1e-9);
    }
    CHECK(std::fabs(prior.ll[0]) < 1e-9);  // log p(no data) = 0
    // a precision that is not positive definite
    std::vector<double> negP(L * L, 0.0);
    for (std::size_t i = 0; i < L; ++i) negP[i * L + i] = -1.0;
    capfront::CorrelatedArgs q = a;
    q.P = negP.data();
    CHECK(run(q, m0).bad > 0);
    if (failures == 0) std::printf("test_correlated: ok\n");
    return failures == 0 ? 0 : 1;
}
