"""Backing up and restoring a SQLite store: SQLite's online backup API, and a check of the copy.

A backup is taken while Countersign serves: the copy reads one consistent snapshot (WAL readers
never block the writer, nor it them) and is written to ``PATH.partial``, synced, checked and only
then renamed to ``PATH``, so a file named ``PATH`` is always a whole backup. The copy is a plain
rollback-journal database in one file, ready to archive.

A restore copies a backup into the store's file with the same API, holding an exclusive lock on
it the whole time: a database some process has open cannot be locked, so it is refused rather
than changed under a running Countersign. PostgreSQL is backed up with its own tools (``pg_dump``;
docs/operators.md), not here.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from store.audit import AuditReport, audit_entry_from_row, check_head, verify_chain
from store.base import StoreError

__all__ = [
    "BackupRefused",
    "FileReport",
    "backup_sqlite",
    "check_sqlite_file",
    "restore_sqlite",
]

#: Pages copied per step of the backup API; between steps the writer may commit.
_PAGES_PER_STEP = 1024


class BackupRefused(StoreError):
    """The backup or restore was refused; nothing was changed."""


@dataclass(frozen=True, slots=True)
class FileReport:
    """What a check of a SQLite file found."""

    integrity: str  #: "ok", or SQLite's first complaint
    schema_version: int  #: the last migration applied
    proposals: int
    audit: AuditReport


def _connect(path: Path, *, timeout: float = 5.0) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, timeout=timeout)
    db.row_factory = sqlite3.Row
    return db


def check_sqlite_file(path: Path) -> FileReport:
    """Check a Countersign SQLite file without changing it: SQLite's integrity check, its schema
    version, and the audit chain against its head (as ``audit verify`` does)."""
    if not path.is_file():
        raise BackupRefused(f"{path}: no such file")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as error:
        raise BackupRefused(f"{path}: cannot open it as a SQLite database: {error}") from error
    db.row_factory = sqlite3.Row
    try:
        db.execute("BEGIN")  # one snapshot for every read below
        [(integrity,)] = db.execute("PRAGMA integrity_check(1)").fetchall()
        try:
            [(version,)] = db.execute("SELECT max(version) FROM schema_migrations").fetchall()
            [(proposals,)] = db.execute("SELECT count(*) FROM proposals").fetchall()
            entries = [
                audit_entry_from_row(row)
                for row in db.execute("SELECT * FROM audit_log ORDER BY seq")
            ]
            head_row = db.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
        except sqlite3.DatabaseError as error:
            raise BackupRefused(
                f"{path}: not a Countersign database (expected its tables: {error})"
            ) from error
        db.execute("COMMIT")
    except sqlite3.DatabaseError as error:
        raise BackupRefused(f"{path}: not a readable SQLite database: {error}") from error
    finally:
        db.close()
    head = None if head_row is None else (int(head_row["seq"]), str(head_row["hash"]))
    report = check_head(verify_chain(entries), entries, head)
    return FileReport(str(integrity), int(version or 0), int(proposals), report)


def backup_sqlite(source: Path, target: Path, *, overwrite: bool = False) -> FileReport:
    """Copy the store at ``source`` to ``target`` (consistent while it serves), then check the
    copy. ``target`` is written only whole: through ``target.partial`` and a rename."""
    if not source.is_file():
        raise BackupRefused(f"the store {source} does not exist")
    if target.exists() and not overwrite:
        raise BackupRefused(f"{target} exists; choose another path (or remove it first)")
    if not target.parent.is_dir():
        raise BackupRefused(
            f"the folder {target.parent} does not exist; create it, or choose another path"
        )
    if target.resolve() == source.resolve():
        raise BackupRefused(f"{target} is the store itself; choose another path")
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        src = _connect(source)
        try:
            dst = _connect(partial)
            try:
                src.backup(dst, pages=_PAGES_PER_STEP)
                dst.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
            finally:
                dst.close()
        finally:
            src.close()
        _sync(partial)
        report = check_sqlite_file(partial)
        os.replace(partial, target)
        _sync(target.parent)
    except sqlite3.Error as error:
        partial.unlink(missing_ok=True)
        raise BackupRefused(f"backing up {source} to {target} failed: {error}") from error
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return report


def restore_sqlite(backup: Path, target: Path, *, force: bool = False) -> FileReport:
    """Copy ``backup`` into the store at ``target``: refused when ``target`` exists without
    ``force``, and always when some process has it open. Returns the check of the backup."""
    report = check_sqlite_file(backup)
    if report.integrity != "ok":
        raise BackupRefused(f"{backup}: SQLite's integrity check fails: {report.integrity}")
    if target.resolve() == backup.resolve():
        raise BackupRefused(f"{backup} is the store itself")
    if target.exists() and not force:
        raise BackupRefused(
            f"the store {target} exists; restoring replaces everything in it: stop every "
            "Countersign using it, then run restore again with --force"
        )
    dst = _connect(target, timeout=0)
    try:
        try:
            # Held until closed: no other connection can open the file meanwhile. A database
            # that some process has open cannot be locked at all.
            dst.execute("PRAGMA locking_mode = EXCLUSIVE")
            dst.execute("BEGIN EXCLUSIVE")
            dst.execute("COMMIT")
        except sqlite3.OperationalError as error:
            raise BackupRefused(
                f"the store {target} is in use ({error}): stop every Countersign using it "
                "(and anything else that has it open), then restore"
            ) from error
        src = _connect(backup)
        try:
            src.backup(dst)
        finally:
            src.close()
        dst.execute("PRAGMA journal_mode = WAL")
    except sqlite3.Error as error:
        raise BackupRefused(f"restoring {backup} into {target} failed: {error}") from error
    finally:
        dst.close()
    return report


def _sync(path: Path) -> None:
    """Flush ``path`` (a file or a directory) to disk."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) if path.is_dir() else os.O_RDONLY
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
