"""Proposals as the store keeps them: a new proposal, a stored one with its approvals, an
outbox entry handed to a worker, the answers of the transition verbs and the errors they
raise."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from pydantic import Field, JsonValue

from contracts.base import Preview, Risk
from contracts.frozen import Frozen
from contracts.outcomes import Outcome
from store.base import StoreError
from store.proposals.lifecycle import Effect, Status

__all__ = [
    "AlreadyDecided",
    "Approval",
    "ApprovalCounted",
    "BatchRequest",
    "Delivery",
    "IdempotencyConflict",
    "InvalidTransition",
    "NewProposal",
    "NotApprovable",
    "PendingLimit",
    "PendingLimitReached",
    "PolicyDecision",
    "Proposal",
    "ProposalNotFound",
    "StaleRead",
    "TransitionResult",
    "Transitioned",
]

PolicyDecision = Literal["auto", "ask", "deny"]


class BatchRequest(Frozen):
    """Which batch a new proposal waits in (contracts/batching.py), as Countersign derived it:
    never from anything the agent sent."""

    #: the channel, rule, operation and approver roles the batch's proposals share
    key: str = Field(min_length=1)
    window: timedelta = Field(gt=timedelta(0))
    max: int = Field(ge=1, le=50)


class NewProposal(Frozen):
    """A frozen contract as the submission path hands it to the store."""

    id: str  #: opaque public id: 128 random bits, the only thing Slack buttons carry
    agent: str  #: from the agent's token, never from the body
    submission_key: str  #: Idempotency-Key header, or derived from agent/run/operation/request
    submission_fingerprint: str  #: hash of the canonical submission body
    requested_by: str  #: Slack user id of the accountable human
    run_id: str | None = None
    operation: str
    request: JsonValue  #: the model-facing request as the agent sent it
    arguments: dict[str, JsonValue]  #: the frozen arguments execution will use
    preview: Preview
    binding_hash: str  #: contracts.canonical.binding_hash(operation, arguments, preview)
    agent_reason: str | None = None  #: the agent's explanation: shown labelled as its words
    callback_url: str | None = None
    rule_id: str | None  #: the policy rule that matched; None when no rule matched
    decision: PolicyDecision
    policy_note: str  #: why the policy decided so (the matched condition, or the deny reason)
    approver_roles: tuple[str, ...] = ()
    channel: str | None = None  #: Slack channel to ask in
    status: Status  #: one of lifecycle.INITIAL
    created_at: datetime
    expires_at: datetime | None = None
    #: while executing: the time by which the executor must record an outcome (policy auto
    #: creates proposals executing, so they carry one from the start)
    lease_until: datetime | None = None
    remind_at: datetime | None = None  #: when to remind the approvers (None: no reminder)
    risk: Risk = "irreversible"  #: the operation's risk class when it was frozen
    quorum: int = Field(default=1, ge=1, le=20)  #: distinct approvals needed before it runs
    #: an edit: the proposal this one replaces, and the person who edited it (never an approver)
    supersedes: str | None = None
    edited_by: str | None = None
    #: the standing rule that approved it automatically (decision auto), if one did
    standing_rule_id: str | None = None
    #: its automatic approval was sampled for a person's review after the fact
    review_sampled: bool = False
    #: the delegation from Slack it was submitted under (requested_by is that delegation's
    #: person); None: submitted with the agent's own token, or an edit
    delegation_id: str | None = None
    #: when people are shown it at the latest (an ask); a batched proposal's expiry, reminder
    #: and hand-over count from it. For a new batched proposal: the end of a window opened now
    #: (the store moves these times earlier when it joins a batch closing sooner)
    shown_after: datetime | None = None
    urgent: bool = False  #: its agent asked for it to be shown at once (never batched)
    #: the rule's backup approver roles, and from when they may decide too (contracts.batching)
    backup_roles: tuple[str, ...] = ()
    backup_at: datetime | None = None
    #: creation only: the batch to wait in (None: posted at once); stored as batch_id
    batch: BatchRequest | None = None


class Approval(Frozen):
    """One person's approval towards a quorum, bound to the contract they saw."""

    approver: str
    binding_hash: str
    approved_at: datetime


