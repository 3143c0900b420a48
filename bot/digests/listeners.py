"""Slack listeners for digests: Approve all, Review all… (its modal, paged with Previous and Next),
Reject all… (its reason modal), Choose… (its modal).

Like every listener they acknowledge first, decode the payload into a typed value and call the
service; nothing here decides anything. A button's value is the digest's id only; the chosen
items come back as the ids the modal offered, and the service keeps only the digest's own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck

from bot.digests.decisions import DigestService
from bot.digests.recorded import chosen_detail
from bot.flow.clicks import RecordedDecisions
from bot.render import actions
from bot.render.blocks import REASON_MAX
from bot.render.digest_review import ReviewState, box_place, chosen_places
from bot.slack.ids import SlackUser
from bot.slack.listeners import Click, decoded, opening_modal, recorded_submission, worked_click
from store.proposals.clicks import Clicked

__all__ = ["Chosen", "Reviewed", "register_digest_listeners"]


class Chosen(BaseModel):
    """A digest modal, submitted: the items chosen (None: all), the decision, the reason."""

    model_config = ConfigDict(frozen=True)

    user: SlackUser
    digest_id: str
    items: tuple[str, ...] | None
    decision: Literal["approve", "reject"]
    reason: str

    @classmethod
    def of(cls, body: dict[str, Any]) -> Chosen:
        view = body["view"]
        values: dict[str, Any] = view["state"]["values"]
        reason = (
            values.get(actions.REASON_INPUT, {}).get(actions.REASON_INPUT, {}).get("value") or ""
        )
        reason = reason.strip()
        if view["callback_id"] == actions.DIGEST_REJECT_VIEW:
            return cls(
                user=body["user"]["id"],
                digest_id=view["private_metadata"],
                items=None,
                decision="reject",
                reason=reason,
            )
        items = [
            option["value"]
            for block_id, inputs in values.items()
            if block_id.startswith(f"{actions.DIGEST_ITEMS_INPUT}_")
            for option in inputs[actions.DIGEST_ITEMS_INPUT].get("selected_options") or []
        ]
        decision = values[actions.DIGEST_DECISION_INPUT][actions.DIGEST_DECISION_INPUT][
            "selected_option"
        ]["value"]
        return cls(
            user=body["user"]["id"],
            digest_id=view["private_metadata"],
            items=tuple(items),
            decision=decision,
            reason=reason,
        )

    def problems(self) -> dict[str, str]:
        """What the person must fix before anything is done, by block id."""
        if self.items == ():
            return {f"{actions.DIGEST_ITEMS_INPUT}_0": "Choose at least one proposal."}
        if self.decision == "reject" and not self.reason:
            return {actions.REASON_INPUT: "Say why you reject them."}
        if len(self.reason) > REASON_MAX:
            return {actions.REASON_INPUT: f"At most {REASON_MAX} characters."}
        return {}


class Reviewed(BaseModel):
    """A Review all… modal, submitted or paged: what it reviewed and the boxes of its page."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    user: SlackUser
    state: ReviewState
    on_page: dict[int, bool]  #: the page's boxes: place -> ticked
    boxes: tuple[str, ...]  #: the block ids of the page's boxes, in order
    view_id: str
    view_hash: str | None

    @classmethod
    def of(cls, body: dict[str, Any], *_: Any) -> Reviewed:
        view = body["view"]
        try:
            state = ReviewState.parse(view["private_metadata"])
        except ValueError as error:
            raise TypeError(str(error)) from None
        values = (view.get("state") or {}).get("values") or {}
        return cls(
            user=body["user"]["id"],
            state=state,
            on_page=chosen_places(values, state),
            boxes=tuple(
                str(b["block_id"])
                for b in view.get("blocks", [])
                if box_place(str(b.get("block_id", ""))) is not None
            ),
            view_id=view["id"],
            view_hash=view.get("hash"),
        )

    def nothing_selected(self) -> bool:
        left_out = self.state.selected(self.on_page).left_out
        return set(self.state.places) <= set(left_out)


def register_digest_listeners(
    app: AsyncApp, digests: DigestService, decisions: RecordedDecisions
) -> None:
    """Approve all and the modals' submissions are decisions: recorded when they arrive and
    applied after (bot/flow/clicks.py, bot/digests/recorded.py), never told busy. The buttons that
    open a modal, and a review's paging, are worked on at once, bounded by nothing."""

    async def approve_all(click: Click) -> None:
        await decisions.record(
            click.proposal_id, user=click.user, channel=click.channel, verb="digest_approve_all"
        )

    app.action(actions.DIGEST_APPROVE_ALL)(worked_click(Click.of, approve_all, what="digest click"))
    modals: dict[str, Callable[[Click], Awaitable[object]]] = {
        actions.DIGEST_REJECT_ALL: opening_modal(digests.begin_reject_all),
        actions.DIGEST_CHOOSE: opening_modal(digests.begin_choose),
        actions.DIGEST_REVIEW: opening_modal(digests.begin_review),
    }
    for action_id, handle in modals.items():
        app.action(action_id)(worked_click(Click.of, handle, what="digest click"))

    async def on_submitted(ack: AsyncAck, body: dict[str, Any]) -> None:
        chosen = decoded(Chosen.of, body, what="digest submission")
        if chosen is None:
            await ack()
            return
        problems = chosen.problems()
        if problems:
            await ack(response_action="errors", errors=problems)
            return
        rejects = chosen.decision == "reject"
        clicked = Clicked(
            subject=chosen.digest_id,
            actor=chosen.user,
            verb="digest_reject" if rejects else "digest_approve",
            channel=None,
            detail=chosen_detail(chosen.items, chosen.reason),
        )
        block = actions.REASON_INPUT if chosen.items is None else actions.DIGEST_DECISION_INPUT
        await recorded_submission(decisions, clicked, ack, block=block)

    app.view(actions.DIGEST_REJECT_VIEW)(on_submitted)
    app.view(actions.DIGEST_CHOOSE_VIEW)(on_submitted)

    @app.action(actions.DIGEST_REVIEW_PAGE)
    async def on_page(ack: AsyncAck, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        paged = decoded(Reviewed.of, body, what="digest review page")
        page = str(action.get("value", ""))
        if paged is None or not page.isdigit() or int(page) < 1:
            return
        await digests.review_page(
            paged.state,
            paged.on_page,
            page=int(page),
            user=paged.user,
            view_id=paged.view_id,
            view_hash=paged.view_hash,
        )

    @app.view(actions.DIGEST_REVIEW_VIEW)
    async def on_reviewed(ack: AsyncAck, body: dict[str, Any]) -> None:
        reviewed = decoded(Reviewed.of, body, what="digest review")
        if reviewed is None:
            await ack()
            return
        if reviewed.nothing_selected() and reviewed.boxes:
            await ack(
                response_action="errors",
                errors={
                    reviewed.boxes[0]: "Select at least one proposal to approve, or close the "
                    "review to approve none."
                },
            )
            return
        clicked = Clicked(
            subject=reviewed.state.digest,
            actor=reviewed.user,
            verb="digest_review",
            channel=None,
            detail={"review": reviewed.state.selected(reviewed.on_page).dump()},
        )
        block = reviewed.boxes[0] if reviewed.boxes else actions.DIGEST_REVIEW_VIEW
        await recorded_submission(decisions, clicked, ack, block=block)
