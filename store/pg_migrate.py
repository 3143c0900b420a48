"""The PostgreSQL migration runner: store/migrate.py's numbered files, applied once per schema.

Each migration runs in its own transaction together with its row in ``schema_migrations``, after
taking a transaction-scoped advisory lock for the schema; an instance that waited for the lock
reads the applied versions afterwards and finds the other instance's work done.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import asyncpg

from store.migrate import Migration, pending_migrations

if TYPE_CHECKING:  # the stubs make these generic; at run time they are plain classes
    from typing import TypeAlias

    from asyncpg.pool import PoolConnectionProxy

    Connection: TypeAlias = asyncpg.Connection[asyncpg.Record] | PoolConnectionProxy[asyncpg.Record]

__all__ = ["apply_migrations"]

#: Serializes migrating per schema: instances starting at once apply each migration once.
LOCK_MIGRATIONS = """
SELECT pg_advisory_xact_lock(
    hashtext('countersign schema migrations'), hashtext(coalesce(current_schema(), '')))
"""

#: Bootstraps the table that records applied migrations (every other table is a migration).
CREATE_SCHEMA_MIGRATIONS = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""

#: Whether the bootstrap already ran (CREATE ... IF NOT EXISTS would send a notice each time).
HAS_SCHEMA_MIGRATIONS = "SELECT to_regclass('schema_migrations') IS NOT NULL"

#: The versions already applied.
SELECT_APPLIED_VERSIONS = "SELECT version FROM schema_migrations"

#: Record one applied migration, in the migration's own transaction.
INSERT_MIGRATION = "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)"


async def apply_migrations(db: Connection, migrations: Sequence[Migration]) -> list[int]:
    """Apply the missing ``migrations``, each in one transaction with its record. Returns versions.

    Every transaction first takes an advisory lock (per schema) and then reads what is applied:
    an instance that waited for the lock finds the other's migration recorded and skips it.
    """
    done: list[int] = []
    while True:
        async with db.transaction():
            await db.execute(LOCK_MIGRATIONS)
            if not await db.fetchval(HAS_SCHEMA_MIGRATIONS):
                await db.execute(CREATE_SCHEMA_MIGRATIONS)
            applied = {row["version"] for row in await db.fetch(SELECT_APPLIED_VERSIONS)}
            pending = pending_migrations(migrations, applied)
            if not pending:
                return done
            migration = pending[0]
            await db.execute(migration.sql)
            await db.execute(INSERT_MIGRATION, migration.version, migration.name)
        done.append(migration.version)
