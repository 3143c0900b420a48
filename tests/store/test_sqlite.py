"""The SQLite backend: the shared conformance suite on a real file, plus what only SQLite has."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import aiosqlite
import pytest

from store.audit import GENESIS
from store.base import StoreError, StoreUnavailable
from store.connector import load_queries
from store.migrate import Migration, load_migrations
from store.open import open_store
from store.proposals import TRANSITIONS, AlreadyDecided, Status, Transitioned
from store.sqlite import WRITER_CACHE_KIB, SqliteStore, apply_migrations
from store.sqlite_tx import SqliteTx
from tests.store.conformance import (
    LEASE,
    OUTCOME_EXAMPLES,
    StoreConformance,
    new_proposal,
    store_waiting,
)

NOW = datetime(2031, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)


class TestSqliteStore(StoreConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SqliteStore]:
        store = await SqliteStore.open(tmp_path / "countersign.sqlite")
        yield store
        await store.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "countersign.sqlite"


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection to the file, bypassing the store (autocommit)."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        yield db
    finally:
        db.close()


# --- durability and configuration ----------------------------------------------------------------


async def test_everything_survives_close_and_reopen(db_path: Path) -> None:
    store = await SqliteStore.open(db_path)
    asked, auto = new_proposal(NOW), new_proposal(NOW, decision="auto", status=Status.EXECUTING)
    await store.create_proposal(asked)
    await store.create_proposal(auto)
    await store.attach_message(asked.id, "C1", "1.1")
    await store.reject(asked.id, actor="U1", reason="no", now=NOW)
    await store.record_outcome(auto.id, OUTCOME_EXAMPLES[1], now=NOW)
    before = [await store.get_proposal(p.id) for p in (asked, auto)]
    log_before = await store.audit_log()
    await store.close()

    reopened = await SqliteStore.open(db_path)
    try:
        assert [await reopened.get_proposal(p.id) for p in (asked, auto)] == before
        assert await reopened.audit_log() == log_before
        assert (await reopened.verify_audit()).ok
        # and the chain goes on where it stopped
        entry = await reopened.record_event(None, actor="bot", event="note", detail={}, now=NOW)
        assert (entry.seq, entry.prev_hash) == (len(log_before) + 1, log_before[-1].hash)
    finally:
        await reopened.close()


@pytest.mark.parametrize(("durable", "synchronous"), [(True, 2), (False, 1)])
async def test_connection_uses_wal_foreign_keys_the_chosen_synchronous_and_a_larger_cache(
    db_path: Path, durable: bool, synchronous: int
) -> None:
    """The writer's page cache holds the index leaves a backlog's writes touch (store/sqlite.py,
    WRITER_CACHE_KIB)."""
    store = await SqliteStore.open(db_path, durable=durable, busy_timeout_ms=1234)
    try:
        db = store._db  # the store's own connection: these pragmas are per connection
        for pragma, expected in [
            ("journal_mode", "wal"),
            ("synchronous", synchronous),
            ("foreign_keys", 1),
            ("busy_timeout", 1234),
            ("cache_size", -WRITER_CACHE_KIB),
        ]:
            [(value,)] = await db.execute_fetchall(f"PRAGMA {pragma}")
            assert value == expected, pragma
    finally:
        await store.close()


# --- migrations ----------------------------------------------------------------------------------


async def test_migrations_are_recorded_once_and_reopening_applies_nothing(db_path: Path) -> None:
    await (await SqliteStore.open(db_path)).close()
    await (await SqliteStore.open(db_path)).close()

    with raw(db_path) as db:
        rows = db.execute("SELECT version, name, applied_at FROM schema_migrations").fetchall()

    expected = [(m.version, m.name) for m in load_migrations("sqlite")]
    assert [(version, name) for version, name, _ in rows] == expected
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", at) for *_, at in rows)


async def test_a_failing_migration_leaves_nothing_behind(db_path: Path) -> None:
    good = Migration(1, "good", "CREATE TABLE kept (x INTEGER);")
    bad = Migration(2, "bad", "CREATE TABLE half (x INTEGER);\nINSERT INTO missing VALUES (1);")
    async with aiosqlite.connect(db_path, isolation_level=None) as db:
        with pytest.raises(sqlite3.OperationalError, match="missing"):
            await apply_migrations(db, [good, bad])
        assert not db.in_transaction
        tables = {row[0] for row in await db.execute_fetchall("SELECT name FROM sqlite_master")}
        versions = [
            row[0] for row in await db.execute_fetchall("SELECT version FROM schema_migrations")
        ]
        assert await apply_migrations(db, [good]) == []

    assert "kept" in tables and "half" not in tables
    assert versions == [1]


async def test_a_database_migrated_by_a_newer_version_is_refused(db_path: Path) -> None:
    await (await SqliteStore.open(db_path)).close()
    with raw(db_path) as db:
        db.execute("INSERT INTO schema_migrations VALUES (99, 'future', '2040-01-01T00:00:00Z')")

    with pytest.raises(StoreUnavailable, match=r"migration\(s\) 0099 .*upgrade Countersign"):
        await SqliteStore.open(db_path)


# --- what the database itself enforces -----------------------------------------------------------


async def test_status_check_lists_exactly_the_lifecycle_statuses(db_path: Path) -> None:
    await (await SqliteStore.open(db_path)).close()
    with raw(db_path) as db:
        [(table_sql,)] = db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'proposals'"
        ).fetchall()

    listed = re.search(r"status\s+TEXT NOT NULL CHECK \(status IN \((.*?)\)\)", table_sql, re.S)

    assert listed is not None
    assert set(re.findall(r"'(\w+)'", listed[1])) == {status.value for status in Status}


async def test_database_allows_exactly_the_lifecycle_transitions(db_path: Path) -> None:
    store = await SqliteStore.open(db_path)
    await store.create_proposal(new_proposal(NOW, id="p"))
    await store.close()

    allowed: set[tuple[Status, Status]] = set()
    trigger_sql = _trigger_sql()
    with raw(db_path) as db:
        for source in Status:
            for target in Status:
                # Put the row in ``source`` past the trigger, then try the move to ``target``.
                db.execute("DROP TRIGGER proposals_status_follows_lifecycle")
                db.execute("UPDATE proposals SET status = ? WHERE id = 'p'", (source.value,))
                db.execute(trigger_sql)
                try:
                    db.execute("UPDATE proposals SET status = ? WHERE id = 'p'", (target.value,))
                except sqlite3.IntegrityError as error:
                    assert "not a lifecycle transition" in str(error)
                else:
                    if source != target:
                        allowed.add((source, target))

    expected = {(source, target) for source, targets in TRANSITIONS.items() for target in targets}
    assert allowed == expected


def _trigger_sql() -> str:
    """The transitions trigger as the newest migration that (re)creates it defines it."""
    pattern = r"CREATE TRIGGER proposals_status_follows_lifecycle.*?END;"
    found = [
        match[0]
        for migration in load_migrations("sqlite")
        if (match := re.search(pattern, migration.sql, re.S))
    ]
    assert found
    return found[-1]


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("arguments", '{"amount_cents": 1}'),
        ("binding_hash", "x"),
        ("risk", "read"),
        ("supersedes", "q"),
    ],
)
async def test_database_refuses_to_change_the_frozen_contract(
    db_path: Path, column: str, value: str | None
) -> None:
    store = await SqliteStore.open(db_path)
    await store.create_proposal(new_proposal(NOW, id="p"))
    await store.close()

    with raw(db_path) as db, pytest.raises(sqlite3.IntegrityError, match="frozen contract"):
        db.execute(f"UPDATE proposals SET {column} = ? WHERE id = 'p'", (value,))


async def test_database_lets_the_expiry_change_only_with_one_extension(db_path: Path) -> None:
    store = await SqliteStore.open(db_path)
    await store.create_proposal(new_proposal(NOW, id="p"))
    await store.close()
    later = "2099-01-01T00:00:00.000000Z"

    with raw(db_path) as db:
        with pytest.raises(sqlite3.IntegrityError, match="extended once"):
            db.execute("UPDATE proposals SET expires_at = ? WHERE id = 'p'", (later,))
        db.execute(
            "UPDATE proposals SET expires_at = ?, extended_by = 'U9', extended_at = ? "
            "WHERE id = 'p'",
            (later, later),
        )
        with pytest.raises(sqlite3.IntegrityError, match="extended once"):
            db.execute(
                "UPDATE proposals SET expires_at = '2099-06-01T00:00:00.000000Z' WHERE id = 'p'"
            )
        assert db.execute("SELECT expires_at, extended_by FROM proposals").fetchall() == [
            (later, "U9")
        ]


async def test_migration_0006_rebuilds_proposals_keeping_rows_and_outbox(db_path: Path) -> None:
    """A database at 0005 with proposals and outbox entries migrates to the rebuilt table."""
    before = [m for m in load_migrations("sqlite") if m.version <= 5]
    other = db_path.with_name("old.sqlite")
    async with aiosqlite.connect(other, isolation_level=None) as db:
        await db.execute("PRAGMA foreign_keys = ON")
        await apply_migrations(db, before)
        await db.execute(
            "INSERT INTO proposals (id, agent, submission_key, submission_fingerprint, "
            "requested_by, operation, request, arguments, preview, binding_hash, decision, "
            "policy_note, status, created_at, updated_at, channel) VALUES ('old', 'a', 'k', 'f', "
            "'U1', 'payments.refund', '{}', '{}', '{}', 'h', 'ask', 'n', 'pending', "
            "'2030-01-01T00:00:00.000000Z', '2030-01-01T00:00:00.000000Z', 'C1')"
        )
        await db.execute(
            "INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at) "
            "VALUES ('old', 'slack.post', 'slack', 'pending', '2030-01-01T00:00:00.000000Z', "
            "'2030-01-01T00:00:00.000000Z')"
        )
    store = await SqliteStore.open(other)
    await store.close()
    with raw(other) as db:
        assert db.execute("SELECT id, risk, quorum, risk_rank FROM proposals").fetchall() == [
            ("old", "irreversible", 1, 0)
        ]
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        assert db.execute("SELECT count(*) FROM outbox").fetchall() == [(1,)]
        with pytest.raises(sqlite3.IntegrityError):
            db.execute("PRAGMA foreign_keys = ON")
            db.execute(
                "INSERT INTO outbox (proposal_id, effect, lane, status, created_at, "
                "next_attempt_at) VALUES ('nobody', 'slack.post', 'slack', 'pending', 'x', 'x')"
            )


async def test_migration_0012_rebuilds_proposals_keeping_every_row_and_reference(
    db_path: Path,
) -> None:
    """A database at 0011 with an edit, an approval, an outbox entry and a review migrates to
    the table that allows 'cancelled', every row and column as it was, every reference kept."""
    before = [m for m in load_migrations("sqlite") if m.version <= 11]
    other = db_path.with_name("old.sqlite")
    columns = (
        "id, agent, submission_key, submission_fingerprint, requested_by, operation, request, "
        "arguments, preview, binding_hash, decision, policy_note, status, created_at, updated_at, "
        "channel, expires_at, quorum, supersedes, edited_by, review_sampled, lease_until"
    )
    at = "'2030-01-01T00:00:00.000000Z'"
    later = "'2030-01-01T01:00:00.000000Z'"
    async with aiosqlite.connect(other, isolation_level=None) as db:
        await db.execute("PRAGMA foreign_keys = ON")
        await apply_migrations(db, before)
        for values in (
            f"'old', 'a', 'k1', 'f', 'U1', 'op', '{{}}', '{{}}', '{{}}', 'h', 'ask', 'n', "
            f"'pending', {at}, {at}, 'C1', {later}, 2, NULL, NULL, 0, NULL",
            f"'edit', 'a', 'k2', 'f', 'U1', 'op', '{{}}', '{{}}', '{{}}', 'h', 'ask', 'n', "
            f"'pending', {at}, {at}, 'C1', {later}, 1, 'old', 'U2', 0, NULL",
            f"'auto', 'a', 'k3', 'f', 'U1', 'op', '{{}}', '{{}}', '{{}}', 'h', 'auto', 'n', "
            f"'executing', {at}, {at}, NULL, NULL, 1, NULL, NULL, 1, {later}",
        ):
            await db.execute(f"INSERT INTO proposals ({columns}) VALUES ({values})")
        await db.execute(f"INSERT INTO approvals VALUES ('old', 'U3', 'h', {at})")
        await db.execute(f"INSERT INTO reviews VALUES ('auto', 'ok', 'U4', {at})")
        await db.execute(
            "INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at) "
            f"VALUES ('old', 'slack.post', 'slack', 'pending', {at}, {at})"
        )
    with raw(other) as db:
        rows = db.execute("SELECT * FROM proposals ORDER BY id").fetchall()

    store = await SqliteStore.open(other)
    await store.close()

    with raw(other) as db:
        after = db.execute("SELECT * FROM proposals ORDER BY id").fetchall()
        # later migrations (0017) add columns after these
        assert [row[: len(rows[0])] for row in after] == rows
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        assert db.execute("SELECT count(*) FROM approvals").fetchall() == [(1,)]
        assert db.execute("SELECT count(*) FROM outbox").fetchall() == [(1,)]
        db.execute("UPDATE proposals SET status = 'cancelled' WHERE id = 'edit'")
        with pytest.raises(sqlite3.IntegrityError, match="not a lifecycle transition"):
            db.execute("UPDATE proposals SET status = 'pending' WHERE id = 'edit'")
        with pytest.raises(sqlite3.IntegrityError, match="only a proposal sampled for review"):
            db.execute(f"INSERT INTO reviews VALUES ('old', 'ok', 'U4', {at})")
        with pytest.raises(sqlite3.IntegrityError):
            db.execute("PRAGMA foreign_keys = ON")
            db.execute(f"INSERT INTO approvals VALUES ('nobody', 'U3', 'h', {at})")


async def test_migration_0016_counts_the_proposals_already_pending_per_agent(
    db_path: Path,
) -> None:
    """A database upgraded with a backlog starts its kept pending counts from that backlog."""
    before = [m for m in load_migrations("sqlite") if m.version <= 15]
    columns = (
        "id, agent, submission_key, submission_fingerprint, requested_by, operation, request, "
        "arguments, preview, binding_hash, decision, policy_note, status, created_at, updated_at"
    )
    at = "'2030-01-01T00:00:00.000000Z'"
    async with aiosqlite.connect(db_path, isolation_level=None) as db:
        await apply_migrations(db, before)
        rows = [("a", "pending"), ("a", "pending"), ("a", "rejected"), ("b", "pending")]
        for n, (agent, status) in enumerate(rows):
            await db.execute(
                f"INSERT INTO proposals ({columns}) VALUES ('p{n}', '{agent}', 'k{n}', 'f', "
                f"'U1', 'op', '{{}}', '{{}}', '{{}}', 'h', 'ask', 'n', '{status}', {at}, {at})"
            )

    store = await SqliteStore.open(db_path)
    try:
        assert await store.count_pending("a") == 2
        assert await store.pending_by_agent() == {"a": 2, "b": 1}
    finally:
        await store.close()


async def test_counting_an_agents_pending_proposals_reads_no_proposal(db_path: Path) -> None:
    """The per-agent limit's count reads the kept count, so its cost does not grow with the
    backlog (a count(*) over the agent's pending proposals did)."""
    await (await SqliteStore.open(db_path)).close()
    queries = load_queries("sqlite")
    with raw(db_path) as db:
        for name, params in (("count_pending", {"agent": "a"}), ("count_pending_by_agent", {})):
            plan = db.execute(f"EXPLAIN QUERY PLAN {queries[name].text}", params).fetchall()
            assert "pending_counts" in str(plan)
            assert "proposals" not in str(plan).replace("pending_counts", "")


async def test_empty_audit_head_is_the_genesis_of_store_audit(db_path: Path) -> None:
    await (await SqliteStore.open(db_path)).close()

    with raw(db_path) as db:
        assert db.execute("SELECT seq, hash FROM audit_head").fetchall() == [(0, GENESIS)]


# --- driver errors are translated ----------------------------------------------------------------


async def test_a_locked_database_raises_store_unavailable_and_the_store_recovers(
    db_path: Path,
) -> None:
    store = await SqliteStore.open(db_path, busy_timeout_ms=50)
    with raw(db_path) as blocker:
        blocker.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreUnavailable, match="locked"):
            await store.create_proposal(new_proposal(NOW))
        blocker.execute("ROLLBACK")
    try:
        _, created = await store.create_proposal(new_proposal(NOW))
        assert created
    finally:
        await store.close()


