"""The audit log, written once for every backend: appending an entry to the hash chain inside the
caller's transaction, and the verbs that add, read and check entries.

Every change appends its entry in its own transaction (``tx.append_audit``). Each entry's hash
covers its content and the previous entry's hash (store/audit.py), and the ``audit_head`` row,
moved by the database with every append, names the last entry. What differs per backend is how
an append learns the head: PostgreSQL locks the head row (``audit_head_for_append``, ``FOR
UPDATE``), so appends from any number of connections form one chain; SQLite's single writer reads
it once per batch of writes and then follows it in memory (store/sqlite_tx.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime

from pydantic import JsonValue

from store.audit import entry_hash, verify_chain
from store.backend import Backend
from store.base import AuditEntry, AuditHead, AuditReport, StoreError
from store.connector import Tx
from store.rows import audit_entry_from_row, aware, dump_json
from store.shield import finish_even_if_cancelled
from store.verdicts import check_head

__all__ = ["AuditVerbs", "append_entry"]

#: The head row is gone: the table was changed by hand (it is created with the schema).
_NO_HEAD = "the audit head row is missing; the database was altered by hand"


async def append_entry(
    tx: Tx,
    at: datetime,
    proposal_id: str | None,
    actor: str,
    event: str,
    detail: Mapping[str, JsonValue],
    *,
    head: tuple[int, str] | None = None,
) -> AuditEntry:
    """Append one entry after the head of the chain, inside ``tx``'s transaction.

    ``head`` is the head (seq, hash) when the caller knows it for certain; None reads it with
    ``audit_head_for_append`` (which, on PostgreSQL, locks it until the transaction ends).
    """
    at, detail_text = aware(at, field="now"), dump_json(detail)
    if head is None:
        row = await tx.one("audit_head_for_append")
        if row is None:
            raise StoreError(_NO_HEAD)
        head = (int(row["seq"]), str(row["hash"]))
    seq, prev_hash = head[0] + 1, head[1]
    digest = entry_hash(
        prev_hash,
        seq=seq,
        at=at,
        proposal_id=proposal_id,
        actor=actor,
        event=event,
        detail=json.loads(detail_text),  # hash exactly what is stored and read back
    )
    row = await tx.one(
        "insert_audit_entry",
        seq=seq,
        at=at,
        proposal_id=proposal_id,
        actor=actor,
        event=event,
        detail=detail_text,
        prev_hash=prev_hash,
        hash=digest,
    )
    assert row is not None  # RETURNING of an INSERT that did not fail
    return audit_entry_from_row(row)


class AuditVerbs(Backend):
    """The Store protocol's audit verbs, written once over the backend's transactions."""

    @finish_even_if_cancelled
    async def record_event(
        self,
        proposal_id: str | None,
        *,
        actor: str,
        event: str,
        detail: dict[str, JsonValue],
        now: datetime,
    ) -> AuditEntry:
        async with self.tx(write=True) as tx:
            return await tx.append_audit(now, proposal_id, actor, event, detail)

    @finish_even_if_cancelled
    async def audit_log(self, proposal_id: str | None = None) -> list[AuditEntry]:
        async with self.tx(write=False) as tx:
            if proposal_id is None:
                rows = await tx.all("select_audit_log")
            else:
                rows = await tx.all("select_proposal_audit_log", proposal_id=proposal_id)
            return [audit_entry_from_row(row) for row in rows]

    @finish_even_if_cancelled
    async def verify_audit(self) -> AuditReport:
        """Check the hash chain, then compare its last entry with the audit head.

        Both are read from one snapshot, so appends committing meanwhile (in other instances,
        or other processes on the file) cannot make the head look ahead of the log. The chain
        alone shows changed, reordered and missing entries up to its last entry; it cannot show
        that entries after it were deleted. The head, moved in the transaction of every append,
        still names the true last entry, so a log that ends before it has lost its tail
        (reported as the first missing entry).
        """
        async with self.snapshot() as tx:
            entries = [audit_entry_from_row(row) for row in await tx.all("select_audit_log")]
            head = await tx.one("select_audit_head")
        stored = None if head is None else (int(head["seq"]), str(head["hash"]))
        return check_head(verify_chain(entries), entries, stored)

    @finish_even_if_cancelled
    async def audit_head(self) -> AuditHead:
        async with self.tx(write=False) as tx:
            head = await tx.one("select_audit_head")
        if head is None:
            raise StoreError(_NO_HEAD)
        return AuditHead(seq=int(head["seq"]), hash=str(head["hash"]))
