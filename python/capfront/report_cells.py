"""The report's building blocks: :class:`Block` / :class:`Prose`, numbers and
words as table cells (:func:`fmt`, :func:`pct`, :func:`plain`: no internal labels),
the files and model names the text may mention, and the generic table of a section
without a renderer (:func:`table`). Shared by the summary, the sections and the
renderers (:mod:`capfront.report_text` re-exports every public name)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from ._names import short_names, shortened

DOCS_ESTIMATORS = "docs/estimators.md"
DOCS_FRONTIER = "docs/frontier.md"
#: the width the tables are made to fit
WIDTH = 100
#: model names longer than this are shortened in tables other than the model list
NAME_WIDTH = 26
MAX_MODELS = 15


class Block(NamedTuple):
    """A titled table: ``header`` and ``rows`` of strings, ``notes`` below it."""

    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str]


class Prose(Block):
    """A block of paragraphs (``notes``), no table."""


# ---------------------------------------------------------------------- cells
def fmt(value: Any, key: str = "") -> str:
    """A cell: percentages for reductions, shares and coverages, 4 decimals
    otherwise."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if not math.isfinite(x):
            return "-"
        if any(w in key for w in ("reduction", "share", "coverage")) and abs(x) <= 5:
            return f"{100 * x:.1f}%".replace("-0.0%", "0.0%")
        if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e7):
            return f"{x:.3g}"
        return f"{x:,.2f}" if abs(x) >= 10 else f"{x:.4f}"
    if isinstance(value, list):
        if len(value) == 2 and all(
            isinstance(v, (int, float)) or v is None for v in value
        ):
            return f"[{fmt(value[0], key)}, {fmt(value[1], key)}]"
        return ", ".join(fmt(v, key) for v in value[:6]) + (
            " ..." if len(value) > 6 else ""
        )
    if isinstance(value, dict):
        return ", ".join(f"{k}={fmt(v, k)}" for k, v in list(value.items())[:6])
    return str(value)


def pct(x: Any, digits: int = 1) -> str:
    """``0.8856 -> '88.6%'``; ``'-'`` for None."""
    if x is None or not math.isfinite(float(x)):
        return "-"
    return f"{100 * float(x):.{digits}f}%"


_INTERNAL = [
    (re.compile(r"\s*\((?:SPEC|seed)\s+[\w.\- ,]+\)"), ""),
    # the docstrings' "(design §4c)" cites docs/design.md: not for the report
    (re.compile(r"\s*\(design §\d+[a-f]?\)"), ""),
    (re.compile(r"\b(?:SPEC|seed)\s+\d+[a-z]?(?:\s*[-,]\s*\d+[a-z]?)*\b,?\s*"), ""),
    (re.compile(r"cluster-robust SE over (\d+) clusters"), "__CLUSTERS__\\1"),
]


def plain(text: Any) -> str:
    """Text from elsewhere (skip reasons, notes) without internal labels: section
    numbers of the formula sheet and design-note ids go, a cluster-robust standard
    error is said in words."""
    s = str(text)
    for pattern, repl in _INTERNAL:
        s = pattern.sub(repl, s)
    s = re.sub(
        r"__CLUSTERS__(\d+)",
        lambda m: _cluster_words(int(m.group(1))),
        s,
    )
    return re.sub(r"\s{2,}", " ", s).strip()


def _cluster_words(n: int) -> str:
    words = (
        f"a standard error that treats the prompts of each of the {n} groups "
        "(benchmarks or topics) as related"
    )
    if n < 10:
        words += f"; with only {n} groups it is itself rough"
    return words


def _files(data: Mapping[str, Any]) -> list[str]:
    return list(data.get("files") or [])


def where_json(data: Mapping[str, Any]) -> str:
    """Where the full JSON is: the written file, or how to get it."""
    if "report.json" in _files(data):
        return "in report.json"
    return "in the JSON report (--json, or --out DIR writes DIR/report.json)"


def _names(data: Mapping[str, Any]) -> dict[str, str]:
    sm = data.get("single_models") or {}
    models = [r.get("model") for r in (sm.get("models") or []) if r.get("model")]
    return short_names(models, NAME_WIDTH)


def _name_note(data: Mapping[str, Any], used: list[str]) -> list[str]:
    """A note when some names in ``used`` were shortened."""
    mapping = _names(data)
    cut = {k: v for k, v in shortened(mapping).items() if k in used}
    if not cut:
        return []
    return [
        "model names shortened (the prefix before the model's own name dropped, e.g. "
        f"{next(iter(cut.values()))} = {next(iter(cut))}); full names in the "
        "single-models table"
    ]


# ---------------------------------------------------------------------- generic
def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "."))
        elif isinstance(v, list) and len(v) > 8:
            continue  # curves and vertex lists live in the JSON
        else:
            out[key] = v
    return out


def table(value: Any, max_rows: int = 40) -> tuple[list[str], list[list[str]]]:
    """Header and rows for a list of records or a mapping."""
    if isinstance(value, list) and value and all(isinstance(r, Mapping) for r in value):
        flat = [_flatten(r) for r in value]
        header = list(dict.fromkeys(k for r in flat for k in r))
        return header, [[fmt(r.get(h), h) for h in header] for r in flat[:max_rows]]
    if isinstance(value, Mapping):
        if value and all(isinstance(v, Mapping) for v in value.values()):
            flat = {k: _flatten(v) for k, v in value.items()}
            header = ["", *dict.fromkeys(k for r in flat.values() for k in r)]
            return header, [
                [str(k), *[fmt(r.get(h), h) for h in header[1:]]]
                for k, r in list(flat.items())[:max_rows]
            ]
        flat1 = _flatten(value)
        return ["", "value"], [[k, fmt(v, k)] for k, v in flat1.items()]
    return ["value"], [[fmt(value)]]
