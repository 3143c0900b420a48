"""Roles may name Slack user groups; their members are read from Slack at click time."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import (
    APPROVER,
    FINANCE_GROUP,
    REQUESTER,
    Countersign,
    eventually,
    running_countersign,
)

GROUPIE = "U0GROUPIE"  #: in the finance role only through the user group
CAMPAIGN: dict[str, Any] = {
    "operation": "crm.send_campaign",
    "request": {"segment": "q4", "template": "tmpl_q", "recipients": 5},
    "requested_by": REQUESTER,
}


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path) as running:
        yield running


async def test_a_member_of_a_user_group_in_the_role_may_approve(cs: Countersign) -> None:
    cs.slack.set_usergroup(FINANCE_GROUP, [GROUPIE])
    _, created = await cs.submit(CAMPAIGN)
    await cs.posted(created["id"])

    await cs.click(GROUPIE, "approve", created["id"])

    _, final = await cs.read(created["id"], wait=10)
    assert final["status"] == "succeeded"
    assert final["decision"]["by"] == GROUPIE
    assert cs.slack.calls("usergroups.users.list")


async def test_someone_outside_the_group_is_refused(cs: Countersign) -> None:
    cs.slack.set_usergroup(FINANCE_GROUP, ["U0SOMEONEELSE"])
    _, created = await cs.submit(CAMPAIGN)
    await cs.posted(created["id"])

    await cs.click(GROUPIE, "approve", created["id"])

    refusal = await eventually(lambda: _ephemeral_for(cs, GROUPIE))
    assert "needs the role finance" in refusal.text
    assert (await cs.store.get_proposal(created["id"])).status == "pending"


async def test_without_user_groups_on_the_plan_startup_says_so_and_user_ids_still_work(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="bot.app")
    async with running_countersign(tmp_path, usergroups_allowed=False) as cs:
        warnings = [r.getMessage() for r in caplog.records if r.name == "bot.app"]
        assert any(
            FINANCE_GROUP in w and "plan has no user groups" in w and "user ids" in w
            for w in warnings
        ), warnings
        _, created = await cs.submit(CAMPAIGN)
        await cs.posted(created["id"])

        await cs.click(GROUPIE, "approve", created["id"])  # only a group could make them finance
        await eventually(lambda: _ephemeral_for(cs, GROUPIE))
        await cs.click(APPROVER, "approve", created["id"])  # listed by id: still works
        _, final = await cs.read(created["id"], wait=10)
        assert final["status"] == "succeeded"


async def _ephemeral_for(cs: Countersign, user: str) -> Any:
    found = cs.slack.ephemeral(user)
    return found[-1] if found else None
