"""An agent withdrawing its pending proposal (``Store.cancel``), as every Store backend must do
it: once, by the proposing agent only, audited with its effects, and racing an approval so that
exactly one of them wins.

Part of the shared conformance suite: :class:`tests.store.conformance.StoreConformance` inherits
these tests, so every backend runs them.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest

from store.proposals import (
    AlreadyDecided,
    Effect,
    NewProposal,
    NotApprovable,
    ProposalNotFound,
    Status,
    Transitioned,
)
from store.protocol import Store

__all__ = ["CancelConformance"]

LEASE = timedelta(minutes=5)


def _new(now: datetime, **changes: Any) -> NewProposal:
    # Imported here: tests.store.conformance imports this module to inherit from it.
    from tests.store.conformance import new_proposal

    return new_proposal(now, **changes)


async def _events(store: Store, proposal_id: str) -> list[tuple[str, str]]:
    return [(entry.event, entry.actor) for entry in await store.audit_log(proposal_id)]


async def _effects(store: Store, now: datetime) -> list[tuple[str, Effect, Status]]:
    """Every outbox entry due, delivered, as (proposal id, effect, status entered)."""
    delivered = []
    while batch := await store.claim_deliveries(now=now, limit=100, lease=LEASE):
        for delivery in batch:
            delivered.append((delivery.proposal_id, delivery.effect, delivery.status))
            await store.complete_delivery(delivery.id, now=now)
    return delivered


class CancelConformance:
    async def test_the_proposing_agent_cancels_a_pending_proposal_with_its_audit_and_effects(
        self, store: Store, now: datetime
    ) -> None:
        new = _new(now)
        await store.create_proposal(new)
        await _effects(store, now)  # the post of the message
        later = now + timedelta(minutes=3)

        result = await store.cancel(new.id, agent=new.agent, now=later)

        assert isinstance(result, Transitioned)
        stored = await store.get_proposal(new.id)
        assert stored == result.proposal
        assert (stored.status, stored.decided_at, stored.decided_by) == (
            Status.CANCELLED,
            later,
            None,
        )
        assert await _events(store, new.id) == [
            ("submitted", new.agent),
            ("cancelled", new.agent),
        ]
        assert sorted(await _effects(store, later)) == sorted(
            [
                (new.id, Effect.SLACK_UPDATE, Status.CANCELLED),
                (new.id, Effect.CALLBACK, Status.CANCELLED),
            ]
        )

    async def test_a_cancel_without_channel_or_callback_writes_no_effect(
        self, store: Store, now: datetime
    ) -> None:
        new = _new(now, channel=None, callback_url=None)
        await store.create_proposal(new)

        assert isinstance(await store.cancel(new.id, agent=new.agent, now=now), Transitioned)
        assert await store.pending_deliveries() == 0

    async def test_cancelling_again_answers_the_same_and_writes_nothing(
        self, store: Store, now: datetime
    ) -> None:
        new = _new(now)
        await store.create_proposal(new)
        first = await store.cancel(new.id, agent=new.agent, now=now)
        await _effects(store, now)
        log = await store.audit_log()

        again = await store.cancel(new.id, agent=new.agent, now=now + timedelta(minutes=1))

        assert again == first
        assert await store.audit_log() == log
        assert await store.pending_deliveries() == 0

    async def test_concurrent_cancels_cancel_once(self, store: Store, now: datetime) -> None:
        new = _new(now)
        await store.create_proposal(new)

        results = await asyncio.gather(
            *(store.cancel(new.id, agent=new.agent, now=now) for _ in range(8))
        )

        assert all(isinstance(r, Transitioned) for r in results)
        assert {r.proposal.status for r in results} == {Status.CANCELLED}
        assert await _events(store, new.id) == [
            ("submitted", new.agent),
            ("cancelled", new.agent),
        ]

    async def test_another_agent_cannot_cancel_nor_learn_that_the_proposal_exists(
        self, store: Store, now: datetime
    ) -> None:
        new = _new(now)
        before, _ = await store.create_proposal(new)

        with pytest.raises(ProposalNotFound) as other:
            await store.cancel(new.id, agent="someone-else", now=now)
        with pytest.raises(ProposalNotFound) as unknown:
            await store.cancel("nope", agent="someone-else", now=now)

        assert "someone-else" in str(other.value)
        assert "nope" in str(unknown.value)
        assert await store.get_proposal(new.id) == before
        assert await _events(store, new.id) == [("submitted", new.agent)]

    @pytest.mark.parametrize("decided", ["approved", "rejected", "denied", "executed"])
    async def test_a_decided_proposal_cannot_be_cancelled_and_its_status_is_named(
        self, store: Store, now: datetime, decided: str
    ) -> None:
        new = _new(
            now, **({"decision": "deny", "status": Status.DENIED} if decided == "denied" else {})
        )
        await store.create_proposal(new)
        if decided in ("approved", "executed"):
            await store.claim_for_execution(
                new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
            )
        if decided == "executed":
            from tests.store.conformance import OUTCOME_EXAMPLES

            await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=now)
        if decided == "rejected":
            await store.reject(new.id, actor="U1", reason="no", now=now)
        before = await store.get_proposal(new.id)
        log = await store.audit_log()

        result = await store.cancel(new.id, agent=new.agent, now=now)

        assert isinstance(result, AlreadyDecided)
        assert result.proposal == before
        assert (
            result.proposal.status
            is {
                "approved": Status.EXECUTING,
                "rejected": Status.REJECTED,
                "denied": Status.DENIED,
                "executed": Status.SUCCEEDED,
            }[decided]
        )
        assert await store.audit_log() == log

    async def test_a_proposal_past_its_expiry_is_not_cancelled(
        self, store: Store, now: datetime
    ) -> None:
        new = _new(now, expires_at=now + timedelta(minutes=1))
        before, _ = await store.create_proposal(new)

        result = await store.cancel(new.id, agent=new.agent, now=now + timedelta(minutes=1))

        assert isinstance(result, NotApprovable)
        assert "expired" in result.reason
        assert await store.get_proposal(new.id) == before

    async def test_a_cancelled_proposal_can_no_longer_be_approved_rejected_or_expired(
        self, store: Store, now: datetime
    ) -> None:
        new = _new(now, expires_at=now + timedelta(minutes=1))
        await store.create_proposal(new)
        await store.cancel(new.id, agent=new.agent, now=now)

        claim = await store.claim_for_execution(
            new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
        )
        reject = await store.reject(new.id, actor="U1", reason="no", now=now)
        expired = await store.expire_due(now=now + timedelta(hours=1))

        assert isinstance(claim, AlreadyDecided) and isinstance(reject, AlreadyDecided)
        assert claim.proposal.status is reject.proposal.status is Status.CANCELLED
        assert expired == []
        assert await store.pending_proposals() == []
        assert await store.count_pending(new.agent) == 0
        assert [e for e, _ in await _events(store, new.id)] == ["submitted", "cancelled"]

    async def test_a_cancel_racing_an_approval_leaves_exactly_one_of_them(
        self, store: Store, now: datetime
    ) -> None:
        for round_ in range(10):
            new = _new(now)
            await store.create_proposal(new)
            claim = store.claim_for_execution(
                new.id, actor="U1", now=now, binding_hash=new.binding_hash, lease_until=now + LEASE
            )
            cancel = store.cancel(new.id, agent=new.agent, now=now)
            pair = (claim, cancel) if round_ % 2 else (cancel, claim)

            results = await asyncio.gather(*pair)

            assert sorted(type(r).__name__ for r in results) == ["AlreadyDecided", "Transitioned"]
            [won] = [r for r in results if isinstance(r, Transitioned)]
            [lost] = [r for r in results if isinstance(r, AlreadyDecided)]
            stored = await store.get_proposal(new.id)
            assert stored.status is won.proposal.status is lost.proposal.status
            assert stored.status in (Status.EXECUTING, Status.CANCELLED)
            decisions = [e for e, _ in await _events(store, new.id) if e != "submitted"]
            assert decisions == ["approved" if stored.status is Status.EXECUTING else "cancelled"]
