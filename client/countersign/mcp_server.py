"""``countersign mcp``: Countersign's agent API as MCP tools, served over stdio.

Claude Code (or any MCP client) starts it as a subprocess. ``request_permission`` is Claude
Code's permission prompt tool (``claude -p --permission-prompt-tool
mcp__countersign__request_permission``): it asks on a decision operation whether the tool call may
run and answers one text block holding ``{"behavior": "allow", "updatedInput": {...}}`` (the input
exactly as approved, an approver's edit included) or ``{"behavior": "deny", "message": "..."}``.
Every failure, timeout, expiry or denial is a deny with a message; nothing fails open. The other
tools (``propose``, ``get_proposal``, ``cancel_proposal``, ``escalate``) give a model the client's
verbs; their failures are tool errors with the reason, and a proposal whose outcome is unknown
(``needs_reconciliation``) comes with a second text block saying plainly what that means.

Configured from the environment (docs/claude-code.md): ``COUNTERSIGN_URL``, ``COUNTERSIGN_TOKEN``,
``COUNTERSIGN_REQUESTED_BY``, ``COUNTERSIGN_RUN_ID``, and for the permission prompt
``COUNTERSIGN_TOOL_OPERATION``, ``COUNTERSIGN_TOOL_NAME_FIELD``, ``COUNTERSIGN_TOOL_INPUT_FIELD``
and ``COUNTERSIGN_WAIT_SECONDS``; the command's flags override them.

Needs the ``mcp`` extra: ``pip install 'countersign-client[mcp]'``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, JsonValue

from countersign.client import AsyncClient, from_environment
from countersign.errors import CountersignError, outcome_unknown_words
from countersign.tool_permission import (
    ToolCallShape,
    decide_tool_call,
    tool_call_key,
    wait_seconds_from,
)
from countersign.wire.api import ProposalOut

if TYPE_CHECKING:  # the mcp extra: imported where used, so that main() can say it is missing
    from mcp.server.mcpserver import MCPServer

__all__ = ["MISSING_EXTRA", "McpSettings", "build_server", "main", "permission_answer"]

#: What ``countersign mcp`` says, in one line, when the ``mcp`` extra is not installed.
MISSING_EXTRA: Final = (
    "countersign mcp needs the 'mcp' extra, which is not installed: "
    "pip install 'countersign-client[mcp]'"
)

#: The longest ``Retry-After`` a tool waits out before answering: past it, the tool answers the
#: refusal (which says when to retry) at once, rather than outlast Claude Code's tool timeout.
LONGEST_RETRY_AFTER: Final = 5.0

log = logging.getLogger(__name__)

_INSTRUCTIONS = (
    "Countersign asks people in Slack before an agent acts. request_permission is Claude Code's "
    "permission prompt tool. propose asks on an operation; get_proposal reads a proposal (and may "
    "wait for its decision); cancel_proposal withdraws one nobody has decided; escalate hands a "
    "conversation to people."
)


@dataclass(frozen=True, slots=True)
class McpSettings:
    """How the server asks: the tool call's shape, and the longest wait for a decision."""

    shape: ToolCallShape
    #: request_permission waits this long for people; get_proposal waits at most this long
    wait: float


def permission_answer(
    allowed: bool, *, updated_input: Mapping[str, Any] | None = None, message: str = ""
) -> str:
    """The permission prompt tool's answer, as Claude Code reads it: exactly one of the two."""
    if allowed and updated_input is not None:
        return json.dumps({"behavior": "allow", "updatedInput": dict(updated_input)})
    return json.dumps({"behavior": "deny", "message": message or "Not allowed by Countersign"})


