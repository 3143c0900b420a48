"""Slack listeners for escalations: Take it, Hand back (and its note modal), Resolve.

Like the proposals' listeners they acknowledge first, decode the payload into a typed value and
call the service; nothing here decides anything.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from slack_bolt.app.async_app import AsyncApp

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
from bot.slack.listeners import Click, opening_modal, text_submission_listener, worked_click
from store.proposals.clicks import ClickVerb

__all__ = ["register_escalation_listeners"]


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

    app.action(ESCALATION_HAND_BACK)(
        worked_click(Click.of, opening_modal(service.begin_hand_back), what="escalation click")
    )

    app.view(ESCALATION_HAND_BACK_VIEW)(
        text_submission_listener(
            decisions,
            block=NOTE_INPUT,
            verb="escalation_hand_back",
            key="note",
            empty="Tell the agent what to do.",
            most=HAND_BACK_NOTE_MAX,
            what="hand-back submission",
        )
    )


def _recorder(decisions: RecordedDecisions, verb: ClickVerb) -> Callable[[Click], Awaitable[None]]:
    async def record(click: Click) -> None:
        await decisions.record(click.proposal_id, user=click.user, channel=click.channel, verb=verb)

    return record
