"""The report rendered: markdown (:func:`to_markdown`, ``report.md``) and a rich
console (:func:`print_rich`, what ``capfront report`` prints), with the column
widths fitted to a 100-column terminal (:func:`fit_widths`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .report_cells import Prose
from .report_sections import blocks


# ---------------------------------------------------------------------- renderers
def _title_line(data: Mapping[str, Any]) -> str:
    src = data.get("source") or {}
    return f"capfront report: {src['path']}" if src.get("path") else "capfront report"


def to_markdown(data: Mapping[str, Any]) -> str:
    """The report as GitHub markdown."""
    lines = [f"# {_title_line(data)}", ""]
    for title, header, rows, notes in blocks(data):
        lines += [f"## {title}", ""]
        if header and rows:
            head = [h or " " for h in header]
            lines.append("| " + " | ".join(head) + " |")
            lines.append("|" + "|".join("---" for _ in head) + "|")
            lines += [
                "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                for row in rows
            ]
            lines.append("")
        if title == "What this means":
            lines += [*[f"{n}\n" for n in notes]]
            continue
        lines += [f"- {n}" for n in notes]
        if notes:
            lines.append("")
    lines.append(_footer(data))
    return "\n".join(lines) + "\n"


def _footer(data: Mapping[str, Any]) -> str:
    s = data.get("settings") or {}
    return (
        f"capfront {data.get('capfront_version')}, seed {s.get('seed')}, "
        f"{s.get('n_resamples')} bootstrap resamples, "
        f"{s.get('audit_sims')} audit simulations."
    )


def _looks_numeric(cell: str) -> bool:
    head = cell.split(" [")[0].split(" (")[0].split(" to ")[0]
    head = head.replace(",", "").rstrip("%")
    if head in ("-", ""):
        return True
    try:
        float(head)
    except ValueError:
        return False
    return True


def fit_widths(
    header: list[str], rows: list[list[str]], numeric: list[bool], width: int
) -> list[int | None]:
    """Column widths that fit ``width``: numeric columns keep their width, text
    columns share the rest, the narrow ones first (so only the longest wrap)."""
    from rich.cells import cell_len

    natural = [
        max([cell_len(h), *(cell_len(r[i]) for r in rows)])
        for i, h in enumerate(header)
    ]
    # rich's simple box: one edge character each side, three between columns
    budget = (
        width
        - 3 * (len(header) - 1)
        - 2
        - sum(n for n, num in zip(natural, numeric, strict=True) if num)
    )
    text = sorted((n, i) for i, n in enumerate(natural) if not numeric[i])
    out: list[int | None] = [None] * len(header)
    for j, (n, i) in enumerate(text):
        share = max(8, budget // (len(text) - j))
        out[i] = min(n, share)
        budget -= out[i]
    return out


def _note(console: Any, text: str) -> None:
    """A dim "- note" with a hanging indent."""
    from rich.padding import Padding
    from rich.table import Table

    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    grid.add_row("-", text)
    console.print(
        Padding(grid, (0, 0, 0, 2), expand=False), style="dim", highlight=False
    )


def print_rich(data: Mapping[str, Any], console: Any = None) -> None:
    """The report as rich tables and paragraphs; tables fit ``console.width``
    (text columns wrap, numbers do not)."""
    from rich import box
    from rich.console import Console
    from rich.padding import Padding
    from rich.table import Table

    console = console or Console()
    console.print(f"[bold]{_title_line(data)}[/bold]", highlight=False)
    console.print()
    for block in blocks(data):
        title, header, rows, notes = block
        if isinstance(block, Prose):
            console.print(f"[bold]{title}[/bold]")
            for para in notes:
                console.print(
                    Padding(para, (0, 2, 1, 2), expand=False), highlight=False
                )
            continue
        if header and rows:
            tab = Table(
                title=title,
                title_justify="left",
                show_header=any(header),
                header_style="bold",
                box=box.SIMPLE_HEAD,
                title_style="bold",
                pad_edge=False,
            )
            key_value = not any(header[1:])
            numeric = [
                all(_looks_numeric(row[i]) for row in rows) and not key_value
                for i in range(len(header))
            ]
            widths = fit_widths(header, rows, numeric, console.width)
            for i, h in enumerate(header):
                tab.add_column(
                    h,
                    justify="right" if numeric[i] and i > 0 else "left",
                    no_wrap=numeric[i],
                    overflow="fold",
                    max_width=widths[i],
                )
            for row in rows:
                tab.add_row(*row)
            console.print(tab)
        else:
            console.print(f"[bold]{title}[/bold]")
        for n in notes:
            _note(console, n)
        console.print()
    console.print(_footer(data), style="dim", highlight=False)
