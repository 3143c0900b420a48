"""An agent withdraws its proposal (``POST /v1/proposals/{id}/cancel``) against a running
Countersign and the local Slack: the message shows the withdrawal in place of its buttons, later
clicks change nothing, and a withdrawal racing an approval leaves exactly one of them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    CAMPAIGN_CHANNEL,
    OTHER_AGENT_TOKEN,
    REQUESTER,
    Answer,
    Countersign,
    eventually,
    running_countersign,
)

CAMPAIGN = {
    "operation": "crm.send_campaign",
    "request": {"segment": "churn-risk", "template": "tmpl_winback", "recipients": 1200},
    "requested_by": REQUESTER,
    "reason": "These customers have not logged in for 60 days.",
}


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path) as running:
        yield running


async def cancel(cs: Countersign, proposal_id: str, token: str = AGENT_TOKEN) -> Answer:
    return await cs.request(
        "POST",
        f"/v1/proposals/{proposal_id}/cancel",
        headers={"Authorization": f"Bearer {token}"},
    )


async def posted_campaign(cs: Countersign, **changes: Any) -> str:
    """A campaign proposal waiting in its channel; its id."""
    status, created = await cs.submit({**CAMPAIGN, **changes})
    assert status == 201, created
    await cs.posted(created["id"])
    return str(created["id"])


def actions(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [block for block in blocks if block["type"] == "actions"]


async def later(delay: float, call: Awaitable[Answer]) -> Answer:
    """``call``, after ``delay`` seconds (a click takes a while: the race is run by turns)."""
    await asyncio.sleep(delay)
    return await call


async def told(cs: Countersign, user: str, count: int) -> Any:
    """The ``count``-th private answer ``user`` was given, once it was."""

    async def check() -> Any:
        found = cs.slack.ephemeral(user)
        return found[count - 1] if len(found) >= count else None

    return await eventually(check)


async def test_the_agent_withdraws_its_proposal_and_the_message_and_audit_say_so(
    cs: Countersign,
) -> None:
    received: list[dict[str, Any]] = []

    async def hook(request: web.Request) -> web.Response:
        received.append(json.loads(await request.read()))
        return web.Response(status=204)

    proposal_id = await posted_campaign(cs, callback_url=cs.agent_hook("withdrawn", hook))
    ts = (await cs.store.get_proposal(proposal_id)).slack_ts
    assert ts is not None
    assert actions(cs.slack.message(CAMPAIGN_CHANNEL, ts).blocks)

    answer = await cancel(cs, proposal_id)

    assert answer.status == 200
    body = answer.json()
    assert (body["status"], body["final"]) == ("cancelled", True)
    assert body["decision"] == {"by": None, "at": body["decision"]["at"], "reason": None}
    assert body["decision"]["at"] is not None
    await cs.settled()
    message = cs.slack.message(CAMPAIGN_CHANNEL, ts)
    assert actions(message.blocks) == []
    shown = json.dumps(message.blocks)
    assert "Withdrawn by the agent" in shown
    assert "nothing was executed" in shown
    assert message.text.startswith("Withdrawn by the agent")
    assert cs.slack.replies(CAMPAIGN_CHANNEL, ts) == []
    [entry] = [e for e in await cs.store.audit_log(proposal_id) if e.event == "cancelled"]
    assert entry.actor == "support-bot"
    [callback] = await eventually(lambda: asyncio.sleep(0, received))
    assert (callback["id"], callback["status"]) == (proposal_id, "cancelled")
    _, read = await cs.read(proposal_id)
    assert read["status"] == "cancelled"


async def test_withdrawing_again_answers_the_same_and_audits_once(cs: Countersign) -> None:
    proposal_id = await posted_campaign(cs)

    first = await cancel(cs, proposal_id)
    await cs.settled()
    updates = len(cs.slack.calls("chat.update"))
    again = await cancel(cs, proposal_id)
    await cs.settled()

    assert (first.status, again.status) == (200, 200)
    assert again.json() == first.json()
    events = [e.event for e in await cs.store.audit_log(proposal_id)]
    assert events.count("cancelled") == 1
    assert len(cs.slack.calls("chat.update")) == updates


async def test_a_decided_proposal_is_not_withdrawn_and_the_409_names_its_status(
    cs: Countersign,
) -> None:
    proposal_id = await posted_campaign(cs)
    assert await cs.click(APPROVER, "approve", proposal_id) == 200
    _, decided = await cs.read(proposal_id, wait=10)
    assert decided["status"] == "succeeded"

    answer = await cancel(cs, proposal_id)

    assert answer.status == 409
    assert answer.headers["Content-Type"] == "application/problem+json"
    problem = answer.json()
    assert problem["status"] == 409
    assert "'succeeded'" in problem["detail"]
    assert problem["errors"] == [
        {"field": "status", "message": "is 'succeeded'; expected 'pending'"}
    ]
    assert (await cs.store.get_proposal(proposal_id)).status == "succeeded"
    assert "cancelled" not in [e.event for e in await cs.store.audit_log(proposal_id)]


async def test_another_agent_gets_404_and_the_proposal_stays_pending(cs: Countersign) -> None:
    proposal_id = await posted_campaign(cs)

    other = await cancel(cs, proposal_id, token=OTHER_AGENT_TOKEN)
    unknown = await cancel(cs, "cs_nothing_here")
    anonymous = await cs.request("POST", f"/v1/proposals/{proposal_id}/cancel")

    assert other.status == 404
    assert (
        other.json()["detail"] == (await cs.read(proposal_id, token=OTHER_AGENT_TOKEN))[1]["detail"]
    )
    assert unknown.status == 404
    assert anonymous.status == 401
    assert (await cs.store.get_proposal(proposal_id)).status == "pending"
    assert "cancelled" not in [e.event for e in await cs.store.audit_log(proposal_id)]


async def test_a_click_after_the_withdrawal_changes_nothing_and_is_told_and_audited(
    cs: Countersign,
) -> None:
    proposal_id = await posted_campaign(cs)
    assert (await cancel(cs, proposal_id)).status == 200
    await cs.settled()

    assert await cs.click(APPROVER, "approve", proposal_id) == 200
    answer = await told(cs, APPROVER, 1)
    assert await cs.click(APPROVER, "reject", proposal_id) == 200
    await told(cs, APPROVER, 2)

    assert "the agent withdrew this proposal" in answer.text
    assert (await cs.store.get_proposal(proposal_id)).status == "cancelled"
    assert cs.target.executions() == []
    assert cs.slack.views(APPROVER) == []  # no reason modal was opened
    events = [(e.event, e.actor) for e in await cs.store.audit_log(proposal_id)]
    assert ("approve_refused", APPROVER) in events
    assert ("reject_refused", APPROVER) in events


async def test_a_withdrawal_racing_a_click_leaves_exactly_one_and_tells_the_loser(
    cs: Countersign,
) -> None:
    outcomes = []
    for round_ in range(16):
        proposal_id = await posted_campaign(cs, run_id=f"race-{round_}")
        clicks_before = len(cs.slack.ephemeral(APPROVER))
        executions_before = len(cs.target.executions())

        _, answer = await asyncio.gather(
            cs.click(APPROVER, "approve", proposal_id),
            later(round_ * 0.002, cancel(cs, proposal_id)),
        )
        _, final = await cs.read(proposal_id, wait=10)
        await cs.settled()

        events = [e.event for e in await cs.store.audit_log(proposal_id)]
        executions = len(cs.target.executions()) - executions_before
        if final["status"] == "cancelled":
            assert answer.status == 200
            assert executions == 0
            assert "approved" not in events
            loser = await told(cs, APPROVER, clicks_before + 1)
            assert "withdrew" in loser.text
        else:
            assert final["status"] == "succeeded"
            assert answer.status == 409
            assert answer.json()["detail"].endswith("only a pending proposal can be withdrawn")
            assert executions == 1
            assert "cancelled" not in events
        assert events.count("approved") + events.count("cancelled") == 1
        outcomes.append(final["status"])
    # from no head start to 30 ms: the withdrawal wins the first rounds, the click the last
    assert set(outcomes) == {"cancelled", "succeeded"}, outcomes
    assert (await cs.store.verify_audit()).ok
