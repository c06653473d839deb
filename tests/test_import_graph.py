"""The import graph of the `profscope` package: no cycles, and the layers import only downwards.

Built from the source with `ast`, so imports inside functions and under `TYPE_CHECKING` count too,
and importing `a.b.c` counts as importing its parent packages `a.b` and `a` (Python runs them first),
except the importer's own parent packages, which are always imported before it.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import profscope

pytestmark = pytest.mark.stack_independent

PACKAGE_DIR = pathlib.Path(profscope.__file__).parent


def _module_name(path: pathlib.Path) -> str:
    parts = ["profscope", *path.relative_to(PACKAGE_DIR).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _imports(name: str, path: pathlib.Path) -> set[str]:
    """The profscope modules `name` imports, anywhere in its body, with their parent packages."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    own_parents = set(_parents(name))
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names
            ]
        for target in targets:
            if target.split(".")[0] != "profscope":
                continue
            while target not in MODULES and "." in target:
                target = target.rsplit(".", 1)[0]
            # The packages above the target are imported first, except those above `name` itself:
            # Python has imported them before `name`, so they are no dependency of this import.
            implied = [m for m in _parents(target) if m not in own_parents]
            found.update(m for m in (*implied, target) if m in MODULES and m != name)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_the_package() -> None:
    assert {
        "profscope.plugin",
        "profscope.model.columns",
        "profscope.formats.registry",
        "profscope.tools",
    } <= set(GRAPH)
    assert "profscope.formats.registry" in GRAPH["profscope.engine.ingest.manager"]
    # A function-level import and a parent package both count.
    assert "profscope.tools" in GRAPH["profscope.tools.trace"]


def test_no_module_imports_itself_back() -> None:
    cycles = _cycles(GRAPH)
    assert cycles == [], "import cycles: " + "; ".join(" ↔ ".join(c) for c in cycles)


def test_cycle_detection_can_fail() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _reachable(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in GRAPH[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("profscope.formats")))
def test_readers_know_nothing_of_the_engine_tools_or_http(module: str) -> None:
    reached = _reachable(module)
    above = sorted(
        m for m in reached if m.startswith(("profscope.engine", "profscope.tools", "profscope.plugin"))
    )
    assert above == [], f"{module} reaches {above}"
    source = MODULES[module].read_text(encoding="utf-8")
    assert "tensorboard" not in source, f"{module} mentions tensorboard: readers run without it"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("profscope.engine")))
def test_the_engine_reaches_readers_only_through_the_registry(module: str) -> None:
    direct = sorted(
        m for m in GRAPH[module] if m.startswith("profscope.formats.") and m != "profscope.formats.registry"
    )
    assert direct == [], f"{module} imports {direct}"
    assert not any(m.startswith(("profscope.tools", "profscope.plugin")) for m in _reachable(module))


# What the model, the lowest layer, may import: itself and the modules every layer shares.
BASE = ("profscope.errors", "profscope.units")


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("profscope.model")))
def test_the_model_imports_only_the_model(module: str) -> None:
    outside = sorted(
        m for m in _reachable(module) if not m.startswith(("profscope.model", *BASE)) and m != "profscope"
    )
    assert outside == [], f"{module} reaches {outside}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("profscope.analysis")))
def test_the_shared_analysis_knows_no_tool_context_or_http(module: str) -> None:
    above = sorted(
        m
        for m in _reachable(module)
        if m.startswith(
            ("profscope.tools", "profscope.plugin", "profscope.context", "profscope.runs", "profscope.cli")
        )
    )
    assert above == [], f"{module} reaches {above}"


def _tool_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "tools" else None


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _tool_of(m)))
def test_no_tool_imports_another_tool(module: str) -> None:
    own = _tool_of(module)
    others = sorted(m for m in GRAPH[module] if _tool_of(m) not in (None, own))
    assert others == [], f"{module} imports {others}: what tools share belongs in profscope.analysis"


def test_the_shared_analysis_is_shared() -> None:
    users = {
        _tool_of(m) for m, deps in GRAPH.items() if any(d.startswith("profscope.analysis") for d in deps)
    }
    assert {"overview", "compare", "roofline"} <= users
    assert _tool_of("profscope.tools.overview.analysis") == "overview"
    assert _tool_of("profscope.tools") is None
