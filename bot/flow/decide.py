"""Decide: Approve, Reject and Extend clicks, a quorum of approvals, and a person's
reconciliation of an uncertain execution.

Each click is checked first (bot/flow/checks.py); the transition is a compare-and-set in the
store; an approval that completes the rule's quorum claims the proposal, and it executes once
(bot/flow/execution.py). Digests decide item by item through the same checks, telling nobody
(``approve_item``, ``reject_item``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from functools import partial

from pydantic import JsonValue

from bot.flow import extensions
from bot.flow.checks import Checks
from bot.flow.core import FlowCore
from bot.flow.execution import Execution
from bot.render import proposal as render
from contracts.canonical import binding_hash
from contracts.outcomes import Outcome, Succeeded, TerminalFailure
from store.proposals import (
    AlreadyDecided,
    ApprovalCounted,
    NotApprovable,
    Proposal,
    Status,
    Transitioned,
    TransitionResult,
)
from store.proposals.approvals import already_approved, approved_since
from store.proposals.reminders import extended_since
from store.proposals.verdicts import reconciled_since, rejected_since

__all__ = ["Decisions"]


class Decisions:
    """The flow's decision stage: the clicks that approve, reject, extend or reconcile; over the
    core, the checks every click takes first, and the execution of what a decision claims."""

    def __init__(self, core: FlowCore, checks: Checks, execution: Execution) -> None:
        self._core = core
        self._checks = checks
        self._execution = execution

    async def approve(
        self,
        proposal_id: str,
        *,
        user: str,
        channel: str | None,
        since: datetime | None = None,
    ) -> Proposal | None:
        """An Approve click: check the clicker, record the approval; once the rule's quorum of
        distinct approvers is reached, claim atomically, execute once, report.

        ``since``: when the recorded click applied here was recorded (bot/flow/clicks.py). The
        clicker's approval made since is that click's own, made by another application of it
        (leased again when its lease ended while this one still ran, or the reverse): found
        when the proposal is read or when the store refuses the approval, nothing is refused,
        told or audited; the application that made it answered (or the message shows it)."""
        made = None if since is None else partial(approved_since, actor=user, since=since)
        proposal = await self._checks.decidable(
            proposal_id, user=user, channel=channel, verb="approve", made=made
        )
        if proposal is None:
            return None
        again = already_approved(proposal, user)
        if again is not None:
            await self._checks.refuse(
                proposal, user=user, channel=channel, verb="approve", why=again
            )
            return None
        result = await self._approve_in_store(proposal, user)
        if isinstance(result, Transitioned):
            self._core.changed(result.proposal)
            return await self._execution.execute(result.proposal)
        if isinstance(result, ApprovalCounted):  # the message shows the progress (outbox)
            self._core.changed(result.proposal)
            text = render.approval_recorded_text(result.proposal)
            await self._core.tell(result.proposal, channel, user, text)
            return result.proposal
        if made is not None and made(result.proposal):  # applied meanwhile by the other
            return None
        if isinstance(result, NotApprovable) and already_approved(result.proposal, user):
            # the same person's two clicks raced: the store counted one and refused the other
            await self._checks.audit_refusal(
                result.proposal, user=user, verb="approve", why=result.reason
            )
        await self._checks.not_claimed(result, user=user, channel=channel)
        return None

    async def _approve_in_store(
        self, proposal: Proposal, user: str, via: Mapping[str, JsonValue] | None = None
    ) -> TransitionResult:
        """Record ``user``'s approval, bound to the hash of the stored contract; the store claims
        the proposal for execution when it completes the quorum."""
        operation_hash = binding_hash(
            proposal.operation, proposal.arguments, proposal.preview.model_dump(mode="json")
        )
        now = self._core.now()
        return await self._core.store.claim_for_execution(
            proposal.id,
            actor=user,
            now=now,
            binding_hash=operation_hash,
            lease_until=self._core.lease_until(now),
            via=via,
        )

    async def begin_reject(
        self, proposal_id: str, *, user: str, channel: str | None, trigger_id: str
    ) -> None:
        """A Reject click: check the clicker, then ask for a reason in a modal."""
        proposal = await self._checks.decidable(
            proposal_id, user=user, channel=channel, verb="reject"
        )
        if proposal is not None:
            await self._core.publisher.open_view(
                proposal, trigger_id, render.reject_modal(proposal)
            )

    async def reject(
        self, proposal_id: str, *, user: str, reason: str, since: datetime | None = None
    ) -> Proposal | None:
        """The reason modal was submitted: check the clicker again, then reject atomically.

        ``since``: as for :meth:`approve`; the clicker's rejection made since is the recorded
        click's own, and it is not told "already decided"."""
        made = None if since is None else partial(rejected_since, actor=user, since=since)
        proposal = await self._checks.decidable(
            proposal_id, user=user, channel=None, verb="reject", made=made
        )
        if proposal is None:
            return None
        result = await self._core.store.reject(
            proposal.id, actor=user, reason=reason, now=self._core.now()
        )
        if isinstance(result, Transitioned):
            self._core.changed(result.proposal)
            return result.proposal
        if made is not None and made(result.proposal):  # applied meanwhile by the other
            return None
        await self._checks.not_claimed(result, user=user, channel=None)
        return None

    async def approve_item(
        self,
        proposal: Proposal,
        *,
        user: str,
        via: Mapping[str, JsonValue] | None = None,
        since: datetime | None = None,
    ) -> TransitionResult | str:
        """What an Approve click on ``proposal`` alone does, but telling nobody: the same checks
        (a refusal is audited and its reason returned), then the claim, and when it wins the
        execution (Transitioned then carries the outcome). ``via`` says where the approval was
        given, in its audit entry (Store.claim_for_execution).

        ``since``: as for :meth:`approve`, the moment of the recorded digest click applied
        here. The clicker's approval made since, found in ``proposal`` or when the store
        refuses the approval, is that click's own: nothing is refused or audited, and it is
        answered as this click's (counted, or Transitioned when it claimed the proposal)."""
        made = None if since is None else partial(approved_since, actor=user, since=since)
        if made is not None and made(proposal):
            return _own_approval(proposal)
        if proposal.status is not Status.PENDING:
            return AlreadyDecided(proposal)
        why = await self._checks.item_refusal(proposal, user)
        why = why or already_approved(proposal, user)
        if why is not None:
            await self._checks.audit_refusal(proposal, user=user, verb="approve", why=why)
            return why
        result = await self._approve_in_store(proposal, user, via)
        if isinstance(result, Transitioned):
            self._core.changed(result.proposal)
            return Transitioned(await self._execution.execute(result.proposal))
        if isinstance(result, ApprovalCounted):
            self._core.changed(result.proposal)
        elif made is not None and made(result.proposal):  # applied meanwhile by the other
            return _own_approval(result.proposal)
        return result

    async def reject_item(
        self, proposal: Proposal, *, user: str, reason: str, since: datetime | None = None
    ) -> TransitionResult | str:
        """What a submitted reject modal for ``proposal`` alone does, but telling nobody.
        ``since``: as for :meth:`approve_item`; the clicker's rejection made since is answered
        as this click's (Transitioned)."""
        made = None if since is None else partial(rejected_since, actor=user, since=since)
        if made is not None and made(proposal):
            return Transitioned(proposal)
        if proposal.status is not Status.PENDING:
            return AlreadyDecided(proposal)
        why = await self._checks.item_refusal(proposal, user)
        if why is not None:
            await self._checks.audit_refusal(proposal, user=user, verb="reject", why=why)
            return why
        result = await self._core.store.reject(
            proposal.id, actor=user, reason=reason, now=self._core.now()
        )
        if isinstance(result, Transitioned):
            self._core.changed(result.proposal)
        elif made is not None and made(result.proposal):  # applied meanwhile by the other
            return Transitioned(result.proposal)
        return result

    async def extend(
        self,
        proposal_id: str,
        *,
        user: str,
        channel: str | None,
        since: datetime | None = None,
    ) -> Proposal | None:
        """An Extend click: the same checks as Approve, then the one extension the rule allows
        (bot/flow/extensions.py). A refusal is told to the clicker alone and audited.

        ``since``: as for :meth:`approve`; the clicker's extension made since is the recorded
        click's own, and it is not told or audited as "already extended once"."""
        made = None if since is None else partial(extended_since, actor=user, since=since)
        proposal = await self._checks.decidable(
            proposal_id, user=user, channel=channel, verb="extend", made=made
        )
        if proposal is None:
            return None
        now = self._core.now()
        until = extensions.extension_until(self._core.settings.policy, proposal, now)
        if isinstance(until, str):
            await self._checks.refuse(
                proposal, user=user, channel=channel, verb="extend", why=until
            )
            return None
        result = await self._core.store.extend(proposal.id, actor=user, until=until, now=now)
        if isinstance(result, Transitioned):
            self._core.changed(result.proposal)
            return result.proposal
        if made is not None and made(result.proposal):  # applied meanwhile by the other
            return None
        if isinstance(result, NotApprovable):
            await self._checks.audit_refusal(proposal, user=user, verb="extend", why=result.reason)
        if isinstance(result, AlreadyDecided | NotApprovable):
            await self._checks.not_claimed(result, user=user, channel=channel)
        return None

    async def _uncertain(
        self,
        proposal_id: str,
        *,
        user: str,
        channel: str | None,
        verb: str,
        made: Callable[[Proposal], bool] | None,
    ) -> Proposal | None:
        """The proposal if its execution is uncertain (it needs reconciliation) and ``user`` may
        answer for it now (the Approve checks); otherwise None, ``user`` told why (nothing told
        when it shows ``made``: this very click's answer, made by another application)."""
        return await self._checks.decidable(
            proposal_id,
            user=user,
            channel=channel,
            verb=verb,
            expect=Status.NEEDS_RECONCILIATION,
            made=made,
        )

    async def reconcile(
        self,
        proposal_id: str,
        *,
        user: str,
        channel: str | None,
        resolution: str,
        since: datetime | None = None,
    ) -> Proposal | None:
        """Record what really happened to an uncertain execution: 'succeeded' or 'failed'.

        ``since``: as for :meth:`approve`; the clicker's answer for the execution made since is
        the recorded click's own, and it is not told "already decided"."""
        made = None if since is None else partial(_recorded_since, user, since, resolution)
        proposal = await self._uncertain(
            proposal_id, user=user, channel=channel, verb="reconcile", made=made
        )
        if proposal is None:
            return None
        note = f"recorded by <@{user}> after checking the target"
        outcome = _recorded(user, resolution, proposal.id)
        result = await self._core.store.resolve_reconciliation(
            proposal.id, actor=user, outcome=outcome, note=note, now=self._core.now()
        )
        if isinstance(result, Transitioned):
            self._core.changed(result.proposal)
            return result.proposal
        if made is not None and made(result.proposal):  # applied meanwhile by the other
            return None
        await self._checks.not_claimed(result, user=user, channel=channel)
        return None

    async def retry(
        self,
        proposal_id: str,
        *,
        user: str,
        channel: str | None,
        since: datetime | None = None,
    ) -> Proposal | None:
        """Try an uncertain execution again, with the same idempotency key.

        ``since``: as for :meth:`approve`; the clicker's retry made since is the recorded
        click's own (the application that made it executes it): it is neither run again nor
        told "it is being executed right now" or "already decided"."""
        made = None if since is None else partial(_retried_since, user, since)
        proposal = await self._uncertain(
            proposal_id, user=user, channel=channel, verb="retry", made=made
        )
        if proposal is None:
            return None
        now = self._core.now()
        result = await self._core.store.retry_execution(
            proposal.id, actor=user, now=now, lease_until=self._core.lease_until(now)
        )
        if isinstance(result, Transitioned):
            self._core.changed(result.proposal)
            return await self._execution.execute(result.proposal)
        if made is not None and made(result.proposal):  # applied meanwhile by the other
            return None
        await self._checks.not_claimed(result, user=user, channel=channel)
        return None


