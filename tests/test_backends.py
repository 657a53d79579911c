"""Backend choice (keyword, environment, fallbacks) and the hide-a-module tests."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest

import capfront as cf
import hiding
from capfront._backend import ENV_VAR
from capfront._kernels import _REGISTRY, kernel

PACKAGE_ROOT = Path(cf.__file__).resolve().parents[1]


def test_available_backends():
    names = cf.available_backends()
    assert names[-1] == "numpy"
    assert set(names) <= set(cf.BACKENDS)
    assert list(names) == [b for b in cf.BACKENDS if b in names]  # fastest first
    assert cf.resolve_backend() == names[0] or os.environ.get(ENV_VAR)


def test_backend_keyword_and_environment(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert cf.resolve_backend(None) == cf.available_backends()[0]
    assert cf.resolve_backend("NumPy") == "numpy"
    monkeypatch.setenv(ENV_VAR, "numpy")
    assert cf.resolve_backend() == "numpy"
    assert cf.resolve_backend("numba" if "numba" in cf.available_backends() else None)
    monkeypatch.setenv(ENV_VAR, "")  # empty means unset
    assert cf.resolve_backend() == cf.available_backends()[0]


def test_environment_variable_selects_the_kernel(monkeypatch):
    calls = []
    entry = kernel("expected_max_binomial_rows")
    original = entry.numpy

    def spy(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setitem(_REGISTRY, entry.name, dataclasses.replace(entry, numpy=spy))
    p = np.array([[0.2, 0.7]])
    monkeypatch.setenv(ENV_VAR, "numpy")
    via_env = cf.expected_max_binomial(p, 5)
    assert len(calls) == 1
    monkeypatch.delenv(ENV_VAR)
    cf.expected_max_binomial(p, 5, backend="numpy")
    assert len(calls) == 2
    if cf.available_backends()[0] != "numpy":
        default = cf.expected_max_binomial(p, 5)
        assert len(calls) == 2  # the default did not use numpy
        np.testing.assert_allclose(default, via_env, atol=1e-14)


@pytest.mark.parametrize("where", ["keyword", "env"])
def test_unknown_backend_lists_the_valid_ones(where, monkeypatch):
    p = np.array([0.5, 0.5])
    with pytest.raises(ValueError, match=r"unknown backend.*cpp, numba, numpy") as err:
        if where == "env":
            monkeypatch.setenv(ENV_VAR, "fortran")
            cf.expected_max_binomial(p, 3)
        else:
            cf.expected_max_binomial(p, 3, backend="fortran")
    assert "fortran" in str(err.value)
    if where == "env":
        assert ENV_VAR in str(err.value)
    for call in (
        lambda: cf.subsample_curve(np.array([[1]]), 2, backend="gpu"),
        lambda: cf.EvalResults.from_arrays(np.ones((2, 2, 2)), backend="gpu"),
        lambda: cf.sufficient_stats(np.ones((2, 2, 2)), backend="gpu"),
    ):
        with pytest.raises(ValueError, match="valid backends are cpp, numba, numpy"):
            call()


def test_threads_roundtrip(threads):
    threads(1)
    if "cpp" in cf.available_backends():
        assert cf.get_num_threads() == 1
        threads(2)
        assert cf.get_num_threads() == 2


# ---------------------------------------------------------- hidden modules

# the child after the hiding prelude (tests/hiding.py; braces doubled)
CHILD = r"""
import json

import numpy as np
import capfront as cf
from capfront.suffstats import sufficient_stats

out = {{"available": cf.available_backends(), "default": cf.resolve_backend()}}
for name in ("cpp", "numba"):
    try:
        cf.resolve_backend(name)
    except ValueError as err:
        out[f"error_{{name}}"] = str(err)
rng = np.random.default_rng(0)
p = rng.random((6, 3))
S = rng.binomial(8, p)
x = (rng.random((5, 3, 7)) < 0.5).astype(np.uint8)
res = cf.EvalResults.from_arrays(x, cost=np.array([1.0, 2.0, 3.0]))
out["emax"] = cf.expected_max_binomial(p, 8).tolist()
out["curve"] = cf.subsample_curve(S, 8).tolist()
out["successes"] = sufficient_stats(x).successes.tolist()
out["prehoc"] = cf.naive_oracle(res, "prehoc").value
out["modules"] = sorted(m for m in HIDE if m in sys.modules)
if "numba" in HIDE:
    # the Numba kernels run as plain Python: their bodies must agree too
    from capfront._kernels import expected_max as nbk
    from capfront._kernels.suffstats import suffstats_nb
    out["py_emax"] = nbk.expected_max_binomial_nb(p, np.full(p.shape, 8)).tolist()
    out["py_curve"] = nbk.subsample_curve_nb(S, np.full(S.shape, 8),
                                             np.arange(1, 9)).tolist()
    out["py_successes"] = suffstats_nb(x, None, None, None)["successes"].tolist()
print(json.dumps(out))
"""


def run_hidden(*hide: str) -> dict:
    out = hiding.run_hidden(CHILD, *hide)
    return json.loads(out.strip().splitlines()[-1])


def reference() -> dict:
    rng = np.random.default_rng(0)
    p = rng.random((6, 3))
    S = rng.binomial(8, p)
    x = (rng.random((5, 3, 7)) < 0.5).astype(np.uint8)
    res = cf.EvalResults.from_arrays(x, cost=np.array([1.0, 2.0, 3.0]))
    return {
        "emax": cf.expected_max_binomial(p, 8, backend="numpy"),
        "curve": cf.subsample_curve(S, 8, backend="numpy"),
        "successes": cf.sufficient_stats(x, backend="numpy").successes,
        "prehoc": cf.naive_oracle(res, "prehoc").value,
    }


def check_same(out: dict, ref: dict, prefix: str = "") -> None:
    for key in ("emax", "curve", "successes"):
        np.testing.assert_allclose(out[prefix + key], ref[key], atol=1e-13)


def test_without_numba():
    out = run_hidden("numba")
    assert "numba" not in out["available"]
    assert out["modules"] == []
    assert "numba is not installed" in out["error_numba"]
    ref = reference()
    check_same(out, ref)
    check_same(out, ref, prefix="py_")
    assert out["prehoc"] == ref["prehoc"]
    if "cpp" in cf.available_backends():
        assert out["default"] == "cpp"


def test_without_core():
    out = run_hidden("capfront._core")
    assert "cpp" not in out["available"]
    assert "capfront._core did not import" in out["error_cpp"]
    assert out["default"] == ("numba" if "numba" in out["available"] else "numpy")
    ref = reference()
    check_same(out, ref)
    assert out["prehoc"] == ref["prehoc"]


def test_without_core_and_numba():
    out = run_hidden("capfront._core", "numba")
    assert out["available"] == ["numpy"]
    assert out["default"] == "numpy"
    check_same(out, reference())
