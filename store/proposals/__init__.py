"""Proposals: what an agent asks to do, frozen, decided by people or policy, executed
once; the proposals' table family of the store and everything kept with a proposal.

- ``lifecycle``: the status, the table of transitions, the effects of each status
- ``records``: a new and a stored proposal, an approval, an outbox delivery, the answers
  of the transition verbs and their errors
- ``rows``: where a stored row becomes a proposal (with its approvals), an approval, a
  delivery
- ``verbs``: the Store protocol's proposal verbs, written once over the connector,
  gathering those of ``approvals``, ``reminders``, ``handovers``, ``cancellations`` and
  ``outbox`` (and the audit family's)
- ``edits``, ``verdicts``, ``effects``, ``batches``: what those verbs check and write
- ``submissions``: a new proposal as stored, with its audit and outbox entries (on
  PostgreSQL in one statement)
- ``clicks``: decision clicks recorded at the click and applied after
- ``calls``: the agents' calls as recorded, for replaying through a policy
- ``sql/``: their named queries, common and per dialect
"""

from __future__ import annotations

from store.proposals.lifecycle import (
    EFFECTS,
    FINAL,
    INITIAL,
    OUTCOME_STATUS,
    SETTLED,
    TRANSITIONS,
    Effect,
    Status,
    mermaid_diagram,
)
from store.proposals.records import (
    AlreadyDecided,
    Approval,
    ApprovalCounted,
    BatchRequest,
    Delivery,
    IdempotencyConflict,
    InvalidTransition,
    NewProposal,
    NotApprovable,
    PendingLimit,
    PendingLimitReached,
    PolicyDecision,
    Proposal,
    ProposalNotFound,
    StaleRead,
    Transitioned,
    TransitionResult,
)
from store.proposals.verbs import ProposalVerbs

__all__ = [
    "EFFECTS",
    "FINAL",
    "INITIAL",
    "OUTCOME_STATUS",
    "SETTLED",
    "TRANSITIONS",
    "AlreadyDecided",
    "Approval",
    "ApprovalCounted",
    "BatchRequest",
    "Delivery",
    "Effect",
    "IdempotencyConflict",
    "InvalidTransition",
    "NewProposal",
    "NotApprovable",
    "PendingLimit",
    "PendingLimitReached",
    "PolicyDecision",
    "Proposal",
    "ProposalNotFound",
    "ProposalVerbs",
    "StaleRead",
    "Status",
    "TransitionResult",
    "Transitioned",
    "mermaid_diagram",
]
