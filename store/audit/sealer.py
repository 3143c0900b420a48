"""The audit sealer of a store whose writers append entries unsealed (PostgreSQL): it seals the
committed entries into the hash chain in batches, soon after they commit, and lets callers wait
until everything committed before them is sealed.

One sealer runs per store, that is per process; the database admits a seal only at the head, so
the sealers of all instances never fork the chain, and one that lost a race to another reads the
head again (store/audit/verbs.py, ``seal_audit``). A run seals every entry committed before it
started, whoever appended it. Runs happen:

- right after a transaction of this store that appended entries commits (:meth:`Sealer.wake`);
  commits arriving while a run is under way are sealed together by the next run, so under load
  the batches grow instead of the runs multiplying;
- when a caller waits for the seal (:meth:`Sealer.sealed`: the audit reads, ``record_event``);
- when the store opens and every :data:`IDLE_SECONDS` when nothing else woke it, so that entries
  committed by an instance that stopped before sealing them (closed right after the commit, or
  killed) are sealed within that delay by any instance still running, or by the next to start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from store.base import StoreUnavailable

__all__ = ["IDLE_SECONDS", "Sealer"]

log = logging.getLogger(__name__)

#: The longest an entry committed anywhere waits for its seal while an instance is running
#: (plus the time of the runs themselves).
IDLE_SECONDS = 1.0

#: How long a run that failed (the database unreachable) waits before the next.
RETRY_SECONDS = 0.2


class Sealer:
    """Runs ``seal`` (seal every committed entry; store/audit/verbs.py ``seal_audit``) when woken,
    when waited for, and every ``idle_seconds`` otherwise, one run at a time."""

    def __init__(
        self, seal: Callable[[], Awaitable[int]], *, idle_seconds: float = IDLE_SECONDS
    ) -> None:
        self._seal = seal
        self._idle = idle_seconds
        self._wanted = asyncio.Event()
        self._waiting: list[asyncio.Future[None]] = []
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._failing = False  #: the last run failed (its warning was written)

    def start(self) -> None:
        """Run now, and from then on as the module says."""
        self._wanted.set()
        if self._task is None and not self._closed:
            self._task = asyncio.create_task(self._run(), name="audit sealer")

    def wake(self) -> None:
        """Entries were committed unsealed: seal them soon."""
        self.start()

    async def sealed(self) -> None:
        """Return once a run that started after this call has finished, so every entry
        committed before the call is sealed; raise the error of that run."""
        if self._closed:
            raise StoreUnavailable("the store is closed")
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(done)
        self.start()
        await done

    async def close(self) -> None:
        """Stop once the run under way, if any, has finished."""
        self._closed = True
        if self._task is not None:
            self._wanted.set()
            await self._task

    async def _run(self) -> None:
        while True:
            if not self._wanted.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wanted.wait(), self._idle)
            self._wanted.clear()
            waiting, self._waiting = self._waiting, []
            if self._closed:
                for done in waiting:
                    if not done.done():
                        done.set_exception(StoreUnavailable("the store is closed"))
                return
            try:
                await self._seal()
            except Exception as error:
                for done in waiting:
                    if not done.done():
                        done.set_exception(error)
                if not self._closed:  # closing meanwhile: the store refused the connection
                    # said once per outage: the outage itself is the application's to report
                    log.log(
                        logging.DEBUG if self._failing else logging.WARNING,
                        "could not seal audit entries (trying again): %s",
                        error,
                    )
                    self._failing = True
                    await asyncio.sleep(RETRY_SECONDS)
                    self._wanted.set()
            else:
                self._failing = False
                for done in waiting:
                    if not done.done():
                        done.set_result(None)
