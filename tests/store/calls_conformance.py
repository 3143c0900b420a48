"""Reading back the agents' calls (for policy simulate) on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from store.proposals import calls as calls_module
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

    async def test_pages_follow_on_in_order_through_calls_made_at_the_same_moment(
        self, store: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Pages of two: each starts after the (created_at, id) the last one ended at, so calls
        made at one moment are neither skipped nor read twice across a page's end; a call made
        at ``since`` is in, one a microsecond before is not."""
        monkeypatch.setattr(calls_module, "PAGE", 2)
        since = NOW - timedelta(hours=1)
        early = new_proposal(since - timedelta(microseconds=1))
        at_since = [new_proposal(since, id=f"cs_at{n}") for n in (3, 1, 2)]
        later = [new_proposal(since + timedelta(minutes=1), id=f"cs_later{n}") for n in (2, 1)]
        for new in (*later, early, *at_since):
            await store.create_proposal(new)

        calls = await recorded_calls(store, since=since)

        assert [call.id for call in calls] == [
            "cs_at1",
            "cs_at2",
            "cs_at3",
            "cs_later1",
            "cs_later2",
        ]
