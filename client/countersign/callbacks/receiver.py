"""A receiver for Countersign's signed callbacks: agents are told, instead of long-polling.

Handlers are registered by name; each is served at ``<where the receiver is mounted>/<name>``,
and an agent passes that address as a proposal's ``callback_url``. A callback is verified with
the agent's callback secret, then handed to its handler exactly once: the journal records what
was handled, so a replayed or retried callback runs nothing twice. The receiver is an aiohttp
application (:meth:`CallbackReceiver.aiohttp_app`) or an ASGI application
(:meth:`CallbackReceiver.asgi`) to mount in another framework.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from aiohttp import web

from countersign.callbacks.journal import Claim, Journal, MemoryJournal
from countersign.callbacks.verify import verify_callback
from countersign.errors import CountersignError, InvalidCallback
from countersign.wire.api import EscalationOut, ProposalOut

__all__ = ["CallbackReceiver", "Document", "Handler", "NotYet", "Reply"]

log = logging.getLogger(__name__)

Document = ProposalOut | EscalationOut
#: Told a verified callback's document, once. Raising asks Countersign to send it again later.
Handler = Callable[[Document], Awaitable[None]]

#: A handler's name is one path segment of the callback's address.
_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: A callback carries one document; anything larger is not one.
MAX_BODY: Final = 1024 * 1024
#: Seconds Countersign is asked to wait before sending a callback again.
RETRY_AFTER: Final = 5


class NotYet(CountersignError):
    """The handler cannot take this callback yet (it does not know the proposal yet, say):
    Countersign is asked to send it again later."""


@dataclass(frozen=True, slots=True)
class Reply:
    """The receiver's answer to one callback: 2xx when handled (now or before); 503 asks
    Countersign to try again; other 4xx tell it not to."""

    status: int
    text: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(RETRY_AFTER)} if self.status == 503 else {}


class CallbackReceiver:
    """Verifies callbacks with ``secret`` (the agent's callback secret: its token unless
    ``callback_secret_env`` is set) and hands each to the handler its address names, once."""

    def __init__(
        self,
        secret: str,
        journal: Journal | None = None,
        *,
        tolerance: int = 300,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        if not secret:
            raise ValueError("secret: expected the agent's callback secret, got an empty string")
        self._secret = secret
        self._journal = journal if journal is not None else MemoryJournal()
        self._handlers: dict[str, Handler] = {}
        self._tolerance = tolerance
        self._clock = clock

    def register(self, name: str, handler: Handler) -> None:
        """Serve ``handler`` at ``<mount>/<name>``."""
        if not _NAME.match(name):
            raise ValueError(
                f"handler name {name!r}: expected one path segment of letters, digits, '.', '_' "
                "or '-' (at most 64 characters)"
            )
        if name in self._handlers:
            raise ValueError(f"handler name {name!r} is registered already")
        self._handlers[name] = handler

    @staticmethod
    def url_for(base_url: str, name: str) -> str:
        """The ``callback_url`` of handler ``name`` for a receiver served at ``base_url``."""
        return f"{base_url.rstrip('/')}/{name}"

    async def receive(self, name: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Verify one callback and hand it to handler ``name`` unless it was handled before."""
        handler = self._handlers.get(name)
        if handler is None:
            listed = ", ".join(sorted(self._handlers)) or "none"
            return Reply(404, f"no callback handler named {name!r} (registered: {listed})")
        try:
            now = self._clock() if self._clock is not None else None
            document = verify_callback(
                headers, body, self._secret, now=now, tolerance=self._tolerance
            )
        except InvalidCallback as refused:
            return Reply(401, str(refused))
        key = _key_of(document)
        claim = await self._journal.claim(key)
        if claim is Claim.HANDLED:
            return Reply(200, f"{key} was handled before; nothing done")
        if claim is Claim.BUSY:
            return Reply(503, f"{key} is being handled elsewhere")
        try:
            await handler(document)
        except NotYet as later:
            await self._journal.release(key)
            return Reply(503, str(later))
        except Exception:
            await self._journal.release(key)
            log.exception(
                "callback handler %r failed on %s; Countersign will send it again", name, key
            )
            return Reply(500, f"handler {name!r} failed on {key}; send it again later")
        await self._journal.finish(key)
        return Reply(200, f"{key} handled")

    # --- serving -----------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.Response:
        """The aiohttp handler of ``POST .../{name}``."""
        if request.content_length is not None and request.content_length > MAX_BODY:
            return web.Response(status=413, text="a callback is one document; this is larger")
        body = await request.read()
        reply = await self.receive(request.match_info["name"], request.headers, body)
        return web.Response(status=reply.status, text=reply.text, headers=reply.headers)

    def aiohttp_app(self) -> web.Application:
        """An aiohttp application serving ``POST /{name}``; mount it with ``add_subapp``."""
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post("/{name}", self.handle)
        return app

    def asgi(self) -> Callable[[Any, Any, Any], Awaitable[None]]:
        """An ASGI application serving ``POST /{name}`` (mount it in Starlette, FastAPI, ...)."""
        return _Asgi(self)


def _key_of(document: Document) -> str:
    kind = "escalation" if isinstance(document, EscalationOut) else "proposal"
    return f"{kind}:{document.id}:{document.status}"


class _Asgi:
    """The receiver as an ASGI application."""

    def __init__(self, receiver: CallbackReceiver) -> None:
        self._receiver = receiver

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        name = path.strip("/")
        if scope.get("method") != "POST":
            reply = Reply(405, "callbacks are POSTed")
        elif "/" in name:
            reply = Reply(404, f"no callback handler at {path!r}")
        else:
            body = await _body(receive)
            if body is None:
                reply = Reply(413, "a callback is one document; this is larger")
            else:
                headers = {
                    key.decode("latin-1"): value.decode("latin-1")
                    for key, value in scope.get("headers", ())
                }
                reply = await self._receiver.receive(name, headers, body)
        extra = [(k.lower().encode(), v.encode()) for k, v in reply.headers.items()]
        await send(
            {
                "type": "http.response.start",
                "status": reply.status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), *extra],
            }
        )
        await send({"type": "http.response.body", "body": reply.text.encode()})


async def _body(receive: Any) -> bytes | None:
    """The request body, or None once it passes MAX_BODY."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)
