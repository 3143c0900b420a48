"""Counting and listing pending proposals per agent, as every Store backend must do it (the
per-agent pending limit and the fair App Home listing rest on these verbs).

Part of the shared conformance suite: :class:`tests.store.conformance.StoreConformance` inherits
these tests, so every backend runs them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from store.base import NewProposal, Store
from store.lifecycle import Status

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
