"""Callbacks and executions are signed under different names: with one secret shared by an
agent's callback endpoint and an execution target, a captured request of one kind replayed to the
other is refused, whichever header the replayer copies the signature into."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.sandbox.target import DemoTarget
from contracts.signing import (
    CALLBACK,
    CALLBACK_SIGNATURE_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    verify,
)
from tests.e2e.harness import (
    AGENT_TOKEN,
    REQUESTER,
    WEBHOOK_SECRET,
    Countersign,
    eventually,
    running_countersign,
)

AUTO_TAG: dict[str, Any] = {
    "operation": "crm.tag_customers",
    "request": {"segment": "churn-risk", "tag": "winback", "customers": 40},
    "requested_by": REQUESTER,
}
#: the agent's callbacks are signed with the execution target's secret
SHARED_SECRET = {"support-bot": {"callback_secret_env": "E2E_WEBHOOK_SECRET"}}


async def _captured(cs: Countersign) -> tuple[dict[str, str], bytes, dict[str, str], bytes]:
    """One execution request (at the target) and one callback (at the agent), as sent."""
    callbacks: list[tuple[dict[str, str], bytes]] = []

    async def hook(request: web.Request) -> web.Response:
        callbacks.append((dict(request.headers), await request.read()))
        return web.json_response({"ok": True})

    url = cs.agent_hook("signed", hook)
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}", "Content-Type": "application/json"}
    body = json.dumps({**AUTO_TAG, "callback_url": url}).encode()
    answer = await cs.request("POST", "/v1/proposals", data=body, headers=headers)
    assert answer.status == 201, answer.body
    await eventually(lambda: _true(bool(callbacks)))
    [execution] = cs.target.taggings()
    [(callback_headers, callback_body)] = callbacks
    return execution["headers"], execution["body"], callback_headers, callback_body


def _agent_accepts(secret: str, headers: dict[str, str], body: bytes, cs: Countersign) -> bool:
    """What an agent's callback endpoint does (README, Callbacks)."""
    return verify(
        secret,
        headers.get(TIMESTAMP_HEADER, ""),
        body,
        headers.get(CALLBACK_SIGNATURE_HEADER, ""),
        now=cs.clock(),
        purpose=CALLBACK,
    )


async def test_a_captured_callback_replayed_to_an_execution_target_is_refused(
    tmp_path: Path,
) -> None:
    target = DemoTarget(WEBHOOK_SECRET)
    app = web.Application()
    app.add_routes(target.routes())
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        async with running_countersign(tmp_path, agent_settings=SHARED_SECRET) as cs:
            exec_headers, exec_body, cb_headers, cb_body = await _captured(cs)
            tag_url = str(server.make_url("/demo-target/customers/tag"))

            # the replayer copies the callback's signature into the execution header
            replayed = {
                TIMESTAMP_HEADER: cb_headers[TIMESTAMP_HEADER],
                SIGNATURE_HEADER: cb_headers[CALLBACK_SIGNATURE_HEADER],
                "Idempotency-Key": "replayed-callback",
                "Content-Type": "application/json",
            }
            async with cs.http.post(tag_url, data=cb_body, headers=replayed) as answer:
                assert answer.status == 401
            assert target.taggings == []

            # the same target accepts the genuine execution request: the refusal is the name
            genuine = {k: v for k, v in exec_headers.items() if k.lower() != "host"}
            async with cs.http.post(tag_url, data=exec_body, headers=genuine) as answer:
                assert answer.status == 200
            assert len(target.taggings) == 1
    finally:
        await server.close()


async def test_a_captured_execution_replayed_to_an_agents_callback_endpoint_is_refused(
    tmp_path: Path,
) -> None:
    async with running_countersign(tmp_path, agent_settings=SHARED_SECRET) as cs:
        exec_headers, exec_body, cb_headers, cb_body = await _captured(cs)

        assert CALLBACK_SIGNATURE_HEADER not in exec_headers
        assert SIGNATURE_HEADER not in cb_headers
        assert _agent_accepts(WEBHOOK_SECRET, cb_headers, cb_body, cs)
        # copied into the callback header, the execution's signature does not verify
        forged = {**exec_headers, CALLBACK_SIGNATURE_HEADER: exec_headers[SIGNATURE_HEADER]}
        assert not _agent_accepts(WEBHOOK_SECRET, forged, exec_body, cs)
        # nor does the callback's own signature over the execution's body
        mixed = {**cb_headers, TIMESTAMP_HEADER: exec_headers[TIMESTAMP_HEADER]}
        assert not _agent_accepts(WEBHOOK_SECRET, mixed, exec_body, cs)
        # and the agent's own token no longer signs its callbacks here
        assert not _agent_accepts(AGENT_TOKEN, cb_headers, cb_body, cs)


async def _true(value: bool) -> bool:
    return value
