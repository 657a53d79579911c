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
:func:`blocks`) and :mod:`capfront.report_render` (markdown and rich); every name
is re-exported here.
"""

from __future__ import annotations

from .report_cells import (  # noqa: F401
    _INTERNAL,
    DOCS_ESTIMATORS,
    DOCS_FRONTIER,
    MAX_MODELS,
    NAME_WIDTH,
    WIDTH,
    Block,
    Prose,
    _cluster_words,
    _files,
    _flatten,
    _name_note,
    _names,
    fmt,
    pct,
    plain,
    table,
    where_json,
)
from .report_render import (  # noqa: F401
    _footer,
    _looks_numeric,
    _note,
    _title_line,
    fit_widths,
    print_rich,
    to_markdown,
)
from .report_sections import (  # noqa: F401
    _AUDIT_COLS,
    _KIND_TITLES,
    _METHOD_WORDS,
    _SHARE_WORDS,
    _VERSUS_COLS,
    GAP_ROWS,
    NOT_SECTIONS,
    RENDERERS,
    Renderer,
    _accuracy_changes,
    _audit_blocks,
    _benchmark_blocks,
    _data_blocks,
    _frontier_blocks,
    _frontier_notes,
    _gap_blocks,
    _generic_blocks,
    _interval_words,
    _latency_blocks,
    _oracle_blocks,
    _policy_label,
    _pooled_rows,
    _router_blocks,
    _single_blocks,
    _trust_notes,
    _versus_note,
    _versus_rows,
    blocks,
    method_words,
    router_blocks,
)
from .report_summary import (  # noqa: F401
    _frontier_summary,
    _g,
    _gap_summary,
    _pooled_row,
    _range,
    _unit_cost,
    summary,
)
