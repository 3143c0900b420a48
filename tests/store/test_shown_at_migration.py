"""0032: a proposal shown before shown_at existed is shown since its first "posted_to_slack"
audit entry; one never posted stays unshown. The migration's backfill, run on each backend over
proposals the store made (shown_at cleared as the column added by 0032 starts)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite
import asyncpg
import pytest

from store.postgres import PostgresStore
from store.protocol import Store
from store.sqlite import SqliteStore
from tests.store.conformance import new_proposal
from tests.store.conftest import POSTGRES_URL

SQL = Path(__file__).parents[2] / "store" / "sql"


def backfill(dialect: str) -> str:
    """The migration's UPDATE, as it runs after its ALTER TABLE."""
    text = (SQL / dialect / "0032_shown_at.sql").read_text(encoding="utf-8")
    return text[text.index("UPDATE proposals SET shown_at") :]


async def posted_twice_and_never(store: Store) -> tuple[str, str, datetime]:
    """A proposal posted and its message placed again (its first post is when it was shown, not
    its updated_at), and one never posted."""
    now = datetime.now(UTC)
    shown, unshown = new_proposal(now), new_proposal(now)
    await store.create_proposal(shown)
    await store.create_proposal(unshown)
    first = await store.attach_message(shown.id, "C0FINANCE", "1700000000.000100")
    await store.attach_message(shown.id, "C0FINANCE", "1700000000.000200")
    assert first.shown_at is not None
    return shown.id, unshown.id, first.shown_at


async def test_sqlite_backfills_shown_at_from_the_first_audited_post(
    tmp_path: Path,
) -> None:
    path = tmp_path / "countersign.sqlite"
    store = await SqliteStore.open(path)
    try:
        shown, unshown, first = await posted_twice_and_never(store)
    finally:
        await store.close()
    async with aiosqlite.connect(path, isolation_level=None) as db:
        await db.execute("UPDATE proposals SET shown_at = NULL")
        await db.execute(backfill("sqlite"))

    store = await SqliteStore.open(path)
    try:
        assert (await store.get_proposal(shown)).shown_at == first
        assert (await store.get_proposal(unshown)).shown_at is None
    finally:
        await store.close()


@pytest.mark.postgres
async def test_postgres_backfills_shown_at_from_the_first_audited_post(
    schema: str, connect: Callable[[], Awaitable[asyncpg.Connection]]
) -> None:
    store = await PostgresStore.open(POSTGRES_URL, server_settings={"search_path": schema})
    try:
        shown, unshown, first = await posted_twice_and_never(store)
        db = await connect()
        await db.execute("UPDATE proposals SET shown_at = NULL")
        await db.execute(backfill("postgres"))

        assert (await store.get_proposal(shown)).shown_at == first
        assert (await store.get_proposal(unshown)).shown_at is None
    finally:
        await store.close()
