"""What the full client (countersign.AsyncClient) tells its caller when Countersign fails while a
question is asked or waited for: the store really stops answering (PostgreSQL behind a proxy
that is cut). Never an answer people did not give: NotAsked when nothing was stored, and once
people were asked WaitInterrupted, saying whether the proposal was withdrawn or may still be
decided in Slack, and when Countersign asked to try again; all within the caller's timeout (and
the withdrawal's grace). What it says matches what the store holds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import countersign
from countersign import NotAsked, WaitInterrupted
from tests.e2e.harness import AGENT_TOKEN, REQUESTER, Countersign, running_countersign
from tests.e2e.store_outage import StoreProxy, postgres_through_proxy
from tests.e2e.test_client import pending_in_slack, with_decisions

pytestmark = pytest.mark.postgres


@pytest.fixture
async def outage(tmp_path: Path) -> AsyncIterator[tuple[Countersign, StoreProxy]]:
    async with (
        postgres_through_proxy() as (url, proxy),
        running_countersign(tmp_path, store_url=url, config_edit=with_decisions) as running,
    ):
        yield running, proxy


@pytest.fixture
async def client(
    outage: tuple[Countersign, StoreProxy],
) -> AsyncIterator[countersign.AsyncClient]:
    cs, _ = outage
    async with countersign.AsyncClient(
        cs.url, AGENT_TOKEN, requested_by=REQUESTER, long_poll_seconds=2
    ) as made:
        yield made


async def test_a_store_outage_before_the_question_says_nobody_was_asked_within_the_timeout(
    outage: tuple[Countersign, StoreProxy], client: countersign.AsyncClient
) -> None:
    cs, proxy = outage
    await proxy.cut()
    started = time.monotonic()

    with pytest.raises(NotAsked) as raised:
        await client.approve("Restart the checkout service", "Errors are up", timeout=3)

    assert time.monotonic() - started < 3 + 2  # not four tries 5 s apart
    assert raised.value.retry_after == 5
    assert isinstance(raised.value.failure, countersign.ProblemError)
    assert raised.value.failure.status == 503
    said = str(raised.value)
    assert "nobody was asked" in said
    assert "Store unavailable" in said
    assert "retry after 5 s" in said  # the server says when; not said twice
    await proxy.restore()
    assert await cs.store.pending_proposals() == []  # as it says


async def test_a_store_outage_while_approve_waits_says_the_proposal_may_still_be_decided(
    outage: tuple[Countersign, StoreProxy], client: countersign.AsyncClient
) -> None:
    cs, proxy = outage
    asked = asyncio.create_task(client.approve("Deploy v2", "All checks passed", timeout=4))
    proposal = await pending_in_slack(cs, "decision")
    await proxy.cut()

    with pytest.raises(WaitInterrupted) as raised:
        await asked
    await proxy.restore()

    interrupted = raised.value
    assert interrupted.proposal.id == proposal.id
    assert not interrupted.withdrawn
    assert interrupted.retry_after == 5
    said = str(interrupted)
    assert "nobody had decided it" in said
    assert "may still be decided in Slack" in said
    assert "do not act" in said
    assert (await cs.store.get_proposal(proposal.id)).status == "pending"  # as it says


async def test_a_store_back_within_the_grace_lets_approve_withdraw_the_proposal_and_say_so(
    outage: tuple[Countersign, StoreProxy], client: countersign.AsyncClient
) -> None:
    cs, proxy = outage
    asked = asyncio.create_task(client.approve("Deploy v2", "All checks passed", timeout=4))
    proposal = await pending_in_slack(cs, "decision")
    await proxy.cut()
    await asyncio.sleep(2)  # the wait's read meets the outage; the withdrawal is retried
    await proxy.restore()

    with pytest.raises(WaitInterrupted) as raised:
        await asked

    assert raised.value.withdrawn
    assert "It was withdrawn, so nothing will come of it" in str(raised.value)
    assert (await cs.store.get_proposal(proposal.id)).status == "cancelled"  # as it says


async def test_a_store_outage_during_wait_names_the_proposal_still_pending_and_when_to_retry(
    outage: tuple[Countersign, StoreProxy], client: countersign.AsyncClient
) -> None:
    cs, proxy = outage
    proposed = await client.propose("decision", {"title": "Deploy v2", "detail": "Checks pass"})
    await pending_in_slack(cs, "decision")
    waiting = asyncio.create_task(client.wait(proposed.id, timeout=4))
    await asyncio.sleep(0.5)  # the long poll is held
    await proxy.cut()
    started = time.monotonic()

    with pytest.raises(WaitInterrupted) as raised:
        await waiting
    await proxy.restore()

    assert time.monotonic() - started < 4 + 1
    assert raised.value.proposal.id == proposed.id
    assert raised.value.retry_after == 5
    said = str(raised.value)
    assert "Store unavailable" in said
    assert "still pending there and may still be decided in Slack" in said
    assert "retry after 5 s" in said  # the server says when; not said twice
    assert (await cs.store.get_proposal(proposed.id)).status == "pending"
