"""Escalations: a conversation an agent hands to people, kept in the store's database and on its
audit chain.

- ``records``: the lifecycle (open, taken, handed back, resolved), the records, the answers of
  the transition verbs and the errors
- ``verbs``: the EscalationStore every backend gives through ``Store.escalations()``, written once
  over the connector, and the row it reads
- ``sql/``: its named queries, common and per dialect
"""

from __future__ import annotations

from store.escalations.records import (
    ESCALATION_EFFECTS,
    ESCALATION_TRANSITIONS,
    FINAL_ESCALATION,
    Escalation,
    EscalationConflict,
    EscalationDelivery,
    EscalationNotFound,
    EscalationResult,
    EscalationStatus,
    Moved,
    NewEscalation,
    Refused,
    escalation_effects_of,
    handed_back_since,
    refusal_of,
    resolved_since,
    taken_since,
)
from store.escalations.verbs import EscalationStore, escalation_from_row

__all__ = [
    "ESCALATION_EFFECTS",
    "ESCALATION_TRANSITIONS",
    "FINAL_ESCALATION",
    "Escalation",
    "EscalationConflict",
    "EscalationDelivery",
    "EscalationNotFound",
    "EscalationResult",
    "EscalationStatus",
    "EscalationStore",
    "Moved",
    "NewEscalation",
    "Refused",
    "escalation_effects_of",
    "escalation_from_row",
    "handed_back_since",
    "refusal_of",
    "resolved_since",
    "taken_since",
]
