"""The record of callbacks already handled, so that a replayed or retried callback runs nothing
twice, even when several processes receive callbacks for the same agent.

A callback is known by what it tells: the document's kind, id and status (a proposal tells its
final status once). Handling one is claimed first; the claim becomes ``handled`` when the handler
returns, and is given up when it fails, so that Countersign's next attempt can try again. A claim
whose process died is taken over once it is older than the lease.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from enum import StrEnum
from pathlib import Path
from typing import Final, Protocol

import aiosqlite

__all__ = ["Claim", "Journal", "MemoryJournal", "SqliteJournal"]

#: How long a claim holds before another process may take it over (a handler that died).
DEFAULT_LEASE: Final = 600.0


class Claim(StrEnum):
    """What claiming a callback found."""

    CLAIMED = "claimed"  #: nobody handled it yet: handle it, then finish() or release()
    HANDLED = "handled"  #: handled before: do nothing
    BUSY = "busy"  #: being handled right now, elsewhere: ask to be called again later


class Journal(Protocol):
    """Where handled callbacks are recorded."""

    async def claim(self, key: str) -> Claim: ...

    async def finish(self, key: str) -> None: ...

    async def release(self, key: str) -> None: ...


class MemoryJournal:
    """Handled callbacks recorded in this process only: enough for one receiver process that
    may forget what it handled when it restarts."""

    def __init__(self, *, lease: float = DEFAULT_LEASE, clock: Callable[[], float] = time.time):
        self._claims: dict[str, float] = {}
        self._handled: set[str] = set()
        self._lease = lease
        self._clock = clock

    async def claim(self, key: str) -> Claim:
        if key in self._handled:
            return Claim.HANDLED
        now = self._clock()
        claimed_at = self._claims.get(key)
        if claimed_at is not None and claimed_at > now - self._lease:
            return Claim.BUSY
        self._claims[key] = now
        return Claim.CLAIMED

    async def finish(self, key: str) -> None:
        self._claims.pop(key, None)
        self._handled.add(key)

    async def release(self, key: str) -> None:
        self._claims.pop(key, None)


_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS countersign_callbacks (
    key        TEXT PRIMARY KEY,                 -- kind:id:status of the callback's document
    state      TEXT NOT NULL CHECK (state IN ('handling', 'handled')),
    claimed_at REAL NOT NULL,                    -- unix time of the latest claim
    handled_at REAL
)
"""

#: Claim a callback nobody handled, or one whose claim outlived the lease.
_CLAIM: Final = """
INSERT INTO countersign_callbacks (key, state, claimed_at) VALUES (:key, 'handling', :now)
ON CONFLICT (key) DO UPDATE SET claimed_at = :now
WHERE countersign_callbacks.state = 'handling' AND countersign_callbacks.claimed_at < :stale
RETURNING key
"""


class SqliteJournal:
    """Handled callbacks recorded in a SQLite file, shared by every process that opens it. The
    file may be the one a LangGraph SQLite checkpointer uses: the table is
    ``countersign_callbacks``."""

    def __init__(
        self,
        path: str | Path,
        *,
        lease: float = DEFAULT_LEASE,
        clock: Callable[[], float] = time.time,
        busy_timeout: float = 30.0,
    ) -> None:
        self.path = Path(path)
        self._lease = lease
        self._clock = clock
        self._busy_timeout = busy_timeout
        self._ready = False
        self._lock = asyncio.Lock()

    async def claim(self, key: str) -> Claim:
        now = self._clock()
        async with self._connected() as db:
            cursor = await db.execute(_CLAIM, {"key": key, "now": now, "stale": now - self._lease})
            won = await cursor.fetchone()
            await db.commit()
            if won is not None:
                return Claim.CLAIMED
            cursor = await db.execute(
                "SELECT state FROM countersign_callbacks WHERE key = :key", {"key": key}
            )
            row = await cursor.fetchone()
        return Claim.HANDLED if row is not None and row[0] == "handled" else Claim.BUSY

    async def finish(self, key: str) -> None:
        async with self._connected() as db:
            await db.execute(
                "UPDATE countersign_callbacks SET state = 'handled', handled_at = :now "
                "WHERE key = :key",
                {"key": key, "now": self._clock()},
            )
            await db.commit()

    async def release(self, key: str) -> None:
        async with self._connected() as db:
            await db.execute(
                "DELETE FROM countersign_callbacks WHERE key = :key AND state = 'handling'",
                {"key": key},
            )
            await db.commit()

    @asynccontextmanager
    async def _connected(self) -> AsyncIterator[aiosqlite.Connection]:
        """One short connection per call, so that any number of processes can share the file."""
        db = await aiosqlite.connect(self.path, timeout=self._busy_timeout)
        try:
            if not self._ready:
                async with self._lock:
                    await db.execute(_SCHEMA)
                    await db.commit()
                    self._ready = True
            yield db
        finally:
            await db.close()
