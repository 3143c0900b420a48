"""The current state of pending proposals for the Home tab: each operation's own revalidation
(contracts/base.py ``revalidate``, the check that runs before execution), run lazily.

Opening the tab never waits for it and never calls a target for a proposal checked recently:
:meth:`CurrentState.known` gives what the last check found (if it is at most
:data:`FRESH_FOR` old), and :meth:`CurrentState.request` starts a check in the background for
the proposals shown whose last one is older or missing; once it is done the tab is published
again for the people it was shown to (``on_checked``). Each check has :data:`TIMEOUT` seconds;
at most :data:`AT_ONCE` run at a time, each proposal's once at a time. Operations that check
nothing (no ``revalidate``, a webhook without ``revalidate_url``) are never run. What a check
finds is shown, not acted on: execution revalidates again, as before.

``/countersign show <id>`` answers within Slack's three seconds and cannot be published again:
:meth:`CurrentState.check` gives the fresh check, or waits a moment for one (the same check the
tab would run, remembered for it), and says so when it did not answer in time.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Final

from bot.render.home import StateCheck
from bot.slack.tasks import BackgroundTasks
from contracts.base import Context
from contracts.registry import Registry, UnknownOperation
from store.proposals import Proposal

__all__ = ["AT_ONCE", "FRESH_FOR", "TIMEOUT", "CurrentState"]

log = logging.getLogger(__name__)

#: How long a check stands before the tab asks for another.
FRESH_FOR: Final = timedelta(minutes=2)
#: Seconds a check may take before it counts as "could not be checked".
TIMEOUT: Final = 3.0
#: Checks running at once.
AT_ONCE: Final = 4
#: Checks remembered (the oldest are forgotten first).
REMEMBERED: Final = 2_000


class CurrentState:
    def __init__(
        self,
        registry: Registry,
        context: Callable[[datetime], Context],
        clock: Callable[[], datetime],
        on_checked: Callable[[Proposal], None],
        *,
        fresh_for: timedelta = FRESH_FOR,
        timeout: float = TIMEOUT,
    ) -> None:
        self._registry = registry
        self._context = context
        self._clock = clock
        self._on_checked = on_checked
        self._fresh_for = fresh_for
        self._timeout = timeout
        #: by proposal id and binding hash: an edit is a new proposal, checked afresh
        self._checks: OrderedDict[tuple[str, str], StateCheck] = OrderedDict()
        self._running: dict[tuple[str, str], asyncio.Task[StateCheck]] = {}
        self._slots = asyncio.Semaphore(AT_ONCE)
        self._tasks = BackgroundTasks()

    def known(self, proposals: Iterable[Proposal]) -> dict[str, StateCheck]:
        """What the last check of each proposal found, when it is fresh enough to show."""
        now = self._clock()
        found = {}
        for proposal in proposals:
            check = self._checks.get((proposal.id, proposal.binding_hash))
            if check is not None and now - check.at <= self._fresh_for:
                found[proposal.id] = check
        return found

    def request(self, proposals: Sequence[Proposal]) -> set[str]:
        """Check in the background each proposal whose operation revalidates and whose last
        check is stale or missing, unless one is running already; the ids of the proposals
        being checked (``on_checked`` follows for each)."""
        now = self._clock()
        checking = set()
        for proposal in proposals:
            key = (proposal.id, proposal.binding_hash)
            check = self._checks.get(key)
            if key in self._running:
                checking.add(proposal.id)
                continue
            if check is not None and now - check.at <= self._fresh_for:
                continue
            if self._start(proposal, key) is not None:
                checking.add(proposal.id)
        return checking

    async def check(self, proposal: Proposal, *, within: float) -> StateCheck | None:
        """The current state of one proposal now: its last check if fresh, else one run (or
        joined, if running) and waited for at most ``within`` seconds; past that, a check that
        could not be made in time (it goes on in the background, for the next reader). None
        when its operation checks nothing."""
        key = (proposal.id, proposal.binding_hash)
        check = self._checks.get(key)
        if check is not None and self._clock() - check.at <= self._fresh_for:
            return check
        task = self._running.get(key) or self._start(proposal, key)
        if task is None:
            return None
        try:
            async with asyncio.timeout(within):
                return await asyncio.shield(task)
        except TimeoutError:
            late = f"no answer within {within:g} s"
            return StateCheck(at=self._clock(), reason=late, failed=True)

    def _start(self, proposal: Proposal, key: tuple[str, str]) -> asyncio.Task[StateCheck] | None:
        """Start checking ``proposal`` in the background, if its operation checks anything."""
        try:
            operation = self._registry.get(proposal.operation)
        except UnknownOperation:
            return None
        if not operation.revalidates:
            return None
        task = self._tasks.spawn(self._check(proposal, key), name=f"current-state-{proposal.id}")
        self._running[key] = task
        return task

    async def _check(self, proposal: Proposal, key: tuple[str, str]) -> StateCheck:
        try:
            async with self._slots:
                check = await self._revalidated(proposal)
            self._checks[key] = check
            self._checks.move_to_end(key)
            while len(self._checks) > REMEMBERED:
                self._checks.popitem(last=False)
        finally:
            self._running.pop(key, None)
        self._on_checked(proposal)
        return check

    async def _revalidated(self, proposal: Proposal) -> StateCheck:
        now = self._clock()
        operation = self._registry.get(proposal.operation)
        try:
            arguments = operation.load_arguments(proposal.arguments)
            async with asyncio.timeout(self._timeout):
                revision = await operation.revalidate(arguments, self._context(now))
        except TimeoutError:
            return StateCheck(at=now, reason=f"no answer within {self._timeout:g} s", failed=True)
        except Exception as error:  # shown, never raised: the tab is not state
            log.info("checking the current state of %s failed: %s", proposal.id, error)
            return StateCheck(at=now, reason=type(error).__name__, failed=True)
        if revision is None:
            return StateCheck(at=now)
        return StateCheck(at=now, reason=revision.reason)

    async def close(self) -> None:
        await self._tasks.drain(timeout=5)
