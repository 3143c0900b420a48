"""Permission for a coding agent's tool call, asked on a decision operation, and the verdict.

Claude Code's permission prompt tool (countersign.mcp_server) and its PreToolUse hook
(countersign.claude_hook) both ask the same thing: may the agent call this tool with this input?
:class:`ToolCallShape` says which decision operation asks it and how the tool's name and input
become that operation's request; :func:`decide_tool_call` proposes, waits within a time budget
and answers a :class:`Verdict`. Nothing fails open: an approval is the only way to ``allow``, and
everything else (a rejection, a denial, an expiry, the budget running out, Countersign being
unreachable or refusing the request, an approved request that no longer names the tool) is not.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import JsonValue

from countersign.answers import Answer, Approved, Rejected, TimedOut
from countersign.client import AsyncClient
from countersign.errors import CancelUnavailable, CountersignError, ProblemError, Unreachable

__all__ = [
    "DEFAULT_TOOL_OPERATION",
    "DEFAULT_WAIT_SECONDS",
    "SPREAD",
    "ToolCallShape",
    "Verdict",
    "decide_tool_call",
    "tool_call_key",
    "wait_seconds_from",
]

#: The decision operation tool calls are asked on unless configured otherwise.
DEFAULT_TOOL_OPERATION: Final = "coding.tool_use"
#: How long to wait for people by default (keep it below the caller's own time limit).
DEFAULT_WAIT_SECONDS: Final = 300.0
#: An input field name meaning: the input's own fields go at the top of the request.
SPREAD: Final = "*"
#: Past the wait, time left to withdraw the proposal and read what it came to.
_GRACE_SECONDS: Final = 15.0


@dataclass(frozen=True, slots=True)
class ToolCallShape:
    """Which decision operation a tool call is asked on, and how its request is built.

    By default the request is ``{"tool_name": ..., "input": {...}}``, so policy rules can name
    ``tool_name``. With ``input_field = "*"`` the input's own fields sit beside the tool's name
    (``{"tool_name": "Bash", "command": "make test"}``), for an operation whose schema lists them.
    """

    operation: str = DEFAULT_TOOL_OPERATION
    tool_field: str = "tool_name"
    input_field: str = "input"

    def __post_init__(self) -> None:
        if not self.operation:
            raise ValueError("operation is empty; expected a decision operation's name")
        if not self.tool_field or self.tool_field == SPREAD:
            raise ValueError(
                f"tool field {self.tool_field!r}: expected a request field name such as tool_name"
            )
        if self.input_field == self.tool_field or not self.input_field:
            raise ValueError(
                f"input field {self.input_field!r}: expected a request field name other than "
                f"{self.tool_field!r}, or {SPREAD!r} for the input's own fields"
            )

    @classmethod
    def configured(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        operation: str | None = None,
        tool_field: str | None = None,
        input_field: str | None = None,
    ) -> ToolCallShape:
        """The shape the given values (a command's flags) or else ``COUNTERSIGN_TOOL_OPERATION``,
        ``COUNTERSIGN_TOOL_NAME_FIELD`` and ``COUNTERSIGN_TOOL_INPUT_FIELD`` give, each
        defaulting to this class's default."""
        env = os.environ if env is None else env
        return cls(
            operation=operation or env.get("COUNTERSIGN_TOOL_OPERATION") or DEFAULT_TOOL_OPERATION,
            tool_field=tool_field or env.get("COUNTERSIGN_TOOL_NAME_FIELD") or "tool_name",
            input_field=input_field or env.get("COUNTERSIGN_TOOL_INPUT_FIELD") or "input",
        )

    def request(self, tool_name: str, tool_input: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
        """The decision operation's request for calling ``tool_name`` with ``tool_input``."""
        if self.input_field != SPREAD:
            return {self.tool_field: tool_name, self.input_field: dict(tool_input)}
        if self.tool_field in tool_input:
            raise ValueError(
                f"the tool's input has a field {self.tool_field!r}, which the request uses for "
                "the tool's name; configure another tool field or an input field"
            )
        return {self.tool_field: tool_name, **tool_input}

    def approved_input(
        self, tool_name: str, arguments: Mapping[str, JsonValue]
    ) -> dict[str, JsonValue]:
        """The tool input people approved, read back from the approved arguments; ValueError
        when they do not name this tool or hold no input (then nothing was approved for it)."""
        approved_tool = arguments.get(self.tool_field)
        if approved_tool != tool_name:
            raise ValueError(
                f"the approved request names tool {approved_tool!r} in {self.tool_field!r}, "
                f"but the agent asked to use {tool_name!r}"
            )
        if self.input_field == SPREAD:
            return {k: v for k, v in arguments.items() if k != self.tool_field}
        approved = arguments.get(self.input_field)
        if not isinstance(approved, dict):
            raise ValueError(
                f"the approved request has no object in {self.input_field!r} (got "
                f"{type(approved).__name__}); the operation's request must hold the tool's input"
            )
        return dict(approved)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What Countersign came to for one tool call.

    ``decision`` is ``allow`` only when people (or the policy) approved it; ``deny`` when they
    rejected it or the policy denied it; ``undecided`` when nobody decided in time or Countersign
    could not answer. A caller that cannot ask anyone else treats ``undecided`` as ``deny``.
    """

    decision: Literal["allow", "deny", "undecided"]
    message: str
    #: with ``allow``: the input to run, exactly as approved (an approver's edit included)
    updated_input: dict[str, JsonValue] | None = None
    proposal_id: str | None = None

    @property
    def allowed(self) -> bool:
        return self.decision == "allow" and self.updated_input is not None


def tool_call_key(purpose: str, tool_use_id: str | None, *context: str | None) -> str:
    """An idempotency key for one tool call: the same call (its ``tool_use_id``, in the same
    ``context``) gives the same key, so a retried call finds its proposal; a call without an id
    gets a fresh key, so an earlier answer is never reused for a new call."""
    if not tool_use_id:
        return f"cs-tool-{uuid.uuid4().hex}"
    parts = [purpose, tool_use_id, *(part or "" for part in context)]
    return "cs-tool-" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def wait_seconds_from(value: str | None, *, name: str) -> float:
    """A wait in seconds, from a flag or a variable; ValueError naming ``name`` otherwise."""
    if value is None or value == "":
        return DEFAULT_WAIT_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"{name} is {value!r}; expected a number of seconds") from None
    if not 0 < seconds <= 86_400:
        raise ValueError(f"{name} is {value!r}; expected more than 0 and at most 86400 seconds")
    return seconds


async def decide_tool_call(
    client: AsyncClient,
    shape: ToolCallShape,
    tool_name: str,
    tool_input: Mapping[str, JsonValue],
    *,
    wait: float,
    idempotency_key: str,
    run_id: str | None = None,
    reason: str | None = None,
) -> Verdict:
    """Ask whether the agent may call ``tool_name`` with ``tool_input``; wait at most ``wait``
    seconds for a decision (then the proposal is withdrawn). Never raises for Countersign's
    answers or its absence: each becomes a verdict that says what happened."""
    try:
        request = shape.request(tool_name, tool_input)
    except ValueError as error:
        return Verdict("deny", f"Countersign was not asked: {error}")
    try:
        async with asyncio.timeout(wait + _GRACE_SECONDS):
            proposal = await client.propose(
                shape.operation,
                request,
                run_id=run_id,
                reason=reason,
                idempotency_key=idempotency_key,
            )
            answer = await client.answer(proposal, timeout=wait)
    except ProblemError as refused:
        passing = refused.status >= 500 or refused.status == 429
        decision: Literal["deny", "undecided"] = "undecided" if passing else "deny"
        return Verdict(decision, f"Countersign refused to ask about {tool_name}: {refused}")
    except CancelUnavailable as pending:
        return Verdict(
            "undecided",
            f"Nobody decided on {tool_name} in Countersign within {wait:g} s, and the request "
            f"could not be withdrawn (proposal {pending.proposal.id} is still pending there); "
            "it is not allowed",
            proposal_id=pending.proposal.id,
        )
    except Unreachable as error:
        return Verdict(
            "undecided", f"Countersign could not be reached, so {tool_name} is not allowed: {error}"
        )
    except TimeoutError:
        return Verdict(
            "undecided",
            f"Countersign did not answer about {tool_name} within "
            f"{wait + _GRACE_SECONDS:g} s, so it is not allowed",
        )
    except CountersignError as error:
        return Verdict("undecided", f"Countersign could not decide on {tool_name}: {error}")
    return verdict_of(shape, tool_name, answer, wait)


def verdict_of(shape: ToolCallShape, tool_name: str, answer: Answer, wait: float) -> Verdict:
    """The verdict an answer gives for calling ``tool_name``."""
    proposal_id = answer.proposal.id
    if isinstance(answer, Approved):
        try:
            approved = shape.approved_input(tool_name, answer.arguments)
        except ValueError as error:
            return Verdict(
                "deny", f"Not allowed: {error} (proposal {proposal_id})", None, proposal_id
            )
        who = f"approved by {answer.by}" if answer.by else "allowed by Countersign's policy"
        return Verdict(
            "allow", f"{tool_name} {who} (proposal {proposal_id})", approved, proposal_id
        )
    if isinstance(answer, Rejected):
        if answer.by is None:
            text = f"Countersign's policy does not allow {tool_name}: {answer.reason}"
        else:
            text = f"{answer.by} rejected {tool_name} in Countersign: {answer.reason}"
        return Verdict("deny", f"{text} (proposal {proposal_id})", proposal_id=proposal_id)
    if isinstance(answer, TimedOut):
        if answer.by == "expiry":
            text = f"Nobody decided on {tool_name} before the request expired in Countersign"
        else:
            text = (
                f"Nobody decided on {tool_name} in Countersign within {wait:g} s; the "
                "request was withdrawn"
            )
        return Verdict("undecided", f"{text} (proposal {proposal_id})", proposal_id=proposal_id)
    return Verdict(
        "deny",
        f"The request to use {tool_name} was withdrawn (proposal {proposal_id})",
        proposal_id=proposal_id,
    )
