"""The proposal lifecycle against a real SQLite store, driven by a hypothesis state machine.

Proposals are submitted (asked, denied, auto-approved), claimed by anyone with the right or a
wrong binding hash (also several at once), rejected, given outcomes of every kind, expired as the
clock moves, abandoned past their lease, retried and reconciled. A model predicts each answer; the
invariants: at most one claim wins, every status is reachable from an initial one through
``TRANSITIONS``, each transition has exactly one audit entry of its event, the chain verifies.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from contracts.outcomes import Outcome, Succeeded, TerminalFailure
from store.proposals import (
    INITIAL,
    OUTCOME_STATUS,
    TRANSITIONS,
    InvalidTransition,
    Status,
    Transitioned,
)
from store.sqlite import SqliteStore
from tests.store.conformance import LEASE, OUTCOME_EXAMPLES, new_proposal

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
PEOPLE = st.sampled_from(["U0ALICE", "U0BOB", "U0CAROL", "U0DAN"])

#: The audit events of a proposal created in each initial status.
CREATED_EVENTS = {
    Status.PENDING: ["submitted"],
    Status.DENIED: ["submitted", "denied"],
    Status.EXECUTING: ["submitted", "auto_approved"],
}


def _reachable() -> set[Status]:
    seen, frontier = set(INITIAL), list(INITIAL)
    while frontier:
        for following in TRANSITIONS[frontier.pop()]:
            if following not in seen:
                seen.add(following)
                frontier.append(following)
    return seen


REACHABLE = _reachable()


@dataclass
class Expected:
    """What the model knows of one proposal."""

    status: Status
    binding_hash: str
    expires_at: datetime | None
    lease_until: datetime | None
    events: list[str] = field(default_factory=list)
    history: list[Status] = field(default_factory=list)
    #: the execution attempt running or last run (a retry starts the next); 0 before any
    attempt: int = 0


class Lifecycle(RuleBasedStateMachine):
    proposals = Bundle("proposals")

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.directory = Path(tempfile.mkdtemp(prefix="lifecycle-"))
        self.store = self.run(SqliteStore.open(self.directory / "store.sqlite", durable=False))
        self.now = START
        self.model: dict[str, Expected] = {}

    def run(self, coroutine):  # type: ignore[no-untyped-def]
        return self.loop.run_until_complete(coroutine)

    def teardown(self) -> None:
        self.run(self.store.close())
        self.loop.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def moved(self, proposal_id: str, status: Status, event: str) -> None:
        expected = self.model[proposal_id]
        assert status in TRANSITIONS[expected.status], (expected.status, status)
        expected.status = status
        expected.events.append(event)
        expected.history.append(status)

    # --- rules --------------------------------------------------------------------------------

    @initialize(target=proposals)
    def first(self) -> str:
        return self.submit(Status.PENDING, 60)

    @rule(target=proposals, status=st.sampled_from(sorted(INITIAL)), minutes=st.integers(1, 120))
    def submit(self, status: Status, minutes: int) -> str:
        changes: dict[str, object] = {"status": status, "created_at": self.now}
        changes["expires_at"] = (
            self.now + timedelta(minutes=minutes) if status is Status.PENDING else None
        )
        if status is Status.EXECUTING:
            changes["lease_until"] = self.now + LEASE
        new = new_proposal(self.now, **changes)
        stored, created = self.run(self.store.create_proposal(new))
        assert created and stored.status is status
        self.model[new.id] = Expected(
            status,
            new.binding_hash,
            new.expires_at,
            new.lease_until,
            list(CREATED_EVENTS[status]),
            [status],
            attempt=1 if status is Status.EXECUTING else 0,
        )
        return new.id

    @rule(proposal=proposals, actor=PEOPLE, right_hash=st.booleans())
    def claim(self, proposal: str, actor: str, right_hash: bool) -> None:
        self.claim_together(proposal, [actor], right_hash)

    @rule(
        proposal=proposals,
        actors=st.lists(PEOPLE, min_size=2, max_size=6),
        right_hash=st.booleans(),
    )
    def claim_together(self, proposal: str, actors: list[str], right_hash: bool) -> None:
        expected = self.model[proposal]
        binding = expected.binding_hash if right_hash else "0" * 64
        lease = self.now + LEASE

        async def all_at_once() -> list[object]:
            return await asyncio.gather(
                *(
                    self.store.claim_for_execution(
                        proposal, actor=a, now=self.now, binding_hash=binding, lease_until=lease
                    )
                    for a in actors
                )
            )

        results = self.run(all_at_once())
        winners = [r for r in results if isinstance(r, Transitioned)]
        claimable = (
            expected.status is Status.PENDING
            and right_hash
            and (expected.expires_at is None or self.now < expected.expires_at)
        )
        assert len(winners) == (1 if claimable else 0), (expected.status, right_hash, results)
        if winners:
            self.moved(proposal, Status.EXECUTING, "approved")
            expected.lease_until = lease
            expected.attempt = 1

    @rule(proposal=proposals, actor=PEOPLE)
    def reject(self, proposal: str, actor: str) -> None:
        expected = self.model[proposal]
        result = self.run(self.store.reject(proposal, actor=actor, reason="no", now=self.now))
        rejectable = expected.status is Status.PENDING and (
            expected.expires_at is None or self.now < expected.expires_at
        )
        assert isinstance(result, Transitioned) == rejectable
        if rejectable:
            self.moved(proposal, Status.REJECTED, "rejected")

    @rule(proposal=proposals, outcome=st.sampled_from(OUTCOME_EXAMPLES), stale=st.booleans())
    def record_outcome(self, proposal: str, outcome: Outcome, stale: bool) -> None:
        """The outcome of the attempt running, or (``stale``) of the one before it, whose
        answer came too late: only the running attempt's is recorded."""
        expected = self.model[proposal]
        attempt = expected.attempt - 1 if stale else expected.attempt
        try:
            stored = self.run(
                self.store.record_outcome(proposal, outcome, now=self.now, attempt=attempt)
            )
        except InvalidTransition:
            assert expected.status is not Status.EXECUTING or stale
            return
        assert expected.status is Status.EXECUTING and not stale
        assert stored.status is OUTCOME_STATUS[outcome.kind]
        self.moved(proposal, stored.status, "outcome")

    @rule(minutes=st.integers(1, 90))
    def advance_and_sweep(self, minutes: int) -> None:
        """The clock moves on; the sweeps expire pending and reclaim abandoned executions."""
        self.now += timedelta(minutes=minutes)
        expired = self.run(self.store.expire_due(now=self.now, limit=1000))
        due = {
            pid
            for pid, e in self.model.items()
            if e.status is Status.PENDING and e.expires_at is not None and e.expires_at <= self.now
        }
        assert {p.id for p in expired} == due
        for pid in due:
            self.moved(pid, Status.EXPIRED, "expired")
        reclaimed = self.run(self.store.reclaim_abandoned(now=self.now, limit=1000))
        abandoned = {
            pid
            for pid, e in self.model.items()
            if e.status is Status.EXECUTING
            and e.lease_until is not None
            and e.lease_until <= self.now
        }
        assert {p.id for p in reclaimed} == abandoned
        for pid in abandoned:
            self.moved(pid, Status.NEEDS_RECONCILIATION, "execution_abandoned")

    @rule(proposal=proposals, actor=PEOPLE)
    def retry(self, proposal: str, actor: str) -> None:
        expected = self.model[proposal]
        lease = self.now + LEASE
        result = self.run(
            self.store.retry_execution(proposal, actor=actor, now=self.now, lease_until=lease)
        )
        assert isinstance(result, Transitioned) == (expected.status is Status.NEEDS_RECONCILIATION)
        if isinstance(result, Transitioned):
            self.moved(proposal, Status.EXECUTING, "retry_approved")
            expected.lease_until = lease
            expected.attempt += 1

    @rule(
        proposal=proposals,
        actor=PEOPLE,
        outcome=st.sampled_from(
            [Succeeded(result={"checked": True}), TerminalFailure(detail="no", correlation_id="c")]
        ),
    )
    def reconcile(self, proposal: str, actor: str, outcome: Outcome) -> None:
        expected = self.model[proposal]
        result = self.run(
            self.store.resolve_reconciliation(
                proposal, actor=actor, outcome=outcome, note="checked", now=self.now
            )
        )
        assert isinstance(result, Transitioned) == (expected.status is Status.NEEDS_RECONCILIATION)
        if isinstance(result, Transitioned):
            self.moved(proposal, OUTCOME_STATUS[outcome.kind], "reconciled")

    # --- invariants ---------------------------------------------------------------------------

    @invariant()
    def store_agrees_with_the_model_and_every_transition_is_audited_once(self) -> None:
        for proposal_id, expected in self.model.items():
            stored = self.run(self.store.get_proposal(proposal_id))
            assert stored.status is expected.status
            assert stored.status in REACHABLE
            assert expected.history[0] in INITIAL
            for before, after in zip(expected.history, expected.history[1:], strict=False):
                assert after in TRANSITIONS[before]
            events = [e.event for e in self.run(self.store.audit_log(proposal_id))]
            assert events == expected.events

    @invariant()
    def the_audit_chain_verifies(self) -> None:
        report = self.run(self.store.verify_audit())
        assert report.ok, report.problem


Lifecycle.TestCase.settings = settings(max_examples=100, stateful_step_count=30, deadline=None)
test_proposal_lifecycle = Lifecycle.TestCase
