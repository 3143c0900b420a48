"""The SQLite backend of the Store protocol: the connection, its transactions, migrations.

One connection per store (store/sqlite_conn.py: statements on the event loop's thread, what
may wait for a lock or the disk in aiosqlite's), WAL journal, ``synchronous=FULL`` unless asked
otherwise, foreign keys on. Every write is one ``BEGIN IMMEDIATE`` transaction under an asyncio
lock, batched with concurrent writes into one COMMIT (store/group_commit.py), so changes and their
audit entries commit together and the audit chain stays linear, also when several processes
share the file; the writer follows the chain's head in memory (store/sqlite_tx.py). Reads run on
connections of their own (:data:`READERS`, read-only), in autocommit, each statement reading
what has committed: WAL lets them read while a batch of writes waits for its COMMIT's disk
flush, so a read never queues behind the writers. One more reader is kept for people's lane
(store/lanes.py): a read for a click takes it when the others are all in use. The verbs are
written once over this (store/proposals/verbs.py and the modules it gathers).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite

from store.base import StoreError, StoreUnavailable
from store.group_commit import GroupCommit
from store.lanes import for_people
from store.migrate import Migration, MigrationError, load_migrations, pending_migrations
from store.sqlite_conn import INLINE_BUDGET_SECONDS, SqliteConnection
from store.sqlite_tx import FollowedHead, SqliteTx
from store.verbs import StoreVerbs

__all__ = ["WRITER_CACHE_KIB", "SqliteStore", "apply_migrations"]

#: Bootstraps the table that records applied migrations (every other table is a migration).
CREATE_SCHEMA_MIGRATIONS = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
) STRICT
"""

#: A migration that rebuilds a table says so with this line; the runner then turns foreign keys
#: off around it (SQLite ignores the pragma inside a transaction) and checks them before COMMIT.
FOREIGN_KEYS_OFF = "-- countersign-migrate: foreign_keys=off"

#: The versions already applied.
SELECT_APPLIED_VERSIONS = "SELECT version FROM schema_migrations"

#: Read-only connections beside the writer's: reads that run past their budget go on in a
#: thread of their own, and two keep such reads from waiting on each other. One more is kept
#: for people's reads (store/lanes.py).
READERS = 2

#: The writer's page cache, in KiB (SQLite's default is 2,000): each new proposal writes a leaf
#: of every index of its table, the key's at a random place, and with 50,000 pending those leaves
#: no longer fit in the default, so each write read pages back from the file. With this much a
#: submission cost the same CPU with 50,000 pending as with none (docs/benchmarks.md). SQLite
#: takes the pages as it needs them: a small database keeps a small cache.
WRITER_CACHE_KIB = 32 * 1024


async def apply_migrations(db: aiosqlite.Connection, migrations: Sequence[Migration]) -> list[int]:
    """Apply the missing ``migrations``, each in one transaction with its record. Returns versions.

    A migration marked with :data:`FOREIGN_KEYS_OFF` (a table rebuild: create, copy, drop, rename)
    runs with foreign keys off, and commits only if ``PRAGMA foreign_key_check`` finds nothing.

    The record is inserted first: when another connection applied the same version meanwhile,
    its primary key refuses ours and this migration is skipped.
    """
    await db.execute(CREATE_SCHEMA_MIGRATIONS)
    applied = {row[0] for row in await db.execute_fetchall(SELECT_APPLIED_VERSIONS)}
    done = []
    for migration in pending_migrations(migrations, applied):
        name = migration.name.replace("'", "''")  # a SQL string literal
        record = (
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES "
            f"({migration.version:d}, '{name}', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));"
        )
        rebuilds = FOREIGN_KEYS_OFF in migration.sql
        if rebuilds:  # only outside a transaction does this pragma take effect
            await db.execute("PRAGMA foreign_keys = OFF")
        try:
            await db.executescript(f"BEGIN IMMEDIATE;\n{record}\n{migration.sql}\n;")
            broken = list(await db.execute_fetchall("PRAGMA foreign_key_check"))
            if broken:
                raise sqlite3.IntegrityError(
                    f"migration {migration.version:04d}_{migration.name} leaves "
                    f"{len(broken)} row(s) whose foreign keys point nowhere (first: "
                    f"{tuple(broken[0])})"
                )
            await db.execute("COMMIT")
        except sqlite3.Error:
            if db.in_transaction:
                await db.execute("ROLLBACK")
            again = {row[0] for row in await db.execute_fetchall(SELECT_APPLIED_VERSIONS)}
            if migration.version in again:
                continue
            raise
        finally:
            if rebuilds:
                await db.execute("PRAGMA foreign_keys = ON")
        done.append(migration.version)
    return done


