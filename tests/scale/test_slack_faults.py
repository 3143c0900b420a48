"""Slack misbehaving under two instances: rate limits, server errors and answers lost after
Slack did the work. Nothing is lost and nobody sees a message twice.

The local Slack refuses calls with 429 (and Retry-After) or 5xx before doing them
(``fail_next``), or does them and then holds the answer past the client's timeout
(``stall_after_accepting``): the case where posting again would show a person the same proposal,
or the same outcome, twice. Either instance's outbox worker may be the one that retries.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from store.proposals import Status
from tests.scale.cluster import (
    APPROVERS,
    CAMPAIGN_CHANNEL,
    Cluster,
    campaign,
    click,
    on_course,
    posted_messages,
    running_cluster,
    status_counts,
    submit,
    undelivered,
    wait_for,
)

pytestmark = pytest.mark.postgres

#: Proposals per phase.
BATCH = 8
#: Longer than the Slack client's timeout (slack_timeout_seconds = 1 below).
STALL_SECONDS = 2.5


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with running_cluster(
        tmp_path, sweep_interval_seconds=0.5, slack_timeout_seconds=1
    ) as running:
        yield running


async def _submit_batch(cluster: Cluster, first: int) -> list[str]:
    ids = []
    for n in range(first, first + BATCH):
        status, body = await submit(
            cluster.http, cluster.instance(n).url, campaign(n), key=f"slack-faults-{n}"
        )
        assert status == 201, body
        ids.append(str(body["id"]))
    return ids


async def _posted(cluster: Cluster, ids: list[str]) -> dict[str, str]:
    async def check() -> dict[str, str] | None:
        found = {}
        for proposal_id in ids:
            proposal = await cluster.store.get_proposal(proposal_id)
            if proposal.slack_ts is None:
                return None
            found[proposal_id] = proposal.slack_ts
        return found

    ts: dict[str, str] = await wait_for(check, timeout=60, what="every proposal posted")
    return ts


async def _approve(cluster: Cluster, ids: list[str], ts: dict[str, str]) -> None:
    """Two approvers click each proposal at once, each on another instance."""
    for proposal_id in ids:
        for n, user in enumerate(APPROVERS):
            status = await click(
                cluster.http,
                cluster.instance(n).url,
                user=user,
                proposal_id=proposal_id,
                channel=CAMPAIGN_CHANNEL,
                ts=ts[proposal_id],
            )
            assert status == 200


async def _delivered(cluster: Cluster, ids: list[str]) -> None:
    async def check() -> bool:
        on_course(await status_counts(cluster.db_url))
        stored = [await cluster.store.get_proposal(i) for i in ids]
        done = all(p.status is Status.SUCCEEDED for p in stored)
        return done and await cluster.store.pending_deliveries() == 0

    try:
        await wait_for(check, timeout=90, what="every proposal succeeded and reported")
    except AssertionError as error:
        counts = await status_counts(cluster.db_url)
        raise AssertionError(f"{error}: {counts}, {await undelivered(cluster.db_url)}") from None


def _statuses(cluster: Cluster, method: str) -> Counter[int]:
    return Counter(call.status for call in cluster.slack.calls(method))


@pytest.mark.timeout(300)
async def test_slack_faults_across_instances_lose_nothing_and_duplicate_nothing(
    cluster: Cluster,
) -> None:
    slack = cluster.slack
    # posts refused before Slack did them: rate limited, then server errors
    slack.fail_next("chat.postMessage", status=429, retry_after=1, times=2)
    slack.fail_next("chat.postMessage", status=503, times=2)
    slack.fail_next("chat.postMessage", status=500, times=1)
    refused_first = await _submit_batch(cluster, 0)
    ts = await _posted(cluster, refused_first)
    # posts Slack did, whose answers never arrived
    slack.stall_after_accepting("chat.postMessage", seconds=STALL_SECONDS, times=3)
    lost_answers = await _submit_batch(cluster, BATCH)
    ts |= await _posted(cluster, lost_answers)
    ids = refused_first + lost_answers

    # outcome replies Slack did without answering, and message updates refused
    slack.stall_after_accepting("chat.postMessage", seconds=STALL_SECONDS, times=3)
    slack.fail_next("chat.update", status=503, times=3)
    await _approve(cluster, refused_first, ts)
    await _delivered(cluster, refused_first)
    # outcome replies and updates refused: rate limited and server errors
    slack.fail_next("chat.postMessage", status=429, retry_after=1, times=2)
    slack.fail_next("chat.postMessage", status=502, times=2)
    slack.fail_next("chat.update", status=429, retry_after=1, times=2)
    await _approve(cluster, lost_answers, ts)
    await _delivered(cluster, ids)

    # every fault was met
    posts, updates = _statuses(cluster, "chat.postMessage"), _statuses(cluster, "chat.update")
    assert (posts[429], posts[503], posts[500], posts[502]) == (4, 2, 1, 2), posts
    assert (updates[503], updates[429]) == (3, 2), updates
    # nothing lost: every proposal ran once, its message shows the outcome, its thread says so
    assert cluster.target.twice() == {}
    assert set(cluster.target.executions) == {f"countersign-{i}" for i in ids}
    for proposal_id in ids:
        message = slack.message(CAMPAIGN_CHANNEL, ts[proposal_id])
        assert not [b for b in message.blocks if b["type"] == "actions"], proposal_id
        assert len(slack.replies(CAMPAIGN_CHANNEL, ts[proposal_id])) == 1, proposal_id
    # nothing twice: one message per proposal, one reply per thread
    assert posted_messages(slack) == Counter(dict.fromkeys(ids, 1))
    top_level = [m for m in slack.messages(CAMPAIGN_CHANNEL) if not m.is_reply]
    assert len(top_level) == len(ids)
    assert len(slack.calls("conversations.history")) >= 3  # looked before posting again
    assert len(slack.calls("conversations.replies")) >= 3
    report = await cluster.store.verify_audit()
    assert report.ok, report
    assert cluster.tracebacks() == {}
