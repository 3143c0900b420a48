"""What every stage of the flow shares: its collaborators, its clock, and how it tells.

The app factory (bot/app.py) passes in the settings, the store and the ports (bot/flow/ports.py:
Slack's publisher and directory, the agents' long-poll waiters): :class:`Collaborators`. After
every transition a stage calls :meth:`FlowCore.changed`; a click's private answer goes through
:meth:`FlowCore.tell`.

Each stage is a class of its own module, given this core and the other stages it uses, and
reaches nothing else: execution (run a claimed proposal, record its outcome), sweeps (what
time does: expire, remind, hand over, reclaim), checks (who may decide what, and the refusals;
given the sweeps), submit (given the execution), decide (given the checks and the execution).
bot/flow/service.py is the whole: this core with the stages built over it.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import NotRequired, TypedDict, Unpack

from bot.flow.destinations import CallbackGuard
from bot.flow.executor import Executor
from bot.flow.ports import Directory, Publisher, Waiters
from bot.flow.subscribers import Subscribers
from bot.render import clicks as render
from bot.settings import Settings
from contracts.base import Context, HttpClient
from store.base import StoreUnavailable
from store.escalations import Escalation
from store.proposals import Proposal
from store.protocol import Store

__all__ = ["APP_HOME", "Collaborators", "FlowCore"]

log = logging.getLogger(__name__)

#: The "channel" of a click on the App Home tab: answers to the clicker go to their Home tab
#: (bot/flow/subscribers.py), where they are looking, instead of an ephemeral message.
APP_HOME = "app_home"


class Collaborators(TypedDict):
    """What the app factory passes in to build the flow (``Service(**collaborators)``)."""

    settings: Settings
    store: Store
    publisher: Publisher
    http: HttpClient
    clock: Callable[[], datetime]
    wake_outbox: Callable[[], None]
    directory: Directory
    waiters: Waiters
    callback_guard: NotRequired[CallbackGuard | None]
    subscribers: NotRequired[Subscribers | None]


class FlowCore:
    """The collaborators and clock every stage uses, and how the flow tells people."""

    def __init__(self, **given: Unpack[Collaborators]) -> None:
        settings = given["settings"]
        self.settings = settings
        #: checks an agent's callback_url (bot/flow/destinations.py)
        self.callback_guard = given.get("callback_guard") or CallbackGuard()
        self.store = given["store"]
        #: Slack, for the answers the flow gives at once (bot/flow/ports.py)
        self.publisher = given["publisher"]
        #: the agents' long polls, woken by every change (bot/api/waiters.py fulfils it)
        self.waiters = given["waiters"]
        self.directory = given["directory"]
        #: wakes the outbox worker: a transition wrote something for it to deliver
        self.wake_outbox = given["wake_outbox"]
        self._clock = given["clock"]
        self._http = given["http"]
        #: runs a claimed proposal's operation (bot/flow/executor.py), never raising
        self.executor = Executor(settings.registry, self._http, self._clock)
        self._lease = timedelta(seconds=settings.server.execution_lease_seconds)
        #: told of every proposal that changed, and shows private answers on a person's App Home
        #: tab (bot/slack/home.py subscribes: it refreshes its approvers' tabs)
        self._subscribers = given.get("subscribers") or Subscribers()

    def now(self) -> datetime:
        """The service's clock (injected, so expiry and leases are testable)."""
        return self._clock()

    def lease_until(self, now: datetime) -> datetime:
        """Until when an execution claimed at ``now`` is this process's (a crash frees it)."""
        return now + self._lease

    def operation_context(self, purpose: str, now: datetime) -> Context:
        """What an operation's resolve, revalidate and execute steps see: ``now``, the shared
        HTTP client and a fresh correlation id starting with ``purpose`` (``submit``, ``edit``)."""
        return Context(now=now, http=self._http, correlation_id=f"{purpose}.{secrets.token_hex(4)}")

    def changed(self, proposal: Proposal, *, enqueued: bool = True) -> None:
        """Call after every transition of ``proposal``: the transition wrote its effects to the
        outbox; wake long-polls and the outbox worker and tell the subscribers. ``enqueued``
        False: the transition is known to have written nothing to the outbox (an automatic
        approval with no channel, callback or review), so the worker is left asleep instead of
        claiming nothing (its poll would find anything written anyway)."""
        self.waiters.notify(proposal.id)
        if enqueued:
            self.wake_outbox()
        self._subscribers.proposal_changed(proposal)

    def escalation_changed(self, escalation: Escalation, previous_owner: str | None) -> None:
        """:meth:`changed`, for an escalation's transitions (bot/escalations/flow.py), which
        share the flow's long polls, outbox worker and subscribers; ``previous_owner`` owned it
        before."""
        self.waiters.notify(escalation.id)
        self.wake_outbox()
        self._subscribers.escalation_changed(escalation, previous_owner)

    async def shown_at_home(self, channel: str | None, user: str, text: str) -> bool:
        """Whether ``text``, a private answer to ``user``'s click in ``channel``, went to their
        App Home tab: where they are looking, when they clicked there."""
        return channel == APP_HOME and await self._subscribers.notice(user, text)

    async def tell(
        self, proposal: Proposal | None, channel: str | None, user: str, text: str
    ) -> None:
        """A private answer: on the Home tab for clicks there, else ephemeral in the channel
        (the proposal's own channel when the click came without one, as from a modal)."""
        if await self.shown_at_home(channel, user, text):
            return
        where = channel if channel != APP_HOME else None
        where = where or (proposal.slack_channel if proposal is not None else None)
        if where:
            await self.publisher.tell(proposal, where, user, text)

    async def store_away(
        self,
        proposal_id: str,
        *,
        user: str,
        channel: str | None,
        error: StoreUnavailable,
        recording: bool = False,
    ) -> None:
        """The store did not answer ``user``'s click on ``proposal_id``: tell them so, privately.
        ``recording``: it stopped while the click was being recorded, so whether it was is not
        known (the message will show it); otherwise nothing changed."""
        log.warning(
            "click on %s by %s not %s: the store did not answer (%s)",
            proposal_id,
            user,
            "confirmed" if recording else "applied",
            error,
            extra={"event": "click.store_unavailable", "proposal_id": proposal_id, "user": user},
        )
        text = render.store_lost_text() if recording else render.store_away_text()
        try:
            await self.tell(None, channel, user, text)
        except StoreUnavailable:  # telling may audit a failed Slack call: the store is away
            log.warning("could not tell %s that the store did not answer", user)
