"""The decision verbs racing each other from two instances on one database, on both backends.

The rounds of tests/store/decision_races.py (many proposals each, decided at once from two
stores, what must hold checked in the tables), played by two stores opened on one SQLite file
(two processes' writers share it the same way: SQLite reads an approval's proposal without a
row lock and relies on the write transaction, ``BEGIN IMMEDIATE``, that holds the file's one
write lock across instances) and by two pools on one PostgreSQL schema (row locks). The
interleavings luck may not produce are forced in tests/store/test_postgres_decision_races.py.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from store.postgres import PostgresStore
from store.protocol import Store
from store.sqlite import SqliteStore
from tests.store.conftest import POSTGRES_URL, new_schema
from tests.store.decision_races import (
    Query,
    round_of_approvers,
    round_of_clicks_applied_twice,
    round_of_digests,
    round_of_every_decision,
    round_of_executions,
)


@dataclass(frozen=True)
class Raced:
    """Two instances on one database, a reader past them, and how many proposals a round takes
    (fewer on SQLite, whose one writer at a time makes a round slower)."""

    first: Store
    second: Store
    query: Query
    scale: float


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
async def raced(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Raced]:
    if request.param == "sqlite":
        path = tmp_path / "countersign.sqlite"
        first, second = await SqliteStore.open(path), await SqliteStore.open(path)
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        db.row_factory = sqlite3.Row

        async def read_file(sql: str) -> list[dict[str, Any]]:
            await asyncio.sleep(0)
            return [dict(row) for row in db.execute(sql)]

        try:
            yield Raced(first, second, read_file, 0.75)
        finally:
            await first.close()
            await second.close()
            db.close()
        return
    async with new_schema() as schema:
        settings = {"search_path": schema}
        pg_first = await PostgresStore.open(POSTGRES_URL, server_settings=settings)
        pg_second = await PostgresStore.open(POSTGRES_URL, server_settings=settings)
        raw = await asyncpg.connect(POSTGRES_URL, server_settings=settings)

        async def read_schema(sql: str) -> list[dict[str, Any]]:
            return [dict(row) for row in await raw.fetch(sql)]

        try:
            yield Raced(pg_first, pg_second, read_schema, 1.0)
        finally:
            await pg_first.close()
            await pg_second.close()
            await raw.close()


def _count(raced: Raced, count: int) -> int:
    return round(count * raced.scale)


async def test_two_approvers_each_clicking_twice_from_two_instances_claim_each_proposal_once(
    raced: Raced,
) -> None:
    await round_of_approvers(raced.first, raced.second, raced.query, count=_count(raced, 40))


async def test_approvals_rejections_withdrawals_and_expiry_at_once_end_in_one_outcome(
    raced: Raced,
) -> None:
    await round_of_every_decision(raced.first, raced.second, raced.query, count=_count(raced, 48))


async def test_approve_all_racing_its_items_decisions_approves_only_what_is_pending(
    raced: Raced,
) -> None:
    await round_of_digests(raced.first, raced.second, raced.query, digests=_count(raced, 8))


async def test_a_recorded_click_applied_by_two_instances_is_counted_once(raced: Raced) -> None:
    await round_of_clicks_applied_twice(
        raced.first, raced.second, raced.query, count=_count(raced, 30)
    )


async def test_outcomes_sweeps_retries_and_reconciliations_at_once_give_each_attempt_one_outcome(
    raced: Raced,
) -> None:
    await round_of_executions(raced.first, raced.second, raced.query, count=_count(raced, 40))
