"""Decisions on a digest: Approve all, Review all… (every pending item in full, the ticked ones
approved), Reject all…, and Choose… (some items, approved or rejected).

Each item is decided exactly as a click on it alone decides it (Service.approve_item and
reject_item: the same click-time checks, every refusal audited on the item, the same atomic
claim, its own revalidation, execution and outcome); items decided already are skipped. At most
:data:`CONCURRENCY` items are worked on at once. The clicker alone is told what came of it
("Approved 10, 2 already decided, 0 refused").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import JsonValue

from bot.flow.service import Service
from bot.render import clicks as render
from bot.render import digest as render_digest
from bot.render import digest_clicks
from bot.render import digest_review as review
from bot.render.digest_clicks import Tally
from bot.slack.publish import SlackPublisher
from store.digests import Digest, DigestNotFound
from store.proposals import (
    AlreadyDecided,
    ApprovalCounted,
    NotApprovable,
    Proposal,
    Status,
    Transitioned,
    TransitionResult,
)
from store.proposals.approvals import counted

__all__ = ["CONCURRENCY", "DigestService"]

log = logging.getLogger(__name__)

#: Items of one click worked on at once (each may execute against its target).
CONCURRENCY = 8

#: The refusal of an item chosen in a modal that the digest does not hold.
NOT_IN_DIGEST = "it is not in this digest"


class DigestService:
    def __init__(
        self, service: Service, clock: Callable[[], datetime], *, publisher: SlackPublisher
    ) -> None:
        self._service = service
        self._digests = service.store.digests()
        self._clock = clock
        self.publisher = publisher

    # --- clicks on the digest's buttons -------------------------------------------------------

    async def approve_all(
        self, digest_id: str, *, user: str, channel: str | None, since: datetime | None = None
    ) -> Tally | None:
        """Approve every item still pending, each as if its own Approve was clicked. ``since``:
        the moment of the recorded click applied here (bot/digests/recorded.py)."""
        digest = await self._digest(digest_id, user=user, channel=channel)
        if digest is None:
            return None
        formats = self.publisher.formats_of(digest.operation)
        if not render_digest.shown_whole(digest, now=self._clock(), formats=formats):
            # the message offers no Approve all then; a click from an older message is refused
            await self._tell(digest, channel, user, render.refusal_text(NOT_SHOWN_WHOLE))
            return None
        return await self._approve(digest, digest.items, user=user, channel=channel, since=since)

    async def begin_reject_all(
        self, digest_id: str, *, user: str, channel: str | None, trigger_id: str
    ) -> None:
        """Ask for one reason in a modal, unless the clicker may decide none of the items."""

        def view(digest: Digest) -> dict[str, Any]:
            what = self.publisher.described(digest.operation)
            return digest_clicks.reject_modal(digest, len(_pending(digest.items)), what)

        await self._open_deciding(digest_id, view, user, channel, trigger_id, audit_as="reject")

    async def begin_choose(
        self, digest_id: str, *, user: str, channel: str | None, trigger_id: str
    ) -> None:
        """Open the modal listing the pending items to choose from."""

        def view(digest: Digest) -> dict[str, Any]:
            return digest_clicks.choose_modal(digest, _pending(digest.items))

        await self._open_deciding(digest_id, view, user, channel, trigger_id, audit_as=None)

    async def begin_review(
        self, digest_id: str, *, user: str, channel: str | None, trigger_id: str
    ) -> None:
        """Open Review all…: every pending item in full, selected, on its first page."""

        def view(digest: Digest) -> dict[str, Any]:
            formats = self.publisher.formats_of(digest.operation)
            return review.review_modal(digest, review.review_state(digest), formats)

        await self._open_deciding(digest_id, view, user, channel, trigger_id, audit_as=None)

    async def review_page(
        self,
        state: review.ReviewState,
        on_page: Mapping[int, bool],
        *,
        page: int,
        user: str,
        view_id: str,
        view_hash: str | None,
    ) -> None:
        """Previous or Next in a review: the boxes of the page left are remembered, ``page``
        is shown in the same modal."""
        digest = await self._reviewed(state, user)
        if digest is not None:
            formats = self.publisher.formats_of(digest.operation)
            view = review.review_modal(digest, state.selected(on_page).at_page(page), formats)
            await self.publisher.update_view(view_id, view_hash, view)

    async def approve_reviewed(
        self,
        state: review.ReviewState,
        on_page: Mapping[int, bool],
        *,
        user: str,
        since: datetime | None = None,
    ) -> Tally | None:
        """Approve every reviewed item still selected, each on its own and only while its
        binding hash is the one the review showed; the clicker is told, by number, each item
        that was not approved and why (it stays pending)."""
        digest = await self._reviewed(state, user)
        if digest is None:
            return None
        state = state.selected(on_page)
        tally = Tally("approved", left_out=len(state.left_out))
        via: dict[str, JsonValue] = {"via": "digest_review", "digest_id": digest.id}
        reviewed = dict(state.items)
        chosen = [digest.items[p] for p in state.places if p not in state.left_out]
        numbers = {p.id: n for n, p in enumerate(digest.items, 1)}

        async def one(proposal: Proposal) -> None:
            number = numbers[proposal.id]
            if not proposal.binding_hash.startswith(reviewed[number - 1]):
                await self._service.audit_refusal(
                    proposal, user=user, verb="approve", why=CHANGED_SINCE_REVIEW
                )
                result: TransitionResult | str = CHANGED_SINCE_REVIEW
            else:
                result = await self._service.approve_item(proposal, user=user, via=via, since=since)
            _count(tally, result)
            what = _not_done(result)
            if what is not None:
                tally.named.append((number, proposal.preview.title, what))

        await self._each(chosen, one, tally)
        await self._tell(digest, None, user, digest_clicks.tally_text(tally))
        return tally

    # --- the modals, submitted ----------------------------------------------------------------

    async def approve(
        self,
        digest_id: str,
        chosen: Sequence[str],
        *,
        user: str,
        since: datetime | None = None,
    ) -> Tally | None:
        """Approve the chosen items (ids from the modal), each on its own; an item the message
        does not show in full is refused (Review all… shows it whole and approves it)."""
        digest = await self._digest(digest_id, user=user, channel=None)
        if digest is None:
            return None
        items, unknown = _chosen(digest, chosen)
        formats = self.publisher.formats_of(digest.operation)
        cut = render_digest.cut_items(digest, now=self._clock(), formats=formats)
        return await self._approve(
            digest, items, user=user, channel=None, unknown=unknown, unread=cut, since=since
        )

    async def reject(
        self,
        digest_id: str,
        chosen: Sequence[str] | None,
        *,
        user: str,
        reason: str,
        since: datetime | None = None,
    ) -> Tally | None:
        """Reject the chosen items (None: all of them) with one reason, each on its own."""
        digest = await self._digest(digest_id, user=user, channel=None)
        if digest is None:
            return None
        items, unknown = (digest.items, []) if chosen is None else _chosen(digest, chosen)
        tally = Tally("rejected")
        if unknown:
            tally.refused[NOT_IN_DIGEST] = len(unknown)

        async def one(proposal: Proposal) -> None:
            result = await self._service.reject_item(
                proposal, user=user, reason=reason, since=since
            )
            _count(tally, result)

        await self._each(items, one, tally)
        await self._tell(digest, None, user, digest_clicks.tally_text(tally))
        return tally

    async def tell(self, digest_id: str, *, user: str, channel: str | None, text: str) -> None:
        """A private answer to a clicker: where they clicked, else in the digest's channel."""
        if channel is None:  # a modal: answer in the digest's channel
            try:
                channel = (await self._digests.get_digest(digest_id)).channel
            except DigestNotFound:
                return
        await self.publisher.tell(None, channel, user, text)

    # --- helpers ----------------------------------------------------------------------------

    async def _approve(
        self,
        digest: Digest,
        items: Sequence[Proposal],
        *,
        user: str,
        channel: str | None,
        unknown: Collection[str] = (),
        unread: Collection[str] = (),
        since: datetime | None = None,
    ) -> Tally:
        """Approve ``items``, each on its own, but those of ``unread`` (not shown in full where
        they were chosen), which are refused and the refusal audited."""
        tally = Tally("approved")
        if unknown:
            tally.refused[NOT_IN_DIGEST] = len(unknown)

        async def one(proposal: Proposal) -> None:
            if proposal.id in unread:
                await self._service.audit_refusal(
                    proposal, user=user, verb="approve", why=NOT_SHOWN_IN_FULL
                )
                _count(tally, NOT_SHOWN_IN_FULL)
                return
            _count(tally, await self._service.approve_item(proposal, user=user, since=since))

        await self._each(items, one, tally)
        await self._tell(digest, channel, user, digest_clicks.tally_text(tally))
        return tally

    async def _each(
        self,
        items: Sequence[Proposal],
        one: Callable[[Proposal], Awaitable[None]],
        tally: Tally,
    ) -> None:
        """``one`` for every item, at most CONCURRENCY at once; then expire what had expired."""
        room = asyncio.Semaphore(CONCURRENCY)

        async def bounded(proposal: Proposal) -> None:
            async with room:
                try:
                    await one(proposal)
                except Exception:  # one item's failure must not stop the others
                    log.exception("deciding digest item %s failed", proposal.id)
                    tally.refused["something went wrong; its row shows where it stands"] += 1

        await asyncio.gather(*(bounded(p) for p in items))
        now = self._clock()
        if any(p.expires_at is not None and p.expires_at <= now for p in _pending(items)):
            await self._service.expire_due()

    async def _digest(self, digest_id: str, *, user: str, channel: str | None) -> Digest | None:
        try:
            return await self._digests.get_digest(digest_id)
        except DigestNotFound:
            log.info("click on unknown digest %r by %s", digest_id, user)
            if channel:
                text = render.refusal_text("this digest does not exist")
                await self.publisher.tell(None, channel, user, text)
            return None

    async def _open_deciding(
        self,
        digest_id: str,
        view: Callable[[Digest], dict[str, Any]],
        user: str,
        channel: str | None,
        trigger_id: str,
        *,
        audit_as: str | None,
    ) -> None:
        """Open a deciding modal (``view`` of the digest) for ``user``, if they may decide one of
        its pending items (the checks of a click on each); otherwise tell them why.

        ``audit_as``: the verb each item's refusal is audited as, as a click on the item alone
        would be: Reject all… is the digest's Reject, and a refused Reject is audited. Choose…
        and Review all… are no one verb (Choose… approves or rejects; Review all… is read in
        full first), so their refusal is told and not audited: what their submissions decide
        is checked, and each refusal audited, item by item."""
        digest = await self._digest(digest_id, user=user, channel=channel)
        if digest is None:
            return
        pending = _pending(digest.items)
        if not pending:
            await self._tell(digest, channel, user, "Every proposal of this digest is decided.")
            return
        refusals = [await self._service.item_refusal(p, user) for p in pending]
        if any(why is None for why in refusals):
            await self.publisher.open_view(None, trigger_id, view(digest))
            return
        for proposal, why in zip(pending, refusals, strict=True):
            if audit_as is not None and why is not None:
                await self._service.audit_refusal(proposal, user=user, verb=audit_as, why=why)
        await self._tell(digest, channel, user, render.refusal_text(str(refusals[0])))

    async def _reviewed(self, state: review.ReviewState, user: str) -> Digest | None:
        """The digest a review's state names, if the state fits it (else None, logged)."""
        digest = await self._digest(state.digest, user=user, channel=None)
        if digest is not None and max(state.places) >= len(digest.items):
            log.warning("review of digest %s by %s names items it lacks", digest.id, user)
            await self._tell(digest, None, user, render.refusal_text(NOT_IN_DIGEST))
            return None
        return digest

    async def _tell(self, digest: Digest, channel: str | None, user: str, text: str) -> None:
        await self.publisher.tell(None, channel or digest.channel, user, text)


