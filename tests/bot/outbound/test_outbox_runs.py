"""A decision's Slack work as one job (bot/outbound/outbox.py, SlackPublisher.deliver_run): its
message update and thread reply leased by one claim, delivered in order from one read of the
proposal, completed in one write; on a real SQLite store and the local Slack over HTTP."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.outbound.outbox import OutboxWorker, RetryPolicy
from bot.slack.local import LocalSlack, running_local_slack
from bot.slack.publish import SlackPublisher, make_web_client
from store.proposals import Effect, Proposal
from store.sqlite import SqliteStore
from tests.store.conformance import new_proposal

NOW = datetime(2031, 3, 14, 15, 9, 26, tzinfo=UTC)
CHANNEL = "C0FINANCE"
LEASE = timedelta(seconds=60)


class CountedStore:
    """The real store, counting the calls of each verb (the outbox's claims, reads and
    completions; its digests' verbs as ``digests.<verb>``); ``stop_completing`` makes
    completions never answer, as a process that dies between Slack's answer and the
    completion's write."""

    def __init__(self, store: Any, calls: Counter[str] | None = None, prefix: str = "") -> None:
        self._store = store
        self._prefix = prefix
        self.calls: Counter[str] = Counter() if calls is None else calls
        self.stop_completing = False

    def digests(self) -> Any:
        return CountedStore(self._store.digests(), self.calls, "digests.")

    def __getattr__(self, name: str) -> Any:
        verb = getattr(self._store, name)
        if not asyncio.iscoroutinefunction(verb):
            return verb

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[self._prefix + name] += 1
            if self.stop_completing and name.startswith("complete_deliver"):
                await asyncio.Event().wait()  # never answers
            return await verb(*args, **kwargs)

        return counted


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Outbox:
    store: SqliteStore
    counted: CountedStore
    slack: LocalSlack
    url: str
    clock: Clock

    def worker(self) -> OutboxWorker:
        """A worker as an instance starts it: its own publisher (and pacer)."""
        publisher = SlackPublisher(
            make_web_client("xoxb-test", self.url),
            self.counted,
            self.clock,
            outbox_client=make_web_client("xoxb-test", self.url, retries=False),
        )
        deliver = publisher.deliver
        return OutboxWorker(
            self.counted,
            {Effect.SLACK_POST: deliver, Effect.SLACK_UPDATE: deliver, Effect.SLACK_REPLY: deliver},
            self.clock,
            policy=RetryPolicy(),
            lease=LEASE,
            deliver_run=publisher.deliver_run,
        )

    async def decided(self) -> Proposal:
        """A proposal posted in Slack, then rejected: its update and reply are due."""
        worker = self.worker()
        new, _ = await self.store.create_proposal(new_proposal(NOW, callback_url=None))
        assert await worker.run_once() == 1  # posted
        await self.store.reject(new.id, actor="U0REJECTER", reason="too much", now=NOW)
        self.counted.calls.clear()
        return await self.store.get_proposal(new.id)

    def replies(self, proposal: Proposal) -> list[Any]:
        assert proposal.slack_ts is not None
        return self.slack.replies(CHANNEL, proposal.slack_ts)


async def eventually(check: Callable[[], bool]) -> None:
    async with asyncio.timeout(10):
        for _ in iter(check, True):  # polled until it holds
            await asyncio.sleep(0.01)


@pytest.fixture
async def outbox(tmp_path: Path) -> AsyncIterator[Outbox]:
    store = await SqliteStore.open(tmp_path / "countersign.sqlite")
    try:
        async with running_local_slack("xoxb-test") as (slack, url):
            yield Outbox(store, CountedStore(store), slack, url, Clock())
    finally:
        await store.close()


async def test_a_decisions_update_and_reply_cost_one_claim_one_read_and_one_completion(
    outbox: Outbox,
) -> None:
    proposal = await outbox.decided()

    attempted = await outbox.worker().run_once()

    assert attempted == 2  # the update and the reply, by one round
    calls = outbox.counted.calls
    assert calls["claim_deliveries"] == 1
    assert calls["digests.get_proposals"] + calls["get_proposal"] == 1  # the round's one read
    assert calls["complete_deliveries"] == 1
    assert calls["complete_delivery"] == 0
    assert sum(calls.values()) == 3  # nothing else: no retry, no deferral
    assert await outbox.store.pending_deliveries() == 0
    [update] = outbox.slack.calls("chat.update")
    [_post, reply] = outbox.slack.calls("chat.postMessage")
    assert reply.args["thread_ts"] == proposal.slack_ts
    assert update.at <= reply.at  # the message shows the decision before the thread says it
    assert len(outbox.replies(proposal)) == 1


async def test_a_reply_slack_rate_limits_is_retried_alone_and_posted_once(
    outbox: Outbox,
) -> None:
    proposal = await outbox.decided()
    outbox.slack.fail_next("chat.postMessage", status=429, retry_after=1)
    worker = outbox.worker()

    await worker.run_once()

    assert await outbox.store.pending_deliveries() == 1  # the update is done, the reply waits
    assert outbox.replies(proposal) == []
    await asyncio.sleep(1.1)  # Slack's Retry-After, which the publisher's pacer keeps
    outbox.clock.now += timedelta(seconds=2)
    assert await worker.run_once() == 1  # the reply alone

    assert [c.status for c in outbox.slack.calls("chat.update")] == [200]  # not done again
    replies = [c for c in outbox.slack.calls("chat.postMessage") if c.args.get("thread_ts")]
    assert [c.status for c in replies] == [429, 200]
    assert len(outbox.replies(proposal)) == 1
    assert await outbox.store.pending_deliveries() == 0


async def test_a_crash_after_slack_answered_and_before_the_completion_delivers_again_once(
    outbox: Outbox,
) -> None:
    proposal = await outbox.decided()
    outbox.counted.stop_completing = True
    dying = asyncio.create_task(outbox.worker().run_once())
    await eventually(lambda: len(outbox.slack.calls()) == 3)  # post, update, reply: all taken
    await asyncio.sleep(0.1)
    assert not dying.done()  # its completion never answered: the process is gone
    dying.cancel()
    await asyncio.gather(dying, return_exceptions=True)
    assert await outbox.store.pending_deliveries() == 2
    outbox.counted.stop_completing = False

    outbox.clock.now += LEASE  # the dead worker's leases run out
    assert await outbox.worker().run_once() == 2

    # delivered again: the update re-rendered, the reply found in the thread, not posted twice
    assert len(outbox.slack.calls("chat.update")) == 2
    assert len(outbox.slack.calls("conversations.replies")) == 1
    assert len(outbox.replies(proposal)) == 1
    assert await outbox.store.pending_deliveries() == 0
