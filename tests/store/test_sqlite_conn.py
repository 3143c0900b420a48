"""The SQLite connection of the event loop: statements inline, waits and long reads in a thread."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from store.proposals import PendingLimit
from store.sqlite import SqliteStore
from store.sqlite_conn import INLINE_BUDGET_SECONDS, SqliteConnection
from tests.store.conformance import new_proposal

NOW = datetime(2030, 1, 1, tzinfo=UTC)

#: A read that takes SQLite far longer than the inline budget: it counts to two million.
LONG_READ = """
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000000)
SELECT count(*) FROM n
"""


@pytest.fixture
async def reader(tmp_path: Path) -> AsyncIterator[SqliteConnection]:
    db = await SqliteConnection.open(tmp_path / "r.sqlite", budget=INLINE_BUDGET_SECONDS)
    try:
        await db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY) STRICT")
        await db.execute("INSERT INTO t VALUES (1), (2), (3)")
        yield db
    finally:
        await db.close()


async def _trace(db: SqliteConnection) -> list[tuple[str, int]]:
    """Every statement ``db`` runs from now on, comments left out, and the thread it ran in."""
    seen: list[tuple[str, int]] = []

    def traced(sql: str) -> None:
        lines = [line for line in sql.strip().splitlines() if not line.startswith("--")]
        seen.append((" ".join(lines).strip(), threading.get_ident()))

    await db.worker.set_trace_callback(traced)
    return seen


async def test_a_short_read_runs_on_the_loops_thread(reader: SqliteConnection) -> None:
    seen = await _trace(reader)

    rows = await reader.execute_fetchall("SELECT n FROM t WHERE n = ?", (2,))

    assert [tuple(row) for row in rows] == [(2,)]
    assert seen == [("SELECT n FROM t WHERE n = 2", threading.get_ident())]
    assert reader.moved == 0


async def test_named_rows_are_read_by_column_name_and_the_first_of_two_same_names_wins(
    reader: SqliteConnection,
) -> None:
    """The store's named queries read rows by name, as sqlite3.Row does, inline or past the
    budget in the thread; where two columns share a name, the first wins there too."""
    seen = await _trace(reader)
    same_names = "SELECT n, n * 10 AS n, n * 100 AS tens FROM t WHERE n = ?"

    [row] = await reader.fetch_named(same_names, (2,))
    [counted] = await reader.fetch_named(LONG_READ.replace("count(*)", "count(*) AS total"))

    assert (row["n"], row["tens"]) == (2, 200)  # not 20: sqlite3.Row gives the first n too
    assert counted["total"] == 2_000_000 and reader.moved == 1  # run again in the thread
    assert seen[0][1] == threading.get_ident()


async def test_a_read_past_its_budget_goes_on_in_the_thread_and_the_loop_runs_meanwhile(
    reader: SqliteConnection,
) -> None:
    seen = await _trace(reader)
    turns = 0

    async def meanwhile() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    other = asyncio.create_task(meanwhile())
    await asyncio.sleep(0)
    before = turns
    try:
        [(count,)] = await reader.execute_fetchall(LONG_READ)
    finally:
        other.cancel()

    assert count == 2_000_000  # the whole answer, not the interrupted one
    assert reader.moved == 1
    here = threading.get_ident()
    assert [sql.split()[0] for sql, _ in seen] == ["WITH", "WITH"]  # begun here, again there
    assert seen[0][1] == here and seen[1][1] != here
    assert turns > before + 10  # other tasks ran while the thread read


async def test_a_long_read_in_a_snapshot_stays_in_its_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    writer = await SqliteConnection.open(path)
    await writer.worker.execute_fetchall("PRAGMA journal_mode = WAL")  # readers see snapshots
    await writer.execute("CREATE TABLE t (n INTEGER PRIMARY KEY) STRICT")
    await writer.execute("INSERT INTO t VALUES (1)")
    reader = await SqliteConnection.open(path, budget=INLINE_BUDGET_SECONDS)
    try:
        await reader.execute("BEGIN")
        [(first,)] = await reader.execute_fetchall("SELECT count(*) FROM t")
        await writer.execute("INSERT INTO t VALUES (2)")  # committed after the snapshot began

        rows = await reader.execute_fetchall(
            LONG_READ.replace("SELECT count(*) FROM n", "SELECT count(*) FROM n, t")
        )
        assert reader.in_transaction  # the interrupted statement did not end the transaction
        await reader.execute("COMMIT")

        assert first == 1
        assert [tuple(row) for row in rows] == [(2_000_000,)]  # one row of t, as at BEGIN
        assert reader.moved == 1
    finally:
        await reader.close()
        await writer.close()


async def test_the_store_commits_and_begins_in_the_thread_and_writes_inline(
    tmp_path: Path,
) -> None:
    store = await SqliteStore.open(tmp_path / "countersign.sqlite")
    try:
        async with store.transaction(write=True) as writer:  # the writer's connection
            seen = await _trace(writer)
        seen.clear()  # that transaction's own statements

        await store.create_proposal(new_proposal(NOW))

        here = threading.get_ident()
        waits = ("BEGIN IMMEDIATE", "COMMIT")  # another process's lock; the disk flush
        assert (seen[0][0], seen[-1][0]) == waits
        assert seen[0][1] != here and seen[-1][1] != here  # in aiosqlite's thread
        inline = [(sql, thread) for sql, thread in seen if sql not in waits]
        assert any(sql.startswith("INSERT INTO proposals") for sql, _ in inline)
        assert all(thread == here for _, thread in inline)
    finally:
        await store.close()


async def test_a_new_proposal_under_its_pending_limit_is_not_looked_up_by_its_key_first(
    tmp_path: Path,
) -> None:
    """Below the limit the insert itself finds a replay (its unique key): the lookup by
    submission key runs only for a replay, or when the limit leaves no room."""
    store = await SqliteStore.open(tmp_path / "countersign.sqlite")
    try:
        async with store.transaction(write=True) as writer:
            seen = await _trace(writer)
        seen.clear()
        first = new_proposal(NOW)

        await store.create_proposal(first, pending_limit=PendingLimit(10))
        new_ones = [sql for sql, _ in seen]
        seen.clear()
        again = new_proposal(NOW).model_copy(update={"submission_key": first.submission_key})
        await store.create_proposal(again, pending_limit=PendingLimit(1))

        lookup = "SELECT * FROM proposals WHERE agent = "
        assert any(sql.startswith("INSERT INTO proposals") for sql in new_ones)
        assert not any(sql.startswith(lookup) for sql in new_ones)
        assert any(sql.startswith(lookup) for sql, _ in seen)  # the replay, at its limit
    finally:
        await store.close()


async def test_a_failing_read_is_not_run_again(reader: SqliteConnection) -> None:
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        await reader.execute_fetchall("SELECT * FROM missing")
    assert reader.moved == 0
