"""The outbox worker: delivers the Slack posts, updates, replies and agent callbacks that
transitions wrote, with retries, in every instance at once.

The store hands each due entry to one worker at a time (a lease) and keeps the entries of one
proposal in order, so this loop only has to deliver, and say when to try again. Other outboxes
with the same verbs (the escalations') join the same loop with :meth:`OutboxWorker.add_queue`.
A :class:`Coalescer` (the digests', bot/digests/outbox.py) takes from each round's claim the
entries it delivers together, as jobs that settle their entries themselves.

A proposal's Slack entries leased together (a decision's message update and thread reply,
store/proposals/outbox.py) are one job: delivered in order from one read of the proposal
(:meth:`SlackPublisher.deliver_run`); when one fails, it is retried as any entry is and those
after it are released untouched (their attempt taken back), so that what was delivered is not
done again. Entries delivered during a round are completed together, in one write at its end:
only ever after their Slack call succeeded, so a crash before that write delivers them again,
which each effect survives (an update re-renders the current state, a reply looks for itself
in the thread before posting).

Callbacks to agents have their own lane: a round starts them and moves on without waiting, so a
callback target that accepts connections and never answers delays no Slack post and no other
destination's callback (each callback is bounded by its own timeout and per-destination slots,
bot/api/callbacks.py). The leases keep a started callback from being claimed again meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from bot.monitoring.store_watch import StoreWatch
from bot.slack.publish import DeliveryFailed
from store.base import StoreUnavailable
from store.proposals import Delivery, Effect, Proposal
from store.proposals.effects import lane_of
from store.protocol import Store

__all__ = [
    "Coalescer",
    "DeliverRun",
    "Deliverable",
    "DeliveryQueue",
    "Interrupted",
    "Job",
    "OutboxWorker",
    "RetryPolicy",
]

log = logging.getLogger(__name__)

Deliver = Callable[[Delivery], Awaitable[None]]
#: Delivers one proposal's run of entries in order, from the proposal as the round read it
#: (None: not read), telling the callback of each one done
DeliverRun = Callable[
    [Sequence[Delivery], Proposal | None, Callable[[Delivery], None]], Awaitable[None]
]
#: The entries a round's one read of the proposals is for (the coalescer's and the runs')
_READ_FOR = frozenset(
    {Effect.SLACK_POST, Effect.SLACK_UPDATE, Effect.SLACK_REPLY, Effect.SLACK_REMIND}
)
#: The entries ``deliver_run`` delivers: a decision's message updates and thread replies
_RUN_EFFECTS = frozenset({Effect.SLACK_UPDATE, Effect.SLACK_REPLY})


class Deliverable(Protocol):
    """What the loop and the retry policy read of an outbox entry, whatever its outbox."""

    @property
    def id(self) -> int: ...
    @property
    def effect(self) -> Effect: ...
    @property
    def attempts(self) -> int: ...


class DeliveryQueue(Protocol):
    """An outbox: the Store's verbs for leasing and settling entries."""

    async def claim_deliveries(
        self, *, now: datetime, limit: int, lease: timedelta
    ) -> Sequence[Any]: ...
    async def complete_delivery(self, delivery_id: int, *, now: datetime) -> None: ...
    async def retry_delivery(self, delivery_id: int, *, at: datetime, error: str) -> None: ...
    async def abandon_delivery(self, delivery_id: int, *, now: datetime, error: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Job:
    """Several claimed entries delivered together; ``run`` settles every one of them itself
    (completes, retries or abandons them), and any more it leases on the way."""

    deliveries: tuple[Delivery, ...]
    run: Callable[[], Awaitable[None]]


class Interrupted(StoreUnavailable):
    """The store stopped answering while a job held these entries (those it claimed, and any
    more it leased on the way): the outbox settles them as soon as it is back."""

    def __init__(self, held: Sequence[Delivery]) -> None:
        super().__init__(f"the store stopped answering while {len(held)} entries were held")
        self.held = tuple(held)


class Coalescer(Protocol):
    """Takes, from what a round claimed, the entries it delivers together
    (bot/digests/outbox.py)."""

    async def split(
        self, due: Sequence[Delivery], *, full: bool, proposals: Mapping[str, Proposal]
    ) -> tuple[list[Job], list[Delivery]]:
        """The jobs for the entries it takes, and the entries left to deliver one by one.
        ``full``: the round claimed as many as it could, so more are waiting. ``proposals``:
        the round's one read of the proposals of its Slack entries (posts, updates, replies,
        reminders), by id."""
        ...


class RetryPolicy:
    """When to try a failed delivery again, and when to give up."""

    def __init__(self, *, callback_attempts: int = 6, base_delay: float = 0.5) -> None:
        self.callback_attempts = callback_attempts
        #: the first wait after a transient failure; doubled after each further one
        self.base_delay = base_delay

    def next_attempt(self, delivery: Deliverable, failure: DeliveryFailed) -> timedelta | None:
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

    def retry_in(self, delivery: Deliverable, failure: DeliveryFailed) -> timedelta | None:
        """:meth:`next_attempt` for an entry whose attempt just failed; when that is None, the
        giving up is logged (the caller abandons the entry)."""
        wait = self.next_attempt(delivery, failure)
        if wait is None:
            log.warning(
                "giving up %s (entry %s) after %d attempts: %s",
                delivery.effect,
                delivery.id,
                delivery.attempts,
                failure,
            )
        return wait


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
        watch: StoreWatch | None = None,
        deliver_run: DeliverRun | None = None,
    ) -> None:
        """``watch`` hears whether the store answers each round (bot/monitoring/store_watch.py):
        an outage is logged there once, not as a failed round each time. ``deliver_run``
        delivers a proposal's entries leased together (without it: one by one, in order)."""
        self._store = store
        self._deliver_run = deliver_run
        #: the proposals' entries delivered this round, completed together at its end
        self._finished: list[int] = []
        self.watch = watch or StoreWatch()
        #: entries whose attempt the store's outage interrupted and which are still leased
        #: here: settled (released to try again at once, or completed) as soon as it is back,
        #: instead of waiting for their leases to end
        self._stranded: dict[tuple[int, int], tuple[DeliveryQueue, bool]] = {}
        self._deliverers = deliverers
        self._clock = clock
        self.policy = policy
        self._batch = batch
        self._lease = lease
        self._idle_poll = idle_poll
        self._wake = asyncio.Event()
        self.in_flight = 0  #: claims and deliveries under way right now
        self._queues: list[tuple[DeliveryQueue, Callable[[Any], Awaitable[None]]]] = []
        self._coalescer: Coalescer | None = None
        #: callbacks started by a round and still under way (the callback lane)
        self._callbacks: set[asyncio.Task[None]] = set()

    @property
    def lease(self) -> timedelta:
        """How long a claimed entry stays leased to the worker that claimed it."""
        return self._lease

    def coalesce_with(self, coalescer: Coalescer) -> None:
        """Let ``coalescer`` deliver the entries it can deliver together (digests)."""
        self._coalescer = coalescer

    def add_queue(self, queue: DeliveryQueue, deliver: Callable[[Any], Awaitable[None]]) -> None:
        """Deliver another outbox's entries in this loop too, with ``deliver`` for every one."""
        self._queues.append((queue, deliver))

    def wake(self) -> None:
        """Something was written to the outbox: look now rather than at the next poll."""
        self._wake.set()

    async def run(self) -> None:
        try:
            while True:
                # cleared before the round, not after: a wake() while it claims (an entry
                # committed just too late for its claim) must start the next round at once
                self._wake.clear()
                unanswered = self.watch.unanswered_count
                try:
                    await self._settle_stranded()
                    worked = await self.run_once()
                except StoreUnavailable as error:  # an outage: said once, not every round
                    self.watch.unanswered(error, where="the outbox")
                    worked = 0
                except Exception:
                    log.exception("outbox round failed; trying again shortly")
                    worked = 0
                else:
                    if self.watch.unanswered_count == unanswered:  # every question answered
                        self.watch.answered()
                if worked < self._batch:
                    try:
                        async with asyncio.timeout(self._idle_poll):
                            await self._wake.wait()
                    except TimeoutError:
                        pass
        finally:
            await self.stop_callbacks()

    @property
    def callbacks_in_flight(self) -> int:
        """Callbacks started and not finished (each within its timeout)."""
        return len(self._callbacks)

    async def stop_callbacks(self) -> None:
        """Cancel the callbacks under way; their leases end and they are delivered later."""
        for task in list(self._callbacks):
            task.cancel()
        await asyncio.gather(*self._callbacks, return_exceptions=True)

    async def run_once(self) -> int:
        """Deliver what is due now; returns how many entries were attempted."""
        self.in_flight += 1  # claiming counts: entries leased here are not visible as due
        try:
            due = await self._store.claim_deliveries(
                now=self._clock(), limit=self._batch, lease=self._lease
            )
            claimed = len(due)
            proposals = await self._read(due)
            jobs: list[Job] = []
            if self._coalescer is not None and due:
                full = claimed >= self._batch
                jobs, due = await self._coalescer.split(due, full=full, proposals=proposals)
            more = [
                (queue, deliver, entry)
                for queue, deliver in self._queues
                for entry in await queue.claim_deliveries(
                    now=self._clock(), limit=self._batch, lease=self._lease
                )
            ]
            runs: dict[tuple[str, str], list[Delivery]] = {}
            for delivery in due:
                if delivery.effect is Effect.CALLBACK:
                    self._start_callback(delivery)
                else:  # one job per proposal's lane: its entries in order
                    runs.setdefault((delivery.proposal_id, lane_of(delivery.effect)), [])
                    runs[(delivery.proposal_id, lane_of(delivery.effect))].append(delivery)
            for queue, deliver, entry in more:
                if entry.effect is Effect.CALLBACK:
                    self._start_callback(entry, queue, deliver)
            await asyncio.gather(
                *(self._job(job) for job in jobs),
                *(self._deliver(run[0]) for run in runs.values() if not self._in_runs(run)),
                *(
                    self._run(run, proposals.get(run[0].proposal_id))
                    for run in runs.values()
                    if self._in_runs(run)
                ),
                *(
                    self._deliver(entry, queue, deliver)
                    for queue, deliver, entry in more
                    if entry.effect is not Effect.CALLBACK
                ),
            )
            await self._complete_finished()
        finally:
            self.in_flight -= 1
        return claimed + len(more)

    async def _read(self, due: Sequence[Delivery]) -> dict[str, Proposal]:
        """One read of the proposals of the claimed Slack entries, for the whole round (the
        coalescer's and the runs' too); nothing when none would use it."""
        if self._coalescer is None and self._deliver_run is None:
            return {}
        wanted = [d.proposal_id for d in due if d.effect in _READ_FOR]
        found = await self._store.digests().get_proposals(list(dict.fromkeys(wanted)))
        return {p.id: p for p in found}

    def _in_runs(self, run: list[Delivery]) -> bool:
        """Whether ``run`` goes to ``deliver_run``: a decision's updates and replies."""
        if self._deliver_run is None:
            return len(run) > 1
        return all(d.effect in _RUN_EFFECTS for d in run)

    async def _complete_finished(self) -> None:
        """Complete, in one write, the proposals' entries this round delivered. When the store
        does not answer, they are completed as soon as it is back."""
        finished, self._finished = self._finished, []
        try:
            await self._store.complete_deliveries(finished, now=self._clock())
        except StoreUnavailable:
            for delivery_id in finished:
                self._stranded[(id(self._store), delivery_id)] = (self._store, True)
            raise

    async def _run(self, run: list[Delivery], proposal: Proposal | None = None) -> None:
        """One attempt at one proposal's entries leased together, in order: those delivered
        are completed with the round; the first that fails is retried (or deferred, or given
        up) as any entry is; those after it are released, their attempt taken back.
        ``proposal``: as the round read it (None: read it now)."""
        self.in_flight += 1
        delivered: list[Delivery] = []
        try:
            try:
                if self._deliver_run is not None:
                    await self._deliver_run(run, proposal, delivered.append)
                else:
                    for delivery in run:
                        await self._deliverers[delivery.effect](delivery)
                        delivered.append(delivery)
            except DeliveryFailed as failure:
                await self._run_failed(run, len(delivered), failure)
            except StoreUnavailable:
                raise
            except Exception as error:  # a bug: retry like a transient failure
                log.exception("delivering outbox entries %s failed", [d.id for d in run])
                problem = DeliveryFailed(f"{type(error).__name__}: {error}")
                await self._run_failed(run, len(delivered), problem)
        except StoreUnavailable as error:  # settled as soon as it is back
            self.watch.unanswered(error, where="the outbox")
            for delivery in run[len(delivered) :]:
                self._strand(delivery, self._store, completed=False)
        finally:
            self._finished.extend(d.id for d in delivered)
            self.in_flight -= 1

    async def _run_failed(self, run: list[Delivery], done: int, failure: DeliveryFailed) -> None:
        await self._failed(run[done], failure, self._store)
        untouched = [d.id for d in run[done + 1 :]]
        if untouched:  # they wait behind the failed one in their lane, whenever it is due
            await self._store.digests().defer_deliveries(untouched, at=self._clock())

    def _start_callback(
        self,
        delivery: Any,
        queue: DeliveryQueue | None = None,
        deliver: Callable[[Any], Awaitable[None]] | None = None,
    ) -> None:
        """Deliver a callback in its own lane: the round does not wait for it."""
        self.in_flight += 1  # counted from now: it was claimed, so it is not visible as due
        # completed on its own: it may finish rounds later
        task = asyncio.create_task(self._deliver(delivery, queue, deliver, with_round=False))
        self._callbacks.add(task)
        task.add_done_callback(self._callback_done)

    def _callback_done(self, task: asyncio.Task[None]) -> None:
        self._callbacks.discard(task)
        self.in_flight -= 1

    async def _job(self, job: Job) -> None:
        self.in_flight += 1
        try:
            await job.run()
        except StoreUnavailable as error:  # an outage: try them again as soon as it is back
            cause = error.__cause__ if isinstance(error.__cause__, StoreUnavailable) else error
            self.watch.unanswered(cause, where="the outbox")
            held = error.held if isinstance(error, Interrupted) else job.deliveries
            for delivery in {d.id: d for d in (*job.deliveries, *held)}.values():
                self._strand(delivery, self._store, completed=False)
        except Exception:  # a bug: its entries are tried again when their leases end
            ids = [delivery.id for delivery in job.deliveries]
            log.exception("delivering outbox entries %s together failed", ids)
        finally:
            self.in_flight -= 1

    async def _deliver(
        self,
        delivery: Any,
        queue: DeliveryQueue | None = None,
        deliver: Callable[[Any], Awaitable[None]] | None = None,
        *,
        with_round: bool = True,
    ) -> None:
        """One attempt at one entry: the proposals' outbox unless ``queue`` says otherwise.
        ``with_round``: a proposals' entry delivered is completed with the round's others."""
        self.in_flight += 1
        try:
            await self._attempt(
                delivery,
                queue or self._store,
                deliver or self._deliverers[delivery.effect],
                with_round=with_round and queue is None,
            )
        finally:
            self.in_flight -= 1

    async def _attempt(
        self,
        delivery: Any,
        queue: DeliveryQueue,
        deliver: Callable[[Any], Awaitable[None]],
        *,
        with_round: bool,
    ) -> None:
        completed = False
        try:
            try:
                await deliver(delivery)
            except DeliveryFailed as failure:
                await self._failed(delivery, failure, queue)
            except StoreUnavailable:
                raise
            except Exception as error:  # a bug: retry like a transient failure
                log.exception("delivering outbox entry %s failed", delivery.id)
                problem = DeliveryFailed(f"{type(error).__name__}: {error}")
                await self._failed(delivery, problem, queue)
            else:
                completed = True
                if with_round:
                    self._finished.append(delivery.id)
                else:
                    await queue.complete_delivery(delivery.id, now=self._clock())
        except StoreUnavailable as error:  # settled as soon as it is back, not when its lease ends
            self.watch.unanswered(error, where="the outbox")
            self._strand(delivery, queue, completed=completed)

    def _strand(self, delivery: Any, queue: DeliveryQueue, *, completed: bool) -> None:
        """Remember ``delivery``, whose attempt the store's outage interrupted, until it is
        settled (``completed``: it was delivered)."""
        self._stranded[(id(queue), delivery.id)] = (queue, completed)

    async def _settle_stranded(self) -> None:
        """Settle the entries an outage interrupted: complete those delivered, release the
        others to be claimed again now (an earlier attempt may have reached Slack: a retry
        looks before posting). Raises StoreUnavailable while the store is still away."""
        for key, (queue, completed) in list(self._stranded.items()):
            delivery_id = key[1]
            if completed:
                await queue.complete_delivery(delivery_id, now=self._clock())
            else:
                await queue.retry_delivery(
                    delivery_id, at=self._clock(), error="the store did not answer"
                )
            del self._stranded[key]

    async def _failed(
        self, delivery: Deliverable, failure: DeliveryFailed, queue: DeliveryQueue
    ) -> None:
        now = self._clock()
        if failure.not_sent and failure.retry_after is not None and queue is self._store:
            # its turn under Slack's rate limits: due again then, and no attempt counted
            at = now + timedelta(seconds=failure.retry_after)
            await self._store.digests().defer_deliveries([delivery.id], at=at)
            return
        wait = self.policy.retry_in(delivery, failure)
        if wait is None:
            await queue.abandon_delivery(delivery.id, now=now, error=str(failure))
        else:
            await queue.retry_delivery(delivery.id, at=now + wait, error=str(failure))