def _translated(error: sqlite3.Error) -> StoreError:
    """The store's error for a driver error."""
    if isinstance(error, sqlite3.IntegrityError):
        return StoreError(f"the database refused the change: {error}")
    return StoreUnavailable(f"SQLite: {error}")


class SqliteStore(StoreVerbs):
    """A Store on one SQLite file. Create it with :meth:`open`."""

    def __init__(
        self,
        db: SqliteConnection,
        *,
        clock: Callable[[], datetime] | None = None,
        readers: Sequence[SqliteConnection] = (),
    ) -> None:
        """``readers``: read-only connections to the same file, the last of two or more kept
        for people's reads; without them (an in-memory database has no other connection to it)
        reads take turns with writes on ``db``."""
        self._db = db
        self._readers: asyncio.Queue[SqliteConnection] = asyncio.Queue()
        self._kept: asyncio.Queue[SqliteConnection] = asyncio.Queue()
        self._all_readers = tuple(readers)
        for reader in readers[:-1]:
            self._readers.put_nowait(reader)
        for reader in readers[-1:]:
            (self._kept if len(readers) > 1 else self._readers).put_nowait(reader)
        self._lock = asyncio.Lock()
        self._clock = clock or (lambda: datetime.now(UTC))
        self._closed = False
        #: the audit head as the batch of writes moved it (store/sqlite_tx.py)
        self._head = FollowedHead()
        self._writes = GroupCommit(db, self._lock, failure=_translated, reset=self._head.forget)

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        durable: bool = True,
        busy_timeout_ms: int = 5000,
        clock: Callable[[], datetime] | None = None,
    ) -> SqliteStore:
        """Open (creating if needed) and migrate the database at ``path``.

        ``durable=False`` uses ``synchronous=NORMAL``: faster, and a power cut may lose the last
        commits (never corrupt the file). ``clock`` stamps the one verb without a ``now``
        (attach_message).
        """
        try:
            db = await SqliteConnection.open(path)
        except sqlite3.Error as error:
            raise StoreUnavailable(f"cannot open SQLite database {str(path)!r}: {error}") from error
        try:
            setup = db.worker  # in the thread: setting WAL and migrating may wait for a lock
            await setup.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms):d}")
            await setup.execute("PRAGMA foreign_keys = ON")
            [(mode,)] = await setup.execute_fetchall("PRAGMA journal_mode = WAL")
            if mode != "wal" and str(path) != ":memory:":
                raise StoreUnavailable(
                    f"SQLite database {str(path)!r}: journal mode is {mode!r}, expected 'wal'"
                )
            await setup.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            await setup.execute(f"PRAGMA cache_size = -{WRITER_CACHE_KIB:d}")
            await apply_migrations(setup, load_migrations("sqlite"))
        except BaseException as error:
            await db.close()
            if isinstance(error, sqlite3.Error | MigrationError):
                raise StoreUnavailable(f"SQLite database {str(path)!r}: {error}") from error
            raise
        readers: list[SqliteConnection] = []
        try:
            if str(path) != ":memory:":
                for _ in range(READERS + 1):  # one kept for people's reads
                    readers.append(await _reader(path, busy_timeout_ms))
        except BaseException as error:
            for reader in [*readers, db]:
                await reader.close()
            if isinstance(error, sqlite3.Error):
                raise StoreUnavailable(f"SQLite database {str(path)!r}: {error}") from error
            raise
        return cls(db, clock=clock, readers=readers)

    async def listen(self, on_change: Callable[[str], None]) -> None:
        """Nothing to do: one process uses a SQLite file, and it notifies its own waiters."""

    async def announce(self, message: str) -> None:
        """Nothing to do: one process uses a SQLite file; there is no other instance to tell."""

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._writes.close(StoreUnavailable("the store is closed"))
            async with self._lock:
                await self._db.close()
            for reader in self._all_readers:
                await reader.close()

    @property
    def group_commit(self) -> GroupCommit:
        """How writes were batched into transactions (``batches``, ``writes``)."""
        return self._writes

    # --- transactions (store/backend.py) ----------------------------------------------------

    @asynccontextmanager
    async def transaction(self, *, write: bool) -> AsyncIterator[SqliteConnection]:
        """One transaction, serialized with every other use of the connection.

        Driver errors are translated here: none leaves the store. Write transactions are
        batched with concurrent ones into one COMMIT (store/group_commit.py).
        """
        if write:
            try:
                async with self._writes.transaction() as db:
                    yield db
            except sqlite3.Error as error:
                raise _translated(error) from error
            return
        async with self._reading() as db:
            await db.execute("BEGIN")  # writes go through group commit above
            try:
                yield db
                await db.execute("COMMIT")
            except BaseException:
                # Best effort: after a cancellation during COMMIT the transaction may have
                # ended already, and a failing ROLLBACK must not replace the real error
                # (least of all a CancelledError, which must reach the task).
                if db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        await db.execute("ROLLBACK")
                raise

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[SqliteConnection]:
        """A connection for reads: each statement reads committed data on its own
        (autocommit), sparing a BEGIN and a COMMIT. A reader of its own when the store has
        them (for people's lane, the one kept for it when the others are in use), else the
        writer's connection between batches of writes."""
        if not self._all_readers:
            async with self._between_batches() as db:
                yield db
            return
        if self._closed:
            raise StoreUnavailable("the store is closed")
        queue = self._readers
        if for_people() and queue.empty() and not self._kept.empty():
            queue = self._kept
        db = await queue.get()
        try:
            if self._closed:  # checked once it is ours: close() may have run while we waited
                raise StoreUnavailable("the store is closed")
            if db.in_transaction:  # left open by a cancelled task: nothing to keep
                await db.execute("ROLLBACK")
            yield db
        except sqlite3.Error as error:
            raise _translated(error) from error
        finally:
            queue.put_nowait(db)

    @asynccontextmanager
    async def _between_batches(self) -> AsyncIterator[SqliteConnection]:
        """The writer's connection, between batches of writes."""
        async with self._lock:
            if self._closed:  # checked under the lock: close() may have run while we waited
                raise StoreUnavailable("the store is closed")
            try:
                if self._db.in_transaction:  # left open by a cancelled task: nothing to keep
                    await self._db.execute("ROLLBACK")
                yield self._db
            except sqlite3.Error as error:
                raise _translated(error) from error

    @asynccontextmanager
    async def tx(self, *, write: bool) -> AsyncIterator[SqliteTx]:
        """A write transaction of the group commit, or (not ``write``) the connection in
        autocommit, each statement reading what has committed (store/backend.py)."""
        if write:
            async with self.transaction(write=True) as db:
                yield SqliteTx(db, self._head)
        else:
            async with self._reading() as db:
                yield SqliteTx(db, self._head)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[SqliteTx]:
        """A read transaction (BEGIN ... COMMIT): its statements see one snapshot."""
        async with self.transaction(write=False) as db:
            yield SqliteTx(db, self._head)

    def lone_write(self) -> contextlib.AbstractAsyncContextManager[SqliteTx]:
        """A write of the group commit (one statement alone would cost its own COMMIT)."""
        return self.tx(write=True)

    async def audit_sealed(self) -> None:
        """Nothing to wait for: the writer seals each audit entry as it appends it."""


async def _reader(path: str | Path, busy_timeout_ms: int) -> SqliteConnection:
    """A read-only connection to the database at ``path`` (migrated already); a read that runs
    past :data:`INLINE_BUDGET_SECONDS` goes on in its thread."""
    db = await SqliteConnection.open(path, budget=INLINE_BUDGET_SECONDS)
    try:
        await db.worker.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms):d}")
        await db.worker.execute("PRAGMA query_only = ON")
    except BaseException:
        await db.close()
        raise
    return db
