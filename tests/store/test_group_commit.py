"""Group commit: concurrent writers share a COMMIT, and each one's failure stays its own."""

from __future__ import annotations

import asyncio
import contextlib
import math
import resource
import signal
import sqlite3
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from store.base import StoreUnavailable
from store.group_commit import AFTER_PEOPLE, GroupCommit
from store.lanes import people_first
from store.proposals import ProposalNotFound
from store.sqlite import SqliteStore
from store.sqlite_conn import SqliteConnection
from tests.store.conformance import new_proposal

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def _failure(error: sqlite3.Error) -> Exception:
    return StoreUnavailable(f"SQLite: {error}")


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[SqliteConnection]:
    db = await SqliteConnection.open(tmp_path / "g.sqlite")
    try:
        await db.worker.execute_fetchall("PRAGMA journal_mode = WAL")
        await db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY) STRICT")
        yield db
    finally:
        await db.close()


async def _rows(db: SqliteConnection) -> list[int]:
    return [row[0] for row in await db.execute_fetchall("SELECT n FROM t ORDER BY n")]


async def test_concurrent_writers_commit_together(db: SqliteConnection) -> None:
    group = GroupCommit(db, asyncio.Lock(), failure=_failure)

    async def write(n: int) -> None:
        async with group.transaction() as conn:
            await conn.execute("INSERT INTO t VALUES (?)", (n,))

    await asyncio.gather(*(write(n) for n in range(50)))

    assert await _rows(db) == list(range(50))
    assert group.writes == 50
    assert group.batches < 50  # some shared a COMMIT (all but the first wait behind it)
    assert not db.in_transaction


async def test_a_failing_writer_rolls_back_only_its_own_statements(
    db: SqliteConnection,
) -> None:
    group = GroupCommit(db, asyncio.Lock(), failure=_failure)

    async def write(n: int) -> None:
        async with group.transaction() as conn:
            await conn.execute("INSERT INTO t VALUES (?)", (n,))
            if n % 3 == 0:
                await conn.execute("INSERT INTO t VALUES (?)", (n,))  # duplicate key: fails

    results = await asyncio.gather(*(write(n) for n in range(1, 13)), return_exceptions=True)

    failed = [n for n, result in zip(range(1, 13), results, strict=True) if result is not None]
    assert failed == [3, 6, 9, 12]
    assert all(isinstance(r, sqlite3.IntegrityError) for r in results if r is not None)
    assert await _rows(db) == [n for n in range(1, 13) if n % 3]


async def test_an_error_raised_by_the_writer_itself_undoes_its_statements(
    db: SqliteConnection,
) -> None:
    group = GroupCommit(db, asyncio.Lock(), failure=_failure)

    async def refuse() -> None:
        async with group.transaction() as conn:
            await conn.execute("INSERT INTO t VALUES (1)")
            raise LookupError("changed its mind")

    async def keep() -> None:
        async with group.transaction() as conn:
            await conn.execute("INSERT INTO t VALUES (2)")

    results = await asyncio.gather(refuse(), keep(), return_exceptions=True)

    assert isinstance(results[0], LookupError) and results[1] is None
    assert await _rows(db) == [2]


async def test_a_writer_returns_only_after_the_commit(db: SqliteConnection) -> None:
    group = GroupCommit(db, asyncio.Lock(), failure=_failure)
    seen_by_writer: list[bool] = []

    async def write() -> None:
        async with group.transaction() as conn:
            await conn.execute("INSERT INTO t VALUES (7)")
        seen_by_writer.append(db.in_transaction)

    await write()

    assert seen_by_writer == [False]  # the transaction had ended (committed) when it returned
    assert await _rows(db) == [7]


async def test_closing_fails_queued_writers_and_refuses_new_ones(
    db: SqliteConnection,
) -> None:
    lock = asyncio.Lock()
    group = GroupCommit(db, lock, failure=_failure)
    await lock.acquire()  # a reader holds the connection: writers queue

    async def write() -> None:
        async with group.transaction() as conn:
            await conn.execute("INSERT INTO t VALUES (1)")

    queued = asyncio.create_task(write())
    await asyncio.sleep(0.01)
    await group.close(StoreUnavailable("the store is closed"))
    lock.release()

    with pytest.raises(StoreUnavailable, match="closed"):
        await queued
    with pytest.raises(StoreUnavailable, match="closed"):
        await write()
    assert await _rows(db) == []


