"""The light client: one question asked and waited for, with the standard library alone.

A Claude Code hook is a new process for every tool call, so what it imports is paid on every
call. This client needs the standard library's sockets and JSON only (no asyncio, aiohttp,
pydantic or http.client: countersign.exchange speaks the HTTP it needs). It proposes, long-polls
for the decision (following an approver's edit to the proposal that replaced it) and withdraws
the proposal when the caller's wait runs out, reading the answers through the same rules as the
full client (countersign.reading) and waiting by the same logic (countersign.asking).

Every request may be sent again: the proposal carries an idempotency key, and reads are reads. A
lost connection, a timeout, 429 and 502/503/504 are retried after the ``Retry-After`` the server
asked for (at most 30 s) or a short backoff; a wait keeps resuming its long poll until its
deadline, so it outlives a dropped connection or a restart of the server.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from countersign.asking import Cancel, Interrupted, Step, StillPending, answering, drive
from countersign.errors import CountersignError, ProblemError, Unreachable
from countersign.exchange import exchange
from countersign.reading import RETRIED_STATUSES, Ending, backoff, problem_of, retry_delay

__all__ = ["Interrupted", "LightClient", "StillPending", "environment_client", "from_environment"]


class LightClient:
    """One agent's connection to Countersign, synchronous and standard-library only."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        requested_by: str | None = None,
        run_id: str | None = None,
        long_poll_seconds: float = 25.0,
        request_timeout: float = 10.0,
        attempts: int = 4,
    ) -> None:
        if not token:
            raise ValueError("token is empty; expected the agent's bearer token")
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {attempts}")
        if long_poll_seconds <= 0:
            raise ValueError(f"long_poll_seconds must be positive, got {long_poll_seconds}")
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"Countersign's address is {base_url!r}; expected http:// or https:// and a host"
            )
        self.base_url = base_url.rstrip("/")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._token = token
        self.requested_by = requested_by
        self.run_id = run_id
        self.long_poll_seconds = long_poll_seconds
        self._request_timeout = request_timeout
        self._attempts = attempts

    # --- the verbs -------------------------------------------------------------------------------

    def propose(
        self,
        operation: str,
        request: Mapping[str, Any],
        *,
        idempotency_key: str,
        run_id: str | None = None,
        reason: str | None = None,
        latest: float | None = None,
    ) -> dict[str, Any]:
        """Submit a proposal; the same key returns the proposal the first submission stored.
        With ``latest`` (time.monotonic), no retry is waited for past it: a ``Retry-After``
        reaching beyond it ends the call with that refusal at once."""
        body: dict[str, Any] = {"operation": operation, "request": dict(request)}
        for name, value in (
            ("requested_by", self.requested_by),
            ("run_id", run_id or self.run_id),
            ("reason", reason),
        ):
            if value is not None:
                body[name] = value
        raw = json.dumps(
            body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode()
        return self._send(
            "POST", "/v1/proposals", raw, {"Idempotency-Key": idempotency_key}, latest=latest
        )

    def read(
        self, proposal_id: str, *, hold: float = 0.0, deadline: float | None = None
    ) -> dict[str, Any]:
        """The proposal, held by the server up to ``hold`` seconds while undecided. With a
        ``deadline`` (time.monotonic), failures are retried until it passes."""
        path = f"/v1/proposals/{quote(proposal_id, safe='')}"
        if hold > 0:
            path += f"?wait={hold:.3f}"
        return self._send("GET", path, None, {}, hold=hold, deadline=deadline)

    def cancel(self, proposal_id: str, *, latest: float | None = None) -> dict[str, Any]:
        """Withdraw a pending proposal; ProblemError 409 when it was decided first. With
        ``latest`` (time.monotonic), no retry is waited for past it."""
        path = f"/v1/proposals/{quote(proposal_id, safe='')}/cancel"
        return self._send("POST", path, None, {}, latest=latest)

    def ask(
        self,
        operation: str,
        request: Mapping[str, Any],
        *,
        wait: float,
        idempotency_key: str,
        run_id: str | None = None,
        reason: str | None = None,
    ) -> Ending | StillPending | Interrupted:
        """Propose on a decision operation and wait at most ``wait`` seconds for the decision;
        when nobody decided by then, the proposal is withdrawn (``Ending.kind == "deadline"``).
        Countersign failing once the proposal is made is :class:`Interrupted` (the proposal is
        withdrawn if it still can be); failing before, the error is raised: nothing was asked."""
        deadline = time.monotonic() + max(0.0, wait)
        document = self.propose(
            operation,
            request,
            idempotency_key=idempotency_key,
            run_id=run_id,
            reason=reason,
            latest=deadline,
        )
        flow = answering(
            document, deadline, clock=time.monotonic, long_poll_seconds=self.long_poll_seconds
        )
        return drive(flow, self._step).came

    def _step(self, step: Step) -> dict[str, Any]:
        """One request a wait's logic (countersign.asking) asks for."""
        if isinstance(step, Cancel):
            return self.cancel(step.proposal_id, latest=step.latest)
        return self.read(step.proposal_id, hold=step.hold, deadline=step.deadline)

    # --- HTTP ------------------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: Mapping[str, str],
        *,
        hold: float = 0.0,
        deadline: float | None = None,
        latest: float | None = None,
    ) -> dict[str, Any]:
        """The first answer that is not a passing failure, as JSON. Passing failures are
        retried ``attempts`` times, or, given a ``deadline`` (time.monotonic), until it; given
        ``latest``, never past it. When the retries end on an answer (429, 503...), that
        refusal is raised, its ``retry_after`` with it; ProblemError for any other refusal;
        Unreachable when the last try had no answer."""
        failure = "no attempt was made"
        refusal: ProblemError | None = None
        attempt = 0
        while True:
            try:
                status, raw, retry_after = self._once(method, path, body, headers, hold)
            except OSError as error:
                failure = f"{type(error).__name__}: {error}"
                refusal = None
                delay = backoff(attempt)
            else:
                if status < 400:
                    return _document(status, raw)
                refusal = problem_of(status, raw, retry_after)
                if status not in RETRIED_STATUSES:
                    raise refusal
                delay = retry_delay(attempt, refusal.retry_after)
            attempt += 1
            if deadline is None:
                if attempt >= self._attempts:
                    break
            elif time.monotonic() + delay >= deadline:
                break
            if latest is not None and time.monotonic() + delay >= latest:
                break
            time.sleep(delay)
        if refusal is not None:
            raise refusal
        raise Unreachable(f"{method} {self.base_url}{path} failed: {failure}")

    def _once(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: Mapping[str, str],
        hold: float,
    ) -> tuple[int, bytes, str | None]:
        sent = {
            "Authorization": f"Bearer {self._token}",
            "Accept": "application/json",
            **headers,
        }
        if body is not None:
            sent["Content-Type"] = "application/json"
        answer = exchange(
            self._scheme,
            self._host,
            self._port,
            method,
            self._prefix + path,
            sent,
            body,
            timeout=hold + self._request_timeout,
        )
        return answer.status, answer.body, answer.headers.get("retry-after")


