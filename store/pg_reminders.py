"""The PostgreSQL backend's reminders and extensions (store/reminders.py says what they are).

Each runs in one transaction of the PostgresStore: the compare-and-set locks the proposal rows,
then the audit entry locks the audit head (rows first, head second, as everywhere), and the
outbox entry commits with them. The sweep takes its rows with ``FOR UPDATE SKIP LOCKED``, so
instances sweeping at once remind each proposal once and never wait for each other. The
PostgresStore's ``remind_due`` and ``extend`` call these.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from store.base import Proposal, Transitioned, TransitionResult
from store.effects import lane_of
from store.lifecycle import Effect, Status
from store.pg_approvals import with_approvals
from store.pg_rows import aware, proposal_from_record
from store.reminders import (
    EXTENSION_EFFECT,
    REMINDER_ACTOR,
    REMINDER_EFFECT,
    extension_detail,
    moved_reminder,
    not_extendable,
    reminder_detail,
)

if TYPE_CHECKING:
    from store.pg_migrate import Connection
    from store.postgres import PostgresStore

__all__ = ["extend", "remind_due"]

#: The reminder sweep: up to $2 pending, unexpired proposals whose reminder is due and not yet
#: sent are marked reminded, earliest due first. Rows another transaction holds (a claim, another
#: instance's sweep) are skipped, not awaited; the outer WHERE re-checks each locked row. The
#: proposal itself (updated_at) is unchanged.
REMIND_DUE = """
WITH due AS (
    SELECT id FROM proposals
    WHERE status = 'pending' AND reminded_at IS NULL AND remind_at IS NOT NULL
      AND remind_at <= $1 AND (expires_at IS NULL OR expires_at > $1)
    ORDER BY remind_at, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
UPDATE proposals AS p SET reminded_at = $1
FROM due
WHERE p.id = due.id AND p.status = 'pending' AND p.reminded_at IS NULL
RETURNING p.*
"""

#: The one extension: pending, unexpired, never extended, and still expiring when it was read
#: ($5) -> expires at $4, naming who extended it ($2, at $3). A reminder not yet sent moves to
#: $6; one already sent stays. A concurrent extension makes this find no row.
EXTEND = """
UPDATE proposals
SET expires_at = $4, extended_by = $2, extended_at = $3, updated_at = $3,
    remind_at = CASE WHEN reminded_at IS NULL THEN $6 ELSE remind_at END
WHERE id = $1 AND status = 'pending' AND extended_by IS NULL
  AND expires_at = $5 AND expires_at > $3 AND expires_at < $4
RETURNING *
"""

#: One effect of a reminder or an extension, for the outbox worker (the store's own insert).
INSERT_OUTBOX = """
INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at)
VALUES ($1, $2, $3, $4, $5, $5)
"""


async def _enqueue(db: Connection, proposal: Proposal, effect: Effect, at: datetime) -> None:
    """Queue ``effect`` when the proposal asks in a channel (Slack effects need one)."""
    if proposal.channel is not None:
        await db.execute(
            INSERT_OUTBOX, proposal.id, effect.value, lane_of(effect), Status.PENDING.value, at
        )


async def remind_due(store: PostgresStore, *, now: datetime, limit: int) -> list[Proposal]:
    if limit < 1:
        raise ValueError(f"limit: got {limit}; expected a positive number of proposals")
    at = aware(now, field="now")
    async with store.transaction() as db:
        rows = await db.fetch(REMIND_DUE, at, limit)
        reminded = []
        for row in sorted(rows, key=lambda r: (r["remind_at"], r["id"])):
            proposal = proposal_from_record(row)
            detail = reminder_detail(proposal)
            await store.append_audit(db, at, proposal.id, REMINDER_ACTOR, "reminded", detail)
            await _enqueue(db, proposal, REMINDER_EFFECT, at)
            reminded.append(proposal)
        return await with_approvals(db, reminded)


async def extend(
    store: PostgresStore, proposal_id: str, *, actor: str, until: datetime, now: datetime
) -> TransitionResult:
    at, to = aware(now, field="now"), aware(until, field="until")
    async with store.transaction() as db:
        current = await store.existing_proposal(db, proposal_id)
        if current.expires_at is None:
            return not_extendable(current, at, to)
        remind_at = moved_reminder(current, to)
        row = await db.fetchrow(EXTEND, proposal_id, actor, at, to, current.expires_at, remind_at)
        if row is None:
            return not_extendable(await store.existing_proposal(db, proposal_id), at, to)
        proposal = proposal_from_record(row)
        detail = extension_detail(current.expires_at, to)
        await store.append_audit(db, at, proposal.id, actor, "extended", detail)
        await _enqueue(db, proposal, EXTENSION_EFFECT, at)
        [proposal] = await with_approvals(db, [proposal])
        return Transitioned(proposal)
