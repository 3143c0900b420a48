"""Socket Mode for the local Slack: ``apps.connections.open`` and the WebSocket it hands out.

With an app-level token, Countersign connects to Slack over a WebSocket instead of receiving
HTTP requests. This serves that side locally: the app opens a connection, receives envelopes
(interactions, events) and acknowledges each by its ``envelope_id``, as with Slack.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from aiohttp import WSMsgType, web

__all__ = ["LocalSocketMode"]


class LocalSocketMode:
    def __init__(self, app_token: str = "xapp-local-app-token") -> None:
        self.app_token = app_token
        self._sockets: list[web.WebSocketResponse] = []
        self._connected = asyncio.Event()
        self._acks: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.opened = 0  #: apps.connections.open calls answered

    def install(self, app: web.Application) -> None:
        """Add the routes to the local Slack's application (before its generic API route)."""
        app.router.add_route("*", "/api/apps.connections.open", self._open)
        app.router.add_get("/socket-mode", self._socket)

    async def _open(self, request: web.Request) -> web.Response:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not token:
            form = await request.post()
            token = str(form.get("token", ""))
        if token != self.app_token:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        self.opened += 1
        url = request.url.with_scheme("ws").with_path("/socket-mode").with_query(None)
        return web.json_response({"ok": True, "url": str(url)})

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse(heartbeat=None)
        await socket.prepare(request)
        await socket.send_json(
            {"type": "hello", "num_connections": 1, "connection_info": {"app_id": "ALOCAL"}}
        )
        self._sockets.append(socket)
        self._connected.set()
        try:
            async for message in socket:
                if message.type is not WSMsgType.TEXT:
                    continue
                data = json.loads(message.data)
                future = self._acks.pop(str(data.get("envelope_id")), None)
                if future is not None and not future.done():
                    future.set_result(data)
        finally:
            self._sockets.remove(socket)
            if not self._sockets:
                self._connected.clear()
        return socket

    async def wait_connected(self, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            await self._connected.wait()

    async def send(
        self, envelope_type: str, payload: dict[str, Any], *, timeout: float = 10.0
    ) -> dict[str, Any]:
        """Deliver one envelope to the connected app; return its acknowledgement."""
        await self.wait_connected(timeout)
        envelope_id = str(uuid.uuid4())
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._acks[envelope_id] = future
        await self._sockets[-1].send_json(
            {
                "envelope_id": envelope_id,
                "type": envelope_type,
                "payload": payload,
                "accepts_response_payload": envelope_type != "events_api",
            }
        )
        async with asyncio.timeout(timeout):
            return await future

    async def close(self) -> None:
        for socket in list(self._sockets):
            await socket.close()
