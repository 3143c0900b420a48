"""Proposals and their transitions, written once for every backend: the Store protocol's verbs.

:class:`ProposalVerbs` is what SqliteStore and PostgresStore build on. Each verb opens one of
the backend's transactions (store/backend.py) and runs named queries in it, their SQL in
store/proposals/sql/common/proposals.sql (and, for the sweeps, which take their rows with ``FOR
UPDATE SKIP LOCKED`` on PostgreSQL, store/proposals/sql/<dialect>/proposals.sql). Approvals,
reminders, an agent's withdrawal, the outbox and the audit log have their verbs in their own
modules; ProposalVerbs gathers them.

Every transition is a compare-and-set (``UPDATE ... WHERE status = ... RETURNING *``), made in one
transaction with its audit entry and the outbox entries of the status it enters; when no row
comes back, the proposal is re-read to say why. On PostgreSQL the UPDATE locks the proposal's row
before the audit entry locks the chain's head: rows first, head second, so writers never
deadlock.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime

from pydantic import JsonValue

from contracts.outcomes import OUTCOMES, NeedsReconciliation, Outcome
from store.audit import AuditVerbs
from store.base import StoreUnavailable
from store.connector import Array, Row, Tx
from store.proposals.approvals import ApprovalVerbs
from store.proposals.batches import after_joining, join_batch
from store.proposals.cancellations import CancelVerbs
from store.proposals.edits import check_creatable, check_edit, edited_detail, superseded_detail
from store.proposals.effects import effects_of, lane_of
from store.proposals.handovers import HandOverVerbs
from store.proposals.lifecycle import EFFECTS, OUTCOME_STATUS, Effect, Status
from store.proposals.outbox import OutboxVerbs, enqueue, enqueue_effects
from store.proposals.records import (
    IdempotencyConflict,
    InvalidTransition,
    NewProposal,
    PendingLimit,
    PendingLimitReached,
    Proposal,
    ProposalNotFound,
    StaleRead,
    Transitioned,
    TransitionResult,
)
from store.proposals.reminders import ReminderVerbs
from store.proposals.rows import (
    created_proposal,
    existing_proposal,
    insert_proposal_params,
    outcome_json,
    proposal_from_row,
    proposal_known_from_row,
    with_approvals,
)
from store.proposals.submissions import (
    POLICY_ACTOR,
    insert_submitted,
    policy_detail,
    submitted_entries,
)
from store.proposals.verdicts import not_reconcilable, refusal
from store.rows import aware, check_limit, dump_json, read_time
from store.shield import finish_even_if_cancelled

__all__ = [
    "EXECUTOR_ACTOR",
    "EXPIRY_ACTOR",
    "POLICY_ACTOR",
    "SLACK_ACTOR",
    "ProposalVerbs",
    "policy_detail",
    "submitted",
]

#: Who writes the audit entries that no person or agent caused.
EXPIRY_ACTOR = "expiry"
EXECUTOR_ACTOR = "executor"
SLACK_ACTOR = "slack"

#: The outcome a lost execution is given: nobody knows whether its effect happened.
ABANDONED = NeedsReconciliation(
    detail="no outcome was recorded before its execution lease ended (the process executing it "
    "stopped, or the target had not answered yet); the effect may or may not have happened",
    correlation_id="lease-expired",
)


async def submitted(
    tx: Tx, new: NewProposal, row: Row, edit: Mapping[str, JsonValue] | None = None
) -> Proposal:
    """The audit entries and effects of the proposal ``row`` just inserted from ``new`` (and of
    the edit it is, when ``edit`` holds the "edited" entry's detail), appended one by one
    (store/proposals/submissions.py); the proposal stored."""
    proposal = created_proposal(new, row["batch_id"])
    shown_after = proposal.shown_after
    for actor, event, detail in submitted_entries(
        new,
        batch_id=proposal.batch_id,
        shown_after=None if shown_after is None else shown_after.isoformat(),
        edit=edit,
    ):
        await tx.append_audit(new.created_at, new.id, actor, event, detail)
    await enqueue(tx, proposal, effects_of(proposal), new.created_at)
    return proposal


async def _replayed(tx: Tx, new: NewProposal, found: Row) -> Proposal:
    """The proposal ``found`` stored under ``new``'s submission key, with its approvals; raises
    IdempotencyConflict when it was stored for a different submission."""
    [existing] = await with_approvals(tx, [proposal_from_row(found)])
    if existing.submission_fingerprint != new.submission_fingerprint:
        raise IdempotencyConflict(existing)
    return existing


def _no_outcome_while(current: Proposal, outcome: Outcome, attempt: int) -> InvalidTransition:
    if current.status is Status.EXECUTING:
        return InvalidTransition(
            f"proposal {current.id!r} is executing attempt {current.attempt}, not {attempt}: "
            f"an outcome ({outcome.kind!r}) is recorded only for the attempt running"
        )
    return InvalidTransition(
        f"proposal {current.id!r} is {current.status.value!r}, not 'executing': "
        f"an outcome ({outcome.kind!r}) can only be recorded while executing"
    )


class ProposalVerbs(
    ApprovalVerbs, ReminderVerbs, HandOverVerbs, CancelVerbs, OutboxVerbs, AuditVerbs
):
    """The Store protocol's verbs, written once over a backend's transactions."""

    #: what stamps the one verb without a ``now`` (attach_message); set by the backend
    _clock: Callable[[], datetime]

    @finish_even_if_cancelled
    async def create_proposal(
        self, new: NewProposal, *, pending_limit: PendingLimit | None = None
    ) -> tuple[Proposal, bool]:
        check_creatable(new)
        bounded = pending_limit if new.status is Status.PENDING else None
        if new.batch is None and self.appends_unsealed:  # one statement (submissions.py)
            async with self.lone_write() as tx:
                stored = await insert_submitted(tx, new, pending_limit=bounded)
                if stored["created"]:  # as stored, without parsing the row back (rows.py)
                    return created_proposal(new, None), True  # new: no approvals yet
                found = stored if stored["id"] is not None else None
                if found is None:  # nothing stored, and no stored proposal seen
                    if not stored["has_room"]:
                        raise PendingLimitReached()
                    found = await tx.one(  # stored under its key by a commit meanwhile
                        "select_submission", agent=new.agent, submission_key=new.submission_key
                    )
                assert found is not None  # the row whose unique key refused the insert
                return await _replayed(tx, new, found), False
        async with self.tx(write=True) as tx:
            found = None
            if new.batch is not None:  # a replay joins no batch: looked for first
                found = await tx.one(
                    "select_submission", agent=new.agent, submission_key=new.submission_key
                )
            if found is None and bounded is not None:
                counted = await tx.one(
                    "count_pending_with_in_flight",
                    agent=new.agent,
                    in_flight=Array(bounded.in_flight),
                )
                assert counted is not None  # sums return one row
                if int(counted["pending"]) >= bounded.limit:
                    # no room: only a replay is answered, with the proposal it stored (below
                    # the limit, the insert finds a replay by its key, one statement fewer)
                    found = await tx.one(
                        "select_submission", agent=new.agent, submission_key=new.submission_key
                    )
                    if found is None:
                        raise PendingLimitReached()
            batch_id = None
            if found is None:
                new, batch_id = await join_batch(tx, new)
                params = insert_proposal_params(new) | {"batch_id": batch_id}
                row = await tx.one("insert_proposal", **params)
                if row is not None:
                    await after_joining(tx, batch_id, new.created_at)
                    return await submitted(tx, new, row), True
                if batch_id is not None:  # a concurrent replay won: undo the join with it
                    raise StoreUnavailable(
                        f"proposal {new.id!r}: its submission key was stored meanwhile; "
                        "send it again"
                    )
                found = await tx.one(
                    "select_submission", agent=new.agent, submission_key=new.submission_key
                )
            assert found is not None  # the row whose unique key refused the insert
            return await _replayed(tx, new, found), False

    @finish_even_if_cancelled
    async def get_proposal(self, proposal_id: str) -> Proposal:
        async with self.tx(write=False) as tx:
            return await existing_proposal(tx, proposal_id)

    @finish_even_if_cancelled
    async def find_submission(self, agent: str, submission_key: str) -> Proposal | None:
        async with self.tx(write=False) as tx:
            row = await tx.one("select_submission", agent=agent, submission_key=submission_key)
            if row is None:
                return None
            [proposal] = await with_approvals(tx, [proposal_from_row(row)])
            return proposal

    @finish_even_if_cancelled
    async def pending_proposals(
        self, *, limit: int = 100, agent: str | None = None
    ) -> list[Proposal]:
        check_limit(limit, "proposals")
        async with self.tx(write=False) as tx:
            if agent is None:
                rows = await tx.all("select_pending", limit=limit)
            else:
                rows = await tx.all("select_pending_of_agent", agent=agent, limit=limit)
            return await with_approvals(tx, [proposal_from_row(row) for row in rows])

    @finish_even_if_cancelled
    async def count_pending(self, agent: str) -> int:
        async with self.tx(write=False) as tx:
            row = await tx.one("count_pending", agent=agent)
            return 0 if row is None else int(row["pending"])

    @finish_even_if_cancelled
    async def pending_by_agent(self) -> dict[str, int]:
        async with self.tx(write=False) as tx:
            rows = await tx.all("count_pending_by_agent")
            return {str(row["agent"]): int(row["pending"]) for row in rows}

    @finish_even_if_cancelled
    async def decisions_by(self, user: str, *, limit: int = 10) -> list[Proposal]:
        check_limit(limit, "proposals")
        async with self.tx(write=False) as tx:
            rows = await tx.all("select_decided_by", user=user, limit=limit)
            return await with_approvals(tx, [proposal_from_row(row) for row in rows])

    @finish_even_if_cancelled
    async def attach_message(self, proposal_id: str, channel: str, ts: str) -> Proposal:
        now = aware(self._clock(), field="clock()")
        detail: dict[str, JsonValue] = {"channel": channel, "ts": ts}
        if self.appends_unsealed:  # the change and its audit entry: one statement
            async with self.lone_write() as tx:
                row = await tx.one(
                    "update_message_at_once",
                    id=proposal_id,
                    channel=channel,
                    ts=ts,
                    now=now,
                    actor=SLACK_ACTOR,
                    event="posted_to_slack",
                    detail=dump_json(detail),
                )
                if row is None:
                    raise ProposalNotFound(f"no proposal has id {proposal_id!r}")
                tx.appended_unsealed(1)
                [proposal] = await with_approvals(tx, [proposal_from_row(row)])
                return proposal
        async with self.tx(write=True) as tx:
            row = await tx.one("update_message", id=proposal_id, channel=channel, ts=ts, now=now)
            if row is None:
                raise ProposalNotFound(f"no proposal has id {proposal_id!r}")
            await tx.append_audit(now, proposal_id, SLACK_ACTOR, "posted_to_slack", detail)
            [proposal] = await with_approvals(tx, [proposal_from_row(row)])
            return proposal

    @finish_even_if_cancelled
    async def retry_execution(
        self, proposal_id: str, *, actor: str, now: datetime, lease_until: datetime
    ) -> TransitionResult:
        async with self.tx(write=True) as tx:
            row = await tx.one(
                "retry_execution", id=proposal_id, actor=actor, now=now, lease_until=lease_until
            )
            if row is None:
                return not_reconcilable(await existing_proposal(tx, proposal_id))
            await tx.append_audit(now, proposal_id, actor, "retry_approved", {})
            return Transitioned(await enqueue_effects(tx, row, now))

    @finish_even_if_cancelled
    async def resolve_reconciliation(
        self, proposal_id: str, *, actor: str, outcome: Outcome, note: str, now: datetime
    ) -> TransitionResult:
        if outcome.kind not in ("succeeded", "terminal_failure"):
            raise ValueError(
                f"outcome: got {outcome.kind!r}; a person resolves an uncertain execution as "
                "'succeeded' or 'terminal_failure'"
            )
        status, detail = OUTCOME_STATUS[outcome.kind], outcome_json(outcome)
        async with self.tx(write=True) as tx:
            row = await tx.one(
                "resolve_reconciliation",
                id=proposal_id,
                actor=actor,
                status=status.value,
                outcome=dump_json(detail),
                now=now,
            )
            if row is None:
                return not_reconcilable(await existing_proposal(tx, proposal_id))
            audit: dict[str, JsonValue] = {"outcome": detail, "note": note}
            await tx.append_audit(now, proposal_id, actor, "reconciled", audit)
            return Transitioned(await enqueue_effects(tx, row, now))

    @finish_even_if_cancelled
    async def reclaim_abandoned(self, *, now: datetime, limit: int = 100) -> list[Proposal]:
        check_limit(limit, "proposals")
        outcome = dump_json(outcome_json(ABANDONED))
        async with self.tx(write=True) as tx:
            rows = await tx.all("reclaim_abandoned", now=now, limit=limit, outcome=outcome)
            reclaimed = []
            for row in sorted(rows, key=lambda r: (r["lease_until"], r["id"])):
                detail: dict[str, JsonValue] = {
                    "lease_until": read_time(row["lease_until"]).isoformat()
                }
                await tx.append_audit(now, row["id"], EXPIRY_ACTOR, "execution_abandoned", detail)
                reclaimed.append(await enqueue_effects(tx, row, now))
            return reclaimed

    @finish_even_if_cancelled
    async def reject(
        self, proposal_id: str, *, actor: str, reason: str, now: datetime
    ) -> TransitionResult:
        async with self.tx(write=True) as tx:
            row = await tx.one("reject", id=proposal_id, actor=actor, reason=reason, now=now)
            if row is None:
                return refusal(await existing_proposal(tx, proposal_id), now, None)
            await tx.append_audit(now, proposal_id, actor, "rejected", {"reason": reason})
            return Transitioned(await enqueue_effects(tx, row, now))

    @finish_even_if_cancelled
    async def supersede(
        self, old_id: str, new: NewProposal, *, actor: str, now: datetime
    ) -> TransitionResult:
        check_edit(old_id, new, actor=actor)
        async with self.tx(write=True) as tx:
            row = await tx.one("supersede", id=old_id, new_id=new.id, actor=actor, now=now)
            if row is None:
                return refusal(await existing_proposal(tx, old_id), now, None)
            old = await enqueue_effects(tx, row, now)
            await tx.append_audit(now, old_id, actor, "superseded", superseded_detail(new))
            inserted = await tx.one("insert_proposal", **insert_proposal_params(new))
            if inserted is None:  # the agent used this submission key: undo the transition
                found = await tx.one(
                    "select_submission", agent=new.agent, submission_key=new.submission_key
                )
                assert found is not None  # the row whose unique key refused the insert
                raise IdempotencyConflict(proposal_from_row(found))
            edit = edited_detail(old, new)
            return Transitioned(await submitted(tx, new, inserted, edit))

    @finish_even_if_cancelled
    async def record_outcome(
        self,
        proposal_id: str,
        outcome: Outcome,
        *,
        now: datetime,
        attempt: int = 1,
        executing: Proposal | None = None,
    ) -> Proposal:
        status, detail = OUTCOME_STATUS[outcome.kind], outcome_json(outcome)
        if self.appends_unsealed:  # the change, its audit and outbox entries: one statement
            async with self.lone_write() as tx:
                stored = dump_json(detail)  # the outcome, and its audit entry's detail
                row = await tx.one(
                    "record_outcome_at_once",
                    id=proposal_id,
                    attempt=attempt,
                    status=status.value,
                    outcome=stored,
                    now=now,
                    actor=EXECUTOR_ACTOR,
                    event="outcome",
                    detail=stored,
                    # JSON, not text[]: asyncpg encodes an array element by element
                    effects=dump_json([[e.value, lane_of(e)] for e in EFFECTS[status]]),
                )
                if row is None:
                    current = await existing_proposal(tx, proposal_id)
                    raise _no_outcome_while(current, outcome, attempt)
                tx.appended_unsealed(1)
                [proposal] = await with_approvals(tx, [proposal_known_from_row(row, executing)])
                return proposal
        async with self.tx(write=True) as tx:
            row = await tx.one(
                "record_outcome",
                id=proposal_id,
                attempt=attempt,
                status=status.value,
                outcome=dump_json(detail),
                now=now,
            )
            if row is None:
                current = await existing_proposal(tx, proposal_id)
                raise _no_outcome_while(current, outcome, attempt)
            await tx.append_audit(now, proposal_id, EXECUTOR_ACTOR, "outcome", detail)
            return await enqueue_effects(tx, row, now, executing)

    @finish_even_if_cancelled
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
        """The target ``answered`` after the proposal's execution was handed to a person:
        audit it (``late_outcome``) and show ``shown`` on its message instead of the outcome
        the caller ``read`` for ``attempt``, if the proposal still holds them. The status stays
        needs_reconciliation (a person still records what happened).

        The outcome read is compared as a model, not as text: a row written by an earlier
        version may spell the same outcome otherwise (without the fields added since). The
        update is then a compare-and-set on the very text this transaction read, so nothing
        written in between is overwritten."""
        detail: dict[str, JsonValue] = {
            "outcome": outcome_json(answered),
            "attempt": attempt if answered_attempt is None else answered_attempt,
        }
        async with self.tx(write=True) as tx:
            found = await tx.one("select_proposal", id=proposal_id)
            if found is None:
                raise ProposalNotFound(f"no proposal has id {proposal_id!r}")
            if await _late_answer_audited(tx, proposal_id, detail):
                [current] = await with_approvals(tx, [proposal_from_row(found)])
                return current
            stored = found["outcome"]
            if (
                found["status"] != Status.NEEDS_RECONCILIATION.value
                or found["attempt"] != attempt
                or stored is None
                or OUTCOMES.validate_json(stored) != read
            ):
                [current] = await with_approvals(tx, [proposal_from_row(found)])
                return StaleRead(current)
            row = await tx.one(
                "record_late_outcome",
                id=proposal_id,
                attempt=attempt,
                read=stored,
                outcome=dump_json(outcome_json(shown)),
            )
            if row is None:  # changed since this transaction read it (PostgreSQL)
                return StaleRead(await existing_proposal(tx, proposal_id))
            await tx.append_audit(now, proposal_id, EXECUTOR_ACTOR, "late_outcome", detail)
            [proposal] = await with_approvals(tx, [proposal_from_row(row)])
            await enqueue(tx, proposal, (Effect.SLACK_UPDATE,), now)
            return proposal

    @finish_even_if_cancelled
    async def audit_late_outcome(
        self, proposal_id: str, answered: Outcome, *, attempt: int, now: datetime
    ) -> None:
        async with self.tx(write=True) as tx:
            # the proposal's row held (PostgreSQL) until this commits: the same answer audited
            # by another instance at once waits here, then reads this one's entry
            if await tx.one("lock_proposal", id=proposal_id) is None:
                raise ProposalNotFound(f"no proposal has id {proposal_id!r}")
            detail: dict[str, JsonValue] = {"outcome": outcome_json(answered), "attempt": attempt}
            if not await _late_answer_audited(tx, proposal_id, detail):
                await tx.append_audit(now, proposal_id, EXECUTOR_ACTOR, "late_outcome", detail)

    @finish_even_if_cancelled
    async def expire_due(self, *, now: datetime, limit: int = 100) -> list[Proposal]:
        check_limit(limit, "proposals")
        async with self.tx(write=True) as tx:
            rows = await tx.all("expire_due", now=now, limit=limit)
            expired = []
            for row in sorted(rows, key=lambda r: (r["expires_at"], r["id"])):
                proposal = await enqueue_effects(tx, row, now)
                assert proposal.expires_at is not None  # only proposals with an expiry expire
                detail: dict[str, JsonValue] = {"expires_at": proposal.expires_at.isoformat()}
                await tx.append_audit(now, proposal.id, EXPIRY_ACTOR, "expired", detail)
                expired.append(proposal)
            return expired


async def _late_answer_audited(tx: Tx, proposal_id: str, detail: Mapping[str, JsonValue]) -> bool:
    """Whether this late answer (its outcome and the attempt it answers) is in the proposal's
    audit log already, sealed or not: its first try committed and the reply was lost, or the
    target answered twice alike. Late answers are rare; a proposal has few entries."""
    rows = await tx.all("select_late_answers", proposal_id=proposal_id)
    return any(json.loads(row["detail"]) == detail for row in rows)
