"""Group commit for the SQLite store: concurrent write transactions share one COMMIT.

With ``synchronous=FULL`` every COMMIT waits for the disk, and one connection commits one
transaction at a time, so under load writers queue behind each other's disk waits. Here a writer
does not open its own transaction: it queues a turn. One committer task opens a transaction, gives
each queued writer its turn in order (each inside its own SAVEPOINT, so a writer that fails rolls
back only its own statements), lets writers that arrive meanwhile join, and commits once for all
of them. A writer's call returns only after that COMMIT, so what it returns is durable exactly as
before; only the number of disk waits changes. At low load a batch holds one writer and costs two
statements more (SAVEPOINT, RELEASE).

Reads never see a batch half done: on a file they run on connections of their own, which read
only what has committed; in memory they take the committer's lock. A writer whose statements
failed is told so when its batch has ended, so that what it reads next includes the batch.

People's writes (store/lanes.py: recording a click, applying it) queue apart and are given
their turn first: one that arrives while a batch of agents' writes is being built joins it next,
ahead of every agent's write still queued, and the batch then takes at most
:data:`AFTER_PEOPLE` agents' writes more before it commits, so it waits for the statements under
way, a few agents' writes and one COMMIT, not for a backlog nor for the rest of a batch (each
agent's turn in a batch is two turns of the event loop, which on a busy loop is the longest part
of a batch). Those few keep agents' writes going while people's writes come steadily (the
applier's, one after another): a batch that began with people's writes still takes some. A batch
takes up to :data:`MAX_BATCH` agents' writes (:data:`AFTER_PEOPLE` once a person's has joined)
and up to as many people's writes more.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from store.lanes import for_people
from store.sqlite_conn import SqliteConnection

__all__ = ["GroupCommit"]

#: The most writers one transaction takes before it commits; bounds a batch's latency.
MAX_BATCH = 64

#: The most agents' writes a batch takes after a person's write has joined it: few, so that the
#: person's write is committed soon, and not none, so that people's writes coming one after
#: another never stop agents' writes.
AFTER_PEOPLE = 16


@dataclass(eq=False)
class _Turn:
    """One writer waiting for, or taking, its place in a batch."""

    go: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    committed: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    ok: bool = False  #: its statements ran and were released into the batch
    people: bool = False  #: a write in people's lane (store/lanes.py)


class GroupCommit:
    """Write transactions on ``db``, batched; ``lock`` is the connection's lock."""

    def __init__(
        self,
        db: SqliteConnection,
        lock: asyncio.Lock,
        *,
        failure: Callable[[sqlite3.Error], Exception],
        reset: Callable[[], None] = lambda: None,
    ) -> None:
        self._db = db
        self._lock = lock
        self._failure = failure  #: the store's error for a driver error
        #: forgets what the store remembers of the open transaction (called whenever a
        #: transaction begins or ends, and when a writer's statements were rolled back)
        self._reset = reset
        self._queue: deque[_Turn] = deque()
        self._people: deque[_Turn] = deque()  #: people's writes: given their turn first
        self._committer: asyncio.Task[None] | None = None
        self._closed: Exception | None = None
        self.batches = 0  #: transactions committed (for tests and the benchmark)
        self.writes = 0  #: writers committed in them

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteConnection]:
        """One writer's part of a batch: its statements commit together with the batch's, or
        not at all. Errors of its own statements roll back only them and reach it when the batch
        has ended."""
        if self._closed is not None:
            raise self._closed
        turn = _Turn(people=for_people())
        (self._people if turn.people else self._queue).append(turn)
        if self._committer is None or self._committer.done():
            self._committer = asyncio.create_task(self._run(), name="sqlite group commit")
        try:
            await turn.go
        except asyncio.CancelledError:
            turn.finished.set()  # the committer skips a turn that never started
            raise
        try:
            await self._db.execute("SAVEPOINT writer")
            try:
                yield self._db
            except BaseException as error:
                self._reset()
                if self._db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        await self._db.execute("ROLLBACK TO writer")
                        await self._db.execute("RELEASE writer")
                if isinstance(error, Exception):  # (cancelled: nothing to wait for)
                    # Told once the batch has ended, not before: what the writer reads next (on
                    # a reader's connection, store/sqlite.py) then includes the batch's writes,
                    # such as those a database check that refused it counted.
                    turn.finished.set()
                    with contextlib.suppress(Exception):
                        await asyncio.shield(turn.committed)
                raise
            await self._db.execute("RELEASE writer")
            turn.ok = True
        finally:
            turn.finished.set()
        await turn.committed

    def queued(self) -> int:
        """Writers waiting for their turn."""
        return sum(not turn.go.done() for turn in (*self._people, *self._queue))

    async def close(self, error: Exception) -> None:
        """Refuse new writers; fail the queued ones with ``error``; stop the committer."""
        self._closed = error
        for queue in (self._people, self._queue):
            while queue:
                turn = queue.popleft()
                if not turn.go.done():
                    turn.go.set_exception(error)
        if self._committer is not None:
            self._committer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._committer

    async def _run(self) -> None:
        while self._people or self._queue:
            async with self._lock:
                self._reset()
                try:
                    await self._batch()
                finally:
                    self._reset()
            await asyncio.sleep(0)  # let readers waiting on the lock in between batches

    async def _batch(self) -> None:
        batch: list[_Turn] = []
        refused: list[_Turn] = []  # turns whose statements failed: told when the batch ends
        try:
            await self._batch_of(batch, refused)
        finally:
            for turn in refused:
                if not turn.committed.done():
                    turn.committed.set_result(None)

    async def _batch_of(self, batch: list[_Turn], refused: list[_Turn]) -> None:
        begun = False
        try:
            if self._db.in_transaction:  # left open by a cancelled reader: nothing to keep
                await self._db.execute("ROLLBACK")
            await self._db.waiting("BEGIN IMMEDIATE")  # another process may hold the lock
            begun = True
            room = MAX_BATCH  # agents' writes the batch may still take
            while (turn := self._next_turn(len(batch), room)) is not None:
                if turn.finished.is_set():  # cancelled while queued
                    continue
                room = min(room, AFTER_PEOPLE) if turn.people else room - 1
                turn.go.set_result(None)
                await turn.finished.wait()
                (batch if turn.ok else refused).append(turn)
                if not self._db.in_transaction:
                    # SQLite ended the whole transaction (some errors do): the batch so far is
                    # lost; its writers learn it as a failure, as a failed COMMIT would tell them
                    raise sqlite3.OperationalError("the transaction was rolled back by SQLite")
            await self._db.waiting("COMMIT")  # the disk flush
        except sqlite3.Error as error:
            if self._db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    await self._db.execute("ROLLBACK")
            for turn in batch:
                turn.committed.set_exception(self._failure(error))
            if not begun:
                self._fail_queued(error)
            return
        except BaseException as error:  # cancelled by close(): nothing of the batch is durable
            if self._db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    await self._db.execute("ROLLBACK")
            failure = self._closed or RuntimeError("the store's committer stopped")
            for turn in batch:
                if not turn.committed.done():
                    turn.committed.set_exception(failure)
            raise error
        self.batches += 1
        self.writes += len(batch)
        for turn in batch:
            turn.committed.set_result(None)

    def _next_turn(self, taken: int, room: int) -> _Turn | None:
        """The next writer to join a batch that holds ``taken`` and has ``room`` for agents'
        writes: people's first, then agents' (and others'); None: commit now."""
        if self._people and taken < 2 * MAX_BATCH:
            return self._people.popleft()
        if self._queue and room > 0:
            return self._queue.popleft()
        return None

    def _fail_queued(self, error: sqlite3.Error) -> None:
        """BEGIN itself failed (the file is locked past the busy timeout, the disk is gone...):
        the writers still queued would fail the same way; tell them now."""
        failure = self._failure(error)
        for queue in (self._people, self._queue):
            while queue:
                turn = queue.popleft()
                if not turn.go.done():
                    turn.go.set_exception(failure)
