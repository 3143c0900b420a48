"""Approvals towards a quorum in the PostgreSQL store: reading them with proposals, approving.

An approval is one transaction that first locks the proposal's row (``SELECT ... FOR UPDATE``):
approvals of one proposal, from any number of connections and instances, queue there, so each
one counts the approvals committed before it and exactly one completes the quorum. Then the
approval is refused or recorded, the approvals counted, and either the compare-and-set pending
-> executing made or the progress audited and its message's update queued. Lock order stays
proposal row first, then the audit head. Rules shared with SQLite are in ``store/approvals.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import asyncpg

from store.approvals import (
    APPROVAL_RECORDED,
    approval_refusal,
    approved_detail,
    counted,
    may_have_approvals,
    progress_effects,
    recorded_detail,
)
from store.base import (
    Approval,
    ApprovalCounted,
    Proposal,
    ProposalNotFound,
    StoreError,
    Transitioned,
    TransitionResult,
)
from store.effects import lane_of
from store.pg_rows import aware, proposal_from_record

if TYPE_CHECKING:
    from store.pg_migrate import Connection
    from store.postgres import PostgresStore

__all__ = ["approve", "with_approvals"]

#: The proposal, locked until the transaction ends: approvals of one proposal queue here.
LOCK_PROPOSAL = "SELECT * FROM proposals WHERE id = $1 FOR UPDATE"

#: The approvals of several proposals, oldest first.
SELECT_APPROVALS = """
SELECT * FROM approvals WHERE proposal_id = ANY($1::text[])
ORDER BY proposal_id, approved_at, approver
"""

#: One person's approval, bound to the hash they saw (the primary key refuses a second one).
INSERT_APPROVAL = """
INSERT INTO approvals (proposal_id, approver, binding_hash, approved_at) VALUES ($1, $2, $3, $4)
"""

#: The approval that completes the quorum: pending, unexpired and bound to the contract the
#: approvers saw -> executing.
CLAIM = """
UPDATE proposals
SET status = 'executing', decided_by = $2, decided_at = $3, updated_at = $3, lease_until = $5
WHERE id = $1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > $3)
  AND binding_hash = $4
RETURNING *
"""

#: An approval short of the quorum changes no status; its message shows the progress.
INSERT_PROGRESS = """
INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at)
VALUES ($1, $2, $3, $4, $5, $5)
"""


def _approval(row: asyncpg.Record) -> Approval:
    return Approval(
        approver=row["approver"],
        binding_hash=row["binding_hash"],
        approved_at=row["approved_at"].astimezone(UTC),
    )


async def with_approvals(
    db: Connection, proposals: Sequence[Proposal], *, every: bool = False
) -> list[Proposal]:
    """``proposals``, each carrying its approvals (one query for all that may have any, or for
    ``every`` one)."""
    proposals = list(proposals)
    asked = [p.id for p in proposals if every or may_have_approvals(p)]
    if not asked:
        return proposals
    found: dict[str, list[Approval]] = {}
    for row in await db.fetch(SELECT_APPROVALS, asked):
        found.setdefault(row["proposal_id"], []).append(_approval(row))
    return [
        p.model_copy(update={"approvals": tuple(found[p.id])}) if p.id in found else p
        for p in proposals
    ]


async def _locked(db: Connection, proposal_id: str) -> Proposal:
    row = await db.fetchrow(LOCK_PROPOSAL, proposal_id)
    if row is None:
        raise ProposalNotFound(f"no proposal has id {proposal_id!r}")
    [proposal] = await with_approvals(db, [proposal_from_record(row)])
    return proposal


async def approve(
    store: PostgresStore,
    proposal_id: str,
    *,
    actor: str,
    now: datetime,
    binding_hash: str,
    lease_until: datetime,
) -> TransitionResult:
    """Store.claim_for_execution on PostgreSQL: record ``actor``'s approval; claim at the
    quorum."""
    at, lease = aware(now, field="now"), aware(lease_until, field="lease_until")
    async with store.transaction() as db:
        current = await _locked(db, proposal_id)
        refused = approval_refusal(current, actor=actor, now=at, binding_hash=binding_hash)
        if refused is not None:
            return refused
        await db.execute(INSERT_APPROVAL, proposal_id, actor, binding_hash, at)
        [recorded] = await with_approvals(db, [current], every=True)  # with the new one
        if len(counted(recorded)) < recorded.quorum:
            [approval] = [a for a in recorded.approvals if a.approver == actor]
            detail = recorded_detail(recorded, approval)
            await store.append_audit(db, at, proposal_id, actor, APPROVAL_RECORDED, detail)
            for effect in progress_effects(recorded):
                status = recorded.status.value
                await db.execute(
                    INSERT_PROGRESS, proposal_id, effect.value, lane_of(effect), status, at
                )
            return ApprovalCounted(recorded)
        row = await db.fetchrow(CLAIM, proposal_id, actor, at, binding_hash, lease)
        if row is None:  # the row is locked since the read: nothing can have changed
            raise StoreError(f"proposal {proposal_id!r} changed during its approval")
        detail = approved_detail(recorded, binding_hash)
        await store.append_audit(db, at, proposal_id, actor, "approved", detail)
        return Transitioned(await store.enqueue_effects(db, row, at))
