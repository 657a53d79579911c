"""Docstrings and comments cite sections of docs/design.md that exist, and no
document that is not in the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design.md"
SOURCES = [
    *sorted((ROOT / "python" / "capfront").rglob("*.py")),
    *sorted((ROOT / "cpp").rglob("*.hpp")),
    *sorted((ROOT / "src").glob("*.cpp")),
]
CITE = re.compile(r"design(?:\.md)? §(\d+[a-f]?)")
# the report's sanitiser of messages mentions the old labels on purpose
OLD = re.compile(r"\bSPEC \d|\bseed[- ]003\b")


def _sections() -> set[str]:
    text = DESIGN.read_text(encoding="utf-8")
    return set(re.findall(r"§(\d+[a-f]?)\b", text))


def test_design_has_the_sections():
    assert {
        "1",
        "2",
        "3",
        "4",
        "4a",
        "4b",
        "4c",
        "4d",
        "4e",
        "4f",
        "5",
        "6",
        "7",
        "8",
    } <= (_sections())


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_citations_exist(path):
    text = path.read_text(encoding="utf-8")
    missing = set(CITE.findall(text)) - _sections()
    assert not missing, f"{path.name} cites design §{sorted(missing)}, not in design.md"
    assert not OLD.search(text), f"{path.name}: {OLD.search(text).group(0)!r}"
