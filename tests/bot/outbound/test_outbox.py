"""The outbox worker's loop (bot/outbound/outbox.py) on a real SQLite store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.outbound.outbox import OutboxWorker, RetryPolicy
from store.proposals import Delivery, Effect
from store.sqlite import SqliteStore
from tests.store.conformance import new_proposal

NOW = datetime(2031, 3, 14, 15, 9, 26, tzinfo=UTC)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    opened = await SqliteStore.open(tmp_path / "countersign.sqlite")
    yield opened
    await opened.close()


class CommittedDuringTheClaim:
    """The store, except that while the worker's first round claims, a change commits an entry
    and wakes the worker: the claim read too early to see it (a submission landing mid-round)."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store
        self.worker: OutboxWorker | None = None
        self.rounds = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def claim_deliveries(self, **options: Any) -> list[Delivery]:
        self.rounds += 1
        claimed = await self._store.claim_deliveries(**options)
        if self.rounds == 1:
            await self._store.create_proposal(new_proposal(NOW))
            assert self.worker is not None
            self.worker.wake()
        return claimed


async def test_a_wake_during_a_round_starts_the_next_round_at_once(store: SqliteStore) -> None:
    racing = CommittedDuringTheClaim(store)
    posted = asyncio.Event()

    async def post(delivery: Delivery) -> None:
        posted.set()

    worker = OutboxWorker(
        racing,
        {Effect.SLACK_POST: post},
        lambda: NOW,
        policy=RetryPolicy(),
        idle_poll=3600,  # only a wake can start another round within the test
    )
    racing.worker = worker
    running = asyncio.create_task(worker.run())
    try:
        await asyncio.wait_for(posted.wait(), timeout=10)
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    assert racing.rounds >= 2
