"""The benchmark harness, shared by every ``bench_*.py`` file.

- ``LARGE``: the one size switch (``CAPFRONT_BENCH_LARGE=1`` runs the sizes quoted in
  bench/README.md; the default sizes run in seconds, as correctness checks in CI with
  ``--benchmark-disable``).
- :func:`run`: the one timing helper for pytest-benchmark (one plain call when
  benchmarking is disabled).
- :func:`timed`: wall time of one call, for benches that time by hand (subprocesses,
  scaled runs).
- :func:`alternative`: marks a benchmark as what a user would write instead of
  capfront (NumPy one-liner, SciPy, moocore, paretoset, polars). Every benchmark
  checks that its output agrees with capfront's.
- :func:`kernel_backends`: the ``backend`` parametrisation of a benchmark that times
  registry kernels (:func:`capfront._kernels.kernels`, the registry the parity tests
  loop over): one case per backend of the entries, skipped with the reason when a
  backend is not available here. The harness checks that the timed test really
  dispatched every kernel it names on its backend, and
  ``tests/test_bench_registry.py`` that every registered kernel is named by some
  benchmark.

At the end of a run the summary prints, per group, capfront's time against the
fastest alternative of the group (and against the group's NumPy reference path),
with the load average (the box is shared: compare ratios from one run).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import pytest

import capfront
from capfront._backend import BACKENDS, resolve_backend
from capfront._kernels import Kernel, kernels

LARGE = os.environ.get("CAPFRONT_BENCH_LARGE") == "1"


def run(
    benchmark: Any,
    func: Callable[..., Any],
    *args: Any,
    rounds: int | None = None,
    warmup: bool = False,
    **kwargs: Any,
) -> Any:
    """Time ``func(*args, **kwargs)`` and return its result.

    ``rounds=None`` lets pytest-benchmark calibrate; otherwise ``rounds`` timed
    calls of one iteration each, after one untimed call when ``warmup`` (numba
    compiles on first use). The README quotes the min.
    """
    if benchmark.disabled:
        return func(*args, **kwargs)
    if rounds is None:
        return benchmark(func, *args, **kwargs)
    return benchmark.pedantic(
        func,
        args=args,
        kwargs=kwargs,
        rounds=rounds,
        iterations=1,
        warmup_rounds=1 if warmup else 0,
    )


def timed(func: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """``(func(*args, **kwargs), wall seconds)``."""
    start = time.perf_counter()
    out = func(*args, **kwargs)
    return out, time.perf_counter() - start


def write_long_parquet(
    path: Any, N: int, L: int, G: int, row_group: int, model_names: Any
) -> None:
    """A long Parquet table (prompt_id int32, model string, generation int8, score
    uint8), sorted by prompt, in row groups of about ``row_group`` rows; cell
    ``(n, l)`` succeeds with ``p ~ U(0.05, 0.95)`` (seed 0)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, size=(N, L))
    names = np.asarray(model_names)
    per_group = max(1, row_group // (L * G))
    schema = pa.schema(
        [
            ("prompt_id", pa.int32()),
            ("model", pa.string()),
            ("generation", pa.int8()),
            ("score", pa.uint8()),
        ]
    )
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, N, per_group):
            stop = min(N, start + per_group)
            n, m, g = np.indices((stop - start, L, G)).reshape(3, -1)
            score = (rng.random(n.size) < p[start + n, m]).astype(np.uint8)
            columns = {
                "prompt_id": (start + n).astype(np.int32),
                "model": pa.array(names[m]),
                "generation": g.astype(np.int8),
                "score": score,
            }
            writer.write_table(pa.table(columns))


#: kernel names passed to :func:`kernel_backends` by the bench modules imported so
#: far (``tests/test_bench_registry.py`` imports every bench module and reads it)
BENCHMARKED: set[str] = set()


def kernel_backends(
    *names: str, case: Any = None, backends: tuple[str, ...] = BACKENDS
) -> list[Any]:
    """``pytest.param`` s of ``backend`` (or of ``(case, backend)`` when ``case`` is
    given) for a benchmark whose timed call dispatches the registry kernels
    ``names``.

    One param per backend of ``backends`` (default every backend a registry entry
    has), id ``backend`` (``case-backend``); a backend not available here is skipped
    with the reason :func:`capfront.resolve_backend` gives. Each param carries the
    ``kernels`` mark: after the test the harness asserts that every kernel in
    ``names`` was dispatched on that backend (a benchmark that stops reaching its
    kernel fails instead of timing something else). An unknown kernel name raises
    at collection.
    """
    registry = kernels()
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise ValueError(
            f"kernel_backends: unknown kernel(s) {unknown}; registered: "
            f"{', '.join(sorted(registry))}"
        )
    BENCHMARKED.update(names)
    params = []
    for backend in backends:
        marks = [pytest.mark.kernels(*names)]
        try:
            resolve_backend(backend)
        except ValueError as err:
            marks.append(pytest.mark.skip(reason=str(err)))
        values = (backend,) if case is None else (case, backend)
        ident = backend if case is None else f"{case}-{backend}"
        params.append(pytest.param(*values, marks=marks, id=ident))
    return params


