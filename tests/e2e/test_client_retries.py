"""Both clients against real refusals and a real restart: a 429 is retried after the Retry-After
the server asked for, and a wait for people outlives `countersign serve` stopping and starting
again, resuming its long poll on the same proposal (nothing is proposed twice)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import countersign
from bot.slack.local import running_local_slack
from countersign.light import LightClient
from countersign.reading import RETRY_AFTER_MAX, Ending, retry_delay
from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    BOT_TOKEN,
    ENV,
    REQUESTER,
    SIGNING_SECRET,
    running_countersign,
)
from tests.e2e.test_serve_process import (
    STOP_SECONDS,
    free_port,
    start,
    wait_until_healthy,
    write_config,
)
from tests.slack_requests import block_action_body, signed_headers

DECISIONS_CHANNEL = "C0DECISIONS"
DECISION_RULE = f"""
[operations."decision"]
kind = "decision"

[[policy]]
id = "decisions"
operation = "decision"
decision = "ask"
approvers = ["finance"]
channel = "{DECISIONS_CHANNEL}"
expires_after = "1h"
"""


def with_decisions(text: str) -> str:
    return text.replace("\n[[policy]]\n", textwrap.dedent(DECISION_RULE) + "\n[[policy]]\n", 1)


def test_a_retry_after_is_honoured_up_to_its_bound() -> None:
    assert retry_delay(0, 2.0) == 2.0
    assert retry_delay(3, 0.0) == 0.0
    assert retry_delay(0, 3600.0) == RETRY_AFTER_MAX == 30.0  # an hour is not waited out
    assert 0 < retry_delay(0, None) < retry_delay(3, None) <= 2.0  # no header: a backoff


# --- 429 ----------------------------------------------------------------------------------------


def rate_of_one_every_two_seconds(text: str) -> str:
    """Decisions, and the agent's submissions at 0.5 a second with a burst of one: a second
    submission at once is refused with ``Retry-After: 2``."""
    return (
        with_decisions(text) + "\n[limits]\nsubmissions_per_second = 0.5\nsubmissions_burst = 1\n"
    )


async def propose_async(url: str, n: int) -> str:
    async with countersign.AsyncClient(url, AGENT_TOKEN, requested_by=REQUESTER, attempts=2) as c:
        proposal = await c.propose("decision", {"title": f"Deploy {n}", "detail": "Green."})
        return proposal.id


async def propose_light(url: str, n: int) -> str:
    client = LightClient(url, AGENT_TOKEN, requested_by=REQUESTER, attempts=2)
    document = await asyncio.to_thread(
        client.propose,
        "decision",
        {"title": f"Deploy {n}", "detail": "Green."},
        idempotency_key=f"light-{n}",
    )
    return str(document["id"])


@pytest.mark.parametrize("propose", [propose_async, propose_light], ids=["async", "light"])
async def test_a_429_is_retried_after_the_retry_after_the_server_asked_for(
    tmp_path: Path, propose: Callable[[str, int], Awaitable[str]]
) -> None:
    """With two attempts, only a client that waits the 2 s the server asked for gets through:
    one that retried sooner (its own backoff starts at 0.2 s) would be refused again."""
    async with running_countersign(tmp_path, config_edit=rate_of_one_every_two_seconds) as cs:
        first = await propose(cs.url, 1)
        refused, _ = await cs.submit(
            {"operation": "decision", "request": {"title": "x", "detail": "y"},
             "requested_by": REQUESTER}
        )  # fmt: skip
        assert refused == 429  # the bucket is empty now: the next one must wait 2 s

        second = await propose(cs.url, 2)

        assert first != second
        assert (await cs.store.get_proposal(second)).status == "pending"


# --- a restart ----------------------------------------------------------------------------------


async def approve_in_slack(
    http: aiohttp.ClientSession, url: str, message: dict[str, Any], proposal_id: str
) -> None:
    body = block_action_body(
        user_id=APPROVER,
        action_id="approve",
        value=proposal_id,
        channel_id=message["channel"],
        message_ts=message["ts"],
        trigger_id=f"trigger-{proposal_id}",
    )
    async with http.post(
        f"{url}/slack/events", data=body, headers=signed_headers(SIGNING_SECRET, body)
    ) as response:
        assert response.status == 200


async def wait_async(url: str) -> tuple[str, dict[str, Any] | None]:
    """The full client's approve(): the proposal's id and the approved arguments."""
    async with countersign.AsyncClient(
        url, AGENT_TOKEN, requested_by=REQUESTER, long_poll_seconds=2
    ) as client:
        answer = await client.approve("Deploy v2", "All green.", timeout=90)
    assert isinstance(answer, countersign.Approved), answer
    assert answer.by == APPROVER
    return answer.proposal.id, answer.arguments


async def wait_light(url: str) -> tuple[str, dict[str, Any] | None]:
    """The light client's ask() (the hook's): the proposal's id and the approved arguments."""
    client = LightClient(url, AGENT_TOKEN, requested_by=REQUESTER, long_poll_seconds=2)
    came = await asyncio.to_thread(
        client.ask,
        "decision",
        {"title": "Deploy v2", "detail": "All green."},
        wait=90,
        idempotency_key="restart-light",
    )
    assert isinstance(came, Ending) and came.kind == "approved", came
    assert came.by == APPROVER
    return came.proposal_id, came.arguments


