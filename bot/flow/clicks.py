"""Decision clicks: recorded durably at the click, applied after, in order, at the service's pace.

A person who clicked has decided: Approve, a rejection's reason, Extend, Retry, a reconciliation
(it happened, it did not), and the digests' and escalations' decisions (their features give the
``Applier`` of their verbs; where each verb goes is bot/flow/click_paths.py). The click's
listener acknowledges Slack, then :meth:`RecordedDecisions.record` writes the click
(store.proposals.clicks: one insert, only while its subject can still be decided, once per person
and verb). When it is applied within a second, as
it is without a backlog, by this instance or another, the message's update (or a refusal's
reason) is the answer; when the store says it is still waiting after that second, the clicker
is told, privately, "recorded, being checked and applied now" (the message shows the outcome
when it is applied). A person's further clicks of the same verb while theirs waits share its
record and its answer. Nothing turns a click away for being one too many: only a click the
store could not record (the database is away) is told to click again. The
:class:`RecordedDecisions` applier, running in every instance, leases recorded clicks oldest
first and applies each through the same decision path as ever (bot/flow/decide.py:
``approve``, ``reject``, ``extend``, ``retry``, ``reconcile``, or the feature's applier), the
clicks of one subject one after the other and those of different subjects side by side, then
settles them.

Which checks happen when:

* at the click: Slack's signature and the payload's shape (bot/slack/gate.py), and that the
  subject can still be decided (for a proposal one read, and again the insert's condition); a
  click on a proposal decided, withdrawn or unknown goes straight to the decision path, which
  tells the clicker the truth.
* when applied: everything the decision path checks, as for any click: the proposal still
  pending and unexpired (or its execution still uncertain, for Retry and a reconciliation), its
  operation still configured, the clicker's role, separation of duties, teams and guests
  (contracts.authority), not approved by them already, and the binding hash of the stored
  contract (the store's compare-and-set). A refusal is audited and told to the clicker,
  privately, with the reason.

Exactly once: every decision is a compare-and-set in the store, and an approval is counted once
(an approver appears once per proposal). A click whose applier stopped before settling it (a
restart, a crash, another instance's lease ending) is leased again; when its decision is already
there (the clicker's approval, rejection or extension, recorded at or after the click; a
reconciliation or a retry no longer awaited), it was this click's, and the click is settled
without applying it again. Its first application may still be running then, and make the
decision after the look: the decision paths of Approve, Reject, Extend, Retry and the
reconciliations know the clicker's approval, rejection, extension, retry or recorded outcome
made since the click as the click's own wherever they find it (when they read the proposal, or
when the store refuses the transition), and refuse nothing (a retry made so is executed by the
application that made it, once); only a later click of the same person (their decision older
than the click) is told "you already approved", "already decided" or "already extended once".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from bot.flow.click_paths import Applier, ClickPaths
from bot.flow.ports import StoreWatch
from bot.flow.service import Service
from bot.render.clicks import click_recorded_text
from store.base import StoreUnavailable
from store.lanes import people_first
from store.proposals import Proposal, ProposalNotFound
from store.proposals.clicks import (
    DIGEST_VERBS,
    PROPOSAL_VERBS,
    Clicked,
    ClickStore,
    ClickVerb,
    RecordedClick,
)

__all__ = ["NotRecorded", "RecordedDecisions", "Taken"]

log = logging.getLogger(__name__)


class NotRecorded(Exception):
    """The store did not answer while a click was recorded: ``maybe`` when it stopped during
    the insert (which may have committed before its answer was lost), else nothing was written."""

    def __init__(self, error: StoreUnavailable, *, maybe: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.maybe = maybe


class Taken:
    """What became of a click when it arrived: recorded (``click``; ``new`` when this click
    made the record) or, when its subject can no longer be decided, not (``click`` None: the
    decision path answers it)."""

    __slots__ = ("click", "new", "proposal")

    def __init__(
        self, click: RecordedClick | None, *, new: bool = False, proposal: Proposal | None = None
    ) -> None:
        self.click = click
        self.new = new
        self.proposal = proposal


class RecordedDecisions:
    """Records decision clicks and applies them (see the module's docstring)."""

    def __init__(
        self,
        service: Service,
        clicks: ClickStore,
        clock: Callable[[], datetime],
        *,
        appliers: Mapping[ClickVerb, Applier] | None = None,
        batch: int = 64,
        lease: timedelta = timedelta(minutes=5),
        idle_poll: float = 0.5,
        prompt: float = 1.0,
        watch: StoreWatch,
    ) -> None:
        self._service = service
        self._clicks = clicks
        self._clock = clock
        #: each verb's decision path (the features' verbs, digests' and escalations', theirs)
        self._paths = ClickPaths(service, appliers or {})
        self._batch = batch
        self._lease = lease
        self._idle_poll = idle_poll
        self._wake = asyncio.Event()
        self._round = asyncio.Lock()  #: held while a round leases
        #: the clicks recorded here, set once applied (their clickers wait ``prompt`` for it)
        self._settled: dict[int, asyncio.Event] = {}
        self._prompt = prompt
        #: says when the store stops and starts answering (shared with the outbox)
        self._watch = watch
        #: clicks leased here whose application the store interrupted: tried again first,
        #: as soon as it answers, not when their lease ends
        self._stranded: list[RecordedClick] = []
        #: per subject, the task applying its latest click leased here
        self._running: dict[str, asyncio.Task[None]] = {}
        self._in_flight = 0  #: clicks leased here and not yet applied
        self._applying: set[int] = set()  #: the clicks being applied here now
        self._answering = 0  #: clicks acknowledged and not yet recorded and answered
        self._stopped = False
        self.applied = 0  #: clicks applied (or refused and told) by this instance

    async def record(
        self,
        subject: str,
        *,
        user: str,
        channel: str | None,
        verb: ClickVerb = "approve",
    ) -> None:
        """Record ``user``'s click of ``verb`` on ``subject`` and answer it (a button's click:
        see :meth:`take` and :meth:`answer`). When the store does not answer the first read,
        nothing changed and the clicker is told so; when it stops answering while recording,
        whether the click was recorded is not known (the insert may have committed before the
        answer was lost), and the clicker is told that. In people's lane (store/lanes.py),
        however the click came (over HTTP or Socket Mode)."""
        clicked = Clicked(subject=subject, actor=user, verb=verb, channel=channel)
        self._answering += 1
        try:
            with people_first():
                try:
                    taken = await self.take(clicked)
                except NotRecorded as away:
                    await self._paths.store_away(clicked, away.error, recording=away.maybe)
                    return
                await self.answer(clicked, taken)
        finally:
            self._answering -= 1

    @property
    def answering(self) -> int:
        """Clicks acknowledged to Slack whose recording and answer are still under way here
        (a click is acknowledged before it is recorded: until then the store does not know
        it)."""
        return self._answering

    async def take(self, clicked: Clicked) -> Taken:
        """Record the click if its subject can still be decided. Raises NotRecorded when the
        store does not answer."""
        proposal = None
        status = PROPOSAL_VERBS.get(clicked.verb)
        if status is not None:
            try:
                proposal = await self._service.store.get_proposal(clicked.subject)
            except ProposalNotFound:
                return Taken(None)
            except StoreUnavailable as error:
                raise NotRecorded(error, maybe=False) from error
            if proposal.status is not status:  # decided, withdrawn: the decision path says so
                return Taken(None, proposal=proposal)
        try:
            recorded = await self._clicks.record_click(
                clicked.subject,
                actor=clicked.actor,
                verb=clicked.verb,
                channel=clicked.channel,
                now=self._clock(),
                detail=dict(clicked.detail),
            )
        except StoreUnavailable as error:  # the insert may have committed before the answer
            raise NotRecorded(error, maybe=True) from error
        if recorded is None:
            return Taken(None, proposal=proposal)
        click, new = recorded
        self._settled.setdefault(click.id, asyncio.Event())
        self._wake.set()
        return Taken(click, new=new, proposal=proposal)

    async def answer(self, clicked: Clicked, taken: Taken) -> None:
        """Answer a taken click: not recorded, through its decision path now (it tells the
        truth); recorded, by its outcome when it is applied within a second (the message, or
        a refusal), else by saying it is recorded, unless another instance applied it."""
        click = taken.click
        if click is None:
            try:
                await self._paths.decide(clicked)
            except StoreUnavailable as error:
                await self._paths.store_away(clicked, error, recording=True)
            return
        settled = self._settled.get(click.id) or asyncio.Event()
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
        if clicked.verb in DIGEST_VERBS and click.id in self._applying:
            return  # its items are being decided here: the tally is the answer, told soon
        text = click_recorded_text(clicked.subject, clicked.verb, again=not taken.new)
        await self._paths.tell(clicked, taken.proposal, text)

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
        restart too), in people's lane (store/lanes.py): the store serves them, and the
        decisions and executions they start, ahead of agents' work."""
        with people_first():
            await self._run()

    async def _run(self) -> None:
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
        earlier = self._running.get(click.subject)
        self._in_flight += 1
        task = asyncio.create_task(self._after(earlier, click))
        self._running[click.subject] = task

        def done(finished: asyncio.Task[None]) -> None:
            self._in_flight -= 1
            if self._running.get(click.subject) is finished:
                del self._running[click.subject]
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
            log.exception("applying the click %s on %s failed", click.id, click.subject)

    async def apply(self, click: RecordedClick) -> None:
        """Apply one recorded click through its decision path, then settle it."""
        self._applying.add(click.id)
        try:
            if not await self._paths.applied_before(click):
                await self._paths.decide(click)
        finally:
            self._applying.discard(click.id)
        await self._clicks.settle_click(click.id)
        self.applied += 1
        settled = self._settled.pop(click.id, None)
        if settled is not None:
            settled.set()