async def test_store_writes_in_batches_keep_the_audit_chain_whole(tmp_path: Path) -> None:
    """Many concurrent submissions and decisions (some refused) batch into fewer COMMITs; the
    audit head followed in memory within a batch matches the chain the database keeps."""
    store = await SqliteStore.open(tmp_path / "c.sqlite")
    try:
        first = [new_proposal(NOW, id=f"p{n}") for n in range(30)]
        await asyncio.gather(*(store.create_proposal(p) for p in first))
        later = NOW + timedelta(minutes=1)
        await asyncio.gather(
            *(store.create_proposal(new_proposal(NOW, id=f"q{n}")) for n in range(30)),
            *(store.reject(f"p{n}", actor="U9", reason="no", now=later) for n in range(30)),
            # refusals inside the same batches: already rejected, or unknown
            *(store.reject(f"p{n}", actor="U8", reason="again", now=later) for n in range(5)),
            *(
                store.record_event(None, actor="U7", event="noise", detail={}, now=later)
                for _ in range(10)
            ),
        )
        report = await store.verify_audit()
        entries = await store.audit_log()
        assert report.ok, report
        assert len(entries) == 30 + 30 + 30 + 10
        assert store.group_commit.batches < store.group_commit.writes
    finally:
        await store.close()


async def test_a_write_in_peoples_lane_goes_ahead_of_agents_writes_queued_before_it(
    db: SqliteConnection,
) -> None:
    """People's lane (store/lanes.py): a click's record that arrives behind a backlog of
    agents' writes joins the batch under way next, and commits with it."""
    group = GroupCommit(db, asyncio.Lock(), failure=_failure)
    order: list[int] = []
    people_started = asyncio.Event()
    people: list[asyncio.Task[None]] = []

    async def write(n: int) -> None:
        async with group.transaction() as conn:
            order.append(n)
            await conn.execute("INSERT INTO t VALUES (?)", (n,))
            if n == 0:  # the first agent's write is under way: a person clicks now
                people.append(asyncio.create_task(click()))
                await people_started.wait()

    async def click() -> None:
        with people_first():
            writing = asyncio.create_task(write(1000))
        await asyncio.sleep(0)  # the person's write queues its turn
        assert group.queued() == 200  # behind 199 agents' writes
        people_started.set()
        await writing

    agents = [asyncio.create_task(write(n)) for n in range(200)]
    await asyncio.gather(*agents)
    await asyncio.gather(*people)

    assert order[:2] == [0, 1000]  # next after the write under way, before 199 queued
    # the person's write and AFTER_PEOPLE agents' more close the first batch; then 64 a batch
    assert group.batches == 1 + math.ceil((199 - AFTER_PEOPLE) / 64)
    assert await _rows(db) == [*range(200), 1000]


async def test_a_write_in_peoples_lane_is_committed_before_most_agents_writes_queued_run(
    db: SqliteConnection,
) -> None:
    """The batch a person's write joins commits soon after it: the write waits for the
    statements under way, AFTER_PEOPLE agents' writes and one COMMIT, not for the rest of a
    batch of agents' writes (each agent's turn costs turns of a loop that agents keep busy)."""
    group = GroupCommit(db, asyncio.Lock(), failure=_failure)
    order: list[int] = []
    seen_at_commit: list[list[int]] = []
    people_started = asyncio.Event()
    people: list[asyncio.Task[None]] = []

    async def write(n: int) -> None:
        async with group.transaction() as conn:
            order.append(n)
            await conn.execute("INSERT INTO t VALUES (?)", (n,))
            if n == 0:  # the first agent's write is under way: a person clicks now
                people.append(asyncio.create_task(click()))
                await people_started.wait()

    async def click() -> None:
        with people_first():
            writing = asyncio.create_task(write(1000))
        await asyncio.sleep(0)  # the person's write queues its turn, behind 63 agents'
        people_started.set()
        await writing
        seen_at_commit.append(list(order))  # the writes that had run when it was durable

    agents = [asyncio.create_task(write(n)) for n in range(64)]
    await asyncio.gather(*agents)
    await asyncio.gather(*people)

    # before the person's COMMIT: the write under way, the person's, AFTER_PEOPLE agents' more
    assert seen_at_commit == [[0, 1000, *range(1, 1 + AFTER_PEOPLE)]]
    assert group.batches == 2  # then the other agents' writes in one batch
    assert await _rows(db) == [*range(64), 1000]


