"""No module reaches into another's underscore names: a name that starts with ``_`` belongs to
the module that defines it. A module that needs one is missing a public verb of that module.

Checked by walking each module's syntax tree:

- ``from x import _y`` (or ``import`` of a private name) of another module, and
- ``something._y`` where ``something`` is not ``self`` or ``cls`` and no class of the module
  itself has a member ``_y`` (a method, a class attribute or an attribute it assigns to self).
  ``service._tell(...)`` and ``self._store._transaction()`` are reach-ins; ``self._x`` and
  ``other._x`` in the class that defines ``_x`` are the class's own.

Dunder names (``__init__``) are public. The check is by name, not by type: a module whose own
class has a member ``_x`` may still read another class's ``_x`` unnoticed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGES = ("bot", "contracts", "store", "client/countersign")
#: namedtuple's public API carries an underscore so as not to clash with field names
PUBLIC_BY_CONVENTION = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})


def _private(name: str) -> bool:
    return (
        name.startswith("_")
        and not (name.startswith("__") and name.endswith("__"))
        and name not in PUBLIC_BY_CONVENTION
    )


def _members_here(tree: ast.AST) -> set[str]:
    """The members of the classes this module defines: their methods, class attributes and
    the attributes they assign (``self._x = ...``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.add(item.name)
                elif isinstance(item, ast.Assign | ast.AnnAssign):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in {"self", "cls"}
        ):
            names.add(node.attr)
    return names


def reach_ins(source: str, filename: str = "<module>") -> list[str]:
    """Each use of another module's underscore name in ``source``, as ``file:line: name``."""
    tree = ast.parse(source)
    own = _members_here(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found += [
                f"{filename}:{node.lineno}: from {'.' * node.level}{node.module or ''} "
                f"import {alias.name}"
                for alias in node.names
                if _private(alias.name)
            ]
        elif isinstance(node, ast.Import):
            found += [
                f"{filename}:{node.lineno}: import {alias.name}"
                for alias in node.names
                if any(_private(part) for part in alias.name.split("."))
            ]
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}:
                continue
            if node.attr in own:
                continue
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return sorted(found, key=lambda line: (line.split(":")[0], int(line.split(":")[1])))


def test_the_check_finds_each_kind_of_reach_in() -> None:
    source = (
        "from bot.render.proposal import _section, code, __version__\n"
        "import bot._private\n"
        "class Grants:\n"
        "    def __init__(self, service):\n"
        "        self._service = service\n"
        "        self._seen = 0\n"
        "    async def run(self, service, other):\n"
        "        self._seen += other._seen\n"
        "        await service._tell(1)\n"
        "        with self._store._transaction():\n"
        "            return self._service._clock(), self.__class__, x._replace(a=1)\n"
        "def _tell(x):\n"  # a function of the same name does not make service._tell its own
        "    return x\n"
    )
    assert reach_ins(source, "m.py") == [
        "m.py:1: from bot.render.proposal import _section",
        "m.py:2: import bot._private",
        "m.py:9: service._tell",
        "m.py:10: self._store._transaction",
        "m.py:11: self._service._clock",
    ]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_uses_another_modules_underscore_names(package: str) -> None:
    found = [
        line
        for path in sorted((ROOT / package).rglob("*.py"))
        for line in reach_ins(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert not found, "\n".join([f"{len(found)} reach-ins (add a public verb instead):", *found])
