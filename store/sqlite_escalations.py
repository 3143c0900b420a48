"""The SQLite backend of the EscalationStore protocol.

It shares the SqliteStore's connection, lock and audit chain: every transition is one
``BEGIN IMMEDIATE`` transaction (SqliteStore.transaction) holding the compare-and-set, its audit
entry on the one hash chain (SqliteStore.append_audit) and its outbox entries. Get it from
:meth:`SqliteStore.escalations`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import aiosqlite
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
from store.rows import audit_entry_from_row, db_time, from_db_time
from store.shield import finish_even_if_cancelled

if TYPE_CHECKING:
    from store.sqlite import SqliteStore

__all__ = ["SqliteEscalations", "escalation_from_row"]

#: A new escalation; no row back means the agent already used this submission key.
INSERT_ESCALATION = """
INSERT INTO escalations (
    id, agent, submission_key, submission_fingerprint, conversation_id, requested_by,
    customer_ref, team, summary, trigger, verdict, channel, callback_url, created_at, status,
    announced_at, updated_at
) VALUES (
    :id, :agent, :submission_key, :submission_fingerprint, :conversation_id, :requested_by,
    :customer_ref, :team, :summary, :trigger, :verdict, :channel, :callback_url, :created_at,
    'open', :created_at, :created_at
)
ON CONFLICT (agent, submission_key) DO NOTHING
RETURNING *
"""

SELECT_ESCALATION = "SELECT * FROM escalations WHERE id = ?"
SELECT_BY_KEY = "SELECT * FROM escalations WHERE agent = ? AND submission_key = ?"

#: Remember the Slack message that shows the escalation.
UPDATE_MESSAGE = """
UPDATE escalations SET slack_channel = ?, slack_ts = ?, updated_at = ? WHERE id = ? RETURNING *
"""

#: open or handed_back -> taken by the clicker: one owner, however many click at once.
TAKE = """
UPDATE escalations SET status = 'taken', owner = :actor, updated_at = :now
WHERE id = :id AND status IN ('open', 'handed_back')
RETURNING *
"""

#: taken by the clicker -> handed_back, with the note for the agent.
HAND_BACK = """
UPDATE escalations SET status = 'handed_back', owner = NULL, note = :note, updated_at = :now
WHERE id = :id AND status = 'taken' AND owner = :actor
RETURNING *
"""

#: open, handed_back, or taken by the clicker -> resolved.
RESOLVE = """
UPDATE escalations
SET status = 'resolved', owner = NULL, note = :note, resolved_by = :actor, resolved_at = :now,
    updated_at = :now
