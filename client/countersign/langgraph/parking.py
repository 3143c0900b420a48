"""Where parked runs wait: which interrupt of which thread each proposal answers, the decisions
known so far, and who is resuming a thread now. A SQLite file shared by every process that
receives callbacks (it may be the checkpointer's file); each change is one short transaction.

- ``countersign_waits``: an interrupt of a thread, ``waiting`` for decisions, ``resuming`` (one
  process claimed it; the claim lapses after the lease), or ``resumed``.
- ``countersign_slots``: each proposal an interrupt needs, in order, and its decision once known.
- ``countersign_slot_proposals``: the proposal (or an approver's edit of it) answering a slot.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiosqlite
from pydantic import JsonValue

from countersign.langgraph.asks import Ask

__all__ = ["Parking", "Ready", "Slot"]

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS countersign_waits (
    thread_id    TEXT NOT NULL,
    interrupt_id TEXT NOT NULL,
    config       TEXT NOT NULL,     -- JSON: the run's configurable, to resume it with
    state        TEXT NOT NULL CHECK (state IN ('waiting', 'resuming', 'resumed')),
    claimed_at   REAL,
    PRIMARY KEY (thread_id, interrupt_id)
);
CREATE TABLE IF NOT EXISTS countersign_slots (
    thread_id    TEXT NOT NULL,
    interrupt_id TEXT NOT NULL,
    position     INTEGER NOT NULL,
    ask          TEXT NOT NULL,     -- JSON: the Ask
    decision     TEXT,              -- JSON: its part of the resume value, once decided
    PRIMARY KEY (thread_id, interrupt_id, position)
);
CREATE TABLE IF NOT EXISTS countersign_slot_proposals (
    proposal_id  TEXT PRIMARY KEY,
    thread_id    TEXT NOT NULL,
    interrupt_id TEXT NOT NULL,
    position     INTEGER NOT NULL
);
"""

#: Waits of a thread whose every slot is decided, and no other process resuming the thread.
_READY: Final = """
SELECT w.interrupt_id, w.config FROM countersign_waits AS w
WHERE w.thread_id = :thread AND w.state = 'waiting'
  AND NOT EXISTS (SELECT 1 FROM countersign_slots AS s
                  WHERE s.thread_id = w.thread_id AND s.interrupt_id = w.interrupt_id
                    AND s.decision IS NULL)
  AND NOT EXISTS (SELECT 1 FROM countersign_waits AS r
                  WHERE r.thread_id = w.thread_id AND r.state = 'resuming'
                    AND r.claimed_at >= :stale)
"""


@dataclass(frozen=True, slots=True)
class Slot:
    """The proposal answering one part of one interrupt."""

    thread_id: str
    interrupt_id: str
    position: int
    ask: Ask
    decided: bool


@dataclass(frozen=True, slots=True)
class Ready:
    """Interrupts of a thread claimed for resuming, with their resume values."""

    thread_id: str
    config: dict[str, Any]
    #: interrupt id -> the decisions of its slots, in order, with their asks
    decisions: dict[str, tuple[list[Ask], list[dict[str, JsonValue]]]]


