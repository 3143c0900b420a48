"""When the event loop falls behind, agents' submissions are shed at once and people's clicks are
not: a real stall of the loop (a callback that holds it), real requests over HTTP."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.api.agent_requests import LOOP_LAG, QUOTAS
from bot.api.loop_lag import WITH_AGENTS, LoopLag
from store.proposals import Status
from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    REQUESTER,
    Countersign,
    eventually,
    running_countersign,
)
from tests.e2e.test_escalations import escalation
from tests.e2e.test_monitoring import Samples, scrape, value

CAMPAIGN: dict[str, Any] = {
    "operation": "crm.send_campaign",
    "request": {"segment": "all", "template": "tmpl_x", "recipients": 9},
    "requested_by": REQUESTER,
}

#: how long the loop is held: well past the threshold (50 ms by default)
STALL = 0.4


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path) as running:
        yield running


def _stall_loop() -> None:
    """Hold the event loop for STALL seconds from its next turn, as a burst of agents' work on
    the loop would: every timer (the lag measure's too) wakes late."""
    asyncio.get_running_loop().call_soon(time.sleep, STALL)


async def _post(cs: Countersign, path: str, body: dict[str, Any]) -> Any:
    return await cs.request(
        "POST",
        path,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {AGENT_TOKEN}", "Content-Type": "application/json"},
    )


@asynccontextmanager
async def _agents_in_progress(cs: Countersign, count: int) -> AsyncIterator[list[Awaitable[Any]]]:
    """``count`` agent submissions in progress on the server's loop: each sends the start of its
    body and holds the rest until the block ends, then finishes it (each is then stored)."""
    lag = cs.app[LOOP_LAG]
    before = lag.agents
    release = asyncio.Event()

    async def slow_body(n: int) -> AsyncIterator[bytes]:
        # each its own request (a repeated one would be answered as the same proposal)
        whole = json.dumps({**CAMPAIGN, "request": {**CAMPAIGN["request"], "recipients": n}})
        yield whole[:10].encode()
        await release.wait()
        yield whole[10:].encode()

    async def send(n: int) -> int:
        async with cs.http.post(
            f"{cs.url}/v1/proposals",
            data=slow_body(n),
            headers={"Authorization": f"Bearer {AGENT_TOKEN}", "Content-Type": "application/json"},
        ) as r:
            return r.status

    sending = [asyncio.create_task(send(100 + n)) for n in range(count)]

    async def all_in_progress() -> bool:
        return lag.agents >= before + count

    await eventually(all_in_progress)
    try:
        yield sending
    finally:
        release.set()
        await asyncio.gather(*sending, return_exceptions=True)


def _shed(after: Samples, before: Samples) -> dict[str, float]:
    """The agent requests shed between two scrapes of the metrics, by what they asked."""
    return {
        request: value(after, "countersign_agent_requests_shed_total", request=request)
        - value(before, "countersign_agent_requests_shed_total", request=request)
        for request in ("submission", "read")
    }


async def _on_time(lag: LoopLag) -> None:
    """Wait until the measure has seen the loop on time again."""

    async def caught_up() -> bool:
        return lag.lag < lag.threshold

    await eventually(caught_up)


@pytest.mark.parametrize("path", ["/v1/proposals", "/v1/escalations"])
async def test_a_submission_while_the_loop_is_behind_gets_503_with_retry_after_and_stores_nothing(
    cs: Countersign, path: str
) -> None:
    lag = cs.app[LOOP_LAG]
    body = CAMPAIGN if path == "/v1/proposals" else escalation()
    audit_before = await cs.store.audit_log()
    await _on_time(lag)
    before = await scrape(cs.http, cs.url)

    async with _agents_in_progress(cs, WITH_AGENTS) as held:
        _stall_loop()
        answer = await _post(cs, path, body)

        assert answer.status == 503
        assert answer.headers["Retry-After"] == "1"
        assert answer.headers["Content-Type"].startswith("application/problem+json")
        assert "nothing was stored" in answer.json()["detail"]
        assert lag.shed == 1 and lag.worst >= STALL / 2
        assert await cs.proposal_count() == 0
        assert await cs.store.audit_log() == audit_before  # no escalation, no entry of any kind
        assert _shed(await scrape(cs.http, cs.url), before) == {"submission": 1, "read": 0}

        await _on_time(lag)  # the loop caught up: the same submission is taken
        assert (await _post(cs, path, body)).status == 201
    assert await asyncio.gather(*held) == [201] * WITH_AGENTS  # the held ones were never shed


@pytest.mark.parametrize("ask", ["read", "long-poll", "cancel", "escalation"])
async def test_a_read_or_withdrawal_while_the_loop_is_behind_gets_503_and_reads_nothing(
    cs: Countersign, ask: str
) -> None:
    """Reads are agents' work on the loop too: an agent polling while the loop is behind is
    turned away at once, before its token is looked at or the store read, as a submission is."""
    if ask == "escalation":
        item = (await _post(cs, "/v1/escalations", escalation())).json()["id"]
        path = f"/v1/escalations/{item}"
    else:
        item = (await _post(cs, "/v1/proposals", CAMPAIGN)).json()["id"]
        path = f"/v1/proposals/{item}" + ("/cancel" if ask == "cancel" else "")
    method = "POST" if ask == "cancel" else "GET"
    params = {"wait": "0.1"} if ask == "long-poll" else None
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
    await cs.settled()
    lag = cs.app[LOOP_LAG]
    await _on_time(lag)
    seen = await cs.traced()
    before = await scrape(cs.http, cs.url)

    async with _agents_in_progress(cs, WITH_AGENTS):
        _stall_loop()
        answer = await cs.request(method, path, headers=headers, params=params)

        assert answer.status == 503
        assert answer.headers["Retry-After"] == "1"
        assert answer.headers["Content-Type"].startswith("application/problem+json")
        assert "nothing was read or changed" in answer.json()["detail"]
        assert lag.shed == 1
        # counted for operators as a read shed, apart from other 503s
        assert _shed(await scrape(cs.http, cs.url), before) == {"submission": 0, "read": 1}
        assert [s for s in seen if item in s] == []  # the store was not asked about it
        if ask != "escalation":
            assert (await cs.store.get_proposal(item)).status is Status.PENDING

        await _on_time(lag)  # the loop caught up: the same request is served
        again = await cs.request(method, path, headers=headers, params=params)
        assert again.status == 200, again.body
    if ask == "cancel":
        assert (await cs.store.get_proposal(item)).status is Status.CANCELLED


async def test_a_late_loop_with_few_agent_submissions_in_progress_sheds_nothing(
    cs: Countersign,
) -> None:
    """The loop late for another reason than agents' work (here the test's own stall, with
    fewer than WITH_AGENTS submissions in progress): turning agents away would not help."""
    lag = cs.app[LOOP_LAG]
    await _on_time(lag)

    async with _agents_in_progress(cs, WITH_AGENTS - 2) as held:
        _stall_loop()
        answer = await _post(cs, "/v1/proposals", CAMPAIGN)

        assert answer.status == 201
        assert lag.shed == 0 and lag.worst >= STALL / 2
    assert await asyncio.gather(*held) == [201] * (WITH_AGENTS - 2)
    assert await cs.proposal_count() == WITH_AGENTS - 1  # the held ones and the one sent


async def test_long_polls_held_waiting_are_not_agent_work_in_progress(cs: Countersign) -> None:
    """A long-poll held until its proposal changes costs the loop nothing: agents waiting for
    their decisions do not make a loop late for another reason look like their doing."""
    item = (await _post(cs, "/v1/proposals", CAMPAIGN)).json()["id"]
    lag = cs.app[LOOP_LAG]
    await _on_time(lag)
    held = [asyncio.create_task(cs.read(item, wait=2)) for _ in range(WITH_AGENTS)]

    async def all_held() -> bool:
        return cs.app[QUOTAS].long_polls("support-bot") == WITH_AGENTS

    await eventually(all_held)
    assert lag.agents == 0
    _stall_loop()
    answer = await _post(cs, "/v1/proposals", {**CAMPAIGN, "run_id": "another"})

    assert answer.status == 201
    assert lag.shed == 0
    assert [status for status, _ in await asyncio.gather(*held)] == [200] * WITH_AGENTS


async def test_an_approve_click_while_the_loop_is_behind_is_acknowledged_and_applied(
    cs: Countersign,
) -> None:
    _, created = await cs.submit(CAMPAIGN)
    await cs.posted(created["id"])
    lag = cs.app[LOOP_LAG]
    await _on_time(lag)

    _stall_loop()
    assert await cs.click(APPROVER, "approve", created["id"]) == 200  # Slack got its ack
    shed = lag.shed
    _, final = await cs.read(created["id"], wait=10)
    await cs.settled()

    assert shed == 0  # the click was not shed, though the loop was behind when it came
    assert lag.worst >= STALL / 2
    assert final["status"] == "succeeded"
    assert len(cs.target.executions()) == 1
    assert not any("busy" in m.text for m in cs.slack.ephemeral(APPROVER))


async def test_a_threshold_of_zero_never_sheds(tmp_path: Path) -> None:
    def never(text: str) -> str:
        return text.replace("[server]\n", "[server]\nshed_agents_at_loop_lag_ms = 0\n", 1)

    async with running_countersign(tmp_path, config_edit=never) as cs:
        lag = cs.app[LOOP_LAG]
        assert lag.threshold == 0
        async with _agents_in_progress(cs, WITH_AGENTS):
            _stall_loop()
            answer = await _post(cs, "/v1/proposals", CAMPAIGN)

            assert answer.status == 201
            assert lag.shed == 0
        assert await cs.proposal_count() == 1 + WITH_AGENTS


async def test_the_metrics_show_how_far_behind_the_loop_is(cs: Countersign) -> None:
    lag = cs.app[LOOP_LAG]
    await _on_time(lag)
    calm = value(await scrape(cs.http, cs.url), "countersign_event_loop_lag_seconds")

    _stall_loop()
    behind = value(await scrape(cs.http, cs.url), "countersign_event_loop_lag_seconds")

    assert calm < lag.threshold <= STALL / 2 <= behind


class _Turns:
    """Counts the event loop's turns while running: a callback that schedules itself again each
    turn (the loop then never sleeps: every turn is as short as the work ready in it)."""

    def __init__(self) -> None:
        self.count = 0
        self._next: asyncio.Handle | None = None

    def _turn(self) -> None:
        self.count += 1
        self._next = asyncio.get_running_loop().call_soon(self._turn)

    def __enter__(self) -> _Turns:
        self._turn()
        return self

    def __exit__(self, *_: object) -> None:
        assert self._next is not None
        self._next.cancel()


#: turns of the loop a click's round trip over loopback takes here when nothing waits for a
#: timer: the request written, read, answered, the answer read (a few each), with room to spare
FEW_TURNS = 40


async def test_an_approve_click_is_answered_within_a_few_turns_of_the_loop(
    cs: Countersign,
) -> None:
    """A decision click's acknowledgement waits for no timer and no task of its own: on a loop
    kept busy by agents' work each turn is long, so the turns a click needs are its latency.
    (bolt's listener runner polled every 10 ms for the listener's ack: hundreds of turns here.)"""
    _, created = await cs.submit(CAMPAIGN)
    await cs.posted(created["id"])

    with _Turns() as turns:
        status = await cs.click(APPROVER, "approve", created["id"])
        taken = turns.count
    _, final = await cs.read(created["id"], wait=10)  # and it is recorded and applied
    await cs.settled()

    assert status == 200
    assert taken <= FEW_TURNS, f"{taken} turns of the loop to answer the click"
    assert final["status"] == "succeeded"
    assert len(cs.target.executions()) == 1
