"""The audit log's records: an entry of the hash chain, the chain's head, and the verdict of a
check, and the one place a stored row becomes an entry."""

from __future__ import annotations

import json
from datetime import datetime

from pydantic import JsonValue

from contracts.frozen import Frozen
from store.connector import Row
from store.rows import model_from_row

__all__ = ["AuditEntry", "AuditHead", "AuditReport", "audit_entry_from_row"]


class AuditEntry(Frozen):
    """One entry of the hash chain (store/audit/chain.py): who did what to which proposal."""

    seq: int
    at: datetime
    proposal_id: str | None
    actor: str
    event: str
    detail: dict[str, JsonValue]
    prev_hash: str
    hash: str


class AuditHead(Frozen):
    """The last entry of the chain as the database's head row names it."""

    seq: int  #: 0 when the log is empty
    hash: str  #: the genesis hash (store.audit.chain.GENESIS) when the log is empty


class AuditReport(Frozen):
    """What a check of the chain found: how many entries verified, and the first that did not."""

    ok: bool
    checked: int
    first_bad_seq: int | None = None
    problem: str | None = None


def audit_entry_from_row(row: Row) -> AuditEntry:
    return model_from_row(AuditEntry, row, detail=json.loads(row["detail"]))
