"""What the agent-framework adapters' end-to-end tests share: a configuration with a decision
operation for tool calls, and the approver's side in the local Slack (approve, reject with a
reason, edit a call's input and have another approver approve the edit)."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from tests.e2e.harness import APPROVER, APPROVER_2, SIGNING_SECRET, Countersign, eventually
from tests.slack_requests import signed_headers, view_submission_body

TOOLS_CHANNEL = "C0TOOLS"

TOOL_CALL_CONFIG = f"""
[operations."agent.tool_call"]
kind = "decision"
description = "A tool call an agent makes itself, once approved"
risk = "reversible"

[operations."agent.tool_call".request_schema]
type = "object"
required = ["tool_name", "input"]
additionalProperties = false
properties = {{ tool_name = {{ type = "string" }}, input = {{ type = "object" }} }}

[operations."agent.tool_call".preview]
title = "Call {{tool_name}}"
fields = [{{ label = "Input", value = "{{input}}" }}]

[operations."decision"]
kind = "decision"

[[policy]]
id = "lookups"
operation = "agent.tool_call"
when = [{{ field = "tool_name", in = ["lookup_order"] }}]
decision = "auto"

[[policy]]
id = "tool-calls"
operation = "agent.tool_call"
decision = "ask"
approvers = ["finance"]
channel = "{TOOLS_CHANNEL}"
expires_after = "1h"

[[policy]]
id = "questions"
operation = "decision"
decision = "ask"
approvers = ["finance"]
channel = "{TOOLS_CHANNEL}"
expires_after = "1h"
"""


def with_tool_calls(text: str) -> str:
    """The e2e configuration with the tool-call decision operation and its rules first."""
    return text.replace("\n[[policy]]\n", textwrap.dedent(TOOL_CALL_CONFIG) + "\n[[policy]]\n", 1)


async def pending_in_slack(cs: Countersign, *, skip: frozenset[str] = frozenset()) -> Any:
    """The first pending proposal posted in the tools channel (other than ``skip``), once
    posted; its buttons carry only its id."""

    async def find() -> Any:
        for message in cs.slack.messages(TOOLS_CHANNEL):
            for block in message.blocks:
                for element in block.get("elements", ()) if block["type"] == "actions" else ():
                    if element["value"] in skip:
                        continue
                    proposal = await cs.store.get_proposal(element["value"])
                    # the message is in Slack before the store records where it is
                    if proposal.status == "pending" and proposal.slack_ts is not None:
                        return proposal
        return None

    return await eventually(find)


async def reject(cs: Countersign, proposal_id: str, reason: str) -> None:
    assert await cs.click(APPROVER, "reject", proposal_id) == 200
    assert await cs.submit_reason(APPROVER, proposal_id, reason) == 200


async def edit_input_and_approve(
    cs: Countersign, proposal_id: str, new_input: dict[str, Any]
) -> str:
    """APPROVER edits the call's input in the Edit modal; APPROVER_2 approves the edit (its
    editor may not). The edit's id."""
    before = len(cs.slack.views(APPROVER))
    assert await cs.click(APPROVER, "edit", proposal_id) == 200

    async def opened() -> Any:
        views = cs.slack.views(APPROVER)
        return views[-1].view if len(views) > before else None

    view = await eventually(opened)
    states = {}
    for block in view["blocks"]:
        if block["type"] != "input":
            continue
        element = block["element"]
        value = element.get("initial_value")
        if block["block_id"] == "request.input":
            value = json.dumps(new_input)
        states[block["block_id"]] = {
            element["action_id"]: {"type": element["type"], "value": value}
        }
    body = view_submission_body(
        user_id=APPROVER,
        callback_id=view["callback_id"],
        private_metadata=view["private_metadata"],
        values={},
        states=states,
    )
    answer = await cs.request(
        "POST", "/slack/events", data=body.encode(), headers=signed_headers(SIGNING_SECRET, body)
    )
    assert answer.status == 200, answer.body

    async def edited() -> Any:
        old = await cs.store.get_proposal(proposal_id)
        return old.superseded_by

    edit_id: str = await eventually(edited)
    await cs.posted(edit_id)
    assert await cs.click(APPROVER_2, "approve", edit_id) == 200
    return edit_id