def _document(status: int, raw: bytes) -> dict[str, Any]:
    try:
        document = json.loads(raw)
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise CountersignError(
            f"Countersign answered HTTP {status} with a body that is not a JSON object"
        )
    return document


def from_environment(env: Mapping[str, str] | None) -> tuple[str, str, dict[str, Any]]:
    """The address, token and proposal defaults the environment gives a client:
    ``COUNTERSIGN_URL``, ``COUNTERSIGN_TOKEN`` and, when set, ``COUNTERSIGN_REQUESTED_BY`` and
    ``COUNTERSIGN_RUN_ID``; CountersignError naming what is missing."""
    env = os.environ if env is None else env
    missing = [name for name in ("COUNTERSIGN_URL", "COUNTERSIGN_TOKEN") if not env.get(name)]
    if missing:
        raise CountersignError(
            f"{' and '.join(missing)} not set: expected Countersign's agent API address "
            "(e.g. http://127.0.0.1:8801) and the agent's bearer token"
        )
    defaults = {
        "requested_by": env.get("COUNTERSIGN_REQUESTED_BY") or None,
        "run_id": env.get("COUNTERSIGN_RUN_ID") or None,
    }
    return env["COUNTERSIGN_URL"], env["COUNTERSIGN_TOKEN"], defaults


def environment_client(env: Mapping[str, str] | None = None) -> LightClient:
    """A light client configured by the environment (:func:`from_environment`)."""
    base_url, token, defaults = from_environment(env)
    return LightClient(base_url, token, **defaults)
