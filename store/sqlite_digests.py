"""The SQLite backend of the DigestStore protocol.

It shares the SqliteStore's connection, transactions and audit chain (like the escalations'):
attaching a digest stores it, names it on each item with the item's "posted_to_slack" audit
entry, and completes the items' posts, all in one write transaction. The database keeps each
item in its digest and its digest's message, and refuses items of another operation or
requester (store/sql/sqlite/0008_digests.sql). Get it from :meth:`SqliteStore.digests`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import aiosqlite

from store.base import Delivery, Proposal, ProposalNotFound
from store.digests import Digest, DigestNotFound, NewDigest, conflict
from store.lifecycle import Effect
from store.rows import db_time, delivery_from_row, from_db_time, proposal_from_row
from store.shield import finish_even_if_cancelled
from store.sqlite_approvals import with_approvals

if TYPE_CHECKING:
    from store.sqlite import SqliteStore

__all__ = ["SqliteDigests"]

#: A digest, once: a second attach of the same digest finds it stored.
INSERT_DIGEST = """
INSERT INTO digests (id, channel, ts, operation, requested_by, created_at)
VALUES (:id, :channel, :ts, :operation, :requested_by, :created_at)
ON CONFLICT (id) DO NOTHING
"""

#: One digest by id.
SELECT_DIGEST = "SELECT * FROM digests WHERE id = ?"

#: A digest's items, in the order its message lists them.
SELECT_ITEMS = "SELECT * FROM proposals WHERE digest_id = ? ORDER BY created_at, id"

#: Several proposals by id (a JSON array of ids), in one read.
SELECT_PROPOSALS = "SELECT * FROM proposals WHERE id IN (SELECT value FROM json_each(?))"

#: An item not yet shown anywhere joins the digest and its message (no row: already shown).
ATTACH_ITEM = """
UPDATE proposals
SET digest_id = :digest_id, slack_channel = :channel, slack_ts = :ts, updated_at = :now
WHERE id = :id AND slack_ts IS NULL AND digest_id IS NULL
RETURNING id
"""

#: Whether a proposal exists (an item that did not attach: already shown, or unknown).
PROPOSAL_EXISTS = "SELECT 1 FROM proposals WHERE id = ?"

#: More due posts like the ones being grouped: pending, never shown, same channel, operation and
#: requester, each the first undelivered entry of its proposal's lane.
CLAIM_SIMILAR_POSTS = """
UPDATE outbox SET leased_until = :lease, attempts = attempts + 1
WHERE id IN (
    SELECT o.id FROM outbox AS o JOIN proposals AS p ON p.id = o.proposal_id
    WHERE o.effect = 'slack.post' AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= :now
      AND (o.leased_until IS NULL OR o.leased_until <= :now)
      AND p.status = 'pending' AND p.slack_ts IS NULL AND p.channel = :channel
      AND p.operation = :operation AND p.requested_by = :requested_by
      AND NOT EXISTS (
          SELECT 1 FROM outbox AS e
          WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane AND e.id < o.id
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY o.next_attempt_at, o.id
    LIMIT :limit
)
RETURNING *
"""

#: More due entries of one effect for a digest's items, each first in its proposal's lane.
CLAIM_DIGEST_DELIVERIES = """
UPDATE outbox SET leased_until = :lease, attempts = attempts + 1
WHERE id IN (
    SELECT o.id FROM outbox AS o JOIN proposals AS p ON p.id = o.proposal_id
    WHERE p.digest_id = :digest_id AND o.effect = :effect
      AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= :now
      AND (o.leased_until IS NULL OR o.leased_until <= :now)
      AND NOT EXISTS (
          SELECT 1 FROM outbox AS e
          WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane AND e.id < o.id
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY o.next_attempt_at, o.id
    LIMIT :limit
)
RETURNING *
"""

#: Several entries delivered (a JSON array of ids).
COMPLETE_DELIVERIES = """
UPDATE outbox SET delivered_at = ?, leased_until = NULL
WHERE id IN (SELECT value FROM json_each(?)) AND delivered_at IS NULL
"""

#: Several entries not delivered this time: release the leases, try again at the time given.
RETRY_DELIVERIES = """
UPDATE outbox SET next_attempt_at = ?, leased_until = NULL, last_error = ?
WHERE id IN (SELECT value FROM json_each(?)) AND delivered_at IS NULL
"""

#: Several leased entries not attempted: due again later, their claim's attempt taken back.
DEFER_DELIVERIES = """
UPDATE outbox SET next_attempt_at = ?, leased_until = NULL, attempts = max(attempts - 1, 0)
WHERE id IN (SELECT value FROM json_each(?)) AND delivered_at IS NULL
  AND leased_until IS NOT NULL
"""

SLACK_ACTOR = "slack"


def _digest(row: sqlite3.Row, items: Sequence[Proposal]) -> Digest:
    """The one place a SQLite row (and its items) becomes a Digest."""
    return Digest(
        id=row["id"],
        channel=row["channel"],
        ts=row["ts"],
        operation=row["operation"],
        requested_by=row["requested_by"],
        created_at=from_db_time(row["created_at"]),
        items=tuple(items),
    )


def _ids(values: Sequence[object]) -> str:
    return json.dumps(list(values))


class SqliteDigests:
    """Digests in the SqliteStore's database, in its transactions and audit chain."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    async def _read(self, db: aiosqlite.Connection, digest_id: str) -> Digest:
        row = await self._store.one(db, SELECT_DIGEST, (digest_id,))
        if row is None:
            raise DigestNotFound(f"no digest has id {digest_id!r}")
        rows = await db.execute_fetchall(SELECT_ITEMS, (digest_id,))
        return _digest(row, await with_approvals(db, [proposal_from_row(r) for r in rows]))

    @finish_even_if_cancelled
    async def attach_digest(
        self,
        digest: NewDigest,
        items: Sequence[str],
        *,
        deliveries: Sequence[int],
        now: datetime,
    ) -> Digest:
        at = db_time(now, field="now")
        params = digest.model_dump()
        params["created_at"] = db_time(digest.created_at, field="created_at")
        async with self._store.transaction(write=True) as db:
            await db.execute(INSERT_DIGEST, params)
            problem = conflict(await self._read(db, digest.id), digest)
            if problem is not None:
                raise problem
            detail = {"channel": digest.channel, "ts": digest.ts, "digest_id": digest.id}
            for item in items:
                attach = {"digest_id": digest.id, "channel": digest.channel, "ts": digest.ts}
                attached = await self._store.one(db, ATTACH_ITEM, {**attach, "now": at, "id": item})
                if attached is not None:
                    await self._store.append_audit(
                        db, now, item, SLACK_ACTOR, "posted_to_slack", detail
                    )
                elif await self._store.one(db, PROPOSAL_EXISTS, (item,)) is None:
                    raise ProposalNotFound(f"no proposal has id {item!r}")
            if deliveries:
                await db.execute(COMPLETE_DELIVERIES, (at, _ids(deliveries)))
            return await self._read(db, digest.id)

    @finish_even_if_cancelled
    async def get_digest(self, digest_id: str) -> Digest:
        async with self._store.transaction(write=False) as db:
            return await self._read(db, digest_id)

    @finish_even_if_cancelled
    async def get_proposals(self, proposal_ids: Sequence[str]) -> list[Proposal]:
        if not proposal_ids:
            return []
        async with self._store.transaction(write=False) as db:
            rows = await db.execute_fetchall(SELECT_PROPOSALS, (_ids(proposal_ids),))
            found = {
                p.id: p for p in await with_approvals(db, [proposal_from_row(r) for r in rows])
            }
        return [found[i] for i in proposal_ids if i in found]

    # --- the outbox, several entries at a time ----------------------------------------------

    async def _claim(self, sql: str, params: dict[str, object]) -> list[Delivery]:
        limit = params["limit"]
        if not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit: got {limit!r}; expected a positive number of entries")
        async with self._store.transaction(write=True) as db:
            rows = await db.execute_fetchall(sql, params)
            return sorted((delivery_from_row(row) for row in rows), key=lambda d: d.id)

    @finish_even_if_cancelled
    async def claim_similar_posts(
        self,
        *,
        channel: str,
        operation: str,
        requested_by: str,
        now: datetime,
        limit: int,
        lease: timedelta,
    ) -> list[Delivery]:
        params: dict[str, object] = {
            "now": db_time(now, field="now"),
            "lease": db_time(now + lease, field="now"),
            "limit": limit,
            "channel": channel,
            "operation": operation,
            "requested_by": requested_by,
        }
        return await self._claim(CLAIM_SIMILAR_POSTS, params)

    @finish_even_if_cancelled
    async def claim_digest_deliveries(
        self, digest_id: str, effect: Effect, *, now: datetime, limit: int, lease: timedelta
    ) -> list[Delivery]:
        params: dict[str, object] = {
            "now": db_time(now, field="now"),
            "lease": db_time(now + lease, field="now"),
            "limit": limit,
            "digest_id": digest_id,
            "effect": effect.value,
        }
        return await self._claim(CLAIM_DIGEST_DELIVERIES, params)

    @finish_even_if_cancelled
    async def complete_deliveries(self, delivery_ids: Sequence[int], *, now: datetime) -> None:
        if delivery_ids:
            async with self._store.transaction(write=True) as db:
                await db.execute(COMPLETE_DELIVERIES, (db_time(now), _ids(delivery_ids)))

    @finish_even_if_cancelled
    async def retry_deliveries(
        self, delivery_ids: Sequence[int], *, at: datetime, error: str
    ) -> None:
        if delivery_ids:
            params = (db_time(at, field="at"), error[:2000], _ids(delivery_ids))
            async with self._store.transaction(write=True) as db:
                await db.execute(RETRY_DELIVERIES, params)

    @finish_even_if_cancelled
    async def defer_deliveries(self, delivery_ids: Sequence[int], *, at: datetime) -> None:
        if delivery_ids:
            async with self._store.transaction(write=True) as db:
                await db.execute(DEFER_DELIVERIES, (db_time(at, field="at"), _ids(delivery_ids)))
