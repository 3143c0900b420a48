"""Click-time checks that read the clicker's Slack profile: bots, deactivated accounts, guests,
people from another workspace and the agent's owners are refused, audited, and nothing runs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.slack.local import LocalUser
from tests.e2e.harness import (
    APPROVER,
    APPROVER_2,
    REQUESTER,
    Countersign,
    eventually,
    running_countersign,
)

CAMPAIGN: dict[str, Any] = {
    "operation": "crm.send_campaign",
    "request": {"segment": "beta", "template": "tmpl_hi", "recipients": 12},
    "requested_by": REQUESTER,
}


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    # APPROVER_2 holds the finance role but owns the agent that asks
    owners = {"support-bot": {"owners": [APPROVER_2]}}
    async with running_countersign(tmp_path, agent_settings=owners) as running:
        yield running


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        (LocalUser(id=APPROVER, is_bot=True), "bots and apps"),
        (LocalUser(id=APPROVER, deleted=True), "deactivated"),
        (LocalUser(id=APPROVER, is_restricted=True), "guests"),
        (LocalUser(id=APPROVER, is_ultra_restricted=True), "guests"),
        (LocalUser(id=APPROVER, team_id="T0ELSEWHERE"), "another workspace"),
    ],
)
async def test_a_role_holder_slack_says_may_not_decide_is_refused(
    cs: Countersign, profile: LocalUser, expected: str
) -> None:
    cs.slack.add_user(profile)
    _, created = await cs.submit(CAMPAIGN)
    await cs.posted(created["id"])

    await cs.click(APPROVER, "approve", created["id"])

    refusal = await eventually(lambda: _ephemeral_for(cs, APPROVER))
    assert expected in refusal.text
    await _nothing_happened(cs, created["id"], APPROVER)


async def test_the_agents_owner_cannot_approve_its_proposals(cs: Countersign) -> None:
    _, created = await cs.submit(CAMPAIGN)
    await cs.posted(created["id"])

    await cs.click(APPROVER_2, "approve", created["id"])

    refusal = await eventually(lambda: _ephemeral_for(cs, APPROVER_2))
    assert "own the agent" in refusal.text
    await _nothing_happened(cs, created["id"], APPROVER_2)


async def test_a_clicker_slack_cannot_tell_about_is_refused(cs: Countersign) -> None:
    _, created = await cs.submit(CAMPAIGN)
    await cs.posted(created["id"])
    cs.slack.fail_next("users.info", status=200, error="user_not_found", times=5)

    await cs.click(APPROVER, "approve", created["id"])

    refusal = await eventually(lambda: _ephemeral_for(cs, APPROVER))
    assert "could not check who you are" in refusal.text
    await _nothing_happened(cs, created["id"], APPROVER)


async def _nothing_happened(cs: Countersign, proposal_id: str, user: str) -> None:
    assert (await cs.store.get_proposal(proposal_id)).status == "pending"
    assert cs.target.executions() == []
    refused = [e for e in await cs.store.audit_log(proposal_id) if e.event == "approve_refused"]
    assert [e.actor for e in refused] == [user]


async def _ephemeral_for(cs: Countersign, user: str) -> Any:
    found = cs.slack.ephemeral(user)
    return found[-1] if found else None