async def test_a_closed_store_raises_store_unavailable(db_path: Path) -> None:
    store = await SqliteStore.open(db_path)
    await store.close()

    with pytest.raises(StoreUnavailable, match="closed"):
        await store.get_proposal("p")


@pytest.fixture
def not_a_database(db_path: Path) -> Path:
    db_path.write_bytes(b"these bytes are not a SQLite database" * 100)
    return db_path


async def test_a_file_that_is_not_a_database_raises_store_unavailable(
    not_a_database: Path,
) -> None:
    with pytest.raises(StoreUnavailable, match="not a database"):
        await SqliteStore.open(not_a_database)


async def test_a_naive_now_is_refused_naming_the_argument(db_path: Path) -> None:
    store = await SqliteStore.open(db_path)
    try:
        with pytest.raises(ValueError, match="now: got naive datetime"):
            await store.expire_due(now=datetime(2031, 1, 1))  # noqa: DTZ001 - the point
    finally:
        await store.close()


# --- several processes on one file ---------------------------------------------------------------


async def test_claims_through_two_connections_to_one_file_make_one_executor(
    db_path: Path,
) -> None:
    first, second = await SqliteStore.open(db_path), await SqliteStore.open(db_path)
    try:
        new = new_proposal(NOW)
        await first.create_proposal(new)

        results = await asyncio.gather(
            *(
                store.claim_for_execution(
                    new.id,
                    actor=f"U{i}",
                    now=NOW,
                    binding_hash=new.binding_hash,
                    lease_until=NOW + LEASE,
                )
                for i in range(10)
                for store in (first, second)
            )
        )

        assert sum(isinstance(r, Transitioned) for r in results) == 1
        assert sum(isinstance(r, AlreadyDecided) for r in results) == 19
        assert (await second.verify_audit()).ok
    finally:
        await first.close()
        await second.close()


