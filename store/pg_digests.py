"""The PostgreSQL backend of the DigestStore protocol.

It shares the PostgresStore's pool and audit chain. Attaching a digest is one transaction: the
digest row, then every item's row in one UPDATE (rows first), then their audit entries (the audit
head last, the lock order of store/postgres.py), then the items' posts completed. Leasing more
entries takes them ``FOR UPDATE SKIP LOCKED``, as claim_deliveries does, so instances filling
digests at once never lease one entry twice. Get it from :meth:`PostgresStore.digests`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import asyncpg

from store.base import Delivery, Proposal, ProposalNotFound
from store.digests import Digest, DigestNotFound, NewDigest, conflict
from store.lifecycle import Effect
from store.pg_approvals import with_approvals
from store.pg_rows import aware, delivery_from_record, proposal_from_record
from store.shield import finish_even_if_cancelled

if TYPE_CHECKING:
    from store.pg_migrate import Connection
    from store.postgres import PostgresStore

__all__ = ["PgDigests"]

#: A digest, once: a second attach of the same digest finds it stored.
INSERT_DIGEST = """
INSERT INTO digests (id, channel, ts, operation, requested_by, created_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (id) DO NOTHING
"""

#: One digest by id.
SELECT_DIGEST = "SELECT * FROM digests WHERE id = $1"

#: A digest's items, in the order its message lists them.
SELECT_ITEMS = "SELECT * FROM proposals WHERE digest_id = $1 ORDER BY created_at, id"

#: Several proposals by id, in one read.
SELECT_PROPOSALS = "SELECT * FROM proposals WHERE id = ANY($1::text[])"

#: The items not yet shown anywhere join the digest and its message (the others stay as they
#: are); the ids of those that joined come back.
ATTACH_ITEMS = """
UPDATE proposals
SET digest_id = $2, slack_channel = $3, slack_ts = $4, updated_at = $5
WHERE id = ANY($1::text[]) AND slack_ts IS NULL AND digest_id IS NULL
RETURNING id
"""

#: Which of these ids are proposals.
SELECT_EXISTING = "SELECT id FROM proposals WHERE id = ANY($1::text[])"

#: More due posts like the ones being grouped: pending, never shown, same channel, operation and
#: requester, each the first undelivered entry of its proposal's lane. Entries another worker is
#: leasing right now are skipped; the outer WHERE re-checks each locked row.
CLAIM_SIMILAR_POSTS = """
WITH due AS (
    SELECT o.id FROM outbox AS o JOIN proposals AS p ON p.id = o.proposal_id
    WHERE o.effect = 'slack.post' AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= $1
      AND (o.leased_until IS NULL OR o.leased_until <= $1)
      AND p.status = 'pending' AND p.slack_ts IS NULL AND p.channel = $4
      AND p.operation = $5 AND p.requested_by = $6
      AND NOT EXISTS (
          SELECT 1 FROM outbox AS e
          WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane AND e.id < o.id
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY o.next_attempt_at, o.id
    LIMIT $3
    FOR UPDATE OF o SKIP LOCKED
)
UPDATE outbox AS o SET leased_until = $2, attempts = o.attempts + 1
FROM due
WHERE o.id = due.id AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
  AND (o.leased_until IS NULL OR o.leased_until <= $1)
RETURNING o.*
"""

#: More due entries of one effect for a digest's items, each first in its proposal's lane.
CLAIM_DIGEST_DELIVERIES = """
WITH due AS (
    SELECT o.id FROM outbox AS o JOIN proposals AS p ON p.id = o.proposal_id
    WHERE p.digest_id = $4 AND o.effect = $5
      AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= $1
      AND (o.leased_until IS NULL OR o.leased_until <= $1)
      AND NOT EXISTS (
          SELECT 1 FROM outbox AS e
          WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane AND e.id < o.id
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY o.next_attempt_at, o.id
    LIMIT $3
    FOR UPDATE OF o SKIP LOCKED
)
UPDATE outbox AS o SET leased_until = $2, attempts = o.attempts + 1
FROM due
WHERE o.id = due.id AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
  AND (o.leased_until IS NULL OR o.leased_until <= $1)
RETURNING o.*
"""

#: Several entries delivered.
COMPLETE_DELIVERIES = """
UPDATE outbox SET delivered_at = $2, leased_until = NULL
WHERE id = ANY($1::bigint[]) AND delivered_at IS NULL
"""

#: Several entries not delivered this time: release the leases, try again at $2.
RETRY_DELIVERIES = """
UPDATE outbox SET next_attempt_at = $2, leased_until = NULL, last_error = $3
WHERE id = ANY($1::bigint[]) AND delivered_at IS NULL
"""

#: Several leased entries not attempted: due again at $2, their claim's attempt taken back.
DEFER_DELIVERIES = """
UPDATE outbox SET next_attempt_at = $2, leased_until = NULL, attempts = greatest(attempts - 1, 0)
WHERE id = ANY($1::bigint[]) AND delivered_at IS NULL AND leased_until IS NOT NULL
"""

SLACK_ACTOR = "slack"


def _digest(row: asyncpg.Record, items: Sequence[Proposal]) -> Digest:
    """The one place a PostgreSQL record (and its items) becomes a Digest."""
    return Digest(
        id=row["id"],
        channel=row["channel"],
        ts=row["ts"],
        operation=row["operation"],
        requested_by=row["requested_by"],
        created_at=row["created_at"].astimezone(UTC),
        items=tuple(items),
    )


class PgDigests:
    """Digests in the PostgresStore's database, sharing its pool and audit chain."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    async def _read(self, db: Connection, digest_id: str) -> Digest:
        row = await db.fetchrow(SELECT_DIGEST, digest_id)
        if row is None:
            raise DigestNotFound(f"no digest has id {digest_id!r}")
        rows = await db.fetch(SELECT_ITEMS, digest_id)
        return _digest(row, await with_approvals(db, [proposal_from_record(r) for r in rows]))

    @finish_even_if_cancelled
    async def attach_digest(
        self,
        digest: NewDigest,
        items: Sequence[str],
        *,
        deliveries: Sequence[int],
        now: datetime,
    ) -> Digest:
        at = aware(now, field="now")
        created = aware(digest.created_at, field="created_at")
        async with self._store.transaction() as db:
            await db.execute(
                INSERT_DIGEST,
                digest.id,
                digest.channel,
                digest.ts,
                digest.operation,
                digest.requested_by,
                created,
            )
            problem = conflict(await self._read(db, digest.id), digest)
            if problem is not None:
                raise problem
            ids = list(dict.fromkeys(items))
            rows = await db.fetch(ATTACH_ITEMS, ids, digest.id, digest.channel, digest.ts, at)
            attached = {row["id"] for row in rows}
            if len(attached) < len(ids):
                known = {row["id"] for row in await db.fetch(SELECT_EXISTING, ids)}
                unknown = [item for item in ids if item not in known]
                if unknown:
                    raise ProposalNotFound(f"no proposal has id {unknown[0]!r}")
            detail: dict[str, Any] = {
                "channel": digest.channel,
                "ts": digest.ts,
                "digest_id": digest.id,
            }
            for item in ids:
                if item in attached:
                    await self._store.append_audit(
                        db, at, item, SLACK_ACTOR, "posted_to_slack", detail
                    )
            if deliveries:
                await db.execute(COMPLETE_DELIVERIES, list(deliveries), at)
            return await self._read(db, digest.id)

    @finish_even_if_cancelled
    async def get_digest(self, digest_id: str) -> Digest:
        async with self._store.connection() as db:
            return await self._read(db, digest_id)

    @finish_even_if_cancelled
    async def get_proposals(self, proposal_ids: Sequence[str]) -> list[Proposal]:
        if not proposal_ids:
            return []
        async with self._store.connection() as db:
            rows = await db.fetch(SELECT_PROPOSALS, list(proposal_ids))
            found = {
                p.id: p for p in await with_approvals(db, [proposal_from_record(r) for r in rows])
            }
        return [found[i] for i in proposal_ids if i in found]

    # --- the outbox, several entries at a time ----------------------------------------------

    async def _claim(
        self, sql: str, now: datetime, lease: timedelta, limit: int, *args: Any
    ) -> list[Delivery]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of entries")
        at = aware(now, field="now")
        async with self._store.transaction() as db:
            rows = await db.fetch(sql, at, at + lease, limit, *args)
            return sorted(map(delivery_from_record, rows), key=lambda d: d.id)

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
        return await self._claim(
            CLAIM_SIMILAR_POSTS, now, lease, limit, channel, operation, requested_by
        )

    @finish_even_if_cancelled
    async def claim_digest_deliveries(
        self, digest_id: str, effect: Effect, *, now: datetime, limit: int, lease: timedelta
    ) -> list[Delivery]:
        return await self._claim(
            CLAIM_DIGEST_DELIVERIES, now, lease, limit, digest_id, effect.value
        )

    @finish_even_if_cancelled
    async def complete_deliveries(self, delivery_ids: Sequence[int], *, now: datetime) -> None:
        if delivery_ids:
            async with self._store.connection() as db:
                await db.execute(COMPLETE_DELIVERIES, list(delivery_ids), aware(now, field="now"))

    @finish_even_if_cancelled
    async def retry_deliveries(
        self, delivery_ids: Sequence[int], *, at: datetime, error: str
    ) -> None:
        if delivery_ids:
            async with self._store.connection() as db:
                await db.execute(
                    RETRY_DELIVERIES, list(delivery_ids), aware(at, field="at"), error[:2000]
                )

    @finish_even_if_cancelled
    async def defer_deliveries(self, delivery_ids: Sequence[int], *, at: datetime) -> None:
        if delivery_ids:
            async with self._store.connection() as db:
                await db.execute(DEFER_DELIVERIES, list(delivery_ids), aware(at, field="at"))
