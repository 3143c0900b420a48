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
        folder.mkdir(parents=True, exist_ok=True)
        archive = path.open("x", encoding="utf-8")
    except OSError as error:
        print(f"retention: cannot write the archive {path}: {error}", file=err)
        return 2
    try:
        store = await open_store(settings.store.url, pool_size=settings.store.pool_size)
    except StoreError as error:
        archive.close()
        path.unlink(missing_ok=True)
        print(f"cannot open the store {shown_store_url(settings.store.url)}: {error}", file=err)
        return 2
    removed = 0
    try:
        retention = retention_of(store)
        with archive:
            while True:
                batch = await retention.archivable(before=before, now=now, limit=BATCH)
                if not batch.proposals:
                    break
                digest = await asyncio.to_thread(write_batch, archive, batch)
                gone = await retention.remove(
                    batch, archive=path.name, digest=digest, actor=ACTOR, now=now
                )
                removed += len(gone)
                if not gone:  # each changed since it was read: the next run takes them
                    break
        report = await store.verify_audit()
    finally:
        await store.close()
    if removed:
        print(
            f"archived {removed} decided proposals last changed before "
            f"{before.isoformat(timespec='seconds')} to {path}, and removed them from the store",
            file=out,
        )
    else:
        path.unlink(missing_ok=True)
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
