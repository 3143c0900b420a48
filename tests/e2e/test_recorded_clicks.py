"""A click is never turned away: an Approve click is recorded durably when it arrives (its
clicker told so when it is not applied within a second), then applied in order, through the
same checks as ever, exactly once, a restart in between included. Every click here is a signed
block_actions payload sent over HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.app import DECISIONS
from store.proposals import Status
from tests.e2e.harness import (
    APPROVER,
    OUTSIDER,
    REQUESTER,
    Countersign,
    eventually,
    running_countersign,
)

POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
RECORDED = "is recorded; it is being checked and run now"
REFUSED = ":no_entry_sign: Countersign did not do that"


def campaign(n: int) -> dict[str, Any]:
    """A campaign the policy asks finance about (one approval runs it)."""
    return {
        "operation": "crm.send_campaign",
        "request": {"segment": f"segment-{n}", "template": "tmpl_winback", "recipients": 10 + n},
        "requested_by": REQUESTER,
        "run_id": f"run-{n}",
    }


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path) as running:
        yield running


async def _posted_campaigns(cs: Countersign, count: int, start: int = 0) -> list[str]:
    ids = []
    for n in range(start, start + count):
        status, created = await cs.submit(campaign(n))
        assert status == 201, created
        await cs.posted(created["id"])
        ids.append(created["id"])
    return ids


def _told(cs: Countersign, user: str) -> list[str]:
    return [message.text for message in cs.slack.ephemeral(user)]


async def _approved_entries(cs: Countersign, proposal_id: str) -> list[str]:
    return [e.event for e in await cs.store.audit_log(proposal_id) if "approv" in e.event]


async def test_a_burst_of_approve_clicks_is_never_told_busy_and_every_click_is_applied(
    tmp_path: Path,
) -> None:
    """The bound on clicks worked on at once no longer turns an Approve click away: with it
    at 1, a burst of clicks sent at once is recorded and every one applied."""
    async with running_countersign(tmp_path, config_edit=_one_click_at_a_time) as cs:
        await _burst_of_approvals(cs)


def _one_click_at_a_time(text: str) -> str:
    return text.replace("[server]\n", "[server]\nmax_in_flight_clicks = 1\n", 1)


async def _burst_of_approvals(cs: Countersign) -> None:
    ids = await _posted_campaigns(cs, 40)

    statuses = await asyncio.gather(*(cs.click(APPROVER, "approve", i) for i in ids))

    assert statuses == [200] * len(ids)

    async def all_succeeded() -> bool:
        stored = [await cs.store.get_proposal(i) for i in ids]
        return all(p.status is Status.SUCCEEDED for p in stored)

    await eventually(all_succeeded, timeout=30)
    await cs.settled()
    told = _told(cs, APPROVER)
    # applied within a second, a click's answer is its message; past that (a backlog), the
    # clicker is told it is recorded: never busy, never anything else
    assert all(RECORDED in text for text in told), told
    assert len(told) == len(set(told)) <= len(ids)
    assert len(cs.target.executions()) == len(ids)
    assert await cs.store.clicks().waiting_clicks() == 0
    for i in ids:
        assert await _approved_entries(cs, i) == ["approved"]


async def test_a_click_recorded_before_a_restart_is_applied_after_it_once(
    tmp_path: Path,
) -> None:
    async with running_countersign(tmp_path) as first:
        [proposal_id] = await _posted_campaigns(first, 1)
        await first.app[DECISIONS].stop()  # the instance stops applying (it is going down)
        assert await first.click(APPROVER, "approve", proposal_id) == 200

        await eventually(lambda: _async(any(RECORDED in t for t in _told(first, APPROVER))))
        assert (await first.store.get_proposal(proposal_id)).status is Status.PENDING
        assert await first.store.clicks().waiting_clicks() == 1
        assert first.target.executions() == []

    async with running_countersign(tmp_path) as second:  # the same database, started again
        _, final = await second.read(proposal_id, wait=10)
        assert final["status"] == "succeeded", final
        await second.settled()
        assert len(second.target.executions()) == 1
        assert await second.store.clicks().waiting_clicks() == 0
        assert await _approved_entries(second, proposal_id) == ["approved"]


async def test_a_click_applied_but_not_settled_is_not_applied_again(cs: Countersign) -> None:
    """An applier that stopped after applying a click and before settling it leaves it to be
    leased again: the approval it finds there is the click's own, so nothing happens twice
    (no second approval, no refusal told or audited)."""
    [proposal_id] = await _posted_campaigns(cs, 1)
    recorded = await cs.store.clicks().record_click(
        proposal_id, actor=APPROVER, verb="approve", channel=None, now=cs.clock()
    )
    assert recorded is not None
    click = recorded[0]
    decisions = cs.app[DECISIONS]
    await decisions.stop()
    await decisions.apply(click)  # applied (and settled)
    _, final = await cs.read(proposal_id, wait=10)
    assert final["status"] == "succeeded"

    await decisions.apply(click)  # leased again after a crash before the settle

    await cs.settled()
    assert await _approved_entries(cs, proposal_id) == ["approved"]
    assert [e.event for e in await cs.store.audit_log(proposal_id) if "refused" in e.event] == []
    assert len(cs.target.executions()) == 1
    assert not any("already" in text for text in _told(cs, APPROVER))


async def test_a_refused_check_when_applied_tells_the_clicker_the_truth(cs: Countersign) -> None:
    """Role and separation of duties are checked when the click is applied: the clicker was
    told why it was refused (after "recorded" when that took over a second); the proposal
    waits."""
    outsider, own = await _posted_campaigns(cs, 2)

    assert await cs.click(OUTSIDER, "approve", outsider) == 200
    assert await cs.click(REQUESTER, "approve", own) == 200
    for user in (OUTSIDER, REQUESTER):  # a click is worked on after Slack's acknowledgement
        await eventually(lambda u=user: _async(any(REFUSED in t for t in _told(cs, u))))
    await cs.settled()

    for user, proposal_id in ((OUTSIDER, outsider), (REQUESTER, own)):
        messages = _told(cs, user)  # "recorded" too only when applied after a second
        [told] = [text for text in messages if text.startswith(REFUSED)]
        assert all(RECORDED in text for text in messages if text != told), messages
        assert (await cs.store.get_proposal(proposal_id)).status is Status.PENDING
        refused = [e for e in await cs.store.audit_log(proposal_id) if e.event == "approve_refused"]
        assert [e.actor for e in refused] == [user]
        assert str(refused[0].detail["reason"]) in told
    assert cs.target.executions() == []


async def test_a_click_on_a_decided_proposal_is_told_who_decided_and_not_recorded(
    cs: Countersign,
) -> None:
    [proposal_id] = await _posted_campaigns(cs, 1)
    assert await cs.submit_reason(APPROVER, proposal_id, "not this month") == 200
    await eventually(lambda: _status_is(cs, proposal_id, Status.REJECTED))
    await cs.settled()  # the rejection, a recorded click too, is settled

    assert await cs.click(APPROVER, "approve", proposal_id) == 200

    told = await eventually(lambda: _async(_told(cs, APPROVER)))
    assert not any(RECORDED in text for text in told)
    assert await cs.store.clicks().waiting_clicks() == 0
    assert cs.target.executions() == []


async def _status_is(cs: Countersign, proposal_id: str, status: Status) -> bool:
    return (await cs.store.get_proposal(proposal_id)).status is status


async def _async(value: Any) -> Any:
    return value


@pytest.mark.postgres
async def test_clicks_recorded_on_a_stopped_instance_are_applied_once_by_the_others(
    tmp_path: Path, postgres_url: str
) -> None:
    """Two instances on one PostgreSQL database: clicks recorded by one that stopped applying
    (as it does when it goes down) are applied by the other, each once."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    async with (
        running_countersign(tmp_path / "a", store_url=postgres_url) as first,
        running_countersign(tmp_path / "b", store_url=postgres_url) as second,
    ):
        await second.app[DECISIONS].stop()  # the second takes clicks but does not apply them
        ids = []
        for n in range(6):
            status, created = await second.submit(campaign(n))
            assert status == 201, created
            ids.append(created["id"])
        for proposal_id in ids:
            await second.posted(proposal_id)
            assert await second.click(APPROVER, "approve", proposal_id) == 200

        async def all_succeeded() -> bool:
            stored = [await first.store.get_proposal(i) for i in ids]
            return all(p.status is Status.SUCCEEDED for p in stored)

        await eventually(all_succeeded, timeout=30)
        await eventually(lambda: _waiting_is(first, 0))  # settled just after it is applied
        executed = first.target.executions() + second.target.executions()
        assert len(executed) == len(ids)
        for proposal_id in ids:
            assert await _approved_entries(first, proposal_id) == ["approved"]


