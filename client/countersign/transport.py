"""One HTTP exchange with Countersign, retried while that is safe and time remains.

Every request the client sends may be repeated: reads are reads, and a submission carries an
idempotency key, so sending it again returns the proposal the first one stored. A lost connection,
a timeout, 429 and 502/503/504 are therefore retried, after the ``Retry-After`` the server asked
for (at most 30 s) or a short backoff: a call with a deadline (a long poll) until the deadline,
so that it outlives a dropped connection or a restart of the server; any other for its attempts.
The rules are countersign.reading's, shared with the light client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

import aiohttp

from countersign.errors import ProblemError, Unreachable
from countersign.reading import RETRIED_STATUSES, backoff, problem_of, retry_delay

__all__ = ["Reply", "Transport"]


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
        longest_retry_after: float | None = None,
    ) -> None:
        if not token:
            raise ValueError("token is empty; expected the agent's bearer token")
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {attempts}")
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._request_timeout = request_timeout
        self._attempts = attempts
        #: a refusal asking for a longer wait than this is raised at once, not waited out
        self._longest_retry_after = longest_retry_after
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
        latest: float | None = None,
    ) -> Reply:
        """The first answer that is not a passing failure. ``hold`` is how long the server may
        hold the request (a long poll). Passing failures are retried ``attempts`` times, or,
        given a ``deadline`` (the event loop's time), until it; given ``latest``, no retry is
        waited for past it. When the retries end on an answer (429, 503...), that refusal is
        raised, its ``retry_after`` with it; ProblemError for any other 4xx/5xx answer;
        Unreachable when the last try had no answer."""
        loop = asyncio.get_running_loop()
        failure = "no attempt was made"
        refusal: ProblemError | None = None
        attempt = 0
        while True:
            try:
                reply = await self._once(method, path, body, headers, params, hold)
            except (aiohttp.ClientError, TimeoutError) as error:
                failure = f"{type(error).__name__}: {error}"
                refusal = None
                delay = backoff(attempt)
            else:
                if reply.status < 400:
                    return reply
                refusal = problem_of(reply.status, reply.body, reply.retry_after)
                if reply.status not in RETRIED_STATUSES or self._too_long(refusal):
                    raise refusal
                delay = retry_delay(attempt, refusal.retry_after)
            attempt += 1
            if deadline is None:
                if attempt >= self._attempts:
                    break
            elif loop.time() + delay >= deadline:
                break
            if latest is not None and loop.time() + delay >= latest:
                break
            await asyncio.sleep(delay)
        if refusal is not None:
            raise refusal
        raise Unreachable(f"{method} {self.base_url}{path} failed: {failure}")

    def _too_long(self, problem: ProblemError) -> bool:
        """The refusal asks for a longer wait than this transport waits out."""
        longest, asked = self._longest_retry_after, problem.retry_after
        return longest is not None and asked is not None and asked > longest

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
