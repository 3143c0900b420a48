"""Reviewing automatic approvals after the fact, to measure how often the automation misses.

``[approvals] review_sample`` (0 to 1) of the calls approved without asking anyone (by a policy
``auto`` rule or by a standing rule) are sampled, decided by the proposal id alone
(contracts.standing.sampled). A sampled one carries ``review_sampled``, and its creation writes a
slack.review outbox entry in the same transaction; :meth:`Reviews.deliver` posts it to
``review_channel`` with its preview, why it ran without asking and its outcome (waiting briefly
for the outcome when the execution is still under way), and buttons "Looks right" / "Should have
been asked". Anyone holding an approver role of the policy may answer, except the people behind
the call (its requester, its agent's owners, its editors) and, for a call a standing rule
approved, the rule's granter, who approved it (a reviewer is never the approver); the first
verdict is recorded, once, and audited. ``countersign policy review-stats`` reports the miss
rate per rule and standing rule.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import IO, Final

from bot.flow import deciders
from bot.flow.lineage import editors_of
from bot.render import clicks as render
from bot.render import standing as render_standing
from bot.settings import Settings
from bot.slack.publish import DeliveryFailed
from bot.standing.deciding import StandingDecisions
from contracts.policy import AskRule
from contracts.redaction import shown_store_url
from store.base import StoreError
from store.open import open_store
from store.proposals import Delivery, Proposal, ProposalNotFound, Status
from store.protocol import Store
from store.standing import (
    AlreadyReviewed,
    Reviewed,
    ReviewStats,
    StandingRuleNotFound,
    Verdict,
)

__all__ = ["REVIEW_METADATA_EVENT", "Reviews", "print_review_stats", "review_stats_command"]

log = logging.getLogger(__name__)

#: What a review post carries in its metadata, to find it again after a lost answer.
REVIEW_METADATA_EVENT: Final = "countersign_review"
#: Attempts that wait for a running execution's outcome before posting without it.
WAIT_FOR_OUTCOME: Final = 20
#: Seconds between those attempts.
OUTCOME_POLL: Final = 0.5


class Reviews(StandingDecisions):
    """The review posts of sampled automatic approvals, and their verdict clicks."""

    @property
    def _store(self) -> Store:
        return self._service.store

    # --- the outbox's slack.review ---------------------------------------------------------------

    async def deliver(self, delivery: Delivery) -> None:
        """Post one sampled automatic approval to the review channel, once."""
        channel = self._service.settings.approvals.review_channel
        if channel is None:
            log.warning("review of %s not posted: no review_channel", delivery.proposal_id)
            return
        proposal = await self._store.get_proposal(delivery.proposal_id)
        if proposal.status is Status.EXECUTING and delivery.attempts < WAIT_FOR_OUTCOME:
            # posted with its outcome: the execution under way records it in a moment
            raise DeliveryFailed("waiting for the outcome", retry_after=OUTCOME_POLL)
        marker = {"proposal_id": proposal.id}
        if delivery.attempts > 1 and await self._posted(channel, proposal, marker):
            return  # an earlier attempt posted it; its answer was lost
        message = render_standing.review_message(
            proposal, await self._store.standing().get_review(proposal.id)
        )
        await self._publisher.post_message(
            channel, message, event=REVIEW_METADATA_EVENT, payload=marker
        )

    async def _posted(self, channel: str, proposal: Proposal, marker: dict[str, str]) -> bool:
        """Whether the review channel already has this proposal's review post (its newest
        page)."""
        found = await self._publisher.find_marked(
            "conversations.history",
            event_type=REVIEW_METADATA_EVENT,
            marked=lambda payload: payload == marker,
            pages=1,
            channel=channel,
            oldest=f"{proposal.created_at.timestamp() - 60:.6f}",
        )
        return found is not None

    # --- a verdict click -------------------------------------------------------------------------

    async def verdict(
        self,
        proposal_id: str,
        *,
        user: str,
        verdict: Verdict,
        channel: str | None,
        message_ts: str | None,
    ) -> Reviewed | None:
        """Record ``user``'s verdict once; show it on the review post; tell them privately."""
        store = self._store
        try:
            proposal = await store.get_proposal(proposal_id)
        except ProposalNotFound:
            await self._tell(None, channel, user, "this proposal does not exist")
            return None
        why = await self._refusal(proposal, user)
        if why is not None:
            await self._service.audit_refusal(proposal, user=user, verb="review", why=why)
            await self._tell(proposal, channel, user, why)
            return None
        try:
            result = await store.standing().record_review(
                proposal.id, reviewer=user, verdict=verdict, now=self._clock()
            )
        except (ValueError, StoreError) as error:
            await self._tell(proposal, channel, user, str(error))
            return None
        if isinstance(result, AlreadyReviewed):
            first = result.review
            await self._tell(
                proposal,
                channel,
                user,
                f"{first.reviewer} already reviewed it ({first.verdict.replace('_', ' ')})",
            )
            return None
        if channel is not None and message_ts is not None:
            shown = render_standing.review_message(proposal, result)
            await self._publisher.update(
                proposal, channel, message_ts, text=shown["text"], blocks=shown["blocks"]
            )
        return result

    async def _refusal(self, proposal: Proposal, user: str) -> str | None:
        """Why ``user`` may not judge ``proposal``: the checks of any decision
        (bot/flow/deciders.py), with every approver role of the policy (as configured now) in
        place of the rule's own; nobody behind the call (its requester, its agent's owners, the
        editors of an edit the policy approved) may, nor the granter of the standing rule that
        approved it: they approved every call it covers, and a reviewer is not the approver."""
        if not proposal.review_sampled:
            return "this call was not sampled for review"
        granted_by: str | None = None
        if proposal.standing_rule_id is not None:
            try:
                grant = await self._store.standing().get_standing_rule(proposal.standing_rule_id)
            except StandingRuleNotFound:  # its granter is unknown: fail closed
                return (
                    f"the standing rule {proposal.standing_rule_id} that approved this call "
                    "cannot be found, so its granter cannot be told apart from other reviewers; "
                    "nobody can review it"
                )
            granted_by = grant.created_by
        settings = self._service.settings
        roles = sorted(
            {
                role
                for rule in settings.policy.rules
                if isinstance(rule, AskRule)
                for role in rule.approvers
            }
        )
        return await deciders.refusal(
            settings,
            self._service.directory,
            user,
            roles=roles,
            agent=proposal.agent,
            requested_by=proposal.requested_by,
            editors=await editors_of(self._store, proposal),
            granted_by=granted_by,
        )

    async def _tell(
        self, proposal: Proposal | None, channel: str | None, user: str, why: str
    ) -> None:
        if channel is not None:
            await self._publisher.tell(proposal, channel, user, render.refusal_text(why))


