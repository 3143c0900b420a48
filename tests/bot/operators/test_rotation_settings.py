"""Several tokens per agent while one is rotated: each is checked like the main one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.settings import ConfigError, load_settings

CONFIG = """
[agents.billing]
token_env = "BILLING_TOKEN"
extra_token_envs = ["BILLING_TOKEN_NEW"]
owners = ["U0OWNER"]

[agents.ops]
token_env = "OPS_TOKEN"
owners = ["U0OWNER"]
"""
OLD, NEW, OPS = (
    "billing-token-old-0123456789",
    "billing-token-new-0123456789",
    "ops-token-0123456789",
)


def _load(tmp_path: Path, env: dict[str, str]) -> None:
    path = tmp_path / "countersign.toml"
    path.write_text(CONFIG, encoding="utf-8")
    load_settings(path, env)


def test_both_tokens_name_the_agent_and_nothing_else_does(tmp_path: Path) -> None:
    path = tmp_path / "countersign.toml"
    path.write_text(CONFIG, encoding="utf-8")
    settings = load_settings(
        path, {"BILLING_TOKEN": OLD, "BILLING_TOKEN_NEW": NEW, "OPS_TOKEN": OPS}
    )

    for token in (OLD, NEW):
        agent = settings.agent_for_token(token)
        assert agent is not None and agent.name == "billing" and agent.holds(token)
    billing = settings.agents["billing"]
    assert billing.token == OLD  # the main token still signs its callbacks by default
    assert not billing.holds(OPS) and not billing.holds(NEW[:-1])


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"BILLING_TOKEN": OLD, "OPS_TOKEN": OPS}, "BILLING_TOKEN_NEW is not set"),
        ({"BILLING_TOKEN": OLD, "BILLING_TOKEN_NEW": "short", "OPS_TOKEN": OPS}, "too short"),
        ({"BILLING_TOKEN": OLD, "BILLING_TOKEN_NEW": OPS, "OPS_TOKEN": OPS}, "share"),
    ],
)
def test_an_extra_token_is_checked_like_the_main_one(
    tmp_path: Path, env: dict[str, str], problem: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, env)

    assert any("extra_token_envs" in p or "share a token" in p for p in refused.value.problems)
    assert any(problem in p for p in refused.value.problems)


@pytest.mark.parametrize(
    ("new", "problem"),
    [
        (None, "environment variable BILLING_TOKEN_NEW is not set"),
        ("", "environment variable BILLING_TOKEN_NEW is not set"),
        ("fifteen-chars..", "the token in BILLING_TOKEN_NEW is too short (at least 16 characters)"),
    ],
)
def test_an_extra_tokens_problem_is_said_in_the_same_words_as_before(
    tmp_path: Path, new: str | None, problem: str
) -> None:
    env = {"BILLING_TOKEN": OLD, "OPS_TOKEN": OPS}
    if new is not None:
        env["BILLING_TOKEN_NEW"] = new
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, env)

    [said] = refused.value.problems
    where = re.escape(str(tmp_path / "countersign.toml")) + r"(:\d+)?"  # the line, when known
    assert re.fullmatch(where + re.escape(f": agents.billing.extra_token_envs: {problem}"), said)