# --- open_store ----------------------------------------------------------------------------------


async def test_open_store_accepts_relative_absolute_and_plain_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    urls = {
        "sqlite:///data/relative.sqlite": tmp_path / "data" / "relative.sqlite",
        f"sqlite:///{tmp_path}/absolute.sqlite": tmp_path / "absolute.sqlite",
        "plain.sqlite": tmp_path / "plain.sqlite",
    }
    for url, expected_file in urls.items():
        store = await open_store(url)
        await store.create_proposal(new_proposal(NOW))
        await store.close()
        assert expected_file.is_file(), url


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://postgres@127.0.0.1:1/test", "cannot open PostgreSQL database"),
        ("postgres://postgres@127.0.0.1:1/test", "cannot open PostgreSQL database"),
        ("mysql://127.0.0.1/db", "unknown scheme 'mysql'"),
        ("sqlite://", "no database path"),
        ("sqlite:///", "no database path"),
        ("", "empty"),
    ],
)
async def test_open_store_explains_urls_it_cannot_open(url: str, message: str) -> None:
    with pytest.raises(StoreError, match=message):
        await open_store(url)


async def test_time_columns_compare_correctly_as_text_across_offsets(db_path: Path) -> None:
    store = await SqliteStore.open(db_path)
    try:
        # 10:00 at +05:00 is 05:00 UTC: overdue at 06:00 UTC, although "10" > "06" as text.
        plus_five = timezone(timedelta(hours=5))
        new = new_proposal(NOW, expires_at=datetime(2031, 1, 1, 10, tzinfo=plus_five))
        await store.create_proposal(new)

        expired = await store.expire_due(now=datetime(2031, 1, 1, 6, tzinfo=UTC))

        assert [p.id for p in expired] == [new.id]
    finally:
        await store.close()


