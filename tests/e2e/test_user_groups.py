"""Roles may name Slack user groups; their members are read from Slack at click time."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.app import DECISIONS
from bot.slack.local import LocalUser
from tests.e2e.harness import (
    APPROVER,
    FINANCE_GROUP,
    REQUESTER,
    SIGNING_SECRET,
    Countersign,
    eventually,
    running_countersign,
)
from tests.slack_requests import (
    signed_headers,
    subteam_members_changed_body,
    subteam_updated_body,
    user_change_body,
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


async def _told(cs: Countersign, body: str) -> None:
    """Slack's event ``body``, signed, to Countersign: acknowledged."""
    headers = signed_headers(SIGNING_SECRET, body, content_type="application/json")
    assert await cs.post_slack(body, headers) == 200


async def _approved_once_then_clicks_again(
    cs: Countersign, caplog: pytest.LogCaptureFixture, change: Callable[[], Awaitable[None]]
) -> str:
    """GROUPIE approves one campaign (its membership is then cached), ``change`` happens in
    Slack and Slack says so, then GROUPIE clicks Approve on a second: its id."""
    caplog.set_level(logging.DEBUG, logger="bot.slack.directory")
    _, first = await cs.submit(CAMPAIGN)
    await cs.click(GROUPIE, "approve", first["id"])
    _, done = await cs.read(first["id"], wait=10)
    assert done["status"] == "succeeded"
    _, second = await cs.submit({**CAMPAIGN, "request": {**CAMPAIGN["request"], "segment": "q1"}})
    await cs.posted(second["id"])

    await change()
    await eventually(_async(lambda: "read again at the next check" in caplog.text))
    await cs.click(GROUPIE, "approve", second["id"])
    return str(second["id"])


def _async(check: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def checked() -> bool:
        return check()

    return checked


async def test_someone_removed_from_the_group_cannot_approve_once_slack_says_so(
    cs: Countersign, caplog: pytest.LogCaptureFixture
) -> None:
    """The attacker: removed from the approvers' user group, they click Approve at once, within
    the minute their membership would have stayed cached. Slack's subteam_members_changed
    makes Countersign read the group again: refused."""
    cs.slack.set_usergroup(FINANCE_GROUP, [GROUPIE])

    async def removed() -> None:
        cs.slack.set_usergroup(FINANCE_GROUP, [])
        await _told(cs, subteam_members_changed_body(FINANCE_GROUP, removed=[GROUPIE]))

    proposal_id = await _approved_once_then_clicks_again(cs, caplog, removed)

    refusal = await eventually(lambda: _ephemeral_for(cs, GROUPIE))
    assert "needs the role finance" in refusal.text
    assert (await cs.store.get_proposal(proposal_id)).status == "pending"


async def test_a_group_slack_says_was_updated_is_read_again(
    cs: Countersign, caplog: pytest.LogCaptureFixture
) -> None:
    """subteam_updated (the group as it now is) makes Countersign read it again too; the
    event's own member list is not taken on trust: Slack's answer at the click is."""
    cs.slack.set_usergroup(FINANCE_GROUP, [GROUPIE])

    async def updated() -> None:
        cs.slack.set_usergroup(FINANCE_GROUP, [])
        # a stale event that still lists GROUPIE: only "read it again" is taken from it
        await _told(cs, subteam_updated_body(FINANCE_GROUP, [GROUPIE]))

    proposal_id = await _approved_once_then_clicks_again(cs, caplog, updated)

    refusal = await eventually(lambda: _ephemeral_for(cs, GROUPIE))
    assert "needs the role finance" in refusal.text
    assert (await cs.store.get_proposal(proposal_id)).status == "pending"


async def test_a_person_slack_says_was_deactivated_cannot_approve(
    cs: Countersign, caplog: pytest.LogCaptureFixture
) -> None:
    """user_change: a deactivated account's profile is read again at its next click, not
    taken from the cache, and the deactivated account is refused."""
    cs.slack.set_usergroup(FINANCE_GROUP, [GROUPIE])

    async def deactivated() -> None:
        cs.slack.add_user(LocalUser(id=GROUPIE, deleted=True))
        await _told(cs, user_change_body(LocalUser(id=GROUPIE, deleted=True).to_api("T0001")))

    proposal_id = await _approved_once_then_clicks_again(cs, caplog, deactivated)

    await eventually(lambda: _ephemeral_for(cs, GROUPIE))
    assert (await cs.store.get_proposal(proposal_id)).status == "pending"


@pytest.mark.postgres
async def test_every_instance_reads_a_group_again_when_slack_tells_one_of_them(
    tmp_path: Path, postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Two instances on one PostgreSQL database. Slack sends its event to one of them (the
    first), and the person removed from the group clicks on the other, which applies its
    own clicks and had their membership cached: it was told through the database, and
    refuses."""
    caplog.set_level(logging.DEBUG, logger="bot.slack.directory")
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    async with (
        running_countersign(tmp_path / "a", store_url=postgres_url) as first,
        running_countersign(tmp_path / "b", store_url=postgres_url) as second,
    ):
        await first.app[DECISIONS].stop()  # the second applies every click
        for instance in (first, second):
            instance.slack.set_usergroup(FINANCE_GROUP, [GROUPIE])
        _, earlier = await second.submit(CAMPAIGN)
        await second.click(GROUPIE, "approve", earlier["id"])
        _, done = await second.read(earlier["id"], wait=10)
        assert done["status"] == "succeeded"  # the second has GROUPIE's membership cached
        _, later = await second.submit(
            {**CAMPAIGN, "request": {**CAMPAIGN["request"], "segment": "q1"}}
        )
        await second.posted(later["id"])

        for instance in (first, second):
            instance.slack.set_usergroup(FINANCE_GROUP, [])
        await _told(first, subteam_members_changed_body(FINANCE_GROUP, removed=[GROUPIE]))
        said = f"group {FINANCE_GROUP} changed: read again"
        # the first forgets, then each instance hears the database's announcement
        await eventually(_async(lambda: caplog.text.count(said) >= 3))
        await second.click(GROUPIE, "approve", later["id"])

        refusal = await eventually(lambda: _ephemeral_for(second, GROUPIE))
        assert "needs the role finance" in refusal.text
        assert (await second.store.get_proposal(later["id"])).status == "pending"
