"""One SQLite connection for the event loop: statements run on the loop's own thread, waits in
aiosqlite's thread.

A statement of the store reads or writes a few rows by an index and takes SQLite some
microseconds; sending it to aiosqlite's thread and back (a queue, a thread wake-up, a wake-up of
the loop) costs about ten times as much CPU as running it (the benchmark's decisions ran some
forty statements each). So statements run inline. What may wait goes to the thread as before:
``BEGIN IMMEDIATE`` (another process may hold the write lock, for up to the busy timeout) and
``COMMIT`` (the disk flush of ``synchronous=FULL``), migrations, closing.

A read that turns out long (an export, a full audit verify on a large file) must not hold the
loop: on a connection opened with a ``budget``, a statement that runs past it is interrupted by
SQLite's progress handler and run again in the thread. Only a read is ever interrupted: a
reader's connection is read-only, and the writer's has no budget (its statements are the
store's bounded writes; interrupting one would roll back the whole batch).

The two threads never use the connection at once: every use awaits the one before it (the
store's lock for the writer, a reader's checkout for a reader).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiosqlite

from store.connector import Row

__all__ = ["INLINE_BUDGET_SECONDS", "SqliteConnection"]

#: How long a read may run on the loop's thread before it is run again in aiosqlite's thread.
INLINE_BUDGET_SECONDS = 0.002
#: SQLite calls the progress handler every this many virtual machine instructions (a point
#: lookup takes a few hundred: the handler is not called at all for those).
PROGRESS_EVERY = 20_000

Params = Sequence[Any] | dict[str, Any]


class SqliteConnection:
    """A SQLite connection shared by the event loop (statements) and aiosqlite's thread (waits).

    Open it with :meth:`open`. ``execute`` and ``execute_fetchall`` have aiosqlite's shape, so
    that code written against either reads the same.
    """

    def __init__(
        self, raw: sqlite3.Connection, worker: aiosqlite.Connection, *, budget: float | None
    ) -> None:
        self._raw = raw
        #: aiosqlite's connection to the same SQLite connection: what may wait runs through it
        self.worker = worker
        self._budget = budget
        self._deadline: float | None = None  #: when an inline read is interrupted; None: never
        self.moved = 0  #: reads that ran past the budget and were run again in the thread
        if budget is not None:
            raw.set_progress_handler(self._progress, PROGRESS_EVERY)

    @classmethod
    async def open(cls, path: str | Path, *, budget: float | None = None) -> SqliteConnection:
        """Open ``path`` in autocommit (``isolation_level=None``), rows as ``sqlite3.Row``.
        ``budget``: seconds a statement may run inline (reads only; see the module)."""
        opened: list[sqlite3.Connection] = []

        def connect() -> sqlite3.Connection:
            # made in aiosqlite's thread, used from the loop's too (never at once: see above)
            raw = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            opened.append(raw)
            return raw

        worker = aiosqlite.Connection(connect, 64)
        await worker
        [raw] = opened
        raw.row_factory = sqlite3.Row
        return cls(raw, worker, budget=budget)

    def _progress(self) -> int:
        """SQLite's progress handler: non-zero interrupts the statement."""
        return int(self._deadline is not None and time.perf_counter() > self._deadline)

    @property
    def in_transaction(self) -> bool:
        return self._raw.in_transaction

    async def execute(self, sql: str, parameters: Params = ()) -> None:
        """Run one statement inline; its rows, if any, are not read."""
        if self._budget is None:
            self._raw.execute(sql, parameters)
            return
        await self.execute_fetchall(sql, parameters)

    async def execute_fetchall(self, sql: str, parameters: Params = ()) -> list[Row]:
        """Every row of one statement (each a ``sqlite3.Row``): inline, or, past the budget, in
        the thread."""
        return await self._fetch(sql, parameters, sqlite3.Row)

    async def fetch_named(self, sql: str, parameters: Params = ()) -> list[Row]:
        """As :meth:`execute_fetchall`, for rows read only by column name (the store's named
        queries): inline, each row is a dict (:func:`_named_row`)."""
        return await self._fetch(sql, parameters, _named_row)

    async def _fetch(self, sql: str, parameters: Params, factory: Any) -> list[Row]:
        if self._budget is None:
            return self._inline(sql, parameters, factory)
        self._deadline = time.perf_counter() + self._budget
        try:
            return self._inline(sql, parameters, factory)
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode != sqlite3.SQLITE_INTERRUPT:
                raise
        finally:
            self._deadline = None
        self.moved += 1
        return list(await self.worker.execute_fetchall(sql, parameters))

    def _inline(self, sql: str, parameters: Params, factory: Any) -> list[Row]:
        cursor = self._raw.cursor()
        cursor.row_factory = factory
        return list(cursor.execute(sql, parameters).fetchall())

    async def waiting(self, sql: str) -> None:
        """A statement that may wait (``BEGIN IMMEDIATE``, ``COMMIT``): in the thread."""
        await self.worker.execute(sql)

    async def close(self) -> None:
        await self.worker.close()


def _named_row(cursor: sqlite3.Cursor, values: tuple[Any, ...]) -> dict[str, Any]:
    """A row read inline, as a dict of column name to value. The store reads rows by name, and
    a proposal's row has some fifty columns: ``sqlite3.Row`` finds a name by comparing it with
    each column's in turn, a dict in one lookup (the rows' largest cost in the ingest profile).
    Where two columns share a name, the first wins, as with ``sqlite3.Row``."""
    names = [column[0] for column in cursor.description]
    return dict(zip(reversed(names), reversed(values), strict=True))
