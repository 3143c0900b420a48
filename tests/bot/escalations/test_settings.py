"""The [escalation] section: thresholds, responders and routes, checked at load."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bot.settings import ConfigError, load_settings
from tests.e2e.harness import ENV, config_text


def load(tmp_path: Path, escalation: str) -> object:
    text = config_text("http://127.0.0.1:9").split("[escalation]")[0]
    path = tmp_path / "countersign.toml"
    path.write_text(f"{text}\n[escalation]\n{escalation}\n", encoding="utf-8")
    return load_settings(path, ENV)


def test_a_valid_section_becomes_the_escalation_policy(tmp_path: Path) -> None:
    settings = load(
        tmp_path,
        'reserved_topics = ["legal"]\nreannounce_after = "1h30m"\nresponders = ["support"]\n'
        'routes = [{ topic = "legal", channel = "C0LEGAL" }, { channel = "C0ALL" }]',
    )

    policy = settings.escalation  # type: ignore[attr-defined]
    assert policy.reannounce_after == timedelta(hours=1, minutes=30)
    assert [route.channel for route in policy.routes] == ["C0LEGAL", "C0ALL"]
    assert policy.responders == ("support",)


def test_every_problem_is_named_with_its_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load(
            tmp_path,
            'reannounce_after = "soon"\nresponders = ["nobody"]\n'
            'routes = [{ channel = "general" }, { topic = "a", team = "b", channel = "C0X1" }]',
        )

    problems = "\n".join(raised.value.problems)
    assert "escalation.reannounce_after: invalid duration 'soon'" in problems
    assert "escalation.responders: unknown role(s) ['nobody']" in problems
    assert "escalation.routes[0].channel: 'general' is not a Slack channel id" in problems
    assert "escalation.routes[1]: name a topic or a team, not both" in problems


def test_an_unknown_key_in_the_section_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"escalation\.treshold: unknown key"):
        load(tmp_path, "treshold = 3")


def test_routes_without_responders_are_refused_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, 'routes = [{ channel = "C0ALL" }]')

    problems = "\n".join(raised.value.problems)
    assert "escalation.responders: required when escalation routes are configured" in problems


def test_without_routes_escalations_are_off_and_need_no_responders(tmp_path: Path) -> None:
    settings = load(tmp_path, "repeated_failure_turns = 2")

    policy = settings.escalation  # type: ignore[attr-defined]
    assert (policy.routes, policy.responders) == ((), ())
