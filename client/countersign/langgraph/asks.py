"""What a LangGraph interrupt asks of people, and the value that resumes it.

Three kinds of interrupt are answered through Countersign:

- ``HumanInTheLoopMiddleware``'s batched request (``action_requests`` and ``review_configs``):
  each action request becomes one proposal, and the resume value is ``{"decisions": [...]}`` in
  the same order;
- the middleware's per-call request (``type = "tool_approval"``): one proposal, resumed with one
  decision;
- a question raised by :func:`countersign.langgraph.ask_people` in a graph of one's own: one
  proposal, resumed with a :class:`Verdict`'s fields.

A tool call is proposed on a decision operation whose request is ``tool_name`` and ``input`` (the
tool's arguments). Approved as proposed, the decision is ``approve``; approved after an approver
edited it, ``edit`` with the approved call as ``edited_action``; rejected, denied, expired or
withdrawn, ``reject`` with a message saying why.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from countersign.answers import Answer, Approved, Cancelled, Rejected, TimedOut
from countersign.errors import CountersignError
from countersign.tool_answers import (
    TOOL_CALL,
    RequestOf,
    approved_call,
    refusal,
    tool_call_request,
)
from countersign.wire.canonical import canonical_json

__all__ = [
    "QUESTION",
    "TOOL_CALL",
    "Ask",
    "RequestOf",
    "asks_of",
    "decision_of",
    "key_of",
    "resume_of",
    "tool_call_request",
]

#: The ``type`` of an interrupt raised by ask_people.
QUESTION: Final = "countersign.question"
#: Countersign keeps the agent's explanation to this many characters.
_REASON_MAX: Final = 2000

Form = Literal["batched", "per_call", "question"]


class Ask(BaseModel):
    """One proposal an interrupt needs, and how its answer becomes part of the resume value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    form: Form
    operation: str
    request: dict[str, JsonValue]
    reason: str | None = None
    #: for a tool call: the call as the model made it, and the decisions its review allows
    tool_name: str | None = None
    args: dict[str, JsonValue] | None = None
    allowed: tuple[str, ...] = ()


def asks_of(
    value: Any, *, operation: str = TOOL_CALL, request_of: RequestOf = tool_call_request
) -> list[Ask]:
    """The proposals an interrupt's value needs, in order. CountersignError for an interrupt
    Countersign cannot answer."""
    if isinstance(value, Mapping) and isinstance(value.get("action_requests"), list):
        configs = value.get("review_configs") or []
        allowed_by_name = {
            config["action_name"]: tuple(config.get("allowed_decisions", ()))
            for config in configs
            if isinstance(config, Mapping) and "action_name" in config
        }
        return [
            _tool_ask(
                "batched",
                action,
                allowed_by_name.get(action["name"], ("approve", "reject")),
                operation,
                request_of,
            )
            for action in value["action_requests"]
        ]
    if isinstance(value, Mapping) and value.get("type") == "tool_approval":
        # the per-call request names no allowed decisions; the middleware checks the answer
        return [_tool_ask("per_call", value, ("approve", "edit", "reject"), operation, request_of)]
    if isinstance(value, Mapping) and value.get("type") == QUESTION:
        return [
            Ask(
                form="question",
                operation=value["operation"],
                request=dict(value["request"]),
                reason=value.get("reason"),
            )
        ]
    raise CountersignError(
        f"an interrupt Countersign cannot answer: {_shape(value)}; expected the value of "
        "HumanInTheLoopMiddleware (action_requests, or type 'tool_approval') or of "
        "countersign.langgraph.ask_people"
    )


def decision_of(ask: Ask, answer: Answer) -> dict[str, JsonValue]:
    """The part of the resume value that answers ``ask``."""
    if ask.form == "question":
        return _verdict(answer)
    if isinstance(answer, Approved):
        return _approved_call(ask, answer)
    return _reject(ask, refusal(answer))


def resume_of(asks: list[Ask], decisions: list[dict[str, JsonValue]]) -> Any:
    """The value that resumes the interrupt ``asks`` came from."""
    if len(asks) != len(decisions):
        raise CountersignError(f"{len(asks)} proposals but {len(decisions)} decisions")
    if asks and asks[0].form == "batched":
        return {"decisions": decisions}
    return decisions[0]


def key_of(thread_id: str, interrupt_id: str, position: int) -> str:
    """The idempotency key of one proposal of an interrupt: asking again (a restarted process,
    a retry) finds the proposal asked first; another interrupt asks anew."""
    raw = canonical_json({"thread": thread_id, "interrupt": interrupt_id, "position": position})
    return "lg-" + hashlib.sha256(raw).hexdigest()


# --- helpers -----------------------------------------------------------------------------------


def _tool_ask(
    form: Form,
    action: Mapping[str, Any],
    allowed: tuple[str, ...],
    operation: str,
    request_of: RequestOf,
) -> Ask:
    name = str(action["name"])
    args = dict(action.get("args") or {})
    description = action.get("description")
    reason = description[:_REASON_MAX] if isinstance(description, str) and description else None
    return Ask(
        form=form,
        operation=operation,
        request=request_of(name, args),
        reason=reason,
        tool_name=name,
        args=args,
        allowed=allowed,
    )


def _approved_call(ask: Ask, answer: Approved) -> dict[str, JsonValue]:
    try:
        edited = approved_call(ask.request, answer, ask.tool_name or "", ask.args or {})
    except ValueError as wrong:
        return _reject(ask, str(wrong))
    if edited is None:
        return _checked(ask, {"type": "approve"})
    name, args = edited
    if "edit" not in ask.allowed:
        return _reject(
            ask,
            f"an approver changed the call before approving it, to {name} with {args}, and "
            "this tool's review does not allow edits; it was not run",
        )
    return _checked(ask, {"type": "edit", "edited_action": {"name": name, "args": args}})


def _reject(ask: Ask, message: str) -> dict[str, JsonValue]:
    return _checked(ask, {"type": "reject", "message": message})


def _checked(ask: Ask, decision: dict[str, JsonValue]) -> dict[str, JsonValue]:
    if decision["type"] not in ask.allowed:
        raise CountersignError(
            f"the answer for {ask.tool_name} is {decision['type']!r}, which its review does not "
            f"allow (allowed_decisions: {', '.join(ask.allowed)}); add 'reject' to every "
            "tool reviewed through Countersign, so that a refusal can reach the model"
        )
    return decision


def _verdict(answer: Answer) -> dict[str, JsonValue]:
    """A question's resume value: the fields of a Verdict."""
    verdict: dict[str, JsonValue] = {
        "answer": _ANSWER_NAMES[type(answer)],
        "proposal_id": answer.proposal.id,
        "arguments": None,
        "reason": None,
        "by": None,
    }
    if isinstance(answer, Approved):
        verdict.update(arguments=dict(answer.arguments), by=answer.by)
    elif isinstance(answer, Rejected):
        verdict.update(reason=answer.reason, by=answer.by)
    elif isinstance(answer, TimedOut):
        verdict.update(reason=answer.describe())
    return verdict


_ANSWER_NAMES: Final[dict[type, str]] = {
    Approved: "approved",
    Rejected: "rejected",
    TimedOut: "timed_out",
    Cancelled: "cancelled",
}


def _shape(value: Any) -> str:
    if isinstance(value, Mapping):
        return f"a mapping with keys {sorted(map(str, value))[:8]}"
    return f"a {type(value).__name__}"
