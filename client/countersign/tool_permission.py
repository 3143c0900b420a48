"""Permission for a coding agent's tool call, asked on a decision operation, and the verdict.

Claude Code's permission prompt tool (countersign.mcp_server) and its PreToolUse hook
(countersign.claude_hook) both ask the same thing: may the agent call this tool with this input?
:class:`ToolCallShape` says which decision operation asks it and how the tool's name and input
become that operation's request; :func:`decide_tool_call` proposes, waits within a time budget
and answers a :class:`Verdict`. It runs on the light client (countersign.light), so this module
and everything it imports is the standard library: the hook pays for nothing else.

Nothing fails open: an approval is the only way to ``allow``, and everything else (a rejection, a
denial, an expiry, the budget running out, Countersign being unreachable or refusing the request,
an approved request that no longer names the tool) is not.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

from countersign.errors import (
    CountersignError,
    OutcomeUnknown,
    ProblemError,
    Unreachable,
    when_to_retry,
)
from countersign.light import Interrupted, LightClient, StillPending
from countersign.reading import Ending, Shown, shown_of

if TYPE_CHECKING:
    from countersign.answers import Answer

JsonValue = Any  #: a JSON value (pydantic's JsonValue, without importing pydantic)

__all__ = [
    "DEFAULT_TOOL_OPERATION",
    "DEFAULT_WAIT_SECONDS",
    "SPREAD",
    "ToolCallShape",
    "Verdict",
    "decide_tool_call",
    "tool_call_key",
    "verdict_for",
    "verdict_of",
    "wait_seconds_from",
]

#: The decision operation tool calls are asked on unless configured otherwise.
DEFAULT_TOOL_OPERATION: Final = "coding.tool_use"
#: How long to wait for people by default (keep it below the caller's own time limit).
DEFAULT_WAIT_SECONDS: Final = 300.0
#: An input field name meaning: the input's own fields go at the top of the request.
SPREAD: Final = "*"


class _Shape(NamedTuple):
    operation: str
    tool_field: str
    input_field: str


# The values here are named tuples, not dataclasses: the dataclasses module imports inspect (and
# with it ast, dis and tokenize), which the hook would pay for on every tool call.
class ToolCallShape(_Shape):
    """Which decision operation a tool call is asked on, and how its request is built.

    By default the request is ``{"tool_name": ..., "input": {...}}``, so policy rules can name
    ``tool_name``. With ``input_field = "*"`` the input's own fields sit beside the tool's name
    (``{"tool_name": "Bash", "command": "make test"}``), for an operation whose schema lists them.
    """

    __slots__ = ()

    def __new__(
        cls,
        operation: str = DEFAULT_TOOL_OPERATION,
        tool_field: str = "tool_name",
        input_field: str = "input",
    ) -> ToolCallShape:
        if not operation:
            raise ValueError("operation is empty; expected a decision operation's name")
        if not tool_field or tool_field == SPREAD:
            raise ValueError(
                f"tool field {tool_field!r}: expected a request field name such as tool_name"
            )
        if input_field == tool_field or not input_field:
            raise ValueError(
                f"input field {input_field!r}: expected a request field name other than "
                f"{tool_field!r}, or {SPREAD!r} for the input's own fields"
            )
        return super().__new__(cls, operation, tool_field, input_field)

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


class Verdict(NamedTuple):
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
        return f"cs-tool-{os.urandom(16).hex()}"
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


def decide_tool_call(
    client: LightClient,
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
        came = client.ask(
            shape.operation,
            request,
            wait=wait,
            idempotency_key=idempotency_key,
            run_id=run_id,
            reason=reason,
        )
    except ProblemError as refused:
        if refused.status >= 500 or refused.status == 429:  # not now: nothing was stored
            return Verdict(
                "undecided",
                f"Countersign could not take the request to use {tool_name} just now, so nobody "
                f"was asked and it is not allowed: {refused}{when_to_retry(refused)}",
            )
        return Verdict("deny", f"Countersign refused to ask about {tool_name}: {refused}")
    except OutcomeUnknown as unknown:  # carried out by Countersign: never ask to run it again
        return Verdict(
            "deny", f"{tool_name} is not allowed: {unknown}", proposal_id=unknown.proposal_id
        )
    except Unreachable as error:
        return Verdict(
            "undecided",
            f"Countersign could not be reached, so nobody was asked and {tool_name} is not "
            f"allowed: {error}",
        )
    except CountersignError as error:
        return Verdict("undecided", f"Countersign could not decide on {tool_name}: {error}")
    if isinstance(came, Interrupted):
        return _interrupted(tool_name, came, wait)
    if isinstance(came, StillPending):
        return Verdict(
            "undecided",
            f"Nobody decided on {tool_name} in Countersign within {wait:g} s, and the request "
            f"could not be withdrawn (proposal {came.proposal_id} is still pending there); "
            "it is not allowed",
            proposal_id=came.proposal_id,
        )
    return verdict_for(shape, tool_name, came, wait)


def _interrupted(tool_name: str, came: Interrupted, wait: float) -> Verdict:
    """Countersign failed once the request was made, before anyone decided it."""
    failure = came.failure
    what = "was not reached" if isinstance(failure, Unreachable) else "answered with an error"
    if came.while_withdrawing:
        undecided = _undecided(tool_name, "deadline", came.shown, wait)
        text = (
            f"{undecided}, and Countersign {what} when the request was to be withdrawn ({failure})"
        )
    else:
        text = (
            f"Countersign {what} while {tool_name} waited for a decision ({failure}); nobody "
            "had decided it"
        )
    if came.withdrawn:
        text += (
            f". The request was withdrawn (proposal {came.proposal_id}); {tool_name} is not allowed"
        )
    else:
        text += (
            f". The request could not be withdrawn: proposal {came.proposal_id} may still be "
            f"decided in Slack, but {tool_name} is not allowed now, whatever is decided there"
        )
    return Verdict("undecided", text + when_to_retry(failure), proposal_id=came.proposal_id)


def verdict_of(shape: ToolCallShape, tool_name: str, answer: Answer, wait: float) -> Verdict:
    """The verdict the full client's answer gives for calling ``tool_name``."""
    from countersign.answers import Approved, Rejected, TimedOut

    proposal_id = answer.proposal.id
    ending: Ending
    if isinstance(answer, Approved):
        ending = Ending("approved", proposal_id, answer.arguments, answer.by)
    elif isinstance(answer, Rejected):
        ending = Ending("rejected", proposal_id, by=answer.by, reason=answer.reason)
    elif isinstance(answer, TimedOut):
        # an older server's document leaves shown_at out: unset, so it says nothing here
        shown = shown_of(answer.proposal.model_dump(mode="json", exclude_unset=True))
        kind: Literal["expired", "deadline"] = "expired" if answer.by == "expiry" else "deadline"
        ending = Ending(kind, proposal_id, shown=shown)
    else:
        ending = Ending("cancelled", proposal_id)
    return verdict_for(shape, tool_name, ending, wait)


