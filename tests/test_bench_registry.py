"""Every registered kernel is benchmarked: some ``bench/bench_*.py`` group names it
through ``kernel_backends`` / ``kernel_cases`` (the harness then checks at run time
that the timed call really dispatches it on each backend), or it is on
:data:`NOT_BENCHMARKED` with the reason. A new registry entry without a benchmark
fails here.

The bench modules are imported in a child interpreter with ``bench/`` first on the
path (as pytest imports them: their ``conftest`` is ``bench/conftest.py``, not the
tests' one); it prints the names the parametrisations asked for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from capfront._kernels import kernels

BENCH = Path(__file__).resolve().parents[1] / "bench"

#: kernels no benchmark times, each with the reason (kept short on purpose)
NOT_BENCHMARKED = {
    "pgm_estep": "no caller: the latent fit runs the fused pgm_estep_stats "
    "(benchmarked in the debias pgm and audit groups); parity-tested only",
}

_CHILD = """
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
import conftest
for name in sys.argv[2:]:
    importlib.import_module(name)
print(json.dumps(sorted(conftest.BENCHMARKED)))
"""


@pytest.fixture(scope="module")
def benchmarked() -> set[str]:
    if not (BENCH / "conftest.py").exists():
        pytest.skip("bench/ is not here (installed package without the sources)")
    pytest.importorskip("pytest_benchmark")
    modules = sorted(p.stem for p in BENCH.glob("bench_*.py"))
    pythonpath = os.pathsep.join(
        p for p in [str(Path(__file__).resolve().parents[1] / "python"), *sys.path] if p
    )
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(BENCH), *modules],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": pythonpath},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_every_kernel_is_benchmarked(benchmarked):
    registry = set(kernels())
    missing = sorted(registry - benchmarked - set(NOT_BENCHMARKED))
    assert not missing, (
        f"registered kernel(s) {missing} are not benchmarked: add a bench group "
        "parametrised by kernel_backends(name) (bench/conftest.py), or list them in "
        "NOT_BENCHMARKED with the reason"
    )


def test_exemptions_are_current(benchmarked):
    registry = set(kernels())
    assert set(NOT_BENCHMARKED) <= registry, "NOT_BENCHMARKED names unknown kernels"
    both = sorted(set(NOT_BENCHMARKED) & benchmarked)
    assert not both, f"{both} are benchmarked now: drop them from NOT_BENCHMARKED"
    assert all(len(why) > 20 for why in NOT_BENCHMARKED.values())
