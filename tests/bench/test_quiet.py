"""A ratio row starts when the servers are at rest: the benchmark waits while a real process is
busy, and gives up (None) when it stays busy, so that a row's CPU per operation is its own."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import pytest

from bot.bench.processes import cpu_seconds, until_quiet

#: spins for the seconds it is given, then sleeps until it is killed
_BUSY_THEN_IDLE = (
    "import sys, time\n"
    "end = time.perf_counter() + float(sys.argv[1])\n"
    "while time.perf_counter() < end: pass\n"
    "print('idle', flush=True)\n"
    "time.sleep(60)\n"
)


async def _spinner(seconds: float) -> AsyncIterator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _BUSY_THEN_IDLE, str(seconds), stdout=asyncio.subprocess.PIPE
    )
    try:
        yield process
    finally:
        process.kill()
        await process.wait()


@pytest.fixture
async def busy_for_a_second() -> AsyncIterator[asyncio.subprocess.Process]:
    async for process in _spinner(1.5):
        yield process


@pytest.fixture
async def always_busy() -> AsyncIterator[asyncio.subprocess.Process]:
    async for process in _spinner(60):
        yield process


async def test_it_waits_while_the_process_works_and_returns_once_it_rests(
    busy_for_a_second: asyncio.subprocess.Process,
) -> None:
    pid = busy_for_a_second.pid
    waited = await until_quiet(lambda: cpu_seconds(pid), window=0.2, limit=20)

    assert waited is not None and waited >= 1.0, waited
    assert busy_for_a_second.stdout is not None
    # it returned after the spinning ended, not during it
    assert await asyncio.wait_for(busy_for_a_second.stdout.readline(), 1) == b"idle\n"


async def test_a_process_still_busy_at_the_limit_is_none(
    always_busy: asyncio.subprocess.Process,
) -> None:
    pid = always_busy.pid
    assert await until_quiet(lambda: cpu_seconds(pid), window=0.2, limit=1.0) is None


async def test_a_process_whose_cpu_time_is_unknown_is_none() -> None:
    assert await until_quiet(lambda: None, window=0.05, limit=1.0) is None
