"""``countersign retention run [--older-than AGE]``: archive decided proposals, then remove them.

Each run writes one JSON Lines file in the archive folder, one proposal a line (the row, its
approvals and review, and copies of its audit entries), in batches: a batch is written and synced
before the store removes it, in one transaction with a ``proposals_archived`` audit entry naming
the file and the SHA-256 of the batch's lines (store/retention.py). The audit log keeps every
entry, so ``audit verify`` passes before and after; the command runs it at the end.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from bot.settings import Settings
from bot.settings.retention import parse_age
from contracts.redaction import shown_store_url
from store.base import StoreError
from store.open import open_store
from store.retention import ArchiveBatch, retention_of

__all__ = ["BATCH", "archive_name", "retention_command", "write_batch"]

#: Proposals archived and removed per transaction.
BATCH = 200

#: The actor of retention's audit entries.
ACTOR = "countersign retention"


def archive_name(now: datetime) -> str:
    return f"countersign-archive-{now.astimezone(UTC):%Y%m%dT%H%M%S%fZ}.jsonl"


def write_batch(out: TextIO, batch: ArchiveBatch) -> str:
    """Append the batch's proposals to ``out``, one JSON line each, and make them durable;
    returns the SHA-256 of the lines written."""
    text = "".join(item.model_dump_json() + "\n" for item in batch.proposals)
    out.write(text)
    out.flush()
    os.fsync(out.fileno())
    return hashlib.sha256(text.encode()).hexdigest()


class _Archive:
    """This run's archive file, and the folders made for it (deepest first)."""

    def __init__(self, path: Path, file: TextIO, made: list[Path]) -> None:
        self.path = path
        self.file = file
        self._made = made

    @classmethod
    def create(cls, path: Path) -> _Archive:
        """The new file at ``path``, its folder made if needed; OSError when it cannot be."""
        made = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return cls(path, path.open("x", encoding="utf-8"), made)
        except OSError:
            cls._remove(made)
            raise

    def discard(self) -> None:
        """Remove the (closed) file, which holds nothing removed, and the folders made for it."""
        self.path.unlink(missing_ok=True)
        self._remove(self._made)

    @staticmethod
    def _remove(folders: list[Path]) -> None:
        for folder in folders:
            try:
                folder.rmdir()
            except OSError:  # not empty (someone else's) or gone: left as it is
                return


async def retention_command(
    settings: Settings,
    *,
    older_than: str | None,
    archive_dir: Path | None,
    out: TextIO,
    err: TextIO,
    now: datetime | None = None,
) -> int:
    """0: done (and the audit log verifies); 1: the audit log does not verify afterwards;
    2: nothing was done (no age configured, a bad age, the store or folder unusable)."""
    try:
        age = parse_age(older_than) if older_than is not None else settings.retention.age
    except ValueError as error:
        print(f"--older-than: {error}", file=err)
        return 2
    if age is None:
        print(
            'retention: no age given: set [retention] archive_after (e.g. "180d") or pass '
            "--older-than",
            file=err,
        )
        return 2
    now = now or datetime.now(UTC)
    before = now - age
    folder = archive_dir or settings.retention.directory(settings.path)
    path = folder / archive_name(now)
    try:
        store = await open_store(settings.store.url, pool_size=settings.store.pool_size)
    except StoreError as error:
        print(f"cannot open the store {shown_store_url(settings.store.url)}: {error}", file=err)
        return 2
    removed = 0
    archive: _Archive | None = None  # made with the first batch: nothing to archive, no folder
    try:
        retention = retention_of(store)
        while True:
            batch = await retention.archivable(before=before, now=now, limit=BATCH)
            if not batch.proposals:
                break
            if archive is None:
                try:
                    archive = _Archive.create(path)
                except OSError as error:
                    print(f"retention: cannot write the archive {path}: {error}", file=err)
                    return 2
            digest = await asyncio.to_thread(write_batch, archive.file, batch)
            gone = await retention.remove(
                batch, archive=path.name, digest=digest, actor=ACTOR, now=now
            )
            removed += len(gone)
            if not gone:  # each changed since it was read: the next run takes them
                break
        report = await store.verify_audit()
    finally:
        await store.close()
        if archive is not None:  # kept if the run stops: what it holds may be removed already
            archive.file.close()
    if archive is not None and not removed:
        archive.discard()
    if removed:
        print(
            f"archived {removed} decided proposals last changed before "
            f"{before.isoformat(timespec='seconds')} to {path}, and removed them from the store",
            file=out,
        )
    else:
        print(
            f"nothing to archive: no decided proposal was last changed before "
            f"{before.isoformat(timespec='seconds')}",
            file=out,
        )
    if not report.ok:
        print(f"audit log BROKEN at entry {report.first_bad_seq}: {report.problem}", file=out)
        return 1
    print(f"audit log OK: {report.checked} entries verified", file=out)
    return 0
