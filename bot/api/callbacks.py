"""Signed callbacks to agents: the state of their proposal (or escalation), POSTed to its
callback_url.

The outbox calls :meth:`CallbackSender.deliver` once per attempt, in its callback lane (never in
the way of a Slack post), and retries with backoff; the body is the proposal as the agent API
shows it, read when the attempt is made. Every attempt checks the destination again, against the
agent's configuration as it is now and on the address it connects to (bot/api/callback_http.py), and
waits its turn behind at most ``concurrency`` callbacks to the same scheme, host and port: a
destination that never answers holds only its own slots, each for at most ``timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import datetime

from pydantic import BaseModel

from bot.api.callback_http import CallbackHttp
from bot.api.schemas import ProposalOut
from bot.settings import AgentSettings
from bot.settings.callback_urls import DestinationRefused, allowed_destination
from bot.slack.publish import DeliveryFailed
from contracts.base import HttpTransportError
from contracts.redaction import shown_url
from contracts.signing import CALLBACK, signed_headers
from store.escalations import Escalation, EscalationDelivery
from store.proposals import Delivery, Proposal
from store.protocol import Store

__all__ = ["CallbackPoster", "CallbackSender", "DestinationSlots"]

log = logging.getLogger(__name__)


class DestinationSlots:
    """At most ``per_destination`` callbacks in flight to one destination; a callback that waits
    longer than ``max_wait`` for its turn fails (and is retried later) rather than outlive the
    outbox lease that keeps other workers from sending it too."""

    def __init__(self, per_destination: int, *, max_wait: float) -> None:
        if per_destination < 1:
            raise ValueError(f"per_destination must be at least 1, got {per_destination}")
        self.per_destination = per_destination
        self._max_wait = max_wait
        self._slots: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}

    def in_flight(self, origin: str) -> int:
        """Callbacks holding or awaiting a slot for ``origin`` now."""
        found = self._slots.get(origin)
        return 0 if found is None else found[1][0]

    @asynccontextmanager
    async def slot(self, origin: str) -> AsyncIterator[None]:
        semaphore, users = self._slots.setdefault(
            origin, (asyncio.Semaphore(self.per_destination), [0])
        )
        users[0] += 1
        try:
            try:
                async with asyncio.timeout(self._max_wait):
                    await semaphore.acquire()
            except TimeoutError:
                raise DeliveryFailed(
                    f"callback to {origin}/…: {self.per_destination} earlier callbacks to it were "
                    f"still under way after {self._max_wait:g}s; trying again later"
                ) from None
            try:
                yield
            finally:
                semaphore.release()
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._slots[origin]


class CallbackPoster:
    """One signed callback POST, for proposals and escalations alike."""

    def __init__(
        self,
        http: CallbackHttp,
        slots: DestinationSlots,
        *,
        timeout: float,
    ) -> None:
        self._http = http
        self._slots = slots
        self._timeout = timeout

    async def post(
        self,
        agent: AgentSettings,
        url: str,
        body: bytes,
        *,
        now: datetime,
        headers: Mapping[str, str],
    ) -> None:
        """POST ``body`` to the agent, signed with its callback secret; DeliveryFailed unless it
        answers 2xx. A refused destination and a 4xx other than 408/429 are lasting: retrying
        soon will not change them."""
        shown = shown_url(url)
        try:
            destination = allowed_destination(agent, url)
        except DestinationRefused as refused:
            raise DeliveryFailed(
                f"callback to {shown} refused: {refused.reason}", lasting=True
            ) from None
        sent = {
            "Content-Type": "application/json",
            **signed_headers(agent.callback_secret, body, now=now, purpose=CALLBACK),
            **headers,
        }
        failure: DeliveryFailed | None = None
        async with self._slots.slot(destination.origin):
            # DeliveryFailed is raised after the slot is released: a frozen exception cannot
            # pass through a context manager (it sets __traceback__)
            try:
                response = await self._http.post(
                    url,
                    allow_private=agent.callback_allow_private,
                    body=body,
                    headers=sent,
                    timeout=self._timeout,
                )
            except DestinationRefused as refused:
                failure = DeliveryFailed(
                    f"callback to {shown} refused: {refused.reason}", lasting=True
                )
            except HttpTransportError as error:
                failure = DeliveryFailed(f"callback: {error}")
        if failure is not None:
            raise failure
        if not 200 <= response.status < 300:
            refused_status = 400 <= response.status < 500 and response.status not in (408, 429)
            raise DeliveryFailed(
                f"callback to {shown}: HTTP {response.status}", lasting=refused_status
            )


class CallbackSender:
    """Agents' callbacks sent and audited, for proposals (from the outbox) and escalations
    (bot/escalations/delivery.py)."""

    def __init__(
        self,
        poster: CallbackPoster,
        store: Store,
        agents: Mapping[str, AgentSettings],
        clock: Callable[[], datetime],
    ) -> None:
        self._poster = poster
        self._store = store
        self._agents = agents
        self._clock = clock

    async def deliver(self, delivery: Delivery) -> None:
        """One attempt at a proposal's callback: the proposal as the agent API shows it."""
        proposal = await self._store.get_proposal(delivery.proposal_id)
        await self.send(proposal, ProposalOut.of(proposal), delivery)

    async def send(
        self,
        subject: Proposal | Escalation,
        body: BaseModel,
        attempt: Delivery | EscalationDelivery,
    ) -> None:
        """POST ``body`` (``subject`` as the agent API shows it: a proposal or an escalation) to
        its agent's callback_url (nothing when there is none), headed with ``subject``'s id
        (``X-Countersign-Proposal`` or ``-Escalation``) and the outbox entry being delivered,
        ``attempt`` (``X-Countersign-Delivery``: its id, ``escalation-<id>`` for an
        escalation's, since the two outboxes number their entries apart), then audit
        ``subject``'s ``callback_delivered`` with ``attempt``'s count and the status it told.
        An agent no longer configured is a lasting failure."""
        url = subject.callback_url
        if url is None:
            return
        settings = self._agents.get(subject.agent)
        if settings is None:
            raise DeliveryFailed(f"agent {subject.agent!r} is no longer configured", lasting=True)
        if isinstance(subject, Escalation):
            headers = {
                "X-Countersign-Escalation": subject.id,
                "X-Countersign-Delivery": f"escalation-{attempt.id}",
            }
        else:
            headers = {
                "X-Countersign-Proposal": subject.id,
                "X-Countersign-Delivery": str(attempt.id),
            }
        await self._poster.post(
            settings, url, body.model_dump_json().encode(), now=self._clock(), headers=headers
        )
        await self._store.record_event(
            subject.id,
            actor="countersign",
            event="callback_delivered",
            detail={
                "url": shown_url(url),
                "attempts": attempt.attempts,
                "status": attempt.status.value,
            },
            now=self._clock(),
        )
