"""The LangGraph adapter (countersign.langgraph.Reviewer, ask_people) against a running
Countersign and the local Slack: a LangChain agent with HumanInTheLoopMiddleware and a scripted
fake model; a click in Slack decides what the agent sees."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

import countersign
from countersign.langgraph import Reviewer, Verdict, approval
from tests.e2e.frameworks import (
    edit_input_and_approve,
    pending_in_slack,
    reject,
    with_tool_calls,
)
from tests.e2e.harness import AGENT_TOKEN, APPROVER, REQUESTER, Countersign, running_countersign
from tests.e2e.langgraph_agents import Tools, calls, refund_agent, tool_messages


@pytest.fixture(autouse=True)
def _no_tracing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=with_tool_calls) as running:
        yield running


@pytest.fixture
async def reviewer(cs: Countersign) -> AsyncIterator[Reviewer]:
    async with countersign.AsyncClient(
        cs.url, AGENT_TOKEN, requested_by=REQUESTER, long_poll_seconds=5
    ) as client:
        yield Reviewer(client, timeout=30)


REFUND = ("send_refund", {"order_id": "ord_7", "amount_cents": 4500})


def thread(name: str) -> Any:
    return {"configurable": {"thread_id": name}}


async def test_an_approval_in_slack_runs_the_tool_call_as_the_model_made_it(
    cs: Countersign, reviewer: Reviewer
) -> None:
    tools = Tools()
    agent = refund_agent([calls(REFUND), AIMessage("Refunded.")], tools, InMemorySaver())
    ran = asyncio.create_task(
        reviewer.run(agent, {"messages": [("user", "Refund order 7")]}, thread("t-approve"))
    )

    proposal = await pending_in_slack(cs)
    assert proposal.operation == "agent.tool_call"
    assert proposal.request == {"tool_name": "send_refund", "input": REFUND[1]}
    assert tools.refunds == []  # nothing runs while people decide
    assert await cs.click(APPROVER, "approve", proposal.id) == 200
    output = await ran

    assert tools.refunds == [REFUND[1]]
    [result] = tool_messages(output)
    assert result.content == "refunded 4500 cents on ord_7"
    assert output["messages"][-1].content == "Refunded."


async def test_a_rejection_gives_the_model_the_reason_and_runs_nothing(
    cs: Countersign, reviewer: Reviewer
) -> None:
    tools = Tools()
    agent = refund_agent(
        [calls(REFUND), AIMessage("I could not refund it.")], tools, InMemorySaver()
    )
    ran = asyncio.create_task(
        reviewer.run(agent, {"messages": [("user", "Refund order 7")]}, thread("t-reject"))
    )

    proposal = await pending_in_slack(cs)
    await reject(cs, proposal.id, "Order 7 was refunded last week")
    output = await ran

    assert tools.refunds == []
    [result] = tool_messages(output)
    assert result.status == "error"
    assert "Order 7 was refunded last week" in str(result.content)


async def test_an_approvers_edit_runs_the_edited_call(cs: Countersign, reviewer: Reviewer) -> None:
    tools = Tools()
    agent = refund_agent([calls(REFUND), AIMessage("Refunded part.")], tools, InMemorySaver())
    ran = asyncio.create_task(
        reviewer.run(agent, {"messages": [("user", "Refund order 7")]}, thread("t-edit"))
    )

    proposal = await pending_in_slack(cs)
    edited = {"order_id": "ord_7", "amount_cents": 2000}
    await edit_input_and_approve(cs, proposal.id, edited)
    output = await ran

    assert tools.refunds == [edited]  # the approved call, never the model's
    [result] = tool_messages(output)
    assert "refunded 2000 cents on ord_7" in str(result.content)
    assert "reviewer replaced this tool call" in str(result.content)  # the middleware says so


async def test_per_call_interrupts_are_answered_one_call_at_a_time(
    cs: Countersign, reviewer: Reviewer
) -> None:
    tools = Tools()
    edited = {"order_id": "ord_7", "amount_cents": 1000}
    agent = refund_agent(
        [calls(REFUND), AIMessage("Refunded part.")], tools, InMemorySaver(), mode="per_call"
    )
    ran = asyncio.create_task(
        reviewer.run(agent, {"messages": [("user", "Refund order 7")]}, thread("t-per-call"))
    )

    proposal = await pending_in_slack(cs)
    await edit_input_and_approve(cs, proposal.id, edited)
    output = await ran

    assert tools.refunds == [edited]
    [result] = tool_messages(output)
    assert "refunded 1000 cents on ord_7" in str(result.content)


async def test_each_call_of_a_turn_is_its_own_proposal_and_the_policy_may_answer_one(
    cs: Countersign, reviewer: Reviewer
) -> None:
    tools = Tools()
    turn = calls(("lookup_order", {"order_id": "ord_7"}), REFUND)
    agent = refund_agent([turn, AIMessage("Done.")], tools, InMemorySaver())
    ran = asyncio.create_task(
        reviewer.run(agent, {"messages": [("user", "Refund order 7")]}, thread("t-two"))
    )

    # the lookup runs by policy ("lookups": auto); the refund waits for a person
    proposal = await pending_in_slack(cs)
    assert proposal.request["tool_name"] == "send_refund"
    await reject(cs, proposal.id, "Not today")
    output = await ran

    assert tools.lookups == ["ord_7"]
    assert tools.refunds == []
    by_tool = {m.name: m for m in tool_messages(output)}
    lookup, refund = by_tool["lookup_order"], by_tool["send_refund"]
    assert lookup.content == "ord_7: paid 4500 cents"
    assert "Not today" in str(refund.content)
    assert await cs.proposal_count() == 2


class Deploy(TypedDict, total=False):
    verdict: Verdict
    deployed: bool


def deploy_graph() -> Any:
    """A graph of one's own whose node asks people with approval()."""

    def ask(state: Deploy) -> Deploy:
        verdict = approval("Deploy v2", "All checks passed on main.")
        return {"verdict": verdict, "deployed": verdict.approved}

    graph = StateGraph(Deploy)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph.compile(checkpointer=InMemorySaver())


async def test_a_custom_graph_asks_people_with_approval(
    cs: Countersign, reviewer: Reviewer
) -> None:
    ran = asyncio.create_task(reviewer.run(deploy_graph(), {}, thread("t-custom")))
    proposal = await pending_in_slack(cs)
    assert proposal.operation == "decision"
    assert await cs.click(APPROVER, "approve", proposal.id) == 200
    output = await ran

    verdict = output["verdict"]
    assert isinstance(verdict, Verdict)
    assert (verdict.answer, verdict.by, verdict.proposal_id) == ("approved", APPROVER, proposal.id)
    assert verdict.arguments == {"title": "Deploy v2", "detail": "All checks passed on main."}
    assert output["deployed"] is True


async def test_a_custom_graph_hears_a_rejection_with_its_reason(
    cs: Countersign, reviewer: Reviewer
) -> None:
    ran = asyncio.create_task(reviewer.run(deploy_graph(), {}, thread("t-custom-no")))
    proposal = await pending_in_slack(cs)
    await reject(cs, proposal.id, "Release freeze")
    output = await ran

    assert output["verdict"].answer == "rejected"
    assert output["verdict"].reason == "Release freeze"
    assert output["deployed"] is False
