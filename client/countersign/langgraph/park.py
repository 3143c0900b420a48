"""Park, don't poll: a LangGraph run that waits for people holds no process.

:meth:`ParkedGraph.start` runs the graph until an interrupt; LangGraph's checkpointer has saved
the thread there. It proposes what the interrupt asks, with a ``callback_url``, records which
interrupt each proposal answers (:class:`~countersign.langgraph.parking.Parking`) and returns.
When the decision arrives, Countersign calls back; :meth:`ParkedGraph.handle` (a
:class:`~countersign.callbacks.CallbackReceiver` handler), in whichever process receives it,
records the decision and, once every proposal of the interrupt is decided, resumes the thread
from its checkpoint with ``Command(resume=...)``: exactly once, however many callbacks or
processes race. A new interrupt parks the run again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from countersign.callbacks import Document, NotYet
from countersign.client import AsyncClient, answer_of
from countersign.langgraph.asks import (
    TOOL_CALL,
    RequestOf,
    asks_of,
    decision_of,
    key_of,
    resume_of,
    tool_call_request,
)
from countersign.langgraph.parking import Parking, Slot
from countersign.langgraph.review import thread_of
from countersign.wire.api import ProposalOut

__all__ = ["Finished", "ParkedGraph", "Run"]

log = logging.getLogger(__name__)

#: Told a thread's last output when a resumed run finishes.
Finished = Callable[[str, Any], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Run:
    """Where a run stopped: parked at ``interrupts``, waiting for the decisions on
    ``proposals``; or finished (neither), with its last ``output``."""

    thread_id: str
    interrupts: tuple[str, ...]
    proposals: tuple[str, ...]
    output: Any

    @property
    def parked(self) -> bool:
        return bool(self.interrupts)


class ParkedGraph:
    """A graph (compiled with a checkpointer every receiving process shares, e.g. LangGraph's
    SQLite saver) whose interrupts are answered through Countersign by callback.

    ``callback_url`` is where Countersign calls back: a CallbackReceiver's address for this
    object's :meth:`handle` (under one of the agent's ``callback_url_prefixes``). ``parking`` is
    the SQLite file recording parked runs (it may be the checkpointer's file). Tool calls are
    proposed as the Reviewer proposes them (``operation``, ``request_of``).
    """

    def __init__(
        self,
        graph: Any,
        client: AsyncClient,
        *,
        parking: Parking | str | Path,
        callback_url: str,
        operation: str = TOOL_CALL,
        request_of: RequestOf = tool_call_request,
        on_finished: Finished | None = None,
    ) -> None:
        self.graph = graph
        self.client = client
        self.parking = parking if isinstance(parking, Parking) else Parking(parking)
        self.callback_url = callback_url
        self.operation = operation
        self.request_of = request_of
        self.on_finished = on_finished

    async def start(self, input: Any, config: RunnableConfig) -> Run:
        """Run the graph until it finishes or must wait for people; then return. Decisions known
        at once (the policy ran or denied it) are applied at once."""
        thread = thread_of(config)
        output = await self.graph.ainvoke(input, config)
        run = await self._park_pending(thread, config, output)
        return await self._advance(thread) or run

    async def handle(self, document: Document) -> None:
        """A verified callback: record its decision; resume the thread when its interrupt is
        fully decided. NotYet for a proposal this parking does not know (yet)."""
        if not isinstance(document, ProposalOut):
            return  # an escalation's callback: not a parked run's
        slot = await self._slot_of(document)
        if slot is None:
            raise NotYet(f"proposal {document.id} is not parked here (yet)")
        await self._note(document, slot)
        await self._advance(slot.thread_id)

    # --- steps -------------------------------------------------------------------------------

    async def _slot_of(self, document: ProposalOut) -> Slot | None:
        slot = await self.parking.slot_of(document.id)
        if slot is None and document.supersedes is not None:
            # an approver's edit, told before the proposal it replaced
            slot = await self.parking.slot_of(document.supersedes)
            if slot is not None:
                await self.parking.link(document.id, slot)
        return slot

    async def _note(self, proposal: ProposalOut, slot: Slot) -> None:
        """Record what ``proposal`` says about ``slot``: an edit to follow, or its decision."""
        if proposal.status == "superseded" and proposal.superseded_by is not None:
            await self.parking.link(proposal.superseded_by, slot)
            return
        answer = answer_of(proposal)
        if answer is not None and not slot.decided:
            await self.parking.decide(slot, decision_of(slot.ask, answer))

    async def _park_pending(self, thread: str, config: RunnableConfig, output: Any) -> Run:
        """Propose what each pending interrupt asks (again: the keys make that idempotent)."""
        state = await self.graph.aget_state(config)
        configurable = dict(config.get("configurable") or {})
        proposed: list[str] = []
        for pending in state.interrupts:
            asks = asks_of(pending.value, operation=self.operation, request_of=self.request_of)
            await self.parking.park(thread, pending.id, configurable, asks)
            for position, ask in enumerate(asks):
                proposal = await self.client.propose(
                    ask.operation,
                    ask.request,
                    run_id=thread,
                    reason=ask.reason,
                    callback_url=self.callback_url,
                    idempotency_key=key_of(thread, pending.id, position),
                )
                slot = Slot(thread, pending.id, position, ask, decided=False)
                await self.parking.link(proposal.id, slot)
                await self._note(proposal, slot)
                proposed.append(proposal.id)
        interrupts = tuple(pending.id for pending in state.interrupts)
        return Run(thread, interrupts, tuple(proposed), output)

    async def _advance(self, thread: str) -> Run | None:
        """Resume the thread while it has fully decided interrupts nobody else is resuming;
        where the last resumption here stopped (None when none happened here)."""
        run = None
        while (ready := await self.parking.claim_ready(thread)) is not None:
            config: RunnableConfig = {"configurable": ready.config}
            resume = {
                interrupt_id: resume_of(asks, decisions)
                for interrupt_id, (asks, decisions) in ready.decisions.items()
            }
            try:
                output = await self.graph.ainvoke(Command(resume=resume), config)
                run = await self._park_pending(thread, config, output)
            except BaseException:
                await self.parking.give_back(ready)
                raise
            await self.parking.resumed(ready)
            log.info("thread %s resumed (%s)", thread, ", ".join(ready.decisions))
            if not run.parked and self.on_finished is not None:
                await self.on_finished(thread, output)
        return run
