"""``countersign-mcp`` as Claude Code runs it: a subprocess spoken to over stdio with the MCP SDK's
own client, against a running Countersign; a click in the local Slack decides what the permission
prompt tool answers."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, TextContent

from bot.api.agent_requests import SUBMISSIONS
from tests.e2e.coding_agent import (
    BIN,
    TOOLS_CHANNEL,
    agent_env,
    edit_input,
    pending_tool_call,
    with_tool_use,
)
from tests.e2e.harness import APPROVER, APPROVER_2, Countersign, running_countersign
from tests.e2e.test_agent_quotas import both, limits
from tests.e2e.test_claude_hook import checkout_env

MCP = str(BIN / "countersign-mcp")
TOOLS = {"request_permission", "propose", "get_proposal", "cancel_proposal", "escalate"}


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=with_tool_use) as running:
        yield running


@asynccontextmanager
async def mcp_session(
    env: Mapping[str, str], *args: str, command: tuple[str, ...] = (MCP,)
) -> AsyncIterator[Client]:
    """``countersign-mcp`` started as a subprocess, connected the way Claude Code connects; it
    runs this checkout's code when PYTHONPATH names it."""
    server = StdioServerParameters(
        command=command[0], args=[*command[1:], *args], env={**checkout_env(), **env}
    )
    async with Client(server, mode="legacy", read_timeout_seconds=60) as client:
        yield client


def only_text(result: CallToolResult) -> str:
    """The one text block the permission prompt tool must answer."""
    assert not result.is_error, result
    [block] = result.content
    assert isinstance(block, TextContent)
    return block.text


