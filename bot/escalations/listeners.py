"""Slack listeners for escalations: Take it, Hand back (and its note modal), Resolve.

Like the proposals' listeners they acknowledge first, decode the payload into a typed value and
call the service; nothing here decides anything.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict
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
from bot.slack.ids import SlackUser
from bot.slack.listeners import Click, admitted_click, decoded, modal_text, text_problems

__all__ = ["NoteSubmitted", "register_escalation_listeners"]


class NoteSubmitted(BaseModel):
    """The hand-back modal, submitted."""

    model_config = ConfigDict(frozen=True)

    user: SlackUser
    escalation_id: str
    note: str

    @classmethod
    def of(cls, body: dict[str, Any]) -> NoteSubmitted:
        view = body["view"]
        return cls(
            user=body["user"]["id"],
            escalation_id=view["private_metadata"],
            note=modal_text(view, NOTE_INPUT),
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

    async def busy(click: Click) -> None:
        if click.channel:
            await service.publisher.tell(None, click.channel, click.user, render.busy_text())

    for action_id, handle in clicks.items():
        app.action(action_id)(
            admitted_click(
                Click.of, handle, busy=busy, admission=admission, what="escalation click"
            )
        )

    @app.view(ESCALATION_HAND_BACK_VIEW)
    async def on_note(ack: AsyncAck, body: dict[str, Any]) -> None:
        submitted = decoded(NoteSubmitted.of, body, what="hand-back submission")
        if submitted is None:
            await ack()
            return
        problems = text_problems(
            submitted.note,
            block=NOTE_INPUT,
            empty="Tell the agent what to do.",
            most=HAND_BACK_NOTE_MAX,
        )
        if problems:
            await ack(response_action="errors", errors=problems)
            return
        await ack()
        await service.hand_back(submitted.escalation_id, user=submitted.user, note=submitted.note)
