"""What Slack sends an app, built from the local Slack's state, and signed the way Slack signs it.

The sandbox page reports only *who* clicked *which* button or submitted *which* modal; the
payloads are built here from what the local Slack stored (the message, its button, the view), so
the app receives exactly what it would receive from Slack: a form-encoded ``payload=<JSON>`` for
interactions, a JSON envelope for events, each with ``X-Slack-Request-Timestamp`` and
``X-Slack-Signature`` (version ``v0``: hex HMAC-SHA256 of ``v0:{timestamp}:{body}``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlencode

__all__ = [
    "APP_ID",
    "Actor",
    "app_home_opened",
    "block_actions",
    "form_body",
    "signature",
    "signed_headers",
    "view_submission",
]

#: The id the local Slack gives the app (``api_app_id`` in every payload).
APP_ID: Final = "ACOUNTERSIGN"
#: The legacy verification token field Slack still sends; apps verify signatures instead.
_LEGACY_TOKEN: Final = "sandbox-verification-token"


@dataclass(frozen=True, slots=True)
class Actor:
    """The person who clicked, as the payload's ``user`` object describes them."""

    id: str
    name: str
    team_id: str

    def to_payload(self) -> dict[str, str]:
        handle = self.name.lower().replace(" ", ".") or self.id.lower()
        return {"id": self.id, "username": handle, "name": handle, "team_id": self.team_id}


def block_actions(
    *,
    actor: Actor,
    action: dict[str, Any],
    block_id: str,
    trigger_id: str,
    action_ts: str,
    container: dict[str, Any],
    message: dict[str, Any] | None = None,
    channel: dict[str, str] | None = None,
    view: dict[str, Any] | None = None,
    response_url: str | None = None,
) -> dict[str, Any]:
    """A button click. ``action`` is the button element as stored in the message or view.

    ``container`` is ``{"type": "message", ...}`` with ``message`` and ``channel``, or
    ``{"type": "view", ...}`` with ``view``.
    """
    clicked: dict[str, Any] = {
        "type": action.get("type", "button"),
        "action_id": action["action_id"],
        "block_id": block_id,
        "text": action.get("text"),
        "action_ts": action_ts,
    }
    for key in ("value", "style"):
        if key in action:
            clicked[key] = action[key]
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": actor.to_payload(),
        "api_app_id": APP_ID,
        "token": _LEGACY_TOKEN,
        "container": container,
        "trigger_id": trigger_id,
        "team": {"id": actor.team_id, "domain": "countersign-sandbox"},
        "enterprise": None,
        "is_enterprise_install": False,
        "state": {"values": {}},
        "actions": [clicked],
    }
    if message is not None:
        payload["message"] = message
    if channel is not None:
        payload["channel"] = channel
    if view is not None:
        payload["view"] = view
    if response_url is not None:
        payload["response_url"] = response_url
    return payload


def view_submission(
    *,
    actor: Actor,
    view: dict[str, Any],
    values: dict[str, dict[str, str]],
    trigger_id: str,
) -> dict[str, Any]:
    """A modal's Submit. ``values`` maps block_id -> action_id -> the text typed in.

    Only the view's ``plain_text_input`` elements are filled in; the rest of the view is sent
    as the local Slack stores it.
    """
    state: dict[str, dict[str, Any]] = {}
    for block in view.get("blocks", []):
        element = block.get("element") or {}
        if block.get("type") != "input" or element.get("type") != "plain_text_input":
            continue
        typed = values.get(block.get("block_id", ""), {}).get(element["action_id"])
        state.setdefault(block["block_id"], {})[element["action_id"]] = {
            "type": "plain_text_input",
            "value": typed or None,  # Slack sends null for an empty optional input
        }
    return {
        "type": "view_submission",
        "team": {"id": actor.team_id, "domain": "countersign-sandbox"},
        "user": actor.to_payload(),
        "api_app_id": APP_ID,
        "token": _LEGACY_TOKEN,
        "trigger_id": trigger_id,
        "view": {**view, "state": {"values": state}},
        "response_urls": [],
        "enterprise": None,
        "is_enterprise_install": False,
    }


def app_home_opened(
    *, actor: Actor, event_id: str, event_time: int, view: dict[str, Any] | None
) -> dict[str, Any]:
    """The Events API envelope for a person opening the app's Home tab."""
    event: dict[str, Any] = {
        "type": "app_home_opened",
        "user": actor.id,
        "channel": f"D{actor.id[1:]}",
        "tab": "home",
        "event_ts": f"{event_time}.000100",
    }
    if view is not None:
        event["view"] = view
    return {
        "token": _LEGACY_TOKEN,
        "team_id": actor.team_id,
        "api_app_id": APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": event_time,
        "authorizations": [{"team_id": actor.team_id, "user_id": actor.id, "is_bot": False}],
        "is_ext_shared_channel": False,
    }


def form_body(payload: dict[str, Any]) -> bytes:
    """``payload=<url-encoded JSON>``: how Slack POSTs interactions to the request URL."""
    return urlencode({"payload": json.dumps(payload, separators=(",", ":"))}).encode()


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """Slack's request signature: ``v0=`` and the hex HMAC-SHA256 of ``v0:{timestamp}:{body}``."""
    base = f"v0:{timestamp}:".encode() + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def signed_headers(
    secret: str, body: bytes, *, timestamp: int, content_type: str
) -> dict[str, str]:
    """The headers Slack sends with ``body``, signed at ``timestamp`` (Unix seconds)."""
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": str(timestamp),
        "X-Slack-Signature": signature(secret, timestamp, body),
    }