def build_server(
    client: AsyncClient | None, settings: McpSettings, *, problem: str | None = None
) -> MCPServer:
    """The MCP server for ``client``. Without a client (``problem`` says why: the environment
    lacks the address or token), every tool answers with that problem and nothing is allowed."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("countersign", instructions=_INSTRUCTIONS)
    #: request_permission asks on the light client, in a thread: one code path with the hook
    asker = client.light() if client is not None else None

    def configured() -> AsyncClient:
        if client is None:
            raise ToolError(f"countersign mcp is not configured: {problem}")
        return client

    @server.tool(structured_output=False)
    async def request_permission(
        tool_name: str, input: dict[str, Any], tool_use_id: str | None = None
    ) -> str:
        """Claude Code's permission prompt: may the agent call tool_name with input? Answers
        {"behavior": "allow", "updatedInput": ...} only when people (or Countersign's policy)
        approved it, else {"behavior": "deny", "message": ...}."""
        if asker is None:
            return permission_answer(False, message=f"countersign mcp is not configured: {problem}")
        try:
            verdict = await asyncio.to_thread(
                decide_tool_call,
                asker,
                settings.shape,
                tool_name,
                input,
                wait=settings.wait,
                idempotency_key=tool_call_key("permission", tool_use_id),
                run_id=asker.run_id,
            )
        except Exception as error:  # never fail open, whatever went wrong
            log.exception("request_permission failed")
            return permission_answer(False, message=f"Countersign could not decide: {error!r}")
        return permission_answer(
            verdict.allowed, updated_input=verdict.updated_input, message=verdict.message
        )

    @server.tool(structured_output=False)
    async def propose(
        operation: str, request: dict[str, Any], reason: str | None = None
    ) -> list[str]:
        """Propose an operation: Countersign checks the request against the operation's schema,
        and its policy runs it, asks people in Slack or denies it. Answers the proposal (its id,
        status, preview and, once decided, its outcome). The same call made again returns the
        same proposal."""
        return await _answered(configured().propose(operation, _json(request), reason=reason))

    @server.tool(structured_output=False)
    async def get_proposal(proposal_id: str, wait_seconds: float = 0) -> list[str]:
        """Read a proposal. With wait_seconds, wait that long at most for it to be decided
        (bounded by the server's configured wait); answers it as it is then."""
        bounded = max(0.0, min(wait_seconds, settings.wait))
        reading = (
            configured().wait(proposal_id, timeout=bounded)
            if bounded > 0
            else configured().get(proposal_id)
        )
        return await _answered(reading)

    @server.tool(structured_output=False)
    async def cancel_proposal(proposal_id: str) -> list[str]:
        """Withdraw a proposal nobody has decided yet (its status becomes cancelled). One that
        is already decided cannot be withdrawn: the error names its status."""
        return await _answered(configured().cancel(proposal_id))

    @server.tool(structured_output=False)
    async def escalate(
        conversation_id: str,
        summary: dict[str, Any],
        trigger: dict[str, Any],
        customer_ref: str | None = None,
        team: str | None = None,
    ) -> list[str]:
        """Hand a conversation to people. summary: {goal, blocked_on, steps_done?,
        tool_results?}; trigger: {kind: explicit_request | repeated_failure |
        negative_sentiment | reserved_topic | low_confidence, signals: {customer_quote?,
        failed_turns?, error_codes?, sentiment_scores?, topic_labels?, confidence?,
        retrieval_hits?}}. Answers the escalation (its id and status)."""
        return await _answered(
            configured().escalate(
                conversation_id,
                summary=summary,
                trigger=trigger,
                customer_ref=customer_ref,
                team=team,
            )
        )

    return server


async def _answered(call: Any) -> list[str]:
    """A verb's answer as JSON text; Countersign's refusals and absence as tool errors. A
    proposal whose outcome is unknown is followed by what that means, in plain words: the JSON
    alone leaves a model to infer that it must not try again."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        answer: BaseModel = await call
    except CountersignError as error:
        raise ToolError(str(error)) from None
    text = [answer.model_dump_json()]
    if isinstance(answer, ProposalOut) and answer.status == "needs_reconciliation":
        detail = getattr(answer.outcome, "detail", None)
        text.append(outcome_unknown_words(answer.id, detail) + ".")
    return text


def _json(value: Mapping[str, Any]) -> dict[str, JsonValue]:
    return {str(k): v for k, v in value.items()}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags; each defaults to its environment variable."""
    parser.add_argument(
        "--operation",
        default=None,
        help="the decision operation request_permission asks on "
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
    parser.add_argument(
        "--wait",
        default=None,
        help="seconds request_permission waits for people, and get_proposal's longest wait; "
        "keep it below Claude Code's MCP_TOOL_TIMEOUT (default: $COUNTERSIGN_WAIT_SECONDS or 300)",
    )


def settings_from(args: argparse.Namespace, env: Mapping[str, str]) -> McpSettings:
    """The settings the flags and the environment give; ValueError names what is wrong."""
    shape = ToolCallShape.configured(
        env, operation=args.operation, tool_field=args.tool_field, input_field=args.input_field
    )
    if args.wait is not None:
        wait = wait_seconds_from(args.wait, name="--wait")
    else:
        wait = wait_seconds_from(
            env.get("COUNTERSIGN_WAIT_SECONDS"), name="COUNTERSIGN_WAIT_SECONDS"
        )
    return McpSettings(shape=shape, wait=wait)


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Serve MCP over stdio until the client closes the connection."""
    parser = argparse.ArgumentParser(
        prog="countersign mcp", description="Countersign's agent API as MCP tools over stdio."
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    if importlib.util.find_spec("mcp") is None:
        print(MISSING_EXTRA, file=sys.stderr)
        return 2
    env = os.environ if env is None else env
    try:
        settings = settings_from(args, env)
    except ValueError as error:
        print(f"countersign mcp: {error}", file=sys.stderr)
        return 2
    client: AsyncClient | None = None
    problem: str | None = None
    try:
        base_url, token, defaults = from_environment(env)
        client = AsyncClient(base_url, token, longest_retry_after=LONGEST_RETRY_AFTER, **defaults)
    except (CountersignError, ValueError) as error:
        # serve anyway: every tool says what is missing, and nothing is allowed
        problem = str(error)
        print(f"countersign mcp: {problem}", file=sys.stderr)

    async def serve() -> None:
        try:
            await build_server(client, settings, problem=problem).run_stdio_async()
        finally:
            if client is not None:
                await client.close()

    asyncio.run(serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
