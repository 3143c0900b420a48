"""``countersign claude-hook``: a Claude Code PreToolUse hook that asks Countersign.

Claude Code runs the command before each tool call it matches, with the call as JSON on stdin
(``tool_name``, ``tool_input``, ``tool_use_id``, ``session_id``, ``cwd``...). The hook proposes
the call on a decision operation (by default ``coding.tool_use``, request ``{"tool_name",
"input"}``), so the policy table decides: ``auto`` for read-only tools answers at once, ``ask``
waits for people in Slack. It answers on stdout::

    {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
     "permissionDecisionReason": "...", "updatedInput": {...}}}

``allow`` only when approved (``updatedInput`` is the input as approved, an approver's edit
included); ``deny`` when rejected or denied by policy. When nobody decided within the wait, or
Countersign could not be asked, it answers ``deny``, or ``ask`` (the person at the terminal
decides) with ``--undecided ask``. It never answers ``allow`` for anything else.

Keep the wait below the hook's ``timeout`` in .claude/settings.json (600 s unless set): a hook
Claude Code stops is no answer at all, and then only Claude Code's own permission rules apply.

Claude Code starts the hook anew for every tool call, so it imports the standard library and the
light client only (no asyncio, aiohttp, pydantic or anything of the server);
tests/e2e/test_claude_hook.py fails when it imports more, and ``countersign bench`` measures it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any, Final, Literal, NamedTuple

from countersign.errors import CountersignError
from countersign.light import environment_client
from countersign.tool_permission import (
    JsonValue,
    ToolCallShape,
    Verdict,
    decide_tool_call,
    tool_call_key,
    wait_seconds_from,
)

__all__ = ["HookInput", "hook_answer", "main", "run_hook"]

Undecided = Literal["ask", "deny"]
_UNDECIDED_CHOICES: Final = ("ask", "deny")
_REASON_MAX: Final = 2000


class HookInput(NamedTuple):
    """What Claude Code sends a PreToolUse hook (fields it adds later are ignored)."""

    hook_event_name: str
    tool_name: str
    tool_input: dict[str, JsonValue]
    tool_use_id: str | None = None
    session_id: str | None = None
    cwd: str | None = None

    @classmethod
    def parse(cls, text: str) -> HookInput:
        """The call Claude Code wrote; ValueError naming the field at fault and what was
        expected."""
        try:
            document = json.loads(text)
        except ValueError as error:
            raise ValueError(
                f"stdin is not JSON ({error}); expected the hook's JSON object"
            ) from None
        if not isinstance(document, dict):
            raise ValueError(f"stdin holds a JSON {type(document).__name__}; expected an object")
        tool_input = document.get("tool_input")
        if not isinstance(tool_input, dict):
            raise ValueError(f"tool_input is {_kind(tool_input)}; expected an object")
        tool_name = _text(document, "tool_name", required=True)
        if not tool_name:
            raise ValueError("tool_name is empty; expected the tool's name")
        return cls(
            hook_event_name=_text(document, "hook_event_name", required=True) or "",
            tool_name=tool_name,
            tool_input=tool_input,
            tool_use_id=_text(document, "tool_use_id"),
            session_id=_text(document, "session_id"),
            cwd=_text(document, "cwd"),
        )


def _text(document: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = document.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} is {_kind(value)}; expected text")
    return value


def _kind(value: object) -> str:
    return "missing" if value is None else f"a JSON {type(value).__name__}"


def hook_answer(
    decision: Literal["allow", "deny", "ask"],
    reason: str,
    updated_input: Mapping[str, JsonValue] | None = None,
) -> dict[str, Any]:
    """The hook's answer as Claude Code reads it."""
    output: dict[str, Any] = {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }
    if decision == "allow" and updated_input is not None:
        output["updatedInput"] = dict(updated_input)
    return {"hookSpecificOutput": output}


def answer_for(verdict: Verdict, undecided: Undecided) -> dict[str, Any]:
    """The answer a verdict gives: allow only with the approved input."""
    if verdict.allowed and verdict.updated_input is not None:
        return hook_answer("allow", verdict.message, verdict.updated_input)
    if verdict.decision == "undecided":
        return hook_answer(undecided, verdict.message)
    return hook_answer("deny", verdict.message)


