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

from bot.escalations.flow import EscalationService
from bot.flow.clicks import RecordedDecisions
from bot.render.actions import (
    ESCALATION_HAND_BACK,
    ESCALATION_HAND_BACK_VIEW,
    ESCALATION_RESOLVE,
    ESCALATION_TAKE,
    NOTE_INPUT,
)
from bot.render.escalation import HAND_BACK_NOTE_MAX
from bot.slack.ids import SlackUser
from bot.slack.listeners import (
    Click,
    decoded,
    modal_text,
    recorded_submission,
    text_problems,
    worked_click,
)
from store.proposals.clicks import Clicked, ClickVerb

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
    app: AsyncApp, service: EscalationService, decisions: RecordedDecisions
) -> None:
    """Take it, Resolve and the hand-back's note are decisions: recorded when they arrive and
    applied after (bot/flow/clicks.py, bot/escalations/recorded.py), never told busy. Hand back
    opens a modal, bounded by nothing."""
    recorded: dict[str, ClickVerb] = {
        ESCALATION_TAKE: "escalation_take",
        ESCALATION_RESOLVE: "escalation_resolve",
    }
    for action_id, verb in recorded.items():
        app.action(action_id)(
            worked_click(Click.of, _recorder(decisions, verb), what="escalation click")
        )

    async def begin_hand_back(click: Click) -> None:
        await service.begin_hand_back(
            click.proposal_id, user=click.user, channel=click.channel, trigger_id=click.trigger_id
        )

    app.action(ESCALATION_HAND_BACK)(
        worked_click(Click.of, begin_hand_back, what="escalation click")
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
        clicked = Clicked(
            subject=submitted.escalation_id,
            actor=submitted.user,
            verb="escalation_hand_back",
            channel=None,
            detail={"note": submitted.note},
        )
        await recorded_submission(decisions, clicked, ack, block=NOTE_INPUT)


def _recorder(decisions: RecordedDecisions, verb: ClickVerb) -> Callable[[Click], Awaitable[None]]:
    async def record(click: Click) -> None:
        await decisions.record(click.proposal_id, user=click.user, channel=click.channel, verb=verb)

    return record
