"""The recorded-calls conformance suite on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from store.postgres import PostgresStore
from store.sqlite import SqliteStore
from tests.store.calls_conformance import RecordedCallsConformance
from tests.store.test_postgres import OpenStore, open_pg  # noqa: F401 (fixtures)


class TestSqliteRecordedCalls(RecordedCallsConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SqliteStore]:
        store = await SqliteStore.open(tmp_path / "countersign.sqlite")
        yield store
        await store.close()


@pytest.mark.postgres
class TestPostgresRecordedCalls(RecordedCallsConformance):
    @pytest.fixture
    async def store(self, open_pg: OpenStore) -> PostgresStore:  # noqa: F811
        return await open_pg()
