"""The outbox of proposals' effects, written once for every backend: what a change enqueues in
its own transaction, and the verbs the outbox worker leases, completes, retries and abandons
entries with.

A change writes its effects (effects.py: Slack posts and updates, callbacks) as outbox
rows in the transaction that makes it, so an effect is delivered exactly when its change
committed. Workers lease due entries (``claim_deliveries``): on PostgreSQL with ``FOR UPDATE
SKIP LOCKED``, so workers in several instances never take the same entry nor wait for each
other; on SQLite under its one write lock. A decision's message update and thread reply are
leased first, so a person's decision is never behind a backlog of new cards.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from pydantic import JsonValue

from store.backend import Backend
from store.connector import Array, Row, Tx
from store.proposals.effects import effects_of, lane_of
from store.proposals.lifecycle import Effect
from store.proposals.records import Delivery, Proposal
from store.proposals.rows import delivery_from_row, proposal_known_from_row, with_approvals
from store.rows import check_limit
from store.shield import finish_even_if_cancelled

__all__ = ["ERROR_CHARS", "OUTBOX_ACTOR", "OutboxVerbs", "enqueue", "enqueue_effects"]

#: Who writes the audit entry of an abandoned delivery.
OUTBOX_ACTOR = "outbox"
#: How much of a delivery error is kept with the outbox entry (the audit keeps all of it).
ERROR_CHARS = 2000


async def enqueue(tx: Tx, proposal: Proposal, effects: Iterable[Effect], now: datetime) -> None:
    """Write one outbox entry per effect of ``proposal``, due at ``now``, inside ``tx``.

    A message update replaces the proposal's updates not yet under way: each renders the state
    at its delivery, so only the last needs a Slack call (an approval's "executing" update and
    its outcome's, when the execution is quicker than the outbox)."""
    for effect in effects:
        if effect is Effect.SLACK_UPDATE:
            await tx.execute(
                "supersede_updates",
                proposal_id=proposal.id,
                effect=effect.value,
                lane=lane_of(effect),
                now=now,
            )
        due = now
        if effect is Effect.SLACK_POST and proposal.shown_after is not None:
            due = max(now, proposal.shown_after)  # waiting in a batch: shown when it closes
        await tx.execute(
            "insert_outbox",
            proposal_id=proposal.id,
            effect=effect.value,
            lane=lane_of(effect),
            status=proposal.status.value,
            now=now,
            due=due,
        )


async def enqueue_effects(
    tx: Tx, row: Row, now: datetime, known: Proposal | None = None
) -> Proposal:
    """Write the outbox entries of the status the proposal ``row`` just entered; return the
    proposal (with its approvals), read over ``known`` when the caller held it before the
    change (rows.proposal_known_from_row)."""
    [proposal] = await with_approvals(tx, [proposal_known_from_row(row, known)])
    await enqueue(tx, proposal, effects_of(proposal), now)
    return proposal


class OutboxVerbs(Backend):
    """The Store protocol's outbox verbs, written once over the backend's transactions."""

    @finish_even_if_cancelled
    async def claim_deliveries(
        self, *, now: datetime, limit: int, lease: timedelta
    ) -> list[Delivery]:
        check_limit(limit, "entries")
        async with self.tx(write=True) as tx:
            # a decision's message update and reply first (each proposal's together, in
            # order), then whatever else is due; ``limit`` counts proposals' lanes
            rows = list(
                await tx.all("claim_decision_deliveries", now=now, lease=now + lease, limit=limit)
            )
            lanes = len({row["proposal_id"] for row in rows})
            if lanes < limit:
                rows += await tx.all(
                    "claim_deliveries", now=now, lease=now + lease, limit=limit - lanes
                )
            return sorted((delivery_from_row(row) for row in rows), key=lambda d: d.id)

    @finish_even_if_cancelled
    async def complete_deliveries(self, delivery_ids: Sequence[int], *, now: datetime) -> None:
        if delivery_ids:
            async with self.lone_write() as tx:
                await tx.execute(
                    "complete_deliveries", ids=Array(str(i) for i in delivery_ids), now=now
                )

    @finish_even_if_cancelled
    async def complete_delivery(self, delivery_id: int, *, now: datetime) -> None:
        async with self.lone_write() as tx:
            await tx.execute("complete_delivery", id=delivery_id, now=now)

    @finish_even_if_cancelled
    async def retry_delivery(self, delivery_id: int, *, at: datetime, error: str) -> None:
        async with self.lone_write() as tx:
            await tx.execute("retry_delivery", id=delivery_id, at=at, error=error[:ERROR_CHARS])

    @finish_even_if_cancelled
    async def abandon_delivery(self, delivery_id: int, *, now: datetime, error: str) -> None:
        async with self.tx(write=True) as tx:
            row = await tx.one(
                "abandon_delivery", id=delivery_id, now=now, error=error[:ERROR_CHARS]
            )
            if row is not None:
                detail: dict[str, JsonValue] = {
                    "effect": row["effect"],
                    "attempts": row["attempts"],
                    "error": error,
                }
                await tx.append_audit(
                    now, row["proposal_id"], OUTBOX_ACTOR, "delivery_abandoned", detail
                )

    @finish_even_if_cancelled
    async def pending_deliveries(self) -> int:
        async with self.tx(write=False) as tx:
            row = await tx.one("count_pending_deliveries")
            assert row is not None  # count(*) returns one row
            return int(row["pending"])
