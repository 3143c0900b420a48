"""TOML has real booleans, integers and floats, so the configuration takes a value only in its own
type: a string is never read as true or false, a whole number or a number, in any table or in a
policy rule. The problem names the key, its line, what was expected and what was written, in
TOML's spelling (``true``, ``'25'``, ``[{ after = '50%', ... }]``), never Python's."""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from bot.settings import ConfigError, load_settings
from bot.settings.limits import AgentLimitsSection
from bot.settings.model import AgentSection, FileModel
from tests.bot.settings.test_settings import ENV, valid_sections, write

#: a string that lax parsing would take for a value of each type, and what is expected instead
_STRING_FOR = {
    bool: ("yes", "true or false"),
    int: ("25", "a whole number"),
    float: ("0.5", "a number"),
}


#: an agent's table without the key under test
AGENT = 'token_env = "SUPPORT_TOKEN"\nacts_for = ["U0FINANCE1"]'


def _scalar(annotation: Any) -> type | None:
    """bool, int or float for a field of that type (or that type or None), else None."""
    if get_origin(annotation) in (Union, types.UnionType):
        present = [arg for arg in get_args(annotation) if arg is not type(None)]
        annotation = present[0] if len(present) == 1 else None
    return annotation if annotation in _STRING_FOR else None


def _typed_keys() -> Iterator[tuple[str, str, type]]:
    """(table header, key, type) of every true-or-false, whole-number and number key."""
    tables: list[tuple[str, type[BaseModel]]] = [
        (f"[{name}]", info.annotation)
        for name, info in FileModel.model_fields.items()
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)
    ]
    tables += [
        (
            '[agents.support-bot]\ntoken_env = "SUPPORT_TOKEN"\nacts_for = ["U0FINANCE1"]',
            AgentSection,
        ),
        ("[agents.support-bot.limits]", AgentLimitsSection),
    ]
    for header, model in tables:
        for key, info in model.model_fields.items():
            kind = _scalar(info.annotation)
            if kind is not None:
                yield header, key, kind


TYPED_KEYS = list(_typed_keys())


def test_every_kind_of_typed_key_is_covered() -> None:
    kinds = {kind for _, _, kind in TYPED_KEYS}
    tables = {header.split("]")[0] for header, _, _ in TYPED_KEYS}

    assert kinds == {bool, int, float}
    assert {"[slack", "[server", "[limits", "[agents.support-bot.limits"} <= tables


@pytest.mark.parametrize(
    ("header", "key", "kind"),
    TYPED_KEYS,
    ids=[f"{header.splitlines()[0]}{key}" for header, key, _ in TYPED_KEYS],
)
def test_a_string_is_never_taken_for_a_boolean_or_a_number(
    tmp_path: Path, header: str, key: str, kind: type
) -> None:
    written, expected = _STRING_FOR[kind]
    # the table is written last, in place of the valid file's own (a table is declared once)
    replaced = {"[server]": "server", "[agents.support-bot]": "agents"}.get(header.split("\n")[0])
    sections = valid_sections(**({replaced: ""} if replaced else {}))
    path = write(tmp_path, *sections, f'{header}\n{key} = "{written}"\n')
    line = path.read_text().splitlines().index(f'{key} = "{written}"') + 1
    table = header.splitlines()[0].strip("[]")

    assert only_problem_placed(path) == (
        f"{path}:{line}: {table}.{key}: expected {expected}, got '{written}'"
    )


def only_problem_placed(path: Path) -> str:
    """The one problem of the file, with its line."""
    with pytest.raises(ConfigError) as caught:
        load_settings(path, ENV)
    [problem] = caught.value.problems
    return problem


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ('digests = "off"', "slack.digests: expected true or false, got 'off'"),
        ('digests = "yes"', "slack.digests: expected true or false, got 'yes'"),
        ('digest_max = "25"', "slack.digest_max: expected a whole number, got '25'"),
        (
            'digest_window_seconds = "0.3"',
            "slack.digest_window_seconds: expected a number, got '0.3'",
        ),
    ],
)
def test_the_slack_table_refuses_strings_for_its_switch_and_numbers(
    tmp_path: Path, written: str, expected: str
) -> None:
    path = write(tmp_path, *valid_sections(), f"[slack]\n{written}\n")
    line = len(path.read_text().splitlines())

    assert only_problem_placed(path) == f"{path}:{line}: {expected}"


