"""The sandbox answers only its own page: the right Host, and JSON for what changes anything.

The sandbox has no login (whoever can call it acts as anyone), so which callers it answers is
its only protection:

- **Host**: every request must name the address the sandbox serves on, exactly as it was
  started (``127.0.0.1:8800`` and ``localhost:8800`` are different names). A web page on another
  site that points its own host name at 127.0.0.1 (DNS rebinding) sends its own name and is
  refused with 403. Started on a wildcard address (``0.0.0.0``, ``::``), the sandbox accepts any
  IP address literal with its port: a rebinding needs a name, an IP literal cannot be one.
- **JSON**: the page's POSTs under ``/sandbox/`` must say ``Content-Type: application/json``
  (415 otherwise). A cross-site HTML form can only send form or plain-text bodies, and a
  cross-site script that sets a JSON type must ask first (a CORS preflight the sandbox never
  allows), so no other site can click, submit or propose through the sandbox. When the browser
  names the page the request came from (``Origin``), it must be the sandbox's own (403).

The local Slack Web API (``/slack/api/``, which needs the bot token) and the demo target (which
needs Countersign's signature) keep their own checks and are held to the Host rule only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from typing import Final
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

__all__ = ["PAGE_API", "own_origin_only"]

#: The JSON endpoints the page's script calls.
PAGE_API: Final = "/sandbox/"
_WILDCARDS: Final = frozenset({"0.0.0.0", "::"})
_SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def own_origin_only(url: str) -> Middleware:
    """The middleware for a sandbox whose page is at ``url`` (``http://host:port``)."""
    parts = urlsplit(url)
    served = parts.netloc
    wildcard = (parts.hostname or "") in _WILDCARDS
    port = parts.port

    def host_allowed(host: str) -> bool:
        if host == served:
            return True
        if port == 80 and host == parts.hostname:  # browsers leave the default port out
            return True
        return wildcard and _is_ip_literal_with_port(host, port)

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host", "")
        if not host_allowed(host):
            return _refused(
                403,
                f"this sandbox answers only requests addressed to {served} (this one named "
                f"{host!r}): open {url}",
            )
        if request.path.startswith(PAGE_API) and request.method not in _SAFE_METHODS:
            origin = request.headers.get("Origin")
            if origin is not None and origin != f"{parts.scheme}://{host}":
                return _refused(
                    403, f"this sandbox answers only its own page, not one from {origin!r}"
                )
            if request.content_type != "application/json":
                return _refused(
                    415,
                    f"Content-Type: expected application/json, got {request.content_type!r}",
                )
        return await handler(request)

    return middleware


def _is_ip_literal_with_port(host: str, port: int | None) -> bool:
    name, _, port_text = host.rpartition(":")
    if not name or port_text != str(port):
        return False
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _refused(status: int, error: str) -> web.Response:
    return web.json_response({"error": error}, status=status)
