"""Quorum approvals on SQLite and on PostgreSQL (the shared suite), plus several PostgreSQL
instances approving one proposal at once, and the database keeping approvals append-only."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import asyncpg
import pytest

from store.postgres import PostgresStore
from store.proposals import ApprovalCounted, NotApprovable, Transitioned
from store.rows import db_time
from store.sqlite import SqliteStore
from tests.store.conformance import LEASE, new_proposal
from tests.store.quorum_conformance import NOW, QuorumConformance, SneakApproval

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


class TestSqliteQuorum(QuorumConformance):
    @pytest.fixture
    def path(self, tmp_path: Path) -> Path:
        return tmp_path / "countersign.sqlite"

    @pytest.fixture
    async def store(self, path: Path) -> AsyncIterator[SqliteStore]:
        store = await SqliteStore.open(path)
        yield store
        await store.close()

    @pytest.fixture
    def sneak_approval(self, path: Path) -> SneakApproval:
        async def sneak(proposal_id: str, approver: str, binding_hash: str, at: datetime) -> None:
            db = sqlite3.connect(path, isolation_level=None)
            try:
                db.execute(
                    "INSERT INTO approvals VALUES (?, ?, ?, ?)",
                    (proposal_id, approver, binding_hash, db_time(at)),
                )
            finally:
                db.close()

        return sneak


async def _open(schema: str) -> PostgresStore:
    return await PostgresStore.open(PG_URL, server_settings={"search_path": schema})


@pytest.mark.postgres
class TestPostgresQuorum(QuorumConformance):
    @pytest.fixture
    async def store(self, schema: str) -> AsyncIterator[PostgresStore]:
        store = await _open(schema)
        yield store
        await store.close()

    @pytest.fixture
    def sneak_approval(self, schema: str) -> SneakApproval:
        async def sneak(proposal_id: str, approver: str, binding_hash: str, at: datetime) -> None:
            db = await asyncpg.connect(PG_URL, server_settings={"search_path": schema})
            try:
                await db.execute(
                    "INSERT INTO approvals VALUES ($1, $2, $3, $4)",
                    proposal_id,
                    approver,
                    binding_hash,
                    at,
                )
            finally:
                await db.close()

        return sneak


@pytest.mark.postgres
async def test_approvals_from_two_instances_reach_the_quorum_exactly_once(schema: str) -> None:
    first, second = await _open(schema), await _open(schema)
    try:
        proposals = [new_proposal(NOW, quorum=2) for _ in range(8)]
        for new in proposals:
            await first.create_proposal(new)

        results = await asyncio.gather(
            *(
                instance.claim_for_execution(
                    new.id,
                    actor=f"U0{i}{n}",
                    now=NOW,
                    binding_hash=new.binding_hash,
                    lease_until=NOW + LEASE,
                )
                for new in proposals
                for i, instance in enumerate((first, second))
                for n in range(2)
            )
        )

        for new in proposals:
            mine = [r for r in results if r.proposal.id == new.id]
            assert sum(isinstance(r, Transitioned) for r in mine) == 1
            assert sum(isinstance(r, ApprovalCounted) for r in mine) == 1
            stored = await second.get_proposal(new.id)
            assert len(stored.approvals) == 2
            assert stored.decided_by in {a.approver for a in stored.approvals}
            events = [e.event for e in await first.audit_log(new.id)]
            assert events == ["submitted", "approval_recorded", "approved"]
        assert (await second.verify_audit()).ok
    finally:
        await first.close()
        await second.close()


@pytest.mark.postgres
async def test_one_person_approving_from_two_instances_counts_once(schema: str) -> None:
    first, second = await _open(schema), await _open(schema)
    try:
        new = new_proposal(NOW, quorum=2)
        await first.create_proposal(new)

        results = await asyncio.gather(
            *(
                instance.claim_for_execution(
                    new.id,
                    actor="U0ADA",
                    now=NOW,
                    binding_hash=new.binding_hash,
                    lease_until=NOW + LEASE,
                )
                for instance in (first, second, first, second)
            )
        )

        assert sum(isinstance(r, ApprovalCounted) for r in results) == 1
        assert sum(isinstance(r, NotApprovable) for r in results) == 3
        assert len((await first.get_proposal(new.id)).approvals) == 1
    finally:
        await first.close()
        await second.close()


async def test_sqlite_refuses_to_change_or_remove_an_approval(tmp_path: Path) -> None:
    path = tmp_path / "countersign.sqlite"
    store = await SqliteStore.open(path)
    new = new_proposal(NOW, quorum=2)
    await store.create_proposal(new)
    await store.claim_for_execution(
        new.id, actor="U0ADA", now=NOW, binding_hash=new.binding_hash, lease_until=NOW + LEASE
    )
    await store.close()
    db = sqlite3.connect(path, isolation_level=None)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            db.execute("UPDATE approvals SET approver = 'U0MALLORY'")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            db.execute("DELETE FROM approvals")
    finally:
        db.close()
