"""Answering a LangGraph run's interrupts through Countersign while the run waits.

:class:`Reviewer` runs a graph and, at each interrupt, proposes what it asks, waits for people's
decision and resumes the graph with it. The process waits meanwhile; to wait without a process,
see :class:`countersign.langgraph.ParkedGraph`. :func:`ask_people` raises such an interrupt from a
node of one's own graph.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Interrupt, interrupt
from pydantic import JsonValue

from countersign.client import GENERIC_DECISION, AsyncClient
from countersign.errors import CountersignError
from countersign.langgraph.asks import (
    QUESTION,
    TOOL_CALL,
    Ask,
    RequestOf,
    asks_of,
    decision_of,
    key_of,
    resume_of,
    tool_call_request,
)

__all__ = ["Reviewer", "Verdict", "approval", "ask_people", "thread_of"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What people decided on a question asked with :func:`ask_people`."""

    answer: Literal["approved", "rejected", "timed_out", "cancelled"]
    proposal_id: str
    #: exactly what was approved (an approver's edit included); None unless approved
    arguments: dict[str, JsonValue] | None
    #: why it was rejected (or why nobody decided); None when approved
    reason: str | None
    #: who approved or rejected; None for the policy
    by: str | None

    @property
    def approved(self) -> bool:
        return self.answer == "approved"

    @classmethod
    def of(cls, value: Mapping[str, Any]) -> Verdict:
        return cls(
            answer=value["answer"],
            proposal_id=value["proposal_id"],
            arguments=value.get("arguments"),
            reason=value.get("reason"),
            by=value.get("by"),
        )


def ask_people(
    operation: str, request: Mapping[str, JsonValue], *, reason: str | None = None
) -> Verdict:
    """From a node: stop the graph until people decided on a proposal of the decision
    operation ``operation`` (a Reviewer or a ParkedGraph asks them), then say what they
    decided. Like ``interrupt()``, the node runs again from its start when the graph resumes."""
    value = {"type": QUESTION, "operation": operation, "request": dict(request), "reason": reason}
    return Verdict.of(interrupt(value))


def approval(title: str, detail: str, *, operation: str = GENERIC_DECISION) -> Verdict:
    """``ask_people`` for the generic question (a decision operation asking title and detail)."""
    return ask_people(operation, {"title": title, "detail": detail})


def thread_of(config: RunnableConfig) -> str:
    """The thread id of a run's config; a run that can be interrupted has one."""
    thread = (config.get("configurable") or {}).get("thread_id")
    if not thread:
        raise CountersignError(
            "config: expected {'configurable': {'thread_id': ...}}; a graph that waits for "
            "people needs a checkpointer and a thread to resume"
        )
    return str(thread)


class Reviewer:
    """Runs a graph, answering its interrupts through Countersign while it waits.

    Tool calls are proposed on the decision operation ``operation``, with the request
    ``request_of(tool name, arguments)`` makes (``tool_name`` and ``input`` by default).
    ``timeout`` is how long to wait for each decision (default: until the proposal expires);
    when it passes, the proposal is withdrawn and the tool call rejected.
    """

    def __init__(
        self,
        client: AsyncClient,
        *,
        operation: str = TOOL_CALL,
        request_of: RequestOf = tool_call_request,
        timeout: float | None = None,
    ) -> None:
        self.client = client
        self.operation = operation
        self.request_of = request_of
        self.timeout = timeout

    async def run(self, graph: Any, input: Any, config: RunnableConfig, **options: Any) -> Any:
        """``graph.ainvoke(input, config)``, resumed after each interrupt until it finishes;
        its last output."""
        thread = thread_of(config)
        output = await graph.ainvoke(input, config, **options)
        while interrupts := (await graph.aget_state(config)).interrupts:
            answers = await asyncio.gather(*(self.resume(thread, i) for i in interrupts))
            resume = {i.id: answer for i, answer in zip(interrupts, answers, strict=True)}
            output = await graph.ainvoke(Command(resume=resume), config, **options)
        return output

    async def resume(self, thread: str, pending: Interrupt) -> Any:
        """Ask people what ``pending`` asks; the value that resumes it."""
        asks = asks_of(pending.value, operation=self.operation, request_of=self.request_of)
        decisions = await asyncio.gather(
            *(
                self._decide(ask, key_of(thread, pending.id, n), thread)
                for n, ask in enumerate(asks)
            )
        )
        return resume_of(asks, list(decisions))

    async def _decide(self, ask: Ask, key: str, thread: str) -> dict[str, JsonValue]:
        answer = await self.client.ask(
            ask.operation,
            ask.request,
            timeout=self.timeout,
            run_id=thread,
            reason=ask.reason,
            idempotency_key=key,
        )
        return decision_of(ask, answer)
