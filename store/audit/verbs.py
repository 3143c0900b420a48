"""The audit log, written once for every backend: appending an entry inside the caller's
transaction, sealing entries into the hash chain, and the verbs that add, read and check them.

Every change appends its entry in its own transaction (``tx.append_audit``). An entry joins the
chain when it is **sealed**: it is given the next ``seq`` and its ``prev_hash`` and ``hash``
(store/audit/chain.py), and the ``audit_head`` row moves to it. A backend whose single writer
knows the head (SQLite, store/sqlite_tx.py) seals each entry as it appends it. Otherwise
(PostgreSQL) the entry is appended unsealed, so writers never wait for each other on the head,
and a sealer seals the committed entries in batches (``seal_audit``; store/audit/sealer.py runs
it): the database admits a seal only at the head, so sealers of several instances never fork
the chain, and one that lost a race reads it again. docs/audit.md says why.

The reading verbs first wait until every entry committed before they were called is sealed, so
what they read is the chain as of that moment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import JsonValue

from store.audit.chain import check_head, entry_hash, verify_chain
from store.audit.records import AuditEntry, AuditHead, AuditReport, audit_entry_from_row
from store.backend import Backend
from store.base import StoreError, StoreUnavailable
from store.connector import Array, Row, Tx
from store.rows import aware, dump_json, load_json, read_time
from store.shield import finish_even_if_cancelled

__all__ = [
    "SEAL_BATCH",
    "SEAL_RACES",
    "Appended",
    "AuditVerbs",
    "Entry",
    "append_entry",
    "append_unsealed_entries",
    "seal_audit",
]

#: The head row is gone: the table was changed by hand (it is created with the schema).
_NO_HEAD = "the audit head row is missing; the database was altered by hand"

#: The most entries one sealing transaction seals.
SEAL_BATCH = 500


@dataclass(frozen=True, slots=True)
class Appended:
    """An entry just appended: its row's id, and the chain's new head (its seq and hash) when
    it was sealed at once."""

    id: int  #: the row's identity (on SQLite, which seals at once, its seq)
    sealed: tuple[int, str] | None  #: None: the sealer gives it its place in the chain later


async def append_entry(
    tx: Tx,
    at: datetime,
    proposal_id: str | None,
    actor: str,
    event: str,
    detail: Mapping[str, JsonValue],
    *,
    head: tuple[int, str] | None,
) -> Appended:
    """Append one entry inside ``tx``'s transaction: sealed after ``head`` (seq, hash) when the
    caller knows the head for certain, otherwise unsealed, for the sealer."""
    at, detail_text = aware(at, field="now"), dump_json(detail)
    if head is None:
        row = await tx.one(
            "insert_unsealed_audit_entry",
            at=at,
            proposal_id=proposal_id,
            actor=actor,
            event=event,
            detail=detail_text,
        )
        assert row is not None  # RETURNING of an INSERT that did not fail
        return Appended(id=int(row["id"]), sealed=None)
    seq, prev_hash = head[0] + 1, head[1]
    digest = entry_hash(
        prev_hash,
        seq=seq,
        at=at,
        proposal_id=proposal_id,
        actor=actor,
        event=event,
        detail=load_json(detail_text),  # hash exactly what is stored and read back
    )
    # the head is what was just computed: nothing to read back (the triggers check the link)
    await tx.execute(
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
    return Appended(id=seq, sealed=(seq, digest))


#: One entry of several appended together: the proposal it is about, actor, event, detail.
Entry = tuple[str, str, str, Mapping[str, JsonValue]]


async def append_unsealed_entries(tx: Tx, at: datetime, entries: Sequence[Entry]) -> None:
    """Append ``entries`` unsealed, for the sealer, in one statement, in the order given (their
    row ids order them in the chain): for a backend whose writers append unsealed."""
    await tx.execute(
        "insert_unsealed_audit_entries",
        at=aware(at, field="now"),
        proposal_ids=Array(proposal_id for proposal_id, _, _, _ in entries),
        actors=Array(actor for _, actor, _, _ in entries),
        events=Array(event for _, _, event, _ in entries),
        details=Array(dump_json(detail) for _, _, _, detail in entries),
    )


#: How many times in a row one run reads the chain again after another instance's sealer moved
#: the head between its read and its seal.
SEAL_RACES = 5


async def seal_audit(backend: Backend) -> int:
    """Seal every entry committed before the call (in batches of :data:`SEAL_BATCH`); return
    how many this call sealed (another sealer may have sealed some of them first).

    A batch takes two round trips and holds no lock between them: one statement reads the
    head and the committed unsealed entries after it, oldest row first; the seals, computed
    here, are then sent together and commit together or not at all (``execute_many`` outside
    a transaction). The database admits a seal only at the head (its triggers), so when
    another instance's sealer moved the head in between, the batch is refused whole and read
    again; a seal of an entry the other sealer already sealed changes nothing (its seal is the
    same: each hash follows from the entry and the one before)."""
    sealed = races = 0
    while True:
        async with backend.tx(write=False) as tx:
            rows = await tx.all("select_unsealed_after_head", limit=SEAL_BATCH)
        if not rows:
            raise StoreError(_NO_HEAD)
        seq, prev_hash = int(rows[0]["head_seq"]), str(rows[0]["head_hash"])
        seals = []
        for row in rows:
            if row["id"] is None:  # the head alone: nothing waits for its seal
                break
            seq += 1
            digest = _hash_of(row, seq=seq, prev_hash=prev_hash)
            seals.append({"id": row["id"], "seq": seq, "prev_hash": prev_hash, "hash": digest})
            prev_hash = digest
        if not seals:
            return sealed
        try:
            # one statement per entry, in chain order (the triggers move the head one entry at
            # a time), sent together, committed together
            async with backend.lone_write() as tx:
                await tx.execute_many("seal_audit_entry", seals)
        except StoreUnavailable:
            raise
        except StoreError:  # refused: the head moved since it was read
            races += 1
            if races > SEAL_RACES:
                raise
            continue
        races = 0
        sealed += len(seals)
        if len(seals) < SEAL_BATCH:
            return sealed


def _hash_of(row: Row, *, seq: int, prev_hash: str) -> str:
    return entry_hash(
        prev_hash,
        seq=seq,
        at=read_time(row["at"]),
        proposal_id=row["proposal_id"],
        actor=row["actor"],
        event=row["event"],
        detail=json.loads(row["detail"]),
    )


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
        """Append the entry in its own transaction and answer it once it is sealed."""
        async with self.tx(write=True) as tx:
            entry_id = await tx.append_audit(now, proposal_id, actor, event, detail)
        await self.audit_sealed()
        async with self.tx(write=False) as tx:
            row = await tx.one("select_audit_entry", id=entry_id)
        if row is None:
            raise StoreError(f"audit entry {entry_id} is missing; the database was altered by hand")
        return audit_entry_from_row(row)

    @finish_even_if_cancelled
    async def audit_log(self, proposal_id: str | None = None) -> list[AuditEntry]:
        await self.audit_sealed()
        async with self.tx(write=False) as tx:
            if proposal_id is None:
                rows = await tx.all("select_audit_log")
            else:
                rows = await tx.all("select_proposal_audit_log", proposal_id=proposal_id)
            return [audit_entry_from_row(row) for row in rows]

    @finish_even_if_cancelled
    async def verify_audit(self) -> AuditReport:
        """Seal what has committed, then check the hash chain and compare its last entry with
        the audit head.

        Both are read from one snapshot, so entries sealed meanwhile (by other instances, or
        other processes on the file) cannot make the head look ahead of the log. The chain
        alone shows changed, reordered and missing entries up to its last entry; it cannot show
        that entries after it were deleted. The head, moved with every sealed entry, still
        names the true last entry, so a log that ends before it has lost its tail (reported as
        the first missing entry).
        """
        await self.audit_sealed()
        async with self.snapshot() as tx:
            entries = [audit_entry_from_row(row) for row in await tx.all("select_audit_log")]
            head = await tx.one("select_audit_head")
        stored = None if head is None else (int(head["seq"]), str(head["hash"]))
        return check_head(verify_chain(entries), entries, stored)

    @finish_even_if_cancelled
    async def audit_head(self) -> AuditHead:
        await self.audit_sealed()
        async with self.tx(write=False) as tx:
            head = await tx.one("select_audit_head")
        if head is None:
            raise StoreError(_NO_HEAD)
        return AuditHead(seq=int(head["seq"]), hash=str(head["hash"]))
