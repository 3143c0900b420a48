"""Signed callbacks to agents: the state of their proposal, POSTed to its callback_url.

The outbox calls :meth:`CallbackSender.deliver` once per attempt and retries with backoff; the
body is the proposal as the agent API shows it, read when the attempt is made.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime

from bot.publish import DeliveryFailed
from bot.schemas import ProposalOut
from bot.settings import AgentSettings
from contracts.base import HttpClient, HttpTransportError
from contracts.signing import sign
from store.base import Delivery, Store

__all__ = ["CallbackSender"]

log = logging.getLogger(__name__)


class CallbackSender:
    def __init__(
        self,
        http: HttpClient,
        store: Store,
        agents: Mapping[str, AgentSettings],
        clock: Callable[[], datetime],
        *,
        timeout: float = 10.0,
    ) -> None:
        self._http = http
        self._store = store
        self._agents = agents
        self._clock = clock
        self._timeout = timeout

    async def deliver(self, delivery: Delivery) -> None:
        proposal = await self._store.get_proposal(delivery.proposal_id)
        agent = self._agents.get(proposal.agent)
        if proposal.callback_url is None:
            return
        if agent is None:
            raise DeliveryFailed(f"agent {proposal.agent!r} is no longer configured", lasting=True)
        body = ProposalOut.of(proposal).model_dump_json().encode()
        timestamp = str(int(self._clock().timestamp()))
        headers = {
            "Content-Type": "application/json",
            "X-Countersign-Timestamp": timestamp,
            "X-Countersign-Signature": sign(agent.callback_secret, timestamp, body),
            "X-Countersign-Proposal": proposal.id,
            "X-Countersign-Delivery": str(delivery.id),
        }
        try:
            response = await self._http.post(
                proposal.callback_url, body=body, headers=headers, timeout=self._timeout
            )
        except HttpTransportError as error:
            raise DeliveryFailed(f"callback: {error}") from error
        if not 200 <= response.status < 300:
            refused = 400 <= response.status < 500 and response.status not in (408, 429)
            raise DeliveryFailed(f"callback: HTTP {response.status}", lasting=refused)
        await self._store.record_event(
            proposal.id,
            actor="countersign",
            event="callback_delivered",
            detail={
                "url": proposal.callback_url,
                "attempts": delivery.attempts,
                "status": delivery.status.value,
            },
            now=self._clock(),
        )
