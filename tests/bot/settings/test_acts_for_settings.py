"""Loading whom each agent may act for (acts_for, owners, delegation) and the [delegation]
section: every problem named with the key and what to write instead."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from bot.settings import load_settings
from tests.bot.settings.test_settings import ENV, only_problem, valid_sections, write

OPS = """
[agents.ops-bot]
token_env = "OPS_TOKEN"
acts_for = ["U0FINANCE1"]
"""


def agents(support: str) -> str:
    return '[agents.support-bot]\ntoken_env = "SUPPORT_TOKEN"\n' + support + OPS


def test_an_agent_naming_nobody_it_acts_for_is_refused_with_what_to_add(tmp_path: Path) -> None:
    path = write(tmp_path, *valid_sections(agents=agents("")))

    problem = only_problem(path)

    assert problem.startswith(f"{path}: agents.support-bot: says nobody it may act for")
    assert 'acts_for = ["U..."]' in problem and 'owners = ["U..."]' in problem
    assert "delegation = true" in problem


def test_acts_for_takes_people_user_groups_and_roles(tmp_path: Path) -> None:
    support = 'acts_for = ["U0DANA", "W0ALEX", "S0SUPPORT", "role:finance"]\n'
    path = write(tmp_path, *valid_sections(agents=agents(support)))

    agent = load_settings(path, ENV).agents["support-bot"]

    assert agent.acts_for == ("U0DANA", "W0ALEX", "S0SUPPORT", "role:finance")
    assert agent.delegation is False


def test_a_role_in_acts_for_must_exist(tmp_path: Path) -> None:
    path = write(tmp_path, *valid_sections(agents=agents('acts_for = ["role:fnance"]\n')))

    assert only_problem(path) == (
        f"{path}: agents.support-bot.acts_for: 'role:fnance' names role 'fnance', which is not "
        "in [roles] (roles: finance)"
    )


def test_something_that_is_no_id_in_acts_for_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, *valid_sections(agents=agents('acts_for = ["dana@example.com"]\n')))

    assert only_problem(path) == (
        f"{path}: agents.support-bot.acts_for: 'dana@example.com' is not a Slack user id (U... "
        "or W...), a user group id (S...) or a role written 'role:NAME'"
    )


def test_owners_alone_or_delegation_alone_are_enough(tmp_path: Path) -> None:
    support = 'owners = ["U0OWNER"]\n'
    path = write(tmp_path, *valid_sections(agents=agents(support)))
    assert load_settings(path, ENV).agents["support-bot"].owners == ("U0OWNER",)

    path = write(tmp_path, *valid_sections(agents=agents("delegation = true\n")))
    assert load_settings(path, ENV).agents["support-bot"].delegation is True


def test_delegation_durations_default_to_an_hour_and_at_most_a_day(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, *valid_sections()), ENV)
    assert settings.delegation.default == timedelta(hours=1)
    assert settings.delegation.max == timedelta(hours=24)

    path = write(tmp_path, '[delegation]\ndefault = "30m"\nmax = "8h"\n', *valid_sections())
    settings = load_settings(path, ENV)
    assert (settings.delegation.default, settings.delegation.max) == (
        timedelta(minutes=30),
        timedelta(hours=8),
    )


def test_a_delegation_longer_than_a_week_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, '[delegation]\nmax = "8d"\n', *valid_sections())

    problem = only_problem(path)

    assert problem.startswith(f"{path}: delegation.max: expected at most 7d")


def test_a_default_longer_than_the_maximum_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, '[delegation]\ndefault = "2h"\nmax = "1h"\n', *valid_sections())

    assert "default (2h) is longer than max (1h)" in only_problem(path)
