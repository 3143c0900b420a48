"""The audit log's hash chain: each entry's hash covers its content and the previous hash.

Changing, deleting or reordering any stored entry breaks the chain from that entry on, and
:func:`verify_chain` names the first entry that does not verify.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime

from pydantic import JsonValue

from contracts.canonical import canonical_json
from store.base import AuditEntry, AuditReport

__all__ = ["GENESIS", "entry_hash", "verify_chain"]

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


def _broken(checked: int, seq: int, problem: str) -> AuditReport:
    return AuditReport(
        ok=False, checked=checked, first_bad_seq=seq, problem=f"entry {seq}: {problem}"
    )
