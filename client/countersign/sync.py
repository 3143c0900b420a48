"""``Client``: the asynchronous client driven from synchronous code.

Each method runs the AsyncClient's method of the same name on an event loop the Client keeps in
a thread of its own, so it works the same from a script, a thread or a notebook whose own loop is
running, and nothing is written twice.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from pydantic import JsonValue

from countersign.answers import Answer
from countersign.client import AsyncClient, from_environment
from countersign.wire.api import EscalationOut, ProposalOut
from countersign.wire.escalation import Summary, Trigger

__all__ = ["Client"]

T = TypeVar("T")


class Client:
    """The synchronous client; takes the same arguments as :class:`AsyncClient`."""

    def __init__(self, base_url: str, token: str, **options: Any) -> None:
        #: the asynchronous client doing the work, on this Client's loop
        self.aio = AsyncClient(base_url, token, **options)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="countersign-client", daemon=True
        )
        self._thread.start()
        # closed by close(), or when the Client is garbage-collected or the interpreter exits
        self._closer = weakref.finalize(self, _shut_down, self.aio, self._loop, self._thread)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **options: Any) -> Client:
        """A client from ``COUNTERSIGN_URL``, ``COUNTERSIGN_TOKEN`` (and optionally
        ``COUNTERSIGN_REQUESTED_BY``, ``COUNTERSIGN_RUN_ID``)."""
        base_url, token, defaults = from_environment(env)
        return cls(base_url, token, **{**defaults, **options})

    def _run_async(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if self._loop.is_closed():
            coroutine.close()
            raise RuntimeError("this Client is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def close(self) -> None:
        self._closer()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def propose(
        self, operation: str, request: Mapping[str, JsonValue], **options: Any
    ) -> ProposalOut:
        return self._run_async(self.aio.propose(operation, request, **options))

    def get(self, proposal_id: str) -> ProposalOut:
        return self._run_async(self.aio.get(proposal_id))

    def wait(
        self, proposal_id: str, *, timeout: float = 60.0, follow_edits: bool = True
    ) -> ProposalOut:
        return self._run_async(
            self.aio.wait(proposal_id, timeout=timeout, follow_edits=follow_edits)
        )

    def cancel(self, proposal_id: str) -> ProposalOut:
        return self._run_async(self.aio.cancel(proposal_id))

    def approve(self, title: str, detail: str, **options: Any) -> Answer:
        return self._run_async(self.aio.approve(title, detail, **options))

    def ask(self, operation: str, request: Mapping[str, JsonValue], **options: Any) -> Answer:
        return self._run_async(self.aio.ask(operation, request, **options))

    def answer(self, proposal: ProposalOut, *, timeout: float | None = None) -> Answer:
        return self._run_async(self.aio.answer(proposal, timeout=timeout))

    def escalate(
        self,
        conversation_id: str,
        *,
        summary: Summary | Mapping[str, Any],
        trigger: Trigger | Mapping[str, Any],
        **options: Any,
    ) -> EscalationOut:
        return self._run_async(
            self.aio.escalate(conversation_id, summary=summary, trigger=trigger, **options)
        )

    def get_escalation(self, escalation_id: str) -> EscalationOut:
        return self._run_async(self.aio.get_escalation(escalation_id))


def _shut_down(aio: AsyncClient, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    """Close the connections, stop the loop and its thread (once)."""
    if loop.is_closed():
        return
    asyncio.run_coroutine_threadsafe(aio.close(), loop).result()
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()
