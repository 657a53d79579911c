"""report.html: one self-contained page (no network), the interactive frontier's
hover text equals the API's routing policy, the static fallback without plotly,
and a real browser (headless Chromium, network off) renders it without errors."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import capfront
from capfront.report import build_report
from capfront.report_html import PLOT_ID, figure_spec, policy_text, to_html

#: a <script src=...>, <link href=...> or <img src=...> that would need the network
REMOTE = re.compile(
    r"<(?:script|link|img|iframe)[^>]+(?:src|href)\s*=\s*['\"]?(?:https?:)?//"
)


@pytest.fixture(scope="module")
def rep():
    sim = capfront.simulate(80, 3, 6, n_topics=2, seed=7)
    return build_report(sim, n_resamples=30, audit_sims=0)


@pytest.fixture(scope="module")
def page(rep, tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    rep.save(out)
    return out / "report.html"


def test_page_is_self_contained(rep, page):
    text = page.read_text()
    assert not REMOTE.search(text)
    assert "What this means" in text and "Single models" in text
    assert rep.data["files"][-1] == "report.html"
    for block in ("Oracle: each prompt sent to its best model", "Data"):
        assert block in text


def test_interactive_figure(rep, page):
    pytest.importorskip("plotly", reason="plotly not installed (capfront[html])")
    text = page.read_text()
    assert f'id="{PLOT_ID}"' in text and "Plotly.newPlot" in text
    spec = figure_spec(rep)
    labels = [b["label"] for b in spec["layout"]["updatemenus"][0]["buttons"]]
    assert labels[:2] == ["prehoc", "posthoc"] and labels[-1] == "all"
    # a vertex's hover text is the frontier's policy there
    fr = rep.objects["frontier"]
    trace = next(t for t in spec["data"] if t["name"].endswith(": vertices"))
    x = trace["x"][len(trace["x"]) // 2]
    share = fr.policy_at(x).share.sort_values(ascending=False)
    top = str(share.index[0])
    assert f"{top}: {share.iloc[0]:.0%}" in policy_text(fr, x, {})
    hover = trace["text"][len(trace["x"]) // 2]
    assert f"cost {x:.4g}" in hover and f"{top}: {share.iloc[0]:.0%}" in hover
    post = rep.objects["frontier_posthoc"]
    assert "draws per prompt k=" in policy_text(post, float(post.vertices[-1, 0]), {})


def test_static_fallback_without_plotly(rep, page, monkeypatch):
    monkeypatch.setitem(sys.modules, "plotly", None)  # import plotly fails
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)
    monkeypatch.setitem(sys.modules, "plotly.io", None)
    text = to_html(rep, png=page.parent / "frontier.png")
    assert 'src="data:image/png;base64,' in text and f'id="{PLOT_ID}"' in text
    assert "Plotly.newPlot" not in text and not REMOTE.search(text)


def test_no_cost_one_draw_page():
    sim = capfront.simulate(60, 4, 1, seed=3)
    res = capfront.EvalResults.from_arrays(sim.scores)
    small = build_report(res, n_resamples=20, audit_sims=0)
    assert "no cost" in to_html(small, interactive=False)
    spec = figure_spec(small)
    if spec is not None:
        title = spec["layout"]["xaxis"]["title"]["text"]
        assert "no cost given" in title
        assert np.all(np.diff(spec["data"][-2]["y"]) <= 0)  # models ranked


def test_no_cost_several_draws_axis_spans_the_generations():
    # without cost the one-draw frontiers and the models all sit at x = 1:
    # the axis spans every number of generations of the best-of-k frontier
    pytest.importorskip("plotly", reason="plotly not installed (capfront[html])")
    sim = capfront.simulate(60, 4, 5, seed=3)
    res = capfront.EvalResults.from_arrays(sim.scores)
    small = build_report(res, n_resamples=20, audit_sims=0)
    spec = figure_spec(small)
    xaxis = spec["layout"]["xaxis"]
    assert "no cost given" in xaxis["title"]["text"]
    post = small.objects["frontier_posthoc"]
    top = float(np.max(post.vertices[:, 0]))
    assert xaxis["range"][0] < 1.0 < top < xaxis["range"][1] and xaxis["dtick"] == 1
    singles = next(t for t in spec["data"] if t["name"] == "single models")
    assert set(singles["x"]) == {1.0}


# ---------------------------------------------------------------- real browser
def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browse(page, *extra: str) -> subprocess.CompletedProcess:
    """Headless Chromium on ``page`` with the network off (every host
    unresolvable, a dead proxy), page console messages logged to stderr."""
    exe = chromium()
    return subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--proxy-server=127.0.0.1:9",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
            "--window-size=1200,1000",
            *extra,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.skipif(chromium() is None, reason="no Chromium (apt-get install chromium)")
def test_renders_in_headless_chromium(page, tmp_path):
    dom = browse(page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console  # no page errors (or any console output)
    if "Plotly.newPlot" in page.read_text():
        # plotly drew the figure: its SVG and the frontier traces are in the DOM
        assert 'class="main-svg"' in dom.stdout
        assert "scatterlayer" in dom.stdout
    else:
        assert f'id="{PLOT_ID}"' in dom.stdout
    shot = tmp_path / "report.png"
    proc = browse(page, f"--screenshot={shot}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20_000
