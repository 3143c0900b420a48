"""The audit log's hash chain: each entry's hash covers its content and the previous hash.

Changing, deleting or reordering any stored entry breaks the chain from that entry on, and
:func:`verify_chain` names the first entry that does not verify; :func:`check_head` adds what
the chain alone cannot show, entries deleted from its end.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime

from pydantic import JsonValue

from contracts.canonical import canonical_json
from store.audit.records import AuditEntry, AuditReport

__all__ = ["GENESIS", "check_head", "entry_hash", "verify_chain"]

#: The "previous hash" of the first entry.
GENESIS = "0" * 64


def entry_hash(
    prev_hash: str,
    *,
    seq: int,
    at: datetime,
    proposal_id: str | None,
    actor: str,
    event: str,
    detail: dict[str, JsonValue],
) -> str:
    content = canonical_json(
        {
            "seq": seq,
            "at": at.astimezone(UTC).isoformat(),
            "proposal_id": proposal_id,
            "actor": actor,
            "event": event,
            "detail": detail,
        }
    )
    return hashlib.sha256(prev_hash.encode() + b"\n" + content).hexdigest()


def verify_chain(entries: Iterable[AuditEntry]) -> AuditReport:
    """Check that entries are numbered 1, 2, 3... and each hash is right and linked."""
    expected_prev = GENESIS
    checked = 0
    for expected_seq, entry in enumerate(entries, start=1):
        if entry.seq != expected_seq:
            return _broken(checked, entry.seq, f"expected entry {expected_seq}, found {entry.seq}")
        if entry.prev_hash != expected_prev:
            return _broken(checked, entry.seq, "its previous-hash does not match the entry before")
        recomputed = entry_hash(
            entry.prev_hash,
            seq=entry.seq,
            at=entry.at,
            proposal_id=entry.proposal_id,
            actor=entry.actor,
            event=entry.event,
            detail=entry.detail,
        )
        if recomputed != entry.hash:
            return _broken(checked, entry.seq, "its content does not match its hash")
        expected_prev = entry.hash
        checked += 1
    return AuditReport(ok=True, checked=checked)


def check_head(
    report: AuditReport, entries: list[AuditEntry], head: tuple[int, str] | None
) -> AuditReport:
    """``report`` on the chain, completed by comparing its last entry with the stored head.

    The chain alone shows changed, reordered and missing entries up to its last entry; it cannot
    show that entries after it were deleted. The head row, moved in the transaction of every
    append, still names the true last entry, so a log that ends before the head has lost its
    tail (reported as the first missing entry).
    """
    if not report.ok:
        return report
    last_seq, last_hash = (entries[-1].seq, entries[-1].hash) if entries else (0, GENESIS)
    if head is None:
        bad, problem = last_seq + 1, "the audit head row is missing"
    else:
        head_seq, head_hash = head
        if head_seq > last_seq:
            bad = last_seq + 1
            problem = (
                f"entry {bad}: missing; the head of the chain is entry {head_seq} but the log "
                f"ends at entry {last_seq} (entries were removed from the end)"
            )
        elif head_seq < last_seq:
            bad = head_seq + 1
            problem = f"entry {bad}: beyond the head of the chain, which ends at entry {bad - 1}"
        elif head_hash != last_hash:
            bad, problem = last_seq, f"entry {last_seq}: its hash differs from the chain's head"
        else:
            return report
    return AuditReport(ok=False, checked=report.checked, first_bad_seq=bad, problem=problem)


def _broken(checked: int, seq: int, problem: str) -> AuditReport:
    return AuditReport(
        ok=False, checked=checked, first_bad_seq=seq, problem=f"entry {seq}: {problem}"
    )
