"""A tool call an agent framework wants to make, asked as a proposal on a decision operation,
and what people's answer means for it. Shared by the framework adapters
(countersign.langgraph, countersign.openai_agents).

The proposal's request is ``{"tool_name": ..., "input": {...}}`` unless the adapter is given
another ``request_of``. Approved as proposed, the call runs; approved after an approver edited
it, the approved call is the one to run; otherwise the model is told why it did not run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from pydantic import JsonValue

from countersign.answers import Answer, Approved, Cancelled, Rejected, TimedOut
from countersign.wire.canonical import canonical_json

__all__ = ["TOOL_CALL", "RequestOf", "approved_call", "refusal", "tool_call_request"]

#: The decision operation tool calls are proposed on unless told otherwise.
TOOL_CALL: Final = "agent.tool_call"

#: Makes the decision operation's request for a tool call: (tool name, arguments) -> request.
RequestOf = Callable[[str, Mapping[str, Any]], dict[str, JsonValue]]


def tool_call_request(name: str, args: Mapping[str, Any]) -> dict[str, JsonValue]:
    """The default request for a tool call: ``{"tool_name": ..., "input": {...}}``."""
    return {"tool_name": name, "input": dict(args)}


def approved_call(
    proposed: Mapping[str, JsonValue], answer: Approved, name: str, args: Mapping[str, Any]
) -> tuple[str, dict[str, Any]] | None:
    """None when people approved the request as proposed; otherwise the call they approved
    (``tool_name`` and ``input`` of the approved arguments, where present)."""
    approved = {key: answer.arguments.get(key) for key in proposed}
    if canonical_json(approved) == canonical_json(dict(proposed)):
        return None
    edited_name = answer.arguments.get("tool_name", name)
    edited_args = answer.arguments.get("input", dict(args))
    if not isinstance(edited_name, str) or not isinstance(edited_args, dict):
        raise ValueError(f"the approved arguments are not a tool call: {approved}")
    return edited_name, edited_args


def refusal(answer: Answer) -> str:
    """Why a tool call did not run, for the model to read."""
    if isinstance(answer, Rejected):
        if answer.by is None:
            return f"the approval policy does not allow it: {answer.reason}"
        return answer.reason
    if isinstance(answer, TimedOut):
        proposal = answer.proposal
        if "shown_at" in proposal.model_fields_set and proposal.shown_at is None:
            # nobody was asked yet: its batch has not gone out, or Slack has not taken the post
            return (
                "nobody had been shown the approval request yet, so nobody decided; it was not run"
            )
        if proposal.shown_at is not None:
            return "people were asked and nobody decided in time, so it was not run"
        return "nobody decided in time, so it was not run"
    if isinstance(answer, Cancelled):
        return "the approval request was withdrawn, so it was not run"
    raise ValueError(f"not a refusal: {answer!r}")
