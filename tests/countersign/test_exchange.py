"""countersign.exchange against a real HTTP server: the answers aiohttp gives (a length, chunks),
and a connection that closes mid-answer, which is a passing failure (an OSError)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from countersign.exchange import exchange


async def echo(request: web.Request) -> web.Response:
    body = await request.read()
    return web.json_response(
        {"method": request.method, "path": request.path_qs, "body": body.decode(),
         "auth": request.headers.get("Authorization"), "host": request.headers.get("Host")},
        status=201,
        headers={"Retry-After": "3"},
    )  # fmt: skip


async def chunked(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(status=200)
    response.enable_chunked_encoding()
    await response.prepare(request)
    for part in (b'{"parts": ', b'["one", ', b'"two"]}'):
        await response.write(part)
        await asyncio.sleep(0.01)
    await response.write_eof()
    return response


@pytest.fixture
async def server() -> AsyncIterator[TestServer]:
    app = web.Application()
    app.router.add_route("*", "/echo", echo)
    app.router.add_get("/chunked", chunked)
    running = TestServer(app, host="127.0.0.1")
    await running.start_server()
    yield running
    await running.close()


async def test_a_request_and_its_answer_with_a_length(server: TestServer) -> None:
    answer = await asyncio.to_thread(
        exchange, "http", "127.0.0.1", server.port, "POST", "/echo?x=1",
        {"Authorization": "Bearer t0ken"}, b'{"a": 1}', 5.0,
    )  # fmt: skip

    assert answer.status == 201
    assert answer.headers["retry-after"] == "3"
    assert json.loads(answer.body) == {
        "method": "POST",
        "path": "/echo?x=1",
        "body": '{"a": 1}',
        "auth": "Bearer t0ken",
        "host": f"127.0.0.1:{server.port}",
    }


async def test_a_chunked_answer_is_read_whole(server: TestServer) -> None:
    answer = await asyncio.to_thread(
        exchange, "http", "127.0.0.1", server.port, "GET", "/chunked", {}, None, 5.0
    )

    assert json.loads(answer.body) == {"parts": ["one", "two"]}


async def test_a_connection_closed_mid_answer_is_a_connection_error() -> None:
    async def half(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"cut')
        await writer.drain()
        writer.close()

    listener = await asyncio.start_server(half, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    async with listener:
        with pytest.raises(ConnectionError, match="closed after"):
            await asyncio.to_thread(exchange, "http", "127.0.0.1", port, "GET", "/", {}, None, 5.0)


async def test_nothing_listening_is_an_os_error() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(OSError):
        await asyncio.to_thread(exchange, "http", "127.0.0.1", port, "GET", "/", {}, None, 2.0)
