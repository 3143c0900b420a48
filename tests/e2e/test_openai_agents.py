"""The OpenAI Agents SDK adapter (countersign.openai_agents.ToolApprovals) against a running
Countersign and the local Slack: an agent whose tool needs approval, driven by the SDK's own
ScriptedModel (no network); a click in Slack decides what the run sees."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

import countersign
from countersign.openai_agents import ToolApprovals
from tests.e2e.frameworks import (
    edit_input_and_approve,
    pending_in_slack,
    reject,
    with_tool_calls,
)
from tests.e2e.harness import AGENT_TOKEN, APPROVER, REQUESTER, Countersign, running_countersign

#: no traces exported anywhere
OFFLINE = RunConfig(tracing_disabled=True)


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_AGENTS_DISABLE_TRACING"):
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=with_tool_calls) as running:
        yield running


@pytest.fixture
async def approvals(cs: Countersign) -> AsyncIterator[ToolApprovals]:
    async with countersign.AsyncClient(
        cs.url, AGENT_TOKEN, requested_by=REQUESTER, long_poll_seconds=5
    ) as client:
        yield ToolApprovals(client, timeout=30, run_id="refund-run")


class Shop:
    """The agent's tools, recording what actually ran."""

    def __init__(self) -> None:
        self.refunds: list[dict[str, Any]] = []

    def agent(self, model: ScriptedModel) -> Agent[Any]:
        @function_tool(needs_approval=True)
        def send_refund(order_id: str, amount_cents: int) -> str:
            """Refund part of an order to the customer."""
            self.refunds.append({"order_id": order_id, "amount_cents": amount_cents})
            return f"refunded {amount_cents} cents on {order_id}"

        @function_tool
        def lookup_order(order_id: str) -> str:
            """Read an order."""
            return f"{order_id}: paid 4500 cents"

        return Agent(
            name="refunds",
            instructions="Refund what the customer asks for.",
            model=model,
            tools=[send_refund, lookup_order],
        )


REFUND = {"order_id": "ord_7", "amount_cents": 4500}


def outputs_seen(model: ScriptedModel) -> list[str]:
    """The tool outputs the model was given on its last turn."""
    last = model.last_call
    assert last is not None
    return [
        str(item.get("output"))
        for item in last.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


async def test_an_approval_in_slack_runs_the_tool_and_the_run_finishes(
    cs: Countersign, approvals: ToolApprovals
) -> None:
    shop = Shop()
    model = ScriptedModel(
        [[function_call("send_refund", REFUND, call_id="call_1")], [assistant_message("Done.")]]
    )
    ran = asyncio.create_task(
        approvals.run(shop.agent(model), "Refund order 7", run_config=OFFLINE)
    )

    proposal = await pending_in_slack(cs)
    assert proposal.operation == "agent.tool_call"
    assert proposal.request == {"tool_name": "send_refund", "input": REFUND}
    assert shop.refunds == []
    assert await cs.click(APPROVER, "approve", proposal.id) == 200
    result = await ran

    assert shop.refunds == [REFUND]
    assert result.final_output == "Done."
    assert outputs_seen(model) == ["refunded 4500 cents on ord_7"]


async def test_a_rejection_gives_the_model_the_reason(
    cs: Countersign, approvals: ToolApprovals
) -> None:
    shop = Shop()
    model = ScriptedModel(
        [
            [function_call("send_refund", REFUND, call_id="call_1")],
            [assistant_message("I could not refund it.")],
        ]
    )
    ran = asyncio.create_task(
        approvals.run(shop.agent(model), "Refund order 7", run_config=OFFLINE)
    )

    proposal = await pending_in_slack(cs)
    await reject(cs, proposal.id, "Refunded last week")
    result = await ran

    assert shop.refunds == []
    assert result.final_output == "I could not refund it."
    [told] = outputs_seen(model)
    assert "Refunded last week" in told


async def test_an_approvers_edit_is_told_to_the_model_and_runs_when_made_as_approved(
    cs: Countersign, approvals: ToolApprovals
) -> None:
    edited = {"order_id": "ord_7", "amount_cents": 2000}
    shop = Shop()
    model = ScriptedModel(
        [
            [function_call("send_refund", REFUND, call_id="call_1")],
            # the model makes the call the approver approved
            [function_call("send_refund", edited, call_id="call_2")],
            [assistant_message("Refunded 20.00.")],
        ]
    )
    ran = asyncio.create_task(
        approvals.run(shop.agent(model), "Refund order 7", run_config=OFFLINE)
    )

    proposal = await pending_in_slack(cs)
    await edit_input_and_approve(cs, proposal.id, edited)
    result = await ran

    assert shop.refunds == [edited]  # the model's own call never ran
    assert result.final_output == "Refunded 20.00."
    first_turn_told = model.calls[1].input
    told = [
        str(item.get("output"))
        for item in first_turn_told
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    assert any(json.dumps(edited, sort_keys=True) in text for text in told)
    assert await cs.proposal_count() == 2  # the call and its edit; the approved call asked nothing


async def test_a_tool_without_approval_runs_without_asking(
    cs: Countersign, approvals: ToolApprovals
) -> None:
    shop = Shop()
    model = ScriptedModel(
        [
            [function_call("lookup_order", {"order_id": "ord_7"}, call_id="call_1")],
            [assistant_message("It was paid.")],
        ]
    )
    result = await approvals.run(shop.agent(model), "Was order 7 paid?", run_config=OFFLINE)

    assert result.final_output == "It was paid."
    assert await cs.proposal_count() == 0
