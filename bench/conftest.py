"""Benchmark session helpers: a header with the machine and size, and a summary of
each group's timings as ratios to the group's NumPy path (the numbers that go into
bench/README.md)."""

from __future__ import annotations

import os

import pytest

import capfront

LARGE = os.environ.get("CAPFRONT_BENCH_LARGE") == "1"


def pytest_report_header(config: pytest.Config) -> str:
    return (
        f"capfront backends: {', '.join(capfront.available_backends())}; "
        f"C++ threads: {capfront.get_num_threads()}; cores: {os.cpu_count()}; "
        f"CAPFRONT_BENCH_LARGE={'1' if LARGE else '0'}"
    )


def _reference(benches: list) -> object | None:
    for bench in benches:
        if "numpy" in str(bench.param or bench.name):
            return bench
    return None


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    session = getattr(config, "_benchmarksession", None)
    if session is None or session.disabled or not session.benchmarks:
        return
    groups: dict[str, list] = {}
    for bench in session.benchmarks:
        if bench.stats is not None and bench.stats.rounds:
            groups.setdefault(bench.group or "(no group)", []).append(bench)
    lines = []
    for group, benches in groups.items():
        ref = _reference(benches)
        if ref is None:
            continue
        lines.append(f"{group}: numpy path {ref.stats.min:.4g} s (min)")
        for bench in sorted(benches, key=lambda b: b.stats.min):
            if bench is ref:
                continue
            lines.append(
                f"    {bench.param or bench.name:<24} {bench.stats.min:10.4g} s  "
                f"{ref.stats.min / bench.stats.min:8.1f}x numpy"
            )
    if lines:
        terminalreporter.write_sep("-", "speed-up over the NumPy path (min times)")
        for line in lines:
            terminalreporter.write_line(line)
