"""Load generators: a fixed number of clients sending back to back, or requests at a fixed rate.

Each call returns the HTTP status it got (0 when the connection failed). Latency is measured
around the call; at a fixed rate it is measured from the moment the request was *due*, so a
server that falls behind is charged for the wait it causes (no coordinated omission).
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

__all__ = ["Call", "LoadResult", "at_rate", "back_to_back", "steady_heap"]

#: One request: its sequence number in, its HTTP status out.
Call = Callable[[int], Awaitable[int]]


def steady_heap() -> None:
    """Call before a scenario takes its start time: the benchmark's own garbage is collected
    and what it holds (the local Slack's messages, the prepared clicks, the results so far;
    170,000 objects and more by the click scenarios) is frozen out of the collector's passes.
    A full pass over them held this process's loop up to 163 ms, and a click sent or answered
    meanwhile was charged for it, as if the server had been slow."""
    gc.collect()
    gc.freeze()


@dataclass(slots=True)
class LoadResult:
    elapsed: float = 0.0
    statuses: Counter[int] = field(default_factory=Counter)
    #: latency in seconds of each call, by the status it got
    latencies: dict[int, list[float]] = field(default_factory=dict)

    def record(self, status: int, latency: float) -> None:
        self.statuses[status] += 1
        self.latencies.setdefault(status, []).append(latency)

    def of(self, *statuses: int) -> list[float]:
        return [lat for status in statuses for lat in self.latencies.get(status, [])]

    def every(self) -> list[float]:
        return [lat for lats in self.latencies.values() for lat in lats]


async def back_to_back(
    call: Call, *, clients: int, duration: float, limit: int | None = None
) -> LoadResult:
    """``clients`` loops, each sending its next request when the last one is answered, until
    ``duration`` seconds have passed or ``limit`` requests were sent."""
    result = LoadResult()
    counter = iter(range(limit if limit is not None else 1 << 62))
    start = time.perf_counter()
    deadline = start + duration

    async def client() -> None:
        for n in counter:
            sent = time.perf_counter()
            if sent >= deadline:
                return
            status = await call(n)
            result.record(status, time.perf_counter() - sent)

    await asyncio.gather(*(client() for _ in range(clients)))
    result.elapsed = time.perf_counter() - start
    return result


async def at_rate(call: Call, *, rate: float, duration: float) -> LoadResult:
    """Start one request every ``1/rate`` seconds for ``duration`` seconds, whatever the answers;
    then wait for every answer."""
    result = LoadResult()
    start = time.perf_counter()
    total = max(1, int(rate * duration))
    tasks = []

    async def one(n: int, due: float) -> None:
        status = await call(n)
        result.record(status, time.perf_counter() - due)

    for n in range(total):
        due = start + n / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(n, due)))
    await asyncio.gather(*tasks)
    result.elapsed = time.perf_counter() - start
    return result
