"""The flow wakes the outbox worker after a transition that wrote something for it to deliver,
and leaves it asleep after one that wrote nothing (an automatic approval with no channel,
callback or review): its next poll would find anything written anyway."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.bench.stage import AGENT, OPERATION, REQUESTER, SECRET_ENV, TOKEN_ENV, config_text
from bot.flow.service import Service
from bot.settings import load_settings
from contracts.api import SubmitBody
from contracts.base import HttpResponse
from store.proposals import Proposal, Status
from store.sqlite import SqliteStore
from tests.bot.flow.ports import Nobody

ENV = {TOKEN_ENV: "agent-token-0123456789abcdef", SECRET_ENV: "webhook-secret-0123456789"}


class Target:
    """The webhook's target: answers every execution with success."""

    def __init__(self) -> None:
        self.calls = 0

    async def post(
        self, url: str, *, body: bytes, headers: Mapping[str, str], timeout: float
    ) -> HttpResponse:
        self.calls += 1
        return HttpResponse(status=200, body=b'{"ok": true}', headers={})


class Flow:
    def __init__(self, service: Service, wakes: list[str], target: Target) -> None:
        self.service, self.wakes, self.target = service, wakes, target


@pytest.fixture
async def flow(tmp_path: Path) -> AsyncIterator[Flow]:
    config = tmp_path / "countersign.toml"
    config.write_text(config_text(f"sqlite:///{tmp_path / 'cs.db'}", "http://target.test"))
    settings = load_settings(config, ENV)
    store = await SqliteStore.open(tmp_path / "cs.db")
    wakes: list[str] = []
    target, nobody = Target(), Nobody()
    service = Service(
        settings=settings,
        store=store,
        publisher=nobody,  # type: ignore[arg-type]
        http=target,
        clock=lambda: datetime.now(UTC),
        wake_outbox=lambda: wakes.append("woken"),
        directory=nobody,  # type: ignore[arg-type]
        waiters=nobody,
    )
    try:
        yield Flow(service, wakes, target)
    finally:
        await store.close()


async def _submit(flow: Flow, lane: str, **more: object) -> Proposal:
    agent = flow.service.settings.agents[AGENT]
    body = SubmitBody.model_validate(
        {"operation": OPERATION, "request": {"lane": lane, "n": 1}, "requested_by": REQUESTER}
        | more
    )
    return (await flow.service.submit(agent, body, None)).proposal


async def test_an_automatic_approval_with_nothing_to_deliver_leaves_the_outbox_asleep(
    flow: Flow,
) -> None:
    proposal = await _submit(flow, "auto")

    assert proposal.status is Status.SUCCEEDED
    assert flow.target.calls == 1
    assert flow.wakes == []
    assert await flow.service.store.pending_deliveries() == 0


async def test_a_proposal_that_asks_wakes_the_outbox_for_its_post(flow: Flow) -> None:
    proposal = await _submit(flow, "ingest")

    assert proposal.status is Status.PENDING
    assert flow.wakes == ["woken"]
    assert await flow.service.store.pending_deliveries() == 1