def kernel_cases(cases: dict[Any, str | tuple[str, ...]]) -> list[Any]:
    """``(case, backend)`` params of :func:`kernel_backends` for every case of
    ``cases``: case -> the kernel (or tuple of kernels) its timed call runs on."""
    return [
        p
        for case, names in cases.items()
        for p in kernel_backends(
            *((names,) if isinstance(names, str) else names), case=case
        )
    ]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kernels(*names): registry kernels the benchmark times; the harness checks "
        "that each was dispatched on the test's backend",
    )


@pytest.fixture(autouse=True)
def _check_dispatched(request: pytest.FixtureRequest, monkeypatch) -> Any:
    """Record the kernels dispatched during a ``kernels``-marked test (every
    implementation is reached through ``Kernel.for_backend``) and fail the test
    when one of its named kernels was not dispatched on its backend."""
    marker = request.node.get_closest_marker("kernels")
    if marker is None or not marker.args:
        yield
        return
    seen: set[tuple[str, str]] = set()
    original = Kernel.for_backend

    def recording(self: Kernel, backend: str) -> Any:
        seen.add((self.name, backend))
        return original(self, backend)

    monkeypatch.setattr(Kernel, "for_backend", recording)
    yield
    backend = request.node.callspec.params["backend"]
    missing = [name for name in marker.args if (name, backend) not in seen]
    assert not missing, (
        f"{request.node.nodeid} names kernel(s) {missing} but did not dispatch them "
        f"on {backend!r} (dispatched: {sorted(seen)})"
    )


def alternative(benchmark: Any, name: str) -> None:
    """Mark ``benchmark`` as the alternative ``name`` (e.g. ``"moocore"``)."""
    benchmark.extra_info["alternative"] = name


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on every platform
        return "n/a"


def pytest_report_header(config: pytest.Config) -> str:
    return (
        f"capfront backends: {', '.join(capfront.available_backends())}; "
        f"C++ threads: {capfront.get_num_threads()}; cores: {os.cpu_count()}; "
        f"CAPFRONT_BENCH_LARGE={'1' if LARGE else '0'}; load average {_load()}"
    )


def _label(bench: Any) -> str:
    return str(bench.param or bench.name)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    session = getattr(config, "_benchmarksession", None)
    if session is None or session.disabled or not session.benchmarks:
        return
    # bench files import this module as ``conftest``, which can register the
    # hook a second time: print once
    if getattr(config, "_capfront_summary_done", False):
        return
    config._capfront_summary_done = True  # type: ignore[attr-defined]
    groups: dict[str, list] = {}
    for bench in session.benchmarks:
        if bench.stats is not None and bench.stats.rounds:
            groups.setdefault(bench.group or "(no group)", []).append(bench)
    lines = [f"load average at the end: {_load()}"]
    for group, benches in groups.items():
        alts = [b for b in benches if "alternative" in b.extra_info]
        ours = [b for b in benches if "alternative" not in b.extra_info]
        numpy = [b for b in ours if "numpy" in _label(b)]
        refs = []
        if alts:
            best = min(alts, key=lambda b: b.stats.min)
            refs.append((best.extra_info["alternative"], best.stats.min))
        if numpy:
            refs.append(("numpy path", numpy[0].stats.min))
        if not refs:
            continue
        lines.append(
            f"{group}: "
            + "; ".join(f"{name} {t:.4g} s" for name, t in refs)
            + " (min times)"
        )
        for bench in sorted(ours, key=lambda b: b.stats.min):
            ratios = "  ".join(
                f"{t / bench.stats.min:8.2f}x {name}" for name, t in refs
            )
            lines.append(f"    {_label(bench):<28} {bench.stats.min:10.4g} s  {ratios}")
    terminalreporter.write_sep("-", "capfront against the best alternative")
    for line in lines:
        terminalreporter.write_line(line)
