"""``countersign migrate [--check]``: where the database stands against this version's
migrations, and applying the pending ones.

Every ``serve`` applies pending migrations when it starts; this command lets an upgrade do it
(or only look) first. Migrations are forward-only (docs/operators.md#upgrading).
"""

from __future__ import annotations

from typing import TextIO

from bot.settings import Settings
from contracts.redaction import shown_store_url
from store.base import StoreError
from store.upgrade import SchemaState, migrate, schema_state

__all__ = ["migrate_command", "schema_difference"]


def _versions(versions: tuple[int, ...]) -> str:
    return ", ".join(f"{version:04d}" for version in versions)


def _newer(state: SchemaState) -> str:
    return (
        f"the database has migration(s) {_versions(state.unknown)} that this version of "
        f"Countersign does not know (it knows up to {state.known[-1]:04d}): a newer Countersign "
        "migrated it. Migrations are forward-only: run the newer version (or restore a backup "
        "taken before the upgrade)"
    )


def schema_difference(state: SchemaState) -> str:
    """How a store that is not current differs from this release, and what to do about it:
    newer (as ``migrate`` refuses it), or behind by the migrations ``migrate`` applies."""
    if state.unknown:
        return _newer(state)
    needs = f"this release needs {state.known[-1]:04d}"
    if not state.applied:
        return f"the store has no migrations applied yet; {needs}: run `countersign migrate`"
    return (
        f"the store is at {max(state.applied):04d}; {needs} (migration(s) pending: "
        f"{_versions(state.pending)}): run `countersign migrate`"
    )


async def migrate_command(settings: Settings, *, check: bool, out: TextIO, err: TextIO) -> int:
    """``--check``: 0 when the schema is current, 1 when migrations are pending; without it,
    apply them (0). 2: the database is newer than this code, or cannot be read."""
    where = shown_store_url(settings.store.url)
    try:
        state = await schema_state(settings.store.url)
    except StoreError as error:
        print(f"cannot read the schema of {where}: {error}", file=err)
        return 2
    if state.unknown:
        print(f"{where}: {_newer(state)}", file=err)
        return 2
    if state.current:
        print(f"{where}: schema current (migration {state.known[-1]:04d})", file=out)
        return 0
    if check:
        print(f"{where}: migration(s) pending: {_versions(state.pending)}", file=out)
        return 1
    try:
        applied = await migrate(settings.store.url)
    except StoreError as error:
        print(f"migrating {where} failed: {error}", file=err)
        return 2
    print(f"{where}: applied migration(s) {_versions(applied)}", file=out)
    return 0
