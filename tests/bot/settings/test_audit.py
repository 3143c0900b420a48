"""The [audit] section: where anchors go, the key that signs them, how often; checked at load."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bot.settings import ConfigError, Settings, load_settings
from tests.e2e.harness import ENV, config_text

KEY = "0123456789abcdef" * 4


def load(tmp_path: Path, audit: str, env: dict[str, str] | None = None) -> Settings:
    path = tmp_path / "countersign.toml"
    path.write_text(f"{config_text('http://127.0.0.1:9')}\n[audit]\n{audit}\n", encoding="utf-8")
    return load_settings(path, {**ENV, **(env or {})})


def test_without_the_section_nothing_is_anchored(tmp_path: Path) -> None:
    settings = load(tmp_path, "")

    assert settings.audit.destinations == []
    assert (settings.audit.key, settings.audit.every) == (None, None)
    assert settings.audit.summary() == "none (the hash chain alone; see docs/audit.md)"


def test_a_valid_section_names_the_destinations_the_key_and_the_period(tmp_path: Path) -> None:
    settings = load(
        tmp_path,
        'anchor_file = "/anchors/countersign.jsonl"\nanchor_channel = "C0AUDIT"\n'
        'anchor_key_env = "ANCHOR_KEY"\nanchor_every = "1h"',
        {"ANCHOR_KEY": KEY},
    )

    anchoring = settings.audit
    assert anchoring.destinations == [
        "file /anchors/countersign.jsonl",
        "Slack channel C0AUDIT",
    ]
    assert anchoring.key == KEY.encode()
    assert anchoring.every == timedelta(hours=1)
    assert KEY not in repr(anchoring)
    assert anchoring.summary() == (
        "to file /anchors/countersign.jsonl and Slack channel C0AUDIT, signed with $ANCHOR_KEY, "
        "every 1h by serve"
    )


def test_every_problem_is_named_with_its_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load(
            tmp_path,
            'anchor_channel = "#audit"\nanchor_key_env = "ANCHOR_KEY"\nanchor_every = "30s"',
            {"ANCHOR_KEY": "short"},
        )

    problems = "\n".join(raised.value.problems)
    assert "audit.anchor_channel: '#audit' is not a Slack channel id" in problems
    assert "audit.anchor_key_env: the key in ANCHOR_KEY is 5 characters long" in problems
    assert "audit.anchor_every: '30s' is shorter than the shortest allowed, '1m'" in problems


def test_a_key_variable_that_is_not_set_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"audit\.anchor_key_env: the environment variable "):
        load(tmp_path, 'anchor_file = "a.jsonl"\nanchor_key_env = "ANCHOR_KEY"')


def test_a_period_without_a_destination_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, 'anchor_every = "soon"')

    problems = "\n".join(raised.value.problems)
    assert "audit.anchor_every: invalid duration 'soon'" in problems
    assert "audit.anchor_every: needs somewhere to write the anchors" in problems


def test_an_unknown_key_in_the_section_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"audit\.anchor_path: unknown key \(expected one of"):
        load(tmp_path, 'anchor_path = "a.jsonl"')
