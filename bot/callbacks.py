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
from contracts.signing import signed_headers
from store.base import Delivery, Store

__all__ = ["CallbackSender", "post_signed"]

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
        await post_signed(
            self._http,
            proposal.callback_url,
            body,
            secret=agent.callback_secret,
            now=self._clock(),
            timeout=self._timeout,
            headers={
                "X-Countersign-Proposal": proposal.id,
                "X-Countersign-Delivery": str(delivery.id),
            },
        )
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


async def post_signed(
    http: HttpClient,
    url: str,
    body: bytes,
    *,
    secret: str,
    now: datetime,
    timeout: float,
    headers: Mapping[str, str],
) -> None:
    """POST ``body`` to an agent, signed with ``secret``; DeliveryFailed unless it answers 2xx.

    A 4xx other than 408/429 is lasting: the agent's endpoint refuses it and retrying soon will
    not change that.
    """
    sent = {"Content-Type": "application/json", **signed_headers(secret, body, now=now), **headers}
    try:
        response = await http.post(url, body=body, headers=sent, timeout=timeout)
    except HttpTransportError as error:
        raise DeliveryFailed(f"callback: {error}") from error
    if not 200 <= response.status < 300:
        refused = 400 <= response.status < 500 and response.status not in (408, 429)
        raise DeliveryFailed(f"callback: HTTP {response.status}", lasting=refused)
