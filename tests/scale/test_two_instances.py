"""Two `countersign serve` processes on one PostgreSQL database: exactly one execution per
proposal, however many clicks reach however many instances, and one outcome in each thread.

``COUNTERSIGN_SCALE_PROPOSALS`` sets how many proposals (default 200, the CI size).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from store.proposals import Status
from tests.e2e.harness import AGENT_TOKEN
from tests.scale.cluster import (
    APPROVERS,
    CAMPAIGN_CHANNEL,
    Cluster,
    CountingTarget,
    campaign,
    click,
    env_size,
    on_course,
    posted_messages,
    running_cluster,
    status_counts,
    submit,
    undelivered,
    wait_for,
)

pytestmark = pytest.mark.postgres

log = logging.getLogger(__name__)

#: Proposals in the concurrency test (read at collection: the environment is scrubbed later).
PROPOSALS = env_size("COUNTERSIGN_SCALE_PROPOSALS", 200)
#: Approve clicks sent at once for each proposal, spread over both instances (each approver's
#: on one instance).
CLICKS_PER_PROPOSAL = 32
#: Proposals whose clicks are in flight at the same time.
PROPOSALS_AT_ONCE = 4
#: What a clicker is told when the proposal was decided before their approval counted.
DECIDED = "This proposal was already decided."
#: ... and when their click is still waiting to be applied a second after it arrived.
RECORDED = "recorded; it is being checked and run now"
#: Submissions in flight at the same time.
SUBMISSIONS_AT_ONCE = 16


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    # Room for every click at once: each one must reach the claim, none be turned away as
    # "busy" (bot/api/admission.py; tests/e2e/test_overload.py covers that answer).
    room = PROPOSALS * CLICKS_PER_PROPOSAL
    async with running_cluster(
        tmp_path,
        sweep_interval_seconds=0.5,
        slack_timeout_seconds=10,
        max_in_flight_clicks=min(room, 10000),
    ) as running:
        yield running


async def _submit_all(cluster: Cluster, count: int) -> list[str]:
    room = asyncio.Semaphore(SUBMISSIONS_AT_ONCE)

    async def one(i: int) -> str:
        async with room:
            status, body = await submit(
                cluster.http, cluster.instance(i).url, campaign(i), key=f"two-instances-{i}"
            )
        assert status == 201, body
        assert body["status"] == "pending", body
        return str(body["id"])

    return list(await asyncio.gather(*(one(i) for i in range(count))))


async def _all_posted(cluster: Cluster, ids: list[str]) -> dict[str, str]:
    """Wait until every proposal's message is in the channel; proposal id -> message ts."""

    async def check() -> dict[str, str] | None:
        posted = posted_messages(cluster.slack)
        if not all(posted[i] for i in ids):
            return None
        return {
            str(m.metadata["event_payload"]["proposal_id"]): m.ts
            for m in cluster.slack.messages(CAMPAIGN_CHANNEL)
            if not m.is_reply and m.metadata
        }

    found: dict[str, str] = await wait_for(
        check, timeout=60 + len(ids) * 0.2, what="every proposal posted"
    )
    return found


async def _clicks_on(cluster: Cluster, proposal_id: str, ts: str, clicks: int) -> list[int]:
    """``clicks`` approve clicks at once, alternating instances and approvers."""
    return list(
        await asyncio.gather(
            *(
                click(
                    cluster.http,
                    cluster.instance(n).url,
                    user=APPROVERS[n % len(APPROVERS)],
                    proposal_id=proposal_id,
                    channel=CAMPAIGN_CHANNEL,
                    ts=ts,
                )
                for n in range(clicks)
            )
        )
    )


