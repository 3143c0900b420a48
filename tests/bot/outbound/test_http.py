"""AiohttpClient against real servers on 127.0.0.1: responses, caps, and every transport failure."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.outbound.http import MAX_RESPONSE_BYTES, AiohttpClient
from contracts.base import HttpTransportError

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Target:
    server: TestServer
    received: list[Received] = field(default_factory=list)

    def url(self, path: str) -> str:
        return str(self.server.make_url(path))

    def paths(self) -> list[str]:
        return [item.path for item in self.received]


@pytest.fixture
async def target() -> AsyncIterator[Target]:
    release = asyncio.Event()
    app = web.Application()
    holder: list[Target] = []

    def recording(behaviour: Handler) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            holder[0].received.append(Received(request.path, dict(request.headers), body))
            return await behaviour(request)

        return handle

    async def ok(request: web.Request) -> web.StreamResponse:
        return web.json_response({"ok": True}, status=201, headers={"X-Trace": "t-1"})

    async def redirect(request: web.Request) -> web.StreamResponse:
        return web.Response(status=307, headers={"Location": "/elsewhere"})

    async def huge(request: web.Request) -> web.StreamResponse:
        return web.Response(body=b"x" * (2 * MAX_RESPONSE_BYTES))

    async def slow(request: web.Request) -> web.StreamResponse:
        # Outlives the client's timeout; released when the test ends.
        await asyncio.wait_for(release.wait(), timeout=10)
        return web.Response(text="too late")

    async def hang_up(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()
        await asyncio.wait_for(release.wait(), timeout=10)
        return web.Response()

    for path, behaviour in {
        "/ok": ok,
        "/redirect": redirect,
        "/elsewhere": ok,
        "/huge": huge,
        "/slow": slow,
        "/hang-up": hang_up,
    }.items():
        app.router.add_post(path, recording(behaviour))
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    holder.append(Target(server))
    try:
        yield holder[0]
    finally:
        release.set()
        await server.close()


@pytest.fixture
async def client() -> AsyncIterator[AiohttpClient]:
    http = AiohttpClient()
    try:
        yield http
    finally:
        await http.close()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_post_sends_body_and_headers_and_returns_the_response(
    target: Target, client: AiohttpClient
) -> None:
    response = await client.post(
        target.url("/ok"),
        body=b'{"a":1}',
        headers={"Content-Type": "application/json", "Idempotency-Key": "k-1"},
        timeout=5,
    )

    assert response.status == 201
    assert response.body == b'{"ok": true}'
    assert response.headers["x-trace"] == "t-1"  # case-insensitive lookup
    [received] = target.received
    assert received.body == b'{"a":1}'
    assert received.headers["Idempotency-Key"] == "k-1"
    assert received.headers["Content-Type"] == "application/json"


async def test_redirects_are_returned_not_followed(target: Target, client: AiohttpClient) -> None:
    response = await client.post(target.url("/redirect"), body=b"{}", headers={}, timeout=5)

    assert response.status == 307
    assert target.paths() == ["/redirect"]


async def test_response_body_is_capped_at_one_mebibyte(
    target: Target, client: AiohttpClient
) -> None:
    response = await client.post(target.url("/huge"), body=b"", headers={}, timeout=5)

    assert response.status == 200
    assert len(response.body) == MAX_RESPONSE_BYTES


async def test_a_smaller_cap_keeps_the_first_bytes_and_the_client_stays_usable(
    target: Target,
) -> None:
    http = AiohttpClient(max_response_bytes=1000)
    try:
        capped = await http.post(target.url("/huge"), body=b"", headers={}, timeout=5)
        after = await http.post(target.url("/ok"), body=b"", headers={}, timeout=5)
    finally:
        await http.close()

    assert capped.body == b"x" * 1000
    assert after.status == 201


async def test_connection_refused_means_nothing_was_received(client: AiohttpClient) -> None:
    with pytest.raises(HttpTransportError) as caught:
        await client.post(f"http://127.0.0.1:{closed_port()}/ok", body=b"{}", headers={}, timeout=5)

    assert caught.value.maybe_received is False
    assert "could not connect" in str(caught.value)


async def test_timeout_means_the_target_may_have_received_it(
    target: Target, client: AiohttpClient
) -> None:
    with pytest.raises(HttpTransportError) as caught:
        await client.post(target.url("/slow"), body=b"{}", headers={}, timeout=0.3)

    assert caught.value.maybe_received is True
    assert "within 0.3 seconds" in str(caught.value)
    assert target.paths() == ["/slow"]


async def test_connection_closed_after_reading_means_it_may_have_been_received(
    target: Target, client: AiohttpClient
) -> None:
    with pytest.raises(HttpTransportError) as caught:
        await client.post(target.url("/hang-up"), body=b"{}", headers={}, timeout=5)

    assert caught.value.maybe_received is True
    assert "closed the connection" in str(caught.value)
    assert target.paths() == ["/hang-up"]


async def test_truncated_response_body_means_it_may_have_been_received(
    client: AiohttpClient,
) -> None:
    async def answer_then_cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer_then_cut, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(HttpTransportError) as caught:
            await client.post(f"http://127.0.0.1:{port}/", body=b"", headers={}, timeout=5)
    finally:
        server.close()
        await server.wait_closed()

    assert caught.value.maybe_received is True
    assert "broken response body" in str(caught.value)


async def test_invalid_url_means_nothing_was_sent(client: AiohttpClient) -> None:
    with pytest.raises(HttpTransportError) as caught:
        await client.post("not a url", body=b"", headers={}, timeout=5)

    assert caught.value.maybe_received is False


async def test_close_leaves_a_passed_in_session_open(target: Target) -> None:
    async with aiohttp.ClientSession() as session:
        http = AiohttpClient(session)
        await http.post(target.url("/ok"), body=b"", headers={}, timeout=5)
        await http.close()

        assert not session.closed


async def test_close_closes_the_session_it_created(target: Target) -> None:
    http = AiohttpClient()
    await http.post(target.url("/ok"), body=b"", headers={}, timeout=5)
    await http.close()

    with pytest.raises(HttpTransportError):
        # A closed client refuses instead of quietly opening a second session.
        await http.post(target.url("/ok"), body=b"", headers={}, timeout=5)


def test_max_response_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_response_bytes must be positive, got 0"):
        AiohttpClient(max_response_bytes=0)
