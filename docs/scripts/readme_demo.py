"""Regenerate the README's demo excerpt (between ``<!-- demo-output:start -->`` and
``<!-- demo-output:end -->``), ``docs/img/demo_frontier.png`` and, when headless
Chromium is installed, ``docs/img/report_html.png``.

    PYTHONPATH=python python docs/scripts/readme_demo.py

The excerpt is ``capfront demo`` piped (100 columns, trailing blanks removed); the
figures come from ``capfront demo --out DIR`` with the same (default) seed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def capfront(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    proc = subprocess.run(
        [sys.executable, "-m", "capfront", *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return proc.stdout


def main() -> None:
    text = "\n".join(line.rstrip() for line in capfront("demo").splitlines())
    readme = ROOT / "README.md"
    block = f"<!-- demo-output:start -->\n```text\n$ capfront demo\n{text}\n```\n"
    src = readme.read_text()
    new = re.sub(
        r"<!-- demo-output:start -->\n.*?(?=<!-- demo-output:end -->)",
        lambda _: block,
        src,
        flags=re.S,
    )
    readme.write_text(new)
    with tempfile.TemporaryDirectory() as tmp:
        capfront("demo", "--out", tmp, "--quiet")
        shutil.copy(Path(tmp) / "frontier.png", ROOT / "docs/img/demo_frontier.png")
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if exe:
            subprocess.run(
                [
                    exe,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--hide-scrollbars",
                    "--proxy-server=127.0.0.1:9",
                    "--host-resolver-rules=MAP * ~NOTFOUND",
                    "--virtual-time-budget=4000",
                    "--window-size=1100,1250",
                    f"--screenshot={ROOT / 'docs/img/report_html.png'}",
                    (Path(tmp) / "report.html").as_uri(),
                ],
                capture_output=True,
                check=True,
            )
    print("README excerpt and docs/img figures regenerated")


if __name__ == "__main__":
    main()
