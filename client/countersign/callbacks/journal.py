"""The record of callbacks already handled, so that a replayed or retried callback runs nothing
twice, even when several processes receive callbacks for the same agent.

A callback is known by what it tells: the document's kind, id and status (a proposal tells its
final status once). Handling one is claimed first; the claim becomes ``handled`` when the handler
returns, and is given up when it fails, so that Countersign's next attempt can try again. A claim
whose process died is taken over once it is older than the lease.

The SQLite journal uses the standard library's sqlite3 (each call in a worker thread, on a short
connection of its own), so that receiving callbacks installs nothing beyond the client.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Final, Protocol

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
        self._lock = threading.Lock()  #: the table is created once per journal

    async def claim(self, key: str) -> Claim:
        return await asyncio.to_thread(self._claim_now, key, self._clock())

    async def finish(self, key: str) -> None:
        await asyncio.to_thread(self._finish_now, key, self._clock())

    async def release(self, key: str) -> None:
        await asyncio.to_thread(self._release_now, key)

    def _claim_now(self, key: str, now: float) -> Claim:
        with self._connected() as db:
            stale = now - self._lease
            won = db.execute(_CLAIM, {"key": key, "now": now, "stale": stale}).fetchone()
            db.commit()
            if won is not None:
                return Claim.CLAIMED
            row = db.execute(
                "SELECT state FROM countersign_callbacks WHERE key = :key", {"key": key}
            ).fetchone()
        return Claim.HANDLED if row is not None and row[0] == "handled" else Claim.BUSY

    def _finish_now(self, key: str, now: float) -> None:
        with self._connected() as db:
            db.execute(
                "UPDATE countersign_callbacks SET state = 'handled', handled_at = :now "
                "WHERE key = :key",
                {"key": key, "now": now},
            )
            db.commit()

    def _release_now(self, key: str) -> None:
        with self._connected() as db:
            db.execute(
                "DELETE FROM countersign_callbacks WHERE key = :key AND state = 'handling'",
                {"key": key},
            )
            db.commit()

    @contextmanager
    def _connected(self) -> Iterator[sqlite3.Connection]:
        """One short connection per call, so that any number of processes can share the file."""
        with closing(sqlite3.connect(self.path, timeout=self._busy_timeout)) as db:
            if not self._ready:
                with self._lock:
                    db.execute(_SCHEMA)
                    db.commit()
                    self._ready = True
            yield db
