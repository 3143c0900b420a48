"""The Store protocol: what every backend (SQLite, PostgreSQL) gives, the proposals' verbs
and each table family's store, all on one database and one audit chain. Every backend
passes the same conformance suite (``tests/store/conformance.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from pydantic import JsonValue

from contracts.outcomes import NeedsReconciliation, Outcome
from store.audit.records import AuditEntry, AuditHead, AuditReport
from store.delegations import DelegationStore
from store.digests import DigestStore
from store.escalations import EscalationStore
from store.proposals.clicks import ClickStore
from store.proposals.records import (
    Delivery,
    NewProposal,
    PendingLimit,
    Proposal,
    StaleRead,
    TransitionResult,
)
from store.standing import StandingStore

__all__ = ["Store"]

# --- the protocol ---------------------------------------------------------------------------------


class Store(Protocol):
    async def create_proposal(
        self, new: NewProposal, *, pending_limit: PendingLimit | None = None
    ) -> tuple[Proposal, bool]:
        """Store a new proposal with its audit entry. Returns (proposal, created).

        When the agent already submitted the same ``submission_key`` with the same fingerprint,
        returns the stored proposal and False; with another fingerprint, raises
        IdempotencyConflict. Nothing is stored twice.

        A proposal that would wait for a person is refused with PendingLimitReached, nothing
        stored, when its agent's pending proposals (the count the store keeps, with those of
        ``pending_limit.in_flight`` not stored yet) number ``pending_limit.limit`` or more
        (None: no bound); a replay of a stored submission is never refused.
        """
        ...

    async def get_proposal(self, proposal_id: str) -> Proposal:
        """Raises ProposalNotFound."""
        ...

    async def find_submission(self, agent: str, submission_key: str) -> Proposal | None:
        """The proposal ``agent`` stored under ``submission_key``, if any."""
        ...

    async def pending_proposals(
        self, *, limit: int = 100, agent: str | None = None
    ) -> list[Proposal]:
        """Up to ``limit`` pending proposals (of ``agent`` only, when given), riskiest first
        (irreversible, reversible, read), then soonest expiry, then by id."""
        ...

    async def count_pending(self, agent: str) -> int:
        """How many of ``agent``'s proposals wait for a decision (status pending), counted in
        the database, so every instance sees the same number."""
        ...

    async def pending_by_agent(self) -> dict[str, int]:
        """Pending proposals per agent (agents with none are left out)."""
        ...

    async def decisions_by(self, user: str, *, limit: int = 10) -> list[Proposal]:
        """The proposals ``user`` approved or rejected, latest decision first."""
        ...

    def escalations(self) -> EscalationStore:
        """The escalations kept in the same database, on the same audit chain."""
        ...

    def standing(self) -> StandingStore:
        """Standing rules and reviews, kept in the same database, on the same audit chain."""
        ...

    def delegations(self) -> DelegationStore:
        """Delegations from Slack, kept in the same database, on the same audit chain."""
        ...

    def clicks(self) -> ClickStore:
        """Decision clicks recorded at the click and applied after, in the same database."""
        ...

    def digests(self) -> DigestStore:
        """Digest messages of similar proposals, kept in the same database and audit chain."""
        ...

    async def attach_message(self, proposal_id: str, channel: str, ts: str) -> Proposal:
        """Remember the Slack message that shows the proposal."""
        ...

    async def claim_for_execution(
        self,
        proposal_id: str,
        *,
        actor: str,
        now: datetime,
        binding_hash: str,
        lease_until: datetime,
        via: Mapping[str, JsonValue] | None = None,
    ) -> TransitionResult:
        """``actor`` approves: pending -> executing, atomically, once the quorum is reached.

        Refused as before when the proposal is not pending, expired or bound to another hash,
        and when ``actor`` already approved it. Otherwise the approval is recorded; when the
        approvals bound to the proposal's binding hash reach its quorum, the proposal moves to
        executing (``decided_by`` is the approver who completed it) and the answer is
        Transitioned; before that, ApprovalCounted. All of it is one transaction.

        The executor must record an outcome before ``lease_until``; after it, the proposal is
        taken for abandoned (reclaim_abandoned). ``via`` says where the approval was given
        (a digest's review: ``{"via": "digest_review", "digest_id": ...}``); it is added to the
        approval's audit entry.
        """
        ...

    async def retry_execution(
        self, proposal_id: str, *, actor: str, now: datetime, lease_until: datetime
    ) -> TransitionResult:
        """needs_reconciliation -> executing: a person asks to try again with the same key."""
        ...

    async def resolve_reconciliation(
        self, proposal_id: str, *, actor: str, outcome: Outcome, note: str, now: datetime
    ) -> TransitionResult:
        """needs_reconciliation -> succeeded or failed, as a person found out.

        ``outcome`` is Succeeded or TerminalFailure; anything else raises ValueError.
        """
        ...

    async def reclaim_abandoned(self, *, now: datetime, limit: int = 100) -> list[Proposal]:
        """executing past its lease -> needs_reconciliation: the executor is gone, and whether
        the effect happened is unknown. Never executed again without a person."""
        ...

    async def record_outcome(
        self,
        proposal_id: str,
        outcome: Outcome,
        *,
        now: datetime,
        attempt: int = 1,
        executing: Proposal | None = None,
    ) -> Proposal:
        """executing -> the outcome's status, for ``attempt`` (Proposal.attempt when it was
        claimed or retried). Raises InvalidTransition if not executing, or executing another
        attempt (a retry's, when ``attempt`` is an earlier one's). ``executing``: the proposal
        as the caller claimed it, if it holds it; the answer is then built over its contract
        instead of parsing it again (the same proposal a fresh read gives)."""
        ...

    async def audit_late_outcome(
        self, proposal_id: str, answered: Outcome, *, attempt: int, now: datetime
    ) -> None:
        """The target ``answered`` for an earlier ``attempt`` after a later one was started:
        audited as ``late_outcome`` (with the attempt), nothing else changed. Once: the same
        answer to the same attempt, audited already (a try whose reply the store lost, or the
        target answering twice), is not audited again. Raises ProposalNotFound."""
        ...

    async def record_late_outcome(
        self,
        proposal_id: str,
        answered: Outcome,
        shown: NeedsReconciliation,
        *,
        attempt: int,
        read: NeedsReconciliation,
        now: datetime,
        answered_attempt: int | None = None,
    ) -> Proposal | StaleRead:
        """The target ``answered`` attempt ``answered_attempt`` (default: ``attempt``) after
        the execution was handed to a person: audited as ``late_outcome`` (with the attempt
        answered), and ``shown`` becomes the outcome on its message (the status stays
        needs_reconciliation); the proposal as written. A compare-and-set: ``shown`` was built
        from the outcome the caller ``read`` for ``attempt``, and is written only if the
        proposal is still needs_reconciliation with that attempt and that outcome. Otherwise
        (another late answer was shown since, a retry started, a person reconciled it)
        StaleRead with the proposal as it is now, and nothing written. Once: when this answer
        to that attempt is audited already (a try whose reply the store lost), nothing is
        written and the proposal is returned as it is."""
        ...

    async def reject(
        self, proposal_id: str, *, actor: str, reason: str, now: datetime
    ) -> TransitionResult:
        """pending -> rejected, atomically, if unexpired."""
        ...

    async def cancel(self, proposal_id: str, *, agent: str, now: datetime) -> TransitionResult:
        """The proposing ``agent`` withdraws it: pending and unexpired -> cancelled, atomically,
        with a "cancelled" audit entry (actor ``agent``) and its effects (the message's update,
        the agent's callback); ``decided_at`` is when.

        Transitioned, also when it was cancelled already (then nothing is written again);
        AlreadyDecided when it is in another status (``proposal.status`` names it);
        NotApprovable when it is pending past its expiry. Raises ProposalNotFound when no
        proposal of ``agent`` has that id (another agent's proposal is not found either).
        """
        ...

    async def supersede(
        self, old_id: str, new: NewProposal, *, actor: str, now: datetime
    ) -> TransitionResult:
        """An edit: pending -> superseded, atomically, if unexpired, and ``new`` stored with it.

        In one transaction: the old proposal names its successor (``superseded_by``) and its
        editor (``decided_by``, ``decided_at``) with a "superseded" audit entry; ``new`` is
        stored as a submission is ("submitted", the policy's entry) with an "edited" entry that
        keeps the proposed and the edited request and arguments; both write their effects.
        ``new.supersedes`` must be ``old_id`` and ``new.edited_by`` ``actor`` (ValueError).
        Transitioned carries the new proposal. When the old one is no longer pending or has
        expired, nothing is stored (AlreadyDecided / NotApprovable). When the agent already used
        ``new.submission_key``, raises IdempotencyConflict and stores nothing.
        """
        ...

    async def expire_due(self, *, now: datetime, limit: int = 100) -> list[Proposal]:
        """pending -> expired for up to ``limit`` proposals whose expiry has passed."""
        ...

    async def remind_due(self, *, now: datetime, limit: int = 100) -> list[Proposal]:
        """Up to ``limit`` pending, unexpired proposals whose reminder is due (``remind_at`` <=
        ``now``) and not yet sent, marked reminded (``reminded_at``): each once, however many
        sweep at once. Each gets a "reminded" audit entry and, when it asks in a channel, a
        slack.remind outbox entry, in the same transaction. The status does not change.
        """
        ...

    async def hand_over_due(self, *, now: datetime, limit: int = 100) -> list[Proposal]:
        """Up to ``limit`` pending, unexpired proposals whose backup approvers are due
        (``backup_at`` <= ``now``) and not yet offered it, marked handed over
        (``handed_over_at``): each once, however many sweep at once. Each gets a "handed_over"
        audit entry naming the backup roles and, when it asks in a channel, a slack.update
        outbox entry, in the same transaction. The status does not change.
        """
        ...

    async def extend(
        self, proposal_id: str, *, actor: str, until: datetime, now: datetime
    ) -> TransitionResult:
        """The one extension: a pending, unexpired, never extended proposal expires at ``until``
        (later than its expiry) instead, naming ``actor`` and ``now``, atomically, with an
        "extended" audit entry {from, to} and a slack.update of its message. A reminder not
        yet sent moves with the expiry: it stays as long before the new expiry as it was
        before the old one. Otherwise nothing changes: AlreadyDecided when it is no longer
        pending, NotApprovable saying why (expired, already extended, not later).
        """
        ...

    async def record_event(
        self,
        proposal_id: str | None,
        *,
        actor: str,
        event: str,
        detail: dict[str, JsonValue],
        now: datetime,
    ) -> AuditEntry:
        """An audit entry with no transition (a refused click, a failed Slack post...)."""
        ...

    async def audit_log(self, proposal_id: str | None = None) -> list[AuditEntry]:
        """Audit entries in chain order, all or for one proposal."""
        ...

    async def verify_audit(self) -> AuditReport:
        """Recompute the hash chain; report the first entry that does not verify."""
        ...

    async def audit_head(self) -> AuditHead:
        """The head of the audit chain (its last entry's seq and hash), read without the log:
        what ``countersign audit anchor`` copies outside the database."""
        ...

    # --- the outbox --------------------------------------------------------------------------

    async def claim_deliveries(
        self, *, now: datetime, limit: int, lease: timedelta
    ) -> list[Delivery]:
        """Due outbox entries, leased to the caller until ``now + lease``.

        An entry is due when its next attempt time has come, it is not leased, and every earlier
        entry of the same proposal and lane was delivered or abandoned. Several workers (in
        several processes) never receive the same entry while its lease holds. Due message
        updates and thread replies (a decision's) come first, then the rest, oldest first.

        A proposal whose Slack lane starts with a due message update or thread reply is leased
        with the due updates and replies that follow it there (a decision's update and reply
        together, in order): they are delivered by one job. ``limit`` counts proposals' lanes,
        not entries.
        """
        ...

    async def complete_delivery(self, delivery_id: int, *, now: datetime) -> None: ...

    async def complete_deliveries(self, delivery_ids: Sequence[int], *, now: datetime) -> None:
        """Several entries delivered, in one write (none: nothing is written)."""
        ...

    async def retry_delivery(self, delivery_id: int, *, at: datetime, error: str) -> None:
        """Release the lease; try again at ``at``."""
        ...

    async def abandon_delivery(self, delivery_id: int, *, now: datetime, error: str) -> None:
        """Give up on an entry (audited as delivery_abandoned); later entries may proceed."""
        ...

    async def pending_deliveries(self) -> int:
        """How many outbox entries are neither delivered nor abandoned."""
        ...

    async def listen(self, on_change: Callable[[str], None]) -> None:
        """From now on, call ``on_change(proposal_id)`` when another process changes a proposal.

        Wakes long-polling agents served by this process when the decision lands in another one.
        A backend only one process uses (SQLite) has nothing to listen to and does nothing.
        """
        ...

    async def announce(self, message: str) -> None:
        """Tell the other processes on this store ``message`` (it holds a ``:``, which no
        proposal id does), through their :meth:`listen` subscribers; this one's may hear it too.
        Nothing for a backend only one process uses (SQLite)."""
        ...

    async def close(self) -> None: ...
