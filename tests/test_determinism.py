"""Same seed, same bits: every public random function repeats exactly across calls,
processes, backends and thread counts; estimates do not depend on the order of the
prompts or of the models."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capfront as cf

#: prints a JSON dict name -> hex bytes of the results of every seeded function
FINGERPRINT = r"""
import hashlib, json, sys
import numpy as np
import capfront as cf

def h(*arrays):
    m = hashlib.sha256()
    for a in arrays:
        m.update(np.ascontiguousarray(np.asarray(a, dtype=np.float64)).tobytes())
    return m.hexdigest()

def fingerprint(backends):
    out = {}
    res = cf.simulate(300, 4, 6, n_topics=2, seed=7, within_cell_correlation=0.2)
    out["simulate"] = h(res.successes, res.truth_p, res.mean_cost, res.mean_latency)
    for b in backends:
        for stat, kw in (
            ("oracle_gain", {}),
            ("naive_oracle", {"two_level": True}),
            ("jackknife", {"method": "bca"}),
            ("best_single", {"stratify": "topic"}),
        ):
            r = cf.bootstrap(res, stat, n_resamples=64, seed=3, keep_replicates=True,
                             backend=b, **kw)
            out[f"bootstrap-{stat}-{b}"] = h(r.replicates, r.ci)
        fr = cf.frontier(res, backend=b).with_band(n_resamples=40, seed=2, n_grid=50)
        out[f"band-{b}"] = h(fr.band["lower"], fr.band["upper"], fr.vertices)
        d = cf.debiased_oracle(res, "double_bc", seed=5, backend=b, ci=0.9,
                               n_resamples=50)
        out[f"double_bc-{b}"] = h(d.value, d.ci)
    te = cf.studies.topic_entropy(n_topics=3, n_models=3, alphas=(0.5, 5.0),
                                  n_reps=2, n_prompts=60, n_draws=4, n_boot=20, seed=1)
    out["topic_entropy"] = h(te.table.select_dtypes("number").to_numpy())
    return out

if __name__ == "__main__":
    threads = int(sys.argv[1])
    cf.set_num_threads(threads)
    print(json.dumps(fingerprint(cf.available_backends())))
"""


def _namespace() -> dict:
    ns: dict = {"__name__": "fingerprint"}
    exec(FINGERPRINT, ns)  # noqa: S102 - test code
    return ns


@pytest.fixture(scope="module")
def local() -> dict[str, str]:
    return _namespace()["fingerprint"](cf.available_backends())


def test_repeated_calls_identical(local):
    again = _namespace()["fingerprint"](cf.available_backends())
    assert again == local


def test_backends_identical(local):
    """The Philox streams and fixed-point sums are the same in every backend."""
    backends = cf.available_backends()
    for key in ("bootstrap-oracle_gain", "bootstrap-naive_oracle", "double_bc"):
        values = {local[f"{key}-{b}"] for b in backends}
        assert len(values) == 1, key


def test_subprocess_and_thread_count_identical(local, threads):
    """A fresh process with one thread against this one with two."""
    threads(2)
    here = _namespace()["fingerprint"](cf.available_backends())
    assert here == local
    # the child imports the capfront under test (installed, or the source tree)
    env = {**os.environ, "PYTHONPATH": str(Path(cf.__file__).resolve().parents[1])}
    proc = subprocess.run(
        [sys.executable, "-c", FINGERPRINT, "1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=True,
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == local


# ------------------------------------------------------------ the audit
#: prints the hex digest of an audit's tables (every number it quotes) at the
#: thread count and worker count given on the command line
AUDIT = r"""
import hashlib, sys
import numpy as np
import capfront as cf

def audit_digest(n_workers):
    res = cf.simulate(160, 3, 4, n_topics=2, seed=5)
    a = cf.audit(res, n_sims=3, n_workers=n_workers)
    m = hashlib.sha256()
    for frame in (a.table, a.world_table, a.checks, a.sensitivity):
        if frame is not None:
            m.update(frame.select_dtypes("number").to_numpy(np.float64).tobytes())
    m.update(np.array([a.quoted["value"], *a.quoted["ci"]]).tobytes())

    def feed(x):  # every simulated estimate, SE and truth, in a fixed order
        if isinstance(x, dict):
            for k in sorted(x):
                feed(x[k])
        else:
            m.update(np.asarray(x, dtype=np.float64).tobytes())

    feed(a.estimates)
    return m.hexdigest()