async def test_expire_due_refuses_a_limit_below_one(db_path: Path) -> None:
    store = await SqliteStore.open(db_path)
    try:
        await store.create_proposal(new_proposal(NOW, expires_at=NOW))
        with pytest.raises(ValueError, match="limit: got -1"):
            await store.expire_due(now=NOW, limit=-1)
        assert (await store.audit_log())[-1].event == "submitted"
    finally:
        await store.close()


async def test_calls_waiting_while_the_store_closes_raise_store_unavailable(
    db_path: Path,
) -> None:
    store = await SqliteStore.open(db_path)
    calls = [store.create_proposal(new_proposal(NOW)) for _ in range(5)]

    results = await asyncio.gather(*calls, store.close(), return_exceptions=True)

    failures = [r for r in results if isinstance(r, Exception)]
    assert failures and all(isinstance(r, StoreUnavailable) for r in failures)


async def test_cancelled_writes_raise_cancelled_and_leave_the_store_usable(db_path: Path) -> None:
    store = await SqliteStore.open(db_path)
    try:
        cancelled = 0
        for delay in [i * 0.0002 for i in range(60)]:
            task = asyncio.create_task(
                store.record_event(None, actor="t", event="tick", detail={}, now=NOW)
            )
            await asyncio.sleep(delay)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                cancelled += 1
            # any other exception (a StoreUnavailable that swallowed the cancellation) fails here

        assert cancelled > 0  # some cancellations really landed mid-write
        await store.record_event(None, actor="t", event="after", detail={}, now=NOW)
        assert (await store.verify_audit()).ok
    finally:
        await store.close()


