"""The EscalationStore, written once over a backend's connector.

Its SQL is named in store/escalations/sql/common/escalations.sql, and, for the re-announcement
sweep and the outbox claim, which take rows with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, in
store/escalations/sql/<dialect>/escalations.sql. Every transition is one transaction holding the
compare-and-set (which, on PostgreSQL, locks the escalation's row), its audit entry on the
store's one hash chain (row first, then the audit head, as everywhere) and its outbox entries.
Get it from ``Store.escalations()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from pydantic import JsonValue

from store.audit import AuditEntry, audit_entry_from_row
from store.backend import FamilyStore
from store.connector import Row, Tx
from store.escalations.records import (
    Escalation,
    EscalationConflict,
    EscalationDelivery,
    EscalationNotFound,
    EscalationResult,
    Moved,
    NewEscalation,
    Refused,
    escalation_effects_of,
    refusal_of,
)
from store.proposals.effects import lane_of
from store.proposals.lifecycle import Effect
from store.rows import check_limit, model_from_row, required
from store.shield import finish_even_if_cancelled

__all__ = ["EscalationStore", "escalation_from_row"]

#: Who the audit names for what no person or agent did.
SWEEP_ACTOR = "sweep"
SLACK_ACTOR = "slack"
OUTBOX_ACTOR = "outbox"

#: The audit event of each transition verb.
EVENTS = {"take": "taken", "hand back": "handed_back", "resolve": "resolved"}

#: How much of a delivery error is kept with its outbox entry.
ERROR_CHARS = 2000


def escalation_from_row(row: Row) -> Escalation:
    """The one place a stored row (SQLite's or PostgreSQL's) becomes an Escalation."""
    return model_from_row(Escalation, row)


def _delivery_from_row(row: Row) -> EscalationDelivery:
    return model_from_row(EscalationDelivery, row)


def _new_params(new: NewEscalation) -> dict[str, Any]:
    """The named parameters of ``insert_escalation``: the report as JSON text."""
    params: dict[str, Any] = {name: getattr(new, name) for name in NewEscalation.model_fields}
    params["summary"] = new.summary.model_dump_json()
    params["trigger"] = new.trigger.model_dump_json()
    params["verdict"] = new.verdict.model_dump_json()
    return params


class EscalationStore(FamilyStore):
    """Escalations; get it from ``Store.escalations()``."""

    @staticmethod
    async def _moved(
        tx: Tx,
        row: Row,
        now: datetime,
        *,
        actor: str,
        event: str,
        detail: Mapping[str, JsonValue],
        reannounce: bool = False,
    ) -> Escalation:
        """Audit the transition ``row`` shows and write its outbox entries, in ``tx``."""
        escalation = escalation_from_row(row)
        await tx.append_audit(now, escalation.id, actor, event, detail)
        effects = [Effect.SLACK_REPLY] if reannounce else escalation_effects_of(escalation)
        for effect in effects:
            await tx.execute(
                "insert_escalation_outbox",
                escalation_id=escalation.id,
                effect=effect.value,
                lane=lane_of(effect),
                status=escalation.status.value,
                reannounce=reannounce,
                now=now,
            )
        return escalation

    @finish_even_if_cancelled
    async def create_escalation(self, new: NewEscalation) -> tuple[Escalation, bool]:
        """Store it open, with its audit entry and its Slack post. Returns (escalation, created).

        The same ``submission_key`` and fingerprint return the stored one (created False); the
        same key with another fingerprint raises EscalationConflict.
        """
        async with self._backend.tx(write=True) as tx:
            row = await tx.one("insert_escalation", **_new_params(new))
            if row is None:
                found = await tx.one(
                    "select_escalation_by_key", agent=new.agent, submission_key=new.submission_key
                )
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
                tx, row, new.created_at, actor=new.agent, event="escalated", detail=detail
            )
            return created, True

    @finish_even_if_cancelled
    async def get_escalation(self, escalation_id: str) -> Escalation:
        """Raises EscalationNotFound."""
        return await self._reading(self._existing, escalation_id)

    @finish_even_if_cancelled
    async def find_escalation(self, agent: str, submission_key: str) -> Escalation | None:
        async with self._backend.tx(write=False) as tx:
            row = await tx.one(
                "select_escalation_by_key", agent=agent, submission_key=submission_key
            )
            return None if row is None else escalation_from_row(row)

    @finish_even_if_cancelled
    async def attach_escalation_message(
        self, escalation_id: str, channel: str, ts: str, *, now: datetime
    ) -> Escalation:
        async with self._backend.tx(write=True) as tx:
            row = await tx.one(
                "attach_escalation_message", id=escalation_id, channel=channel, ts=ts, now=now
            )
            if row is None:
                raise EscalationNotFound(f"no escalation has id {escalation_id!r}")
            detail: dict[str, JsonValue] = {"channel": channel, "ts": ts}
            await tx.append_audit(now, escalation_id, SLACK_ACTOR, "posted_to_slack", detail)
            return escalation_from_row(row)

    async def _outcome(
        self,
        tx: Tx,
        row: Row | None,
        escalation_id: str,
        actor: str,
        verb: str,
        now: datetime,
        detail: Mapping[str, JsonValue],
    ) -> EscalationResult:
        """What ``verb``'s compare-and-set came to: ``row`` moved (audited, with its outbox
        entries), or, with no row, why ``actor`` could not, from the escalation as it is now."""
        if row is None:
            current = await self._existing(tx, escalation_id)
            return Refused(current, refusal_of(current, actor, verb))
        event = EVENTS[verb]
        return Moved(await self._moved(tx, row, now, actor=actor, event=event, detail=detail))

    @finish_even_if_cancelled
    async def take(self, escalation_id: str, *, actor: str, now: datetime) -> EscalationResult:
        """open or handed_back -> taken, owned by ``actor``; one owner however many click."""
        async with self._backend.tx(write=True) as tx:
            row = await tx.one("take_escalation", id=escalation_id, actor=actor, now=now)
            return await self._outcome(tx, row, escalation_id, actor, "take", now, {})

    @finish_even_if_cancelled
    async def hand_back(
        self, escalation_id: str, *, actor: str, note: str, now: datetime
    ) -> EscalationResult:
        """taken (by ``actor``) -> handed_back, with the note for the agent."""
        async with self._backend.tx(write=True) as tx:
            row = await tx.one(
                "hand_back_escalation", id=escalation_id, actor=actor, note=note, now=now
            )
            detail: dict[str, JsonValue] = {"note": note}
            return await self._outcome(tx, row, escalation_id, actor, "hand back", now, detail)

    @finish_even_if_cancelled
    async def resolve(
        self, escalation_id: str, *, actor: str, note: str | None, now: datetime
    ) -> EscalationResult:
        """open, handed_back, or taken by ``actor`` -> resolved."""
        async with self._backend.tx(write=True) as tx:
            row = await tx.one(
                "resolve_escalation", id=escalation_id, actor=actor, note=note, now=now
            )
            detail: dict[str, JsonValue] = {"note": note}
            return await self._outcome(tx, row, escalation_id, actor, "resolve", now, detail)

    @finish_even_if_cancelled
    async def reannounce_due(
        self, *, now: datetime, after: timedelta, most: int, limit: int = 100
    ) -> list[Escalation]:
        """Open escalations last announced ``after`` ago or longer and announced again fewer
        than ``most`` times: announce them again (a thread reply through the outbox), once per
        period however many sweeps run."""
        check_limit(limit, "escalations")
        async with self._backend.tx(write=True) as tx:
            rows = await tx.all(
                "reannounce_due_escalations", now=now, due=now - after, most=most, limit=limit
            )
            announced = []
            for row in sorted(rows, key=lambda r: r["id"]):
                detail: dict[str, JsonValue] = {"reannouncements": row["reannouncements"]}
                announced.append(
                    await self._moved(
                        tx,
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
        """How many of ``agent``'s escalations nobody has taken yet (status open), counted in
        the database, so every instance sees the same number."""
        async with self._backend.tx(write=False) as tx:
            row = await tx.one("count_open_escalations", agent=agent)
            return 0 if row is None else int(row["open_count"])

    @finish_even_if_cancelled
    async def owned_by(self, user: str, *, limit: int = 20) -> list[Escalation]:
        """Escalations ``user`` has taken, oldest first."""
        check_limit(limit, "escalations")
        async with self._backend.tx(write=False) as tx:
            rows = await tx.all("select_escalations_owned_by", owner=user, limit=limit)
            return [escalation_from_row(row) for row in rows]

    @finish_even_if_cancelled
    async def escalation_log(self, escalation_id: str) -> list[AuditEntry]:
        await self._backend.audit_sealed()
        async with self._backend.tx(write=False) as tx:
            rows = await tx.all("select_escalation_log", id=escalation_id)
            return [audit_entry_from_row(row) for row in rows]

    # --- the outbox ---------------------------------------------------------------------------

    @finish_even_if_cancelled
    async def claim_deliveries(
        self, *, now: datetime, limit: int, lease: timedelta
    ) -> list[EscalationDelivery]:
        check_limit(limit, "entries")
        async with self._backend.tx(write=True) as tx:
            rows = await tx.all(
                "claim_escalation_deliveries", now=now, lease=now + lease, limit=limit
            )
            return sorted(map(_delivery_from_row, rows), key=lambda delivery: delivery.id)

    @finish_even_if_cancelled
    async def complete_delivery(self, delivery_id: int, *, now: datetime) -> None:
        async with self._backend.tx(write=True) as tx:
            await tx.execute("complete_escalation_delivery", id=delivery_id, now=now)

    @finish_even_if_cancelled
    async def retry_delivery(self, delivery_id: int, *, at: datetime, error: str) -> None:
        async with self._backend.tx(write=True) as tx:
            await tx.execute(
                "retry_escalation_delivery", id=delivery_id, at=at, error=error[:ERROR_CHARS]
            )

    @finish_even_if_cancelled
    async def abandon_delivery(self, delivery_id: int, *, now: datetime, error: str) -> None:
        async with self._backend.tx(write=True) as tx:
            row = await tx.one(
                "abandon_escalation_delivery", id=delivery_id, now=now, error=error[:ERROR_CHARS]
            )
            if row is not None:
                detail: dict[str, JsonValue] = {
                    "effect": row["effect"],
                    "attempts": row["attempts"],
                    "error": error,
                }
                event, escalation_id = "delivery_abandoned", row["escalation_id"]
                await tx.append_audit(now, escalation_id, OUTBOX_ACTOR, event, detail)

    @finish_even_if_cancelled
    async def pending_deliveries(self) -> int:
        async with self._backend.tx(write=False) as tx:
            row = await tx.one("count_pending_escalation_deliveries")
            assert row is not None  # count(*) always returns its row
            return int(row["pending_count"])

    @staticmethod
    async def _existing(tx: Tx, escalation_id: str) -> Escalation:
        missing = EscalationNotFound(f"no escalation has id {escalation_id!r}")
        return escalation_from_row(
            await required(tx, missing, "select_escalation", id=escalation_id)
        )
