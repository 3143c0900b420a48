"""The escalation conformance suite on SQLite and on PostgreSQL, plus the database's own guards."""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from store.escalations import ESCALATION_TRANSITIONS, EscalationStatus
from store.postgres import PostgresStore
from store.sqlite import SqliteStore
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
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            db.execute("UPDATE escalations SET owner = 'U1' WHERE id = ?", (new.id,))
    finally:
        db.close()


def test_the_status_check_names_every_status() -> None:
    migration = MIGRATION.read_text(encoding="utf-8")
    listed = "'open', 'taken', 'handed_back', 'resolved'"
    assert listed in migration
    assert {s.value for s in EscalationStatus} == {"open", "taken", "handed_back", "resolved"}
    assert NOW.tzinfo is not None
