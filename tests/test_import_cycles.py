"""No two modules of ``src/toolnexus`` import each other, directly or around a circle.

The graph is read with ``ast`` from the source files, not by importing them. An edge is an
import at module level, including those under ``if TYPE_CHECKING:`` (mypy and the docs
renderer follow them) and those inside ``try:``/``if`` blocks at module level. Imports inside a
function or method body are left out: they are the deliberate lazy ones, run on first use,
after every module involved has finished loading.

An import names one module: ``from ..serve import ServeHandle`` is an edge to
``toolnexus.serve`` (the package's ``__init__``), ``from ..serve import http`` one to
``toolnexus.serve.http``. The parent packages a dotted import also runs are not edges, or
every module would sit in a circle with ``toolnexus/__init__.py``, which re-exports them all.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "toolnexus"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def _module_level(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import not inside a function (classes and compound statements are entered)."""
    found: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _edges(name: str, source: str, is_package: bool, modules: Iterable[str]) -> set[str]:
    """The modules of ``modules`` that module ``name`` (whose text is ``source``) imports."""
    here = name.split(".") if is_package else name.split(".")[:-1]
    out: set[str] = set()
    for node in _module_level(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = ".".join(here[: len(here) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        out.update(t for t in targets if t in modules and t != name)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: _edges(name, path.read_text(), path.name == "__init__.py", modules)
        for name, path in modules.items()
    }


def test_src_has_no_import_cycle() -> None:
    cycles = _cycles(_graph())
    assert cycles == [], "import cycles between modules:\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def test_the_walker_sees_type_checking_imports_and_skips_function_local_ones() -> None:
    source = """
from typing import TYPE_CHECKING
from . import errors
from .engine import loop
from ..toolnexus.types import Tool
if TYPE_CHECKING:
    from .serve import ServeHandle
try:
    import toolnexus.events
except ImportError:
    pass
class Kit:
    from .cancel import CancelToken
    def serve(self):
        from .client import Client
async def later():
    import toolnexus.stores
"""
    modules = {
        "toolnexus",
        *(
            f"toolnexus.{m}"
            for m in ("errors", "engine", "engine.loop", "types", "serve", "events", "cancel")
        ),
        *("toolnexus.client", "toolnexus.stores", "toolnexus.kit"),
    }
    assert _edges("toolnexus.kit", source, False, modules) == {
        "toolnexus.errors",
        "toolnexus.engine.loop",
        "toolnexus.serve",
        "toolnexus.events",
        "toolnexus.cancel",
    }
    graph = _graph()  # and on the real tree: the package's `if TYPE_CHECKING:` block
    assert "toolnexus.compaction" in graph["toolnexus"]


def test_the_cycle_finder_reports_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