@pytest.mark.postgres
async def test_a_click_another_instance_applies_within_a_second_is_told_its_outcome_once(
    tmp_path: Path, postgres_url: str
) -> None:
    """The instance that took a click waits a second for it to be applied before saying it is
    recorded; when another instance applied it meanwhile (here: refused it and told why), the
    clicker is not told afterwards that it is still being checked: one answer, the truth."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    async with (
        running_countersign(tmp_path / "a", store_url=postgres_url) as first,
        running_countersign(tmp_path / "b", store_url=postgres_url) as second,
    ):
        for instance in (first, second):  # the test leases and applies the click itself
            await instance.app[DECISIONS].stop()
        status, created = await second.submit(campaign(0))
        assert status == 201, created
        proposal_id = created["id"]
        await second.posted(proposal_id)
        proposal = await second.store.get_proposal(proposal_id)

        recording = asyncio.create_task(
            second.app[DECISIONS].record(proposal_id, user=OUTSIDER, channel=proposal.slack_channel)
        )
        await eventually(lambda: _waiting_is(first, 1))
        [click] = await first.store.clicks().claim_clicks(
            now=datetime.now(UTC), limit=1, lease=timedelta(seconds=60)
        )
        await first.app[DECISIONS].apply(click)  # refused: the outsider holds no role
        await recording  # the second instance's second is over

        told = _told(first, OUTSIDER) + _told(second, OUTSIDER)
        assert len(told) == 1 and REFUSED in told[0], told
        assert not any(RECORDED in text for text in told), told
        assert await first.store.clicks().waiting_clicks() == 0
        assert (await first.store.get_proposal(proposal_id)).status is Status.PENDING


async def _waiting_is(cs: Countersign, count: int) -> bool:
    return await cs.store.clicks().waiting_clicks() == count
