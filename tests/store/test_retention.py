"""The retention conformance suite on SQLite and PostgreSQL, and what each database refuses by
itself: a proposal, an approval or a review is removed only once its proposal is archived."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from store.base import StoreError
from store.postgres import PostgresStore
from store.protocol import Store
from store.retention import retention_of
from store.sqlite import SqliteStore
from tests.store.retention_conformance import (
    CUTOFF,
    NOW,
    RetentionConformance,
    _decided_old,
)
from tests.store.test_postgres import OpenStore, open_pg, raw  # noqa: F401 (fixtures)


class TestSqliteRetention(RetentionConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SqliteStore]:
        store = await SqliteStore.open(tmp_path / "countersign.sqlite")
        yield store
        await store.close()


@pytest.mark.postgres
class TestPostgresRetention(RetentionConformance):
    @pytest.fixture
    async def store(self, open_pg: OpenStore) -> PostgresStore:  # noqa: F811
        return await open_pg()


async def _one_archived_one_not(store: Store) -> str:
    """Archive one old proposal (so archived_proposals has a row); returns another one, decided
    and old too, that was not archived."""
    await _decided_old(store)
    retention = retention_of(store)
    batch = await retention.archivable(before=CUTOFF, now=NOW, limit=10)
    assert await retention.remove(batch, archive="a", digest="d", actor="retention", now=NOW)
    return await _decided_old(store)


REFUSED = [
    "DELETE FROM approvals WHERE proposal_id = '{id}'",
    "DELETE FROM proposals WHERE id = '{id}'",
    "DELETE FROM archived_proposals",
]


@pytest.mark.parametrize("statement", REFUSED)
async def test_sqlite_removes_nothing_of_a_proposal_not_archived(
    tmp_path: Path, statement: str
) -> None:
    store = await SqliteStore.open(tmp_path / "countersign.sqlite")
    try:
        proposal_id = await _one_archived_one_not(store)
        with pytest.raises(StoreError, match=r"archived|append-only"):
            async with store.transaction(write=True) as db:
                await db.execute(statement.format(id=proposal_id))
        assert (await store.get_proposal(proposal_id)).approvals
    finally:
        await store.close()


@pytest.mark.postgres
@pytest.mark.parametrize("statement", REFUSED)
async def test_postgres_removes_nothing_of_a_proposal_not_archived(
    open_pg: OpenStore,  # noqa: F811
    raw: asyncpg.Connection[asyncpg.Record],  # noqa: F811
    statement: str,
) -> None:
    store = await open_pg()
    proposal_id = await _one_archived_one_not(store)
    with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="archived"):
        await raw.execute(statement.format(id=proposal_id))
    assert (await store.get_proposal(proposal_id)).approvals


@pytest.mark.postgres
async def test_an_entry_committed_but_not_yet_sealed_keeps_its_proposal(
    open_pg: OpenStore,  # noqa: F811
    raw: asyncpg.Connection[asyncpg.Record],  # noqa: F811
) -> None:
    """On PostgreSQL an audit entry is sealed into the chain after its commit: one that has no
    place in the chain yet still counts as a change after the batch was read."""
    store, other_instance = await open_pg(), await open_pg()
    old = await _decided_old(store)
    retention = retention_of(store)
    batch = await retention.archivable(before=CUTOFF, now=NOW, limit=100)
    assert [p.proposal.id for p in batch.proposals] == [old]

    async with raw.transaction():
        await raw.execute("SELECT * FROM audit_head FOR UPDATE")  # no sealer can seal meanwhile
        noted = asyncio.create_task(
            other_instance.record_event(old, actor="U0SOMEONE", event="note", detail={}, now=NOW)
        )
        for _ in range(300):
            if await raw.fetchval("SELECT count(*) FROM audit_log WHERE seq IS NULL"):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the note was never committed")
        removing = asyncio.create_task(
            retention.remove(batch, archive="a.jsonl", digest="d" * 64, actor="retention", now=NOW)
        )
        await asyncio.sleep(0.5)

    assert await asyncio.wait_for(removing, timeout=30) == ()
    await asyncio.wait_for(noted, timeout=30)
    assert (await store.get_proposal(old)).id == old  # still there
    assert (await store.verify_audit()).ok