# --- countersign policy review-stats ----------------------------------------------------------


def print_review_stats(stats: Sequence[ReviewStats], *, sample: float, out: IO[str]) -> None:
    """The table: one line per policy rule and standing rule, then the total."""
    print(f"review sample: {sample:g} of automatic approvals", file=out)
    if not stats:
        print("no automatic approval has been sampled for review yet", file=out)
        return
    header = ("rule", "standing rule", "sampled", "reviewed", "flagged", "miss rate")
    total = ReviewStats(
        rule_id="total",
        standing_rule_id=None,
        sampled=sum(s.sampled for s in stats),
        reviewed=sum(s.reviewed for s in stats),
        flagged=sum(s.flagged for s in stats),
    )
    rows = [
        (
            s.rule_id or "-",
            "" if s is total else s.standing_rule_id or "-",
            str(s.sampled),
            str(s.reviewed),
            str(s.flagged),
            "-" if s.miss_rate is None else f"{s.miss_rate:.1%}",
        )
        for s in (*stats, total)
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for row in (header, *rows):
        cells = [
            cell.ljust(width) if i < 2 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells).rstrip(), file=out)


async def review_stats_command(settings: Settings, out: IO[str], err: IO[str]) -> int:
    """``countersign policy review-stats``."""
    try:
        store = await open_store(settings.store.url, pool_size=settings.store.pool_size)
    except StoreError as error:
        print(f"cannot open the store {shown_store_url(settings.store.url)}: {error}", file=err)
        return 2
    try:
        stats = await store.standing().review_stats()
    finally:
        await store.close()
    print_review_stats(stats, sample=settings.approvals.review_sample, out=out)
    return 0
