"""Versioned schema migrations: numbered SQL files, found and checked alike for every backend.

A backend keeps its migrations in ``store/sql/<backend>/NNNN_name.sql`` (``0001_init.sql``,
``0002_outbox.sql``...). Numbers start at 1 and have no gaps; a file holds the statements of one
migration and no transaction statements, because the backend's runner applies each file in one
transaction together with its row in ``schema_migrations`` (version, name, applied_at). Applying
the migrations again is a no-op: only versions missing from that table run.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from importlib import resources

__all__ = ["Migration", "MigrationError", "load_migrations", "pending_migrations"]

#: the file beside the migrations that shows the schema they build; not a migration
SCHEMA_FILE = "schema.sql"

_FILE_NAME = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")


class MigrationError(Exception):
    """The migration files are not numbered 0001, 0002... without gaps or duplicates."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int  #: the file's number; applied in increasing order
    name: str  #: the rest of the file name: lowercase letters, digits and underscores only
    sql: str  #: the statements, without BEGIN/COMMIT


def load_migrations(backend: str) -> tuple[Migration, ...]:
    """The migrations of ``backend`` (a folder of ``store/sql``), in version order."""
    folder = resources.files("store").joinpath("sql", backend)
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _FILE_NAME.match(entry.name)
        if entry.name == SCHEMA_FILE:  # the current schema, for reading (store/schema.py)
            continue
        if match is None:
            if entry.name.endswith(".sql"):
                raise MigrationError(
                    f"migration file {backend}/{entry.name!r}: expected a name like "
                    "'0002_add_outbox.sql' (four digits, underscore, lowercase name)"
                )
            continue
        found.append(
            Migration(int(match["version"]), match["name"], entry.read_text(encoding="utf-8"))
        )
    found.sort(key=lambda migration: migration.version)
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise MigrationError(
                f"migrations of {backend}: expected version {expected:04d}, "
                f"found {migration.version:04d}_{migration.name}.sql"
            )
    return tuple(found)


def pending_migrations(
    migrations: Sequence[Migration], applied: Collection[int]
) -> list[Migration]:
    """The migrations not yet applied, in order. Refuses a database newer than this code."""
    known = {migration.version for migration in migrations}
    unknown = sorted(set(applied) - known)
    if unknown:
        newest = max(known, default=0)
        raise MigrationError(
            f"the database has migration(s) {', '.join(f'{v:04d}' for v in unknown)} that this "
            f"version of Countersign does not know (it knows up to {newest:04d}); upgrade "
            "Countersign before using this database"
        )
    return [migration for migration in migrations if migration.version not in applied]
