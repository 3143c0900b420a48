"""The digest conformance suite on SQLite and on PostgreSQL, plus the database's own guards."""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from store.postgres import PostgresStore
from store.sqlite import SqliteStore
from tests.store.batch_conformance import BatchConformance
from tests.store.conformance import new_proposal
from tests.store.digest_conformance import NOW, DigestConformance, digest

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


class TestSqliteDigests(DigestConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SqliteStore]:
        store = await SqliteStore.open(tmp_path / "countersign.sqlite")
        yield store
        await store.close()


class TestSqliteBatches(BatchConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SqliteStore]:
        store = await SqliteStore.open(tmp_path / "countersign.sqlite")
        yield store
        await store.close()

    @pytest.fixture
    async def second_store(self, tmp_path: Path, store: SqliteStore) -> AsyncIterator[SqliteStore]:
        second = await SqliteStore.open(tmp_path / "countersign.sqlite")
        yield second
        await second.close()


@pytest.fixture
async def pg_schema() -> AsyncIterator[str]:
    schema = f"countersign_test_{secrets.token_hex(6)}"
    admin = await asyncpg.connect(PG_URL)
    try:
        await admin.execute(f'CREATE SCHEMA "{schema}"')
        yield schema
    finally:
        await admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await admin.close()


@pytest.mark.postgres
class TestPostgresBatches(BatchConformance):
    """Two stores over one database: two instances."""

    @pytest.fixture
    async def store(self, pg_schema: str) -> AsyncIterator[PostgresStore]:
        store = await PostgresStore.open(PG_URL, server_settings={"search_path": pg_schema})
        yield store
        await store.close()

    @pytest.fixture
    async def second_store(
        self, pg_schema: str, store: PostgresStore
    ) -> AsyncIterator[PostgresStore]:
        second = await PostgresStore.open(PG_URL, server_settings={"search_path": pg_schema})
        yield second
        await second.close()


@pytest.mark.postgres
class TestPostgresDigests(DigestConformance):
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


async def _attached(path: Path) -> tuple[str, str]:
    """A digest with one item in a new SQLite file; (digest id, item id)."""
    store = await SqliteStore.open(path)
    try:
        created, _ = await store.create_proposal(new_proposal(NOW))
        new = digest()
        await store.digests().attach_digest(new, [created.id], deliveries=[], now=NOW)
        return new.id, created.id
    finally:
        await store.close()


async def test_sqlite_keeps_an_item_in_its_digest_and_its_message(tmp_path: Path) -> None:
    path = tmp_path / "countersign.sqlite"
    digest_id, item = await _attached(path)
    db = sqlite3.connect(path, isolation_level=None)
    try:
        for change in (
            "UPDATE proposals SET digest_id = NULL WHERE id = ?",
            "UPDATE proposals SET slack_ts = '1.2' WHERE id = ?",
            "UPDATE proposals SET slack_channel = 'C0OTHER' WHERE id = ?",
        ):
            with pytest.raises(sqlite3.IntegrityError, match="stays in its digest"):
                db.execute(change, (item,))
        with pytest.raises(sqlite3.IntegrityError, match="cannot be changed"):
            db.execute("UPDATE digests SET ts = '1.2' WHERE id = ?", (digest_id,))
        with pytest.raises(sqlite3.IntegrityError, match="cannot be deleted"):
            db.execute("DELETE FROM digests WHERE id = ?", (digest_id,))
    finally:
        db.close()


@pytest.mark.postgres
async def test_postgres_keeps_an_item_in_its_digest_and_its_message() -> None:
    schema = f"countersign_test_{secrets.token_hex(6)}"
    admin = await asyncpg.connect(PG_URL)
    try:
        await admin.execute(f'CREATE SCHEMA "{schema}"')
        store = await PostgresStore.open(PG_URL, server_settings={"search_path": schema})
        try:
            created, _ = await store.create_proposal(new_proposal(NOW))
            new = digest()
            await store.digests().attach_digest(new, [created.id], deliveries=[], now=NOW)
        finally:
            await store.close()
        db = await asyncpg.connect(PG_URL, server_settings={"search_path": schema})
        try:
            for change in (
                "UPDATE proposals SET digest_id = NULL WHERE id = $1",
                "UPDATE proposals SET slack_ts = '1.2' WHERE id = $1",
            ):
                with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="stays in"):
                    await db.execute(change, created.id)
            with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="digest"):
                await db.execute("DELETE FROM digests WHERE id = $1", new.id)
        finally:
            await db.close()
    finally:
        await admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await admin.close()
