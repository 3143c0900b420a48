"""Where a database stands against this code's migrations, read without changing anything.

Opening a store applies the migrations it lacks (store/sqlite.py, store/pg_migrate.py) and refuses
a database that has one this code does not know: migrations are forward-only, so an older
Countersign meeting a newer schema stops rather than guess. :func:`schema_state` tells which case
a database is in before anything opens it (``countersign migrate --check``).
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from contracts.redaction import scrub, shown_store_url
from store.base import StoreError, StoreUnavailable
from store.migrate import load_migrations
from store.open import open_store, sqlite_path
from store.pg_errors import DRIVER_ERRORS, translate

__all__ = ["SchemaState", "migrate", "schema_state"]


@dataclass(frozen=True, slots=True)
class SchemaState:
    """The migrations a database has applied, against those this code knows."""

    applied: frozenset[int]
    known: tuple[int, ...]  #: 1..N, in order

    @property
    def pending(self) -> tuple[int, ...]:
        """Known and not applied yet: ``countersign migrate`` (or any start) applies them."""
        return tuple(version for version in self.known if version not in self.applied)

    @property
    def unknown(self) -> tuple[int, ...]:
        """Applied by a newer Countersign: this code refuses to open the database."""
        return tuple(sorted(self.applied - set(self.known)))

    @property
    def current(self) -> bool:
        return not self.pending and not self.unknown


def _known(backend: str) -> tuple[int, ...]:
    return tuple(migration.version for migration in load_migrations(backend))


async def schema_state(url: str) -> SchemaState:
    """The state of the database at ``url`` (a missing SQLite file has nothing applied)."""
    path = sqlite_path(url)
    if path is None:
        return SchemaState(await _postgres_applied(url), _known("postgres"))
    return SchemaState(await asyncio.to_thread(_sqlite_applied, Path(path)), _known("sqlite"))


async def migrate(url: str) -> tuple[int, ...]:
    """Apply the pending migrations (what opening the store does); returns their versions."""
    before = await schema_state(url)
    store = await open_store(url)
    await store.close()
    return before.pending


def _sqlite_applied(path: Path) -> frozenset[int]:
    if not path.exists():
        return frozenset()
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            has = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
            ).fetchone()
            if has is None:
                return frozenset()
            return frozenset(row[0] for row in db.execute("SELECT version FROM schema_migrations"))
        finally:
            db.close()
    except sqlite3.Error as error:
        raise StoreUnavailable(f"SQLite database {str(path)!r}: {error}") from error


async def _postgres_applied(url: str) -> frozenset[int]:
    try:
        db = await asyncpg.connect(url, timeout=10)
    except ValueError as error:
        raise StoreError(f"store URL {shown_store_url(url)}: {scrub(str(error), url)}") from error
    except DRIVER_ERRORS as error:
        raise StoreUnavailable(
            f"cannot open PostgreSQL database {shown_store_url(url)}: {translate(error)}"
        ) from error
    try:
        if not await db.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL"):
            return frozenset()
        return frozenset(row["version"] for row in await db.fetch(_SELECT_VERSIONS))
    except DRIVER_ERRORS as error:
        raise translate(error) from error
    finally:
        await db.close()


_SELECT_VERSIONS = "SELECT version FROM schema_migrations"
