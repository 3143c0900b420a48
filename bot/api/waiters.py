"""Wake long-polling agents when a proposal changes (within this process)."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Final, Protocol, TypeVar

__all__ = ["POLL_SLICE", "Waiters"]

#: The longest a long-poll waits for a wake-up before it reads the store again: a change made
#: by another process, or one that lands between a read and the wait starting, is never missed
#: for longer than that.
POLL_SLICE: Final = 1.0


class _Identified(Protocol):
    @property
    def id(self) -> str: ...


ItemT = TypeVar("ItemT", bound=_Identified)


class Waiters:
    def __init__(self) -> None:
        self._events: defaultdict[str, set[asyncio.Event]] = defaultdict(set)

    def notify(self, proposal_id: str) -> None:
        for event in self._events.pop(proposal_id, ()):
            event.set()

    async def wait(self, proposal_id: str, timeout: float) -> bool:
        """Wait until ``notify(proposal_id)`` or ``timeout``; True when notified."""
        event = asyncio.Event()
        self._events[proposal_id].add(event)
        try:
            async with asyncio.timeout(timeout):
                await event.wait()
            return True
        except TimeoutError:
            return False
        finally:
            waiting = self._events.get(proposal_id)
            if waiting is not None:
                waiting.discard(event)
                if not waiting:
                    del self._events[proposal_id]

    async def hold(
        self,
        item: ItemT,
        *,
        unsettled: Callable[[ItemT], bool],
        reread: Callable[[str], Awaitable[ItemT]],
        seconds: float,
    ) -> ItemT:
        """``item`` as it is once it is no longer ``unsettled``, or after ``seconds``: the long
        poll of every agent read (proposals and escalations alike)."""
        deadline = time.monotonic() + seconds
        while unsettled(item) and (remaining := deadline - time.monotonic()) > 0:
            await self.wait(item.id, min(remaining, POLL_SLICE))
            item = await reread(item.id)
        return item
