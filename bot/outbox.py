"""The outbox worker: delivers the Slack posts, updates, replies and agent callbacks that
transitions wrote, with retries, in every instance at once.

The store hands each due entry to one worker at a time (a lease) and keeps the entries of one
proposal in order, so this loop only has to deliver, and say when to try again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from bot.publish import DeliveryFailed
from store.base import Delivery, Store
from store.lifecycle import Effect

__all__ = ["OutboxWorker", "RetryPolicy"]

log = logging.getLogger(__name__)

Deliver = Callable[[Delivery], Awaitable[None]]


class RetryPolicy:
    """When to try a failed delivery again, and when to give up."""

    def __init__(self, *, callback_attempts: int = 6, base_delay: float = 0.5) -> None:
        self.callback_attempts = callback_attempts
        #: the first wait after a transient failure; doubled after each further one
        self.base_delay = base_delay

    def next_attempt(self, delivery: Delivery, failure: DeliveryFailed) -> timedelta | None:
        """The wait before the next attempt, or None to give up."""
        n = delivery.attempts
        if delivery.effect is Effect.CALLBACK:
            if failure.lasting or n >= self.callback_attempts:
                return None
            return timedelta(seconds=min(self.base_delay * 2 ** (n - 1), 300))
        if failure.retry_after is not None:  # rate limited: as long as Slack says, no limit
            return timedelta(seconds=max(failure.retry_after, 0.1)) if n < 50 else None
        if failure.lasting:  # e.g. the bot is not in the channel yet: slow, few retries
            return timedelta(seconds=min(30 * 2 ** (n - 1), 900)) if n < 6 else None
        return timedelta(seconds=min(self.base_delay * 2 ** (n - 1), 60)) if n < 15 else None


class OutboxWorker:
    def __init__(
        self,
        store: Store,
        deliverers: dict[Effect, Deliver],
        clock: Callable[[], datetime],
        *,
        policy: RetryPolicy,
        batch: int = 16,
        lease: timedelta = timedelta(seconds=60),
        idle_poll: float = 0.5,
    ) -> None:
        self._store = store
        self._deliverers = deliverers
        self._clock = clock
        self.policy = policy
        self._batch = batch
        self._lease = lease
        self._idle_poll = idle_poll
        self._wake = asyncio.Event()
        self.in_flight = 0  #: claims and deliveries under way right now

    def wake(self) -> None:
        """Something was written to the outbox: look now rather than at the next poll."""
        self._wake.set()

    async def run(self) -> None:
        while True:
            try:
                worked = await self.run_once()
            except Exception:
                log.exception("outbox round failed; trying again shortly")
                worked = 0
            if worked < self._batch:
                self._wake.clear()
                try:
                    async with asyncio.timeout(self._idle_poll):
                        await self._wake.wait()
                except TimeoutError:
                    pass

    async def run_once(self) -> int:
        """Deliver what is due now; returns how many entries were attempted."""
        self.in_flight += 1  # claiming counts: entries leased here are not visible as due
        try:
            due = await self._store.claim_deliveries(
                now=self._clock(), limit=self._batch, lease=self._lease
            )
            await asyncio.gather(*(self._deliver(delivery) for delivery in due))
        finally:
            self.in_flight -= 1
        return len(due)

    async def _deliver(self, delivery: Delivery) -> None:
        self.in_flight += 1
        try:
            await self._attempt(delivery)
        finally:
            self.in_flight -= 1

    async def _attempt(self, delivery: Delivery) -> None:
        try:
            await self._deliverers[delivery.effect](delivery)
        except DeliveryFailed as failure:
            await self._failed(delivery, failure)
        except Exception as error:  # a bug or a store problem: retry like a transient failure
            log.exception("delivering outbox entry %s failed", delivery.id)
            await self._failed(delivery, DeliveryFailed(f"{type(error).__name__}: {error}"))
        else:
            await self._store.complete_delivery(delivery.id, now=self._clock())

    async def _failed(self, delivery: Delivery, failure: DeliveryFailed) -> None:
        wait = self.policy.next_attempt(delivery, failure)
        now = self._clock()
        if wait is None:
            log.warning(
                "giving up %s for %s after %d attempts: %s",
                delivery.effect,
                delivery.proposal_id,
                delivery.attempts,
                failure,
            )
            await self._store.abandon_delivery(delivery.id, now=now, error=str(failure))
        else:
            await self._store.retry_delivery(delivery.id, at=now + wait, error=str(failure))
