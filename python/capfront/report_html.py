"""``report.html``: the report as one self-contained page (no network needed).

The page holds the "What this means" summary, every table of the text report
(:func:`capfront.report_text.blocks`) and the frontier figure:

- with plotly installed (``pip install "capfront[html]"``): an interactive figure,
  plotly.js inlined in the page. Hovering a frontier vertex shows its cost, its
  quality and the routing policy there (share of prompts per model and, for
  best-of-k routing, per number of draws k); buttons switch between the prehoc,
  posthoc (best-of-k) and debiased-quality frontiers;
- without plotly: the static ``frontier.png`` embedded as a base64 image.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ._names import short_names
from .frontier_plot import is_unit_cost, plotted_costs, use_log_cost
from .report_text import Prose, blocks

#: hover text (routing policy) for at most this many vertices per frontier
MAX_HOVER = 80
#: the div the interactive figure is drawn into (tests look for it)
PLOT_ID = "capfront-frontier"

CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222;
       line-height: 1.45; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
p.summary { font-size: 1.02em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { padding: 0.2em 0.7em; text-align: left; vertical-align: top; }
th { border-bottom: 2px solid #999; }
tr:nth-child(even) td { background: #f6f6f6; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
ul.notes { color: #555; font-size: 0.88em; margin-top: 0.2em; }
footer { color: #777; font-size: 0.85em; margin-top: 2em; }
img.figure { max-width: 100%; }
"""


def _num_cell(cell: str) -> bool:
    from .report_text import _looks_numeric

    return _looks_numeric(cell) and cell not in ("", "-")


def _table_html(header: list[str], rows: list[list[str]]) -> str:
    numeric = [
        all(_num_cell(r[i]) or r[i] in ("", "-") for r in rows)
        and any(_num_cell(r[i]) for r in rows)
        for i in range(len(header))
    ]
    e = html.escape
    head = "".join(
        f'<th class="{"num" if numeric[i] else ""}">{e(h)}</th>'
        for i, h in enumerate(header)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="{"num" if numeric[i] else ""}">{e(c)}</td>'
            for i, c in enumerate(r)
        )
        + "</tr>"
        for r in rows
    )
    show_head = any(header)
    return (
        "<table>"
        + (f"<thead><tr>{head}</tr></thead>" if show_head else "")
        + f"<tbody>{body}</tbody></table>"
    )


def _blocks_html(data: Mapping[str, Any]) -> tuple[str, str]:
    """(summary html, tables html)."""
    e = html.escape
    summary, parts = "", []
    for block in blocks(data):
        title, header, rows, notes = block
        if isinstance(block, Prose):
            summary = f"<h2>{e(title)}</h2>" + "".join(
                f'<p class="summary">{e(n)}</p>' for n in notes
            )
            continue
        parts.append(f"<h2>{e(title)}</h2>")
        if header and rows:
            parts.append(_table_html(header, rows))
        if notes:
            parts.append(
                '<ul class="notes">'
                + "".join(f"<li>{e(n)}</li>" for n in notes)
                + "</ul>"
            )
    return summary, "\n".join(parts)


# ---------------------------------------------------------------------- policy
def policy_text(fr: Any, cost: float, names: Mapping[str, str]) -> str:
    """The routing policy at ``cost`` in a few lines: the share of prompts per
    model (largest first, the rest summed) and, for best-of-k, per k."""
    pol = fr.policy_at(cost)
    share = pol.share.sort_values(ascending=False)
    share = share[share > 5e-4]
    lines = [f"{names.get(str(m), str(m))}: {s:.0%}" for m, s in share.head(5).items()]
    rest = float(share.iloc[5:].sum())
    if rest > 0:
        lines.append(f"{len(share) - 5} others: {rest:.0%}")
    if fr.posthoc:
        w = fr.weights
        inside = w > 0
        ks = np.asarray(pol.k)[inside]
        kw = w[inside] / w[inside].sum()
        dist = np.bincount(ks, weights=kw)
        top = [f"k={k}: {dist[k]:.0%}" for k in np.argsort(-dist)[:4] if dist[k] > 5e-4]
        lines.append("draws per prompt " + ", ".join(top))
    return "<br>".join(html.escape(x) for x in lines)


def _hover_vertices(fr: Any) -> np.ndarray:
    v = np.asarray(fr.vertices)
    if len(v) <= MAX_HOVER:
        return np.arange(len(v))
    return np.unique(np.linspace(0, len(v) - 1, MAX_HOVER).round().astype(int))


