"""The HTTP client for callbacks: it connects only to addresses it has just checked.

aiohttp asks a resolver for a host's addresses and connects to what it returns. The resolver here
resolves the name, checks every address (bot/flow/destinations.py) and refuses the whole name if any
is internal, so the address checked is the address connected to: a name that answered with a public
address at submission and answers ``127.0.0.1`` now (DNS rebinding) is refused now. A host
written as an IP address never reaches a resolver, so it is checked before the request.

Agents that may call internal addresses (``callback_allow_private``) get their own session, so
a connection or lookup made under that permission is never reused for another agent.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Final

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from bot.flow.destinations import CallbackGuard, address_refusal, refuse_before_lookup
from bot.outbound.http import AiohttpClient
from bot.settings.callback_urls import DestinationRefused, parse_destination
from contracts.base import HttpResponse, HttpTransportError

__all__ = ["CallbackHttp"]

#: An agent's answer to a callback is only read for its status.
_MAX_RESPONSE_BYTES: Final = 64 * 1024


class _RefusedAddress(OSError):
    """The name resolves to an address callbacks may not reach."""


class _CheckingResolver(AbstractResolver):
    def __init__(self, guard: CallbackGuard, *, allow_private: bool) -> None:
        self._guard = guard
        self._allow_private = allow_private

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = await self._guard.resolve(host, port)
        for address in addresses:
            why = address_refusal(address, allow_private=self._allow_private)
            if why is not None:
                raise _RefusedAddress(f"its host resolves to {why}")
        results: list[ResolveResult] = []
        for address in addresses:
            kind = socket.AF_INET6 if ":" in address else socket.AF_INET
            if family not in (socket.AF_UNSPEC, kind):
                continue
            results.append(
                ResolveResult(
                    hostname=host,
                    host=address,
                    port=port,
                    family=kind,
                    proto=0,
                    flags=socket.AI_NUMERICHOST,
                )
            )
        if not results:
            raise OSError(f"{host} has no address of the family asked for")
        return results

    async def close(self) -> None:
        return None


class CallbackHttp:
    """POSTs to agents' callback URLs, after checking the destination, on checked addresses."""

    def __init__(self, guard: CallbackGuard) -> None:
        self._guard = guard
        self._clients: dict[bool, tuple[aiohttp.ClientSession, AiohttpClient]] = {}

    def _client(self, allow_private: bool) -> AiohttpClient:
        if allow_private not in self._clients:
            connector = aiohttp.TCPConnector(
                resolver=_CheckingResolver(self._guard, allow_private=allow_private),
                use_dns_cache=False,
            )
            # No cookies, no proxy from the environment: the request goes where it was checked.
            session = aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False
            )
            client = AiohttpClient(session, max_response_bytes=_MAX_RESPONSE_BYTES)
            self._clients[allow_private] = (session, client)
        return self._clients[allow_private][1]

    async def post(
        self,
        url: str,
        *,
        allow_private: bool,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float,
    ) -> HttpResponse:
        """Raises DestinationRefused (nothing sent) or HttpTransportError."""
        destination = parse_destination(url)
        refuse_before_lookup(destination, allow_private=allow_private)
        try:
            return await self._client(allow_private).post(
                url, body=body, headers=headers, timeout=timeout
            )
        except HttpTransportError as error:
            refused = _refusal_in(error)
            if refused is not None:
                raise DestinationRefused(str(refused)) from None
            raise

    async def close(self) -> None:
        for session, client in self._clients.values():
            await client.close()
            await session.close()
        self._clients.clear()


def _refusal_in(error: BaseException) -> _RefusedAddress | None:
    """The resolver's refusal, wherever aiohttp wrapped it."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, _RefusedAddress):
            return current
        os_error = getattr(current, "os_error", None)
        if isinstance(os_error, _RefusedAddress):
            return os_error
        current = current.__cause__ or current.__context__
    return None
