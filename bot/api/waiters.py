"""Wake long-polling agents when a proposal changes (within this process)."""

from __future__ import annotations

import asyncio
from collections import defaultdict

__all__ = ["Waiters"]


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
