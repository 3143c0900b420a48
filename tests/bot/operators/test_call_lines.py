"""Reading a call file (bot/operators/calls.py): each line one call, as any JSON writer writes it,
and a line that is not a call named by its number and its field."""

from __future__ import annotations

import json

import pytest

from bot.operators.calls import read_calls

REFUND = {
    "agent": "billing-bot",
    "operation": "payments.refund",
    "requested_by": "U0BIL01",
    "request": {"payment_id": "pay_1", "amount_cents": 100},
    "at": "2031-03-03T10:00:00Z",
}


def test_unicode_line_separators_inside_a_string_do_not_end_the_line() -> None:
    """JSON allows U+2028, U+2029 and U+0085 raw inside a string, and writers that do not escape
    non-ASCII text write them so; only a newline ends a line of JSON Lines."""
    reasons = ["one\u2028two", "three\u2029four", "five\x85six", "seven\x0beight\x0cnine"]
    text = "".join(
        json.dumps(REFUND | {"reason": reason}, ensure_ascii=False) + "\r\n" for reason in reasons
    )

    calls = read_calls(text, source="calls.jsonl")

    assert [call.reason for call in calls] == reasons
    with pytest.raises(ValueError, match=r"^calls\.jsonl line 5: "):
        read_calls(text + "{not json}\n", source="calls.jsonl")


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("urgent", 1, "urgent: Input should be a valid boolean (got 1)"),
        ("urgent", "true", "urgent: Input should be a valid boolean (got 'true')"),
        ("at", 1_900_000_000, "at: Input should be a valid datetime (got 1900000000)"),
        ("verdict", "rejected ", "verdict: Input should be 'approved', 'rejected' or 'expired'"),
    ],
)
def test_a_field_of_the_wrong_type_is_refused_naming_the_line_and_the_field(
    field: str, value: object, problem: str
) -> None:
    """The server refuses ``urgent: 1`` (its body is read strictly), so the simulator may not
    read it as true and count a call the server would not take; nor read a number as a time."""
    text = json.dumps(REFUND) + "\n" + json.dumps(REFUND | {field: value}) + "\n"

    with pytest.raises(ValueError) as refused:
        read_calls(text, source="calls.jsonl")

    assert str(refused.value).startswith(f"calls.jsonl line 2: {problem}")


def test_a_decision_time_without_its_zone_is_refused_as_an_arrival_time_is() -> None:
    """``decided_at`` is set against ``at`` (the wait people took, the hand-over to backup
    approvers): a time without its zone cannot be, and is named rather than read as local."""
    line = REFUND | {"verdict": "approved", "decided_at": "2031-03-03T10:20:00"}

    with pytest.raises(ValueError) as refused:
        read_calls(json.dumps(line), source="calls.jsonl")

    assert str(refused.value) == (
        "calls.jsonl line 1: decided_at: expected a time with its zone, such as "
        "'2031-03-14T09:12:03Z', got '2031-03-03T10:20:00'"
    )
