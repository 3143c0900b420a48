"""The graph of imports between the modules of our packages, read from their source with ``ast``.

What counts as an import: every ``import`` and ``from ... import`` statement anywhere in a module,
at its top, under ``if TYPE_CHECKING:``, inside a function, a method, a class body or a ``try``.
An import made only for annotations still ties the two modules together (the type checker reads
both), and an import deferred into a function is still a dependency; neither is left out.

What does not count: a module named in a string and imported with :mod:`importlib` (the agent-side
commands of bot/cli/, the lazy ``__getattr__`` of the feature packages). The packages' lazy
exports are followed anyway, through their ``__init__``'s imports (below).

How each import is read:

- ``import a.b.c`` depends on ``a.b.c``. Python runs ``a`` and ``a.b`` first, but a package's
  ``__init__`` running before its modules is not something they depend on: parents are no edges.
- ``from a.b import c`` depends on ``a.b.c`` when ``c`` is a module of ``a.b``; otherwise on the
  module ``a.b``'s ``__init__`` takes ``c`` from, when it imports it (directly or under
  ``TYPE_CHECKING``, followed through packages that re-export it in turn); otherwise on ``a.b``.
  A package that exports a name lazily is therefore not a hub through which every importer of one
  of its names depends on all of its modules: it depends on the module the name is defined in,
  which is also what importing it does at run time.
- Relative imports are resolved against the importing module's package.
- Only modules of the packages read are nodes; the standard library and third parties are not.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Import", "ImportGraph", "cycles", "describe", "reached", "read_graph"]


@dataclass(frozen=True)
class Import:
    """One dependency of ``module`` on ``target``, with where it is written."""

    module: str
    target: str
    line: int
    #: written under ``if TYPE_CHECKING:`` (the dependency exists for the type checker only)
    for_annotations: bool
    #: written inside a function or method (run when it is called, not when imported)
    deferred: bool

    def __str__(self) -> str:
        how = " (for annotations)" if self.for_annotations else ""
        how += " (inside a function)" if self.deferred else ""
        return f"{self.module}:{self.line} imports {self.target}{how}"


@dataclass(frozen=True)
class _Statement:
    node: ast.Import | ast.ImportFrom
    for_annotations: bool
    deferred: bool


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.AST) -> list[_Statement]:
    """Every import statement of ``tree``, with whether it sits under TYPE_CHECKING or in a
    function."""
    found: list[_Statement] = []

    def visit(node: ast.AST, annotations: bool, deferred: bool) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(_Statement(node, annotations, deferred))
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for statement in node.body:
                visit(statement, True, deferred)
            for statement in node.orelse:
                visit(statement, annotations, deferred)
            return
        inner = deferred or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            visit(child, annotations, inner)

    visit(tree, False, False)
    return found


class ImportGraph:
    """The modules found under ``root`` for the named top-level packages, and their imports."""

    def __init__(self, root: Path, packages: Iterable[str]) -> None:
        self.root = root
        #: module name -> its file
        self.files: dict[str, Path] = {}
        for package in packages:  # a folder under root: "bot", or "client/countersign"
            folder = root / package
            for path in sorted(folder.rglob("*.py")):
                parts = list(path.relative_to(folder.parent).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                self.files[".".join(parts)] = path
        self._trees = {
            name: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for name, path in self.files.items()
        }
        self.imports: dict[str, list[Import]] = {
            name: self._imports_of(name) for name in self.files
        }

    def is_package(self, module: str) -> bool:
        return self.files[module].name == "__init__.py"

    def edges(self) -> dict[str, set[str]]:
        """Each module and the modules of ours it imports (itself left out)."""
        return {
            name: {i.target for i in found if i.target != name}
            for name, found in self.imports.items()
        }

    def _base(self, module: str, node: ast.ImportFrom) -> str:
        if node.level == 0:
            return node.module or ""
        package = module.split(".")
        if not self.is_package(module):
            package.pop()
        if node.level > 1:
            package = package[: len(package) - (node.level - 1)]
        return ".".join([*package, *([node.module] if node.module else [])])

    def _defining(self, package: str, name: str, seen: frozenset[str] = frozenset()) -> str:
        """The module ``from package import name`` depends on (see the module's docstring)."""
        if f"{package}.{name}" in self.files:
            return f"{package}.{name}"
        if package not in self.files or not self.is_package(package) or package in seen:
            return package
        for statement in _statements(self._trees[package]):
            node = statement.node
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        source = self._base(package, node)
                        if source in self.files:
                            return self._defining(source, alias.name, seen | {package})
        return package

    def _ours(self, dotted: str) -> str | None:
        """``dotted`` or its nearest enclosing module that is one of ours."""
        parts = dotted.split(".")
        while parts:
            if ".".join(parts) in self.files:
                return ".".join(parts)
            parts.pop()
        return None

    def _imports_of(self, module: str) -> list[Import]:
        found: list[Import] = []
        for statement in _statements(self._trees[module]):
            node = statement.node
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [self._ours(alias.name) for alias in node.names]
            else:
                base = self._base(module, node)
                if self._ours(base) is None:
                    continue
                targets = [
                    self._defining(base, alias.name) if base in self.files else self._ours(base)
                    for alias in node.names
                ]
            found += [
                Import(module, target, node.lineno, statement.for_annotations, statement.deferred)
                for target in dict.fromkeys(targets)
                if target is not None
            ]
        return found

    def why(self, module: str, target: str) -> Import:
        """The first import by which ``module`` depends on ``target``."""
        return next(i for i in self.imports[module] if i.target == target)


def read_graph(root: Path, packages: Iterable[str]) -> ImportGraph:
    return ImportGraph(root, packages)


def reached(graph: ImportGraph, sources: Iterable[str]) -> dict[str, list[Import]]:
    """Every module of ours that ``sources`` import, directly or through others (for annotations
    and inside functions too), each with one shortest chain of imports leading to it from one of
    them. The sources themselves are left out."""
    start = sorted(set(sources))
    chains: dict[str, list[Import]] = {}
    frontier = start
    while frontier:
        following: list[str] = []
        for module in frontier:
            for found in graph.imports[module]:
                if found.target in chains or found.target in start:
                    continue
                chains[found.target] = [*chains.get(module, []), found]
                following.append(found.target)
        frontier = following
    return chains


def _components(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``edges`` (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(sorted(component))
    return found


def _shortest_cycle(edges: Mapping[str, set[str]], members: set[str]) -> list[str]:
    """A shortest cycle through the first of ``members``, staying among them."""
    start = min(members)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in sorted(edges.get(node, set()) & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # a component always has one


def cycles(graph: ImportGraph) -> list[tuple[frozenset[str], list[str]]]:
    """Each group of modules that import each other in a circle: its members, and one shortest
    cycle among them (``[a, b, c, a]``) to name it by."""
    edges = graph.edges()
    return [
        (frozenset(members), _shortest_cycle(edges, set(members)))
        for members in _components(edges)
        if len(members) > 1
    ]


def describe(graph: ImportGraph, cycle: list[str]) -> str:
    """``cycle`` as the imports that make it, one a line."""
    return "\n".join(
        f"  {graph.why(module, target)}" for module, target in itertools.pairwise(cycle)
    )