def run_hook(
    text: str,
    *,
    shape: ToolCallShape,
    wait: float,
    undecided: Undecided,
    env: Mapping[str, str],
) -> dict[str, Any]:
    """The answer to one hook call (``text`` is what Claude Code wrote on stdin)."""
    try:
        call = HookInput.parse(text)
    except ValueError as error:
        return hook_answer(undecided, f"Countersign's hook could not read the tool call: {error}")
    if call.hook_event_name != "PreToolUse":
        return hook_answer(
            "deny",
            f"countersign claude-hook answers PreToolUse, not {call.hook_event_name!r}; "
            "register it under hooks.PreToolUse",
        )
    try:
        client = environment_client(env)
    except (CountersignError, ValueError) as error:
        return hook_answer(undecided, f"countersign claude-hook is not configured: {error}")
    where = f"Claude Code in {call.cwd}" if call.cwd else "Claude Code"
    verdict = decide_tool_call(
        client,
        shape,
        call.tool_name,
        call.tool_input,
        wait=wait,
        idempotency_key=tool_call_key("hook", call.tool_use_id, call.session_id),
        run_id=client.run_id or call.session_id,
        reason=where[:_REASON_MAX],
    )
    return answer_for(verdict, undecided)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait",
        default=None,
        help="seconds to wait for people; keep it below the hook's timeout "
        "(default: $COUNTERSIGN_WAIT_SECONDS or 300)",
    )
    parser.add_argument(
        "--undecided",
        choices=_UNDECIDED_CHOICES,
        default=None,
        help="the answer when nobody decided in time or Countersign could not be asked: 'ask' "
        "lets the person at the terminal decide (default: $COUNTERSIGN_HOOK_UNDECIDED or deny)",
    )
    parser.add_argument(
        "--operation",
        default=None,
        help="the decision operation to ask on "
        "(default: $COUNTERSIGN_TOOL_OPERATION or coding.tool_use)",
    )
    parser.add_argument(
        "--tool-field",
        default=None,
        help="the request field holding the tool's name "
        "(default: $COUNTERSIGN_TOOL_NAME_FIELD or tool_name)",
    )
    parser.add_argument(
        "--input-field",
        default=None,
        help="the request field holding the tool's input, or '*' for the input's own fields "
        "(default: $COUNTERSIGN_TOOL_INPUT_FIELD or input)",
    )


def main(
    argv: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    stdin: IO[str] | None = None,
    stdout: IO[str] | None = None,
) -> int:
    """Read the hook call, answer it on stdout, exit 0 (Claude Code reads JSON only then)."""
    parser = argparse.ArgumentParser(
        prog="countersign claude-hook",
        description="A Claude Code PreToolUse hook that asks Countersign.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    env = os.environ if env is None else env
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    fallback: Undecided = "deny"
    try:
        fallback = _undecided(args.undecided or env.get("COUNTERSIGN_HOOK_UNDECIDED") or "deny")
        shape = ToolCallShape.configured(
            env, operation=args.operation, tool_field=args.tool_field, input_field=args.input_field
        )
        if args.wait is not None:
            wait = wait_seconds_from(args.wait, name="--wait")
        else:
            wait = wait_seconds_from(
                env.get("COUNTERSIGN_WAIT_SECONDS"), name="COUNTERSIGN_WAIT_SECONDS"
            )
        answer = run_hook(stdin.read(), shape=shape, wait=wait, undecided=fallback, env=env)
    except Exception as error:  # never fail open, whatever went wrong
        answer = hook_answer(fallback, f"countersign claude-hook failed: {error!r}")
    stdout.write(json.dumps(answer) + "\n")
    stdout.flush()
    return 0


def _undecided(value: str) -> Undecided:
    if value == "ask":
        return "ask"
    if value == "deny":
        return "deny"
    raise ValueError(f"COUNTERSIGN_HOOK_UNDECIDED is {value!r}; expected 'ask' or 'deny'")


if __name__ == "__main__":
    sys.exit(main())
