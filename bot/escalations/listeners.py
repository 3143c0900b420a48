"""Slack listeners for escalations: Take it, Hand back (and its note modal), Resolve.

Like the proposals' listeners they acknowledge first, decode the payload into a typed value and
call the service; nothing here decides anything.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck

from bot.actions import (
    ESCALATION_HAND_BACK,
    ESCALATION_HAND_BACK_VIEW,
    ESCALATION_RESOLVE,
    ESCALATION_TAKE,
    NOTE_INPUT,
)
from bot.api.admission import Admission
from bot.escalations.flow import EscalationService
from bot.render import proposal as render
from bot.render.escalation import HAND_BACK_NOTE_MAX
from bot.slack.listeners import Click

__all__ = ["NoteSubmitted", "register_escalation_listeners"]

log = logging.getLogger(__name__)


class NoteSubmitted(BaseModel):
    """The hand-back modal, submitted."""

    model_config = ConfigDict(frozen=True)

    user: str
    escalation_id: str
    note: str

    @classmethod
    def of(cls, body: dict[str, Any]) -> NoteSubmitted:
        view = body["view"]
        value = view["state"]["values"][NOTE_INPUT][NOTE_INPUT].get("value") or ""
        return cls(
            user=body["user"]["id"], escalation_id=view["private_metadata"], note=value.strip()
        )


def register_escalation_listeners(
    app: AsyncApp, service: EscalationService, admission: Admission
) -> None:
    clicks: dict[str, Callable[[Click], Awaitable[None]]] = {
        ESCALATION_TAKE: lambda c: service.take(c.proposal_id, user=c.user, channel=c.channel),
        ESCALATION_HAND_BACK: lambda c: service.begin_hand_back(
            c.proposal_id, user=c.user, channel=c.channel, trigger_id=c.trigger_id
        ),
        ESCALATION_RESOLVE: lambda c: service.resolve(
            c.proposal_id, user=c.user, channel=c.channel
        ),
    }
    for action_id, handle in clicks.items():
        app.action(action_id)(_listener(handle, service, admission))

    @app.view(ESCALATION_HAND_BACK_VIEW)
    async def on_note(ack: AsyncAck, body: dict[str, Any]) -> None:
        try:
            submitted = NoteSubmitted.of(body)
        except (KeyError, TypeError, AttributeError, ValidationError) as error:
            log.warning("ignored a malformed hand-back submission: %s", error)
            await ack()
            return
        if not submitted.note:
            await ack(response_action="errors", errors={NOTE_INPUT: "Tell the agent what to do."})
            return
        if len(submitted.note) > HAND_BACK_NOTE_MAX:
            await ack(
                response_action="errors",
                errors={NOTE_INPUT: f"At most {HAND_BACK_NOTE_MAX} characters."},
            )
            return
        await ack()
        await service.hand_back(submitted.escalation_id, user=submitted.user, note=submitted.note)


def _listener(
    handle: Callable[[Click], Awaitable[None]], service: EscalationService, admission: Admission
) -> Callable[..., Awaitable[None]]:
    async def listener(ack: AsyncAck, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        try:
            click = Click.of(body, action)
        except (KeyError, TypeError, AttributeError, ValidationError) as error:
            log.warning("ignored a malformed escalation click: %s", error)
            return
        with admission.slot() as admitted:
            if admitted:
                await handle(click)
                return
        if click.channel:
            await service.publisher.tell(None, click.channel, click.user, render.busy_text())

    return listener
