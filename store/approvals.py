"""Approvals towards a quorum: what every backend decides alike when someone approves.

Each approval is bound to the binding hash its approver saw; only approvals bound to the
proposal's own binding hash count. The backends record the approval and count in one
transaction (``store/sqlite_approvals.py``, ``store/pg_approvals.py``); the rules live here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from pydantic import JsonValue

from store.base import Approval, NotApprovable, Proposal, TransitionResult
from store.connector import Array, Tx
from store.lifecycle import Effect, Status
from store.rows import approval_from_row
from store.verdicts import refusal

__all__ = [
    "APPROVAL_RECORDED",
    "already_approved",
    "approval_refusal",
    "approved_detail",
    "counted",
    "may_have_approvals",
    "missing",
    "progress_effects",
    "recorded_detail",
    "with_approvals",
]

#: The audit event of an approval that does not yet complete the quorum.
APPROVAL_RECORDED = "approval_recorded"


def may_have_approvals(proposal: Proposal) -> bool:
    """Whether reading ``proposal``'s approvals can find any. Only proposals that asked have
    them, and a pending one that needs a single approval has none yet (that approval moves it
    on): the common submission and its first reads skip the query."""
    return proposal.decision == "ask" and (
        proposal.quorum > 1 or proposal.status is not Status.PENDING
    )


async def with_approvals(
    tx: Tx, proposals: Sequence[Proposal], *, every: bool = False
) -> list[Proposal]:
    """``proposals``, each carrying its approvals: one query for all of them that may have any
    (or for ``every`` one), none when no proposal may."""
    proposals = list(proposals)
    asked = [p.id for p in proposals if every or may_have_approvals(p)]
    if not asked:
        return proposals
    found: dict[str, list[Approval]] = {}
    for row in await tx.all("select_approvals", ids=Array(asked)):
        found.setdefault(row["proposal_id"], []).append(approval_from_row(row))
    return [
        p.model_copy(update={"approvals": tuple(found[p.id])}) if p.id in found else p
        for p in proposals
    ]


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
