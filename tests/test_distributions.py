"""The two distributions, built as they would be published: the agent's side (countersign-client,
client/) holds the ``countersign`` package alone and requires nothing of the server; the server
(countersign-server) holds bot, contracts and store and requires the agent's side at its own
version. Installed from its wheel into a clean virtualenv, the agent's side talks to a running
Countersign with what it declared, and nothing of the server is there."""

from __future__ import annotations

import asyncio
import configparser
import email.parser
import json
import os
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.e2e.coding_agent import agent_env, with_tool_use
from tests.e2e.harness import REQUESTER, Countersign, running_countersign

REPO = Path(__file__).parents[1]
CLIENT = tomllib.loads((REPO / "client" / "pyproject.toml").read_text(encoding="utf-8"))
SERVER = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
#: what only the server needs: none of it may come with the agent's side
SERVER_ONLY = {
    "slack-bolt",
    "slack-sdk",
    "asyncpg",
    "uvloop",
    "prometheus-client",
    "jsonschema",
    "aiosqlite",
    "countersign-server",
}
#: the server's top-level packages, whose common names must not land in an agent's environment
SERVER_PACKAGES = {"bot", "contracts", "store"}
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")


@dataclass(frozen=True)
class Wheel:
    path: Path
    names: list[str]  #: every file in it
    metadata: email.message.Message
    scripts: dict[str, str]

    @classmethod
    def read(cls, path: Path) -> Wheel:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
            metadata = email.parser.Parser().parsestr(archive.read(f"{info}/METADATA").decode())
            points = configparser.ConfigParser()
            if f"{info}/entry_points.txt" in names:
                points.read_string(archive.read(f"{info}/entry_points.txt").decode())
        scripts = dict(points["console_scripts"]) if points.has_section("console_scripts") else {}
        return cls(path, names, metadata, scripts)

    @property
    def top_level(self) -> set[str]:
        """The importable names it installs: its top folders and modules, not its metadata."""
        tops = {name.split("/")[0] for name in self.names}
        return {top.removesuffix(".py") for top in tops if not top.endswith(".dist-info")}

    @property
    def requires(self) -> list[Requirement]:
        return [Requirement(line) for line in self.metadata.get_all("Requires-Dist") or []]

    def required(self, extra: str = "") -> set[str]:
        """The distributions it requires without an extra (``""``), or only with ``extra``."""
        found: set[str] = set()
        for requirement in self.requires:
            marker = requirement.marker
            if marker is None or marker.evaluate({"extra": ""}):
                if not extra:
                    found.add(canonicalize_name(requirement.name))
            elif extra and marker.evaluate({"extra": extra}):
                found.add(canonicalize_name(requirement.name))
        return found


