"""The signature gate in front of bolt, at the edges of Slack's five-minute window."""

from __future__ import annotations

import pytest

from bot.slack.gate import MAX_SKEW_SECONDS, signature_verifies
from tests.slack_requests import signed_headers

SECRET = "gate-test-secret"
BODY = b"payload=%7B%7D"
SIGNED_AT = 1_800_000_000


@pytest.mark.parametrize("skew", [0, MAX_SKEW_SECONDS, -MAX_SKEW_SECONDS])
def test_a_signature_inside_the_window_verifies(skew: int) -> None:
    headers = signed_headers(SECRET, BODY, timestamp=SIGNED_AT)
    assert signature_verifies(SECRET, BODY, headers, now=SIGNED_AT + skew)


@pytest.mark.parametrize("skew", [MAX_SKEW_SECONDS + 1, -(MAX_SKEW_SECONDS + 1), 10**6])
def test_a_stale_or_future_timestamp_is_refused(skew: int) -> None:
    headers = signed_headers(SECRET, BODY, timestamp=SIGNED_AT)
    assert not signature_verifies(SECRET, BODY, headers, now=SIGNED_AT + skew)


def test_another_secret_or_body_or_a_garbage_timestamp_is_refused() -> None:
    headers = signed_headers(SECRET, BODY, timestamp=SIGNED_AT)
    assert not signature_verifies("other", BODY, headers, now=SIGNED_AT)
    assert not signature_verifies(SECRET, BODY + b"x", headers, now=SIGNED_AT)
    garbage = {**headers, "X-Slack-Request-Timestamp": "1e9"}
    assert not signature_verifies(SECRET, BODY, garbage, now=SIGNED_AT)
