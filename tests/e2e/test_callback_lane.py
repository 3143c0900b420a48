"""Callbacks have their own lane: an agent's endpoint that accepts connections and never answers
holds up no Slack post and no other agent's callback, and holds at most its per-destination
slots. Checked by order of events (what was delivered while the hanging callback was still
outstanding), not by timing thresholds; the delays are measured and printed for the record.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.app import OUTBOX
from tests.e2e.harness import (
    AGENT_TOKEN,
    OTHER_AGENT_TOKEN,
    REQUESTER,
    Countersign,
    eventually,
    running_countersign,
)

CAMPAIGN: dict[str, Any] = {
    "operation": "crm.send_campaign",
    "request": {"segment": "churn-risk", "template": "tmpl_winback", "recipients": 1200},
    "requested_by": REQUESTER,
}
AUTO_TAG: dict[str, Any] = {
    "operation": "crm.tag_customers",
    "request": {"segment": "churn-risk", "tag": "winback", "customers": 40},
    "requested_by": REQUESTER,
}


class Silent:
    """A TCP server on 127.0.0.1 that accepts every connection, reads, and never answers."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests = 0  #: connections that sent a request's first bytes
        self._writers: list[asyncio.StreamWriter] = []
        self._closed = asyncio.Event()
        self.port = 0

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        if await reader.read(1):
            self.requests += 1
        await self._closed.wait()  # never answers; hangs up when the test ends
        writer.close()


@asynccontextmanager
async def silent_server() -> AsyncIterator[Silent]:
    silent = Silent()
    server = await asyncio.start_server(silent._accept, "127.0.0.1", 0)
    silent.port = server.sockets[0].getsockname()[1]
    try:
        yield silent
    finally:
        silent._closed.set()
        server.close()
        await server.wait_closed()


def hanging_agent(port: int, *, timeout: float = 30) -> Callable[[str], str]:
    """A config_edit: support-bot's callbacks may go to the silent server; a long callback
    timeout, so a hanging callback stays outstanding for the whole test."""

    def edit(text: str) -> str:
        text = text.replace("[server]\n", f"[server]\ncallback_timeout_seconds = {timeout}\n", 1)
        header = "[agents.support-bot]\n"
        start = text.index(header) + len(header)
        end = text.index("\n[", start)
        table = [
            line
            for line in text[start:end].split("\n")
            if not line.startswith("callback_url_prefixes")
        ]
        table.insert(0, f'callback_url_prefixes = ["http://127.0.0.1:{port}/hooks"]')
        return text[:start] + "\n".join(table) + text[end:]

    return edit


async def submit(cs: Countersign, body: dict[str, Any], token: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    answer = await cs.request(
        "POST", "/v1/proposals", data=json.dumps(body).encode(), headers=headers
    )
    assert answer.status == 201, answer.body
    result: dict[str, Any] = answer.json()
    return result


async def finished_callbacks(cs: Countersign, proposal_id: str) -> list[str]:
    return [
        e.event
        for e in await cs.store.audit_log(proposal_id)
        if e.event in ("callback_delivered", "delivery_abandoned")
    ]


async def test_a_callback_target_that_never_answers_delays_no_slack_post_and_no_other_callback(
    tmp_path: Path,
) -> None:
    received: list[bytes] = []

    async def hook(request: web.Request) -> web.Response:
        received.append(await request.read())
        return web.json_response({"ok": True})

    async with (
        silent_server() as silent,
        running_countersign(tmp_path, config_edit=hanging_agent(silent.port)) as cs,
    ):
        # support-bot's callback goes to the silent server and hangs there
        hanging = await submit(
            cs, {**AUTO_TAG, "callback_url": f"http://127.0.0.1:{silent.port}/hooks/a"}, AGENT_TOKEN
        )
        await eventually(lambda: _true(silent.requests == 1))

        # an unrelated proposal that asks: its Slack post goes out meanwhile
        started = time.monotonic()
        asked = await submit(cs, CAMPAIGN, OTHER_AGENT_TOKEN)
        await cs.posted(asked["id"])
        post_delay = time.monotonic() - started

        # and another agent's callback is delivered meanwhile
        started = time.monotonic()
        url = cs.agent_hook("ops", hook)
        other = await submit(cs, {**AUTO_TAG, "callback_url": url}, OTHER_AGENT_TOKEN)
        assert await eventually(lambda: finished_callbacks(cs, other["id"])) == [
            "callback_delivered"
        ]
        callback_delay = time.monotonic() - started

        # ...all while the hanging callback is still outstanding
        assert await finished_callbacks(cs, hanging["id"]) == []
        # the delivered one leaves the count once its job has settled, just after it is recorded
        await eventually(lambda: _true(cs.app[OUTBOX].callbacks_in_flight == 1))
        assert await finished_callbacks(cs, hanging["id"]) == []
        assert silent.connections == 1
        assert len(received) == 1
        print(f"Slack post: {post_delay:.3f}s, other agent's callback: {callback_delay:.3f}s")


async def test_callbacks_to_one_destination_are_at_most_two_at_once(tmp_path: Path) -> None:
    async with (
        silent_server() as silent,
        running_countersign(tmp_path, config_edit=hanging_agent(silent.port)) as cs,
    ):
        ids = []
        for n in range(3):
            url = f"http://127.0.0.1:{silent.port}/hooks/{n}"
            body = {**AUTO_TAG, "run_id": f"run-{n}", "callback_url": url}
            ids.append((await submit(cs, body, AGENT_TOKEN))["id"])
        # all three are under way; the third waits for a slot
        await eventually(lambda: _true(cs.app[OUTBOX].callbacks_in_flight == 3))
        await eventually(lambda: _true(silent.requests == 2))

        # a Slack post goes through meanwhile: the outbox went on while the three wait
        asked = await submit(cs, CAMPAIGN, OTHER_AGENT_TOKEN)
        await cs.posted(asked["id"])

        assert silent.connections == 2
        for proposal_id in ids:
            assert await finished_callbacks(cs, proposal_id) == []


async def test_a_hanging_callback_times_out_and_is_retried(tmp_path: Path) -> None:
    async with (
        silent_server() as silent,
        running_countersign(tmp_path, config_edit=hanging_agent(silent.port, timeout=0.2)) as cs,
    ):
        cs.fast_slack_retries()
        hanging = await submit(
            cs, {**AUTO_TAG, "callback_url": f"http://127.0.0.1:{silent.port}/hooks/a"}, AGENT_TOKEN
        )

        events = await eventually(lambda: finished_callbacks(cs, hanging["id"]))
        log = await cs.store.audit_log(hanging["id"])

    assert events == ["delivery_abandoned"]
    assert silent.connections == 3  # callback_attempts = 3 in the harness configuration
    [abandoned] = [e for e in log if e.event == "delivery_abandoned"]
    assert "within 0.2 seconds" in str(abandoned.detail["error"])
    assert "/hooks/a" not in json.dumps(abandoned.detail)


async def _true(value: bool) -> bool:
    return value