def verdict_for(shape: ToolCallShape, tool_name: str, ending: Ending, wait: float) -> Verdict:
    """The verdict what the proposal came to gives for calling ``tool_name``."""
    proposal_id = ending.proposal_id
    if ending.kind == "approved":
        try:
            approved = shape.approved_input(tool_name, ending.arguments or {})
        except ValueError as error:
            return Verdict(
                "deny", f"Not allowed: {error} (proposal {proposal_id})", None, proposal_id
            )
        who = f"approved by {ending.by}" if ending.by else "allowed by Countersign's policy"
        return Verdict(
            "allow", f"{tool_name} {who} (proposal {proposal_id})", approved, proposal_id
        )
    if ending.kind == "rejected":
        reason = ending.reason or "no reason given"
        if ending.by is None:
            text = f"Countersign's policy does not allow {tool_name}: {reason}"
        else:
            text = f"{ending.by} rejected {tool_name} in Countersign: {reason}"
        return Verdict("deny", f"{text} (proposal {proposal_id})", proposal_id=proposal_id)
    if ending.kind in ("expired", "deadline"):
        text = _undecided(tool_name, ending.kind, ending.shown, wait)
        if ending.kind == "deadline":
            text += "; the request was withdrawn"
        return Verdict("undecided", f"{text} (proposal {proposal_id})", proposal_id=proposal_id)
    return Verdict(
        "deny",
        f"The request to use {tool_name} was withdrawn (proposal {proposal_id})",
        proposal_id=proposal_id,
    )


def _undecided(
    tool_name: str, kind: Literal["expired", "deadline"], shown: Shown | None, wait: float
) -> str:
    """Why nobody decided on ``tool_name`` before it expired or within the caller's ``wait``:
    people were asked and let it run out, or nobody had been shown it yet (its batch not gone
    out, or Slack not taking the post); a server that does not say which (older than
    ``shown_at``) gets the words that claim neither."""
    if kind == "expired":
        if shown is None:
            return f"Nobody decided on {tool_name} before the request expired in Countersign"
        if shown.at is not None:
            return (
                f"People were asked about {tool_name} in Countersign and nobody decided before "
                "the request expired"
            )
        return (
            f"Nobody was shown the request to use {tool_name} in Countersign before it expired "
            f"({_not_shown_because(shown)}), so nobody could decide"
        )
    if shown is None:
        return f"Nobody decided on {tool_name} in Countersign within {wait:g} s"
    if shown.at is not None:
        return (
            f"People were asked about {tool_name} in Countersign and nobody decided within "
            f"{wait:g} s"
        )
    return (
        f"Nobody has been shown the request to use {tool_name} in Countersign yet "
        f"({_not_shown_because(shown)}), so nobody could decide within {wait:g} s"
    )


def _not_shown_because(shown: Shown, now: datetime | None = None) -> str:
    """Why nobody has been shown a proposal: it waits for its time, or Slack has not taken it."""
    now = now or datetime.now(UTC)
    if shown.due is not None and shown.due > now:
        due = shown.due.astimezone(UTC)
        day = "" if due.date() == now.astimezone(UTC).date() else f"{due:%Y-%m-%d} "
        return f"it is scheduled to be shown at {day}{due:%H:%M:%S} UTC"
    return "Slack has not taken it yet"
