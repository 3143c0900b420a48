"""The PostgreSQL backend of the EscalationStore protocol.

It shares the PostgresStore's pool and audit chain: every transition is one transaction holding
the compare-and-set (which locks the escalation's row), its audit entry (PostgresStore.append_audit,
which then locks the audit head: rows first, head second, as everywhere) and its outbox
entries. The re-announcement sweep and outbox leasing take rows with ``FOR UPDATE SKIP LOCKED``,
so instances doing them at once never do one twice. Get it from
:meth:`PostgresStore.escalations`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import asyncpg
from pydantic import JsonValue

from contracts.escalation import Summary, Trigger, TriggerVerdict
from store.base import AuditEntry
from store.effects import lane_of
from store.escalations import (
    Escalation,
    EscalationConflict,
    EscalationDelivery,
    EscalationNotFound,
    EscalationResult,
    EscalationStatus,
    Moved,
    NewEscalation,
    Refused,
    escalation_effects_of,
    refusal_of,
)
from store.lifecycle import Effect
from store.pg_rows import audit_entry_from_record, aware
from store.shield import finish_even_if_cancelled

if TYPE_CHECKING:
    from store.pg_migrate import Connection
    from store.postgres import PostgresStore

__all__ = ["PgEscalations", "escalation_from_record"]

INSERT_ESCALATION = """
INSERT INTO escalations (
    id, agent, submission_key, submission_fingerprint, conversation_id, requested_by,
    customer_ref, team, summary, trigger, verdict, channel, callback_url, created_at, status,
    announced_at, updated_at
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 'open', $14, $14)
ON CONFLICT (agent, submission_key) DO NOTHING
RETURNING *
"""

SELECT_ESCALATION = "SELECT * FROM escalations WHERE id = $1"
SELECT_BY_KEY = "SELECT * FROM escalations WHERE agent = $1 AND submission_key = $2"

UPDATE_MESSAGE = """
UPDATE escalations SET slack_channel = $2, slack_ts = $3, updated_at = $4 WHERE id = $1
RETURNING *
"""

#: open or handed_back -> taken by $2: one owner, however many click at once.
TAKE = """
UPDATE escalations SET status = 'taken', owner = $2, updated_at = $3
WHERE id = $1 AND status IN ('open', 'handed_back')
RETURNING *
"""

#: taken by $2 -> handed_back, with the note for the agent.
HAND_BACK = """
UPDATE escalations SET status = 'handed_back', owner = NULL, note = $3, updated_at = $4
WHERE id = $1 AND status = 'taken' AND owner = $2
RETURNING *
"""

#: open, handed_back, or taken by $2 -> resolved.
RESOLVE = """
UPDATE escalations
SET status = 'resolved', owner = NULL, note = $3, resolved_by = $2, resolved_at = $4,
    updated_at = $4
