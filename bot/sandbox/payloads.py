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
    "input_state",
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
    values: dict[str, dict[str, str | list[str]]],
    trigger_id: str,
) -> dict[str, Any]:
    """A modal's Submit. ``values`` maps block_id -> action_id -> what the person entered: the
    text typed, the chosen option's value, or the chosen options' values.

    Every input block's element gets the state Slack gives its type (``value``,
    ``selected_option``, ``selected_options``, ``selected_date``...), the chosen options as the
    view stores them; the rest of the view is sent as the local Slack stores it.
    """
    state = view_state(view, values)
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


def view_state(
    view: dict[str, Any], values: dict[str, dict[str, str | list[str]]]
) -> dict[str, dict[str, Any]]:
    """``view.state.values`` as Slack sends it with a submission or a click in the modal: every
    input block's element with what the person entered (``values``: block_id -> action_id ->
    text, the chosen option's value or the chosen options' values)."""
    state: dict[str, dict[str, Any]] = {}
    for block in view.get("blocks", []):
        element = block.get("element") or {}
        if block.get("type") != "input" or "action_id" not in element:
            continue
        entered = values.get(block.get("block_id", ""), {}).get(element["action_id"])
        state.setdefault(block["block_id"], {})[element["action_id"]] = input_state(
            element, entered
        )
    return state


#: Elements whose state is one chosen option or several, and dates and times: the key Slack uses.
_ONE_OPTION: Final = frozenset({"static_select", "radio_buttons", "external_select"})
_OPTIONS: Final = frozenset({"checkboxes", "multi_static_select", "multi_external_select"})
_PICKED: Final = {
    "datepicker": "selected_date",
    "timepicker": "selected_time",
    "users_select": "selected_user",
    "conversations_select": "selected_conversation",
    "channels_select": "selected_channel",
}


def input_state(element: dict[str, Any], entered: str | list[str] | None) -> dict[str, Any]:
    """One input's entry in ``view.state.values``, as Slack sends it for the element's type.

    An option that the element does not offer is left out, as Slack never sends one.
    """
    kind = str(element.get("type"))
    chosen = [entered] if isinstance(entered, str) else list(entered or [])
    chosen = [value for value in chosen if value]
    if kind in _ONE_OPTION or kind in _OPTIONS:
        offered = {str(o.get("value")): o for o in _options(element)}
        options = [offered[value] for value in chosen if value in offered]
        if kind in _OPTIONS:
            return {"type": kind, "selected_options": options}
        return {"type": kind, "selected_option": options[0] if options else None}
    if kind == "datetimepicker":
        moment = int(chosen[0]) if chosen and chosen[0].isdigit() else None
        return {"type": kind, "selected_date_time": moment}
    if kind in _PICKED:
        return {"type": kind, _PICKED[kind]: chosen[0] if chosen else None}
    # text inputs, and anything else: what was typed; Slack sends null for an empty input
    return {"type": kind, "value": chosen[0] if chosen else None}


def _options(element: dict[str, Any]) -> list[dict[str, Any]]:
    options = list(element.get("options") or [])
    for group in element.get("option_groups") or []:
        options += group.get("options") or []
    return options


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
