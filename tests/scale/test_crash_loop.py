"""A crash loop: proposals and clicks keep coming while a server process is killed with SIGKILL,
again and again, and restarted on the same port.

The load generator acts like an agent and its approvers: it submits each proposal with an
Idempotency-Key and sends it again after a connection error (a retried submission is the same
proposal), waits for the proposal's message, and clicks Approve until the proposal is decided
(a click cut off by a kill is clicked again, as a person would). Executions take 20-50 ms at
the target, so kills land mid-execution; the execution lease is 2 s, so abandoned executions
are handed to a person within the test. Nobody retries an uncertain execution here, so no
Idempotency-Key may reach the target twice.

``COUNTERSIGN_CRASH_PROPOSALS`` (default 1000) and ``COUNTERSIGN_CRASH_KILLS`` (default 20)
make the run larger by hand.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import asyncpg
import pytest

from store.proposals import Status
from tests.scale.cluster import (
    APPROVERS,
    CAMPAIGN_CHANNEL,
    Cluster,
    CountingTarget,
    campaign,
    click,
    env_size,
    posted_messages,
    running_cluster,
    status_counts,
    submit,
    undelivered,
    wait_for,
)

pytestmark = pytest.mark.postgres

#: Proposals submitted during the crash loop (read at collection: the environment is scrubbed).
PROPOSALS = env_size("COUNTERSIGN_CRASH_PROPOSALS", 1000)
#: SIGKILLs at least; the loop keeps killing while the load runs.
KILLS = env_size("COUNTERSIGN_CRASH_KILLS", 20)
#: Agents (and their approvers) working at the same time.
WORKERS = 32
#: A click not followed by a decision within this long is clicked again.
RECLICK_SECONDS = 3.0
LEASE_SECONDS = 2

#: What a request to a process being killed or restarted can meet.
CUT_OFF = (aiohttp.ClientError, OSError, asyncio.TimeoutError)


@dataclass
class Load:
    acknowledged: dict[int, str]  #: proposal number -> id, from a 201 or 200 answer
    submit_retries: int = 0
    clicks: int = 0
    click_retries: int = 0


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    target = CountingTarget(delay=(0.02, 0.05))
    async with running_cluster(
        tmp_path,
        target=target,
        sweep_interval_seconds=0.5,
        execution_lease_seconds=LEASE_SECONDS,
        slack_timeout_seconds=5,
    ) as running:
        yield running


async def _submit_until_acknowledged(cluster: Cluster, n: int, load: Load) -> str:
    for attempt in itertools.count():
        node = cluster.instance(n + attempt)  # after a failure, the other instance
        try:
            status, body = await submit(cluster.http, node.url, campaign(n), key=f"crash-{n}")
        except CUT_OFF:
            load.submit_retries += 1
            await asyncio.sleep(0.05)
            continue
        if status == 503:  # at capacity: nothing stored; try again shortly
            await asyncio.sleep(0.2)
            continue
        assert status in (200, 201), (status, body)
        return str(body["id"])
    raise AssertionError("unreachable")


async def _approve_until_decided(cluster: Cluster, proposal_id: str, load: Load) -> None:
    async def posted() -> tuple[str, str] | None:
        proposal = await cluster.store.get_proposal(proposal_id)
        if proposal.slack_channel and proposal.slack_ts:
            return proposal.slack_channel, proposal.slack_ts
        return None

    # a post whose worker was killed waits for its delivery lease (60 s) to run out
    try:
        channel, ts = await wait_for(posted, timeout=300, interval=0.25)
    except AssertionError:
        entries = [e for e in await undelivered(cluster.db_url) if e["proposal_id"] == proposal_id]
        raise AssertionError(f"{proposal_id} was not posted; its outbox: {entries}") from None
    while True:
        node = random.choice(cluster.instances)
        try:
            status = await click(
                cluster.http,
                node.url,
                user=random.choice(APPROVERS),
                proposal_id=proposal_id,
                channel=channel,
                ts=ts,
            )
        except CUT_OFF:
            load.click_retries += 1
            await asyncio.sleep(0.05)
            continue
        assert status == 200
        load.clicks += 1
        deadline = time.monotonic() + RECLICK_SECONDS
        while time.monotonic() < deadline:
            if (await cluster.store.get_proposal(proposal_id)).status is not Status.PENDING:
                return
            await asyncio.sleep(0.2)


async def _generate_load(cluster: Cluster, load: Load) -> None:
    numbers = iter(range(PROPOSALS))

    async def worker() -> None:
        for n in numbers:
            proposal_id = await _submit_until_acknowledged(cluster, n, load)
            load.acknowledged[n] = proposal_id
            await _approve_until_decided(cluster, proposal_id, load)

    await asyncio.gather(*(worker() for _ in range(WORKERS)))


async def _kill_repeatedly(cluster: Cluster, load_done: asyncio.Event) -> int:
    """SIGKILL one instance again and again, restarting it on its port, while the load runs.

    The other instance stays up, as a surviving machine would, and takes over what the victim
    left: its deliveries once their leases run out, its executions once their leases do.
    """
    victim = cluster.instances[-1]
    kills = 0
    while kills < KILLS or not load_done.is_set():
        await asyncio.sleep(random.uniform(0.5, 2.0))
        await victim.kill()
        kills += 1
        await asyncio.sleep(random.uniform(0.0, 0.3))
        await victim.start()
    return kills


@pytest.mark.timeout(600 + PROPOSALS)
async def test_a_crash_loop_loses_no_acknowledged_proposal_and_executes_none_twice(
    cluster: Cluster,
) -> None:
    started = time.monotonic()
    load = Load(acknowledged={})
    load_done = asyncio.Event()
    killer = asyncio.create_task(_kill_repeatedly(cluster, load_done))
    try:
        await _generate_load(cluster, load)
    finally:
        load_done.set()
        kills = await killer
    loaded = time.monotonic()

    async def settled() -> bool:
        counts = await status_counts(cluster.db_url)
        unsettled = counts[Status.PENDING] + counts[Status.EXECUTING]
        return not unsettled and await cluster.store.pending_deliveries() == 0

    # a delivery whose worker was killed waits for its lease (60 s) before another takes it
    await wait_for(settled, timeout=180, interval=0.5, what="nothing executing, outbox empty")
    finished = time.monotonic()

    ids = set(load.acknowledged.values())
    assert len(load.acknowledged) == PROPOSALS
    # every acknowledged proposal is there, once (a retried submission is the same proposal)
    db = await asyncpg.connect(cluster.db_url)
    try:
        rows = await db.fetch("SELECT id, submission_key, status FROM proposals")
    finally:
        await db.close()
    stored = {row["id"]: row for row in rows}
    assert set(stored) == ids
    assert {stored[i]["submission_key"] for i in ids} == {f"crash-{n}" for n in range(PROPOSALS)}
    # no Idempotency-Key reached the target twice; every success was executed exactly once
    assert cluster.target.twice() == {}
    statuses = Counter(row["status"] for row in rows)
    assert statuses[Status.EXECUTING] == 0
    assert statuses[Status.PENDING] == 0
    assert set(statuses) <= {Status.SUCCEEDED, Status.NEEDS_RECONCILIATION}, statuses
    for proposal_id, row in stored.items():
        if row["status"] == Status.SUCCEEDED:
            assert cluster.target.executions[f"countersign-{proposal_id}"] == 1, proposal_id
    # an execution whose executor died was handed to a person, never run again
    log_entries = await cluster.store.audit_log()
    abandoned = {e.proposal_id for e in log_entries if e.event == "execution_abandoned"}
    reconcile = {i for i in ids if stored[i]["status"] == Status.NEEDS_RECONCILIATION}
    assert abandoned <= reconcile
    # each proposal was shown once, and what became of it once in its thread
    assert posted_messages(cluster.slack) == Counter(dict.fromkeys(ids, 1))
    top_level = [m for m in cluster.slack.messages(CAMPAIGN_CHANNEL) if not m.is_reply]
    replies = Counter(len(cluster.slack.replies(CAMPAIGN_CHANNEL, m.ts)) for m in top_level)
    assert replies == Counter({1: PROPOSALS}), replies
    report = await cluster.store.verify_audit()
    assert report.ok, report
    assert [e.seq for e in log_entries] == list(range(1, len(log_entries) + 1))

    print(
        f"\ncrash loop: {PROPOSALS} proposals acknowledged, {kills} SIGKILLs, "
        f"{load.clicks} clicks, {sum(cluster.target.executions.values())} executions "
        f"({len(cluster.target.executions)} keys, none twice), "
        f"{statuses[Status.SUCCEEDED]} succeeded, {len(reconcile)} needs_reconciliation "
        f"({len(abandoned)} by lease expiry); retries after a cut-off: "
        f"{load.submit_retries} submissions, {load.click_retries} clicks; "
        f"load {loaded - started:.0f} s, settle {finished - loaded:.0f} s; "
        f"{report.checked} audit entries"
    )
