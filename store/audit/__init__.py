"""The audit log: one hash chain of every change, in the same database as what it records.

- ``records``: an entry, the chain's head, the verdict of a check (and the row they come from)
- ``chain``: how an entry's hash covers its content and the entry before; checking the chain
- ``verbs``: appending an entry in the caller's transaction, sealing entries into the chain,
  and the Store protocol's audit verbs, written once over the connector
- ``sealer``: the task that seals, in batches, what a backend appends unsealed (PostgreSQL)
- ``sql/``: its named queries, common and per dialect
"""

from __future__ import annotations

from store.audit.chain import GENESIS, check_head, entry_hash, verify_chain
from store.audit.records import AuditEntry, AuditHead, AuditReport, audit_entry_from_row
from store.audit.sealer import IDLE_SECONDS, Sealer
from store.audit.verbs import (
    SEAL_BATCH,
    Appended,
    AuditVerbs,
    Entry,
    append_entry,
    append_unsealed_entries,
    seal_audit,
)

__all__ = [
    "GENESIS",
    "IDLE_SECONDS",
    "SEAL_BATCH",
    "Appended",
    "AuditEntry",
    "AuditHead",
    "AuditReport",
    "AuditVerbs",
    "Entry",
    "Sealer",
    "append_entry",
    "append_unsealed_entries",
    "audit_entry_from_row",
    "check_head",
    "entry_hash",
    "seal_audit",
    "verify_chain",
]
