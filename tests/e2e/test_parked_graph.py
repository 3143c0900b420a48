"""Park, don't poll (countersign.langgraph.ParkedGraph, countersign.callbacks): the graph stops
at the interrupt with its checkpoint in a SQLite file and nothing waits in a process; a click in
Slack makes Countersign call back; the receiver resumes the thread from the checkpoint, with
another graph object, exactly once."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from langchain_core.messages import AIMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

import countersign
from countersign.callbacks import CallbackReceiver, SqliteJournal
from countersign.langgraph import ParkedGraph
from tests.e2e.frameworks import edit_input_and_approve, reject, with_tool_calls
from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    REQUESTER,
    Countersign,
    eventually,
    running_countersign,
)
from tests.e2e.langgraph_agents import Tools, calls, refund_agent, tool_messages

REFUND = ("send_refund", {"order_id": "ord_7", "amount_cents": 4500})
CONFIG: Any = {"configurable": {"thread_id": "refund-7"}}


@pytest.fixture(autouse=True)
def _no_tracing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield


@dataclass
class Receiving:
    """The agent's callback receiver, served on its own port, recording what reached it."""

    receiver: CallbackReceiver
    url: str
    delivered: list[tuple[dict[str, str], bytes, int]] = field(default_factory=list)


@asynccontextmanager
async def receiving(db: Path) -> AsyncIterator[Receiving]:
    receiver = CallbackReceiver(AGENT_TOKEN, SqliteJournal(db))
    app = receiver.aiohttp_app()
    seen: list[tuple[dict[str, str], bytes, int]] = []

    @web.middleware
    async def record(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        body = await request.read()
        response = await handler(request)
        seen.append((dict(request.headers), body, response.status))
        return response

    app.middlewares.append(record)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield Receiving(receiver, str(server.make_url("")).rstrip("/"), seen)
    finally:
        await server.close()


@dataclass
class World:
    cs: Countersign
    receiving: Receiving
    db: Path
    client: countersign.AsyncClient

    @property
    def callback_url(self) -> str:
        return self.receiving.receiver.url_for(self.receiving.url, "langgraph")


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    db = tmp_path / "agent.sqlite"  # the checkpoints, the parked runs and the handled callbacks
    async with (
        receiving(db) as hooks,
        running_countersign(
            tmp_path,
            config_edit=with_tool_calls,
            agent_settings={"support-bot": {"callback_url_prefixes": [hooks.url]}},
        ) as cs,
        countersign.AsyncClient(cs.url, AGENT_TOKEN, requested_by=REQUESTER) as client,
    ):
        yield World(cs, hooks, db, client)


async def delivered(world: World, count: int) -> list[tuple[dict[str, str], bytes, int]]:
    """The callbacks the receiver answered, once there are ``count`` of them."""

    async def enough() -> Any:
        seen = world.receiving.delivered
        return seen if len(seen) >= count else None

    found: list[tuple[dict[str, str], bytes, int]] = await eventually(enough)
    return found


async def park_a_refund(world: World, tools: Tools) -> str:
    """The first process: run the agent until it parks at the refund; drop everything it held.
    The parked proposal's id."""
    async with AsyncSqliteSaver.from_conn_string(str(world.db)) as saver:
        agent = refund_agent([calls(REFUND)], tools, saver)
        parked = ParkedGraph(agent, world.client, parking=world.db, callback_url=world.callback_url)
        run = await parked.start({"messages": [("user", "Refund order 7")]}, CONFIG)
        assert run.parked
        [proposal_id] = run.proposals
        assert tools.refunds == []
        del agent, parked
    gc.collect()
    return proposal_id


@dataclass
class Resumer:
    """The second process: another graph object on the same files, behind the receiver."""

    parked: ParkedGraph
    finished: asyncio.Event
    outputs: list[Any]


@asynccontextmanager
async def resumer(world: World, tools: Tools, script: list[AIMessage]) -> AsyncIterator[Resumer]:
    finished = asyncio.Event()
    outputs: list[Any] = []

    async def on_finished(thread: str, output: Any) -> None:
        outputs.append((thread, output))
        finished.set()

    async with AsyncSqliteSaver.from_conn_string(str(world.db)) as saver:
        parked = ParkedGraph(
            refund_agent(script, tools, saver),
            world.client,
            parking=world.db,
            callback_url=world.callback_url,
            on_finished=on_finished,
        )
        world.receiving.receiver.register("langgraph", parked.handle)
        yield Resumer(parked, finished, outputs)


async def test_a_parked_run_resumes_from_its_checkpoint_when_the_callback_arrives(
    world: World,
) -> None:
    tools = Tools()
    proposal_id = await park_a_refund(world, tools)

    async with resumer(world, tools, [AIMessage("Refunded.")]) as second:
        await world.cs.posted(proposal_id)
        assert await world.cs.click(APPROVER, "approve", proposal_id) == 200
        await asyncio.wait_for(second.finished.wait(), 20)

        assert tools.refunds == [REFUND[1]]
        [(thread, output)] = second.outputs
        assert thread == "refund-7"
        assert output["messages"][-1].content == "Refunded."
        [result] = tool_messages(output)
        assert result.content == "refunded 4500 cents on ord_7"
        state = await second.parked.graph.aget_state(CONFIG)
        assert state.interrupts == ()
        checkpoint = state.config["configurable"]["checkpoint_id"]

        # The same callback again, as Countersign sent it: handled before, nothing resumes.
        [(headers, body, status)] = await delivered(world, 1)
        assert status == 200
        async with world.cs.http.post(world.callback_url, data=body, headers=headers) as again:
            assert again.status == 200
            assert "handled before" in await again.text()
        # Even handed to the graph directly, an interrupt already resumed resumes nothing.
        await second.parked.handle(countersign.verify_callback(headers, body, AGENT_TOKEN))

        assert tools.refunds == [REFUND[1]]
        latest = await second.parked.graph.aget_state(CONFIG)
        assert latest.config["configurable"]["checkpoint_id"] == checkpoint


async def test_a_rejection_told_by_callback_reaches_the_model(world: World) -> None:
    tools = Tools()
    proposal_id = await park_a_refund(world, tools)

    async with resumer(world, tools, [AIMessage("I could not refund it.")]) as second:
        await world.cs.posted(proposal_id)
        await reject(world.cs, proposal_id, "Refunded last week")
        await asyncio.wait_for(second.finished.wait(), 20)

    assert tools.refunds == []
    [(_, output)] = second.outputs
    [result] = tool_messages(output)
    assert "Refunded last week" in str(result.content)


async def test_an_edit_told_by_callback_runs_the_edited_call(world: World) -> None:
    tools = Tools()
    proposal_id = await park_a_refund(world, tools)

    async with resumer(world, tools, [AIMessage("Refunded part.")]) as second:
        await world.cs.posted(proposal_id)
        edited = {"order_id": "ord_7", "amount_cents": 1500}
        await edit_input_and_approve(world.cs, proposal_id, edited)
        await asyncio.wait_for(second.finished.wait(), 20)

    # the superseded proposal's callback and the edit's both arrived; the edit was run, once
    assert tools.refunds == [edited]
    assert [status for _, _, status in await delivered(world, 2)] == [200, 200]


async def test_a_callback_for_a_proposal_nobody_parked_is_asked_again_later(world: World) -> None:
    """A callback can come before its proposal is recorded (a policy decided it at once):
    Countersign is asked to send it again instead of being told it was handled."""
    tools = Tools()
    async with resumer(world, tools, []):
        other = await world.client.propose(
            "decision",
            {"title": "Not parked", "detail": "Nobody parked this."},
            callback_url=world.callback_url,
        )
        await world.cs.posted(other.id)
        await world.cs.click(APPROVER, "approve", other.id)
        [(_, _, status), *_] = await delivered(world, 1)
    assert status == 503