def test_a_whole_number_stands_for_a_number(tmp_path: Path) -> None:
    section = "[slack]\ndigest_window_seconds = 1\n\n[limits]\nsubmissions_per_second = 10\n"

    settings = load_settings(write(tmp_path, *valid_sections(), section), ENV)

    assert settings.digests.digest_window_seconds == 1.0
    assert settings.agents["support-bot"].limits.submissions_per_second == 10.0


def test_documented_text_forms_are_still_read(tmp_path: Path) -> None:
    section = """
    [approvals]
    remind_at = "50%"
    allowed_teams = ["T0WORKSPACE"]

    [delegation]
    default = "30m"
    max = "8h"

    [escalation]
    reannounce_after = "10m"
    """

    settings = load_settings(write(tmp_path, *valid_sections(), section), ENV)

    assert settings.approvals.remind_at == 0.5
    assert settings.approvals.allowed_teams == ("T0WORKSPACE",)
    assert settings.delegation.max.total_seconds() == 8 * 3600
    assert settings.escalation.reannounce_after.total_seconds() == 600


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        (
            "[approvals]\nremind_at = true",
            "approvals.remind_at: expected a percentage of the proposal's lifetime between 1% "
            "and 99%, such as '80%', or 'off' for no reminder, got true",
        ),
        (
            "[delegation]\nmax = true",
            "delegation.max: a duration is text in quotes; expected whole numbers with units "
            "d, h, m or s, largest first, such as '90s', '30m', '2h', '1d' or '1h30m', got true",
        ),
        (
            "[approvals]\nallowed_teams = { workspace = 'T0WORKSPACE' }",
            "approvals.allowed_teams: expected a list, got { workspace = 'T0WORKSPACE' }",
        ),
        (
            '[escalation]\nresponders = ["finance"]\nroutes = [{ channel = 5 }]',
            "escalation.routes[0].channel: expected text in quotes, got 5",
        ),
    ],
)
def test_what_was_written_reads_as_toml_not_python(
    tmp_path: Path, section: str, expected: str
) -> None:
    path = write(tmp_path, *valid_sections(), section)
    line = len(path.read_text().splitlines())

    assert only_problem_placed(path) == f"{path}:{line}: {expected}"


RULE = """
[[policy]]
id = "refunds"
operation = "payments.refund"
decision = "ask"
approvers = ["finance"]
channel = "C0APPROVALS"
"""
ROLES = """
[roles]
finance = ["U0FINANCE1", "W0FINANCE2"]
leads = ["U0LEAD1"]
"""


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        (
            'batch = { window = "30m", max = "5" }',
            "field 'batch.max': expected a whole number from 1 to 50 (the most proposals shown "
            "in one digest), got '5'",
        ),
        (
            'allow_guests = "yes"',
            "field 'allow_guests': expected true or false, got 'yes'",
        ),
        (
            'quorum = "2"',
            "field 'quorum': expected a whole number from 1 to 20 (how many distinct approvers "
            "must approve), got '2'",
        ),
        (
            'batch = { window = "30m", max = true }',
            "field 'batch.max': expected a whole number from 1 to 50 (the most proposals shown "
            "in one digest), got true",
        ),
        (
            'then = [{ after = "50%", approvers = ["leads"] }]',
            "field 'then': expected a table such as { after = \"50%\", approvers = "
            "[\"finance-leads\"] }, got [{ after = '50%', approvers = [...] }]",
        ),
    ],
)
def test_a_policy_rule_field_names_the_rule_line_and_what_was_written(
    tmp_path: Path, written: str, expected: str
) -> None:
    path = write(tmp_path, *valid_sections(roles=ROLES, policy=RULE + written + "\n"))
    line = len(path.read_text().splitlines())

    assert only_problem_placed(path) == f"{path}:{line}: policy rule 'refunds': {expected}"


def test_an_operations_table_quotes_what_was_written_as_toml(tmp_path: Path) -> None:
    operations = """
    [operations."payments.refund"]
    kind = "refund"
    payments = [{ payment_id = "pay_1", customer = "cus_1", amount_cents = true, currency = "USD" }]
    """
    path = write(tmp_path, *valid_sections(operations=operations, policy=""))

    assert only_problem_placed(path).endswith(
        "payments[0].amount_cents: Input should be a valid integer (got true)"
    )