#: Why Approve all is refused on a digest not shown in full.
NOT_SHOWN_WHOLE = (
    "some proposals of this digest are not shown in full, so they cannot be approved all at "
    "once. Use Review all… to read each in full and approve the ones you keep selected."
)


#: Why Choose… does not approve an item the digest's message does not show in full.
NOT_SHOWN_IN_FULL = (
    "it is not shown in full in the digest, so Choose… does not approve it; use Review all… "
    "to read it whole and approve it"
)


#: Why a reviewed item is not approved when its contract is no longer the one reviewed.
CHANGED_SINCE_REVIEW = "it changed since you reviewed it; review it again"


def _not_done(result: TransitionResult | str) -> str | None:
    """What became of an item this click did not decide, in words, or None if it did."""
    if isinstance(result, str):
        return f"not approved: {result}. It stays pending."
    if isinstance(result, NotApprovable):
        return f"not approved: {result.reason}."
    if isinstance(result, AlreadyDecided):
        return f"already decided: {result.proposal.status.value.replace('_', ' ')}."
    if isinstance(result, ApprovalCounted):
        return (
            f"your approval is counted ({len(counted(result.proposal))} of "
            f"{result.proposal.quorum}); it stays pending until more approvers approve it."
        )
    return None


def _pending(items: Sequence[Proposal]) -> list[Proposal]:
    return [p for p in items if p.status is Status.PENDING]


def _chosen(digest: Digest, chosen: Sequence[str]) -> tuple[list[Proposal], list[str]]:
    """The digest's items among ``chosen`` (in the digest's order), and the ids it lacks."""
    wanted = set(chosen)
    items = [p for p in digest.items if p.id in wanted]
    held = {p.id for p in digest.items}
    return items, [i for i in dict.fromkeys(chosen) if i not in held]


def _count(tally: Tally, result: TransitionResult | str) -> None:
    """One item's result, added to the clicker's tally."""
    if isinstance(result, str):
        tally.refused[result] += 1
    elif isinstance(result, Transitioned):
        tally.done += 1
    elif isinstance(result, ApprovalCounted):
        tally.counted += 1
    elif isinstance(result, AlreadyDecided):
        tally.already += 1
    elif isinstance(result, NotApprovable):
        tally.refused[result.reason] += 1
