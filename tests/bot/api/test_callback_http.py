"""Delivery checks the destination again, as the connection reads it: a host the system takes
for an IPv4 address (``127.1``, ``2130706433``, ``0177.0.0.1``, ``0x7f.1``) is that address,
whatever a resolver would answer for it as a name and whatever submission let through. A real
HTTP server listens where the connection would go; nothing reaches it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from bot.api.callback_http import CallbackHttp
from bot.flow.destinations import CallbackGuard
from bot.settings.callback_urls import DestinationRefused

#: Each means 127.0.0.1 to the system (inet_aton, getaddrinfo).
SPELLINGS = ["127.1", "2130706433", "0177.0.0.1", "0x7f.1", "0x7f000001"]


class PublicDns:
    """A resolver that knows the spellings only as names, and answers a public address."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        return ["93.184.216.34"]


@pytest.fixture
async def listening() -> AsyncIterator[tuple[int, list[bytes]]]:
    received: list[bytes] = []

    async def hook(request: web.Request) -> web.Response:
        received.append(await request.read())
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/hooks/done", hook)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield port, received
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("allow_private", [False, True])
@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_delivery_refuses_loopback_however_the_system_may_read_it(
    listening: tuple[int, list[bytes]], spelling: str, allow_private: bool
) -> None:
    port, received = listening
    dns = PublicDns()
    http = CallbackHttp(CallbackGuard(dns))
    try:
        with pytest.raises(DestinationRefused) as refused:
            await http.post(
                f"http://{spelling}:{port}/hooks/done",
                allow_private=allow_private,
                body=b"{}",
                headers={"Content-Type": "application/json"},
                timeout=1.0,
            )
    finally:
        await http.close()
    if allow_private:
        assert "written in another form; write it as 127.0.0.1" in refused.value.reason
    else:
        assert refused.value.reason == "its host is a loopback address"
    assert dns.asked == []  # an address: no resolver is asked what it is
    assert received == []


async def test_the_usual_form_of_an_allowed_address_is_delivered(
    listening: tuple[int, list[bytes]],
) -> None:
    port, received = listening
    http = CallbackHttp(CallbackGuard(PublicDns()))
    try:
        response = await http.post(
            f"http://127.0.0.1:{port}/hooks/done",
            allow_private=True,
            body=b'{"id": 1}',
            headers={"Content-Type": "application/json"},
            timeout=2.0,
        )
    finally:
        await http.close()
    assert response.status == 200
    assert received == [b'{"id": 1}']
