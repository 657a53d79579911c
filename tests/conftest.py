"""Shared fixtures: the backends to compare, data locations, hypothesis profile."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import capfront

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:  # `import naive` from any rootdir
    sys.path.insert(0, str(TESTS))

#: small fixtures derived from the Apache-2.0 / MIT shared data sets
FIXTURES = TESTS / "data"
#: ../shared/data next to the repository clone (absent in a bare clone)
SHARED_DATA = TESTS.parents[1] / "shared" / "data"

settings.register_profile(
    "capfront",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("capfront")


@pytest.fixture(params=capfront.available_backends())
def backend(request: pytest.FixtureRequest) -> str:
    """Every backend that works here (``cpp`` only when ``_core`` imported)."""
    return request.param


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA} (bare clone)")
    return SHARED_DATA


@pytest.fixture
def threads():
    """Restore the thread count after a test that changes it."""
    before = capfront.get_num_threads()
    yield capfront.set_num_threads
    capfront.set_num_threads(before)


def pytest_configure(config: pytest.Config) -> None:
    # hypothesis imports a deprecated mypy_extensions name while it reports a
    # failure; under filterwarnings=error that would hide the falsifying example.
    config.addinivalue_line(
        "filterwarnings", "ignore:mypy_extensions.TypedDict:DeprecationWarning"
    )
