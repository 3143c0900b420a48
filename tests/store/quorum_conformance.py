"""Quorum approvals and risk-ordered queues: behaviour every Store backend must have alike.

A backend's test module subclasses :class:`QuorumConformance` and provides two fixtures: ``store``
(an empty store) and ``sneak_approval``, which writes an approval row past the store, as only a
bug or a person with database access could (an approval bound to other arguments).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from store.proposals import (
    AlreadyDecided,
    ApprovalCounted,
    Effect,
    NotApprovable,
    Status,
    Transitioned,
    TransitionResult,
)
from store.proposals.approvals import counted
from store.protocol import Store
from tests.store.conformance import LEASE, OUTCOME_EXAMPLES, new_proposal

__all__ = ["QuorumConformance", "SneakApproval"]

#: (proposal id, approver, binding hash, approved at): an approval row written past the store.
SneakApproval = Callable[[str, str, str, datetime], Awaitable[None]]

NOW = datetime(2031, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)


async def _approve(
    store: Store, proposal_id: str, actor: str, binding_hash: str, now: datetime
) -> TransitionResult:
    return await store.claim_for_execution(
        proposal_id, actor=actor, now=now, binding_hash=binding_hash, lease_until=now + LEASE
    )


async def _events(store: Store, proposal_id: str) -> list[str]:
    return [entry.event for entry in await store.audit_log(proposal_id)]


class QuorumConformance:
    """Subclass with ``store`` and ``sneak_approval`` fixtures of the backend under test."""

    async def test_two_of_three_counts_the_first_approval_then_executes_on_the_second(
        self, store: Store
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(NOW, quorum=2))
        later = NOW + timedelta(minutes=1)

        first = await _approve(store, new.id, "U0ADA", new.binding_hash, NOW)
        second = await _approve(store, new.id, "U0GRACE", new.binding_hash, later)
        third = await _approve(store, new.id, "U0ALAN", new.binding_hash, later)

        assert isinstance(first, ApprovalCounted)
        assert first.proposal.status is Status.PENDING
        assert [a.approver for a in first.proposal.approvals] == ["U0ADA"]
        assert first.proposal.decided_by is None
        assert isinstance(second, Transitioned)
        assert second.proposal.status is Status.EXECUTING
        assert (second.proposal.decided_by, second.proposal.decided_at) == ("U0GRACE", later)
        assert [a.approver for a in second.proposal.approvals] == ["U0ADA", "U0GRACE"]
        assert second.proposal == await store.get_proposal(new.id)
        assert isinstance(third, AlreadyDecided)
        assert third.proposal.decided_by == "U0GRACE"
        log = await store.audit_log(new.id)
        assert [(e.event, e.actor) for e in log] == [
            ("submitted", "billing-agent"),
            ("approval_recorded", "U0ADA"),
            ("approved", "U0GRACE"),
        ]
        assert log[1].detail == {
            "approver": "U0ADA",
            "binding_hash": new.binding_hash,
            "count": 1,
            "quorum": 2,
        }
        assert log[2].detail == {
            "binding_hash": new.binding_hash,
            "approvers": ["U0ADA", "U0GRACE"],
            "quorum": 2,
        }

    async def test_an_approval_short_of_the_quorum_queues_a_message_update(
        self, store: Store
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(NOW, quorum=3))
        [post] = await store.claim_deliveries(now=NOW, limit=10, lease=LEASE)
        await store.complete_delivery(post.id, now=NOW)

        await _approve(store, new.id, "U0ADA", new.binding_hash, NOW)

        [update] = await store.claim_deliveries(now=NOW, limit=10, lease=LEASE)
        assert (update.proposal_id, update.effect) == (new.id, Effect.SLACK_UPDATE)
        assert update.status is Status.PENDING

    async def test_an_approval_without_a_channel_queues_nothing(self, store: Store) -> None:
        new, _ = await store.create_proposal(
            new_proposal(NOW, quorum=2, channel=None, callback_url=None)
        )

        result = await _approve(store, new.id, "U0ADA", new.binding_hash, NOW)

        assert isinstance(result, ApprovalCounted)
        assert await store.pending_deliveries() == 0

    async def test_the_same_approver_twice_is_refused_and_changes_nothing(
        self, store: Store
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(NOW, quorum=2))
        counted_once = await _approve(store, new.id, "U0ADA", new.binding_hash, NOW)
        assert isinstance(counted_once, ApprovalCounted)
        before = await store.audit_log()

        again = await _approve(store, new.id, "U0ADA", new.binding_hash, NOW)

        assert isinstance(again, NotApprovable)
        assert again.reason == "you already approved this; 1 more approval(s) needed"
        assert await store.get_proposal(new.id) == counted_once.proposal
        assert await store.audit_log() == before

    async def test_a_quorum_of_one_executes_on_the_first_approval_and_keeps_it(
        self, store: Store
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(NOW))

        result = await _approve(store, new.id, "U0ADA", new.binding_hash, NOW)

        assert isinstance(result, Transitioned)
        assert result.proposal.status is Status.EXECUTING
        [approval] = result.proposal.approvals
        assert (approval.approver, approval.binding_hash, approval.approved_at) == (
            "U0ADA",
            new.binding_hash,
            NOW,
        )
        assert await _events(store, new.id) == ["submitted", "approved"]

    async def test_an_approval_bound_to_another_hash_is_refused_and_never_counts(
        self, store: Store
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(NOW, quorum=2))

        other = await _approve(store, new.id, "U0ADA", "0" * 64, NOW)
        first = await _approve(store, new.id, "U0GRACE", new.binding_hash, NOW)

        assert isinstance(other, NotApprovable)
        assert "binding hash" in other.reason
        assert isinstance(first, ApprovalCounted)
        assert [a.approver for a in first.proposal.approvals] == ["U0GRACE"]

    async def test_a_stored_approval_bound_to_other_arguments_does_not_count(
        self, store: Store, sneak_approval: SneakApproval
    ) -> None:
        new, _ = await store.create_proposal(new_proposal(NOW, quorum=2))
        await sneak_approval(new.id, "U0MALLORY", "f" * 64, NOW)

        first = await _approve(store, new.id, "U0ADA", new.binding_hash, NOW)
        second = await _approve(store, new.id, "U0GRACE", new.binding_hash, NOW)

        assert isinstance(first, ApprovalCounted)
        assert {a.approver for a in first.proposal.approvals} == {"U0MALLORY", "U0ADA"}
        assert [a.approver for a in counted(first.proposal)] == ["U0ADA"]
        [recorded] = [e for e in await store.audit_log(new.id) if e.event == "approval_recorded"]
        assert recorded.detail["count"] == 1
        assert isinstance(second, Transitioned)
        [approved] = [e for e in await store.audit_log(new.id) if e.event == "approved"]
        assert approved.detail["approvers"] == ["U0ADA", "U0GRACE"]

    async def test_concurrent_approvals_make_exactly_one_executor(self, store: Store) -> None:
        new, _ = await store.create_proposal(new_proposal(NOW, quorum=2))

        results = await asyncio.gather(
            *(_approve(store, new.id, f"U0{i}", new.binding_hash, NOW) for i in range(3))
        )

        kinds = sorted(type(r).__name__ for r in results)
        assert kinds == ["AlreadyDecided", "ApprovalCounted", "Transitioned"]
        [winner] = [r for r in results if isinstance(r, Transitioned)]
        assert len(winner.proposal.approvals) == 2
        assert await _events(store, new.id) == ["submitted", "approval_recorded", "approved"]

    async def test_a_rejection_after_one_approval_closes_the_proposal(self, store: Store) -> None:
        new, _ = await store.create_proposal(new_proposal(NOW, quorum=2))
        await _approve(store, new.id, "U0ADA", new.binding_hash, NOW)

        rejected = await store.reject(new.id, actor="U0GRACE", reason="too much", now=NOW)
        late = await _approve(store, new.id, "U0ALAN", new.binding_hash, NOW)

        assert isinstance(rejected, Transitioned)
        assert rejected.proposal.status is Status.REJECTED
        assert [a.approver for a in rejected.proposal.approvals] == ["U0ADA"]
        assert isinstance(late, AlreadyDecided)
        assert late.proposal.status is Status.REJECTED
        assert await _events(store, new.id) == ["submitted", "approval_recorded", "rejected"]

    async def test_an_approval_after_expiry_is_refused_and_recorded_nowhere(
        self, store: Store
    ) -> None:
        new, _ = await store.create_proposal(
            new_proposal(NOW, quorum=2, expires_at=NOW + timedelta(minutes=5))
        )
        await _approve(store, new.id, "U0ADA", new.binding_hash, NOW)
        expired_at = NOW + timedelta(minutes=5)

        late = await _approve(store, new.id, "U0GRACE", new.binding_hash, expired_at)

        assert isinstance(late, NotApprovable)
        assert "expired" in late.reason
        assert [a.approver for a in (await store.get_proposal(new.id)).approvals] == ["U0ADA"]
        assert await _events(store, new.id) == ["submitted", "approval_recorded"]

    async def test_every_read_carries_the_approvals(self, store: Store) -> None:
        new = new_proposal(NOW, quorum=2)
        await store.create_proposal(new)
        await _approve(store, new.id, "U0ADA", new.binding_hash, NOW)
        later = NOW + timedelta(seconds=1)
        await _approve(store, new.id, "U0GRACE", new.binding_hash, later)

        outcome = await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=later)
        attached = await store.attach_message(new.id, "C1", "1.1")
        found = await store.find_submission(new.agent, new.submission_key)
        again, created = await store.create_proposal(new)
        [decided] = await store.decisions_by("U0GRACE")

        for proposal in (outcome, attached, found, again, decided):
            assert proposal is not None
            assert [a.approver for a in proposal.approvals] == ["U0ADA", "U0GRACE"]
        assert not created

    async def test_pending_proposals_carry_their_approvals(self, store: Store) -> None:
        asked, _ = await store.create_proposal(new_proposal(NOW, quorum=2))
        untouched, _ = await store.create_proposal(new_proposal(NOW, quorum=2))
        await _approve(store, asked.id, "U0ADA", asked.binding_hash, NOW)

        pending = {p.id: p for p in await store.pending_proposals()}

        assert [a.approver for a in pending[asked.id].approvals] == ["U0ADA"]
        assert pending[untouched.id].approvals == ()

    async def test_pending_proposals_come_riskiest_first_then_soonest_expiry(
        self, store: Store
    ) -> None:
        made = {}
        for risk, minutes in [
            ("read", 5),
            ("reversible", 50),
            ("irreversible", 60),
            ("reversible", 10),
            ("irreversible", 30),
        ]:
            expires_at = NOW + timedelta(minutes=minutes)
            stored, _ = await store.create_proposal(
                new_proposal(NOW, risk=risk, expires_at=expires_at)
            )
            made[risk, minutes] = stored.id

        order = [p.id for p in await store.pending_proposals(limit=10)]

        assert order == [
            made["irreversible", 30],
            made["irreversible", 60],
            made["reversible", 10],
            made["reversible", 50],
            made["read", 5],
        ]
        assert [p.id for p in await store.pending_proposals(limit=2)] == order[:2]