@pytest.mark.timeout(300 + PROPOSALS)
async def test_two_instances_execute_each_proposal_once_and_post_its_outcome_once(
    cluster: Cluster,
) -> None:
    started = time.monotonic()
    ids = await _submit_all(cluster, PROPOSALS)
    messages = await _all_posted(cluster, ids)
    posted_at = time.monotonic()

    room = asyncio.Semaphore(PROPOSALS_AT_ONCE)
    answers: Counter[int] = Counter()

    async def approve(proposal_id: str) -> None:
        async with room:
            answers.update(
                await _clicks_on(cluster, proposal_id, messages[proposal_id], CLICKS_PER_PROPOSAL)
            )

    await asyncio.gather(*(approve(i) for i in ids))
    clicked_at = time.monotonic()

    async def lost() -> Counter[str]:
        """Per approver, the proposals another approver decided (their approval came late)."""
        deciders = [e.actor for e in await cluster.store.audit_log() if e.event == "approved"]
        return Counter({user: len(ids) - deciders.count(user) for user in APPROVERS})

    def told_decided() -> Counter[str]:
        return Counter(m.user for m in cluster.slack.ephemeral() if DECIDED in m.text)

    async def settled() -> bool:
        assert cluster.tracebacks() == {}
        counts = await status_counts(cluster.db_url)
        on_course(counts)
        done = counts == Counter({Status.SUCCEEDED: len(ids)})
        answered = told_decided() >= await lost()  # every late approval told who decided
        applied = await cluster.store.clicks().waiting_clicks() == 0
        return done and answered and applied and await cluster.store.pending_deliveries() == 0

    async def still_missing() -> str:
        failed = [
            e.detail for e in await cluster.store.audit_log() if e.event == "slack_call_failed"
        ]
        return (
            f"statuses {dict(await status_counts(cluster.db_url))}, "
            f"told it was decided {dict(told_decided())} of at least {dict(await lost())}, "
            f"clicks waiting {await cluster.store.clicks().waiting_clicks()}, "
            f"undelivered {await undelivered(cluster.db_url)}, "
            f"failed Slack calls {failed[:5]} ({len(failed)})"
        )

    await wait_for(
        settled,
        timeout=60 + len(ids),
        what="every proposal succeeded and reported",
        explain=still_missing,
    )
    finished = time.monotonic()

    assert set(answers) == {200}, answers
    # exactly one execution per proposal, each with its own idempotency key
    assert cluster.target.twice() == {}
    assert set(cluster.target.executions) == {f"countersign-{i}" for i in ids}
    # each proposal shown once, and its outcome once in its thread
    assert posted_messages(cluster.slack) == Counter(dict.fromkeys(ids, 1))
    replies = {i: cluster.slack.replies(CAMPAIGN_CHANNEL, messages[i]) for i in ids}
    assert {i: len(r) for i, r in replies.items() if len(r) != 1} == {}
    log_entries = await cluster.store.audit_log()
    # Every clicker was answered the truth, privately, and no click twice. An Approve click on a
    # pending proposal is recorded once per person (bot/flow/clicks.py): that person's other
    # clicks meanwhile share the record and its one answer. Its clicker hears "recorded" when
    # it is still waiting after a second (at most once per click); a late approval (another
    # approver decided first) is told who decided once, and so is each click that arrived after
    # the decision. The decider's own approval is answered by the message.
    clicks_each = len(ids) * CLICKS_PER_PROPOSAL // len(APPROVERS)
    late = await lost()
    for user in APPROVERS:
        told = [m.text for m in cluster.slack.ephemeral(user)]
        decided = [t for t in told if DECIDED in t]
        recorded = Counter(t.split(" of ", 1)[1].split(" ", 1)[0] for t in told if RECORDED in t)
        assert len(decided) + sum(recorded.values()) == len(told), told  # nothing else
        assert late[user] <= len(decided), (user, late[user], len(decided))
        assert len(told) <= clicks_each + late[user], (user, len(told), clicks_each, late[user])
        assert max(recorded.values(), default=0) <= CLICKS_PER_PROPOSAL // len(APPROVERS)
        assert set(recorded) <= set(ids)
    failed = [e for e in log_entries if e.event == "slack_call_failed"]
    assert failed == []
    assert not [m for m in cluster.slack.ephemeral() if "busy" in m.text]
    top_level = [m for m in cluster.slack.messages(CAMPAIGN_CHANNEL) if not m.is_reply]
    assert len(top_level) == len(ids)
    # one claim per proposal in the audit log, and one linear chain
    approved = Counter(e.proposal_id for e in log_entries if e.event == "approved")
    assert approved == Counter(dict.fromkeys(ids, 1))
    assert [e.seq for e in log_entries] == list(range(1, len(log_entries) + 1))
    assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(log_entries))
    report = await cluster.store.verify_audit()
    assert report.ok, report
    assert cluster.tracebacks() == {}

    print(
        f"\ntwo instances: {len(ids)} proposals, {sum(answers.values())} clicks "
        f"({CLICKS_PER_PROPOSAL} per proposal), {sum(cluster.target.executions.values())} "
        f"executions; submit+post {posted_at - started:.1f} s, "
        f"clicks {clicked_at - posted_at:.1f} s, settled {finished - clicked_at:.1f} s; "
        f"{report.checked} audit entries; answers {len(cluster.slack.ephemeral())} "
        f"({sum(DECIDED in m.text for m in cluster.slack.ephemeral())} told who decided)"
    )


