"""The [limits] section and [agents.NAME.limits]: safe defaults, per-agent overrides, checked at
load with the key named."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.settings import ConfigError, Settings, load_settings
from bot.settings.limits import Limits
from tests.e2e.harness import ENV, config_text


def load(tmp_path: Path, extra: str) -> Settings:
    path = tmp_path / "countersign.toml"
    path.write_text(f"{config_text('http://127.0.0.1:9')}\n{extra}\n", encoding="utf-8")
    return load_settings(path, ENV)


def test_without_the_section_every_agent_gets_the_safe_defaults(tmp_path: Path) -> None:
    settings = load(tmp_path, "")

    for agent in settings.agents.values():
        assert agent.limits == Limits()
    assert Limits().max_pending_proposals == 100
    assert (Limits().submissions_per_second, Limits().submissions_burst) == (10, 20)
    assert (Limits().max_long_polls, Limits().max_open_escalations) == (20, 10)
    assert Limits().body_timeout_seconds == 5


def test_an_agents_own_limits_override_the_defaults_key_by_key(tmp_path: Path) -> None:
    settings = load(
        tmp_path,
        "[limits]\nmax_pending_proposals = 50\nsubmissions_per_second = 2.5\n\n"
        "[agents.ops-bot.limits]\nmax_pending_proposals = 500\nmax_long_polls = 3\n",
    )

    ops, support = settings.agents["ops-bot"].limits, settings.agents["support-bot"].limits
    assert (ops.max_pending_proposals, ops.max_long_polls) == (500, 3)
    assert ops.submissions_per_second == 2.5  # not overridden: the [limits] value
    assert (support.max_pending_proposals, support.max_long_polls) == (50, 20)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            "[limits]\nmax_pending_proposals = 0",
            "limits.max_pending_proposals: expected a number of at least 1, got 0",
        ),
        (
            "[limits]\nsubmissions_per_second = 0",
            "limits.submissions_per_second: expected a number greater than 0, got 0",
        ),
        (
            "[limits]\nreads_per_second = 0",
            "limits.reads_per_second: expected a number greater than 0, got 0",
        ),
        (
            "[limits]\nbody_timeout_seconds = 1000",
            "limits.body_timeout_seconds: expected a number of at most 300, got 1000",
        ),
        (
            "[agents.ops-bot.limits]\nmax_long_polls = -1",
            "agents.ops-bot.limits.max_long_polls: expected a number of at least 1, got -1",
        ),
        (
            "[agents.ops-bot.limits]\nmax_pending = 5",
            "agents.ops-bot.limits.max_pending: unknown key (expected one of: "
            "max_pending_proposals, submissions_per_second, submissions_burst, reads_per_second, "
            "reads_burst, max_long_polls, max_open_escalations, body_timeout_seconds)",
        ),
    ],
)
def test_a_limit_that_cannot_hold_is_refused_naming_its_key(
    tmp_path: Path, extra: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, extra)

    assert any(expected in problem for problem in raised.value.problems), raised.value.problems
