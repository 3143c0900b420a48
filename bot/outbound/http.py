"""The HTTP client operations use to reach their targets, over one aiohttp session.

Every failure without a response becomes :class:`contracts.base.HttpTransportError`, which says
whether the request may have reached the server: a refused or failed connection means nothing was
sent; a timeout, a dropped connection or a broken response means the target may have acted.
Its messages show a target as ``scheme://host[:port]/…`` only: a URL's path, query and userinfo
may hold the target's credentials (contracts/redaction.py).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Final

import aiohttp
import yarl

from contracts.base import HttpResponse, HttpTransportError
from contracts.durations import spoken_duration
from contracts.redaction import scrub, shown_url

__all__ = ["MAX_RESPONSE_BYTES", "AiohttpClient"]

#: Responses are read up to this many bytes; the rest is dropped and the connection closed.
MAX_RESPONSE_BYTES: Final = 1024 * 1024

_CHUNK: Final = 64 * 1024


def _spellings(url: str) -> tuple[str, ...]:
    """``url`` as yarl (and so aiohttp's messages) may write it."""
    try:
        parsed = yarl.URL(url)
    except (ValueError, TypeError):
        return ()
    return (str(parsed), parsed.human_repr(), parsed.raw_path_qs, parsed.path_qs)


@functools.lru_cache(maxsize=64)
def _timeout(total: float) -> aiohttp.ClientTimeout:
    """aiohttp's timeout of ``total`` seconds, made once per value (it is immutable; an
    operation's requests all take its one configured timeout)."""
    return aiohttp.ClientTimeout(total=total)


class AiohttpClient:
    """:class:`contracts.base.HttpClient` over one ``aiohttp.ClientSession``.

    Pass a session to share one; it stays yours to close. Without one, a session is created on
    the first request (inside the running event loop) and :meth:`close` closes it. Redirects are
    never followed: a target's 3xx comes back as the response it is.
    """

    def __init__(
        self,
        session: aiohttp.ClientSession | None = None,
        *,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        if max_response_bytes <= 0:
            raise ValueError(f"max_response_bytes must be positive, got {max_response_bytes}")
        self._session = session
        self._owns_session = session is None
        self._max_response_bytes = max_response_bytes
        self._closed = False

    def _session_for_request(self, url: str) -> aiohttp.ClientSession:
        if self._closed:
            raise HttpTransportError(
                f"not sending to {shown_url(url)}: the HTTP client is closed", maybe_received=False
            )
        if self._session is None:
            # No cookies and no proxy settings from the environment: targets are addressed
            # exactly as configured, and one target cannot set state another request would carry.
            self._session = aiohttp.ClientSession(
                cookie_jar=aiohttp.DummyCookieJar(), trust_env=False
            )
        return self._session

    # ``timeout`` is part of the signature contracts.base.HttpClient defines.
    async def post(
        self,
        url: str,
        *,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float,
    ) -> HttpResponse:
        session = self._session_for_request(url)

        def said(error: BaseException) -> str:
            """The client's own words, with the URL (in any spelling it quotes) shown safely."""
            return scrub(str(error), url, *_spellings(url))

        try:
            async with session.post(
                url,
                data=body,
                headers=dict(headers),
                timeout=_timeout(timeout),
                allow_redirects=False,
            ) as response:
                content = await self._read_capped(response)
                return HttpResponse(status=response.status, body=content, headers=response.headers)
        except (aiohttp.ConnectionTimeoutError, aiohttp.ClientConnectorError) as error:
            raise HttpTransportError(
                f"could not connect to {shown_url(url)}: {said(error)}", maybe_received=False
            ) from error
        except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError) as error:
            raise HttpTransportError(
                f"invalid target URL {shown_url(url)}: {type(error).__name__}", maybe_received=False
            ) from error
        except TimeoutError as error:
            raise HttpTransportError(
                f"the target did not answer in full within {spoken_duration(timeout)}",
                maybe_received=True,
            ) from error
        except aiohttp.ServerDisconnectedError as error:
            raise HttpTransportError(
                f"{shown_url(url)} closed the connection before answering", maybe_received=True
            ) from error
        except aiohttp.ClientPayloadError as error:
            raise HttpTransportError(
                f"{shown_url(url)} sent a broken response body: {said(error)}", maybe_received=True
            ) from error
        except aiohttp.ClientError as error:
            # Connection resets after connecting, malformed responses and anything else the
            # client raises once the request may be on the wire: the target may have acted.
            raise HttpTransportError(
                f"request to {shown_url(url)} failed: {type(error).__name__}: {said(error)}",
                maybe_received=True,
            ) from error

    async def _read_capped(self, response: aiohttp.ClientResponse) -> bytes:
        limit = self._max_response_bytes
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = await response.content.read(min(_CHUNK, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
        # Over the cap: keep the status and the first ``limit`` bytes, drop the connection
        # rather than drain an unbounded body.
        response.close()
        return b"".join(chunks)[:limit]

    async def close(self) -> None:
        """Close the session if this client created it; a passed-in session is left open.

        Afterwards every request fails with HttpTransportError (nothing sent).
        """
        self._closed = True
        if self._owns_session and self._session is not None:
            await self._session.close()
