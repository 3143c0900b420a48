"""Answers every backend gives alike: why a transition changed nothing; whether the head agrees.

Every backend words its refusals and its audit verdicts the same way; they live here once.
"""

from __future__ import annotations

from datetime import datetime

from store.audit import GENESIS
from store.base import (
    AlreadyDecided,
    AuditEntry,
    AuditReport,
    NotApprovable,
    Proposal,
    TransitionResult,
)
from store.lifecycle import FINAL, Status

__all__ = ["check_head", "not_reconcilable", "refusal"]


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


def check_head(
    report: AuditReport, entries: list[AuditEntry], head: tuple[int, str] | None
) -> AuditReport:
    """``report`` on the chain, completed by comparing its last entry with the stored head.

    The chain alone shows changed, reordered and missing entries up to its last entry; it cannot
    show that entries after it were deleted. The head row, moved in the transaction of every
    append, still names the true last entry, so a log that ends before the head has lost its
    tail (reported as the first missing entry).
    """
    if not report.ok:
        return report
    last_seq, last_hash = (entries[-1].seq, entries[-1].hash) if entries else (0, GENESIS)
    if head is None:
        bad, problem = last_seq + 1, "the audit head row is missing"
    else:
        head_seq, head_hash = head
        if head_seq > last_seq:
            bad = last_seq + 1
            problem = (
                f"entry {bad}: missing; the head of the chain is entry {head_seq} but the log "
                f"ends at entry {last_seq} (entries were removed from the end)"
            )
        elif head_seq < last_seq:
            bad = head_seq + 1
            problem = f"entry {bad}: beyond the head of the chain, which ends at entry {bad - 1}"
        elif head_hash != last_hash:
            bad, problem = last_seq, f"entry {last_seq}: its hash differs from the chain's head"
        else:
            return report
    return AuditReport(ok=False, checked=report.checked, first_bad_seq=bad, problem=problem)