# --- reads beside the writer --------------------------------------------------------------------


async def test_a_read_does_not_wait_for_a_batch_of_writes(db_path: Path) -> None:
    """Reads have connections of their own: a batch of writes holding the writer's connection
    (as one waiting for its COMMIT's disk flush does) does not hold them up, and they read
    what has committed, not the batch's statements."""
    store = await SqliteStore.open(db_path)
    try:
        stored, _ = await store.create_proposal(new_proposal(NOW))
        in_batch, release = asyncio.Event(), asyncio.Event()

        async def slow_writer() -> None:
            async with store.tx(write=True):
                in_batch.set()
                await release.wait()

        writer = asyncio.create_task(slow_writer())
        await in_batch.wait()
        second = asyncio.create_task(store.create_proposal(new_proposal(NOW)))
        try:
            # with the writer's connection taken, the read is answered by a reader
            read = await asyncio.wait_for(store.get_proposal(stored.id), timeout=5)
            assert read.id == stored.id
            assert (await asyncio.wait_for(store.pending_deliveries(), timeout=5)) == 1
            assert not second.done()  # the write queued behind the batch
        finally:
            release.set()
            await writer
        created, _ = await second
        # a write that returned is committed: the readers see it at once
        assert (await store.get_proposal(created.id)).id == created.id
    finally:
        await store.close()


