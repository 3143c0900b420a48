"""What importing the agent side costs: the package imports none of its modules until a name is
asked for, and the MCP server loads the client it uses, never the callback receiver or the
server. (The hook's own check runs it against a server: tests/e2e/test_claude_hook.py.)"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import countersign


def imported_by(statement: str) -> list[str]:
    code = f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules: list[str] = json.loads(out.stdout)
    return modules


def under(modules: list[str], *prefixes: str) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes)]


def test_importing_the_package_imports_none_of_its_modules() -> None:
    modules = imported_by("import countersign")

    assert under(modules, "countersign") == ["countersign"]
    assert under(modules, "pydantic", "aiohttp", "contracts", "asyncio") == []


def test_each_public_name_is_loaded_from_its_module_when_asked_for() -> None:
    modules = imported_by("from countersign import Client, verify_callback, Approved")

    assert {"countersign.sync", "countersign.callbacks.verify"} <= set(modules)
    assert "countersign.callbacks.receiver" not in modules  # aiohttp.web is not needed for it
    for name in countersign.__all__:
        assert getattr(countersign, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = countersign.nothing_here


def test_the_mcp_server_loads_neither_the_callback_receiver_nor_the_server() -> None:
    modules = imported_by("import countersign.mcp_server")

    assert "countersign.client" in modules
    assert under(modules, "aiohttp.web", "countersign.callbacks", "aiosqlite") == []
    assert under(modules, "bot", "store", "slack_bolt", "slack_sdk", "asyncpg") == []
