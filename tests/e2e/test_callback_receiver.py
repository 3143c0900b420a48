"""countersign.callbacks.CallbackReceiver: a plain agent is told its decision instead of
long-polling. Real callbacks from a running Countersign reach a handler once; forged, unknown or
replayed ones reach none; the same receiver works as an ASGI application."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

import countersign
from contracts.signing import CALLBACK, signed_headers
from countersign.callbacks import CallbackReceiver, Document, SqliteJournal
from countersign.client import answer_of
from tests.e2e.frameworks import reject, with_tool_calls
from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    REQUESTER,
    Countersign,
    eventually,
    running_countersign,
)


class Told:
    """A handler recording the documents it is told."""

    def __init__(self) -> None:
        self.documents: list[Document] = []

    async def __call__(self, document: Document) -> None:
        self.documents.append(document)


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[CallbackReceiver, str]]:
    receiver = CallbackReceiver(AGENT_TOKEN, SqliteJournal(tmp_path / "agent.sqlite"))
    server = TestServer(receiver.aiohttp_app(), host="127.0.0.1")
    await server.start_server()
    try:
        yield receiver, str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


@pytest.fixture
async def cs(tmp_path: Path, served: tuple[CallbackReceiver, str]) -> AsyncIterator[Countersign]:
    _, url = served
    async with running_countersign(
        tmp_path,
        config_edit=with_tool_calls,
        agent_settings={"support-bot": {"callback_url_prefixes": [url]}},
    ) as running:
        yield running


async def test_a_plain_agent_is_told_each_decision_once(
    cs: Countersign, served: tuple[CallbackReceiver, str]
) -> None:
    receiver, url = served
    told = Told()
    receiver.register("decisions", told)
    async with countersign.AsyncClient(cs.url, AGENT_TOKEN, requested_by=REQUESTER) as client:
        approved = await client.propose(
            "decision",
            {"title": "Deploy", "detail": "Green."},
            callback_url=receiver.url_for(url, "decisions"),
        )
        rejected = await client.propose(
            "decision",
            {"title": "Drop the table", "detail": "It is big."},
            callback_url=receiver.url_for(url, "decisions"),
        )
    await cs.posted(approved.id)
    await cs.posted(rejected.id)
    await cs.click(APPROVER, "approve", approved.id)
    await reject(cs, rejected.id, "Not today")

    await eventually(lambda: asyncio.sleep(0, len(told.documents) == 2))
    await cs.settled()
    by_id = {document.id: document for document in told.documents}
    assert by_id[approved.id].status == "succeeded"
    assert by_id[rejected.id].status == "rejected"
    told_rejection = by_id[rejected.id]
    assert isinstance(told_rejection, countersign.ProposalOut)
    answer = answer_of(told_rejection)
    assert isinstance(answer, countersign.Rejected)
    assert answer.reason == "Not today"
    assert len(told.documents) == 2


def signed(document: Any, secret: str = AGENT_TOKEN) -> tuple[dict[str, str], bytes]:
    body: bytes = document.model_dump_json().encode()
    return signed_headers(secret, body, now=datetime.now(UTC), purpose=CALLBACK), body


async def a_decided_proposal(cs: Countersign) -> countersign.ProposalOut:
    async with countersign.AsyncClient(cs.url, AGENT_TOKEN, requested_by=REQUESTER) as client:
        proposal = await client.propose("decision", {"title": "Ship", "detail": "Green."})
        await cs.posted(proposal.id)
        await cs.click(APPROVER, "approve", proposal.id)
        return await client.wait(proposal.id, timeout=10)


async def test_a_replayed_callback_is_handled_once_even_by_another_receiver(
    cs: Countersign, tmp_path: Path
) -> None:
    document = await a_decided_proposal(cs)
    headers, body = signed(document)
    told = Told()
    first = CallbackReceiver(AGENT_TOKEN, SqliteJournal(tmp_path / "agent.sqlite"))
    first.register("decisions", told)
    # another process with the same journal file
    second = CallbackReceiver(AGENT_TOKEN, SqliteJournal(tmp_path / "agent.sqlite"))
    second.register("decisions", told)

    assert (await first.receive("decisions", headers, body)).status == 200
    assert (await first.receive("decisions", headers, body)).status == 200
    replay = await second.receive("decisions", headers, body)

    assert replay.status == 200
    assert "handled before" in replay.text
    assert [d.id for d in told.documents] == [document.id]


async def test_forged_unknown_and_failing_callbacks_reach_nothing_or_are_asked_again(
    cs: Countersign,
) -> None:
    document = await a_decided_proposal(cs)
    told = Told()
    receiver = CallbackReceiver(AGENT_TOKEN)
    receiver.register("decisions", told)

    headers, body = signed(document, secret="not-the-agents-secret")
    assert (await receiver.receive("decisions", headers, body)).status == 401
    headers, body = signed(document)
    assert (await receiver.receive("elsewhere", headers, body)).status == 404
    assert told.documents == []

    failures = 0

    async def flaky(document: Document) -> None:
        nonlocal failures
        failures += 1
        if failures == 1:
            raise RuntimeError("the agent's database is down")
        told.documents.append(document)

    receiver.register("flaky", flaky)
    failed = await receiver.receive("flaky", headers, body)
    assert failed.status == 500  # Countersign retries 5xx
    assert (await receiver.receive("flaky", headers, body)).status == 200
    assert [d.id for d in told.documents] == [document.id]


async def asgi_call(app: Any, path: str, headers: dict[str, str], body: bytes) -> tuple[int, str]:
    """One HTTP request to an ASGI application, as a server mounting it at /hooks sends it."""
    sent: list[dict[str, Any]] = []
    received = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return received.pop(0) if received else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": f"/hooks{path}",
        "root_path": "/hooks",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    await app(scope, receive, send)
    start, content = sent
    return start["status"], content["body"].decode()


async def test_the_receiver_mounts_as_an_asgi_application(cs: Countersign) -> None:
    document = await a_decided_proposal(cs)
    headers, body = signed(document)
    told = Told()
    receiver = CallbackReceiver(AGENT_TOKEN)
    receiver.register("decisions", told)
    app = receiver.asgi()

    assert (await asgi_call(app, "/decisions", headers, body))[0] == 200
    status, text = await asgi_call(app, "/decisions", headers, body)
    assert (status, "handled before" in text) == (200, True)
    forged = {**headers, "X-Countersign-Callback-Signature": "v1=" + "0" * 64}
    assert (await asgi_call(app, "/decisions", forged, body))[0] == 401
    assert (await asgi_call(app, "/nobody", headers, body))[0] == 404
    assert [d.id for d in told.documents] == [document.id]
