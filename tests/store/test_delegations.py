"""The delegation conformance suite on SQLite and PostgreSQL, and what each database refuses by
itself: a delegation never changes except for one revocation, and is never deleted."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from store.base import StoreError
from store.postgres import PostgresStore
from store.protocol import Store
from store.sqlite import SqliteStore
from tests.store.conformance import new_proposal
from tests.store.delegation_conformance import NOW, DelegationConformance, new_delegation
from tests.store.test_postgres import OpenStore, open_pg  # noqa: F401 (fixtures)


class TestSqliteDelegations(DelegationConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SqliteStore]:
        store = await SqliteStore.open(tmp_path / "countersign.sqlite")
        yield store
        await store.close()


class TestPostgresDelegations(DelegationConformance):
    @pytest.fixture
    async def store(self, open_pg: OpenStore) -> PostgresStore:  # noqa: F811
        return await open_pg()


REFUSED = {
    "change-person": "UPDATE delegations SET person = 'U0ALEX' WHERE id = '{id}'",
    "change-agent": "UPDATE delegations SET agent = 'other' WHERE id = '{id}'",
    "extend": "UPDATE delegations SET expires_at = '2031-03-15T15:09:26.535897+00:00' "
    "WHERE id = '{id}'",
    "swap-token": "UPDATE delegations SET token_hash = '{other}' WHERE id = '{id}'",
    "half-revocation": "UPDATE delegations SET revoked_by = 'U0X' WHERE id = '{id}'",
    "delete": "DELETE FROM delegations WHERE id = '{id}'",
    "set-on-a-proposal": "UPDATE proposals SET delegation_id = '{id}'",
}


@pytest.mark.parametrize("statement", sorted(REFUSED))
async def test_sqlite_refuses_changing_or_deleting_a_delegation(
    tmp_path: Path, statement: str
) -> None:
    store = await SqliteStore.open(tmp_path / "countersign.sqlite")
    try:
        new, _ = new_delegation()
        await store.delegations().create_delegation(new)
        await store.create_proposal(new_proposal(NOW, requested_by="U0DANA"))
        sql = REFUSED[statement].format(id=new.id, other="a" * 64)
        with pytest.raises(StoreError):
            await _execute(store, sql)
        assert (
            await store.delegations().get_delegation(new.id)
            == (await store.delegations().delegations_of("U0DANA", now=NOW))[0]
        )
    finally:
        await store.close()


@pytest.mark.parametrize("statement", sorted(REFUSED))
async def test_postgres_refuses_changing_or_deleting_a_delegation(
    open_pg: OpenStore,  # noqa: F811
    statement: str,
) -> None:
    store = await open_pg()
    new, _ = new_delegation()
    created = await store.delegations().create_delegation(new)
    await store.create_proposal(new_proposal(NOW, requested_by="U0DANA"))
    sql = REFUSED[statement].format(id=new.id, other="a" * 64)
    with pytest.raises(StoreError):
        await _execute(store, sql)
    assert await store.delegations().get_delegation(new.id) == created


async def _execute(store: Store, sql: str) -> None:
    """One statement straight on the backend's connection, translated as the store does."""
    if isinstance(store, SqliteStore):
        async with store.transaction(write=True) as db:
            await db.execute(sql)
    elif isinstance(store, PostgresStore):
        async with store.transaction() as db:
            await db.execute(sql)
