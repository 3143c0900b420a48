"""Requests as Slack sends them: our signing agrees with Slack's published example and with
slack_sdk's verifier, and our bodies are Slack's payloads with our ids, as Bolt decodes them."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import quote

import pytest
from slack_bolt.request.internals import (
    extract_channel_id,
    extract_team_id,
    extract_user_id,
    parse_body,
)
from slack_bolt.request.payload_utils import (
    is_app_home_opened_event,
    is_block_actions,
    is_slash_command,
    is_view_submission,
    to_action,
)
from slack_sdk.signature import Clock, SignatureVerifier

from tests.slack_requests import (
    FIXTURES,
    app_home_opened_body,
    block_action_body,
    fixture_text,
    sign,
    signed_headers,
    slash_command_body,
    url_verification_body,
    view_submission_body,
)

SECRET = "test-signing-secret"


@pytest.fixture(scope="module")
def vector() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / "signing_vector.json").read_text())
    return loaded


class FrozenClock(Clock):
    """slack_sdk's verifier asks a clock for the time; this one answers the vector's timestamp."""

    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now


def test_sign_reproduces_slacks_published_signature(vector: dict[str, Any]) -> None:
    signature = sign(vector["signing_secret"], vector["timestamp"], vector["body"])
    assert signature == vector["expected_signature"]


def test_vector_body_is_the_slash_command_fixture(vector: dict[str, Any]) -> None:
    assert vector["body"] == fixture_text("slash_command.form.txt")


def test_slack_sdk_verifier_accepts_the_vector_at_its_own_time(vector: dict[str, Any]) -> None:
    verifier = SignatureVerifier(
        vector["signing_secret"], clock=FrozenClock(float(vector["timestamp"]))
    )
    headers = {
        "x-slack-request-timestamp": vector["timestamp"],
        "x-slack-signature": sign(vector["signing_secret"], vector["timestamp"], vector["body"]),
    }
    assert verifier.is_valid_request(vector["body"], headers)


def test_slack_sdk_verifier_refuses_the_vector_ten_minutes_later(vector: dict[str, Any]) -> None:
    verifier = SignatureVerifier(
        vector["signing_secret"], clock=FrozenClock(float(vector["timestamp"]) + 600)
    )
    assert not verifier.is_valid(vector["body"], vector["timestamp"], vector["expected_signature"])


def test_slack_sdk_verifier_refuses_a_changed_body(vector: dict[str, Any]) -> None:
    verifier = SignatureVerifier(
        vector["signing_secret"], clock=FrozenClock(float(vector["timestamp"]))
    )
    tampered = vector["body"].replace("user_id=U2CERLKJA", "user_id=U0EVIL")
    assert not verifier.is_valid(tampered, vector["timestamp"], vector["expected_signature"])


def test_signed_headers_are_accepted_by_slack_sdk_now() -> None:
    body = block_action_body(
        user_id="U0APPROVER",
        action_id="approve",
        value="cs_x",
        channel_id="C0APPROVALS",
        message_ts="1700000000.000100",
    )
    headers = signed_headers(SECRET, body)
    assert abs(int(headers["X-Slack-Request-Timestamp"]) - time.time()) < 60
    assert headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert SignatureVerifier(SECRET).is_valid_request(body, headers)
    assert not SignatureVerifier("another-secret").is_valid_request(body, headers)


# --- the bodies that get signed -------------------------------------------------------------------


def test_form_encoding_matches_slacks_http_mode_body() -> None:
    # block_actions.form.txt is the exact encoding Slack's own tests post in HTTP mode
    original = fixture_text("block_actions.form.txt")
    payload = parse_body(original, "application/x-www-form-urlencoded")
    assert payload["type"] == "block_actions"
    assert "payload=" + quote(json.dumps(payload)) == original


def test_block_action_body_is_a_click_with_our_ids() -> None:
    body = block_action_body(
        user_id="U0APPROVER",
        action_id="reject",
        value="cs_abc",
        channel_id="C0APPROVALS",
        message_ts="1700000000.000100",
        trigger_id="7.T0001.U0APPROVER",
    )
    parsed = parse_body(body, "application/x-www-form-urlencoded")
    assert is_block_actions(parsed)
    assert extract_user_id(parsed) == "U0APPROVER"
    assert extract_team_id(parsed) == "T0001"
    assert extract_channel_id(parsed) == "C0APPROVALS"
    assert to_action(parsed) == {
        "action_id": "reject",
        "block_id": "decision",
        "text": {"type": "plain_text", "text": "Click Me"},
        "value": "cs_abc",
        "type": "button",
        "action_ts": "1700000000.900000",
    }
    assert parsed["container"]["message_ts"] == "1700000000.000100"
    assert parsed["trigger_id"] == "7.T0001.U0APPROVER"


def test_view_submission_body_carries_our_values_and_metadata() -> None:
    body = view_submission_body(
        user_id="U0APPROVER",
        callback_id="reject_reason",
        private_metadata="cs_abc",
        values={"reason": {"reason": "Too big & too soon"}},
    )
    parsed = parse_body(body, "application/x-www-form-urlencoded")
    assert is_view_submission(parsed)
    assert extract_user_id(parsed) == "U0APPROVER"
    view = parsed["view"]
    assert (view["callback_id"], view["private_metadata"]) == ("reject_reason", "cs_abc")
    assert view["state"]["values"] == {
        "reason": {"reason": {"type": "plain_text_input", "value": "Too big & too soon"}}
    }
    [block] = view["blocks"]
    assert (block["block_id"], block["element"]["action_id"]) == ("reason", "reason")


def test_event_and_command_bodies_carry_our_ids() -> None:
    challenge = json.loads(url_verification_body("our-challenge"))
    assert (challenge["type"], challenge["challenge"]) == ("url_verification", "our-challenge")
    home = json.loads(app_home_opened_body(user_id="U0APPROVER"))
    assert is_app_home_opened_event(home)
    assert (home["event"]["user"], home["team_id"]) == ("U0APPROVER", "T0001")
    command = parse_body(
        slash_command_body(user_id="U0APPROVER", command="/countersign", text="list"),
        "application/x-www-form-urlencoded",
    )
    assert is_slash_command(command)
    assert (command["user_id"], command["command"], command["text"]) == (
        "U0APPROVER",
        "/countersign",
        "list",
    )
    assert command["trigger_id"].startswith("398738663015.")