@dataclass(frozen=True)
class Wheels:
    client: Wheel
    server: Wheel


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Wheels:
    """Both wheels, built by pip from a copy of the sources (a build leaves nothing behind in the
    checkout)."""
    root = tmp_path_factory.mktemp("distributions")
    source = root / "source"
    shutil.copytree(REPO / "client", source / "client", ignore=IGNORED)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    for package in SERVER_PACKAGES:
        shutil.copytree(REPO / package, source / package, ignore=IGNORED)
    out = root / "wheels"
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "--quiet"]
    subprocess.run(
        [*pip, "--wheel-dir", str(out), str(source / "client"), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    built = {Wheel.read(path).metadata["Name"]: Wheel.read(path) for path in out.glob("*.whl")}
    assert set(built) == {"countersign-client", "countersign-server"}, sorted(built)
    return Wheels(client=built["countersign-client"], server=built["countersign-server"])


def test_the_agents_wheel_installs_the_countersign_package_alone(wheels: Wheels) -> None:
    assert wheels.client.top_level == {"countersign"}
    assert "countersign/wire/api.py" in wheels.client.names
    assert "countersign/py.typed" in wheels.client.names
    assert not [name for name in wheels.client.names if name.endswith((".pyc", ".sqlite"))]


def test_the_agents_wheel_requires_nothing_of_the_server(wheels: Wheels) -> None:
    assert wheels.client.required() == {"aiohttp", "pydantic"}
    # whatever the extra, nothing of the server's but aiosqlite, for LangGraph's parked runs only
    # (their record sits beside its SQLite checkpointer, which needs aiosqlite as well)
    every = {canonicalize_name(r.name) for r in wheels.client.requires}
    assert every & SERVER_ONLY == {"aiosqlite"}
    assert "aiosqlite" in wheels.client.required("langgraph")
    # the integrations are extras, each bringing its framework only when asked for
    assert wheels.client.required("mcp") == {"mcp"}
    assert "langgraph" in wheels.client.required("langgraph")
    assert wheels.client.required("openai-agents") == {"openai-agents"}


def test_the_servers_wheel_holds_the_server_and_requires_the_agents_side_at_its_version(
    wheels: Wheels,
) -> None:
    assert wheels.server.top_level == SERVER_PACKAGES
    pinned = [r for r in wheels.server.requires if r.name == "countersign-client"]
    assert [str(r.specifier) for r in pinned] == [f"=={CLIENT['project']['version']}"]
    assert SERVER["project"]["version"] == CLIENT["project"]["version"]
    assert {"slack-bolt", "asyncpg", "aiosqlite"} <= wheels.server.required()


def test_each_command_comes_with_its_side(wheels: Wheels) -> None:
    assert wheels.client.scripts == {
        "countersign-mcp": "countersign.mcp_server:main",
        "countersign-claude-hook": "countersign.claude_hook:main",
    }
    assert wheels.server.scripts == {"countersign": "bot.cli:main"}


# --- installed alone ---------------------------------------------------------------------------

#: Run in the clean virtualenv: what it holds, and the full client asking a running Countersign.
ASK = """
import importlib.metadata, importlib.util, json, sys
import countersign

client = countersign.Client(sys.argv[1], sys.argv[2], requested_by=sys.argv[3])
try:
    answer = client.ask("coding.tool_use", {"tool_name": "Read", "input": {"file_path": "a.md"}})
finally:
    client.close()
print(json.dumps({
    "answer": type(answer).__name__,
    "server_packages": [n for n in ("bot", "contracts", "store") if importlib.util.find_spec(n)],
    "installed": sorted(d.metadata["Name"].lower() for d in importlib.metadata.distributions()),
    "countersign": countersign.__file__,
}))
"""


#: the environment of this process less what points at this checkout or its virtualenv (the
#: package index stays as configured on this machine: aiohttp and pydantic come from it)
CLEAN = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}


@pytest.fixture(scope="module")
def agent_venv(wheels: Wheels, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtualenv with the agent's wheel installed, as an agent would: its bin folder."""
    env = tmp_path_factory.mktemp("agent") / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    subprocess.run(
        [str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheels.client.path)],
        env=CLEAN,
        check=True,
        capture_output=True,
        timeout=600,
    )
    return env / "bin"


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=with_tool_use) as running:
        yield running


async def run(command: list[str], env: dict[str, str], stdin: str = "") -> str:
    """Its standard output; the server answering it runs on this event loop, so never block it.
    It runs in the virtualenv's folder: from the checkout, ``python -c`` would find its packages."""
    process = await asyncio.create_subprocess_exec(
        *command,
        env=env,
        cwd=Path(command[0]).parents[1],
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode()), timeout=120)
    assert process.returncode == 0, err.decode()
    return out.decode()


async def test_installed_alone_the_agents_side_asks_a_running_countersign(
    agent_venv: Path, cs: Countersign
) -> None:
    agent = {**CLEAN, **agent_env(cs)}
    hook_call = {
        "session_id": "s",
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "/home/dev/shop/README.md"},
        "tool_use_id": "toolu_installed_alone",
    }

    asked = await run(
        [str(agent_venv / "python"), "-c", ASK, cs.url, agent["COUNTERSIGN_TOKEN"], REQUESTER],
        agent,
    )
    hooked = await run([str(agent_venv / "countersign-claude-hook")], agent, json.dumps(hook_call))

    found = json.loads(asked)
    assert found["answer"] == "Approved"
    # the wheel's package, not this checkout's
    assert Path(found["countersign"]).is_relative_to(agent_venv.parent)
    assert found["server_packages"] == []
    assert set(found["installed"]) & SERVER_ONLY == set()
    assert "countersign-client" in found["installed"]
    assert json.loads(hooked)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert not (agent_venv / "countersign").exists()  # the server's command is not the agent's
