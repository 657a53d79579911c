"""No import cycles in ``python/capfront``.

The graph is built statically from every ``import`` statement of every module,
including those inside functions (a function-level import hides a cycle from
Python's import machinery but not from a reader: the two modules still depend on
each other). Layers: the data model (``suffstats``, ``frames``,
``table_files``, ``results``) <- the format ``adapters`` <- ``io`` (which also
names the adapters: ``capfront.io.load``); report build (``report``,
``router_report``) -> renderers (``report_text``, ``report_html``,
``report_figures``), which take the report's JSON dict and import nothing of the
build.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "capfront"
ROOT = Path(__file__).resolve().parents[1] / "python"


def _modules(root: Path = ROOT) -> dict[str, tuple[Path, bool]]:
    mods = {}
    for f in (root / PACKAGE).rglob("*.py"):
        parts = list(f.relative_to(root).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        mods[".".join(parts)] = (f, is_pkg)
    return mods


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the package modules it imports (anywhere in its body). Parent
    packages implied by ``import a.b.c`` are not edges (``capfront/__init__`` loads
    its names lazily)."""
    mods = _modules(root)
    graph: dict[str, set[str]] = {}
    for name, (path, is_pkg) in mods.items():
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    head = base[: len(base) - node.level + 1]
                    target = ".".join(head + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                deps.add(target)
                # ``from pkg import submodule``
                deps.update(f"{target}.{a.name}" for a in node.names)
        graph[name] = {d for d in deps if d in mods and d != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan,
    iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_cycle_finder_finds_a_planted_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / PACKAGE
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .sub import c\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("import capfront.a\n")
    (pkg / "d.py").write_text("from .a import x\n")
    graph = import_graph(tmp_path)
    assert graph["capfront.b"] == {"capfront.sub", "capfront.sub.c"}
    assert cycles(graph) == [["capfront.a", "capfront.b", "capfront.sub.c"]]


def test_the_graph_sees_the_real_modules() -> None:
    graph = import_graph()
    assert "capfront.results" in graph["capfront.io"]
    assert "capfront.io" not in graph["capfront.results"]
    assert "capfront.adapters" in graph["capfront.io"]


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize(
    ("low", "high"),
    [
        ("capfront.results", "capfront.io"),
        ("capfront.frames", "capfront.results"),
        ("capfront.adapters", "capfront.io"),
        ("capfront._validate", "capfront.results"),
        ("capfront.report_text", "capfront.report"),
        ("capfront.report_html", "capfront.report"),
        ("capfront.report_text", "capfront.router_report"),
    ],
)
def test_layers(low: str, high: str) -> None:
    """``low`` never reaches ``high`` through any chain of imports."""
    graph = import_graph()
    seen, todo = set(), [low]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo.extend(graph[m])
    assert high not in seen, f"{low} reaches {high}"


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph[m])
    return seen


@pytest.mark.parametrize(
    "engine", ["capfront.resampling.engine", "capfront.resampling.statistics"]
)
def test_resampling_engine_imports_no_statistic_owner(engine: str) -> None:
    """The engine knows protocols only: the statistics' owners register with it."""
    graph = import_graph()
    owners = {
        m
        for m in _reach(graph, engine)
        if m.startswith(("capfront.debias", "capfront.frontier"))
    }
    assert not owners, f"{engine} reaches {sorted(owners)}"
