"""``import capfront`` loads nothing heavy; every public name still resolves, and
the type stub ``__init__.pyi`` lists exactly the lazily exported names."""

from __future__ import annotations

import ast
import subprocess
import sys
import types
from pathlib import Path

import capfront

STUB = Path(capfront.__file__).with_name("__init__.pyi")
HEAVY = ("numpy", "pandas", "scipy", "numba", "matplotlib", "capfront._core")


def test_import_loads_no_heavy_module():
    code = f"import sys, capfront; print([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout


def test_every_public_name_resolves():
    for name in capfront.__all__:
        assert getattr(capfront, name) is not None, name
    assert set(capfront.__all__) <= set(dir(capfront))


def test_functions_shadow_their_modules():
    # the package attribute stays the function after the module is imported
    import capfront.bootstrap  # noqa: F401
    import capfront.compare  # noqa: F401
    import capfront.frontier  # noqa: F401
    import capfront.plan  # noqa: F401
    import capfront.simulate  # noqa: F401

    for name in ("bootstrap", "frontier", "simulate", "compare", "plan"):
        assert isinstance(getattr(capfront, name), types.FunctionType), name
    assert capfront.io.__name__ == "capfront.io"


def test_unknown_attribute_is_attribute_error():
    try:
        capfront.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_stub_lists_the_exports():
    tree = ast.parse(STUB.read_text())
    stubbed = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                stubbed[alias.asname or alias.name] = node.module
    exports = dict(capfront._EXPORTS, studies=None)
    assert set(stubbed) == set(exports)
    for name, module in capfront._EXPORTS.items():
        assert stubbed[name] == module, name


def test_naive_oracle_loads_no_pandas():
    """The first naive oracle on counts pays for neither pandas nor the pass@k
    kernels (baselines imports them on the first table)."""
    code = (
        "import sys, numpy as np, capfront as cf\n"
        "import capfront.baselines, capfront.results\n"
        "r = cf.EvalResults.__new__(cf.EvalResults)\n"
        "print('pandas' in sys.modules, 'capfront.expected_max' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "False"], out.stdout
