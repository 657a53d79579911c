"""The bad-input battery (tests/fuzz_battery.py), each case in a worker process.

Cases run in a few subprocesses (a crash, e.g. a segfault or std::bad_alloc in a
kernel, loses only the case in flight: it is reported and the rest rerun in a fresh
worker). Each case asserts a ``ValueError``/``TypeError`` naming the argument, or
the right answer. Cases that another helper's branch fixes are ``xfail(strict=False)``
so that they turn into passes after the merge.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

import capfront as cf
from fuzz_battery import CASES

TESTS = Path(__file__).resolve().parent
WORKER = TESTS / "fuzz_battery.py"
N_WORKERS = 2


def _worker(ids: list[str]) -> dict[str, dict]:
    """Run ``ids`` in one subprocess, restarting after a crash."""
    env = {
        **os.environ,
        # the capfront under test (installed, or the source tree) and tests/
        "PYTHONPATH": os.pathsep.join(
            [str(Path(cf.__file__).resolve().parents[1]), str(TESTS)]
        ),
    }
    done: dict[str, dict] = {}
    pending = list(ids)
    while pending:
        proc = subprocess.run(
            [sys.executable, str(WORKER), *pending],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                done[row["id"]] = row
        pending = [i for i in pending if i not in done]
        if pending:  # the first case without an answer took the worker down
            crashed = pending.pop(0)
            done[crashed] = {
                "id": crashed,
                "ok": False,
                "detail": f"worker died (exit {proc.returncode}): {proc.stderr[-800:]}",
            }
    return done


@cache
def _results() -> dict[str, dict]:
    ids = [c.id for c in CASES]
    chunks = [ids[i::N_WORKERS] for i in range(N_WORKERS)]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(N_WORKERS) as pool:
        out: dict[str, dict] = {}
        for part in pool.map(_worker, chunks):
            out.update(part)
    return out


def test_case_ids_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            c,
            id=c.id,
            marks=[pytest.mark.xfail(strict=False, reason=c.xfail)] if c.xfail else [],
        )
        for c in CASES
    ],
)
def test_bad_input(case):
    row = _results()[case.id]
    assert row["ok"], f"{case.id}: expected {case.expect}; {row['detail']}"
