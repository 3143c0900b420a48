"""OpenAI Agents SDK runs whose tool approvals people give in Slack, through Countersign
(``pip install 'countersign-client[openai-agents]'``).

A function tool declared with ``needs_approval`` stops the run: ``result.interruptions`` lists
the calls waiting for approval. :class:`ToolApprovals` proposes each on a decision operation
(request ``{"tool_name": ..., "input": {...}}`` unless ``request_of`` says otherwise), waits for
people's decision, approves or rejects the call on the run's state and resumes the run:

    approvals = ToolApprovals(client)
    result = await approvals.run(agent, "Refund order 7")

A rejection, a denial, an expiry or a withdrawal reaches the model as the rejection message. The
SDK cannot run a call with other arguments than the model gave, so an approver's edit rejects
the call, telling the model the approved call; when the model then makes exactly that call, it
runs without asking again (once).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from agents import Agent, Runner, RunResult, RunState, ToolApprovalItem
from pydantic import JsonValue

from countersign.answers import Approved
from countersign.client import AsyncClient
from countersign.errors import CountersignError
from countersign.tool_answers import TOOL_CALL, RequestOf, approved_call, refusal, tool_call_request
from countersign.wire.canonical import canonical_json

__all__ = ["ToolApprovals"]


class ToolApprovals:
    """Answers a run's tool-approval interruptions through Countersign.

    ``timeout`` is how long to wait for each decision (default: until the proposal expires);
    when it passes, the proposal is withdrawn and the call rejected. ``run_id`` names the agent
    run in Countersign and in the proposals' idempotency keys.
    """

    def __init__(
        self,
        client: AsyncClient,
        *,
        operation: str = TOOL_CALL,
        request_of: RequestOf = tool_call_request,
        timeout: float | None = None,
        run_id: str | None = None,
    ) -> None:
        self.client = client
        self.operation = operation
        self.request_of = request_of
        self.timeout = timeout
        self.run_id = run_id
        #: calls an approver approved in an edited form, not yet made by the model
        self._approved_edits: list[str] = []

    async def run(
        self, agent: Agent[Any], input: Any, *, max_rounds: int = 20, **options: Any
    ) -> RunResult:
        """``Runner.run(agent, input)``, resumed after each round of approvals until the run
        needs none; at most ``max_rounds`` rounds."""
        result = await Runner.run(agent, input, **options)
        for _ in range(max_rounds):
            if not result.interruptions:
                return result
            state = await self.resolve(result)
            result = await Runner.run(agent, state, **options)
        if result.interruptions:
            raise CountersignError(
                f"the run still asks for approvals after {max_rounds} rounds; raise max_rounds "
                "or resolve the rest with resolve()"
            )
        return result

    async def resolve(self, result: RunResult) -> RunState[Any]:
        """The run's state with each of its interruptions approved or rejected as people
        decided; pass it to ``Runner.run`` to resume."""
        state = result.to_state()
        for item in result.interruptions:
            await self._decide(state, item)
        return state

    async def _decide(self, state: RunState[Any], item: ToolApprovalItem) -> None:
        name = item.name or "unnamed tool"
        args = _arguments(item.arguments)
        call = _call_key(name, args)
        if call in self._approved_edits:
            self._approved_edits.remove(call)
            state.approve(item)
            return
        request = self.request_of(name, args)
        answer = await self.client.ask(
            self.operation,
            request,
            timeout=self.timeout,
            run_id=self.run_id,
            idempotency_key=_idempotency_key(self.run_id, item.call_id, request),
        )
        if not isinstance(answer, Approved):
            state.reject(item, rejection_message=f"Not run: {refusal(answer)}")
            return
        try:
            edited = approved_call(request, answer, name, args)
        except ValueError as wrong:
            state.reject(item, rejection_message=f"Not run: {wrong}")
            return
        if edited is None:
            state.approve(item)
            return
        edited_name, edited_args = edited
        self._approved_edits.append(_call_key(edited_name, edited_args))
        state.reject(
            item,
            rejection_message=(
                "Not run as you asked: an approver changed the call before approving it. The "
                f"approved call is {edited_name} with arguments "
                f"{json.dumps(edited_args, sort_keys=True)}; make exactly that call to run it."
            ),
        )


def _arguments(raw: str | None) -> dict[str, JsonValue]:
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {"arguments": raw}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


def _call_key(name: str, args: dict[str, Any]) -> str:
    return canonical_json({"name": name, "args": args}).decode()


def _idempotency_key(run_id: str | None, call_id: str | None, request: dict[str, Any]) -> str:
    """The same call of the same run finds its proposal again; another call asks anew."""
    raw = canonical_json({"run": run_id, "call": call_id, "request": request})
    return "oa-" + hashlib.sha256(raw).hexdigest()
