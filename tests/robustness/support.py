"""What the robustness tests share: their size, and the running app driven from a test thread.

The fuzz tests generate their cases with hypothesis, which is synchronous, so the app (the e2e
harness: real HTTP server, SQLite file, local Slack, execution target) runs on an event loop in
a thread of its own and the test sends real HTTP requests to it over loopback.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tests.e2e.harness import Countersign, running_countersign

__all__ = ["FUZZ_CASES", "ThreadedCountersign", "threaded_countersign"]

_T = TypeVar("_T")


def _fuzz_cases() -> int:
    raw = os.environ.get("COUNTERSIGN_FUZZ_CASES", "10000")
    try:
        cases = int(raw)
    except ValueError:
        raise ValueError(
            f"COUNTERSIGN_FUZZ_CASES: expected a whole number of cases, got {raw!r}"
        ) from None
    if cases < 1:
        raise ValueError(f"COUNTERSIGN_FUZZ_CASES: expected at least 1, got {cases}")
    return cases


#: Cases per fuzz test (read once, at collection: the autouse fixture scrubs COUNTERSIGN_*).
FUZZ_CASES = _fuzz_cases()


@dataclass(frozen=True)
class ThreadedCountersign:
    """The running app and the loop it runs on; ``run`` awaits a coroutine on that loop."""

    cs: Countersign
    loop: asyncio.AbstractEventLoop

    def run(self, coroutine: Coroutine[Any, Any, _T], timeout: float = 30.0) -> _T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)


@contextmanager
def threaded_countersign(
    tmp_path: Path, *, config_edit: Callable[[str], str] | None = None
) -> Iterator[ThreadedCountersign]:
    """``running_countersign(tmp_path, config_edit=...)`` on an event loop in its own thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="countersign", daemon=True)
    thread.start()
    running = running_countersign(tmp_path, config_edit=config_edit)
    try:
        cs = asyncio.run_coroutine_threadsafe(running.__aenter__(), loop).result(60)
        try:
            yield ThreadedCountersign(cs, loop)
        finally:
            asyncio.run_coroutine_threadsafe(running.__aexit__(None, None, None), loop).result(60)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
