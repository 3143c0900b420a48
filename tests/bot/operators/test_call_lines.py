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