async def permission(
    client: Client, tool_name: str, tool_input: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    result = await client.call_tool(
        "request_permission", {"tool_name": tool_name, "input": tool_input, **extra}
    )
    answer: dict[str, Any] = json.loads(only_text(result))
    if answer["behavior"] == "allow":
        assert set(answer) == {"behavior", "updatedInput"}
    else:
        assert set(answer) == {"behavior", "message"}
        assert answer["behavior"] == "deny"
    return answer


async def test_the_server_lists_the_five_tools_and_claude_codes_permission_contract(
    cs: Countersign,
) -> None:
    async with mcp_session(agent_env(cs)) as client:
        listed = await client.list_tools()

    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == TOOLS
    schema = tools["request_permission"].input_schema
    assert set(schema["properties"]) == {"tool_name", "input", "tool_use_id"}
    assert sorted(schema["required"]) == ["input", "tool_name"]


async def test_countersign_mcp_serves_the_same_tools(cs: Countersign) -> None:
    """``countersign mcp`` (the server's command line) hands over to the MCP server itself."""
    command = (str(BIN / "countersign"), "mcp")
    async with mcp_session(agent_env(cs), command=command) as client:
        listed = await client.list_tools()

    assert {tool.name for tool in listed.tools} == TOOLS


async def test_a_read_only_tool_is_allowed_at_once_by_policy(cs: Countersign) -> None:
    grep = {"pattern": "def refund", "path": "/home/dev/shop"}
    async with mcp_session(agent_env(cs)) as client:
        answer = await permission(client, "Grep", grep, tool_use_id="toolu_grep1")

    assert answer == {"behavior": "allow", "updatedInput": grep}


async def test_a_click_on_approve_allows_the_input_as_asked(cs: Countersign) -> None:
    bash = {"command": "make test", "description": "Run the tests"}
    async with mcp_session(agent_env(cs)) as client:
        asked = asyncio.create_task(permission(client, "Bash", bash, tool_use_id="toolu_b1"))
        proposal = await pending_tool_call(cs, "Bash")
        message = cs.slack.message(TOOLS_CHANNEL, proposal.slack_ts)
        assert "Claude Code wants to use Bash" in json.dumps(message.blocks)
        assert not asked.done()
        assert await cs.click(APPROVER, "approve", proposal.id) == 200
        answer = await asked

    assert answer == {"behavior": "allow", "updatedInput": bash}


async def test_an_approvers_edit_is_the_updated_input(cs: Countersign) -> None:
    asked_input = {"command": "git push --force origin feature"}
    edited = {"command": "git push origin feature"}
    async with mcp_session(agent_env(cs)) as client:
        asked = asyncio.create_task(permission(client, "Bash", asked_input))
        proposal = await pending_tool_call(cs, "Bash")
        edit = await edit_input(cs, APPROVER, proposal.id, edited)
        await cs.posted(edit.id)
        assert await cs.click(APPROVER_2, "approve", edit.id) == 200
        answer = await asked

    assert answer == {"behavior": "allow", "updatedInput": edited}


async def test_a_rejection_denies_with_the_approvers_reason(cs: Countersign) -> None:
    async with mcp_session(agent_env(cs)) as client:
        asked = asyncio.create_task(permission(client, "Bash", {"command": "rm -rf /tmp/x"}))
        proposal = await pending_tool_call(cs, "Bash")
        assert await cs.click(APPROVER, "reject", proposal.id) == 200
        assert await cs.submit_reason(APPROVER, proposal.id, "Not on the shared runner") == 200
        answer = await asked

    assert answer["behavior"] == "deny"
    assert "Not on the shared runner" in answer["message"]
    assert APPROVER in answer["message"]


async def test_a_policy_denial_denies(cs: Countersign) -> None:
    async with mcp_session(agent_env(cs)) as client:
        answer = await permission(client, "WebFetch", {"url": "https://example.com"})

    assert answer["behavior"] == "deny"
    assert "This agent does not reach the network." in answer["message"]


async def test_an_expired_request_denies(cs: Countersign) -> None:
    async with mcp_session(agent_env(cs)) as client:
        asked = asyncio.create_task(permission(client, "Write", {"file_path": "/x", "content": ""}))
        await pending_tool_call(cs, "Write")
        cs.clock.advance(timedelta(hours=2))
        answer = await asked

    assert answer["behavior"] == "deny"
    assert "expired" in answer["message"]


async def test_nobody_deciding_within_the_wait_denies(cs: Countersign) -> None:
    async with mcp_session(agent_env(cs), "--wait", "1") as client:
        answer = await permission(
            client, "Edit", {"file_path": "/x", "old_string": "a", "new_string": "b"}
        )

    assert answer["behavior"] == "deny"
    # posted at once: people were asked (its shown_at), and nobody decided
    assert "People were asked about Edit in Countersign and nobody decided" in answer["message"]
    assert "the request was withdrawn" in answer["message"]
    proposal_id = re.search(r"proposal (cs_\w+)", answer["message"])
    assert proposal_id is not None, answer
    stored = await cs.store.get_proposal(proposal_id.group(1))
    assert stored.status == "cancelled" and stored.shown_at is not None


async def test_a_wait_that_ends_before_slack_takes_the_post_says_nobody_was_shown_it(
    cs: Countersign,
) -> None:
    cs.slack.fail_next("chat.postMessage", status=429, retry_after=30, times=5)
    async with mcp_session(agent_env(cs), "--wait", "1") as client:
        answer = await permission(
            client, "Edit", {"file_path": "/y", "old_string": "a", "new_string": "b"}
        )

    assert answer["behavior"] == "deny"
    assert (
        "Nobody has been shown the request to use Edit in Countersign yet (Slack has not taken "
        "it yet)" in answer["message"]
    )
    assert "People were asked" not in answer["message"]


async def test_cancel_proposal_withdraws_a_pending_proposal_once(cs: Countersign) -> None:
    write = {"tool_name": "Write", "input": {"file_path": "/y", "content": "z"}}
    async with mcp_session(agent_env(cs)) as client:
        proposed = json.loads(
            only_text(
                await client.call_tool(
                    "propose", {"operation": "coding.tool_use", "request": write}
                )
            )
        )
        await cs.posted(proposed["id"])
        cancelled = json.loads(
            only_text(await client.call_tool("cancel_proposal", {"proposal_id": proposed["id"]}))
        )
        again = json.loads(
            only_text(await client.call_tool("cancel_proposal", {"proposal_id": proposed["id"]}))
        )

    assert cancelled["status"] == again["status"] == "cancelled"
    events = [e.event for e in await cs.store.audit_log(proposed["id"])]
    assert events.count("cancelled") == 1


async def test_propose_at_the_agents_pending_limit_answers_the_refusal_at_once_with_when_to_retry(
    tmp_path: Path,
) -> None:
    """A 429 asking for 30 s is not waited out inside the tool call (three times, past Claude
    Code's tool timeout): the model is told the limit and when to retry, and nothing is stored."""
    edit = both(with_tool_use, limits(max_pending_proposals=1))
    write = {"tool_name": "Write", "input": {"file_path": "/x", "content": "y"}}
    async with (
        running_countersign(tmp_path, config_edit=edit) as cs,
        mcp_session(agent_env(cs)) as client,
    ):
        first = await client.call_tool(
            "propose", {"operation": "coding.tool_use", "request": write}
        )
        assert not first.is_error, first
        started = time.monotonic()

        second = await client.call_tool(
            "propose", {"operation": "coding.tool_use", "request": {**write, "tool_name": "Edit"}}
        )

        assert time.monotonic() - started < 10
        assert await cs.proposal_count() == 1
    assert second.is_error
    [block] = second.content
    assert isinstance(block, TextContent)
    assert "limits.max_pending_proposals" in block.text
    assert "Retry after 30 s" in block.text


async def test_countersign_unreachable_denies() -> None:
    async with mcp_session(agent_env(None)) as client:
        answer = await permission(client, "Bash", {"command": "ls"}, tool_use_id="toolu_down")

    assert answer["behavior"] == "deny"
    assert "could not be reached" in answer["message"]


async def test_a_server_started_without_its_address_and_token_denies_saying_so() -> None:
    async with mcp_session({}) as client:
        answer = await permission(client, "Read", {"file_path": "/etc/hosts"})
        proposed = await client.call_tool("propose", {"operation": "decision", "request": {}})

    assert answer["behavior"] == "deny"
    assert "COUNTERSIGN_URL and COUNTERSIGN_TOKEN not set" in answer["message"]
    assert proposed.is_error


async def test_propose_get_and_escalate_speak_the_agent_api(cs: Countersign) -> None:
    write = {"tool_name": "Write", "input": {"file_path": "/x", "content": "y"}}
    async with mcp_session(agent_env(cs)) as client:
        proposed = json.loads(
            only_text(
                await client.call_tool(
                    "propose", {"operation": "coding.tool_use", "request": write, "reason": "A fix"}
                )
            )
        )
        assert proposed["status"] == "pending"
        waiting = asyncio.create_task(
            client.call_tool("get_proposal", {"proposal_id": proposed["id"], "wait_seconds": 30})
        )
        await cs.posted(proposed["id"])
        assert await cs.click(APPROVER, "approve", proposed["id"]) == 200
        decided = json.loads(only_text(await waiting))
        refused = await client.call_tool(
            "propose", {"operation": "coding.tool_use", "request": {"tool_name": "Write"}}
        )
        cancelled = await client.call_tool("cancel_proposal", {"proposal_id": proposed["id"]})
        escalated = json.loads(
            only_text(
                await client.call_tool(
                    "escalate",
                    {
                        "conversation_id": "conv-42",
                        "summary": {"goal": "A refund", "blocked_on": "The order is not found"},
                        "trigger": {
                            "kind": "explicit_request",
                            "signals": {"customer_quote": "I want to talk to a person"},
                        },
                    },
                )
            )
        )

    assert decided["status"] == "succeeded"
    assert decided["outcome"]["result"]["arguments"] == write
    assert refused.is_error  # the operation's schema wants an input: the problem says so
    assert "input" in json.dumps(refused.model_dump(mode="json"))
    assert cancelled.is_error  # decided already: never withdrawn, and the error says so
    assert "HTTP 409" in json.dumps(cancelled.model_dump(mode="json"))
    assert "'succeeded'" in json.dumps(cancelled.model_dump(mode="json"))
    assert escalated["conversation_id"] == "conv-42"


async def test_an_unknown_outcome_is_told_plainly_as_maybe_done_not_to_be_retried(
    cs: Countersign,
) -> None:
    """The target is called and does not answer within the operation's timeout: the proposal
    needs reconciliation, and the model reads beside the JSON that the effect may have happened,
    that it must not retry it, and that a person must find out."""
    cs.target.delay = 4.0  # past the operation's timeout_seconds = 2, after being called
    tags = {"segment": "churn-risk", "tag": "winback", "customers": 40}  # a rule runs it at once
    async with mcp_session(agent_env(cs)) as client:
        submitted = await client.call_tool(
            "propose", {"operation": "crm.tag_customers", "request": tags}
        )
        assert not submitted.is_error, submitted
        assert isinstance(submitted.content[0], TextContent)
        proposed = json.loads(submitted.content[0].text)  # the document comes first
        read = await client.call_tool(
            "get_proposal", {"proposal_id": proposed["id"], "wait_seconds": 30}
        )

    assert not read.is_error, read
    document, words = read.content
    assert isinstance(document, TextContent)
    assert isinstance(words, TextContent)
    assert json.loads(document.text)["status"] == "needs_reconciliation"
    assert len(cs.target.taggings()) == 1  # it was called: the effect may have happened
    assert "The effect may have happened" in words.text
    assert "Do NOT retry it" in words.text
    assert "a person must find out" in words.text
    assert proposed["id"] in words.text


async def test_propose_at_capacity_tells_the_model_how_many_seconds_to_wait(
    cs: Countersign,
) -> None:
    """Countersign at capacity answers 503 Busy with Retry-After: 1; the model reads the tool's
    error, never the header, so the error's words name the seconds."""
    write = {"tool_name": "Write", "input": {"file_path": "/x", "content": "y"}}
    admission = cs.app[SUBMISSIONS]
    admission.limit = 1
    async with mcp_session(agent_env(cs)) as client:
        with admission.slot():  # capacity taken by work in flight, for the whole call
            result = await client.call_tool(
                "propose", {"operation": "coding.tool_use", "request": write}
            )

    assert result.is_error
    [block] = result.content
    assert isinstance(block, TextContent)
    assert "at capacity; nothing was stored" in block.text
    assert "Retry after 1 s" in block.text
    assert await cs.proposal_count() == 0