@pytest.mark.timeout(120)
@pytest.mark.parametrize("waiting", [wait_async, wait_light], ids=["async", "light"])
async def test_a_wait_outlives_a_restart_of_the_server(
    tmp_path: Path, waiting: Callable[[str], Awaitable[tuple[str, dict[str, Any] | None]]]
) -> None:
    db = tmp_path / "countersign.sqlite"
    config = write_config(tmp_path, db)
    config.write_text(with_decisions(config.read_text()))
    port = free_port()
    url = f"http://127.0.0.1:{port}"

    async with (
        running_local_slack(BOT_TOKEN) as (slack, slack_url),
        aiohttp.ClientSession() as http,
    ):
        env = {**os.environ, **ENV, "SLACK_API_URL": slack_url}
        server = await start(tmp_path, config, port, env)
        try:
            await wait_until_healthy(http, url, server)
            asked = asyncio.create_task(waiting(url))
            (message,) = await posted(slack, 1)

            server.process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(server.process.wait(), STOP_SECONDS) == 0
            # down longer than a call's four attempts last (about 2 s of backoff): a wait that
            # gave up after its attempts, instead of resuming until its deadline, fails here
            await asyncio.sleep(4.0)
            assert not asked.done()
            server = await start(tmp_path, config, port, env)
            await wait_until_healthy(http, url, server)
            await approve_in_slack(http, url, message, proposal_of(message))

            proposal_id, arguments = await asked
        finally:
            if server.process.returncode is None:
                server.process.send_signal(signal.SIGTERM)
                await asyncio.wait_for(server.process.wait(), STOP_SECONDS)

    assert proposal_id == proposal_of(message)
    assert arguments == {"title": "Deploy v2", "detail": "All green."}
    with contextlib.closing(sqlite3.connect(db)) as stored:  # what the two processes stored
        ids = [row[0] for row in stored.execute("SELECT id FROM proposals")]
    assert ids == [proposal_id]  # the wait resumed on its proposal: nothing was proposed again


async def posted(slack: Any, count: int) -> list[dict[str, Any]]:
    """The first ``count`` proposal messages the local Slack received."""
    for _ in range(400):
        found = [c.response for c in slack.calls("chat.postMessage") if c.response.get("ok")]
        if len(found) >= count:
            return found[:count]
        await asyncio.sleep(0.05)
    raise AssertionError(f"{count} messages were not posted; calls: {slack.calls()}")


def proposal_of(message: dict[str, Any]) -> str:
    for block in message["message"]["blocks"]:
        for element in block.get("elements", ()) if block["type"] == "actions" else ():
            if element.get("action_id") == "approve":
                return str(element["value"])
    raise AssertionError(f"no Approve button in {message}")
