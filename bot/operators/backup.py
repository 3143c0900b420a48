"""``countersign backup PATH`` and ``countersign restore PATH [--force]``.

A SQLite store is copied with SQLite's online backup API while Countersign serves, and the copy is
checked (SQLite's integrity check, the audit chain against its head) before it gets its name.
PostgreSQL is backed up with its own tools; for it these commands say how, and do nothing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TextIO

from bot.audit.commands import audit_verify
from bot.settings import Settings
from contracts.redaction import shown_store_url
from store.backup import BackupRefused, FileReport, backup_sqlite, restore_sqlite
from store.base import StoreError
from store.open import sqlite_path

__all__ = ["PG_BACKUP_ADVICE", "PG_RESTORE_ADVICE", "backup_command", "restore_command"]

PG_BACKUP_ADVICE = """\
The store is PostgreSQL ({url}): countersign backup copies SQLite files only, so nothing was
written. Back up the whole database in one consistent snapshot with pg_dump, e.g.

  pg_dump --format=custom --file={path} '<store.url>'

pg_dump reads every table in one transaction, so proposals, their outbox rows, the audit log and
its head agree with each other; copying tables one by one, or files under a running server, does
not. Check a restored copy with `countersign audit verify`. See docs/operators.md."""

PG_RESTORE_ADVICE = """\
The store is PostgreSQL ({url}): countersign restore writes SQLite files only, so nothing was
changed. Stop every Countersign instance, then restore the dump into an empty database with

  pg_restore --single-transaction --exit-on-error --dbname='<store.url>' {path}

and run `countersign audit verify` before starting them again. See docs/operators.md."""


def _describe(report: FileReport) -> str:
    return (
        f"{report.proposals} proposals, schema version {report.schema_version:04d}, "
        f"SQLite integrity check: {report.integrity}"
    )


def _store_file(settings: Settings, err: TextIO, *, advice: str, path: Path) -> Path | None:
    """The SQLite store's file; None, with ``advice`` (PostgreSQL's way, about ``path``) told on
    ``err``, when the store is not a SQLite file."""
    try:
        found = sqlite_path(settings.store.url)
    except StoreError as error:
        print(error, file=err)
        found = None
    if found is None:
        print(advice.format(url=shown_store_url(settings.store.url), path=path), file=err)
        return None
    return Path(found)


async def backup_command(settings: Settings, target: Path, out: TextIO, err: TextIO) -> int:
    """0: backed up and the copy verifies; 1: copied, but the copy's chain does not verify;
    2: nothing was written (PostgreSQL, or refused)."""
    source = _store_file(settings, err, advice=PG_BACKUP_ADVICE, path=target)
    if source is None:
        return 2
    try:
        report = await asyncio.to_thread(backup_sqlite, source, target)
    except BackupRefused as error:
        print(f"backup refused: {error}", file=err)
        return 2
    print(f"backed up {source} to {target}: {_describe(report)}", file=out)
    if not report.audit.ok:
        print(f"audit log of the backup BROKEN: {report.audit.problem}", file=out)
        return 1
    print(f"audit log of the backup OK: {report.audit.checked} entries verified", file=out)
    return 0


async def restore_command(
    settings: Settings, backup: Path, *, force: bool, out: TextIO, err: TextIO
) -> int:
    """0: restored and ``audit verify`` passes on the result; 1: restored, and it does not;
    2: nothing was changed (PostgreSQL, the store exists without --force, it is in use, or the
    backup is not a readable Countersign database)."""
    target = _store_file(settings, err, advice=PG_RESTORE_ADVICE, path=backup)
    if target is None:
        return 2
    try:
        report = await asyncio.to_thread(restore_sqlite, backup, target, force=force)
    except BackupRefused as error:
        print(f"restore refused: {error}", file=err)
        return 2
    print(f"restored {backup} into {target}: {_describe(report)}", file=out)
    print("audit verify on the restored store:", file=out)
    return await audit_verify(settings, None, out, err)