class Proposal(NewProposal):
    """A stored proposal: the frozen contract plus everything that happened to it since."""

    slack_channel: str | None = None
    slack_ts: str | None = None
    #: when people were first shown it in Slack: its message, or a digest holding it, was posted
    #: and recorded (None: not yet, whatever shown_after says; kept when it is placed again)
    shown_at: datetime | None = None
    decided_by: str | None = None
    decided_at: datetime | None = None
    decision_note: str | None = None  #: the rejection reason
    outcome: Outcome | None = None
    updated_at: datetime
    superseded_by: str | None = None  #: the edit that replaced it
    reminded_at: datetime | None = None  #: when the reminder before expiry was posted
    extended_by: str | None = None  #: who extended the expiry (once at most)
    extended_at: datetime | None = None
    #: approvals towards the quorum so far, oldest first (only those bound to binding_hash count)
    approvals: tuple[Approval, ...] = ()
    #: the digest whose message shows it with similar proposals (store/digests/), if any
    digest_id: str | None = None
    batch_id: str | None = None  #: the batch it waited in (store/proposals/batches.py), if any
    #: when it was offered to the backup approvers (backup_roles), if it was
    handed_over_at: datetime | None = None
    #: the attempt at executing it that is (or was last) under way: 1, then one more for each
    #: retry of an uncertain execution; an outcome is recorded only for the attempt running
    attempt: int = Field(default=1, ge=1)
    #: who last answered for an uncertain execution (retried it, or recorded what happened), and
    #: when (store/proposals/verdicts.py: reconciled_since)
    reconciled_by: str | None = None
    reconciled_at: datetime | None = None


class Delivery(Frozen):
    """One outbox entry handed to a worker: an effect of a transition, to deliver once."""

    id: int
    proposal_id: str
    effect: Effect
    status: Status  #: the status the proposal entered when this was written
    attempts: int  #: including the one this delivery is
    created_at: datetime


# --- answers of the transition verbs ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Transitioned:
    """You made the transition (for a claim: you, and only you, execute)."""

    proposal: Proposal


@dataclass(frozen=True, slots=True)
class AlreadyDecided:
    """Someone else decided first; ``proposal`` holds who, when and the stored outcome."""

    proposal: Proposal


@dataclass(frozen=True, slots=True)
class NotApprovable:
    """Still undecided, but this transition is not allowed now (``reason`` says why)."""

    proposal: Proposal
    reason: str


@dataclass(frozen=True, slots=True)
class ApprovalCounted:
    """Your approval is recorded, but the quorum is not reached yet; ``proposal`` is still
    pending and carries every approval so far (yours included)."""

    proposal: Proposal


TransitionResult = Transitioned | AlreadyDecided | NotApprovable | ApprovalCounted


@dataclass(frozen=True, slots=True)
class StaleRead:
    """Nothing was written: the proposal no longer holds what the caller read (its status,
    attempt or outcome changed since); ``proposal`` is how it is now, to build on again."""

    proposal: Proposal


class ProposalNotFound(StoreError):
    """No proposal has that id."""


class IdempotencyConflict(StoreError):
    """That idempotency key was already used by this agent for a different submission."""

    def __init__(self, existing: Proposal) -> None:
        super().__init__()
        self.existing = existing


@dataclass(frozen=True, slots=True)
class PendingLimit:
    """An agent's bound on its proposals waiting for a person, as ``create_proposal`` checks
    it: at most ``limit``, counting with the stored ones its submissions ``in_flight`` elsewhere
    (their proposals' ids) that are not stored yet, so a burst of concurrent submissions cannot
    all see the last free place, nor is one counted twice once it is stored."""

    limit: int
    in_flight: tuple[str, ...] = ()


class PendingLimitReached(StoreError):
    """The agent's proposals waiting for a person fill the room it was given: nothing was
    stored."""


class InvalidTransition(StoreError):
    """The proposal is not in a status that allows this transition."""
