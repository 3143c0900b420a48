"""Answers every backend gives alike: why a transition on a proposal changed nothing.

Every backend words its refusals the same way; they live here once.
"""

from __future__ import annotations

from datetime import datetime

from store.proposals.lifecycle import FINAL, Status
from store.proposals.records import AlreadyDecided, NotApprovable, Proposal, TransitionResult

__all__ = ["not_reconcilable", "reconciled_since", "refusal", "rejected_since"]


def rejected_since(proposal: Proposal, actor: str, since: datetime) -> bool:
    """Whether ``actor`` rejected ``proposal`` at or after ``since`` (a recorded click's moment:
    a rejection made since is that click's own, bot/flow/clicks.py)."""
    return (
        proposal.status is Status.REJECTED
        and proposal.decided_by == actor
        and proposal.decided_at is not None
        and proposal.decided_at >= since
    )


def reconciled_since(proposal: Proposal, actor: str, since: datetime) -> bool:
    """Whether ``actor`` answered for ``proposal``'s uncertain execution (retried it, or recorded
    what happened) at or after ``since`` (a recorded click's moment: an answer made since is that
    click's own, bot/flow/clicks.py)."""
    return (
        proposal.reconciled_by == actor
        and proposal.reconciled_at is not None
        and proposal.reconciled_at >= since
    )


def refusal(current: Proposal, now: datetime, binding_hash: str | None) -> TransitionResult:
    """Why a compare-and-set on a pending proposal found nothing to change."""
    if current.status is not Status.PENDING:
        return AlreadyDecided(current)
    if current.expires_at is not None and current.expires_at <= now:
        return NotApprovable(current, f"expired at {current.expires_at.isoformat()}")
    if binding_hash is not None and binding_hash != current.binding_hash:
        return NotApprovable(
            current,
            f"binding hash {binding_hash!r} does not match the stored contract's "
            f"{current.binding_hash!r}",
        )
    return NotApprovable(current, "the proposal changed during the decision; try again")


def not_reconcilable(current: Proposal) -> TransitionResult:
    """Why a reconciliation (a retry or a person's resolution) found nothing to change."""
    if current.status in FINAL:
        return AlreadyDecided(current)
    if current.status is Status.EXECUTING:
        return NotApprovable(current, "it is being executed right now")
    return NotApprovable(current, f"it does not need reconciliation (it is {current.status.value})")
