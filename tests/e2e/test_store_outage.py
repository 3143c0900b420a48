"""The store really stops answering (PostgreSQL behind a proxy that is cut): nobody is told a
real proposal does not exist, clicks are answered truthfully, agents get 503 with Retry-After,
and everything goes on once the store is back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from store.lifecycle import Status
from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    REQUESTER,
    Countersign,
    eventually,
    running_countersign,
)
from tests.e2e.store_outage import StoreProxy, postgres_through_proxy
from tests.slack_requests import block_action_body

pytestmark = pytest.mark.postgres

CAMPAIGN: dict[str, Any] = {
    "operation": "crm.send_campaign",
    "request": {"segment": "churn-risk", "template": "tmpl_winback", "recipients": 1200},
    "requested_by": REQUESTER,
    "run_id": "run-outage",
}

NOTHING_CHANGED = (
    ":warning: Countersign could not record your decision just now; nothing changed. "
    "Please try again in a moment."
)


@pytest.fixture
async def outage(tmp_path: Path) -> AsyncIterator[tuple[Countersign, StoreProxy]]:
    async with (
        postgres_through_proxy() as (url, proxy),
        running_countersign(tmp_path, store_url=url) as running,
    ):
        yield running, proxy


async def _click_body(cs: Countersign, user: str, action_id: str, proposal_id: str) -> str:
    proposal = await cs.posted(proposal_id)  # read while the store answers
    return block_action_body(
        user_id=user,
        action_id=action_id,
        value=proposal_id,
        channel_id=proposal.slack_channel,
        message_ts=proposal.slack_ts,
        trigger_id=cs.slack.issue_trigger(user),
    )


def _told(cs: Countersign, user: str) -> list[str]:
    return [message.text for message in cs.slack.ephemeral(user)]


async def test_a_click_while_the_store_is_away_is_told_nothing_changed_never_unknown(
    outage: tuple[Countersign, StoreProxy],
) -> None:
    cs, proxy = outage
    status, created = await cs.submit(CAMPAIGN)
    assert status == 201, created
    body = await _click_body(cs, APPROVER, "approve", created["id"])

    await proxy.cut()
    assert await cs.post_slack(body) == 200

    async def told() -> list[str]:
        return _told(cs, APPROVER)

    assert await eventually(told) == [NOTHING_CHANGED]
    assert not any("does not exist" in text for text in _told(cs, APPROVER))

    await proxy.restore()  # nothing changed indeed; the click now works
    stored = await cs.store.get_proposal(created["id"])
    assert stored.status is Status.PENDING
    assert await cs.click(APPROVER, "approve", created["id"]) == 200
    _, final = await cs.read(created["id"], wait=10)
    assert final["status"] == "succeeded", final


async def test_agents_reading_while_the_store_is_away_get_503_with_retry_after_not_404(
    outage: tuple[Countersign, StoreProxy],
) -> None:
    cs, proxy = outage
    _, created = await cs.submit(CAMPAIGN)
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}

    await proxy.cut()
    read = await cs.request("GET", f"/v1/proposals/{created['id']}", headers=headers)
    unknown = await cs.request("GET", "/v1/proposals/cs_nothing_here", headers=headers)
    waited = await cs.request(
        "GET", f"/v1/proposals/{created['id']}", headers=headers, params={"wait": "1"}
    )

    for answer in (read, unknown, waited):
        assert answer.status == 503, answer.body
        assert int(answer.headers["Retry-After"]) > 0
        assert answer.json()["title"] == "Store unavailable"
    await proxy.restore()
    read = await cs.request("GET", f"/v1/proposals/{created['id']}", headers=headers)
    assert read.status == 200
    assert (await cs.request("GET", "/v1/proposals/cs_nothing_here", headers=headers)).status == 404
