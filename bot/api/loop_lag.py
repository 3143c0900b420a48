"""How far the event loop is behind, so that agents' work is shed before people's clicks wait.

One event loop serves an instance's agents and its Slack clicks alike: every request's parsing,
signature check and answer runs on it. When agents send more than the instance can do, the
loop falls behind, and a click (whose answer Slack needs within 3 s, and a person expects at
once) waits behind agents' requests. :class:`LoopLag` measures that with a cheap timer: every
``interval`` seconds it asks to be woken and notes how late it was. When the loop is behind by
more than ``threshold``, new agent requests (submissions, reads, long-polls, withdrawals) are
answered ``503`` with ``Retry-After`` before anything else is done for them
(bot/api/agent_requests.py): no body read, no token looked up in the store, nothing read or
stored. Clicks are never shed.

The measure keeps a stall in mind for a few wake-ups (it halves at each wake-up on time), so a
loop that falls behind again and again sheds steadily instead of taking in a flood at every
brief recovery; and a wake-up that is overdue now counts already, before the timer gets its
turn (the requests that arrived during a stall run before it).

A late loop is only agents' doing when agents' work is on it: shedding is for a loop behind
*and* at least ``with_agents`` (8) agent requests in progress on it (a long-poll held waiting is
not in progress: it costs the loop nothing until it is woken). A loop late for
another reason (the machine busy with other programs, a slow disk, a collection of garbage)
with only a few submissions in progress sheds nothing: turning those away would not give
clicks the loop back, and would fail agents for no one's benefit.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["LoopLag"]

#: How much of the lag one wake-up on time forgets.
DECAY = 0.5

#: How many agent requests in progress make a late loop the agents' doing.
WITH_AGENTS = 8


class LoopLag:
    """The event loop's lag, sampled every ``interval`` seconds; ``threshold`` seconds of lag
    or more is behind (0 never is: nothing is shed) when ``with_agents`` agent requests or
    more are in progress (:meth:`agent_work`)."""

    def __init__(
        self, *, threshold: float, interval: float = 0.01, with_agents: int = WITH_AGENTS
    ) -> None:
        if threshold < 0:
            raise ValueError(f"threshold: got {threshold}; expected 0 (off) or more seconds")
        if interval <= 0:
            raise ValueError(f"interval: got {interval}; expected a positive number of seconds")
        if with_agents < 0:
            raise ValueError(f"with_agents: got {with_agents}; expected 0 or more requests")
        self.threshold = threshold
        self.interval = interval
        self.with_agents = with_agents
        self.agents = 0  #: agent requests in progress on this loop
        self._lag = 0.0  #: seconds, as last measured (decayed)
        self._due: float | None = None  #: when the timer should wake next (perf_counter)
        self.shed = 0  #: agent requests answered 503 because the loop was behind
        self.worst = 0.0  #: the largest lag measured, in seconds (for metrics and the bench)

    @property
    def lag(self) -> float:
        """Seconds the loop is behind: the last measure, or the timer's wake-up overdue now."""
        overdue = 0.0 if self._due is None else time.perf_counter() - self._due
        return max(self._lag, overdue)

    def behind(self) -> bool:
        """Whether new agent work should be shed now (counted in ``shed`` when it is)."""
        if self.threshold <= 0 or self.agents < self.with_agents or self.lag < self.threshold:
            return False
        self.shed += 1
        return True

    @contextmanager
    def agent_work(self) -> Iterator[None]:
        """Count one agent request in progress for the block."""
        self.agents += 1
        try:
            yield
        finally:
            self.agents -= 1

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """Within :meth:`agent_work`, a block in which the request only waits (a long-poll held
        until its item changes): it is not counted in progress meanwhile."""
        self.agents -= 1
        try:
            yield
        finally:
            self.agents += 1

    def note(self, late: float) -> None:
        """One wake-up ``late`` seconds after it was due."""
        late = max(0.0, late)
        self._lag = max(late, self._lag * DECAY)
        self.worst = max(self.worst, late)

    async def run(self) -> None:
        """Measure until cancelled."""
        if self.threshold <= 0:
            return
        try:
            while True:
                self._due = time.perf_counter() + self.interval
                await asyncio.sleep(self.interval)
                self.note(time.perf_counter() - self._due)
        finally:
            self._due = None