WHERE id = :id AND (status IN ('open', 'handed_back') OR (status = 'taken' AND owner = :actor))
RETURNING *
"""

#: Unclaimed escalations due for another announcement; the sweep moves announced_at on.
REANNOUNCE_DUE = """
UPDATE escalations
SET announced_at = :now, reannouncements = reannouncements + 1, updated_at = :now
WHERE id IN (
    SELECT id FROM escalations
    WHERE status = 'open' AND announced_at <= :due AND reannouncements < :most
    ORDER BY announced_at, id
    LIMIT :limit
) AND status = 'open' AND announced_at <= :due AND reannouncements < :most
RETURNING *
"""

#: How many escalations of one agent nobody has taken yet (the per-agent limit).
COUNT_OPEN = "SELECT count(*) FROM escalations WHERE status = 'open' AND agent = ?"

#: What one person has taken.
SELECT_OWNED = """
SELECT * FROM escalations WHERE status = 'taken' AND owner = ? ORDER BY updated_at, id LIMIT ?
"""

SELECT_LOG = "SELECT * FROM audit_log WHERE proposal_id = ? ORDER BY seq"

INSERT_OUTBOX = """
INSERT INTO escalation_outbox (
    escalation_id, effect, lane, status, reannounce, created_at, next_attempt_at
) VALUES (?, ?, ?, ?, ?, ?, ?)
"""

#: Lease up to :limit due entries, each the first undelivered one of its escalation and lane.
CLAIM_DELIVERIES = """
UPDATE escalation_outbox SET leased_until = :lease, attempts = attempts + 1
WHERE id IN (
    SELECT o.id FROM escalation_outbox AS o
    WHERE o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= :now
      AND (o.leased_until IS NULL OR o.leased_until <= :now)
      AND NOT EXISTS (
          SELECT 1 FROM escalation_outbox AS e
          WHERE e.escalation_id = o.escalation_id AND e.lane = o.lane AND e.id < o.id
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY o.next_attempt_at, o.id
    LIMIT :limit
)
RETURNING *
"""

COMPLETE_DELIVERY = (
    "UPDATE escalation_outbox SET delivered_at = ?, leased_until = NULL WHERE id = ?"
)
RETRY_DELIVERY = """
UPDATE escalation_outbox SET next_attempt_at = ?, leased_until = NULL, last_error = ?
WHERE id = ?
"""
ABANDON_DELIVERY = """
UPDATE escalation_outbox SET abandoned_at = ?, leased_until = NULL, last_error = ? WHERE id = ?
RETURNING escalation_id, effect, attempts
"""
COUNT_PENDING = (
    "SELECT count(*) FROM escalation_outbox WHERE delivered_at IS NULL AND abandoned_at IS NULL"
)

SWEEP_ACTOR = "sweep"
SLACK_ACTOR = "slack"
OUTBOX_ACTOR = "outbox"


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _time(text: str | None) -> datetime | None:
    return None if text is None else from_db_time(text)


def escalation_from_row(row: sqlite3.Row) -> Escalation:
    """The one place a SQLite row becomes an Escalation."""
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
        created_at=from_db_time(row["created_at"]),
        status=EscalationStatus(row["status"]),
        owner=row["owner"],
        note=row["note"],
        resolved_by=row["resolved_by"],
        resolved_at=_time(row["resolved_at"]),
        announced_at=from_db_time(row["announced_at"]),
        reannouncements=row["reannouncements"],
        slack_channel=row["slack_channel"],
        slack_ts=row["slack_ts"],
        updated_at=from_db_time(row["updated_at"]),
    )


def _delivery_from_row(row: sqlite3.Row) -> EscalationDelivery:
    return EscalationDelivery(
        id=row["id"],
        escalation_id=row["escalation_id"],
        effect=Effect(row["effect"]),
        status=EscalationStatus(row["status"]),
        reannounce=bool(row["reannounce"]),
        attempts=row["attempts"],
        created_at=from_db_time(row["created_at"]),
    )


def _new_params(new: NewEscalation) -> dict[str, Any]:
    return {
        "id": new.id,
        "agent": new.agent,
        "submission_key": new.submission_key,
        "submission_fingerprint": new.submission_fingerprint,
        "conversation_id": new.conversation_id,
        "requested_by": new.requested_by,
        "customer_ref": new.customer_ref,
        "team": new.team,
        "summary": new.summary.model_dump_json(),
        "trigger": new.trigger.model_dump_json(),
        "verdict": new.verdict.model_dump_json(),
        "channel": new.channel,
        "callback_url": new.callback_url,
        "created_at": db_time(new.created_at, field="created_at"),
    }


class SqliteEscalations:
    """Escalations in the SqliteStore's database, in its transactions and audit chain."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    async def _existing(self, db: aiosqlite.Connection, escalation_id: str) -> Escalation:
        row = await self._store.one(db, SELECT_ESCALATION, (escalation_id,))
        if row is None:
            raise EscalationNotFound(f"no escalation has id {escalation_id!r}")
        return escalation_from_row(row)

    async def _moved(
        self,
        db: aiosqlite.Connection,
        row: sqlite3.Row,
        now: datetime,
        *,
        actor: str,
        event: str,
        detail: Mapping[str, JsonValue],
        reannounce: bool = False,
    ) -> Escalation:
        """Audit the transition ``row`` shows and write its outbox entries, in ``db``'s
        transaction."""
        escalation = escalation_from_row(row)
        await self._store.append_audit(db, now, escalation.id, actor, event, detail)
        effects = [Effect.SLACK_REPLY] if reannounce else escalation_effects_of(escalation)
        at = db_time(now, field="now")
        for effect in effects:
            params = (
                escalation.id,
                effect.value,
                lane_of(effect),
                escalation.status.value,
                int(reannounce),
                at,
                at,
            )
            await db.execute(INSERT_OUTBOX, params)
        return escalation

    @finish_even_if_cancelled
    async def create_escalation(self, new: NewEscalation) -> tuple[Escalation, bool]:
        async with self._store.transaction(write=True) as db:
            row = await self._store.one(db, INSERT_ESCALATION, _new_params(new))
            if row is None:
                found = await self._store.one(db, SELECT_BY_KEY, (new.agent, new.submission_key))
                assert found is not None  # the row whose unique key refused the insert
                existing = escalation_from_row(found)
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
        async with self._store.transaction(write=False) as db:
            return await self._existing(db, escalation_id)

    @finish_even_if_cancelled
    async def find_escalation(self, agent: str, submission_key: str) -> Escalation | None:
        async with self._store.transaction(write=False) as db:
            row = await self._store.one(db, SELECT_BY_KEY, (agent, submission_key))
            return None if row is None else escalation_from_row(row)

    @finish_even_if_cancelled
    async def attach_escalation_message(
        self, escalation_id: str, channel: str, ts: str, *, now: datetime
    ) -> Escalation:
        async with self._store.transaction(write=True) as db:
            params = (channel, ts, db_time(now, field="now"), escalation_id)
            row = await self._store.one(db, UPDATE_MESSAGE, params)
            if row is None:
                raise EscalationNotFound(f"no escalation has id {escalation_id!r}")
            detail = {"channel": channel, "ts": ts}
            event = "posted_to_slack"
            await self._store.append_audit(db, now, escalation_id, SLACK_ACTOR, event, detail)
            return escalation_from_row(row)

    @finish_even_if_cancelled
    async def take(self, escalation_id: str, *, actor: str, now: datetime) -> EscalationResult:
        params = {"id": escalation_id, "actor": actor, "now": db_time(now, field="now")}
        async with self._store.transaction(write=True) as db:
            row = await self._store.one(db, TAKE, params)
            if row is None:
                return _why_not(await self._existing(db, escalation_id), actor, "take")
            taken = await self._moved(db, row, now, actor=actor, event="taken", detail={})
            return Moved(taken)

    @finish_even_if_cancelled
    async def hand_back(
        self, escalation_id: str, *, actor: str, note: str, now: datetime
    ) -> EscalationResult:
        params = {
            "id": escalation_id,
            "actor": actor,
            "note": note,
            "now": db_time(now, field="now"),
        }
        async with self._store.transaction(write=True) as db:
            row = await self._store.one(db, HAND_BACK, params)
            if row is None:
                return _why_not(await self._existing(db, escalation_id), actor, "hand back")
            detail: dict[str, JsonValue] = {"note": note}
            back = await self._moved(db, row, now, actor=actor, event="handed_back", detail=detail)
            return Moved(back)

    @finish_even_if_cancelled
    async def resolve(
        self, escalation_id: str, *, actor: str, note: str | None, now: datetime
    ) -> EscalationResult:
        params = {
            "id": escalation_id,
            "actor": actor,
            "note": note,
            "now": db_time(now, field="now"),
        }
        async with self._store.transaction(write=True) as db:
            row = await self._store.one(db, RESOLVE, params)
            if row is None:
                return _why_not(await self._existing(db, escalation_id), actor, "resolve")
            detail: dict[str, JsonValue] = {"note": note}
            done = await self._moved(db, row, now, actor=actor, event="resolved", detail=detail)
            return Moved(done)

    @finish_even_if_cancelled
    async def reannounce_due(
        self, *, now: datetime, after: timedelta, most: int, limit: int = 100
    ) -> list[Escalation]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of escalations")
        params = {
            "now": db_time(now, field="now"),
            "due": db_time(now - after, field="now"),
            "most": most,
            "limit": limit,
        }
        async with self._store.transaction(write=True) as db:
            rows = await db.execute_fetchall(REANNOUNCE_DUE, params)
            announced = []
            for row in sorted(rows, key=lambda r: r["id"]):
                detail: dict[str, JsonValue] = {"reannouncements": row["reannouncements"]}
                announced.append(
                    await self._moved(
                        db,
                        row,
                        now,
                        actor=SWEEP_ACTOR,
                        event="reannounced",
                        detail=detail,
                        reannounce=True,
                    )
                )
            return announced

    @finish_even_if_cancelled
    async def count_open(self, agent: str) -> int:
        async with self._store.transaction(write=False) as db:
            row = await self._store.one(db, COUNT_OPEN, (agent,))
            return 0 if row is None else int(row[0])

    @finish_even_if_cancelled
    async def owned_by(self, user: str, *, limit: int = 20) -> list[Escalation]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of escalations")
        async with self._store.transaction(write=False) as db:
            rows = await db.execute_fetchall(SELECT_OWNED, (user, limit))
            return [escalation_from_row(row) for row in rows]

    @finish_even_if_cancelled
    async def escalation_log(self, escalation_id: str) -> list[AuditEntry]:
        async with self._store.transaction(write=False) as db:
            rows = await db.execute_fetchall(SELECT_LOG, (escalation_id,))
            return [audit_entry_from_row(row) for row in rows]

    # --- the outbox ---------------------------------------------------------------------------

    @finish_even_if_cancelled
    async def claim_deliveries(
        self, *, now: datetime, limit: int, lease: timedelta
    ) -> list[EscalationDelivery]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of entries")
        params = {
            "now": db_time(now, field="now"),
            "lease": db_time(now + lease, field="now"),
            "limit": limit,
        }
        async with self._store.transaction(write=True) as db:
            rows = await db.execute_fetchall(CLAIM_DELIVERIES, params)
            return sorted((_delivery_from_row(row) for row in rows), key=lambda d: d.id)

    @finish_even_if_cancelled
    async def complete_delivery(self, delivery_id: int, *, now: datetime) -> None:
        async with self._store.transaction(write=True) as db:
            await db.execute(COMPLETE_DELIVERY, (db_time(now, field="now"), delivery_id))

    @finish_even_if_cancelled
    async def retry_delivery(self, delivery_id: int, *, at: datetime, error: str) -> None:
        async with self._store.transaction(write=True) as db:
            await db.execute(RETRY_DELIVERY, (db_time(at, field="at"), error[:2000], delivery_id))

    @finish_even_if_cancelled
    async def abandon_delivery(self, delivery_id: int, *, now: datetime, error: str) -> None:
        async with self._store.transaction(write=True) as db:
            params = (db_time(now, field="now"), error[:2000], delivery_id)
            row = await self._store.one(db, ABANDON_DELIVERY, params)
            if row is not None:
                detail = {"effect": row["effect"], "attempts": row["attempts"], "error": error}
                await self._store.append_audit(
                    db, now, row["escalation_id"], OUTBOX_ACTOR, "delivery_abandoned", detail
                )

    @finish_even_if_cancelled
    async def pending_deliveries(self) -> int:
        async with self._store.transaction(write=False) as db:
            row = await self._store.one(db, COUNT_PENDING, ())
            assert row is not None
            return int(row[0])


def _why_not(current: Escalation, actor: str, verb: str) -> Refused:
    return Refused(current, refusal_of(current, actor, verb))
