"""Digests with two instances on the real PostgreSQL: a burst of similar proposals spread over
both is shown once each (each in one message, nearly all in digests), and Approve all on every
digest, clicked on either instance by two approvers at once, executes each proposal once."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.digests.outbox import shown_in
from bot.render.actions import DIGEST_APPROVE_ALL
from store.proposals import Status
from tests.scale.cluster import (
    APPROVERS,
    CAMPAIGN_CHANNEL,
    Cluster,
    campaign,
    click,
    on_course,
    running_cluster,
    status_counts,
    submit,
    wait_for,
)

pytestmark = pytest.mark.postgres

PROPOSALS = 40


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with running_cluster(tmp_path, digests=True) as running:
        yield running


def _shown(cluster: Cluster) -> dict[str, list[str]]:
    """Message ts -> the proposals it shows, for every top-level message of the channel."""
    return {
        m.ts: list(shown_in(m.to_api()))
        for m in cluster.slack.messages(CAMPAIGN_CHANNEL)
        if not m.is_reply
    }


@pytest.mark.timeout(300)
async def test_a_burst_over_two_instances_is_shown_once_and_each_item_runs_once(
    cluster: Cluster,
) -> None:
    async def one(i: int) -> str:
        url = cluster.instance(i).url
        status, body = await submit(cluster.http, url, campaign(i), key=f"digests-{i}")
        assert status == 201, body
        return str(body["id"])

    ids = await asyncio.gather(*(one(i) for i in range(PROPOSALS)))

    async def all_shown() -> bool:
        shown = Counter(i for items in _shown(cluster).values() for i in items)
        if not set(shown) >= set(ids):
            return False
        # Slack answers a post before its instance stores where it is (the message's ts, its
        # digest): wait for that too, or the checks below read a proposal a moment too early
        stored = await cluster.store.digests().get_proposals(ids)
        return all(p.slack_ts is not None for p in stored)

    await wait_for(all_shown, timeout=60, what="every proposal shown")
    messages = _shown(cluster)
    assert Counter(i for items in messages.values() for i in items) == Counter(
        dict.fromkeys(ids, 1)
    )
    digests = {ts: items for ts, items in messages.items() if len(items) > 1}
    assert len(messages) < PROPOSALS / 2, messages  # grouped, not one message each
    for ts, items in messages.items():
        for proposal_id in items:
            proposal = await cluster.store.get_proposal(proposal_id)
            assert proposal.slack_ts == ts
            assert (proposal.digest_id is not None) == (ts in digests)

    async def approve(n: int, ts: str, items: list[str]) -> None:
        first = await cluster.store.get_proposal(items[0])
        target = first.digest_id if ts in digests else first.id
        action = DIGEST_APPROVE_ALL if ts in digests else "approve"
        assert target is not None
        for user_n, user in enumerate(APPROVERS):  # two approvers, on both instances
            status = await click(
                cluster.http,
                cluster.instance(n + user_n).url,
                user=user,
                proposal_id=target,
                channel=CAMPAIGN_CHANNEL,
                ts=ts,
                action_id=action,
            )
            assert status == 200

    await asyncio.gather(*(approve(n, ts, items) for n, (ts, items) in enumerate(messages.items())))

    async def settled() -> bool:
        assert cluster.tracebacks() == {}
        counts = await status_counts(cluster.db_url)
        on_course(counts)
        return counts == Counter({Status.SUCCEEDED: PROPOSALS}) and (
            await cluster.store.pending_deliveries() == 0
        )

    await wait_for(settled, timeout=120, what="every proposal succeeded and reported")
    assert cluster.target.twice() == {}
    assert set(cluster.target.executions) == {f"countersign-{i}" for i in ids}
    for ts, items in digests.items():  # each item's outcome reported once in its thread
        replies = " ".join(str(r.blocks) for r in cluster.slack.replies(CAMPAIGN_CHANNEL, ts))
        numbers = range(1, len(items) + 1)  # a reply names an item by its number in the digest
        assert {n: replies.count(f"*Item {n}:*") for n in numbers} == dict.fromkeys(numbers, 1)
    assert (await cluster.store.verify_audit()).ok
