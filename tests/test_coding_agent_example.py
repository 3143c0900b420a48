"""The coding agent's example (examples/coding-agent): ``check-config`` accepts it, its policy reads
at once and asks for the rest (two people for the shell and the network), and its Claude Code
settings call the commands this project installs."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from bot.cli import main
from bot.settings import load_settings
from contracts.policy import Ask, Auto

EXAMPLE = Path(__file__).parents[1] / "examples" / "coding-agent"
TOKEN_ENV = {"COUNTERSIGN_TOKEN_CLAUDE_CODE": "claude-code-token-0123456789"}


def test_check_config_accepts_the_coding_agent_example(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in TOKEN_ENV.items():
        monkeypatch.setenv(name, value)

    code = main(["--config", str(EXAMPLE / "countersign.toml"), "check-config"])

    out, err = capsys.readouterr()
    assert code == 0, err
    assert "  operations: coding.tool_use" in out.splitlines()
    assert "warning" not in out


@pytest.mark.parametrize(
    ("tool_name", "decision", "quorum"),
    [
        ("Read", "auto", None),
        ("Grep", "auto", None),
        ("Edit", "ask", 1),
        ("Write", "ask", 1),
        ("Bash", "ask", 2),
        ("WebFetch", "ask", 2),
        ("mcp__github__create_pull_request", "ask", 1),
    ],
)
def test_reads_run_at_once_writes_ask_and_the_shell_and_network_ask_two_people(
    tool_name: str, decision: str, quorum: int | None
) -> None:
    settings = load_settings(EXAMPLE / "countersign.toml", TOKEN_ENV)

    decided = settings.policy.classify(
        operation="coding.tool_use",
        agent="claude-code",
        arguments={"tool_name": tool_name, "input": {}},
        requester_roles={"developers"},
    )

    assert decided.kind == decision
    if quorum is not None:
        assert isinstance(decided, Ask)
        assert decided.quorum == quorum
    else:
        assert isinstance(decided, Auto)


def test_the_claude_code_settings_call_the_installed_commands() -> None:
    # the agent's side's commands: what the developer's machine has with countersign-client
    client = Path(__file__).parents[1] / "client" / "pyproject.toml"
    scripts = tomllib.loads(client.read_text())["project"]["scripts"]
    settings = json.loads((EXAMPLE / ".claude" / "settings.json").read_text())
    servers = json.loads((EXAMPLE / ".mcp.json").read_text())["mcpServers"]

    [entry] = settings["hooks"]["PreToolUse"]
    [hook] = entry["hooks"]
    assert hook["command"].split()[0] in scripts
    wait = float(hook["command"].split("--wait")[1].split()[0])
    assert wait < hook["timeout"]  # the hook answers before Claude Code stops it
    assert servers["countersign"]["command"] in scripts
