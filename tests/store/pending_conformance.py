"""Counting and listing pending proposals per agent, as every Store backend must do it (the
per-agent pending limit and the fair App Home listing rest on these verbs).

Part of the shared conformance suite: :class:`tests.store.conformance.StoreConformance` inherits
these tests, so every backend runs them.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest

from store.proposals import (
    BatchRequest,
    NewProposal,
    PendingLimit,
    PendingLimitReached,
    Status,
)
from store.protocol import Store

__all__ = ["PendingConformance"]


def _new(now: datetime, **changes: Any) -> NewProposal:
    # Imported here: tests.store.conformance imports this module to inherit from it.
    from tests.store.conformance import new_proposal

    return new_proposal(now, **changes)


class PendingConformance:
    @pytest.mark.parametrize("batched", [False, True])
    async def test_a_proposal_past_its_agents_pending_limit_is_refused_with_nothing_stored(
        self, store: Store, now: datetime, batched: bool
    ) -> None:
        batch = BatchRequest(key="k", window=timedelta(minutes=5), max=10) if batched else None
        for _ in range(2):
            await store.create_proposal(_new(now), pending_limit=PendingLimit(3))
        await store.create_proposal(_new(now, agent="ops-agent"))
        refused = _new(now, batch=batch)

        with pytest.raises(PendingLimitReached):
            await store.create_proposal(refused, pending_limit=PendingLimit(2))

        assert await store.count_pending("billing-agent") == 2
        assert await store.find_submission("billing-agent", refused.submission_key) is None
        assert await store.audit_log(refused.id) == []
        created, stored = await store.create_proposal(refused, pending_limit=PendingLimit(3))
        assert stored and created.id == refused.id

    async def test_submissions_in_flight_count_until_stored_and_then_once(
        self, store: Store, now: datetime
    ) -> None:
        first = (await store.create_proposal(_new(now)))[0]
        in_flight = _new(now)  # claimed by another submission, not stored yet

        with pytest.raises(PendingLimitReached):  # 1 stored + 1 in flight
            await store.create_proposal(_new(now), pending_limit=PendingLimit(2, (in_flight.id,)))
        # in flight, but stored meanwhile: counted once
        second = _new(now)
        await store.create_proposal(second, pending_limit=PendingLimit(2, (first.id,)))

        assert await store.count_pending("billing-agent") == 2

    async def test_a_replay_gets_its_proposal_and_a_decided_one_no_limit(
        self, store: Store, now: datetime
    ) -> None:
        stored = (await store.create_proposal(_new(now)))[0]
        again = _new(now, id="replayed-id", submission_key=stored.submission_key)

        replay, created = await store.create_proposal(again, pending_limit=PendingLimit(0))
        # with room: the insert finds it by its key (SQLite reads it only then)
        roomy, roomy_created = await store.create_proposal(
            _new(now, id="replayed-with-room", submission_key=stored.submission_key),
            pending_limit=PendingLimit(5),
        )
        auto, auto_created = await store.create_proposal(
            _new(now, status=Status.EXECUTING, decision="auto", lease_until=now),
            pending_limit=PendingLimit(0),
        )

        assert (replay.id, created) == (stored.id, False)
        assert (roomy.id, roomy_created) == (stored.id, False)
        assert auto_created and auto.status is Status.EXECUTING

    async def test_count_pending_counts_only_the_agents_proposals_that_wait(
        self, store: Store, now: datetime
    ) -> None:
        assert await store.count_pending("billing-agent") == 0
        waiting = [(await store.create_proposal(_new(now)))[0] for _ in range(3)]
        await store.create_proposal(_new(now, agent="ops-agent"))
        await store.create_proposal(
            _new(now, status=Status.DENIED, decision="deny", expires_at=None)
        )
        assert await store.count_pending("billing-agent") == 3

        await store.reject(waiting[0].id, actor="U0REJECTER", reason="no", now=now)
        await store.expire_due(now=now + timedelta(hours=2))

        assert await store.count_pending("billing-agent") == 0
        assert await store.count_pending("nobody") == 0

    async def test_pending_by_agent_and_one_agents_pending_riskiest_first(
        self, store: Store, now: datetime
    ) -> None:
        soon = (await store.create_proposal(_new(now, expires_at=now + timedelta(minutes=5))))[0]
        read = (await store.create_proposal(_new(now, risk="read")))[0]
        later = (await store.create_proposal(_new(now)))[0]
        theirs = (await store.create_proposal(_new(now, agent="ops-agent")))[0]

        assert await store.pending_by_agent() == {"billing-agent": 3, "ops-agent": 1}
        mine = await store.pending_proposals(agent="billing-agent")
        assert [p.id for p in mine] == [soon.id, later.id, read.id]
        assert [p.id for p in await store.pending_proposals(agent="ops-agent")] == [theirs.id]
        assert [p.id for p in await store.pending_proposals(agent="billing-agent", limit=1)] == [
            soon.id
        ]
        assert len(await store.pending_proposals()) == 4

    async def test_the_kept_count_follows_each_way_into_and_out_of_pending(
        self, store: Store, now: datetime
    ) -> None:
        """The count is kept by the database (not counted on each read): approved, rejected,
        withdrawn, edited and expired proposals leave it, an edit's new proposal enters it."""
        made = [(await store.create_proposal(_new(now, quorum=1)))[0] for _ in range(6)]
        assert await store.count_pending("billing-agent") == 6

        await store.claim_for_execution(
            made[0].id,
            actor="U0APPROVER",
            now=now,
            binding_hash=made[0].binding_hash,
            lease_until=now + timedelta(minutes=5),
        )
        await store.reject(made[1].id, actor="U0REJECTER", reason="no", now=now)
        await store.cancel(made[2].id, agent="billing-agent", now=now)
        edit = _new(now, supersedes=made[3].id, edited_by="U0EDITOR")
        await store.supersede(made[3].id, edit, actor="U0EDITOR", now=now)
        assert await store.count_pending("billing-agent") == 3  # 4 and 5, and the edit

        await store.expire_due(now=now + timedelta(hours=2))
        assert await store.count_pending("billing-agent") == 0
        assert await store.pending_by_agent() == {}

    async def test_concurrent_submissions_and_decisions_leave_the_exact_count(
        self, store: Store, now: datetime
    ) -> None:
        """Writers in parallel (connections of their own on PostgreSQL) lose no change."""
        made = await asyncio.gather(*(store.create_proposal(_new(now)) for _ in range(40)))
        assert await store.count_pending("billing-agent") == 40

        rejected = [proposal for proposal, _ in made[:25]]
        await asyncio.gather(
            *(store.reject(p.id, actor="U0REJECTER", reason="no", now=now) for p in rejected),
            *(store.create_proposal(_new(now, agent="ops-agent")) for _ in range(10)),
        )

        assert await store.count_pending("billing-agent") == 15
        assert await store.pending_by_agent() == {"billing-agent": 15, "ops-agent": 10}
        assert len(await store.pending_proposals(agent="billing-agent", limit=100)) == 15
