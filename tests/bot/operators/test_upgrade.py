"""``countersign migrate [--check]``, and the rolling upgrade rule: an instance whose code knows
fewer migrations than its database has refuses to start, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import aiosqlite
import asyncpg
import pytest

from bot.operators.upgrade import migrate_command
from store import pg_migrate, sqlite
from store.migrate import MigrationError, load_migrations
from store.sqlite import SqliteStore
from tests.bot.operators.conftest import MakeSettings
from tests.store.conftest import schema  # noqa: F401 (fixture)
from tests.store.test_postgres import URL


async def test_check_says_pending_migrate_applies_them_then_check_says_current(
    tmp_path: Path, make_settings: MakeSettings
) -> None:
    settings = make_settings()
    latest = len(load_migrations("sqlite"))
    out = io.StringIO()

    assert await migrate_command(settings, check=True, out=out, err=io.StringIO()) == 1
    assert not (tmp_path / "countersign.sqlite").exists()  # --check changes nothing
    assert await migrate_command(settings, check=False, out=out, err=io.StringIO()) == 0
    assert await migrate_command(settings, check=True, out=out, err=io.StringIO()) == 0

    lines = out.getvalue().splitlines()
    every = ", ".join(f"{version:04d}" for version in range(1, latest + 1))
    assert lines[0].endswith(f"migration(s) pending: {every}")
    assert lines[1].endswith(f"applied migration(s) {every}")
    assert lines[2].endswith(f"schema current (migration {latest:04d})")


async def test_a_database_one_migration_behind_is_pending_until_migrated(
    tmp_path: Path, make_settings: MakeSettings
) -> None:
    migrations = load_migrations("sqlite")
    async with aiosqlite.connect(tmp_path / "countersign.sqlite", isolation_level=None) as db:
        await sqlite.apply_migrations(db, migrations[:-1])
    out = io.StringIO()

    assert await migrate_command(make_settings(), check=True, out=out, err=io.StringIO()) == 1
    assert out.getvalue().strip().endswith(f"migration(s) pending: {migrations[-1].version:04d}")


async def test_older_code_meeting_the_newest_schema_refuses_it_sqlite(tmp_path: Path) -> None:
    """The previous version (its code knows one migration fewer) meets a database migrated to
    the latest by the new version during a rolling upgrade: it applies nothing and stops."""
    path = tmp_path / "countersign.sqlite"
    await (await SqliteStore.open(path)).close()  # the new version migrated it
    migrations = load_migrations("sqlite")
    async with aiosqlite.connect(path, isolation_level=None) as db:
        with pytest.raises(MigrationError) as refused:
            await sqlite.apply_migrations(db, migrations[:-1])
    latest = migrations[-1].version
    assert (
        f"has migration(s) {latest:04d} that this version of Countersign does not know "
        f"(it knows up to {latest - 1:04d})"
    ) in str(refused.value)
    assert "upgrade Countersign before using this database" in str(refused.value)
    with sqlite3.connect(path) as db:
        [(applied,)] = db.execute("SELECT max(version) FROM schema_migrations").fetchall()
    assert applied == latest


@pytest.mark.postgres
async def test_older_code_meeting_the_newest_schema_refuses_it_postgres(schema: str) -> None:  # noqa: F811
    migrations = load_migrations("postgres")
    db = await asyncpg.connect(URL, server_settings={"search_path": schema})
    try:
        await pg_migrate.apply_migrations(db, migrations)
        with pytest.raises(MigrationError, match="does not know"):
            await pg_migrate.apply_migrations(db, migrations[:-1])
    finally:
        await db.close()


async def test_check_on_a_database_newer_than_the_code_exits_2_and_says_why(
    tmp_path: Path, make_settings: MakeSettings
) -> None:
    path = tmp_path / "countersign.sqlite"
    await (await SqliteStore.open(path)).close()
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', 'x')"
        )
    err = io.StringIO()

    assert await migrate_command(make_settings(), check=True, out=io.StringIO(), err=err) == 2

    assert "9999" in err.getvalue() and "forward-only" in err.getvalue()