async def test_reads_go_to_read_only_connections(db_path: Path) -> None:
    store = await SqliteStore.open(db_path)
    try:
        stored, _ = await store.create_proposal(new_proposal(NOW))
        with pytest.raises(StoreError, match="readonly"):
            async with store.tx(write=False) as tx:
                await tx.execute("complete_delivery", id=1, now=NOW)
        assert await store.pending_deliveries() == 1  # nothing was written
        assert (await store.get_proposal(stored.id)).id == stored.id
    finally:
        await store.close()


async def test_an_in_memory_store_reads_between_its_writes(tmp_path: Path) -> None:
    """No other connection can open an in-memory database: reads share the writer's."""
    store = await SqliteStore.open(":memory:")
    try:
        stored, _ = await store.create_proposal(new_proposal(NOW))
        assert (await store.get_proposal(stored.id)).id == stored.id
        assert (await store.verify_audit()).ok
    finally:
        await store.close()


async def test_a_writer_refused_in_a_batch_reads_the_batch_once_told(db_path: Path) -> None:
    """A writer whose statements fail learns it when its batch has committed, so that what it
    reads next (on a reader) includes the batch's other writes: a submission refused because
    a standing rule was used up meanwhile classifies itself again on the uses the database
    counted (bot/flow/submit.py)."""
    store = await SqliteStore.open(db_path)
    try:
        first_open, close_first = asyncio.Event(), asyncio.Event()
        last_open, close_last = asyncio.Event(), asyncio.Event()

        async def holding(opened: asyncio.Event, close: asyncio.Event) -> None:
            async with store.tx(write=True):
                opened.set()
                await close.wait()

        async def refused() -> int:
            with pytest.raises(RuntimeError):
                async with store.tx(write=True):
                    raise RuntimeError("the database refused it")
            return await store.pending_deliveries()

        # one batch: a proposal, the refused writer, then a writer that keeps the batch open
        first = asyncio.create_task(holding(first_open, close_first))
        await first_open.wait()
        created = asyncio.create_task(store.create_proposal(new_proposal(NOW)))
        await _until(lambda: store.group_commit.queued() == 1)
        told = asyncio.create_task(refused())
        last = asyncio.create_task(holding(last_open, close_last))
        await _until(lambda: store.group_commit.queued() == 3)
        close_first.set()
        await last_open.wait()

        # the refused writer is not told while its batch is open...
        done, _ = await asyncio.wait({told}, timeout=0.5)
        assert not done
        close_last.set()
        # ...and once told, it reads the batch's proposal
        assert await told == 1
        await asyncio.gather(first, created, last)
    finally:
        await store.close()


