"""What the Claude Code tests share: a coding agent's decision operation and policy on the running
Countersign, the agent-side commands' environment, and the approver's clicks and edits."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.e2e.harness import (
    AGENT_TOKEN,
    REQUESTER,
    SIGNING_SECRET,
    Answer,
    Countersign,
    eventually,
)
from tests.slack_requests import signed_headers, view_submission_body

TOOLS_CHANNEL = "C0AGENTTOOLS"
#: where the agent-side commands are installed (next to the interpreter running the tests)
BIN = Path(sys.executable).parent

TOOL_USE_CONFIG = f"""
[operations."coding.tool_use"]
kind = "decision"
description = "A Claude Code tool call, which the agent runs itself once approved"
risk = "reversible"

[operations."coding.tool_use".request_schema]
type = "object"
required = ["tool_name", "input"]
properties = {{ tool_name = {{ type = "string", minLength = 1 }}, input = {{ type = "object" }} }}

[operations."coding.tool_use".preview]
title = "Claude Code wants to use {{tool_name}}"
fields = [{{ label = "Input", value = "{{input}}" }}]

[[policy]]
id = "read-only-tools"
operation = "coding.tool_use"
when = [{{ field = "tool_name", in = ["Read", "Grep", "Glob"] }}]
decision = "auto"

[[policy]]
id = "network"
operation = "coding.tool_use"
when = [{{ field = "tool_name", eq = "WebFetch" }}]
decision = "deny"
reason = "This agent does not reach the network."

[[policy]]
id = "other-tools"
operation = "coding.tool_use"
decision = "ask"
approvers = ["finance"]
channel = "{TOOLS_CHANNEL}"
expires_after = "1h"
"""


def with_tool_use(text: str) -> str:
    """The harness's configuration with the coding agent's operation and rules first."""
    return text.replace("\n[[policy]]\n", textwrap.dedent(TOOL_USE_CONFIG) + "\n[[policy]]\n", 1)


def agent_env(cs: Countersign | None, **extra: str) -> dict[str, str]:
    """The environment of an agent-side command talking to ``cs`` (None: nothing listens)."""
    url = cs.url if cs is not None else "http://127.0.0.1:9"
    return {
        "COUNTERSIGN_URL": url,
        "COUNTERSIGN_TOKEN": AGENT_TOKEN,
        "COUNTERSIGN_REQUESTED_BY": REQUESTER,
        **extra,
    }


async def pending_tool_call(cs: Countersign, tool_name: str) -> Any:
    """The pending proposal for ``tool_name`` once its message is in the tools channel."""

    async def find() -> Any:
        for message in cs.slack.messages(TOOLS_CHANNEL):
            for block in message.blocks:
                for element in block.get("elements", ()) if block["type"] == "actions" else ():
                    proposal = await cs.store.get_proposal(element["value"])
                    if (  # (the message is in Slack before the store records where it is)
                        proposal.status == "pending"
                        and proposal.arguments.get("tool_name") == tool_name
                        and proposal.slack_ts is not None
                    ):
                        return proposal
        return None

    return await eventually(find)


async def edit_input(
    cs: Countersign, user: str, proposal_id: str, new_input: dict[str, Any]
) -> Any:
    """``user`` clicks Edit and submits the modal with ``new_input`` as the tool's input; returns
    the stored edit (a new proposal that superseded ``proposal_id``)."""
    before = len(cs.slack.views(user))
    assert await cs.click(user, "edit", proposal_id) == 200

    async def opened() -> Any:
        views = cs.slack.views(user)
        return views[-1].view if len(views) > before else None

    view = await eventually(opened)
    states: dict[str, Any] = {}
    for block in view["blocks"]:
        if block["type"] != "input":
            continue
        element = block["element"]
        if block["block_id"] == "request.input":
            state = {"type": element["type"], "value": json.dumps(new_input)}
        else:
            state = {"type": element["type"], "value": element.get("initial_value")}
        states[block["block_id"]] = {element["action_id"]: state}
    assert "request.input" in states, [b.get("block_id") for b in view["blocks"]]
    body = view_submission_body(
        user_id=user,
        callback_id=view["callback_id"],
        private_metadata=view["private_metadata"],
        values={},
        states=states,
    )
    answer: Answer = await cs.request(
        "POST", "/slack/events", data=body.encode(), headers=signed_headers(SIGNING_SECRET, body)
    )
    assert answer.status == 200, answer.body

    async def superseded() -> Any:
        old = await cs.store.get_proposal(proposal_id)
        return old.superseded_by and await cs.store.get_proposal(old.superseded_by)

    return await eventually(superseded)
