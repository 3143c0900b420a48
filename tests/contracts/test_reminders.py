"""Reminders and extensions in the policy: remind_at and extend_by on ask rules, checked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from contracts.policy import MAX_EXPIRY, Ask, AskRule
from contracts.reminders import OFF, format_remind_at, parse_remind_at, remind_time
from contracts.toml_text import as_toml
from tests.contracts.test_policy import ask, auto, classify, load, problems_of

NOW = datetime(2031, 3, 14, 15, 0, tzinfo=UTC)


# --- remind_at as written -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "share"),
    [("80%", 0.8), ("75%", 0.75), ("1%", 0.01), ("99%", 0.99), ("87.5%", 0.875), ("off", OFF)],
)
def test_remind_at_reads_percentages_and_off(text: str, share: float | str) -> None:
    assert parse_remind_at(text) == share
    assert format_remind_at(parse_remind_at(text)) == text


@pytest.mark.parametrize("value", ["0%", "100%", "120%", "80", "0.8", "", " 80%", "-5%", 0.8, True])
def test_remind_at_refuses_anything_else_saying_what_is_expected(value: Any) -> None:
    expected = r"expected a percentage .* such as '80%'.*, got "
    with pytest.raises(ValueError, match=expected) as error:
        parse_remind_at(value)

    assert str(error.value).endswith(f"got {as_toml(value)}")


def test_reminder_is_due_at_its_share_of_the_lifetime() -> None:
    expires = NOW + timedelta(hours=1)

    assert remind_time(0.8, created_at=NOW, expires_at=expires) == NOW + timedelta(minutes=48)
    assert remind_time(0.25, created_at=NOW, expires_at=expires) == NOW + timedelta(minutes=15)
    assert remind_time(OFF, created_at=NOW, expires_at=expires) is None
    assert remind_time(0.8, created_at=NOW, expires_at=None) is None


# --- ask rules ------------------------------------------------------------------------------------


def test_ask_rule_reads_remind_at_and_extend_by() -> None:
    table = load([ask("r", remind_at="75%", extend_by="30m", expires_after="2h")])

    [rule] = table.rules
    assert isinstance(rule, AskRule)
    assert (rule.remind_at, rule.extend_by) == (0.75, timedelta(minutes=30))
    decision = classify(table)
    assert isinstance(decision, Ask) and decision.remind_at == 0.75


def test_ask_rule_without_them_uses_the_default_and_cannot_be_extended() -> None:
    [rule] = load([ask("r")]).rules

    assert isinstance(rule, AskRule)
    assert (rule.remind_at, rule.extend_by) == (None, None)


def test_remind_at_off_on_a_rule_is_kept_as_off() -> None:
    decision = classify(load([ask("r", remind_at="off")]))

    assert isinstance(decision, Ask) and decision.remind_at == OFF


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param(
            {"remind_at": "80"},
            "policy rule 'r': field 'remind_at': expected a percentage of the proposal's "
            "lifetime between 1% and 99%, such as '80%', or 'off' for no reminder, got '80'",
            id="remind-at-without-percent",
        ),
        pytest.param(
            {"remind_at": 0.8},
            "policy rule 'r': field 'remind_at': expected a percentage of the proposal's "
            "lifetime between 1% and 99%, such as '80%', or 'off' for no reminder, got 0.8",
            id="remind-at-a-number",
        ),
        pytest.param(
            {"extend_by": "half an hour"},
            "policy rule 'r': field 'extend_by': invalid duration 'half an hour': expected "
            "whole numbers with units d, h, m or s, largest first, such as '90s', '30m', '2h', "
            "'1d' or '1h30m'",
            id="extend-by-not-a-duration",
        ),
        pytest.param(
            {"extend_by": "0s"},
            "policy rule 'r': field 'extend_by' is '0s'; it must be longer than zero",
            id="extend-by-zero",
        ),
        pytest.param(
            {"expires_after": "6d", "extend_by": "1d1h"},
            "policy rule 'r': field 'extend_by' is '1d1h'; with expires_after '6d' an extended "
            "proposal would live 7d1h, but at most 7d is allowed (expires_after + extend_by)",
            id="extend-by-past-the-ceiling",
        ),
    ],
)
def test_bad_remind_at_or_extend_by_names_the_rule_and_field(
    fields: dict[str, Any], expected: str
) -> None:
    assert problems_of([ask("r", **fields)]) == [expected]


def test_extension_up_to_the_ceiling_is_allowed() -> None:
    [rule] = load([ask("r", expires_after="6d", extend_by="1d")]).rules

    assert isinstance(rule, AskRule)
    assert rule.expires_after + (rule.extend_by or timedelta(0)) == MAX_EXPIRY


@pytest.mark.parametrize("field", ["remind_at", "extend_by"])
def test_remind_at_and_extend_by_apply_only_to_ask_rules(field: str) -> None:
    value = "80%" if field == "remind_at" else "30m"
    rule = auto("r", when=[{"field": "amount_cents", "lte": 100}], **{field: value})

    expected = (
        f"policy rule 'r': field {field!r} only applies to decision 'ask', but this rule's "
        "decision is 'auto'"
    )
    assert expected in problems_of([rule])


def test_ask_rule_built_directly_refuses_an_extension_past_the_ceiling() -> None:
    with pytest.raises(ValueError, match="expires_after \\+ extend_by"):
        AskRule(
            id="r",
            operation="payments.refund",
            approvers=("finance",),
            channel="C0123ABCD",
            expires_after=timedelta(days=7),
            extend_by=timedelta(minutes=1),
        )
