"""Counting and listing pending proposals per agent, as every Store backend must do it (the
per-agent pending limit and the fair App Home listing rest on these verbs).

Part of the shared conformance suite: :class:`tests.store.conformance.StoreConformance` inherits
these tests, so every backend runs them.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from store.proposals import NewProposal, Status
from store.protocol import Store

__all__ = ["PendingConformance"]


def _new(now: datetime, **changes: Any) -> NewProposal:
    # Imported here: tests.store.conformance imports this module to inherit from it.
    from tests.store.conformance import new_proposal

    return new_proposal(now, **changes)


class PendingConformance:
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
