"""Reading back the agents' calls (for policy simulate) on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from store.proposals.calls import recorded_calls
from store.protocol import Store
from tests.store.conformance import new_proposal

NOW = datetime(2031, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)


class RecordedCallsConformance:
    @pytest.fixture
    def store(self) -> Store:
        raise NotImplementedError

    async def test_calls_since_a_time_come_oldest_first_without_edits(self, store: Store) -> None:
        before = new_proposal(NOW - timedelta(days=2))
        first = new_proposal(NOW - timedelta(hours=5))
        second = new_proposal(NOW - timedelta(hours=1), agent="other-agent")
        for new in (second, before, first):
            await store.create_proposal(new)

        calls = await recorded_calls(store, since=NOW - timedelta(days=1))

        assert [call.id for call in calls] == [first.id, second.id]
        assert calls[1].agent == "other-agent"
        assert calls[0].arguments == first.arguments
