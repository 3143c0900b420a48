"""One HTTP exchange with Countersign, retried while that is safe and time remains.

Every request the client sends may be repeated: reads are reads, and a submission carries an
idempotency key, so sending it again returns the proposal the first one stored. A lost connection,
a timeout, 429 and 502/503/504 are therefore retried, after the ``Retry-After`` the server asked
for or a short backoff, until the attempts or the call's deadline run out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import aiohttp
from pydantic import ValidationError

from contracts.api import ProblemOut
from countersign.errors import ProblemError, Unreachable

__all__ = ["Reply", "Transport"]

_RETRIED_STATUSES: Final = frozenset({429, 502, 503, 504})
_BACKOFF: Final = (0.2, 0.5, 1.0, 2.0, 5.0)


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes
    retry_after: str | None = None  #: the Retry-After header of a refusal


class Transport:
    """Sends requests to one Countersign with one agent token."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        request_timeout: float,
        attempts: int,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        if not token:
            raise ValueError("token is empty; expected the agent's bearer token")
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {attempts}")
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._request_timeout = request_timeout
        self._attempts = attempts
        self._session = session
        self._owns_session = session is None

    async def close(self) -> None:
        if self._session is not None and self._owns_session:
            await self._session.close()
        self._session = None

    async def send(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        hold: float = 0.0,
        deadline: float | None = None,
    ) -> Reply:
        """The first answer that is not a passing failure; ProblemError for any 4xx/5xx answer,
        Unreachable when no answer came in time. ``hold`` is how long the server may hold the
        request (a long poll); ``deadline`` is the event loop's time by which to give up."""
        loop = asyncio.get_running_loop()
        failure = "no attempt was made"
        for attempt in range(self._attempts):
            try:
                reply = await self._once(method, path, body, headers, params, hold)
            except (aiohttp.ClientError, TimeoutError) as error:
                failure = f"{type(error).__name__}: {error}"
                delay = _BACKOFF[min(attempt, len(_BACKOFF) - 1)]
            else:
                if reply.status < 400:
                    return reply
                problem = _problem(reply)
                if reply.status not in _RETRIED_STATUSES or attempt == self._attempts - 1:
                    raise problem
                failure = str(problem)
                delay = problem.retry_after or _BACKOFF[min(attempt, len(_BACKOFF) - 1)]
            if attempt == self._attempts - 1:
                break
            if deadline is not None and loop.time() + delay >= deadline:
                break
            await asyncio.sleep(delay)
        raise Unreachable(f"{method} {self.base_url}{path} failed: {failure}")

    async def _once(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: Mapping[str, str] | None,
        params: Mapping[str, str] | None,
        hold: float,
    ) -> Reply:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        sent = {"Authorization": f"Bearer {self._token}", "Accept": "application/json"}
        if body is not None:
            sent["Content-Type"] = "application/json"
        timeout = aiohttp.ClientTimeout(total=hold + self._request_timeout)
        async with self._session.request(
            method,
            f"{self.base_url}{path}",
            data=body,
            headers={**sent, **(headers or {})},
            params=params,
            timeout=timeout,
        ) as response:
            raw = await response.read()
            return Reply(response.status, raw, response.headers.get("Retry-After"))


def _problem(reply: Reply) -> ProblemError:
    retry_after = _seconds(reply.retry_after)
    try:
        problem = ProblemOut.model_validate_json(reply.body)
    except ValidationError:
        text = reply.body.decode("utf-8", errors="replace").strip()
        return ProblemError(
            status=reply.status,
            title="Unexpected answer",
            detail=text[:500] or f"HTTP {reply.status} with no body",
            retry_after=retry_after,
        )
    return ProblemError.of(problem, retry_after=retry_after)


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
