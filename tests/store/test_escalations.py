"""The escalation conformance suite on SQLite and on PostgreSQL, plus the database's own guards."""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite
import asyncpg
import pytest

from store import pg_migrate
from store.escalations import ESCALATION_TRANSITIONS, EscalationStatus, Moved
from store.migrate import load_migrations
from store.postgres import PostgresStore
from store.protocol import Store
from store.sqlite import SqliteStore, apply_migrations
from tests.store.conftest import POSTGRES_URL
from tests.store.escalation_conformance import NOW, EscalationConformance, new_escalation

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


class TestSqliteEscalations(EscalationConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SqliteStore]:
        store = await SqliteStore.open(tmp_path / "countersign.sqlite")
        yield store
        await store.close()


@pytest.mark.postgres
class TestPostgresEscalations(EscalationConformance):
    @pytest.fixture
    async def store(self) -> AsyncIterator[PostgresStore]:
        schema = f"countersign_test_{secrets.token_hex(6)}"
        admin = await asyncpg.connect(PG_URL)
        try:
            await admin.execute(f'CREATE SCHEMA "{schema}"')
            store = await PostgresStore.open(PG_URL, server_settings={"search_path": schema})
            try:
                yield store
            finally:
                await store.close()
        finally:
            await admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
            await admin.close()


def _pairs() -> list[tuple[EscalationStatus, EscalationStatus]]:
    return [(a, b) for a in EscalationStatus for b in EscalationStatus if a is not b]


MIGRATION = Path(__file__).parents[2] / "store" / "sql" / "sqlite" / "0004_escalations.sql"


def _lifecycle_trigger() -> str:
    text = MIGRATION.read_text(encoding="utf-8")
    start = text.index("CREATE TRIGGER escalations_status_follows_lifecycle")
    return text[start : text.index("END;", start) + len("END;")]


@pytest.mark.parametrize(("source", "target"), _pairs())
async def test_sqlite_refuses_every_status_change_outside_the_table(
    tmp_path: Path, source: EscalationStatus, target: EscalationStatus
) -> None:
    path = tmp_path / "countersign.sqlite"
    store = await SqliteStore.open(path)
    new, _ = await store.escalations().create_escalation(new_escalation())
    await store.close()
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA ignore_check_constraints = ON")  # only the trigger is under test
        db.execute("DROP TRIGGER escalations_status_follows_lifecycle")  # to reach ``source``
        db.execute("UPDATE escalations SET status = ? WHERE id = ?", (source.value, new.id))
        db.execute(_lifecycle_trigger())
        try:
            db.execute("UPDATE escalations SET status = ? WHERE id = ?", (target.value, new.id))
            changed = True
        except sqlite3.IntegrityError:
            changed = False
        assert changed == (target in ESCALATION_TRANSITIONS[source])
    finally:
        db.close()


async def test_sqlite_refuses_changing_what_the_agent_reported(tmp_path: Path) -> None:
    path = tmp_path / "countersign.sqlite"
    store = await SqliteStore.open(path)
    new, _ = await store.escalations().create_escalation(new_escalation())
    await store.close()
    db = sqlite3.connect(path, isolation_level=None)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="cannot be changed"):
            db.execute("UPDATE escalations SET summary = '{}' WHERE id = ?", (new.id,))
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):  # an owner, yet open
            db.execute(
                "UPDATE escalations SET owner = 'U1', taken_at = created_at WHERE id = ?",
                (new.id,),
            )
    finally:
        db.close()


def test_the_status_check_names_every_status() -> None:
    migration = MIGRATION.read_text(encoding="utf-8")
    listed = "'open', 'taken', 'handed_back', 'resolved'"
    assert listed in migration
    assert {s.value for s in EscalationStatus} == {"open", "taken", "handed_back", "resolved"}
    assert NOW.tzinfo is not None


# --- 0029: taken_at ------------------------------------------------------------------------------


def _report() -> str:
    """The JSON of an agent's report (summary, trigger, verdict), as SQL string literals."""
    new = new_escalation()
    return ", ".join(
        "'" + part.model_dump_json().replace("'", "''") + "'"
        for part in (new.summary, new.trigger, new.verdict)
    )


#: Escalations as 0028 left them: taken again after a hand-back and its message placed again
#: since (audited takes at 00:01 and 00:03, updated at 00:04); taken with no audit entry of it;
#: handed back.
BEFORE_0029 = [
    f"""INSERT INTO escalations (
        id, agent, submission_key, submission_fingerprint, conversation_id, requested_by,
        summary, trigger, verdict, channel, created_at, status, owner, announced_at, updated_at
    ) VALUES (
        '{escalation_id}', 'support-bot', '{escalation_id}', 'fp', 'conv-1', 'U0REQ',
        {_report()}, 'C0SUPPORT', '2030-01-01T00:00:00.000000Z', '{status}', {owner},
        '2030-01-01T00:00:00.000000Z', '2030-01-01T00:0{updated}:00.000000Z'
    )"""
    for escalation_id, status, owner, updated in (
        ("esc_retaken", "taken", "'U1'", 4),
        ("esc_unaudited", "taken", "'U2'", 2),
        ("esc_back", "handed_back", "NULL", 5),
    )
]
TAKES = [
    ("esc_retaken", "2030-01-01T00:01:00.000000Z"),
    ("esc_retaken", "2030-01-01T00:03:00.000000Z"),
]


