"""Approve clicks: recorded durably at the click, applied after, in order, at the service's pace.

A person who clicked Approve has decided. The click's listener acknowledges Slack, then
:meth:`RecordedDecisions.record` writes the click (store/clicks.py: one insert, only for a
pending proposal, once per person). When it is applied within a second, as it is without a
backlog, by this instance or another, the message's update (or a refusal's reason) is the
answer; when the store says it is still waiting after that second, the clicker is told,
privately, "recorded, being checked and run now" (the message shows the outcome when it is
applied). A person's further clicks while theirs waits share its record and its answer.
Nothing turns a click away for being one too many: only a click the store could not record (the
database is away) is told to click again. The :class:`RecordedDecisions` applier, running in
every instance, leases recorded clicks oldest first and applies each through the same decision
path as ever (:meth:`bot.service.Service.approve`), the clicks of one proposal one after the
other and those of different proposals side by side, then settles them.

Which checks happen when:

* at the click: Slack's signature and the payload's shape (bot/slack/gate.py), and that the
  proposal exists and is pending (one read, and again the insert's condition); a click on a
  proposal decided, withdrawn or unknown goes straight to the decision path, which tells the
  clicker the truth.
* when applied: everything the decision path checks, as for any click: the proposal still
  pending and unexpired, its operation still configured, the clicker's role, separation of
  duties, teams and guests (contracts.authority), not approved by them already, and the binding
  hash of the stored contract (the store's compare-and-set). A refusal is audited and told to
  the clicker, privately, with the reason.

Exactly once: the approval is counted once by the store (an approver appears once per
proposal). A click whose applier stopped before settling it (a restart, a crash, another
instance's lease ending) is leased again; when the clicker's approval is already there, recorded
at or after the click, it was this click's, and the click is settled without applying it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from bot.monitoring.store_watch import StoreWatch
from bot.render.clicks import click_recorded_text
from bot.service import Service
from store.base import ProposalNotFound, StoreUnavailable
from store.clicks import ClickStore, RecordedClick
from store.lifecycle import Status

__all__ = ["RecordedDecisions"]

log = logging.getLogger(__name__)


class RecordedDecisions:
    """Records Approve clicks and applies them (see the module's docstring)."""

    def __init__(
        self,
        service: Service,
        clicks: ClickStore,
        clock: Callable[[], datetime],
        *,
        batch: int = 64,
        lease: timedelta = timedelta(minutes=5),
        idle_poll: float = 0.5,
        prompt: float = 1.0,
        watch: StoreWatch | None = None,
    ) -> None:
        self._service = service
        self._clicks = clicks
        self._clock = clock
        self._batch = batch
        self._lease = lease
        self._idle_poll = idle_poll
        self._wake = asyncio.Event()
        self._round = asyncio.Lock()  #: held while a round leases
        #: the clicks recorded here, set once applied (their clickers wait ``prompt`` for it)
        self._settled: dict[int, asyncio.Event] = {}
        self._prompt = prompt
        #: says when the store stops and starts answering (shared with the outbox)
        self._watch = watch or StoreWatch()
        #: clicks leased here whose application the store interrupted: tried again first,
        #: as soon as it answers, not when their lease ends
        self._stranded: list[RecordedClick] = []
        #: per proposal, the task applying its latest click leased here
        self._running: dict[str, asyncio.Task[None]] = {}
        self._in_flight = 0  #: clicks leased here and not yet applied
        self._stopped = False
        self.applied = 0  #: clicks applied (or refused and told) by this instance

    async def record(self, proposal_id: str, *, user: str, channel: str | None) -> None:
        """Record ``user``'s Approve click and tell them; a click on a proposal not pending (or
        unknown) goes to the decision path now, which tells the clicker the truth. When the
        store does not answer the first read, nothing changed and the clicker is told so; when
        it stops answering while recording, whether the click was recorded is not known (the
        insert may have committed before the answer was lost), and the clicker is told that."""
        try:
            proposal = await self._service.store.get_proposal(proposal_id)
        except ProposalNotFound:
            proposal = None
        except StoreUnavailable as error:
            await self._service.store_away(proposal_id, user=user, channel=channel, error=error)
            return
        try:
            recorded = None
            if proposal is not None and proposal.status is Status.PENDING:
                recorded = await self._clicks.record_click(
                    proposal_id, actor=user, verb="approve", channel=channel, now=self._clock()
                )
            if recorded is None:  # decided, withdrawn or unknown: the decision path says which
                await self._service.approve(proposal_id, user=user, channel=channel)
                return
        except StoreUnavailable as error:
            await self._service.store_away(
                proposal_id, user=user, channel=channel, error=error, recording=True
            )
            return
        click, new = recorded
        settled = self._settled.setdefault(click.id, asyncio.Event())
        self._wake.set()
        try:  # applied at once, the message shows it: no need to say more
            async with asyncio.timeout(self._prompt):
                await settled.wait()
                return
        except TimeoutError:  # a backlog, or another instance applied it
            self._settled.pop(click.id, None)
        try:
            waiting = await self._clicks.is_waiting(click.id)
        except StoreUnavailable:
            waiting = True  # it was recorded, and nothing says it was applied
        if not waiting:  # applied by another instance: its outcome is the answer, told once
            return
        text = click_recorded_text(proposal_id, again=not new)
        await self._service.tell(proposal, channel, user, text)

    def wake(self) -> None:
        """A click was recorded: apply it now rather than at the next poll."""
        self._wake.set()

    async def stop(self) -> None:
        """Stop leasing clicks and wait for those under way (before the service stops): what
        is recorded meanwhile waits in the store for the next start, or another instance."""
        self._stopped = True
        self._wake.set()
        async with self._round:
            pass
        await asyncio.gather(*self._running.values(), return_exceptions=True)

    async def run(self) -> None:
        """Apply recorded clicks until cancelled or stopped (those of every instance, after a
        restart too)."""
        try:
            while not self._stopped:
                self._wake.clear()
                unanswered = self._watch.unanswered_count
                try:
                    await self.run_once()
                except StoreUnavailable as error:  # an outage: said once, not every round
                    self._watch.unanswered(error, where="the click applier")
                except Exception:
                    log.exception("applying recorded clicks failed; trying again shortly")
                else:
                    if self._watch.unanswered_count == unanswered:
                        self._watch.answered()
                try:  # a click recorded, or one applied (room for the next)
                    async with asyncio.timeout(self._idle_poll):
                        await self._wake.wait()
                except TimeoutError:
                    pass
        finally:
            for task in self._running.values():
                task.cancel()

    async def run_once(self) -> int:
        """Lease what is recorded, as many as there is room for (``batch`` under way at once),
        and start applying each: a proposal's clicks one after the other, in the order they
        were recorded, different proposals' side by side, none waiting for another proposal's
        (a slow execution holds up only its own). How many were started."""
        async with self._round:
            room = self._batch - self._in_flight
            if self._stopped or room < 1:
                return 0
            stranded, self._stranded = self._stranded[:room], self._stranded[room:]
            try:
                claimed = []
                if len(stranded) < room:
                    claimed = await self._clicks.claim_clicks(
                        now=self._clock(), limit=room - len(stranded), lease=self._lease
                    )
            except StoreUnavailable:
                self._stranded = stranded + self._stranded
                raise
            for click in stranded + claimed:  # oldest first
                self._start(click)
            return len(stranded) + len(claimed)

    def _start(self, click: RecordedClick) -> None:
        earlier = self._running.get(click.proposal_id)
        self._in_flight += 1
        task = asyncio.create_task(self._after(earlier, click))
        self._running[click.proposal_id] = task

        def done(finished: asyncio.Task[None]) -> None:
            self._in_flight -= 1
            if self._running.get(click.proposal_id) is finished:
                del self._running[click.proposal_id]
            self._wake.set()

        task.add_done_callback(done)

    async def _after(self, earlier: asyncio.Task[None] | None, click: RecordedClick) -> None:
        """Apply ``click`` once the click of its proposal before it is done."""
        if earlier is not None:
            await asyncio.wait([earlier])
        try:
            await self.apply(click)
        except StoreUnavailable as error:  # again as soon as it is back, not when its lease ends
            self._watch.unanswered(error, where="the click applier")
            self._stranded.append(click)
        except Exception:  # left leased: applied again when the lease ends
            log.exception("applying the click %s on %s failed", click.id, click.proposal_id)

    async def apply(self, click: RecordedClick) -> None:
        """Apply one recorded click through the decision path, then settle it."""
        if not await self._applied_before(click):
            await self._service.approve(click.proposal_id, user=click.actor, channel=click.channel)
        await self._clicks.settle_click(click.id)
        self.applied += 1
        settled = self._settled.pop(click.id, None)
        if settled is not None:
            settled.set()

    async def _applied_before(self, click: RecordedClick) -> bool:
        """Whether this click's approval is already in the store: applied by an applier that
        stopped before settling it (an approval from before the click is another click's,
        which the decision path refuses and tells)."""
        try:
            proposal = await self._service.store.get_proposal(click.proposal_id)
        except ProposalNotFound:
            return False  # the decision path tells the clicker it does not exist
        return any(
            approval.approver == click.actor and approval.approved_at >= click.recorded_at
            for approval in proposal.approvals
        )
