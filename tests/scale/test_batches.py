"""A batching window with two instances on the real PostgreSQL: proposals of a rule with
``batch`` submitted to either instance join one batch, and when its window closes the batch is
posted once, as one digest, whichever instance's outbox finds it due first."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.digests.outbox import shown_in
from tests.e2e.harness import replace_rule
from tests.scale.cluster import (
    CAMPAIGN_CHANNEL,
    Cluster,
    campaign,
    running_cluster,
    submit,
    undelivered,
    wait_for,
)

pytestmark = pytest.mark.postgres

PROPOSALS = 20

BATCHED = replace_rule(
    "campaigns",
    f"""
    [[policy]]
    id = "campaigns"
    operation = "crm.send_campaign"
    decision = "ask"
    approvers = ["finance"]
    channel = "{CAMPAIGN_CHANNEL}"
    expires_after = "30m"
    batch = {{ window = "8s", max = 50 }}
    """,
)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with running_cluster(tmp_path, digests=True, config_edit=BATCHED) as running:
        yield running


@pytest.mark.timeout(180)
async def test_a_batch_over_two_instances_is_posted_once_as_one_digest(cluster: Cluster) -> None:
    async def one(i: int) -> dict[str, object]:
        url = cluster.instance(i).url
        status, body = await submit(cluster.http, url, campaign(i), key=f"batches-{i}")
        assert status == 201, body
        return body

    answers = await asyncio.gather(*(one(i) for i in range(PROPOSALS)))
    ids = [str(a["id"]) for a in answers]
    assert len({a["shown_after"] for a in answers}) == 1  # one batch, whichever instance

    def shown() -> Counter[str]:
        return Counter(
            proposal_id
            for m in cluster.slack.messages(CAMPAIGN_CHANNEL)
            if not m.is_reply
            for proposal_id in shown_in(m.to_api())
        )

    async def all_shown() -> bool:
        return set(shown()) >= set(ids)

    async def missing() -> str:
        entries = [e for e in await undelivered(cluster.db_url) if e["effect"] == "slack.post"]
        first = await cluster.store.get_proposal(ids[0])
        batch = await cluster.store.digests().get_batch(str(first.batch_id))
        return f"{len(set(ids) - set(shown()))} not shown; batch {batch}; posts waiting {entries}"

    await wait_for(all_shown, timeout=60, what="every proposal shown", explain=missing)

    async def posted() -> bool:  # nothing left that either instance could post again
        pending = [e for e in await undelivered(cluster.db_url) if e["effect"] == "slack.post"]
        first = await cluster.store.get_proposal(ids[0])
        batch = await cluster.store.digests().get_batch(str(first.batch_id))
        return not pending and batch.status == "posted"

    await wait_for(posted, timeout=60, what="the batch marked posted")
    assert shown() == Counter(dict.fromkeys(ids, 1))
    top = [m for m in cluster.slack.messages(CAMPAIGN_CHANNEL) if not m.is_reply]
    assert len(top) == 1
