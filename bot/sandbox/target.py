"""A small execution target for the demo's webhook operation, served by the sandbox itself.

It does what a real target should: refuses requests whose Countersign signature does not verify,
and answers a repeated ``Idempotency-Key`` with the first answer instead of acting twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from contracts.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, verify

__all__ = ["Delivery", "DemoTarget"]


@dataclass(frozen=True, slots=True)
class Delivery:
    """One request the target accepted."""

    at: datetime
    idempotency_key: str
    arguments: dict[str, Any]
    answer: dict[str, Any]
    replayed: bool


class DemoTarget:
    """``POST /demo-target/campaigns/send``: queues a (pretend) email campaign."""

    def __init__(self, secret: str, *, clock: Callable[[], datetime] | None = None) -> None:
        self._secret = secret
        self._clock = clock or (lambda: datetime.now(UTC))
        self._answers: dict[str, dict[str, Any]] = {}
        self.deliveries: list[Delivery] = []
        self.refused = 0

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/demo-target/campaigns/send", self._send)]

    async def _send(self, request: web.Request) -> web.Response:
        raw = await request.read()
        if not verify(
            self._secret,
            request.headers.get(TIMESTAMP_HEADER, ""),
            raw,
            request.headers.get(SIGNATURE_HEADER, ""),
            now=self._clock(),
        ):
            self.refused += 1
            return web.json_response(
                {"message": f"{SIGNATURE_HEADER} does not verify with the webhook secret"},
                status=401,
            )
        key = request.headers.get("Idempotency-Key", "")
        body = json.loads(raw)
        arguments = body.get("arguments", {}) if isinstance(body, dict) else {}
        replayed = key in self._answers
        if not replayed:
            self._answers[key] = {
                "campaign_id": f"cmp_{len(self._answers) + 1:04d}",
                "queued_emails": arguments.get("recipients"),
                "status": "queued",
            }
        answer = self._answers[key]
        self.deliveries.append(Delivery(self._clock(), key, arguments, answer, replayed))
        return web.json_response(answer)
