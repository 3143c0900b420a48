"""The behaviour every Store backend must have, written against the Store protocol only.

A backend's test module subclasses :class:`StoreConformance` and provides a ``store`` fixture that
yields an empty store; everything else here is shared.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import JsonValue

from contracts.base import Preview, PreviewField
from contracts.canonical import binding_hash
from contracts.outcomes import (
    OUTCOMES,
    NeedsReconciliation,
    Outcome,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)
from store.audit import entry_hash
from store.proposals import (
    INITIAL,
    OUTCOME_STATUS,
    AlreadyDecided,
    Effect,
    IdempotencyConflict,
    InvalidTransition,
    NewProposal,
    NotApprovable,
    Proposal,
    ProposalNotFound,
    StaleRead,
    Status,
    Transitioned,
)
from store.protocol import Store
from tests.store.cancel_conformance import CancelConformance
from tests.store.click_conformance import ClickConformance
from tests.store.pending_conformance import PendingConformance
from tests.store.reminder_conformance import ReminderConformance
from tests.store.standing_conformance import StandingConformance

__all__ = ["LEASE", "OUTCOME_EXAMPLES", "StoreConformance", "new_proposal", "store_waiting"]

#: One outcome of every kind.
OUTCOME_EXAMPLES: tuple[Outcome, ...] = (
    Succeeded(result={"refund_id": "re_123", "amount_cents": 4200, "items": [1, 2.5, None]}),
    NeedsReconciliation(detail="timeout after the request was sent", correlation_id="corr-1"),
    RevisionRequired(reason="the payment was already refunded"),
    TerminalFailure(detail="card processor says: account closed", correlation_id="corr-2"),
)


#: How long a claim in these tests lets its executor take.
LEASE = timedelta(minutes=5)


def new_proposal(now: datetime, **changes: Any) -> NewProposal:
    """A pending proposal asked of a person, expiring in an hour; ``changes`` override fields."""
    arguments = {"payment_id": "pay_42", "amount_cents": 4200, "note": "dup charge ✓"}
    preview = Preview(
        title="Refund 42.00 EUR",
        fields=(PreviewField(label="Payment", value="pay_42"), PreviewField(label="€", value="42")),
    )
    fields: dict[str, Any] = {
        "id": secrets.token_hex(16),
        "agent": "billing-agent",
        "submission_key": secrets.token_hex(8),
        "submission_fingerprint": "fp-1",
        "requested_by": "U0123",
        "run_id": "run-7",
        "operation": "payments.refund",
        "request": {"payment": "pay_42", "amount": "42.00", "tags": ["a", "b"], "flag": True},
        "arguments": arguments,
        "preview": preview,
        "binding_hash": binding_hash("payments.refund", arguments, preview.model_dump(mode="json")),
        "agent_reason": "The customer was charged twice.",
        "callback_url": "http://127.0.0.1:9/callback",
        "rule_id": "refunds-ask",
        "decision": "ask",
        "policy_note": "amount_cents > 1000",
        "approver_roles": ("finance", "support-leads"),
        "channel": "C0FINANCE",
        "status": Status.PENDING,
        "created_at": now,
        "expires_at": now + timedelta(hours=1),
    }
    fields.update(changes)
    if fields["status"] is Status.EXECUTING and "lease_until" not in changes:
        fields["lease_until"] = fields["created_at"] + LEASE
    return NewProposal(**fields)


async def events(store: Store, proposal_id: str) -> list[str]:
    return [entry.event for entry in await store.audit_log(proposal_id)]


def _edit_of(old_id: str, now: datetime, **changes: Any) -> NewProposal:
    """An edit of ``old_id`` by U0EDITOR: a new pending proposal that supersedes it."""
    fields: dict[str, Any] = {
        "submission_key": f"edit:{old_id}",
        "supersedes": old_id,
        "edited_by": "U0EDITOR",
        "request": {"payment": "pay_42", "amount": "40.00"},
        "arguments": {"payment_id": "pay_42", "amount_cents": 4000},
    }
    return new_proposal(now, **{**fields, **changes})


async def _drain(store: Store, now: datetime) -> list[tuple[str, Effect, Status]]:
    """Deliver every due outbox entry (in order within each lane); what was delivered."""
    delivered: list[tuple[str, Effect, Status]] = []
    while batch := await store.claim_deliveries(now=now, limit=100, lease=LEASE):
        for delivery in batch:
            delivered.append((delivery.proposal_id, delivery.effect, delivery.status))
            await store.complete_delivery(delivery.id, now=now)
    return delivered


class StoreConformance(
    PendingConformance,
    ReminderConformance,
    StandingConformance,
    CancelConformance,
    ClickConformance,
):
    """Subclass with a ``store`` fixture yielding an empty store of the backend under test."""

    @pytest.fixture
    def now(self) -> datetime:
        return datetime(2031, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)

    # --- creating and reading ----------------------------------------------------------------

    async def test_created_proposal_reads_back_with_every_field(
        self, store: Store, now: datetime
    ) -> None:
        # Another offset than UTC: the same instants must come back.
        local = now.astimezone(timezone(timedelta(hours=5, minutes=30)))
        new = new_proposal(local, expires_at=local + timedelta(minutes=90))

        created, was_created = await store.create_proposal(new)
        stored = await store.get_proposal(new.id)

        assert was_created
        assert stored == created
        # the same instants in the same zone (UTC), so every answer and message reads the same
        assert created.model_dump_json() == stored.model_dump_json()
        assert stored.model_dump(include=set(NewProposal.model_fields)) == new.model_dump()
        assert stored.approver_roles == ("finance", "support-leads")
        assert stored.created_at == now
        assert stored.updated_at == now
        assert (stored.slack_channel, stored.slack_ts, stored.outcome) == (None, None, None)
        assert (stored.decided_by, stored.decided_at, stored.decision_note) == (None, None, None)

    async def test_optional_fields_left_empty_read_back_empty(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(
            now,
            run_id=None,
            agent_reason=None,
            callback_url=None,
            rule_id=None,
            approver_roles=(),
            channel=None,
            expires_at=None,
            request=None,
            arguments={},
            preview=Preview(title="Nothing to show"),
        )
        await store.create_proposal(new)

        stored = await store.get_proposal(new.id)

        assert stored.model_dump(include=set(NewProposal.model_fields)) == new.model_dump()

    @pytest.mark.parametrize("outcome", OUTCOME_EXAMPLES, ids=lambda o: o.kind)
    async def test_outcome_of_each_kind_reads_back_and_sets_its_status(
        self, store: Store, now: datetime, outcome: Outcome
    ) -> None:
        new = new_proposal(now)
        await store.create_proposal(new)
        await store.claim_for_execution(
            new.id,
            actor="U0APPROVER",
            now=now,
            binding_hash=new.binding_hash,
            lease_until=now + LEASE,
        )

        returned = await store.record_outcome(new.id, outcome, now=now + timedelta(seconds=3))
        stored = await store.get_proposal(new.id)

        assert returned == stored
        assert stored.outcome == outcome
        assert stored.status is OUTCOME_STATUS[outcome.kind]
        assert stored.updated_at == now + timedelta(seconds=3)
        last = (await store.audit_log(new.id))[-1]
        assert (last.event, last.detail) == ("outcome", OUTCOMES.dump_python(outcome, mode="json"))

    @pytest.mark.parametrize("outcome", OUTCOME_EXAMPLES, ids=lambda o: o.kind)
    async def test_outcome_built_over_the_claimed_proposal_is_what_a_fresh_read_gives(
        self, store: Store, now: datetime, outcome: Outcome
    ) -> None:
        new = new_proposal(now, expires_at=now + timedelta(hours=1), quorum=2)
        await store.create_proposal(new)
        for approver in ("U0FIRST", "U0APPROVER"):  # a quorum of two: approvals to carry
            claimed = await store.claim_for_execution(
                new.id,
                actor=approver,
                now=now,
                binding_hash=new.binding_hash,
                lease_until=now + LEASE,
            )
        assert isinstance(claimed, Transitioned)
        # changed while it executes: what was claimed is no longer all of it
        await store.attach_message(new.id, "C0POSTED", "1700000000.000100")

        returned = await store.record_outcome(
            new.id,
            outcome,
            now=now + timedelta(seconds=3),
            attempt=claimed.proposal.attempt,
            executing=claimed.proposal,
        )
        stored = await store.get_proposal(new.id)

        assert returned == stored
        assert returned.model_dump_json() == stored.model_dump_json()
        assert (returned.slack_channel, returned.slack_ts) == ("C0POSTED", "1700000000.000100")
        assert {a.approver for a in returned.approvals} >= {"U0FIRST"}
        assert returned.outcome == outcome

    async def test_outcome_given_another_proposal_as_executing_reads_its_own_row(
        self, store: Store, now: datetime
    ) -> None:
        other = new_proposal(now)
        new = new_proposal(now)
        for proposal in (other, new):
            await store.create_proposal(proposal)
            await store.claim_for_execution(
                proposal.id,
                actor="U0APPROVER",
                now=now,
                binding_hash=proposal.binding_hash,
                lease_until=now + LEASE,
            )
        wrong = await store.get_proposal(other.id)

        returned = await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=now, executing=wrong)

        assert returned == await store.get_proposal(new.id)
        assert returned.id == new.id

    async def test_unknown_id_raises_proposal_not_found_from_every_verb(
        self, store: Store, now: datetime
    ) -> None:
        with pytest.raises(ProposalNotFound, match="nope"):
            await store.get_proposal("nope")
        with pytest.raises(ProposalNotFound):
            await store.attach_message("nope", "C1", "1.2")
        with pytest.raises(ProposalNotFound):
            await store.claim_for_execution(
                "nope", actor="U1", now=now, binding_hash="h", lease_until=now + LEASE
            )
        with pytest.raises(ProposalNotFound):
            await store.reject("nope", actor="U1", reason="no", now=now)
        with pytest.raises(ProposalNotFound):
            await store.record_outcome("nope", OUTCOME_EXAMPLES[0], now=now)
        assert await store.audit_log() == []

    @pytest.mark.parametrize("status", sorted(set(Status) - INITIAL))
    async def test_create_refuses_a_status_that_is_not_initial(
        self, store: Store, now: datetime, status: Status
    ) -> None:
        new = new_proposal(now, status=status)

        with pytest.raises(InvalidTransition, match=status.value):
            await store.create_proposal(new)

        with pytest.raises(ProposalNotFound):
            await store.get_proposal(new.id)
        assert await store.audit_log() == []

    # --- idempotent submission ---------------------------------------------------------------

    async def test_replay_with_same_fingerprint_returns_the_stored_proposal(
        self, store: Store, now: datetime
    ) -> None:
        first = new_proposal(now, submission_key="key-1")
        replay = new_proposal(now + timedelta(seconds=5), submission_key="key-1")
        stored, _ = await store.create_proposal(first)

        again, created = await store.create_proposal(replay)

        assert not created
        assert again == stored
        with pytest.raises(ProposalNotFound):
            await store.get_proposal(replay.id)
        assert await events(store, first.id) == ["submitted"]
        assert len(await store.audit_log()) == 1

    async def test_replay_with_another_fingerprint_raises_conflict_naming_the_stored_one(
        self, store: Store, now: datetime
    ) -> None:
        first = new_proposal(now, submission_key="key-1")
        stored, _ = await store.create_proposal(first)
        other = new_proposal(now, submission_key="key-1", submission_fingerprint="fp-2")

        with pytest.raises(IdempotencyConflict) as raised:
            await store.create_proposal(other)

        assert raised.value.existing == stored
        assert len(await store.audit_log()) == 1

    async def test_concurrent_replays_store_one_proposal(self, store: Store, now: datetime) -> None:
        submissions = [new_proposal(now, submission_key="key-1") for _ in range(10)]

        answers = await asyncio.gather(*(store.create_proposal(s) for s in submissions))

        assert sum(created for _, created in answers) == 1
        assert len({proposal.id for proposal, _ in answers}) == 1
        assert len(await store.audit_log()) == 1

    async def test_same_submission_key_of_another_agent_is_another_proposal(
        self, store: Store, now: datetime
    ) -> None:
        await store.create_proposal(new_proposal(now, submission_key="key-1"))

        _, created = await store.create_proposal(
            new_proposal(now, submission_key="key-1", agent="ops-agent", submission_fingerprint="x")
        )

        assert created

    async def test_find_submission_finds_only_the_agents_own_key(
        self, store: Store, now: datetime
    ) -> None:
        stored, _ = await store.create_proposal(new_proposal(now, submission_key="key-1"))

        assert await store.find_submission(stored.agent, "key-1") == stored
        assert await store.find_submission(stored.agent, "key-2") is None
        assert await store.find_submission("ops-agent", "key-1") is None

    # --- the policy's own decisions ----------------------------------------------------------

    async def test_policy_ask_writes_only_submitted(self, store: Store, now: datetime) -> None:
        new = new_proposal(now)
        await store.create_proposal(new)

        [entry] = await store.audit_log(new.id)

        assert (entry.event, entry.actor, entry.at) == ("submitted", "billing-agent", now)
        assert entry.detail == {
            "operation": "payments.refund",
            "decision": "ask",
            "rule_id": "refunds-ask",
            "status": "pending",
        }

    async def test_policy_auto_creates_executing_with_auto_approved_entry(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now, decision="auto", status=Status.EXECUTING, policy_note="small")
        stored, _ = await store.create_proposal(new)

        entries = await store.audit_log(new.id)

        assert stored.status is Status.EXECUTING
        assert [e.event for e in entries] == ["submitted", "auto_approved"]
        assert entries[1].detail == {"rule_id": "refunds-ask", "policy_note": "small"}

    async def test_policy_deny_creates_denied_with_the_policy_note(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now, decision="deny", status=Status.DENIED, policy_note="too large")
        stored, _ = await store.create_proposal(new)

        entries = await store.audit_log(new.id)

        assert stored.status is Status.DENIED
        assert [e.event for e in entries] == ["submitted", "denied"]
        assert entries[1].detail["policy_note"] == "too large"

    # --- claiming ----------------------------------------------------------------------------

    async def test_claim_moves_pending_to_executing_and_records_who_and_when(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now)
        await store.create_proposal(new)
        later = now + timedelta(minutes=2)

        result = await store.claim_for_execution(
            new.id,
            actor="U0APPROVER",
            now=later,
            binding_hash=new.binding_hash,
            lease_until=later + LEASE,
        )

        assert isinstance(result, Transitioned)
        assert result.proposal == await store.get_proposal(new.id)
        assert result.proposal.status is Status.EXECUTING
        assert (result.proposal.decided_by, result.proposal.decided_at) == ("U0APPROVER", later)
        last = (await store.audit_log(new.id))[-1]
        assert (last.event, last.actor, last.at) == ("approved", "U0APPROVER", later)

    async def test_twenty_concurrent_claims_make_exactly_one_executor(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now)
        await store.create_proposal(new)

        results = await asyncio.gather(
            *(
                store.claim_for_execution(
                    new.id,
                    actor=f"U{i:03d}",
                    now=now,
                    binding_hash=new.binding_hash,
                    lease_until=now + LEASE,
                )
                for i in range(20)
            )
        )

        winners = [r for r in results if isinstance(r, Transitioned)]
        losers = [r for r in results if isinstance(r, AlreadyDecided)]
        assert (len(winners), len(losers)) == (1, 19)
        winner = winners[0].proposal.decided_by
        assert all(loser.proposal.decided_by == winner for loser in losers)
        assert await events(store, new.id) == ["submitted", "approved"]

    async def test_claim_after_expiry_is_not_approvable_and_changes_nothing(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now, expires_at=now + timedelta(minutes=5))
        before, _ = await store.create_proposal(new)

        result = await store.claim_for_execution(
            new.id,
            actor="U1",
            now=now + timedelta(minutes=5),
            binding_hash=new.binding_hash,
            lease_until=now + timedelta(minutes=5) + LEASE,
        )

        assert isinstance(result, NotApprovable)
        assert "expired" in result.reason
        assert await store.get_proposal(new.id) == before
        assert await events(store, new.id) == ["submitted"]

    async def test_claim_with_another_binding_hash_is_not_approvable(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now)
        before, _ = await store.create_proposal(new)

        result = await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash="0" * 64, lease_until=now + LEASE
        )

        assert isinstance(result, NotApprovable)
        assert "binding hash" in result.reason
        assert await store.get_proposal(new.id) == before
        assert await events(store, new.id) == ["submitted"]

    async def test_claim_of_a_denied_proposal_is_already_decided(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now, decision="deny", status=Status.DENIED)
        await store.create_proposal(new)

        result = await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
        )

        assert isinstance(result, AlreadyDecided)
        assert result.proposal.status is Status.DENIED

    # --- rejecting ---------------------------------------------------------------------------

    async def test_reject_records_who_when_and_why(self, store: Store, now: datetime) -> None:
        new = new_proposal(now)
        await store.create_proposal(new)

        result = await store.reject(new.id, actor="U2", reason="wrong customer", now=now)

        assert isinstance(result, Transitioned)
        stored = await store.get_proposal(new.id)
        assert stored == result.proposal
        assert stored.status is Status.REJECTED
        assert (stored.decided_by, stored.decided_at, stored.decision_note) == (
            "U2",
            now,
            "wrong customer",
        )
        last = (await store.audit_log(new.id))[-1]
        assert (last.event, last.actor, last.detail) == (
            "rejected",
            "U2",
            {"reason": "wrong customer"},
        )

    async def test_reject_after_expiry_is_not_approvable(self, store: Store, now: datetime) -> None:
        new = new_proposal(now, expires_at=now + timedelta(seconds=1))
        before, _ = await store.create_proposal(new)

        result = await store.reject(new.id, actor="U2", reason="x", now=now + timedelta(hours=1))

        assert isinstance(result, NotApprovable)
        assert "expired" in result.reason
        assert await store.get_proposal(new.id) == before

    async def test_reject_after_a_claim_says_who_decided(self, store: Store, now: datetime) -> None:
        new = new_proposal(now)
        await store.create_proposal(new)
        await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
        )

        result = await store.reject(new.id, actor="U2", reason="late", now=now)

        assert isinstance(result, AlreadyDecided)
        assert (result.proposal.status, result.proposal.decided_by) == (Status.EXECUTING, "U1")
        assert await events(store, new.id) == ["submitted", "approved"]

    async def test_reject_and_claim_racing_leave_exactly_one_decision(
        self, store: Store, now: datetime
    ) -> None:
        for round_ in range(6):
            new = new_proposal(now)
            await store.create_proposal(new)
            claim = store.claim_for_execution(
                new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
            )
            reject = store.reject(new.id, actor="U2", reason="no", now=now)
            pair = (claim, reject) if round_ % 2 else (reject, claim)

            results = await asyncio.gather(*pair)

            assert sorted(type(r).__name__ for r in results) == ["AlreadyDecided", "Transitioned"]
            [won] = [r for r in results if isinstance(r, Transitioned)]
            stored = await store.get_proposal(new.id)
            assert stored.status is won.proposal.status
            decisions = [e for e in await events(store, new.id) if e in ("approved", "rejected")]
            assert decisions == ["approved" if stored.status is Status.EXECUTING else "rejected"]

    # --- outcomes ----------------------------------------------------------------------------

    async def test_outcome_of_a_pending_proposal_is_an_invalid_transition(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now)
        before, _ = await store.create_proposal(new)

        with pytest.raises(InvalidTransition, match="pending"):
            await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=now)

        assert await store.get_proposal(new.id) == before

    async def test_second_outcome_is_an_invalid_transition_naming_the_first(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now, decision="auto", status=Status.EXECUTING)
        await store.create_proposal(new)
        await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=now)

        with pytest.raises(InvalidTransition, match="succeeded"):
            await store.record_outcome(new.id, OUTCOME_EXAMPLES[3], now=now)

        stored = await store.get_proposal(new.id)
        assert (stored.status, stored.outcome) == (Status.SUCCEEDED, OUTCOME_EXAMPLES[0])
        assert await events(store, new.id) == ["submitted", "auto_approved", "outcome"]

    # --- expiry ------------------------------------------------------------------------------

    async def test_expire_due_expires_only_overdue_pending_proposals_once(
        self, store: Store, now: datetime
    ) -> None:
        past = now - timedelta(minutes=1)
        overdue = [new_proposal(now - timedelta(hours=2), expires_at=past) for _ in range(2)]
        at_deadline = new_proposal(now - timedelta(hours=2), expires_at=now)
        future = new_proposal(now, expires_at=now + timedelta(seconds=1))
        never = new_proposal(now, expires_at=None)
        executing = new_proposal(
            now - timedelta(hours=2), decision="auto", status=Status.EXECUTING, expires_at=past
        )
        rejected = new_proposal(now - timedelta(hours=2), expires_at=past + timedelta(seconds=30))
        for new in [*overdue, at_deadline, future, never, executing, rejected]:
            await store.create_proposal(new)
        await store.reject(rejected.id, actor="U1", reason="no", now=now - timedelta(hours=1))

        expired = await store.expire_due(now=now)
        again = await store.expire_due(now=now)

        expected = {p.id for p in [*overdue, at_deadline]}
        assert {p.id for p in expired} == expected
        assert all(p.status is Status.EXPIRED and p.updated_at == now for p in expired)
        assert again == []
        for new in [future, never, executing, rejected]:
            assert (await store.get_proposal(new.id)).status is not Status.EXPIRED
        expiry_entries = [e for e in await store.audit_log() if e.event == "expired"]
        assert sorted(e.proposal_id or "" for e in expiry_entries) == sorted(expected)

    async def test_expire_due_takes_at_most_limit(self, store: Store, now: datetime) -> None:
        for _ in range(5):
            await store.create_proposal(new_proposal(now, expires_at=now - timedelta(seconds=1)))

        first = await store.expire_due(now=now, limit=3)
        rest = await store.expire_due(now=now, limit=3)

        assert (len(first), len(rest)) == (3, 2)
        assert not {p.id for p in first} & {p.id for p in rest}

    async def test_concurrent_expiry_sweeps_expire_each_proposal_once(
        self, store: Store, now: datetime
    ) -> None:
        for _ in range(8):
            await store.create_proposal(new_proposal(now, expires_at=now - timedelta(seconds=1)))

        sweeps = await asyncio.gather(*(store.expire_due(now=now) for _ in range(4)))

        expired_ids = [p.id for sweep in sweeps for p in sweep]
        assert len(expired_ids) == len(set(expired_ids)) == 8
        assert sum(e.event == "expired" for e in await store.audit_log()) == 8

    async def test_claim_after_the_sweep_is_already_decided(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now, expires_at=now)
        await store.create_proposal(new)
        await store.expire_due(now=now)

        result = await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
        )

        assert isinstance(result, AlreadyDecided)
        assert result.proposal.status is Status.EXPIRED

    # --- Slack message and audit log ---------------------------------------------------------

    async def test_attach_message_remembers_the_slack_message(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now)
        await store.create_proposal(new)

        returned = await store.attach_message(new.id, "C0FINANCE", "1700000000.000100")

        stored = await store.get_proposal(new.id)
        assert returned == stored
        assert (stored.slack_channel, stored.slack_ts) == ("C0FINANCE", "1700000000.000100")
        assert stored.status is Status.PENDING
        last = (await store.audit_log(new.id))[-1]
        assert (last.event, last.detail) == (
            "posted_to_slack",
            {"channel": "C0FINANCE", "ts": "1700000000.000100"},
        )
        assert stored.shown_at == last.at  # people were shown it when the post was recorded

    async def test_shown_at_is_the_first_post_and_stays_when_the_message_is_placed_again(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now)
        await store.create_proposal(new)
        assert (await store.get_proposal(new.id)).shown_at is None  # created: not shown

        first = await store.attach_message(new.id, "C0FINANCE", "1700000000.000100")
        again = await store.attach_message(new.id, "C0FINANCE", "1700000000.000200")

        assert first.shown_at is not None
        assert again.slack_ts == "1700000000.000200" and again.shown_at == first.shown_at
        assert (await store.get_proposal(new.id)).shown_at == first.shown_at

    async def test_every_transition_writes_exactly_one_audit_entry_of_its_event(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now)
        steps: list[tuple[str, Any]] = [
            ("submitted", lambda: store.create_proposal(new)),
            ("posted_to_slack", lambda: store.attach_message(new.id, "C1", "1.1")),
            (
                "approved",
                lambda: store.claim_for_execution(
                    new.id,
                    actor="U1",
                    now=now,
                    binding_hash=new.binding_hash,
                    lease_until=now + LEASE,
                ),
            ),
            ("outcome", lambda: store.record_outcome(new.id, OUTCOME_EXAMPLES[1], now=now)),
        ]
        for event, step in steps:
            before = await store.audit_log()

            await step()

            after = await store.audit_log()
            assert after[: len(before)] == before
            assert [(e.event, e.proposal_id) for e in after[len(before) :]] == [(event, new.id)]

    async def test_refused_transitions_write_no_audit_entry(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now, expires_at=now + timedelta(minutes=1))
        await store.create_proposal(new)
        late = now + timedelta(minutes=1)
        before = await store.audit_log()

        await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash="bad", lease_until=now + LEASE
        )
        await store.claim_for_execution(
            new.id, actor="U1", now=late, binding_hash="bad", lease_until=late + LEASE
        )
        await store.reject(new.id, actor="U1", reason="x", now=late)
        with pytest.raises(InvalidTransition):
            await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=now)

        assert await store.audit_log() == before

    async def test_record_event_appends_an_entry_without_a_transition(
        self, store: Store, now: datetime
    ) -> None:
        new = new_proposal(now)
        before, _ = await store.create_proposal(new)
        detail: dict[str, Any] = {"user": "U9", "why": "not an approver", "n": [1, 2.5, None]}

        entry = await store.record_event(
            new.id, actor="U9", event="click_refused", detail=detail, now=now
        )
        unattached = await store.record_event(
            None, actor="bot", event="slack_post_failed", detail={}, now=now
        )
        unknown = await store.record_event(
            "no-such-id", actor="U9", event="click_refused", detail={}, now=now
        )

        assert (entry.event, entry.actor, entry.detail, entry.at) == (
            "click_refused",
            "U9",
            detail,
            now,
        )
        assert (unattached.proposal_id, unknown.proposal_id) == (None, "no-such-id")
        assert [e.seq for e in await store.audit_log()] == [1, 2, 3, 4]
        assert await store.get_proposal(new.id) == before

    async def test_audit_log_of_one_proposal_is_in_chain_order(
        self, store: Store, now: datetime
    ) -> None:
        first, second = new_proposal(now), new_proposal(now)
        await store.create_proposal(first)
        await store.create_proposal(second)
        await store.reject(second.id, actor="U1", reason="no", now=now)
        await store.attach_message(first.id, "C1", "1.1")
        await store.reject(first.id, actor="U1", reason="no", now=now)

        entries = await store.audit_log(first.id)

        assert [e.event for e in entries] == ["submitted", "posted_to_slack", "rejected"]
        assert [e.seq for e in entries] == sorted(e.seq for e in entries)
        assert {e.proposal_id for e in entries} == {first.id}

    async def test_verify_audit_is_ok_on_an_empty_and_on_a_busy_log(
        self, store: Store, now: datetime
    ) -> None:
        empty = await store.verify_audit()
        new = new_proposal(now)
        await store.create_proposal(new)
        await store.attach_message(new.id, "C1", "1.1")
        await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
        )
        await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=now)
        await store.record_event(None, actor="bot", event="note", detail={"x": "é"}, now=now)

        busy = await store.verify_audit()

        assert (empty.ok, empty.checked, empty.first_bad_seq) == (True, 0, None)
        assert (busy.ok, busy.checked, busy.first_bad_seq) == (True, 5, None)

    async def test_an_entrys_hash_is_that_of_its_detail_as_the_standard_library_writes_it(
        self, store: Store, now: datetime
    ) -> None:
        # whichever encoder and decoder the store uses, the hash is the one entries written
        # before them carry, so they still verify, and the detail reads back as it was
        detail: dict[str, JsonValue] = {
            "b": [1e-7, 1e16, 1.5e300, -0.0, 5e-324, 0.1],
            "a": [2**63, -(2**63) - 1, 2**70, 10**30, -1],
            "text": '\u00e9 \u2028 \\u00e9 null \\ " \t\n \U0001f600 \u0000 </script>',
            "nested": [[[[{"z": None, "y": True, "": False}]]]],
        }
        before = await store.audit_head()
        await store.record_event(None, actor="bot", event="note", detail=detail, now=now)
        standard = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))

        [entry] = (await store.audit_log())[-1:]

        assert repr(entry.detail) == repr(json.loads(standard.encode(detail)))
        assert entry.hash == entry_hash(
            before.hash,
            seq=before.seq + 1,
            at=now,
            proposal_id=None,
            actor="bot",
            event="note",
            detail=json.loads(standard.encode(detail)),
        )
        assert (await store.verify_audit()).ok

    async def test_audit_head_names_the_last_entry_and_the_genesis_when_empty(
        self, store: Store, now: datetime
    ) -> None:
        empty = await store.audit_head()
        new = new_proposal(now)
        await store.create_proposal(new)
        await store.record_event(new.id, actor="U1", event="note", detail={}, now=now)
        last = (await store.audit_log())[-1]

        head = await store.audit_head()

        assert (empty.seq, empty.hash) == (0, "0" * 64)
        assert (head.seq, head.hash) == (last.seq, last.hash) == (2, last.hash)

    # --- the outbox ------------------------------------------------------------------------

    async def test_a_pending_proposal_queues_its_slack_post_in_the_same_transaction(
        self, store: Store, now: datetime
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(now))

        [delivery] = await store.claim_deliveries(now=now, limit=10, lease=LEASE)

        assert (delivery.proposal_id, delivery.effect) == (new.id, Effect.SLACK_POST)
        assert (delivery.status, delivery.attempts) == (Status.PENDING, 1)
        assert await store.pending_deliveries() == 1

    async def test_a_leased_delivery_goes_to_no_one_else_until_its_lease_ends(
        self, store: Store, now: datetime
    ) -> None:
        await store.create_proposal(new_proposal(now))
        [first] = await store.claim_deliveries(now=now, limit=10, lease=LEASE)

        assert await store.claim_deliveries(now=now + LEASE / 2, limit=10, lease=LEASE) == []
        [again] = await store.claim_deliveries(now=now + LEASE, limit=10, lease=LEASE)
        assert (again.id, again.attempts) == (first.id, 2)

    async def test_a_decisions_message_update_is_claimed_before_a_backlog_of_new_posts(
        self, store: Store, now: datetime
    ) -> None:
        decided, _ = await store.create_proposal(new_proposal(now, callback_url=None))
        [post] = await store.claim_deliveries(now=now, limit=10, lease=LEASE)
        await store.complete_delivery(post.id, now=now)
        backlog = [(await store.create_proposal(new_proposal(now)))[0] for _ in range(5)]
        await store.reject(decided.id, actor="U0REJECTER", reason="no", now=now)

        first = await store.claim_deliveries(now=now, limit=2, lease=LEASE)

        # the decision's update and reply together (one proposal's lane), then one new card
        assert [(d.proposal_id, d.effect) for d in first] == [
            (backlog[0].id, Effect.SLACK_POST),
            (decided.id, Effect.SLACK_UPDATE),
            (decided.id, Effect.SLACK_REPLY),
        ]

    async def test_a_decisions_update_and_reply_are_leased_together_and_completed_in_one_write(
        self, store: Store, now: datetime
    ) -> None:
        decided = []
        for _ in range(3):
            new, _ = await store.create_proposal(new_proposal(now, callback_url=None))
            decided.append(new)
        await _drain(store, now)  # posted
        for new in decided:
            await store.reject(new.id, actor="U0REJECTER", reason="no", now=now)

        first = await store.claim_deliveries(now=now, limit=2, lease=LEASE)
        rest = await store.claim_deliveries(now=now, limit=2, lease=LEASE)

        # the limit counts proposals: two decisions' runs, then the third's
        assert [(d.proposal_id, d.effect) for d in first] == [
            (decided[0].id, Effect.SLACK_UPDATE),
            (decided[0].id, Effect.SLACK_REPLY),
            (decided[1].id, Effect.SLACK_UPDATE),
            (decided[1].id, Effect.SLACK_REPLY),
        ]
        assert [(d.proposal_id, d.effect) for d in rest] == [
            (decided[2].id, Effect.SLACK_UPDATE),
            (decided[2].id, Effect.SLACK_REPLY),
        ]
        assert all(d.attempts == 1 for d in (*first, *rest))
        await store.complete_deliveries([d.id for d in (*first, *rest)], now=now)
        await store.complete_deliveries([], now=now)  # nothing to write
        assert await store.pending_deliveries() == 0

    async def test_a_run_stops_before_an_entry_that_is_not_due(
        self, store: Store, now: datetime
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(now, callback_url=None))
        await _drain(store, now)
        await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
        )
        [executing] = await store.claim_deliveries(now=now, limit=10, lease=LEASE)
        await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=now)
        later = now + LEASE  # the executing update's lease ran out: it is due again, first

        run = await store.claim_deliveries(now=later, limit=10, lease=LEASE)

        assert [(d.effect, d.status, d.attempts) for d in run] == [
            (Effect.SLACK_UPDATE, Status.EXECUTING, 2),
            (Effect.SLACK_UPDATE, Status.SUCCEEDED, 1),
            (Effect.SLACK_REPLY, Status.SUCCEEDED, 1),
        ]
        assert run[0].id == executing.id

    async def test_concurrent_workers_never_share_a_delivery(
        self, store: Store, now: datetime
    ) -> None:
        for _ in range(30):
            await store.create_proposal(new_proposal(now))

        batches = await asyncio.gather(
            *(store.claim_deliveries(now=now, limit=4, lease=LEASE) for _ in range(10))
        )

        ids = [d.id for batch in batches for d in batch]
        assert len(ids) == len(set(ids)) == 30

    async def test_slack_effects_of_a_proposal_are_delivered_in_order_callbacks_apart(
        self, store: Store, now: datetime
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(now))
        [post] = await store.claim_deliveries(now=now, limit=10, lease=LEASE)
        await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
        )
        await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=now)
        later = now + timedelta(seconds=1)  # the post's lease still holds

        # the post is still out: no Slack update may overtake it, the callback may go
        [callback] = await store.claim_deliveries(now=later, limit=10, lease=LEASE)
        assert (callback.effect, callback.status) == (Effect.CALLBACK, Status.SUCCEEDED)
        await store.complete_delivery(post.id, now=later)
        await store.complete_delivery(callback.id, now=later)

        # the outcome's update and reply are leased together, in order, for one job; the
        # "executing" update was never under way: the outcome's update replaced it
        batch = await store.claim_deliveries(now=later, limit=10, lease=LEASE)
        assert [(d.effect, d.status) for d in batch] == [
            (Effect.SLACK_UPDATE, Status.SUCCEEDED),
            (Effect.SLACK_REPLY, Status.SUCCEEDED),
        ]
        assert await store.claim_deliveries(now=later, limit=10, lease=LEASE) == []
        await store.complete_deliveries([d.id for d in batch], now=later)
        assert await store.pending_deliveries() == 0

    async def test_a_message_update_under_way_is_not_replaced_and_goes_first(
        self, store: Store, now: datetime
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(now))
        await _drain(store, now)  # posted
        await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
        )
        [executing] = await store.claim_deliveries(now=now, limit=10, lease=LEASE)
        assert (executing.effect, executing.status) == (Effect.SLACK_UPDATE, Status.EXECUTING)

        await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=now)

        # the worker delivering it still holds its lease: the outcome's entries wait behind it
        assert [d.effect for d in await store.claim_deliveries(now=now, limit=10, lease=LEASE)] == [
            Effect.CALLBACK
        ]
        await store.complete_delivery(executing.id, now=now)
        assert [(e, st) for _, e, st in await _drain(store, now)] == [
            (Effect.SLACK_UPDATE, Status.SUCCEEDED),
            (Effect.SLACK_REPLY, Status.SUCCEEDED),
        ]

    async def test_an_update_waiting_to_be_retried_is_replaced_by_a_later_one(
        self, store: Store, now: datetime
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(now))
        await _drain(store, now)
        await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
        )
        [executing] = await store.claim_deliveries(now=now, limit=10, lease=LEASE)
        await store.retry_delivery(executing.id, at=now + timedelta(minutes=5), error="timeout")

        await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=now)

        # nothing waits five minutes behind the failed update: the outcome's goes now
        delivered = [(e, st) for _, e, st in await _drain(store, now)]
        assert [d for d in delivered if d[0] is not Effect.CALLBACK] == [
            (Effect.SLACK_UPDATE, Status.SUCCEEDED),
            (Effect.SLACK_REPLY, Status.SUCCEEDED),
        ]
        assert (Effect.CALLBACK, Status.SUCCEEDED) in delivered
        assert await store.pending_deliveries() == 0

    async def test_a_retried_delivery_waits_for_its_time(self, store: Store, now: datetime) -> None:
        await store.create_proposal(new_proposal(now))
        [delivery] = await store.claim_deliveries(now=now, limit=10, lease=LEASE)

        await store.retry_delivery(delivery.id, at=now + timedelta(seconds=30), error="429")

        assert (
            await store.claim_deliveries(now=now + timedelta(seconds=29), limit=9, lease=LEASE)
            == []
        )
        [again] = await store.claim_deliveries(
            now=now + timedelta(seconds=30), limit=9, lease=LEASE
        )
        assert again.id == delivery.id

    async def test_an_abandoned_delivery_is_audited_and_lets_later_ones_go(
        self, store: Store, now: datetime
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(now))
        [post] = await store.claim_deliveries(now=now, limit=10, lease=LEASE)
        await store.reject(new.id, actor="U1", reason="no", now=now)

        await store.abandon_delivery(post.id, now=now, error="channel_not_found")

        effects = [d.effect for d in await store.claim_deliveries(now=now, limit=10, lease=LEASE)]
        assert effects == [Effect.SLACK_UPDATE, Effect.SLACK_REPLY, Effect.CALLBACK]
        [abandoned] = [e for e in await store.audit_log(new.id) if e.event == "delivery_abandoned"]
        assert abandoned.detail["effect"] == "slack.post"
        assert abandoned.detail["error"] == "channel_not_found"

    async def test_effects_follow_the_policy_decision_and_the_callback_url(
        self, store: Store, now: datetime
    ) -> None:
        await store.create_proposal(
            new_proposal(now, decision="deny", status=Status.DENIED, channel=None, expires_at=None)
        )
        await store.create_proposal(
            new_proposal(
                now,
                decision="auto",
                status=Status.EXECUTING,
                channel=None,
                expires_at=None,
                callback_url=None,
            )
        )

        [denied] = await store.claim_deliveries(now=now, limit=10, lease=LEASE)
        assert (denied.effect, denied.status) == (Effect.CALLBACK, Status.DENIED)

    # --- leases and reconciliation ---------------------------------------------------------

    async def test_an_execution_past_its_lease_needs_reconciliation_and_says_so(
        self, store: Store, now: datetime
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(now))
        await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
        )

        assert await store.reclaim_abandoned(now=now + LEASE / 2) == []
        [reclaimed] = await store.reclaim_abandoned(now=now + LEASE)

        assert reclaimed.status is Status.NEEDS_RECONCILIATION
        assert reclaimed.outcome is not None and reclaimed.outcome.kind == "needs_reconciliation"
        assert (await events(store, new.id))[-1] == "execution_abandoned"
        with pytest.raises(InvalidTransition):  # the lost executor can no longer record
            await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=now + LEASE)

    async def test_a_person_resolves_an_uncertain_execution_once(
        self, store: Store, now: datetime
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(now))
        await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
        )
        await store.record_outcome(
            new.id, NeedsReconciliation(detail="timeout", correlation_id="c"), now=now
        )
        found = Succeeded(result={"checked": "ledger"})

        first, second = await asyncio.gather(
            store.resolve_reconciliation(new.id, actor="U2", outcome=found, note="seen", now=now),
            store.resolve_reconciliation(new.id, actor="U3", outcome=found, note="too", now=now),
        )

        assert sorted(type(r).__name__ for r in (first, second)) == [
            "AlreadyDecided",
            "Transitioned",
        ]
        stored = await store.get_proposal(new.id)
        assert (stored.status, stored.outcome) == (Status.SUCCEEDED, found)
        [entry] = [e for e in await store.audit_log(new.id) if e.event == "reconciled"]
        assert entry.actor in ("U2", "U3")

    async def test_reconciliation_accepts_only_succeeded_or_failed(
        self, store: Store, now: datetime
    ) -> None:
        with pytest.raises(ValueError, match="succeeded"):
            await store.resolve_reconciliation(
                "x", actor="U1", outcome=RevisionRequired(reason="r"), note="", now=now
            )

    async def test_a_retry_claims_the_uncertain_execution_for_exactly_one_executor(
        self, store: Store, now: datetime
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(now))
        pending, _ = await store.create_proposal(new_proposal(now))
        await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
        )
        await store.record_outcome(
            new.id, NeedsReconciliation(detail="timeout", correlation_id="c"), now=now
        )

        results = await asyncio.gather(
            *(
                store.retry_execution(new.id, actor="U2", now=now, lease_until=now + LEASE)
                for _ in range(5)
            )
        )

        assert sum(isinstance(r, Transitioned) for r in results) == 1
        assert (await store.get_proposal(new.id)).status is Status.EXECUTING
        refused = await store.retry_execution(
            pending.id, actor="U2", now=now, lease_until=now + LEASE
        )
        assert isinstance(refused, NotApprovable)
        assert "does not need reconciliation" in refused.reason

    async def test_an_earlier_attempts_answer_is_not_recorded_as_its_retrys_outcome(
        self, store: Store, now: datetime
    ) -> None:
        # the same clock for the claim and the retry: their leases end at the same time, so
        # only the attempt tells them apart
        new, _ = await store.create_proposal(new_proposal(now))
        claimed = await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
        )
        assert isinstance(claimed, Transitioned) and claimed.proposal.attempt == 1
        await store.record_outcome(
            new.id, NeedsReconciliation(detail="timeout", correlation_id="c"), now=now
        )
        retried = await store.retry_execution(new.id, actor="U2", now=now, lease_until=now + LEASE)
        assert isinstance(retried, Transitioned) and retried.proposal.attempt == 2
        trail = [entry.event for entry in await store.audit_log(new.id)]

        late = TerminalFailure(detail="target refused the request with 400", correlation_id="c1")
        with pytest.raises(InvalidTransition, match="executing attempt 2, not 1"):
            await store.record_outcome(new.id, late, now=now, attempt=1)

        unchanged = await store.get_proposal(new.id)
        assert (unchanged.status, unchanged.attempt) == (Status.EXECUTING, 2)
        assert [entry.event for entry in await store.audit_log(new.id)] == trail
        await store.audit_late_outcome(new.id, late, attempt=1, now=now)
        [entry] = [e for e in await store.audit_log(new.id) if e.event == "late_outcome"]
        assert entry.detail["attempt"] == 1
        assert entry.detail["outcome"]["kind"] == "terminal_failure"
        assert (await store.get_proposal(new.id)).status is Status.EXECUTING

        recorded = await store.record_outcome(new.id, Succeeded(result={}), now=now, attempt=2)
        assert (recorded.status, recorded.attempt) == (Status.SUCCEEDED, 2)
        assert (await store.verify_audit()).ok

    async def _handed_over(self, store: Store, now: datetime) -> tuple[str, NeedsReconciliation]:
        """A proposal whose first attempt was handed to a person, and the outcome on its card."""
        new, _ = await store.create_proposal(new_proposal(now))
        await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
        )
        uncertain = NeedsReconciliation(detail="timeout", correlation_id="c")
        await store.record_outcome(new.id, uncertain, now=now, attempt=1)
        return new.id, uncertain

    async def test_a_late_answer_built_on_a_card_shown_since_writes_nothing(
        self, store: Store, now: datetime
    ) -> None:
        proposal_id, read = await self._handed_over(store, now)
        success, failure = Succeeded(result={}), TerminalFailure(detail="400", correlation_id="c")
        first = read.model_copy(update={"detail": "timeout; success", "answered_late": "success"})
        second = read.model_copy(update={"detail": "timeout; failure", "answered_late": "failure"})

        shown = await store.record_late_outcome(
            proposal_id, success, first, attempt=1, read=read, now=now
        )
        assert isinstance(shown, Proposal) and shown.outcome == first
        # the other answer was built on the same card, which no longer holds it
        stale = await store.record_late_outcome(
            proposal_id, failure, second, attempt=1, read=read, now=now
        )

        assert isinstance(stale, StaleRead)
        assert (stale.proposal.status, stale.proposal.outcome) == (
            Status.NEEDS_RECONCILIATION,
            first,
        )
        assert (await store.get_proposal(proposal_id)).outcome == first
        late = [e for e in await store.audit_log(proposal_id) if e.event == "late_outcome"]
        assert [e.detail["outcome"]["kind"] for e in late] == ["succeeded"]
        # built again on the card as it is, it is shown
        both = first.model_copy(update={"detail": "timeout; success; failure"})
        shown = await store.record_late_outcome(
            proposal_id, failure, both, attempt=1, read=first, now=now
        )
        assert isinstance(shown, Proposal) and shown.outcome == both
        assert (await store.get_proposal(proposal_id)).outcome == both
        late = [e for e in await store.audit_log(proposal_id) if e.event == "late_outcome"]
        assert [e.detail["outcome"]["kind"] for e in late] == ["succeeded", "terminal_failure"]
        assert (await store.verify_audit()).ok

    async def test_a_late_answer_built_on_an_earlier_attempts_card_writes_nothing(
        self, store: Store, now: datetime
    ) -> None:
        proposal_id, read = await self._handed_over(store, now)
        retried = await store.retry_execution(
            proposal_id, actor="U2", now=now, lease_until=now + LEASE
        )
        assert isinstance(retried, Transitioned)
        answer = Succeeded(result={})
        shown = read.model_copy(update={"detail": "timeout; success", "answered_late": "success"})

        # while the retry executes
        executing = await store.record_late_outcome(
            proposal_id, answer, shown, attempt=1, read=read, now=now
        )
        assert isinstance(executing, StaleRead)
        assert executing.proposal.status is Status.EXECUTING
        # the retry handed over too, with the same words: only the attempt tells them apart
        await store.record_outcome(proposal_id, read, now=now, attempt=2)
        earlier = await store.record_late_outcome(
            proposal_id, answer, shown, attempt=1, read=read, now=now
        )

        assert isinstance(earlier, StaleRead)
        assert (earlier.proposal.attempt, earlier.proposal.outcome) == (2, read)
        assert (await store.get_proposal(proposal_id)).outcome == read
        assert [e for e in await store.audit_log(proposal_id) if e.event == "late_outcome"] == []
        current = await store.record_late_outcome(
            proposal_id, answer, shown, attempt=2, read=read, now=now
        )
        assert isinstance(current, Proposal)
        assert (current.attempt, current.outcome) == (2, shown)

    async def test_a_late_answer_tried_again_after_its_commit_is_shown_and_audited_once(
        self, store: Store, now: datetime
    ) -> None:
        # the first try committed and its reply was lost: the flow reads the card again, which
        # shows the answer now, builds it again and tries again
        proposal_id, read = await self._handed_over(store, now)
        answer = Succeeded(result={})
        shown = read.model_copy(update={"detail": "timeout; success", "answered_late": "success"})
        first = await store.record_late_outcome(
            proposal_id, answer, shown, attempt=1, read=read, now=now
        )
        assert isinstance(first, Proposal)
        again = shown.model_copy(update={"detail": "timeout; success; success"})

        tried = await store.record_late_outcome(
            proposal_id, answer, again, attempt=1, read=shown, now=now
        )

        assert isinstance(tried, Proposal) and tried.outcome == shown
        assert (await store.get_proposal(proposal_id)).outcome == shown
        [late] = [e for e in await store.audit_log(proposal_id) if e.event == "late_outcome"]
        assert late.detail == {"outcome": {"kind": "succeeded", "result": {}}, "attempt": 1}
        # another answer (a failure), or the same one to another attempt, is news
        failure = TerminalFailure(detail="400", correlation_id="c")
        both = shown.model_copy(update={"detail": "timeout; success; failure"})
        shown_too = await store.record_late_outcome(
            proposal_id, failure, both, attempt=1, read=shown, now=now
        )
        assert isinstance(shown_too, Proposal) and shown_too.outcome == both
        late = [e for e in await store.audit_log(proposal_id) if e.event == "late_outcome"]
        assert [e.detail["outcome"]["kind"] for e in late] == ["succeeded", "terminal_failure"]
        assert (await store.verify_audit()).ok

    async def test_an_earlier_attempts_answer_audited_again_is_audited_once(
        self, store: Store, now: datetime
    ) -> None:
        proposal_id, _ = await self._handed_over(store, now)
        retried = await store.retry_execution(
            proposal_id, actor="U2", now=now, lease_until=now + LEASE
        )
        assert isinstance(retried, Transitioned)
        late = TerminalFailure(detail="target refused the request with 400", correlation_id="c1")

        await store.audit_late_outcome(proposal_id, late, attempt=1, now=now)
        await store.audit_late_outcome(proposal_id, late, attempt=1, now=now)  # reply was lost
        await store.audit_late_outcome(proposal_id, late, attempt=2, now=now)  # another attempt

        entries = [e for e in await store.audit_log(proposal_id) if e.event == "late_outcome"]
        assert [e.detail["attempt"] for e in entries] == [1, 2]
        assert (await store.verify_audit()).ok

    # --- edits that supersede -----------------------------------------------------------------

    async def test_an_edit_supersedes_the_pending_proposal_and_is_stored_in_one_step(
        self, store: Store, now: datetime
    ) -> None:
        old, _ = await store.create_proposal(new_proposal(now))
        await store.attach_message(old.id, "C0FINANCE", "1700000000.000100")
        edit = _edit_of(old.id, now + timedelta(minutes=1), request={"payment": "pay_42", "x": 1})

        result = await store.supersede(
            old.id, edit, actor="U0EDITOR", now=now + timedelta(minutes=1)
        )

        assert isinstance(result, Transitioned)
        assert result.proposal == await store.get_proposal(edit.id)
        assert (result.proposal.supersedes, result.proposal.edited_by) == (old.id, "U0EDITOR")
        assert result.proposal.status is Status.PENDING
        replaced = await store.get_proposal(old.id)
        assert replaced.status is Status.SUPERSEDED
        assert (replaced.superseded_by, replaced.decided_by) == (edit.id, "U0EDITOR")
        assert replaced.decided_at == now + timedelta(minutes=1)
        [superseded] = [e for e in await store.audit_log(old.id) if e.event == "superseded"]
        assert (superseded.actor, superseded.detail) == (
            "U0EDITOR",
            {"superseded_by": edit.id, "edited_by": "U0EDITOR"},
        )
        entries = await store.audit_log(edit.id)
        assert [(e.event, e.actor) for e in entries] == [
            ("submitted", edit.agent),
            ("edited", "U0EDITOR"),
        ]
        edited_request: JsonValue = {"payment": "pay_42", "x": 1}
        assert entries[1].detail == {
            "supersedes": old.id,
            "proposed_request": old.request,
            "edited_request": edited_request,
            "proposed_arguments": old.arguments,
            "arguments": edit.arguments,
        }
        assert (await store.verify_audit()).ok

    async def test_an_edit_writes_the_effects_of_both_statuses(
        self, store: Store, now: datetime
    ) -> None:
        old, _ = await store.create_proposal(new_proposal(now))
        await _drain(store, now)  # the old proposal's own post
        await store.attach_message(old.id, "C0FINANCE", "1700000000.000100")
        edit = _edit_of(old.id, now)

        await store.supersede(old.id, edit, actor="U0EDITOR", now=now)

        assert sorted(await _drain(store, now)) == sorted(
            [
                (old.id, Effect.SLACK_UPDATE, Status.SUPERSEDED),
                (old.id, Effect.SLACK_REPLY, Status.SUPERSEDED),
                (old.id, Effect.CALLBACK, Status.SUPERSEDED),
                (edit.id, Effect.SLACK_POST, Status.PENDING),
            ]
        )

    @pytest.mark.parametrize(
        ("status", "event"), [(Status.EXECUTING, "auto_approved"), (Status.DENIED, "denied")]
    )
    async def test_an_edit_the_policy_decides_is_stored_decided(
        self, store: Store, now: datetime, status: Status, event: str
    ) -> None:
        old, _ = await store.create_proposal(new_proposal(now))
        decision = "auto" if status is Status.EXECUTING else "deny"
        edit = _edit_of(old.id, now, status=status, decision=decision, expires_at=None)

        result = await store.supersede(old.id, edit, actor="U0EDITOR", now=now)

        assert isinstance(result, Transitioned)
        assert result.proposal.status is status
        assert (await store.get_proposal(old.id)).status is Status.SUPERSEDED
        assert await events(store, edit.id) == ["submitted", "edited", event]

    async def test_an_edit_of_a_decided_or_expired_proposal_stores_nothing(
        self, store: Store, now: datetime
    ) -> None:
        rejected, _ = await store.create_proposal(new_proposal(now))
        await store.reject(rejected.id, actor="U1", reason="no", now=now)
        expiring, _ = await store.create_proposal(
            new_proposal(now, expires_at=now + timedelta(minutes=1))
        )
        before = await store.audit_log()
        late = now + timedelta(minutes=1)

        decided = await store.supersede(
            rejected.id, _edit_of(rejected.id, now), actor="U0EDITOR", now=now
        )
        expired = await store.supersede(
            expiring.id, _edit_of(expiring.id, late), actor="U0EDITOR", now=late
        )

        assert isinstance(decided, AlreadyDecided)
        assert decided.proposal.status is Status.REJECTED
        assert isinstance(expired, NotApprovable)
        assert "expired" in expired.reason
        assert (await store.get_proposal(expiring.id)).status is Status.PENDING
        assert await store.audit_log() == before
        assert len(await store.pending_proposals(limit=10)) == 1

    async def test_concurrent_edits_supersede_the_proposal_once(
        self, store: Store, now: datetime
    ) -> None:
        old, _ = await store.create_proposal(new_proposal(now))
        edits = [_edit_of(old.id, now, edited_by=f"U0EDITOR{i}") for i in range(5)]

        results = await asyncio.gather(
            *(store.supersede(old.id, e, actor=e.edited_by or "", now=now) for e in edits)
        )

        [won] = [r for r in results if isinstance(r, Transitioned)]
        assert all(isinstance(r, AlreadyDecided) for r in results if r is not won)
        assert (await store.get_proposal(old.id)).superseded_by == won.proposal.id
        assert [p.id for p in await store.pending_proposals(limit=10)] == [won.proposal.id]
        assert (await events(store, old.id)).count("superseded") == 1

    async def test_a_superseded_proposal_can_no_longer_be_approved_or_rejected(
        self, store: Store, now: datetime
    ) -> None:
        old, _ = await store.create_proposal(new_proposal(now))
        await store.supersede(old.id, _edit_of(old.id, now), actor="U0EDITOR", now=now)

        claim = await store.claim_for_execution(
            old.id, actor="U1", now=now, binding_hash=old.binding_hash, lease_until=now + LEASE
        )
        reject = await store.reject(old.id, actor="U1", reason="no", now=now)

        assert isinstance(claim, AlreadyDecided) and isinstance(reject, AlreadyDecided)
        assert (await store.get_proposal(old.id)).status is Status.SUPERSEDED

    async def test_an_edit_that_does_not_name_what_it_replaces_is_refused(
        self, store: Store, now: datetime
    ) -> None:
        old, _ = await store.create_proposal(new_proposal(now))
        before = await store.audit_log()

        with pytest.raises(ValueError, match="supersedes"):
            await store.supersede(old.id, _edit_of("another-id", now), actor="U0EDITOR", now=now)
        with pytest.raises(ValueError, match="edited_by"):
            await store.supersede(old.id, _edit_of(old.id, now), actor="U0OTHER", now=now)
        with pytest.raises(InvalidTransition, match="rejected"):
            await store.supersede(
                old.id, _edit_of(old.id, now, status=Status.REJECTED), actor="U0EDITOR", now=now
            )

        assert (await store.get_proposal(old.id)).status is Status.PENDING
        assert await store.audit_log() == before

    async def test_an_edit_of_an_unknown_proposal_raises_not_found_and_stores_nothing(
        self, store: Store, now: datetime
    ) -> None:
        edit = _edit_of("nope", now)

        with pytest.raises(ProposalNotFound, match="nope"):
            await store.supersede("nope", edit, actor="U0EDITOR", now=now)

        with pytest.raises(ProposalNotFound):
            await store.get_proposal(edit.id)
        assert await store.audit_log() == []

    async def test_an_edit_under_a_submission_key_the_agent_used_changes_nothing(
        self, store: Store, now: datetime
    ) -> None:
        old, _ = await store.create_proposal(new_proposal(now))
        squatter, _ = await store.create_proposal(
            new_proposal(now, submission_key=f"edit:{old.id}")
        )
        await _drain(store, now)
        before = await store.audit_log()
        edit = _edit_of(old.id, now, submission_key=f"edit:{old.id}")

        with pytest.raises(IdempotencyConflict) as raised:
            await store.supersede(old.id, edit, actor="U0EDITOR", now=now)

        assert raised.value.existing.id == squatter.id
        assert (await store.get_proposal(old.id)).status is Status.PENDING
        with pytest.raises(ProposalNotFound):
            await store.get_proposal(edit.id)
        assert await store.audit_log() == before
        assert await store.pending_deliveries() == 0

    # --- queries for a person's workspace (App Home, /countersign) ----------------------------

    async def test_pending_proposals_come_soonest_expiry_first_and_only_pending(
        self, store: Store, now: datetime
    ) -> None:
        late, _ = await store.create_proposal(
            new_proposal(now, expires_at=now + timedelta(hours=3))
        )
        soon, _ = await store.create_proposal(
            new_proposal(now, expires_at=now + timedelta(hours=1))
        )
        middle, _ = await store.create_proposal(
            new_proposal(now, expires_at=now + timedelta(hours=2))
        )
        rejected, _ = await store.create_proposal(new_proposal(now))
        await store.reject(rejected.id, actor="U9", reason="no", now=now)

        assert [p.id for p in await store.pending_proposals(limit=10)] == [
            soon.id,
            middle.id,
            late.id,
        ]
        assert [p.id for p in await store.pending_proposals(limit=2)] == [soon.id, middle.id]

    async def test_decisions_by_lists_a_persons_approvals_and_rejections_latest_first(
        self, store: Store, now: datetime
    ) -> None:
        approved, _ = await store.create_proposal(new_proposal(now))
        rejected, _ = await store.create_proposal(new_proposal(now))
        someone_elses, _ = await store.create_proposal(new_proposal(now))
        await store.claim_for_execution(
            approved.id,
            actor="U1",
            now=now,
            binding_hash=approved.binding_hash,
            lease_until=now + LEASE,
        )
        later = now + timedelta(minutes=1)
        await store.reject(rejected.id, actor="U1", reason="no", now=later)
        await store.reject(someone_elses.id, actor="U2", reason="no", now=later)

        mine = await store.decisions_by("U1", limit=10)

        assert [p.id for p in mine] == [rejected.id, approved.id]
        assert [p.id for p in await store.decisions_by("U1", limit=1)] == [rejected.id]
        assert await store.decisions_by("U3") == []


async def store_waiting(store: Store, count: int, *, at: datetime) -> None:
    """``count`` pending proposals, created a millisecond apart from ``at``, whose reminder and
    backup approvers are due half an hour after ``at``: a backlog no sweep has work in yet."""
    for n in range(count):
        await store.create_proposal(
            new_proposal(
                at + timedelta(milliseconds=n),
                remind_at=at + timedelta(minutes=30),
                backup_at=at + timedelta(minutes=30),
                backup_roles=("finance-leads",),
            )
        )