def _frontier_traces(
    fr: Any, label: str, color: str, group: str, names: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The frontier line (no hover) and hoverable vertex markers."""
    v = np.asarray(fr.vertices)
    idx = _hover_vertices(fr)
    unit = "generations" if is_unit_cost(fr) else "cost"
    text = [
        f"<b>{html.escape(label)}</b><br>{unit} {v[i, 0]:.4g}, quality {v[i, 1]:.4f}"
        f"<br>{policy_text(fr, float(v[i, 0]), names)}"
        for i in idx
    ]
    return [
        {
            "type": "scatter",
            "mode": "lines",
            "x": v[:, 0].tolist(),
            "y": v[:, 1].tolist(),
            "name": label,
            "line": {"color": color, "width": 3},
            "hoverinfo": "skip",
            "legendgroup": group,
            "meta": group,
        },
        {
            "type": "scatter",
            "mode": "markers",
            "x": v[idx, 0].tolist(),
            "y": v[idx, 1].tolist(),
            "name": f"{label}: vertices",
            "marker": {"color": color, "size": 5, "opacity": 0.7},
            "text": text,
            "hovertemplate": "%{text}<extra></extra>",
            "legendgroup": group,
            "showlegend": False,
            "meta": group,
        },
    ]


def _arrow_traces(fr: Any, cost: float, acc: float) -> list[dict[str, Any]]:
    """The matched-cost (up) and matched-quality (left) arrows from the best
    single model to the prehoc frontier, as line traces with a head."""
    out = []
    q_up, c_left = float(fr.quality_at(cost)), float(fr.cost_at(acc))
    segments = []
    if np.isfinite(q_up) and q_up > acc + 1e-9 and acc < 1:
        text = f"{(q_up - acc) / (1 - acc):.0%} fewer errors at the same cost"
        segments.append(([cost, cost], [acc, q_up], text, "#2ca02c", "triangle-up"))
    if np.isfinite(c_left) and 0 < c_left < cost * (1 - 1e-9):
        text = f"{1 - c_left / cost:.0%} lower cost at the same accuracy"
        segments.append(([cost, c_left], [acc, acc], text, "#9467bd", "triangle-left"))
    for x, y, text, color, head in segments:
        out.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": x,
                "y": y,
                "name": text,
                "line": {"color": color, "width": 2},
                "marker": {"symbol": ["circle", head], "size": [1, 12], "color": color},
                "hovertemplate": f"{text}<extra></extra>",
                "meta": "singles",
            }
        )
    return out


def figure_spec(rep: Any) -> dict[str, Any] | None:
    """The interactive figure as a plotly figure dict (``data``, ``layout``), or
    None without a frontier."""
    fronts = {
        "prehoc": (rep.objects.get("frontier"), "routing frontier (prehoc)", "#1f77b4"),
        "posthoc": (
            rep.objects.get("frontier_posthoc"),
            "best-of-k routing frontier (posthoc)",
            "#2ca02c",
        ),
        "debiased": (
            rep.objects.get("frontier_debiased"),
            "frontier, debiased per-cell quality",
            "#ff7f0e",
        ),
    }
    fronts = {k: v for k, v in fronts.items() if v[0] is not None}
    base = fronts.get("prehoc", (None,))[0]
    if base is None:
        return None
    names = short_names(rep.results.models.astype(str))
    ranked = is_unit_cost(base) and "posthoc" not in fronts
    singles = base.single_points(best_of_k=False)
    best_model, best_acc, best_cost = base.best_single()
    if ranked:  # no cost, one draw: models ranked by accuracy, the oracle as a line
        singles = singles.sort_values("quality", ascending=False, kind="stable")
        xs = np.arange(1, len(singles) + 1, dtype=float)
    else:
        xs = singles["cost"].to_numpy()

    traces: list[dict[str, Any]] = []
    for group, (fr, label, color) in fronts.items():
        if ranked:
            top = fr.max_quality
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": [1, len(singles)],
                    "y": [top, top],
                    "name": f"oracle ({label})",
                    "line": {"color": color, "width": 3},
                    "text": [policy_text(fr, fr.min_cost, names)] * 2,
                    "hovertemplate": f"<b>oracle</b> quality {top:.4f}<br>%{{text}}"
                    "<extra></extra>",
                    "meta": group,
                }
            )
            continue
        traces += _frontier_traces(fr, label, color, group, names)
    hover = [
        f"<b>{html.escape(str(m))}</b><br>"
        + ("" if ranked else f"cost {c:.4g}, ")
        + f"accuracy {q:.4f}"
        for m, c, q in zip(
            singles["model"], singles["cost"], singles["quality"], strict=True
        )
    ]
    traces.append(
        {
            "type": "scatter",
            "mode": "markers",
            "x": xs.tolist(),
            "y": singles["quality"].tolist(),
            "name": "single models",
            "marker": {"color": "#d62728", "size": 8, "opacity": 0.8},
            "text": hover,
            "hovertemplate": "%{text}<extra></extra>",
            "meta": "singles",
        }
    )
    if not ranked:
        traces += _arrow_traces(fronts["prehoc"][0], best_cost, best_acc)
    bx = 1.0 if ranked else best_cost
    traces.append(
        {
            "type": "scatter",
            "mode": "markers",
            "x": [bx],
            "y": [best_acc],
            "name": f"best single model ({names.get(best_model, best_model)})",
            "marker": {"color": "black", "size": 16, "symbol": "star"},
            "hovertemplate": f"<b>{html.escape(best_model)}</b> (best single)<br>"
            + ("" if ranked else f"cost {best_cost:.4g}, ")
            + f"accuracy {best_acc:.4f}<extra></extra>",
            "meta": "singles",
        }
    )
    costs = [plotted_costs(f[0]) for f in fronts.values()]
    logx = (not ranked) and use_log_cost(costs)
    unit = is_unit_cost(base)
    xtitle = (
        "models, most accurate first (no cost given: one generation each)"
        if ranked
        else "generations per prompt (no cost given)"
        if unit
        else "mean cost per prompt"
    )
    groups = [g for g in ("prehoc", "posthoc", "debiased") if g in fronts]
    buttons = []
    for choice in [*groups, "all"]:
        visible = [
            t["meta"] == "singles" or choice == "all" or t["meta"] == choice
            for t in traces
        ]
        buttons.append(
            {"label": choice, "method": "restyle", "args": [{"visible": visible}]}
        )
    # start with prehoc (and the debiased frontier next to it)
    start = [t["meta"] in ("singles", "prehoc", "debiased") for t in traces]
    for t, vis in zip(traces, start, strict=True):
        t["visible"] = vis
        t.pop("meta")
    xaxis: dict[str, Any] = {
        "title": {"text": xtitle},
        "type": "log" if logx else "linear",
    }
    if unit and not ranked:
        # no cost, several draws: the one-draw frontiers and the models all sit
        # at x = 1, where plotly's autorange collapses to a sliver; show every
        # number of generations the best-of-k frontier reaches, one tick each
        top = max(float(np.max(c)) for c in costs)
        xaxis.update(range=[0.5, max(top, 1.0) + 0.5], dtick=1)
    layout = {
        "xaxis": xaxis,
        "yaxis": {
            "title": {"text": "accuracy" if rep.results.is_binary else "mean score"}
        },
        "hovermode": "closest",
        "height": 600,
        "margin": {"l": 60, "r": 20, "t": 50, "b": 110},
        "legend": {"orientation": "h", "x": 0, "y": -0.18, "yanchor": "top"},
        "updatemenus": [
            {
                "type": "buttons",
                "direction": "right",
                "x": 0,
                "xanchor": "left",
                "y": 1.12,
                "yanchor": "top",
                "buttons": buttons,
                "active": 0,
            }
        ],
    }
    return {"data": traces, "layout": layout}


def _plotly_html(spec: dict[str, Any]) -> str | None:
    try:
        import plotly.graph_objects as go
        import plotly.io as pio
    except ImportError:
        return None
    fig = go.Figure(spec)
    return pio.to_html(
        fig,
        full_html=False,
        include_plotlyjs=True,  # inlined: the page works offline
        div_id=PLOT_ID,
        config={"displaylogo": False, "responsive": True},
    )


def _png_html(rep: Any, png: Path | None) -> str:
    """The static figure as an embedded image."""
    if png is not None and Path(png).exists():
        raw = Path(png).read_bytes()
    else:
        from .report_figures import _pyplot, frontier_figure

        fig = frontier_figure(rep)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        _pyplot().close(fig)
        raw = buf.getvalue()
    b64 = base64.b64encode(raw).decode("ascii")
    return (
        f'<img class="figure" id="{PLOT_ID}" alt="frontier figure" '
        f'src="data:image/png;base64,{b64}">'
        '<p class="notes">Static figure: install plotly (<code>pip install '
        '"capfront[html]"</code>) for the interactive one.</p>'
    )


def to_html(rep: Any, png: Path | None = None, interactive: bool = True) -> str:
    """The report as one self-contained HTML page. ``png``: the static figure to
    embed when plotly is absent (rendered here when not given)."""
    from .report_text import _footer, _title_line

    summary, tables = _blocks_html(rep.data)
    spec = figure_spec(rep) if interactive else None
    fig_html = _plotly_html(spec) if spec is not None else None
    if fig_html is None:
        fig_html = _png_html(rep, png)
    title = html.escape(_title_line(rep.data))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{CSS}</style>
</head>
<body>
<h1>{title}</h1>
{summary}
<h2>Frontier</h2>
<p class="summary">Hover a point for its cost, quality and the routing policy
there (share of prompts per model; for best-of-k, per number of draws); the
buttons switch between the frontiers.</p>
{fig_html}
{tables}
<footer>{html.escape(_footer(rep.data))}</footer>
</body>
</html>
"""


def write_html(rep: Any, out_dir: str | Path, png: Path | None = None) -> Path:
    path = Path(out_dir) / "report.html"
    path.write_text(to_html(rep, png), encoding="utf-8")
    return path
