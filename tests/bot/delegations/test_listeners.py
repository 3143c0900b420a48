"""The Revoke button of a delegation, clicked in a channel (bot/delegations/listeners.py)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.render.actions import REVOKE_DELEGATION
from tests.e2e.harness import APPROVER, REQUESTER, Countersign, eventually, running_countersign
from tests.e2e.test_requester_identity import campaign, delegate
from tests.slack_requests import block_action_body

CHANNEL = "C0DELEGATIONS"


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    settings = {"support-bot": {"acts_for": [REQUESTER], "delegation": True}}
    async with running_countersign(tmp_path, agent_settings=settings) as running:
        yield running


async def test_revoke_clicked_in_a_channel_revokes_and_answers_the_clicker_there(
    cs: Countersign,
) -> None:
    token, delegation_id = await delegate(cs, APPROVER)
    body = block_action_body(
        user_id=APPROVER,
        action_id=REVOKE_DELEGATION,
        value=delegation_id,
        channel_id=CHANNEL,
        message_ts="1700000000.000100",
        block_id=f"delegation-{delegation_id}",
    )

    assert await cs.post_slack(body) == 200

    async def told() -> Any:
        calls = cs.slack.calls("chat.postEphemeral")
        return [c.args for c in calls if c.args.get("channel") == CHANNEL] or None

    [answer] = await eventually(told)
    assert answer["user"] == APPROVER
    assert "revoked" in answer["text"]
    refused = await cs.request(
        "POST",
        "/v1/proposals",
        data=json.dumps(campaign(None, run="after")).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert refused.status == 401
