"""The SQLite backend's reminders and extensions (store/reminders.py says what they are).

Both run in one ``BEGIN IMMEDIATE`` transaction of the SqliteStore (its connection, lock and
audit chain): the compare-and-set, its audit entry and its outbox entry commit together. The
SqliteStore's ``remind_due`` and ``extend`` call these.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from store.base import Proposal, Transitioned, TransitionResult
from store.effects import lane_of
from store.lifecycle import Effect, Status
from store.reminders import (
    EXTENSION_EFFECT,
    REMINDER_ACTOR,
    REMINDER_EFFECT,
    extension_detail,
    moved_reminder,
    not_extendable,
    reminder_detail,
)
from store.rows import db_time, proposal_from_row
from store.sqlite_approvals import with_approvals

if TYPE_CHECKING:
    import aiosqlite

    from store.sqlite import SqliteStore

__all__ = ["extend", "remind_due"]

#: The reminder sweep: up to :limit pending, unexpired proposals whose reminder is due and not
#: yet sent are marked reminded, earliest due first. The WHERE of the UPDATE repeats the
#: compare-and-set, so a proposal is reminded once. The proposal itself (updated_at) is unchanged.
REMIND_DUE = """
UPDATE proposals SET reminded_at = :now
WHERE id IN (
    SELECT id FROM proposals
    WHERE status = 'pending' AND reminded_at IS NULL AND remind_at IS NOT NULL
      AND remind_at <= :now AND (expires_at IS NULL OR expires_at > :now)
    ORDER BY remind_at, id
    LIMIT :limit
) AND status = 'pending' AND reminded_at IS NULL
RETURNING *
"""

#: The one extension: pending, unexpired, never extended, and still expiring when it was read
#: (:previous) -> expires at :until, naming who extended it. A reminder not yet sent moves to
#: :remind_at; one already sent stays.
EXTEND = """
UPDATE proposals
SET expires_at = :until, extended_by = :actor, extended_at = :now, updated_at = :now,
    remind_at = CASE WHEN reminded_at IS NULL THEN :remind_at ELSE remind_at END
WHERE id = :id AND status = 'pending' AND extended_by IS NULL
  AND expires_at = :previous AND expires_at > :now AND expires_at < :until
RETURNING *
"""

#: One effect of a reminder or an extension, for the outbox worker (the store's own insert).
INSERT_OUTBOX = """
INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at)
VALUES (?, ?, ?, ?, ?, ?)
"""


async def _enqueue(db: aiosqlite.Connection, proposal: Proposal, effect: Effect, at: str) -> None:
    """Queue ``effect`` when the proposal asks in a channel (Slack effects need one)."""
    if proposal.channel is not None:
        params = (proposal.id, effect.value, lane_of(effect), Status.PENDING.value, at, at)
        await db.execute(INSERT_OUTBOX, params)


async def remind_due(store: SqliteStore, *, now: datetime, limit: int) -> list[Proposal]:
    if limit < 1:  # SQLite reads a negative LIMIT as "no limit"
        raise ValueError(f"limit: got {limit}; expected a positive number of proposals")
    at = db_time(now, field="now")
    async with store.transaction(write=True) as db:
        rows = await db.execute_fetchall(REMIND_DUE, {"now": at, "limit": limit})
        reminded = []
        for row in sorted(rows, key=lambda r: (r["remind_at"], r["id"])):
            proposal = proposal_from_row(row)
            detail = reminder_detail(proposal)
            await store.append_audit(db, now, proposal.id, REMINDER_ACTOR, "reminded", detail)
            await _enqueue(db, proposal, REMINDER_EFFECT, at)
            reminded.append(proposal)
        return await with_approvals(db, reminded)


async def extend(
    store: SqliteStore, proposal_id: str, *, actor: str, until: datetime, now: datetime
) -> TransitionResult:
    at, to = db_time(now, field="now"), db_time(until, field="until")
    async with store.transaction(write=True) as db:
        # Read inside the write transaction (no other writer until it ends); the UPDATE still
        # compares what it read, so it is a compare-and-set on its own.
        current = await store.existing_proposal(db, proposal_id)
        if current.expires_at is None:
            return not_extendable(current, now, until)
        remind_at = moved_reminder(current, until)
        params = {
            "id": proposal_id,
            "actor": actor,
            "now": at,
            "until": to,
            "previous": db_time(current.expires_at),
            "remind_at": None if remind_at is None else db_time(remind_at),
        }
        row = await store.one(db, EXTEND, params)
        if row is None:
            return not_extendable(current, now, until)
        proposal = proposal_from_row(row)
        detail = extension_detail(current.expires_at, until)
        await store.append_audit(db, now, proposal.id, actor, "extended", detail)
        await _enqueue(db, proposal, EXTENSION_EFFECT, at)
        [proposal] = await with_approvals(db, [proposal])
        return Transitioned(proposal)