def _recorded(user: str, resolution: str, proposal_id: str) -> Outcome:
    """The outcome ``user`` records for an uncertain execution: it happened ('succeeded'), or
    it did not."""
    if resolution == "succeeded":
        return Succeeded(result={"recorded_by": user})
    return TerminalFailure(
        detail=f"recorded as not having happened by {user}", correlation_id=proposal_id
    )


def _recorded_since(user: str, since: datetime, resolution: str, proposal: Proposal) -> bool:
    """Whether ``user``'s answer for ``proposal``'s execution made since ``since`` is this
    ``resolution`` (a reconciliation click's own), not a Retry or the other button of theirs:
    those are another click, answered honestly."""
    return reconciled_since(proposal, user, since) and proposal.outcome == _recorded(
        user, resolution, proposal.id
    )


def _retried_since(user: str, since: datetime, proposal: Proposal) -> bool:
    """Whether ``user``'s answer for ``proposal``'s execution made since ``since`` is a Retry
    (a Retry click's own), not a record of what happened, which another click of theirs made."""
    return reconciled_since(proposal, user, since) and not any(
        _recorded_since(user, since, resolution, proposal) for resolution in ("succeeded", "failed")
    )


def _own_approval(proposal: Proposal) -> TransitionResult:
    """The answer to a digest click whose approval of ``proposal`` another application of the
    same click made: counted while the proposal waits for more approvers, else Transitioned
    (it completed the quorum and claimed the proposal)."""
    if proposal.status is Status.PENDING:
        return ApprovalCounted(proposal)
    return Transitioned(proposal)
