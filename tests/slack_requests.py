"""Requests as Slack sends them: real payload bodies with our ids, signed with Slack's v0 scheme.

The bodies start from Slack's own published payloads in ``tests/fixtures/slack`` (see its
README.md), so a test exercises the shape Slack really posts rather than one we imagined.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

__all__ = [
    "FIXTURES",
    "app_home_opened_body",
    "block_action_body",
    "fixture_json",
    "fixture_text",
    "sign",
    "signed_headers",
    "slash_command_body",
    "subteam_members_changed_body",
    "subteam_updated_body",
    "url_verification_body",
    "user_change_body",
    "view_submission_body",
]

FIXTURES = Path(__file__).parent / "fixtures" / "slack"

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"


@cache
def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8").strip()


def fixture_json(name: str) -> dict[str, Any]:
    """A fresh copy of a JSON fixture, safe to modify."""
    loaded: dict[str, Any] = json.loads(fixture_text(name))
    return copy.deepcopy(loaded)


# --- signing --------------------------------------------------------------------------------------


def sign(secret: str, timestamp: str | int, body: str | bytes) -> str:
    """Slack's v0 request signature: ``v0=`` + hex HMAC-SHA256 of ``v0:{timestamp}:{body}``."""
    raw = body.encode() if isinstance(body, str) else body
    base = b"v0:" + str(timestamp).encode() + b":" + raw
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def signed_headers(
    secret: str,
    body: str | bytes,
    *,
    timestamp: int | None = None,
    content_type: str = FORM,
) -> dict[str, str]:
    """The headers Slack sends with ``body``; ``timestamp`` defaults to the current time."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": sign(secret, stamp, body),
    }


# --- bodies ---------------------------------------------------------------------------------------


def _form_payload(payload: dict[str, Any]) -> str:
    """``payload=<url-encoded JSON>``, as Slack POSTs interactions in HTTP mode."""
    return "payload=" + quote(json.dumps(payload))


def block_action_body(
    *,
    user_id: str,
    action_id: str,
    value: str,
    channel_id: str,
    message_ts: str,
    team_id: str = "T0001",
    trigger_id: str = "1000000000001.1000000000.local-trigger",
    block_id: str = "decision",
    action_ts: str = "1700000000.900000",
    response_url: str | None = None,
) -> str:
    """A button click on a message, form-encoded: Slack's block_actions payload with our ids."""
    payload = fixture_json("block_actions.json")
    payload["user"] = {"id": user_id, "team_id": team_id}
    payload["team"] = {"id": team_id}
    payload["trigger_id"] = trigger_id
    payload["container"].update(
        {"message_ts": message_ts, "channel_id": channel_id, "is_ephemeral": False}
    )
    payload["channel"] = {"id": channel_id}
    if response_url is not None:
        payload["response_url"] = response_url
    payload["message"].update({"ts": message_ts, "team": team_id})
    [action] = payload["actions"]
    action.update(
        {"action_id": action_id, "block_id": block_id, "value": value, "action_ts": action_ts}
    )
    return _form_payload(payload)