if __name__ == "__main__":
    cf.set_num_threads(int(sys.argv[1]))
    print(audit_digest(int(sys.argv[2])))
"""


def test_audit_identical_across_calls_workers_threads_and_processes(threads):
    """What a user quotes: the same seed gives the same audit, bit for bit, when
    repeated, with 1 or 2 simulation workers, 1 or 2 kernel threads, and in a
    fresh process."""
    ns: dict = {"__name__": "audit"}
    exec(AUDIT, ns)  # noqa: S102 - test code
    digest = ns["audit_digest"]
    threads(2)
    first = digest(2)
    assert digest(2) == first
    threads(1)
    assert digest(1) == first
    env = {**os.environ, "PYTHONPATH": str(Path(cf.__file__).resolve().parents[1])}
    proc = subprocess.run(
        [sys.executable, "-c", AUDIT, "2", "1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=True,
    )
    assert proc.stdout.strip().splitlines()[-1] == first


# ------------------------------------------------------------ order invariance
ESTIMATES = ("naive", "bootstrap_bc", "jackknife", "extrapolation", "crossfit")


def _estimates(res: cf.EvalResults) -> np.ndarray:
    vals = [cf.debiased_oracle(res, m).value for m in ESTIMATES]
    vals.append(float(cf.naive_oracle(res)))
    vals.append(cf.frontier(res, cost="unit").aiq())
    vals.append(float(cf.expected_max_binomial(res.p_hat, res.n_draws).sum()))
    return np.array(vals)


@settings(max_examples=15, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(5, 30),
    st.integers(1, 4),
    st.integers(4, 7),
)
def test_invariant_to_prompt_and_model_order(seed, N, L, G):
    rng = np.random.default_rng(seed)
    scores = rng.random((N, L, G)) < rng.random((N, L, 1))
    res = cf.EvalResults.from_arrays(scores.astype(np.float64))
    base = _estimates(res)
    pi, li = rng.permutation(N), rng.permutation(L)
    shuffled = cf.EvalResults.from_arrays(scores[pi][:, li].astype(np.float64))
    # means over prompts are summed in another order: equal up to rounding
    np.testing.assert_allclose(_estimates(shuffled), base, rtol=1e-12, atol=1e-14)


def test_public_calls_from_several_python_threads_match_serial():
    """Bootstrap, frontier, debiased estimates (the pgm fit too), the gap
    decomposition and the expected-maximum kernel, 4 Python threads at once (the
    C++ thread pool is shared), mixed backends: the serial results, bit for bit."""
    from concurrent.futures import ThreadPoolExecutor

    res = cf.simulate(1000, 4, 6, seed=2)
    small = cf.simulate(120, 3, 4, n_topics=2, seed=3)
    backends = cf.available_backends()

    def run(i: int) -> tuple:
        b = backends[i % len(backends)]
        boot = cf.bootstrap(
            res, "oracle_gain", n_resamples=64, seed=i, keep_replicates=True, backend=b
        )
        fr = cf.frontier(res, posthoc=True, backend=b)
        dec = cf.debiased_oracle(res, "bootstrap_bc", backend=b)
        gap = cf.gap_decomposition(res, backend=b)
        emax = cf.expected_max_binomial(res.p_hat, res.n_draws, backend=b)
        # pgm on the compiled kernels (the Numba and NumPy ports are slow here)
        pgm = cf.debiased_oracle(small, "pgm", latent_classes=1) if i % 4 == 0 else 0
        return (
            boot.replicates.tobytes(),
            fr.vertices.tobytes(),
            dec.value,
            gap.o_repro_crossfit,
            emax.tobytes(),
            pgm if isinstance(pgm, int) else pgm.value,
        )

    serial = [run(i) for i in range(8)]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(run, range(8))) == serial


# ------------------------------------------------------------ pgm across backends
def _numpy_simd_math() -> bool:
    """Whether NumPy's exp and log differ from the C library's in the last bit
    on this machine (its AVX-512 kernels do; its baseline ones round as libm)."""
    x = np.linspace(-40.0, 40.0, 100_001)
    lib = np.array([math.exp(v) for v in x])
    return not (
        np.array_equal(np.exp(x), lib)
        and np.array_equal(np.log(lib), np.array([math.log(v) for v in lib]))
    )


def test_pgm_fit_identical_across_backends_posterior_max_to_tolerance():
    """The one-class pgm fit is the same bits on every backend: the NumPy and
    Numba E-steps add the log prior and the cells in the C++ kernel's order, the
    normaliser over the difficulty grid in order, the prompts' log-likelihoods
    in its blocks, and (the fused E-step and statistics) make its weights (no
    exp below -30, one reciprocal) and sum its blocks in order.

    Documented tolerances (cheap to measure, not cheap to remove):

    - the posterior maximum: the NumPy reference integrates every cell's exact
      posterior on the full grid, the C++ kernel and its Numba port trim each
      cell's CDF where it is within ``EMAX_EPS = 1e-8`` of 0 or 1 and its
      density where it is below ``exp(-40)`` of its peak: per prompt they differ
      by up to about ``L * EMAX_EPS`` (measured 4e-10 here), so the NumPy audit
      table differs from the compiled ones by about 1e-10 (4e-11 measured);
    - latent classes: the C++ class E-step is one fused pass (log-sum-exp over
      classes and weighted statistics in its own order), the NumPy and Numba ones
      are composed from the one-class kernels and SciPy's ``logsumexp``: theta
      agrees to about 1e-14.
    """
    from capfront.debias import classes, latent

    res = cf.simulate(160, 3, 4, n_topics=2, seed=5)
    S = np.asarray(res.successes, dtype=np.int64)
    G = np.broadcast_to(np.asarray(res.n_draws, dtype=np.int64), S.shape)
    backends = cf.available_backends()
    fits, emax = {}, {}
    for b in backends:
        fits[b] = latent.fit_latent(S, G, family="logitnormal", max_iter=15, backend=b)
        emax[b] = latent.posterior_max(fits[b], b)[0]
    ref = fits[backends[0]]
    for b in backends[1:]:
        f = fits[b]
        if b == "numpy" and _numpy_simd_math():
            # NumPy's AVX-512 exp/log are not the C library's to the last bit
            # (measured: theta 1e-14 apart after 15 iterations)
            np.testing.assert_allclose(f.theta, ref.theta, rtol=0, atol=1e-12)
            np.testing.assert_allclose(f.weights, ref.weights, rtol=1e-10, atol=1e-15)
            assert f.loglik == pytest.approx(ref.loglik, rel=1e-13)
            assert (f.scale, f.n_iter) == (ref.scale, ref.n_iter)
            continue
        np.testing.assert_array_equal(f.theta, ref.theta)
        np.testing.assert_array_equal(f.weights, ref.weights)
        assert (f.loglik, f.scale, f.n_iter) == (ref.loglik, ref.scale, ref.n_iter)
        tol = 1e-8 * S.shape[1] if b == "numpy" else 0.0
        np.testing.assert_allclose(emax[b], emax[backends[0]], rtol=0, atol=tol)
    two = {
        b: classes.fit_classes(S, G, None, 2, max_iter=4, backend=b, base=fits[b])
        for b in backends
    }
    for b in backends[1:]:
        np.testing.assert_allclose(
            two[b].theta, two[backends[0]].theta, rtol=0, atol=1e-12
        )


@pytest.mark.parametrize("family", ["logitnormal", "logit_t"])
def test_likelihood_tables_do_not_depend_on_which_scale_of_a_key_came_first(family):
    """Scales that share a cache key (a float and its neighbour) share one table
    whichever arrived first, so a fit's bits do not depend on earlier fits or on
    which of the audit's threads filled the shared cache first."""
    from capfront.debias import latent

    s, df = 3 * 0.005, 2.5
    s2, df2 = np.nextafter(s, 1.0), np.nextafter(df, 10.0)
    assert latent._logh_key(family, s, df) == latent._logh_key(family, s2, df2)
    a, b = latent.Tables(np.array([10])), latent.Tables(np.array([10]))
    a.logh(family, s, df)
    b.logh(family, s2, df2)
    assert np.array_equal(a.logh(family, s2, df2), b.logh(family, s, df))
