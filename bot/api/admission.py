"""A bound on work in flight, so that past capacity callers are told at once, not queued.

Acknowledging early and doing the work in unbounded background tasks lets latency grow without
limit under load. Each entry point takes a slot; with none free it answers "busy" straight away
(agents: 503 with Retry-After). Slack clicks are never held to one: a decision is recorded and
applied after (bot/flow/clicks.py), and the rest is worked on at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Admission"]


class Admission:
    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected at least 1")
        self.limit = limit
        self.in_flight = 0
        self.refused = 0  #: how many callers were turned away, for metrics and tests

    @contextmanager
    def slot(self) -> Iterator[bool]:
        """Yields True with a slot held for the block, or False when none is free."""
        if self.in_flight >= self.limit:
            self.refused += 1
            yield False
            return
        self.in_flight += 1
        try:
            yield True
        finally:
            self.in_flight -= 1