WHERE id = $1 AND (status IN ('open', 'handed_back') OR (status = 'taken' AND owner = $2))
RETURNING *
"""

#: Unclaimed escalations due for another announcement ($2 = now - reannounce_after), announced
#: again fewer than $4 times.
REANNOUNCE_DUE = """
WITH due AS (
    SELECT id FROM escalations
    WHERE status = 'open' AND announced_at <= $2 AND reannouncements < $4
    ORDER BY announced_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
)
UPDATE escalations AS e
SET announced_at = $1, reannouncements = e.reannouncements + 1, updated_at = $1
FROM due
WHERE e.id = due.id AND e.status = 'open' AND e.announced_at <= $2 AND e.reannouncements < $4
RETURNING e.*
"""

#: How many escalations of one agent nobody has taken yet (the per-agent limit).
COUNT_OPEN = "SELECT count(*) FROM escalations WHERE status = 'open' AND agent = $1"

SELECT_OWNED = """
SELECT * FROM escalations WHERE status = 'taken' AND owner = $1 ORDER BY updated_at, id LIMIT $2
"""

SELECT_LOG = "SELECT * FROM audit_log WHERE proposal_id = $1 ORDER BY seq"

INSERT_OUTBOX = """
INSERT INTO escalation_outbox (
    escalation_id, effect, lane, status, reannounce, created_at, next_attempt_at
) VALUES ($1, $2, $3, $4, $5, $6, $6)
"""

CLAIM_DELIVERIES = """
WITH due AS (
    SELECT o.id FROM escalation_outbox AS o
    WHERE o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= $1
      AND (o.leased_until IS NULL OR o.leased_until <= $1)
      AND NOT EXISTS (
          SELECT 1 FROM escalation_outbox AS e
          WHERE e.escalation_id = o.escalation_id AND e.lane = o.lane AND e.id < o.id
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY o.next_attempt_at, o.id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
)
UPDATE escalation_outbox AS o SET leased_until = $2, attempts = o.attempts + 1
FROM due
WHERE o.id = due.id AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
  AND (o.leased_until IS NULL OR o.leased_until <= $1)
RETURNING o.*
"""

COMPLETE_DELIVERY = (
    "UPDATE escalation_outbox SET delivered_at = $2, leased_until = NULL WHERE id = $1"
)
RETRY_DELIVERY = """
UPDATE escalation_outbox SET next_attempt_at = $2, leased_until = NULL, last_error = $3
WHERE id = $1
"""
ABANDON_DELIVERY = """
UPDATE escalation_outbox SET abandoned_at = $2, leased_until = NULL, last_error = $3
WHERE id = $1
RETURNING escalation_id, effect, attempts
"""
COUNT_PENDING = (
    "SELECT count(*) FROM escalation_outbox WHERE delivered_at IS NULL AND abandoned_at IS NULL"
)

SWEEP_ACTOR = "sweep"
SLACK_ACTOR = "slack"
OUTBOX_ACTOR = "outbox"


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else aware(value)


def escalation_from_record(row: asyncpg.Record) -> Escalation:
    """The one place a PostgreSQL record becomes an Escalation."""
    return Escalation(
        id=row["id"],
        agent=row["agent"],
        submission_key=row["submission_key"],
        submission_fingerprint=row["submission_fingerprint"],
        conversation_id=row["conversation_id"],
        requested_by=row["requested_by"],
        customer_ref=row["customer_ref"],
        team=row["team"],
        summary=Summary.model_validate_json(row["summary"]),
        trigger=Trigger.model_validate_json(row["trigger"]),
        verdict=TriggerVerdict.model_validate_json(row["verdict"]),
        channel=row["channel"],
        callback_url=row["callback_url"],
        created_at=aware(row["created_at"]),
        status=EscalationStatus(row["status"]),
        owner=row["owner"],
        note=row["note"],
        resolved_by=row["resolved_by"],
        resolved_at=_utc(row["resolved_at"]),
        announced_at=aware(row["announced_at"]),
        reannouncements=row["reannouncements"],
        slack_channel=row["slack_channel"],
        slack_ts=row["slack_ts"],
        updated_at=aware(row["updated_at"]),
    )


def _delivery_from_record(row: asyncpg.Record) -> EscalationDelivery:
    return EscalationDelivery(
        id=row["id"],
        escalation_id=row["escalation_id"],
        effect=Effect(row["effect"]),
        status=EscalationStatus(row["status"]),
        reannounce=row["reannounce"],
        attempts=row["attempts"],
        created_at=aware(row["created_at"]),
    )


def _new_args(new: NewEscalation) -> tuple[Any, ...]:
    return (
        new.id,
        new.agent,
        new.submission_key,
        new.submission_fingerprint,
        new.conversation_id,
        new.requested_by,
        new.customer_ref,
        new.team,
        new.summary.model_dump_json(),
        new.trigger.model_dump_json(),
        new.verdict.model_dump_json(),
        new.channel,
        new.callback_url,
        aware(new.created_at, field="created_at"),
    )


class PgEscalations:
    """Escalations in the PostgresStore's database, in its transactions and audit chain."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    async def _existing(self, db: Connection, escalation_id: str) -> Escalation:
        row = await db.fetchrow(SELECT_ESCALATION, escalation_id)
        if row is None:
            raise EscalationNotFound(f"no escalation has id {escalation_id!r}")
        return escalation_from_record(row)

    async def _moved(
        self,
        db: Connection,
        row: asyncpg.Record,
        now: datetime,
        *,
        actor: str,
        event: str,
        detail: Mapping[str, JsonValue],
        reannounce: bool = False,
    ) -> Escalation:
        escalation = escalation_from_record(row)
        await self._store.append_audit(db, now, escalation.id, actor, event, detail)
        effects = [Effect.SLACK_REPLY] if reannounce else escalation_effects_of(escalation)
        at = aware(now, field="now")
        for effect in effects:
            await db.execute(
                INSERT_OUTBOX,
                escalation.id,
                effect.value,
                lane_of(effect),
                escalation.status.value,
                reannounce,
                at,
            )
        return escalation

    @finish_even_if_cancelled
    async def create_escalation(self, new: NewEscalation) -> tuple[Escalation, bool]:
        async with self._store.transaction() as db:
            row = await db.fetchrow(INSERT_ESCALATION, *_new_args(new))
            if row is None:
                found = await db.fetchrow(SELECT_BY_KEY, new.agent, new.submission_key)
                assert found is not None  # the row whose unique key refused the insert
                existing = escalation_from_record(found)
                if existing.submission_fingerprint != new.submission_fingerprint:
                    raise EscalationConflict(existing)
                return existing, False
            detail: dict[str, JsonValue] = {
                "conversation_id": new.conversation_id,
                "trigger": new.trigger.kind.value,
                "verdict": new.verdict.note,
                "channel": new.channel,
            }
            created = await self._moved(
                db, row, new.created_at, actor=new.agent, event="escalated", detail=detail
            )
            return created, True

    @finish_even_if_cancelled
    async def get_escalation(self, escalation_id: str) -> Escalation:
        async with self._store.connection() as db:
            return await self._existing(db, escalation_id)

    @finish_even_if_cancelled
    async def find_escalation(self, agent: str, submission_key: str) -> Escalation | None:
        async with self._store.connection() as db:
            row = await db.fetchrow(SELECT_BY_KEY, agent, submission_key)
            return None if row is None else escalation_from_record(row)

    @finish_even_if_cancelled
    async def attach_escalation_message(
        self, escalation_id: str, channel: str, ts: str, *, now: datetime
    ) -> Escalation:
        at = aware(now, field="now")
        async with self._store.transaction() as db:
            row = await db.fetchrow(UPDATE_MESSAGE, escalation_id, channel, ts, at)
            if row is None:
                raise EscalationNotFound(f"no escalation has id {escalation_id!r}")
            detail = {"channel": channel, "ts": ts}
            event = "posted_to_slack"
            await self._store.append_audit(db, at, escalation_id, SLACK_ACTOR, event, detail)
            return escalation_from_record(row)

    @finish_even_if_cancelled
    async def take(self, escalation_id: str, *, actor: str, now: datetime) -> EscalationResult:
        at = aware(now, field="now")
        async with self._store.transaction() as db:
            row = await db.fetchrow(TAKE, escalation_id, actor, at)
            if row is None:
                current = await self._existing(db, escalation_id)
                return Refused(current, refusal_of(current, actor, "take"))
            return Moved(await self._moved(db, row, at, actor=actor, event="taken", detail={}))

    @finish_even_if_cancelled
    async def hand_back(
        self, escalation_id: str, *, actor: str, note: str, now: datetime
    ) -> EscalationResult:
        at = aware(now, field="now")
        async with self._store.transaction() as db:
            row = await db.fetchrow(HAND_BACK, escalation_id, actor, note, at)
            if row is None:
                current = await self._existing(db, escalation_id)
                return Refused(current, refusal_of(current, actor, "hand back"))
            detail: dict[str, JsonValue] = {"note": note}
            back = await self._moved(db, row, at, actor=actor, event="handed_back", detail=detail)
            return Moved(back)

    @finish_even_if_cancelled
    async def resolve(
        self, escalation_id: str, *, actor: str, note: str | None, now: datetime
    ) -> EscalationResult:
        at = aware(now, field="now")
        async with self._store.transaction() as db:
            row = await db.fetchrow(RESOLVE, escalation_id, actor, note, at)
            if row is None:
                current = await self._existing(db, escalation_id)
                return Refused(current, refusal_of(current, actor, "resolve"))
            detail: dict[str, JsonValue] = {"note": note}
            done = await self._moved(db, row, at, actor=actor, event="resolved", detail=detail)
            return Moved(done)

    @finish_even_if_cancelled
    async def reannounce_due(
        self, *, now: datetime, after: timedelta, most: int, limit: int = 100
    ) -> list[Escalation]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of escalations")
        at = aware(now, field="now")
        async with self._store.transaction() as db:
            rows = await db.fetch(REANNOUNCE_DUE, at, at - after, limit, most)
            announced = []
            for row in sorted(rows, key=lambda r: r["id"]):
                detail: dict[str, JsonValue] = {"reannouncements": row["reannouncements"]}
                announced.append(
                    await self._moved(
                        db,
                        row,
                        at,
                        actor=SWEEP_ACTOR,
                        event="reannounced",
                        detail=detail,
                        reannounce=True,
                    )
                )
            return announced

    @finish_even_if_cancelled
    async def count_open(self, agent: str) -> int:
        async with self._store.connection() as db:
            count = await db.fetchval(COUNT_OPEN, agent)
            return int(count or 0)

    @finish_even_if_cancelled
    async def owned_by(self, user: str, *, limit: int = 20) -> list[Escalation]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of escalations")
        async with self._store.connection() as db:
            rows = await db.fetch(SELECT_OWNED, user, limit)
            return [escalation_from_record(row) for row in rows]

    @finish_even_if_cancelled
    async def escalation_log(self, escalation_id: str) -> list[AuditEntry]:
        async with self._store.connection() as db:
            rows = await db.fetch(SELECT_LOG, escalation_id)
            return [audit_entry_from_record(row) for row in rows]

    # --- the outbox ---------------------------------------------------------------------------

    @finish_even_if_cancelled
    async def claim_deliveries(
        self, *, now: datetime, limit: int, lease: timedelta
    ) -> list[EscalationDelivery]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of entries")
        at = aware(now, field="now")
        async with self._store.transaction() as db:
            rows = await db.fetch(CLAIM_DELIVERIES, at, at + lease, limit)
            return sorted(map(_delivery_from_record, rows), key=lambda d: d.id)

    @finish_even_if_cancelled
    async def complete_delivery(self, delivery_id: int, *, now: datetime) -> None:
        async with self._store.connection() as db:
            await db.execute(COMPLETE_DELIVERY, delivery_id, aware(now, field="now"))

    @finish_even_if_cancelled
    async def retry_delivery(self, delivery_id: int, *, at: datetime, error: str) -> None:
        async with self._store.connection() as db:
            await db.execute(RETRY_DELIVERY, delivery_id, aware(at, field="at"), error[:2000])

    @finish_even_if_cancelled
    async def abandon_delivery(self, delivery_id: int, *, now: datetime, error: str) -> None:
        at = aware(now, field="now")
        async with self._store.transaction() as db:
            row = await db.fetchrow(ABANDON_DELIVERY, delivery_id, at, error[:2000])
            if row is not None:
                detail = {"effect": row["effect"], "attempts": row["attempts"], "error": error}
                await self._store.append_audit(
                    db, at, row["escalation_id"], OUTBOX_ACTOR, "delivery_abandoned", detail
                )

    @finish_even_if_cancelled
    async def pending_deliveries(self) -> int:
        async with self._store.connection() as db:
            count: int = await db.fetchval(COUNT_PENDING)
            return count
