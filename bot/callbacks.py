"""Signed callbacks to agents: the final state of their proposal, retried with backoff."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime

from pydantic import JsonValue

from bot.schemas import ProposalOut
from bot.settings import AgentSettings
from contracts.base import HttpClient, HttpTransportError
from contracts.signing import sign
from store.base import Proposal, Store

__all__ = ["CallbackSender"]

log = logging.getLogger(__name__)


class CallbackSender:
    def __init__(
        self,
        http: HttpClient,
        store: Store,
        clock: Callable[[], datetime],
        *,
        attempts: int = 6,
        first_delay: float = 0.5,
        timeout: float = 10.0,
    ) -> None:
        self._http = http
        self._store = store
        self._clock = clock
        self._attempts = attempts
        self._first_delay = first_delay
        self._timeout = timeout

    async def deliver(self, proposal: Proposal, agent: AgentSettings) -> bool:
        """POST the proposal's state to its callback_url until a 2xx or attempts run out."""
        if proposal.callback_url is None:
            return False
        body = ProposalOut.of(proposal).model_dump_json().encode()
        delay = self._first_delay
        last = ""
        attempt = 0
        for attempt in range(1, self._attempts + 1):
            timestamp = str(int(self._clock().timestamp()))
            headers = {
                "Content-Type": "application/json",
                "X-Countersign-Timestamp": timestamp,
                "X-Countersign-Signature": sign(agent.callback_secret, timestamp, body),
                "X-Countersign-Proposal": proposal.id,
            }
            try:
                response = await self._http.post(
                    proposal.callback_url, body=body, headers=headers, timeout=self._timeout
                )
            except HttpTransportError as error:
                last = str(error)
            else:
                if 200 <= response.status < 300:
                    await self._audit(proposal, "callback_delivered", attempt, None)
                    return True
                last = f"HTTP {response.status}"
                if 400 <= response.status < 500 and response.status not in (408, 429):
                    break  # the agent's endpoint refuses it; retrying will not change that
            if attempt < self._attempts:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 60.0)
        log.warning("callback for %s failed: %s", proposal.id, last)
        await self._audit(proposal, "callback_failed", attempt, last)
        return False

    async def _audit(
        self, proposal: Proposal, event: str, attempts: int, error: str | None
    ) -> None:
        detail: dict[str, JsonValue] = {"url": proposal.callback_url, "attempts": attempts}
        if error is not None:
            detail["error"] = error
        await self._store.record_event(
            proposal.id,
            actor="countersign",
            event=event,
            detail=detail,
            now=self._clock(),
        )
