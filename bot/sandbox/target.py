"""A small execution target for the demo's webhook operations, served by the sandbox itself.

It does what a real target should: refuses requests whose Countersign signature does not verify,
and answers a repeated ``Idempotency-Key`` with the first answer instead of acting twice.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from aiohttp import web

from contracts.signing import EXECUTION, SIGNATURE_HEADER, TIMESTAMP_HEADER, verify

__all__ = ["LATE_BY_SECONDS", "Delivery", "DemoTarget"]

#: How long the ledger export takes to answer the first time: longer than its operation's
#: timeout in demo.toml, so Countersign cannot know whether it happened.
LATE_BY_SECONDS: Final = 2.5


@dataclass(frozen=True, slots=True)
class Delivery:
    """One request the target accepted."""

    at: datetime
    idempotency_key: str
    arguments: dict[str, Any]
    answer: dict[str, Any]
    replayed: bool


class DemoTarget:
    """``POST /demo-target/campaigns/send``: queues a (pretend) email campaign;
    ``POST /demo-target/customers/tag``: tags a segment's customers (recorded in ``taggings``);
    ``POST /demo-target/ledger/export``: exports a month at once but answers late the first time
    (recorded in ``exports``), and at once when asked again with the same key."""

    def __init__(self, secret: str, *, clock: Callable[[], datetime] | None = None) -> None:
        self._secret = secret
        self._clock = clock or (lambda: datetime.now(UTC))
        self._answers: dict[str, dict[str, Any]] = {}
        self.deliveries: list[Delivery] = []
        self.taggings: list[Delivery] = []
        self.exports: list[Delivery] = []
        self.refused = 0

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/demo-target/campaigns/send", self._send),
            web.post("/demo-target/customers/tag", self._tag),
            web.post("/demo-target/ledger/export", self._export),
        ]

    async def _call(self, request: web.Request) -> tuple[str, dict[str, Any]] | None:
        """The call's Idempotency-Key and arguments, if Countersign signed it; None (counted
        in ``refused``) if not."""
        raw = await self._verified(request)
        if raw is None:
            return None
        body = json.loads(raw)
        arguments = body.get("arguments", {}) if isinstance(body, dict) else {}
        return request.headers.get("Idempotency-Key", ""), arguments

    async def _verified(self, request: web.Request) -> bytes | None:
        """The body, if Countersign signed it; None (counted in ``refused``) if not."""
        raw = await request.read()
        if verify(
            self._secret,
            request.headers.get(TIMESTAMP_HEADER, ""),
            raw,
            request.headers.get(SIGNATURE_HEADER, ""),
            now=self._clock(),
            purpose=EXECUTION,
        ):
            return raw
        self.refused += 1
        return None

    @staticmethod
    def _unsigned() -> web.Response:
        return web.json_response(
            {"message": f"{SIGNATURE_HEADER} does not verify with the webhook secret"},
            status=401,
        )

    async def _tag(self, request: web.Request) -> web.Response:
        call = await self._call(request)
        if call is None:
            return self._unsigned()
        key, arguments = call
        replayed = any(earlier.idempotency_key == key for earlier in self.taggings)
        answer = {"tagged": arguments.get("customers"), "tag": arguments.get("tag")}
        self.taggings.append(Delivery(self._clock(), key, arguments, answer, replayed))
        return web.json_response(answer)

    async def _send(self, request: web.Request) -> web.Response:
        call = await self._call(request)
        if call is None:
            return self._unsigned()
        key, arguments = call
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

    async def _export(self, request: web.Request) -> web.Response:
        call = await self._call(request)
        if call is None:
            return self._unsigned()
        key, arguments = call
        replayed = any(earlier.idempotency_key == key for earlier in self.exports)
        answer = {"exported": arguments.get("month"), "rows": 1284}
        self.exports.append(Delivery(self._clock(), key, arguments, answer, replayed))
        if not replayed:
            await asyncio.sleep(LATE_BY_SECONDS)  # done, but the answer comes too late
        return web.json_response(answer)
