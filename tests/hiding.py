"""The one way the tests hide a module (``numba``, ``capfront._core``): run code in
a child interpreter whose import system refuses the hidden modules, as on a machine
without them. ``capfront`` is imported from the installation under test."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import capfront

PACKAGE_ROOT = Path(capfront.__file__).resolve().parents[1]

#: the child's first lines; ``{root}`` and ``{hide}`` are filled in, so a body
#: that follows it doubles its literal braces
PRELUDE = r"""
import importlib.abc, sys
sys.path.insert(0, {root!r})
HIDE = {hide!r}

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == h or name.startswith(h + ".") for h in HIDE):
            raise ImportError(f"{{name}} hidden by the test")
        return None

sys.meta_path.insert(0, Blocker())
for h in HIDE:
    sys.modules.pop(h, None)
"""


def run_hidden(body: str, *hide: str, timeout: float = 300) -> str:
    """Run ``PRELUDE + body`` with the modules ``hide`` hidden and return its
    standard output (the test fails with the child's stderr if it fails). The
    backend override ``CAPFRONT_BACKEND`` is not passed on."""
    code = (PRELUDE + textwrap.dedent(body)).format(
        root=str(PACKAGE_ROOT), hide=list(hide)
    )
    env = {k: v for k, v in os.environ.items() if k != "CAPFRONT_BACKEND"}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