async def _until(check: Callable[[], bool]) -> None:
    """Let other tasks run until ``check()`` holds (a few loop turns at most)."""
    for _ in range(1000):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError("the tasks never got there")


def _counted_steps(
    db: sqlite3.Connection, name: str, params: dict[str, object]
) -> tuple[int, list[dict[str, object]]]:
    """The named query run on ``db`` and rolled back: SQLite's steps it took (in tens, by a
    progress handler) and its rows, by column name."""
    query = load_queries("sqlite")[name]
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    db.execute("BEGIN")
    db.set_progress_handler(count, 10)
    try:
        cursor = db.execute(
            query.text, {key: SqliteTx.param(key, params[key]) for key in query.params}
        )
        names = [column[0] for column in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        db.set_progress_handler(None, 0)
        db.execute("ROLLBACK")
    return steps, rows


async def test_grouping_similar_posts_reads_as_little_with_a_backlog_of_them_as_without(
    tmp_path: Path,
) -> None:
    """Grouping similar posts leases the oldest few. It read every similar post still to show
    and sorted them all first (10 ms a lookup with 5,000 waiting, in a benchmark posting faster
    than Slack shows them); it now walks them oldest first by their index (0015, 0025) and stops
    at its limit. Counted in SQLite's own steps, 1,000 waiting cost what 10 do."""
    later = NOW + timedelta(hours=1)

    async def steps(waiting: int) -> int:
        path = tmp_path / f"{waiting}.sqlite"
        store = await SqliteStore.open(path)
        made = [new_proposal(NOW + timedelta(milliseconds=n)) for n in range(waiting)]
        for new in made:
            await store.create_proposal(new)
        await store.create_proposal(new_proposal(NOW, requested_by="U0OTHER"))
        await store.close()
        params = {
            "channel": "C0FINANCE",
            "operation": "payments.refund",
            "requested_by": "U0123",
            "now": later,
            "lease": later + LEASE,
            "limit": 5,
        }
        with raw(path) as db:
            counted, rows = _counted_steps(db, "claim_similar_posts", params)
        # the oldest five, and only similar ones
        assert {row["proposal_id"] for row in rows} == {new.id for new in made[:5]}
        return counted

    few, many = await steps(10), await steps(1000)
    assert many < 2 * few, (few, many)


async def test_the_sweeps_and_the_pending_queue_read_as_little_with_a_backlog_as_without(
    tmp_path: Path,
) -> None:
    """The expiry, reminder, hand-over and abandoned-execution sweeps, and the queue of pending
    proposals (App Home, the slash command), each found their rows through every pending
    proposal: 19-63 ms a sweep, 26-40 ms a queue, with 55,000 pending. Now each reads what it
    returns (or nothing, when nothing is due) by its own index. Counted in SQLite's steps, with
    nothing due, 1,000 pending cost what 10 do."""
    later = NOW + timedelta(minutes=10)  # nothing due yet: each sweep's work is only its reads
    params = {"now": later, "limit": 5, "outcome": "{}"}
    names = ("expire_due", "remind_due", "hand_over_due", "reclaim_abandoned", "select_pending")

    async def steps(waiting: int) -> dict[str, int]:
        path = tmp_path / f"{waiting}.sqlite"
        store = await SqliteStore.open(path)
        await store_waiting(store, waiting, at=NOW)
        await store.close()
        counted = {}
        with raw(path) as db:
            for name in names:
                counted[name], rows = _counted_steps(db, name, params)
                assert len(rows) == (5 if name == "select_pending" else 0), name
        return counted

    few, many = await steps(10), await steps(1000)
    assert all(many[name] < 2 * few[name] + 20 for name in names), (few, many)


async def test_a_rules_history_reads_as_little_with_many_asked_calls_of_the_agent_as_with_few(
    tmp_path: Path,
) -> None:
    """The grant modal's history of a rule keeps the latest few of the agent's calls the rule
    asked about. It read every proposal of the agent, by the index of submission keys, and
    sorted them (1.07 s with 1,000,000, past the second the modal waits); it now walks them
    newest first by proposals_asked_by_rule (0026) and stops at its limit. Counted in SQLite's
    steps, 1,000 cost what 10 do."""
    params = {"agent": "billing-agent", "rule_id": "refunds-ask", "since": NOW, "most": 5}

    async def steps(stored: int) -> int:
        path = tmp_path / f"{stored}.sqlite"
        store = await SqliteStore.open(path)
        for n in range(stored):
            await store.create_proposal(new_proposal(NOW + timedelta(seconds=n)))
        await store.close()
        with raw(path) as db:
            counted, [row] = _counted_steps(db, "select_rule_history", params)
        assert row["counted"] == 5
        return counted

    few, many = await steps(10), await steps(1000)
    assert many < 2 * few, (few, many)


async def test_a_page_of_recent_calls_reads_as_little_with_many_older_calls_as_with_few(
    tmp_path: Path,
) -> None:
    """`policy export-calls` reads the calls made since a time, 500 at a time. Each page read
    the whole table and sorted what it kept (a day's 86,374 calls of 1,000,000 stored: 58 s);
    by proposals_by_time (0030) a page starts where the last one ended. Counted in SQLite's
    steps, a page after 1,000 older calls costs what it costs after 10."""
    since = NOW + timedelta(days=1)
    params = {"since": since, "after_at": since, "after_id": "", "limit": 5}

    async def steps(older: int) -> int:
        path = tmp_path / f"{older}.sqlite"
        store = await SqliteStore.open(path)
        for n in range(older):
            await store.create_proposal(new_proposal(NOW + timedelta(seconds=n)))
        for n in range(10):
            await store.create_proposal(new_proposal(since + timedelta(seconds=n)))
        await store.close()
        with raw(path) as db:
            counted, rows = _counted_steps(db, "select_calls_since", params)
        assert len(rows) == 5
        return counted

    few, many = await steps(10), await steps(1000)
    assert many < 2 * few, (few, many)


async def test_migration_0017_rebuilds_digests_keeping_every_digest_and_item(
    db_path: Path,
) -> None:
    """A database at 0016 with a digest and its item migrates to digests that may hold a batch
    of several requesters; the digest, its item's reference and the guards stay."""
    before = [m for m in load_migrations("sqlite") if m.version <= 16]
    other = db_path.with_name("old.sqlite")
    at = "'2030-01-01T00:00:00.000000Z'"
    async with aiosqlite.connect(other, isolation_level=None) as db:
        await db.execute("PRAGMA foreign_keys = ON")
        await apply_migrations(db, before)
        await db.execute(
            "INSERT INTO digests VALUES ('dg_1', 'C1', '1.000100', 'op', 'U1', " + at + ")"
        )
        await db.execute(
            "INSERT INTO proposals (id, agent, submission_key, submission_fingerprint, "
            "requested_by, operation, request, arguments, preview, binding_hash, decision, "
            "policy_note, status, created_at, updated_at, channel, expires_at) VALUES "
            f"('p1', 'a', 'k1', 'f', 'U1', 'op', '{{}}', '{{}}', '{{}}', 'h', 'ask', 'n', "
            f"'pending', {at}, {at}, 'C1', {at})"
        )
        await db.execute(
            "UPDATE proposals SET digest_id = 'dg_1', slack_channel = 'C1', "
            "slack_ts = '1.000100' WHERE id = 'p1'"
        )

    store = await SqliteStore.open(other)
    await store.close()

    with raw(other) as db:
        assert db.execute("SELECT id, requested_by, batch_id FROM digests").fetchall() == [
            ("dg_1", "U1", None)
        ]
        assert db.execute("SELECT digest_id FROM proposals").fetchall() == [("dg_1",)]
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        with pytest.raises(sqlite3.IntegrityError, match="cannot be changed"):
            db.execute("UPDATE digests SET ts = '2.0' WHERE id = 'dg_1'")
        with pytest.raises(sqlite3.IntegrityError, match="requested_by IS NOT NULL"):
            db.execute(
                "INSERT INTO digests (id, channel, ts, operation, created_at) "
                f"VALUES ('dg_2', 'C1', '3.0', 'op', {at})"
            )
