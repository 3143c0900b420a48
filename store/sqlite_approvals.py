"""Approvals towards a quorum in the SQLite store: reading them with proposals, and approving.

An approval is one ``BEGIN IMMEDIATE`` transaction (SqliteStore.transaction): the proposal is
read, the approval refused or recorded, the approvals counted, and either the compare-and-set
pending -> executing made (the quorum is reached) or the progress audited and its message's
update queued. Rules shared with PostgreSQL are in ``store/approvals.py``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import aiosqlite

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
    StoreError,
    Transitioned,
    TransitionResult,
)
from store.effects import lane_of
from store.rows import db_time, from_db_time

if TYPE_CHECKING:
    from store.sqlite import SqliteStore

__all__ = ["approve", "with_approvals"]

#: The approvals of several proposals (ids as a JSON array), oldest first.
SELECT_APPROVALS = """
SELECT * FROM approvals
WHERE proposal_id IN (SELECT value FROM json_each(?))
ORDER BY proposal_id, approved_at, approver
"""

#: One person's approval, bound to the hash they saw (the primary key refuses a second one).
INSERT_APPROVAL = """
INSERT INTO approvals (proposal_id, approver, binding_hash, approved_at) VALUES (?, ?, ?, ?)
"""

#: The approval that completes the quorum: pending, unexpired and bound to the contract the
#: approvers saw -> executing.
CLAIM = """
UPDATE proposals
SET status = 'executing', decided_by = ?, decided_at = ?, updated_at = ?, lease_until = ?
WHERE id = ? AND status = 'pending' AND (expires_at IS NULL OR expires_at > ?)
  AND binding_hash = ?
RETURNING *
"""

#: An approval short of the quorum changes no status; its message shows the progress.
INSERT_PROGRESS = """
INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at)
VALUES (?, ?, ?, ?, ?, ?)
"""


def _approval(row: sqlite3.Row) -> Approval:
    return Approval(
        approver=row["approver"],
        binding_hash=row["binding_hash"],
        approved_at=from_db_time(row["approved_at"]),
    )


async def with_approvals(
    db: aiosqlite.Connection, proposals: Sequence[Proposal], *, every: bool = False
) -> list[Proposal]:
    """``proposals``, each carrying its approvals (one query for all that may have any, or for
    ``every`` one)."""
    proposals = list(proposals)
    asked = [p.id for p in proposals if every or may_have_approvals(p)]
    if not asked:
        return proposals
    ids = json.dumps(asked)
    found: dict[str, list[Approval]] = {}
    for row in await db.execute_fetchall(SELECT_APPROVALS, (ids,)):
        found.setdefault(row["proposal_id"], []).append(_approval(row))
    return [
        p.model_copy(update={"approvals": tuple(found[p.id])}) if p.id in found else p
        for p in proposals
    ]


async def approve(
    store: SqliteStore,
    proposal_id: str,
    *,
    actor: str,
    now: datetime,
    binding_hash: str,
    lease_until: datetime,
) -> TransitionResult:
    """Store.claim_for_execution on SQLite: record ``actor``'s approval; claim at the quorum."""
    at, lease = db_time(now, field="now"), db_time(lease_until, field="lease_until")
    async with store.transaction(write=True) as db:
        current = await store.existing_proposal(db, proposal_id)
        refused = approval_refusal(current, actor=actor, now=now, binding_hash=binding_hash)
        if refused is not None:
            return refused
        await db.execute(INSERT_APPROVAL, (proposal_id, actor, binding_hash, at))
        [recorded] = await with_approvals(db, [current], every=True)  # with the new one
        if len(counted(recorded)) < recorded.quorum:
            [approval] = [a for a in recorded.approvals if a.approver == actor]
            detail = recorded_detail(recorded, approval)
            await store.append_audit(db, now, proposal_id, actor, APPROVAL_RECORDED, detail)
            for effect in progress_effects(recorded):
                status = recorded.status.value
                params = (proposal_id, effect.value, lane_of(effect), status, at, at)
                await db.execute(INSERT_PROGRESS, params)
            return ApprovalCounted(recorded)
        row = await store.one(db, CLAIM, (actor, at, at, lease, proposal_id, at, binding_hash))
        if row is None:  # the write lock was held since the read: nothing can have changed
            raise StoreError(f"proposal {proposal_id!r} changed during its approval")
        detail = approved_detail(recorded, binding_hash)
        await store.append_audit(db, now, proposal_id, actor, "approved", detail)
        return Transitioned(await store.enqueue_effects(db, row, now))