def _at(minute: int) -> datetime:
    return datetime(2030, 1, 1, 0, minute, tzinfo=UTC)


async def _taken_at_backfilled(store: Store) -> None:
    escalations = store.escalations()
    taken_at = {
        escalation_id: (await escalations.get_escalation(escalation_id)).taken_at
        for escalation_id in ("esc_retaken", "esc_unaudited", "esc_back")
    }
    assert taken_at == {"esc_retaken": _at(3), "esc_unaudited": _at(2), "esc_back": None}


async def test_migration_0029_sqlite_takes_taken_at_from_the_last_audited_take(
    tmp_path: Path,
) -> None:
    """Each taken escalation's taken_at is its last "taken" audit entry's moment (updated_at
    moved on when its message was placed again); updated_at where none is found."""
    path = tmp_path / "countersign.sqlite"
    async with aiosqlite.connect(path, isolation_level=None) as db:
        await apply_migrations(db, [m for m in load_migrations("sqlite") if m.version < 29])
        for statement in BEFORE_0029:
            await db.execute(statement)
        for seq, (escalation_id, at) in enumerate(TAKES, start=1):
            await db.execute(
                "INSERT INTO audit_log (seq, at, proposal_id, actor, event, detail, prev_hash, "
                "hash) SELECT :seq, :at, :id, 'U1', 'taken', '{}', hash, :hash FROM audit_head",
                {"seq": seq, "at": at, "id": escalation_id, "hash": f"h{seq}"},
            )

    store = await SqliteStore.open(path)
    try:
        await _taken_at_backfilled(store)
    finally:
        await store.close()


@pytest.mark.postgres
async def test_migration_0029_postgres_takes_taken_at_from_the_last_audited_take(
    schema: str, connect: Callable[[], Awaitable[asyncpg.Connection]]
) -> None:
    """As on SQLite."""
    db = await connect()
    await pg_migrate.apply_migrations(
        db, [m for m in load_migrations("postgres") if m.version < 29]
    )
    for statement in BEFORE_0029:
        await db.execute(statement)
    for escalation_id, at in TAKES:
        await db.execute(
            "INSERT INTO audit_log (at, proposal_id, actor, event, detail) "
            "VALUES ($1::text::timestamptz, $2, 'U1', 'taken', '{}')",
            at,
            escalation_id,
        )

    store = await PostgresStore.open(POSTGRES_URL, server_settings={"search_path": schema})
    try:
        await _taken_at_backfilled(store)
    finally:
        await store.close()


#: Statements that would leave taken_at apart from its owner: cleared while taken, the owner
#: gone while it stays, or a copy of a taken escalation inserted without it.
APART = [
    pytest.param("UPDATE escalations SET taken_at = NULL", id="cleared-while-taken"),
    pytest.param(
        "UPDATE escalations SET status = 'handed_back', owner = NULL", id="kept-without-owner"
    ),
    pytest.param(
        "CREATE TEMPORARY TABLE copied AS SELECT * FROM escalations;"
        "UPDATE copied SET id = 'esc_copy', submission_key = 'copy', taken_at = NULL;"
        "INSERT INTO escalations SELECT * FROM copied",
        id="inserted-without-it",
    ),
]


async def _taken(store: Store) -> None:
    escalations = store.escalations()
    new, _ = await escalations.create_escalation(new_escalation())
    assert isinstance(await escalations.take(new.id, actor="U1", now=NOW), Moved)


@pytest.mark.parametrize("statement", APART)
async def test_sqlite_keeps_taken_at_exactly_with_the_owner(tmp_path: Path, statement: str) -> None:
    path = tmp_path / "countersign.sqlite"
    store = await SqliteStore.open(path)
    await _taken(store)
    await store.close()
    db = sqlite3.connect(path, isolation_level=None)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="taken_at is set exactly while"):
            db.executescript(statement)
    finally:
        db.close()


@pytest.mark.postgres
@pytest.mark.parametrize("statement", APART)
async def test_postgres_keeps_taken_at_exactly_with_the_owner(
    schema: str, connect: Callable[[], Awaitable[asyncpg.Connection]], statement: str
) -> None:
    store = await PostgresStore.open(POSTGRES_URL, server_settings={"search_path": schema})
    try:
        await _taken(store)
    finally:
        await store.close()
    db = await connect()
    with pytest.raises(asyncpg.CheckViolationError, match="escalations_taken_at_with_its_owner"):
        await db.execute(statement)
