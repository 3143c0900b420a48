"""Approvals towards a quorum: the rules, and the approval verb written once for every backend.

Each approval is bound to the binding hash its approver saw; only approvals bound to the
proposal's own binding hash count. An approval is one transaction: the proposal is read (on
PostgreSQL, its row locked first, so approvals of one proposal from any number of connections and
instances queue there and exactly one completes the quorum; on SQLite the write transaction holds
the one write lock), the approval refused or recorded, the approvals counted, and either the
compare-and-set pending -> executing made (the quorum is reached) or the progress audited and
its message's update queued. Lock order stays proposal row first, then the audit head.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from pydantic import JsonValue

from store.backend import Backend
from store.base import StoreError
from store.proposals.lifecycle import Effect, Status
from store.proposals.outbox import enqueue, enqueue_effects
from store.proposals.records import (
    Approval,
    ApprovalCounted,
    NotApprovable,
    Proposal,
    ProposalNotFound,
    Transitioned,
    TransitionResult,
)
from store.proposals.rows import proposal_from_row, with_approvals
from store.proposals.verdicts import refusal
from store.rows import aware
from store.shield import finish_even_if_cancelled

__all__ = [
    "APPROVAL_RECORDED",
    "ApprovalVerbs",
    "already_approved",
    "approval_refusal",
    "approved_detail",
    "approved_since",
    "counted",
    "missing",
    "progress_effects",
    "recorded_detail",
]

#: The audit event of an approval that does not yet complete the quorum.
APPROVAL_RECORDED = "approval_recorded"


def counted(proposal: Proposal) -> tuple[Approval, ...]:
    """The approvals that count: those bound to the proposal's binding hash, oldest first."""
    return tuple(a for a in proposal.approvals if a.binding_hash == proposal.binding_hash)


def missing(proposal: Proposal) -> int:
    """How many more approvals the proposal needs."""
    return max(proposal.quorum - len(counted(proposal)), 0)


def already_approved(proposal: Proposal, actor: str) -> str | None:
    """Why ``actor`` may not approve ``proposal`` again, or None if they have not yet."""
    if not any(a.approver == actor for a in proposal.approvals):
        return None
    return f"you already approved this; {missing(proposal)} more approval(s) needed"


def approved_since(proposal: Proposal, actor: str, since: datetime) -> bool:
    """Whether ``actor``'s approval of ``proposal`` was made at or after ``since`` (a recorded
    click's moment: an approval made since is that click's own, bot/flow/clicks.py)."""
    return any(a.approver == actor and a.approved_at >= since for a in proposal.approvals)


def approval_refusal(
    current: Proposal, *, actor: str, now: datetime, binding_hash: str
) -> TransitionResult | None:
    """Why ``actor``'s approval of ``current`` (read under lock) changes nothing, or None."""
    open_now = (
        current.status is Status.PENDING
        and (current.expires_at is None or current.expires_at > now)
        and current.binding_hash == binding_hash
    )
    if not open_now:
        return refusal(current, now, binding_hash)
    again = already_approved(current, actor)
    return None if again is None else NotApprovable(current, again)


def progress_effects(proposal: Proposal) -> list[Effect]:
    """The outbox effects of an approval that leaves the proposal pending: its message shows
    the progress (only proposals that ask in a channel have one)."""
    return [Effect.SLACK_UPDATE] if proposal.channel is not None else []


def _approvers(approvals: Iterable[Approval]) -> list[JsonValue]:
    return [a.approver for a in approvals]


def recorded_detail(proposal: Proposal, approval: Approval) -> dict[str, JsonValue]:
    """The audit detail of an approval recorded short of the quorum."""
    return {
        "approver": approval.approver,
        "binding_hash": approval.binding_hash,
        "count": len(counted(proposal)),
        "quorum": proposal.quorum,
    }


def approved_detail(proposal: Proposal, binding_hash: str) -> dict[str, JsonValue]:
    """The audit detail of the approval that completes the quorum (``proposal`` with every
    approval, read before the transition)."""
    return {
        "binding_hash": binding_hash,
        "approvers": _approvers(counted(proposal)),
        "quorum": proposal.quorum,
    }


class ApprovalVerbs(Backend):
    """The Store protocol's approval verb, written once over the backend's transactions."""

    @finish_even_if_cancelled
    async def claim_for_execution(
        self,
        proposal_id: str,
        *,
        actor: str,
        now: datetime,
        binding_hash: str,
        lease_until: datetime,
        via: Mapping[str, JsonValue] | None = None,
    ) -> TransitionResult:
        now, lease_until = aware(now, field="now"), aware(lease_until, field="lease_until")
        async with self.tx(write=True) as tx:
            row = await tx.one("lock_proposal", id=proposal_id)
            if row is None:
                raise ProposalNotFound(f"no proposal has id {proposal_id!r}")
            [current] = await with_approvals(tx, [proposal_from_row(row)])
            refused = approval_refusal(current, actor=actor, now=now, binding_hash=binding_hash)
            if refused is not None:
                return refused
            await tx.execute(
                "insert_approval",
                proposal_id=proposal_id,
                approver=actor,
                binding_hash=binding_hash,
                now=now,
            )
            [recorded] = await with_approvals(tx, [current], every=True)  # with the new one
            if len(counted(recorded)) < recorded.quorum:
                [approval] = [a for a in recorded.approvals if a.approver == actor]
                detail = {**recorded_detail(recorded, approval), **(via or {})}
                await tx.append_audit(now, proposal_id, actor, APPROVAL_RECORDED, detail)
                await enqueue(tx, recorded, progress_effects(recorded), now)
                return ApprovalCounted(recorded)
            row = await tx.one(
                "claim_at_quorum",
                id=proposal_id,
                actor=actor,
                now=now,
                lease_until=lease_until,
                binding_hash=binding_hash,
            )
            if row is None:  # the proposal is locked since the read: nothing can have changed
                raise StoreError(f"proposal {proposal_id!r} changed during its approval")
            detail = {**approved_detail(recorded, binding_hash), **(via or {})}
            await tx.append_audit(now, proposal_id, actor, "approved", detail)
            return Transitioned(await enqueue_effects(tx, row, now))