async def test_peoples_writes_one_after_another_do_not_stop_agents_writes(
    db: SqliteConnection,
) -> None:
    """A steady flow of people's writes (the applier's: each writes again as soon as its last
    write is committed, so one is queued whenever a batch begins) still lets agents' writes
    through, AFTER_PEOPLE a batch."""
    group = GroupCommit(db, asyncio.Lock(), failure=_failure)
    agents_done: list[int] = []
    people_writes = 64 // AFTER_PEOPLE + 4

    async def agent(n: int) -> None:
        async with group.transaction() as conn:
            await conn.execute("INSERT INTO t VALUES (?)", (n,))
        agents_done.append(n)

    async def person() -> int:
        with people_first():
            for n in range(people_writes):
                async with group.transaction() as conn:
                    await conn.execute("INSERT INTO t VALUES (?)", (1000 + n,))
        return len(agents_done)  # agents' writes committed while the person kept writing

    flow = asyncio.create_task(person())
    await asyncio.sleep(0)  # the person's first write is queued first
    agents = [asyncio.create_task(agent(n)) for n in range(64)]

    assert await flow == 64
    await asyncio.gather(*agents)
    assert await _rows(db) == [*range(64), *range(1000, 1000 + people_writes)]


async def test_outside_peoples_lane_writers_keep_their_order(db: SqliteConnection) -> None:
    group = GroupCommit(db, asyncio.Lock(), failure=_failure)
    order: list[int] = []

    async def write(n: int) -> None:
        async with group.transaction() as conn:
            order.append(n)
            await conn.execute("INSERT INTO t VALUES (?)", (n,))

    await asyncio.gather(*(write(n) for n in range(100)))

    assert order == list(range(100))


@contextlib.contextmanager
def _files_cannot_grow_past(size: int) -> Iterator[None]:
    """Every file this process writes refuses to grow past ``size`` bytes, as a full disk
    does: the operating system answers the write with EFBIG (RLIMIT_FSIZE; the signal it
    also sends is ignored meanwhile). Restored after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


async def test_a_batch_whose_commit_the_disk_refuses_stores_nothing_and_the_store_goes_on(
    tmp_path: Path,
) -> None:
    """The disk refuses to grow the database's files while a batch of writers commits: each of
    them is told the store is unavailable, none of their proposals or audit entries is stored,
    and once the disk takes writes again the store writes on, its audit chain whole (the head
    followed in memory was forgotten with the failed batch)."""
    store = await SqliteStore.open(tmp_path / "full.sqlite")
    try:
        for n in range(5):
            await store.create_proposal(new_proposal(NOW, id=f"before{n}"))
        batches = store.group_commit.batches
        refused = [new_proposal(NOW, id=f"refused{n}", agent_reason="x" * 4000) for n in range(20)]
        # the write-ahead log may not grow: the writers' statements run (SQLite's own scratch
        # files are smaller), their batch's COMMIT, which appends to the log, is refused
        wal = (tmp_path / "full.sqlite-wal").stat().st_size
        with _files_cannot_grow_past(wal):
            results = await asyncio.gather(
                *(store.create_proposal(p) for p in refused), return_exceptions=True
            )
        assert results and all(isinstance(r, StoreUnavailable) for r in results), results
        assert {str(r) for r in results} == {"SQLite: disk I/O error"}
        assert store.group_commit.batches == batches  # none of those batches committed

        later = [new_proposal(NOW, id=f"after{n}") for n in range(5)]
        await asyncio.gather(*(store.create_proposal(p) for p in later))

        entries = await store.audit_log()
        assert {e.proposal_id for e in entries} == {
            *(f"before{n}" for n in range(5)),
            *(f"after{n}" for n in range(5)),
        }
        for proposal in refused:
            with pytest.raises(ProposalNotFound):
                await store.get_proposal(proposal.id)
        report = await store.verify_audit()
        assert report.ok, report
    finally:
        await store.close()
