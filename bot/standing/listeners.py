"""Slack listeners for standing rules and reviews: Approve + allow similar… (and its modal),
Revoke, and the two verdict buttons of a review post.

Like the proposals' listeners they acknowledge first, decode the payload into a typed value and
call into bot/standing/rules.py, bot/standing/admin.py or bot/standing/review.py; nothing here
decides anything.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck

from bot.flow.service import Service
from bot.render import actions
from bot.slack.ids import SlackUser
from bot.slack.listeners import (
    ValueClick,
    click_listener,
    decoded,
    opening_modal,
    worked_click,
)
from bot.standing.admin import StandingAdmin
from bot.standing.review import Reviews
from bot.standing.rules import StandingGrants
from store.standing import Verdict

__all__ = ["DurationChosen", "register_standing_listeners"]


class DurationChosen(BaseModel):
    """The Approve + allow similar modal, submitted."""

    model_config = ConfigDict(frozen=True)

    user: SlackUser
    proposal_id: str
    duration: str
    uses: str | None = None  #: None: the modal had no choice of uses (the rule's max_uses)

    @classmethod
    def of(cls, body: dict[str, Any]) -> DurationChosen:
        view = body["view"]
        values = view["state"]["values"]
        chosen = values[actions.DURATION_INPUT][actions.DURATION_INPUT].get("selected_option") or {}
        uses = (values.get(actions.USES_INPUT) or {}).get(actions.USES_INPUT)
        return cls(
            user=body["user"]["id"],
            proposal_id=view["private_metadata"],
            duration=str(chosen.get("value") or ""),
            uses=None if uses is None else str((uses.get("selected_option") or {}).get("value")),
        )


def register_standing_listeners(
    app: AsyncApp,
    *,
    service: Service,
    grants: StandingGrants,
    admin: StandingAdmin,
    reviews: Reviews,
) -> None:
    opens = click_listener(opening_modal(grants.begin), service)  # opens a modal: no bound
    app.action(actions.APPROVE_STANDING)(opens)

    @app.view(actions.APPROVE_STANDING_VIEW)
    async def on_duration(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        chosen = decoded(DurationChosen.of, body, what="standing-rule submission")
        if chosen is None:
            return
        await grants.grant(
            chosen.proposal_id, user=chosen.user, duration=chosen.duration, uses=chosen.uses
        )

    async def revoke(click: ValueClick) -> None:
        await admin.revoke(click.value, user=click.user, channel=click.channel)

    app.action(actions.REVOKE_STANDING)(_message_listener(revoke))

    def judge(verdict: Verdict) -> Callable[[ValueClick], Awaitable[object]]:
        async def handle(click: ValueClick) -> None:
            await reviews.verdict(
                click.value,
                user=click.user,
                verdict=verdict,
                channel=click.channel,
                message_ts=click.message_ts,
            )

        return handle

    app.action(actions.REVIEW_OK)(_message_listener(judge("ok")))
    app.action(actions.REVIEW_SHOULD_HAVE_ASKED)(_message_listener(judge("should_have_asked")))


def _message_listener(
    handle: Callable[[ValueClick], Awaitable[object]],
) -> Callable[..., Awaitable[None]]:
    """A click on a message's button (bot/slack/listeners.py worked_click): worked on at once,
    bounded by nothing."""
    return worked_click(ValueClick.of, handle)
