"""Where a decision click goes, by its verb: a proposal's verbs (Approve, a rejection's reason,
Extend, Retry, a reconciliation) to the service's decision path (bot/flow/decide.py), the
digests' and escalations' verbs to their feature's :class:`Applier`; what its clicker is told
there; and, for a click leased again, whether its decision is already in the store.

bot/flow/clicks.py records the clicks and applies them in order; this is what applying one, or
answering one, means for each verb.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

from bot.flow.service import Service
from bot.render.clicks import store_away_text, store_lost_text
from store.base import StoreUnavailable
from store.proposals import Proposal, ProposalNotFound, Status
from store.proposals.clicks import PROPOSAL_VERBS, Clicked, ClickVerb, RecordedClick

__all__ = ["Applier", "ClickPaths"]

log = logging.getLogger(__name__)

#: The verbs whose decision paths know the recorded click's own decision (decide.py, ``since``).
_OWN_DECISION: frozenset[ClickVerb] = frozenset({"approve", "reject", "extend"})


class Applier(Protocol):
    """How a feature's decision clicks (a digest's, an escalation's) are applied and answered."""

    async def apply(self, click: Clicked) -> None:
        """Apply the click through its decision path, which checks it and tells the clicker
        what came of it (also for a click that could not be recorded: its subject decided,
        unknown)."""
        ...

    async def tell(self, click: Clicked, text: str) -> None:
        """A private answer to the clicker."""
        ...


class ClickPaths:
    """Each verb's decision path and answers, for :class:`bot.flow.clicks.RecordedDecisions`."""

    def __init__(self, service: Service, appliers: Mapping[ClickVerb, Applier]) -> None:
        self._service = service
        #: the features' verbs (digests, escalations); a proposal's verbs are the service's
        self._appliers = dict(appliers)

    async def decide(self, clicked: Clicked) -> None:
        """The click's decision path: it checks, decides and tells the clicker."""
        subject, user, channel = clicked.subject, clicked.actor, clicked.channel
        # a recorded click's own approval, rejection, extension, retry or reconciliation is not
        # refused (decide.py)
        since = clicked.recorded_at if isinstance(clicked, RecordedClick) else None
        match clicked.verb:
            case "approve":
                await self._service.approve(subject, user=user, channel=channel, since=since)
            case "reject":
                reason = str(clicked.detail.get("reason", ""))
                await self._service.reject(subject, user=user, reason=reason, since=since)
            case "extend":
                await self._service.extend(subject, user=user, channel=channel, since=since)
            case "retry":
                await self._service.retry(subject, user=user, channel=channel, since=since)
            case "reconcile_succeeded" | "reconcile_failed":
                resolution = clicked.verb.removeprefix("reconcile_")
                await self._service.reconcile(
                    subject, user=user, channel=channel, resolution=resolution, since=since
                )
            case _:
                await self._applier(clicked).apply(clicked)

    async def tell(self, clicked: Clicked, proposal: Proposal | None, text: str) -> None:
        """A private answer to the clicker, where their verb's path answers."""
        if clicked.verb in PROPOSAL_VERBS:
            await self._service.tell(proposal, clicked.channel, clicked.actor, text)
        else:
            await self._applier(clicked).tell(clicked, text)

    async def store_away(
        self, clicked: Clicked, error: StoreUnavailable, *, recording: bool
    ) -> None:
        """Tell the clicker the store did not answer: ``recording``, while their click was
        recorded (it may have been), else before (nothing changed)."""
        if clicked.verb in PROPOSAL_VERBS:
            await self._service.store_away(
                clicked.subject,
                user=clicked.actor,
                channel=clicked.channel,
                error=error,
                recording=recording,
            )
            return
        log.warning(
            "%s click on %s by %s not %s: the store did not answer (%s)",
            clicked.verb,
            clicked.subject,
            clicked.actor,
            "confirmed" if recording else "applied",
            error,
        )
        text = store_lost_text() if recording else store_away_text()
        try:
            await self._applier(clicked).tell(clicked, text)
        except StoreUnavailable:
            log.warning("could not tell %s that the store did not answer", clicked.actor)

    async def applied_before(self, click: RecordedClick) -> bool:
        """Whether this click's decision is already in the store: applied by an applier that
        stopped before settling it. Looked at for a Retry or a reconciliation leased before
        (the execution is no longer uncertain); not for Approve, Reject and Extend, whose
        decision paths know the click's own decision wherever they find it (an application
        still running may make it after this look: decide.py, ``since``)."""
        if click.verb not in PROPOSAL_VERBS or click.verb in _OWN_DECISION or click.attempts < 2:
            return False  # a feature's decisions are compare-and-sets its path answers
        try:
            proposal = await self._service.store.get_proposal(click.subject)
        except ProposalNotFound:
            return False  # the decision path tells the clicker it does not exist
        return proposal.status is not Status.NEEDS_RECONCILIATION

    def _applier(self, clicked: Clicked) -> Applier:
        applier = self._appliers.get(clicked.verb)
        if applier is None:
            raise ValueError(f"verb: {clicked.verb!r} has no applier in this service")
        return applier
