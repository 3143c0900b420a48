"""Send the app what Slack would send when a person clicks, submits or opens the Home tab.

The page names the person and the button (or modal); the forwarder finds that button in what
the local Slack stored, builds Slack's payload, signs it with the signing secret and POSTs it to
the app's request URL, then does what Slack does with the answer (close the modal, or show the
errors the app returned).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from bot.sandbox import payloads
from bot.slack.local import LocalSlack

__all__ = ["Forwarded", "Refused", "SlackForwarder"]

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"


class Refused(Exception):
    """Slack would not let that person do that (no such button, not their modal): nothing sent."""


@dataclass(frozen=True, slots=True)
class Forwarded:
    """What the app answered, and what became of the modal."""

    status: int
    errors: dict[str, str] = field(default_factory=dict)  #: per input block, from the app
    closed: bool = False  #: the modal was closed (its submission was accepted)


class SlackForwarder:
    def __init__(
        self,
        *,
        slack: LocalSlack,
        signing_secret: str,
        events_url: str,
        session: aiohttp.ClientSession,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.slack = slack
        self.events_url = events_url
        self._secret = signing_secret
        self._session = session
        self._clock = clock

    def actor(self, user_id: str) -> payloads.Actor:
        known = {user.id: user for user in self.slack.users()}
        user = known.get(user_id)
        if user is None:
            raise Refused(f"user {user_id!r} is not in this workspace")
        return payloads.Actor(user.id, user.real_name or user.name, self.slack.team_id)

    async def click(
        self, user_id: str, *, channel: str, ts: str, block_index: int, action_id: str
    ) -> Forwarded:
        """A click on a button of a message in a channel."""
        actor = self.actor(user_id)
        try:
            message = self.slack.message(channel, ts)
        except LookupError:
            raise Refused(f"no message ts={ts!r} in channel {channel!r}") from None
        block_id, action = _button(message.blocks, block_index, action_id, f"message {ts}")
        names = {c["id"]: c["name"] for c in self.slack.channel_list()}
        return await self._press(
            actor,
            action,
            block_id,
            container={
                "type": "message",
                "message_ts": ts,
                "channel_id": channel,
                "is_ephemeral": False,
            },
            message={**message.to_api(), "team": actor.team_id},
            channel={"id": channel, "name": names.get(channel, channel.lower())},
        )

    async def click_in_view(
        self,
        user_id: str,
        *,
        view_id: str,
        block_index: int,
        action_id: str,
        values: dict[str, dict[str, str | list[str]]] | None = None,
    ) -> Forwarded:
        """A click on a button of a modal or of the Home tab the person has open; ``values``
        is what the person has entered in the modal's inputs so far (Slack sends it along, as
        the view's state)."""
        actor = self.actor(user_id)
        view = self._view(actor.id, view_id)
        block_id, action = _button(view.get("blocks", []), block_index, action_id, view_id)
        if values is not None:
            view = {**view, "state": {"values": payloads.view_state(view, values)}}
        return await self._press(
            actor, action, block_id, container={"type": "view", "view_id": view_id}, view=view
        )

    async def _press(
        self,
        actor: payloads.Actor,
        action: dict[str, Any],
        block_id: str,
        *,
        container: dict[str, Any],
        message: dict[str, Any] | None = None,
        channel: dict[str, str] | None = None,
        view: dict[str, Any] | None = None,
    ) -> Forwarded:
        """Post Slack's payload for ``actor``'s press of the button ``action`` in ``block_id``,
        with a fresh trigger id, saying where it was (``container``: a message in a channel or
        a view)."""
        payload = payloads.block_actions(
            actor=actor,
            action=action,
            block_id=block_id,
            trigger_id=self.slack.issue_trigger(actor.id),
            action_ts=self._action_ts(),
            container=container,
            message=message,
            channel=channel,
            view=view,
        )
        return await self._post(payloads.form_body(payload), FORM)

    async def submit(
        self, user_id: str, *, view_id: str, values: dict[str, dict[str, str | list[str]]]
    ) -> Forwarded:
        """Submit a modal; Slack closes it unless the app answers with errors."""
        actor = self.actor(user_id)
        opened = {v.id: v for v in self.slack.views(actor.id)}.get(view_id)
        if opened is None:
            raise Refused(f"{actor.id} has no open modal {view_id!r}")
        payload = payloads.view_submission(
            actor=actor,
            view=opened.view,
            values=values,
            trigger_id=self.slack.issue_trigger(actor.id),
        )
        answer = await self._post(payloads.form_body(payload), FORM)
        if answer.status == 200 and not answer.errors:
            self.slack.close_view(view_id)
            return Forwarded(answer.status, closed=True)
        return answer

    def cancel(self, user_id: str, *, view_id: str) -> None:
        """Close a modal without submitting it."""
        if view_id not in {v.id for v in self.slack.views(user_id)}:
            raise Refused(f"{user_id} has no open modal {view_id!r}")
        self.slack.close_view(view_id)

    async def open_home(self, user_id: str) -> Forwarded:
        """The person opened the app's Home tab: the ``app_home_opened`` event."""
        actor = self.actor(user_id)
        now = int(self._clock())
        envelope = payloads.app_home_opened(
            actor=actor,
            event_id=f"Ev{secrets.token_hex(5).upper()}",
            event_time=now,
            view=self.slack.home_view(actor.id),
        )
        return await self._post(json.dumps(envelope).encode(), JSON)

    def _view(self, user_id: str, view_id: str) -> dict[str, Any]:
        for opened in self.slack.views(user_id):
            if opened.id == view_id:
                return opened.view
        home = self.slack.home_view(user_id)
        if home is not None and home.get("id") == view_id:
            return home
        raise Refused(f"{user_id} has no open view {view_id!r}")

    def _action_ts(self) -> str:
        return f"{self._clock():.6f}"

    async def _post(self, body: bytes, content_type: str) -> Forwarded:
        headers = payloads.signed_headers(
            self._secret, body, timestamp=int(self._clock()), content_type=content_type
        )
        async with self._session.post(self.events_url, data=body, headers=headers) as response:
            raw = await response.read()
            status = response.status
        return Forwarded(status, errors=_errors(raw))


def _button(
    blocks: list[dict[str, Any]], index: int, action_id: str, where: str
) -> tuple[str, dict[str, Any]]:
    """(block_id, element) of the button ``action_id`` in block ``index``; Refused otherwise."""
    if not 0 <= index < len(blocks):
        raise Refused(f"{where} has no block {index} (it has {len(blocks)})")
    block = blocks[index]
    elements = list(block.get("elements", []))
    if "accessory" in block:
        elements.append(block["accessory"])
    for element in elements:
        if element.get("type") == "button" and element.get("action_id") == action_id:
            return str(block.get("block_id") or f"b{index}"), element
    raise Refused(f"block {index} of {where} has no button {action_id!r}")


def _errors(raw: bytes) -> dict[str, str]:
    """The per-field errors of a ``response_action: errors`` answer, else nothing."""
    try:
        answer = json.loads(raw) if raw.strip() else None
    except ValueError:
        return {}
    if isinstance(answer, dict) and answer.get("response_action") == "errors":
        errors = answer.get("errors")
        if isinstance(errors, dict):
            return {str(k): str(v) for k, v in errors.items()}
    return {}
