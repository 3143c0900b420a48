"""The decision verbs racing each other from two instances on one SQLite file.

The rounds of tests/store/decision_races.py, played by two stores opened on the same file (two
processes' writers would share it the same way): SQLite reads an approval's proposal without a
row lock (store/proposals/sql/sqlite/approvals.sql) and sweeps with its own SQL, relying on the
write transaction (``BEGIN IMMEDIATE``) that holds the file's one write lock across instances.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from store.sqlite import SqliteStore
from tests.store.decision_races import (
    Query,
    round_of_approvers,
    round_of_clicks_applied_twice,
    round_of_digests,
    round_of_every_decision,
    round_of_executions,
)


@pytest.fixture
async def instances(tmp_path: Path) -> AsyncIterator[tuple[SqliteStore, SqliteStore]]:
    """Two stores on one file: two instances, each with its own writer."""
    path = tmp_path / "countersign.sqlite"
    first = await SqliteStore.open(path)
    second = await SqliteStore.open(path)
    try:
        yield first, second
    finally:
        await first.close()
        await second.close()


@pytest.fixture
def query(tmp_path: Path) -> Iterator[Query]:
    """Reads the file past the stores (read-only)."""
    db = sqlite3.connect(f"file:{tmp_path / 'countersign.sqlite'}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row

    async def query_(sql: str) -> list[dict[str, Any]]:
        await asyncio.sleep(0)
        return [dict(row) for row in db.execute(sql)]

    yield query_
    db.close()


async def test_two_approvers_each_clicking_twice_from_two_instances_claim_each_proposal_once(
    instances: tuple[SqliteStore, SqliteStore], query: Query
) -> None:
    await round_of_approvers(*instances, query, count=30)


async def test_approvals_rejections_withdrawals_and_expiry_at_once_end_in_one_outcome(
    instances: tuple[SqliteStore, SqliteStore], query: Query
) -> None:
    await round_of_every_decision(*instances, query, count=40)


async def test_approve_all_racing_its_items_decisions_approves_only_what_is_pending(
    instances: tuple[SqliteStore, SqliteStore], query: Query
) -> None:
    await round_of_digests(*instances, query, digests=6)


async def test_a_recorded_click_applied_by_two_instances_is_counted_once(
    instances: tuple[SqliteStore, SqliteStore], query: Query
) -> None:
    await round_of_clicks_applied_twice(*instances, query, count=20)


async def test_outcomes_sweeps_retries_and_reconciliations_at_once_give_each_attempt_one_outcome(
    instances: tuple[SqliteStore, SqliteStore], query: Query
) -> None:
    await round_of_executions(*instances, query, count=30)
