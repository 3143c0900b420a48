"""Imports run one way: bot -> contracts, store; store -> contracts; contracts -> none of ours;
the agents' client (countersign) -> contracts only, so agents install no server."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
ALLOWED = {
    "contracts": {"contracts"},
    "store": {"store", "contracts"},
    "bot": {"bot", "store", "contracts"},
    "countersign": {"countersign", "contracts"},
}
#: contracts may use only the standard library and these
CONTRACT_THIRD_PARTY = {"pydantic", "jsonschema"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_the_layers_below_it(package: str) -> None:
    ours = set(ALLOWED)
    wrong = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in (ROOT / package).rglob("*.py")
        for name in _imports(path) & ours
        if name not in ALLOWED[package]
    }
    assert not wrong, sorted(wrong)


def test_contracts_use_only_the_standard_library_pydantic_and_jsonschema() -> None:
    import sys

    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    foreign = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in (ROOT / "contracts").rglob("*.py")
        for name in _imports(path)
        if name not in stdlib | CONTRACT_THIRD_PARTY | {"contracts"}
    }
    assert not foreign, sorted(foreign)
