"""The report in words and tables: what ``capfront report`` prints (rich) and
writes (``report.md``), from the JSON-ready dict :func:`capfront.report.build_report`
makes.

Rules the text keeps (tests check them):

- one number, one interval: each estimate is shown with the one interval its
  method quotes, said in plain words; other intervals stay in the JSON;
- no internal labels (formula-sheet section numbers, design-note ids, code
  names of standard errors): plain words, with a pointer to the docs;
- a file is named only when it was written (``data["files"]``), otherwise the text
  says how to get it;
- a short "What this means" paragraph first, generated from the numbers;
- tables fit a 100-column terminal: long model names are shortened (run prefixes
  dropped, with a note) and text columns wrap instead of being cut.

:func:`blocks` turns the dict into titled tables (:class:`Block`), shared by
:func:`to_markdown`, :func:`print_rich` and the HTML page
(:mod:`capfront.report_html`). Each section has a renderer in
:data:`RENDERERS`; a section without one is shown as a generic table.

The code lives in modules named for what they hold: :mod:`capfront.report_cells`
(blocks and cells), :mod:`capfront.report_summary` (the "What this means"
paragraph), :mod:`capfront.report_sections` (one renderer per section,
:func:`blocks`) and :mod:`capfront.report_render` (markdown and rich). Their
public names are re-exported here (``__all__``); the private helpers are imported
from the module that holds them, except the three :mod:`capfront.report_html`
takes from here.
"""

from __future__ import annotations

from .report_cells import (
    DOCS_ESTIMATORS,
    DOCS_FRONTIER,
    MAX_MODELS,
    NAME_WIDTH,
    WIDTH,
    Block,
    Prose,
    fmt,
    pct,
    plain,
    table,
    where_json,
)
from .report_render import (  # noqa: F401  (the private three: report_html)
    _footer,
    _looks_numeric,
    _title_line,
    fit_widths,
    print_rich,
    to_markdown,
)
from .report_sections import (
    GAP_ROWS,
    NOT_SECTIONS,
    RENDERERS,
    Renderer,
    blocks,
    method_words,
    router_blocks,
)
from .report_summary import summary

__all__ = [
    "DOCS_ESTIMATORS",
    "DOCS_FRONTIER",
    "GAP_ROWS",
    "MAX_MODELS",
    "NAME_WIDTH",
    "NOT_SECTIONS",
    "RENDERERS",
    "WIDTH",
    "Block",
    "Prose",
    "Renderer",
    "blocks",
    "fit_widths",
    "fmt",
    "method_words",
    "pct",
    "plain",
    "print_rich",
    "router_blocks",
    "summary",
    "table",
    "to_markdown",
    "where_json",
]