@pytest.fixture
async def held_cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """A cluster whose target holds each execution until the test lets it answer."""
    target = CountingTarget(held=asyncio.Event())
    async with running_cluster(tmp_path, target=target, sweep_interval_seconds=0.5) as running:
        yield running


#: How long instance A's long-poll waits before it reads the store again on its own
#: (bot/api/waiters.py POLL_SLICE): an answer sooner than this was woken by a notification.
POLL_SLICE = 1.0


@pytest.mark.timeout(120)
async def test_a_long_poll_on_one_instance_wakes_when_the_decision_lands_on_the_other(
    held_cluster: Cluster,
) -> None:
    cluster = held_cluster
    assert cluster.target.held is not None
    a, b = cluster.instances
    heard: list[str] = []
    await cluster.store.listen(heard.append)
    [proposal_id] = await _submit_all(cluster, 1)
    messages = await _all_posted(cluster, [proposal_id])

    # the click lands on B, which claims and starts executing; the target holds the answer
    ts = messages[proposal_id]
    user = APPROVERS[0]
    assert (
        await click(
            cluster.http, b.url, user=user, proposal_id=proposal_id, channel=CAMPAIGN_CHANNEL, ts=ts
        )
        == 200
    )
    await asyncio.wait_for(cluster.target.arrived.wait(), timeout=10)
    await wait_for(lambda: _status_is(cluster, proposal_id, Status.EXECUTING), timeout=5)

    # the agent long-polls A, which reads 'executing' and waits
    loop = asyncio.get_running_loop()
    sent = loop.time()
    waiting = asyncio.create_task(_long_poll(cluster, a.url, proposal_id, wait=30))
    await asyncio.sleep(0.3)
    assert not waiting.done()
    cluster.target.held.set()  # B records the outcome now
    status, body = await waiting
    answered = loop.time()

    assert status == 200, body
    assert body["status"] == "succeeded", body
    assert proposal_id in heard  # the database announced B's change to every listener
    # A read the store at least POLL_SLICE after it first read it (no sooner than `sent`) unless
    # something woke it: an answer before that came from B's notification, not from polling.
    assert answered - sent < POLL_SLICE, f"answered {answered - sent:.2f} s after the request"
    assert sum(cluster.target.executions.values()) == 1
    assert b.running and a.running


async def _long_poll(
    cluster: Cluster, url: str, proposal_id: str, *, wait: float
) -> tuple[int, dict[str, object]]:
    async with cluster.http.get(
        f"{url}/v1/proposals/{proposal_id}",
        params={"wait": str(wait)},
        headers={"Authorization": f"Bearer {AGENT_TOKEN}"},
    ) as answer:
        return answer.status, await answer.json()


async def _status_is(cluster: Cluster, proposal_id: str, status: Status) -> bool:
    return (await cluster.store.get_proposal(proposal_id)).status is status