def view_submission_body(
    *,
    user_id: str,
    callback_id: str,
    private_metadata: str,
    values: dict[str, dict[str, str]],
    team_id: str = "T0001",
    view_id: str = "V00000001",
    states: dict[str, dict[str, dict[str, Any]]] | None = None,
) -> str:
    """A modal submission, form-encoded: Slack's view_submission payload with our values.

    ``values`` maps block_id -> action_id -> the text typed into that plain_text_input;
    ``states`` adds inputs of any kind as Slack reports their state (block_id -> action_id ->
    e.g. ``{"type": "number_input", "value": "1500"}`` or ``{"type": "static_select",
    "selected_option": {...}}``).
    """
    state: dict[str, dict[str, dict[str, Any]]] = {
        block_id: {
            action_id: {"type": "plain_text_input", "value": text}
            for action_id, text in actions.items()
        }
        for block_id, actions in values.items()
    }
    for block_id, actions in (states or {}).items():
        state.setdefault(block_id, {}).update(actions)
    payload = fixture_json("view_submission.json")
    payload["user"].update({"id": user_id, "team_id": team_id})
    payload["team"]["id"] = team_id
    view = payload["view"]
    view.update(
        {
            "id": view_id,
            "root_view_id": view_id,
            "team_id": team_id,
            "app_installed_team_id": team_id,
            "callback_id": callback_id,
            "private_metadata": private_metadata,
            "blocks": [
                {
                    "type": "input",
                    "block_id": block_id,
                    "label": {"type": "plain_text", "text": block_id},
                    "optional": False,
                    "element": {"type": element["type"], "action_id": action_id},
                }
                for block_id, actions in state.items()
                for action_id, element in actions.items()
            ],
            "state": {"values": state},
        }
    )
    return _form_payload(payload)


def url_verification_body(challenge: str) -> str:
    """The Events API URL check, JSON, with our challenge."""
    payload = fixture_json("url_verification.json")
    payload["challenge"] = challenge
    return json.dumps(payload)


def app_home_opened_body(*, user_id: str, team_id: str = "T0001") -> str:
    """The Events API envelope for a person opening the App Home tab, JSON."""
    payload = fixture_json("app_home_opened.json")
    payload["team_id"] = team_id
    payload["event"]["user"] = user_id
    payload["event"]["view"]["team_id"] = team_id
    return json.dumps(payload)


def _event_body(event: dict[str, Any], *, team_id: str) -> str:
    """An Events API envelope (the App Home fixture's: Slack's own) carrying ``event``, JSON."""
    payload = fixture_json("app_home_opened.json")
    payload["team_id"] = team_id
    payload["event"] = {**event, "event_ts": "1515449522.000016"}
    return json.dumps(payload)


def user_change_body(user: dict[str, Any], *, team_id: str = "T0001") -> str:
    """Slack's ``user_change`` event: ``user`` is the whole user object as users.info gives it."""
    return _event_body({"type": "user_change", "user": user, "cache_ts": 1}, team_id=team_id)


def subteam_members_changed_body(
    group: str, *, added: Sequence[str] = (), removed: Sequence[str] = (), team_id: str = "T0001"
) -> str:
    """Slack's ``subteam_members_changed`` event: who joined and left user group ``group``."""
    event = {
        "type": "subteam_members_changed",
        "subteam_id": group,
        "team_id": team_id,
        "date_previous_update": 1446670362,
        "date_update": 1492906952,
        "added_users": list(added),
        "added_users_count": str(len(added)),
        "removed_users": list(removed),
        "removed_users_count": str(len(removed)),
    }
    return _event_body(event, team_id=team_id)


def subteam_updated_body(group: str, users: Sequence[str], *, team_id: str = "T0001") -> str:
    """Slack's ``subteam_updated`` event: user group ``group`` as it now is (its ``users``)."""
    subteam = {
        "id": group,
        "team_id": team_id,
        "is_usergroup": True,
        "is_subteam": True,
        "name": group,
        "handle": group.lower(),
        "is_external": False,
        "date_create": 1492655498,
        "date_update": 1595814882,
        "date_delete": 0,
        "users": list(users),
        "user_count": len(users),
    }
    return _event_body({"type": "subteam_updated", "subteam": subteam}, team_id=team_id)


def slash_command_body(
    *,
    user_id: str,
    command: str,
    text: str = "",
    channel_id: str = "C0001",
    team_id: str = "T0001",
) -> str:
    """A slash command, form-encoded: Slack's documented example body with our values."""
    fields = dict(parse_qsl(fixture_text("slash_command.form.txt"), keep_blank_values=True))
    fields.update(
        {
            "user_id": user_id,
            "command": command,
            "text": text,
            "channel_id": channel_id,
            "team_id": team_id,
        }
    )
    return urlencode(fields)