class Parking:
    """The parked runs in the SQLite file at ``path``."""

    def __init__(
        self,
        path: str | Path,
        *,
        lease: float = 600.0,
        clock: Callable[[], float] = time.time,
        busy_timeout: float = 30.0,
    ) -> None:
        self.path = Path(path)
        self._lease = lease
        self._clock = clock
        self._busy_timeout = busy_timeout
        self._ready = False

    async def park(
        self, thread: str, interrupt_id: str, config: dict[str, Any], asks: list[Ask]
    ) -> bool:
        """Record an interrupt and its slots; False when it was parked before."""
        async with self._tx() as db:
            cursor = await db.execute(
                "INSERT OR IGNORE INTO countersign_waits (thread_id, interrupt_id, config, state) "
                "VALUES (?, ?, ?, 'waiting')",
                (thread, interrupt_id, json.dumps(config)),
            )
            if cursor.rowcount == 0:
                return False
            await db.executemany(
                "INSERT INTO countersign_slots (thread_id, interrupt_id, position, ask) "
                "VALUES (?, ?, ?, ?)",
                [(thread, interrupt_id, n, ask.model_dump_json()) for n, ask in enumerate(asks)],
            )
        return True

    async def link(self, proposal_id: str, slot: Slot) -> None:
        """``proposal_id`` answers ``slot`` (the first proposal, or an approver's edit of it)."""
        async with self._tx() as db:
            await db.execute(
                "INSERT OR IGNORE INTO countersign_slot_proposals "
                "(proposal_id, thread_id, interrupt_id, position) VALUES (?, ?, ?, ?)",
                (proposal_id, slot.thread_id, slot.interrupt_id, slot.position),
            )

    async def slot_of(self, proposal_id: str) -> Slot | None:
        """The slot ``proposal_id`` answers, if it is one of ours."""
        async with self._tx() as db:
            cursor = await db.execute(
                "SELECT s.thread_id, s.interrupt_id, s.position, s.ask, s.decision "
                "FROM countersign_slot_proposals AS p JOIN countersign_slots AS s "
                "USING (thread_id, interrupt_id, position) WHERE p.proposal_id = ?",
                (proposal_id,),
            )
            row = await cursor.fetchone()
        if row is None:
            return None
        return Slot(row[0], row[1], row[2], Ask.model_validate_json(row[3]), row[4] is not None)

    async def decide(self, slot: Slot, decision: dict[str, JsonValue]) -> None:
        """Record a slot's decision (the first one recorded stands)."""
        async with self._tx() as db:
            await db.execute(
                "UPDATE countersign_slots SET decision = ? WHERE thread_id = ? "
                "AND interrupt_id = ? AND position = ? AND decision IS NULL",
                (json.dumps(decision), slot.thread_id, slot.interrupt_id, slot.position),
            )

    async def claim_ready(self, thread: str) -> Ready | None:
        """Claim the thread's waits whose slots are all decided, unless another process is
        resuming the thread; None when there is nothing to resume now."""
        now = self._clock()
        async with self._tx() as db:
            cursor = await db.execute(_READY, {"thread": thread, "stale": now - self._lease})
            waits = list(await cursor.fetchall())
            if not waits:
                return None
            decisions = {}
            for interrupt_id, _ in waits:
                await db.execute(
                    "UPDATE countersign_waits SET state = 'resuming', claimed_at = ? "
                    "WHERE thread_id = ? AND interrupt_id = ?",
                    (now, thread, interrupt_id),
                )
                cursor = await db.execute(
                    "SELECT ask, decision FROM countersign_slots WHERE thread_id = ? "
                    "AND interrupt_id = ? ORDER BY position",
                    (thread, interrupt_id),
                )
                rows = list(await cursor.fetchall())
                decisions[interrupt_id] = (
                    [Ask.model_validate_json(ask) for ask, _ in rows],
                    [json.loads(decision) for _, decision in rows],
                )
        return Ready(thread, json.loads(waits[0][1]), decisions)

    async def resumed(self, ready: Ready) -> None:
        await self._set(ready, "resumed")

    async def give_back(self, ready: Ready) -> None:
        """Resuming failed: the waits wait again, for the next callback or retry."""
        await self._set(ready, "waiting")

    async def _set(self, ready: Ready, state: str) -> None:
        async with self._tx() as db:
            await db.executemany(
                "UPDATE countersign_waits SET state = ? WHERE thread_id = ? AND interrupt_id = ? "
                "AND state = 'resuming'",
                [(state, ready.thread_id, interrupt_id) for interrupt_id in ready.decisions],
            )

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction (taken at once, so that processes queue instead of failing)."""
        db = await aiosqlite.connect(self.path, timeout=self._busy_timeout, isolation_level=None)
        try:
            if not self._ready:
                await db.executescript(_SCHEMA)
                self._ready = True
            await db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                await db.execute("ROLLBACK")
                raise
            await db.execute("COMMIT")
        finally:
            await db.close()
