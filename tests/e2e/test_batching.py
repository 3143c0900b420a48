"""Batching windows over HTTP: proposals of a rule with ``batch`` wait, unseen, until the window
closes or the batch fills, then go out as one digest; the agent is told when (``shown_after``),
and nothing it sends moves its proposal into another batch, shortens another's window or skips
the wait but ``urgent``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.digests.outbox import DIGEST_EVENT
from tests.e2e.harness import (
    APPROVER,
    APPROVER_2,
    CAMPAIGN_CHANNEL,
    OTHER_AGENT_TOKEN,
    REFUNDS_CHANNEL,
    REQUESTER,
    Countersign,
    eventually,
    replace_rule,
    running_countersign,
)

WINDOW = timedelta(minutes=10)


def batched_campaigns(window: str = "10m", most: int = 5) -> Callable[[str], str]:
    return replace_rule(
        "campaigns",
        f"""
        [[policy]]
        id = "campaigns"
        operation = "crm.send_campaign"
        decision = "ask"
        approvers = ["finance"]
        channel = "{CAMPAIGN_CHANNEL}"
        expires_after = "30m"
        batch = {{ window = "{window}", max = {most} }}
        """,
    )


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=batched_campaigns()) as running:
        yield running


def campaign(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "operation": "crm.send_campaign",
        "request": {"segment": f"segment-{n}", "template": "tmpl_winback", "recipients": 100 + n},
        "requested_by": REQUESTER,
        "run_id": f"run-{n}",
        **extra,
    }


async def submit(cs: Countersign, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    status, answer = await cs.submit(body, **kwargs)
    assert status == 201, answer
    return answer


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def top_level(cs: Countersign, channel: str = CAMPAIGN_CHANNEL) -> list[Any]:
    return [m for m in cs.slack.messages(channel) if not m.is_reply]


async def shown(cs: Countersign, ids: list[str]) -> list[Any]:
    async def check() -> Any:
        proposals = [await cs.store.get_proposal(i) for i in ids]
        return proposals if all(p.slack_ts for p in proposals) else None

    return list(await eventually(check))


# --- the window -------------------------------------------------------------------------------


async def test_proposals_wait_for_the_window_then_go_out_as_one_digest(cs: Countersign) -> None:
    answers = [await submit(cs, campaign(n)) for n in range(3)]

    for answer in answers:  # the agent is told when people see it, and its expiry follows
        created, shown_after = at(answer["created_at"]), at(answer["shown_after"])
        assert answer["status"] == "pending"
        assert created < shown_after <= created + WINDOW
        assert at(answer["expires_at"]) == shown_after + timedelta(minutes=30)
    first = at(answers[0]["shown_after"])
    assert {at(a["shown_after"]) for a in answers} == {first}  # one batch, one moment
    await cs.settled()
    assert top_level(cs) == []  # held: nothing posted yet

    cs.clock.advance(WINDOW)
    proposals = await shown(cs, [a["id"] for a in answers])

    [message] = top_level(cs)
    assert message.metadata is not None and message.metadata["event_type"] == DIGEST_EVENT
    assert {p.digest_id for p in proposals} == {message.metadata["event_payload"]["digest_id"]}
    digest = await cs.store.digests().get_digest(message.metadata["event_payload"]["digest_id"])
    assert digest.batch_id is not None and len(digest.items) == 3


async def test_a_full_batch_goes_out_at_once(tmp_path: Path) -> None:
    async with running_countersign(tmp_path, config_edit=batched_campaigns(most=3)) as cs:
        answers = [await submit(cs, campaign(n)) for n in range(3)]

        proposals = await shown(cs, [a["id"] for a in answers])  # no clock moved

        assert len({p.digest_id for p in proposals}) == 1
        assert len(top_level(cs)) == 1
        # the next proposal opens a new batch with a window of its own
        later = await submit(cs, campaign(3))
        assert at(later["shown_after"]) > at(answers[0]["shown_after"])
        await cs.settled()
        assert (await cs.store.get_proposal(later["id"])).slack_ts is None


async def test_the_expiry_and_reminder_count_from_when_people_see_it(cs: Countersign) -> None:
    answer = await submit(cs, campaign(1))
    proposal = await cs.store.get_proposal(answer["id"])

    assert proposal.shown_after is not None and proposal.expires_at is not None
    assert proposal.expires_at - proposal.shown_after == timedelta(minutes=30)
    assert proposal.remind_at == proposal.shown_after + timedelta(minutes=24)  # 80% of 30m
    cs.clock.advance(timedelta(minutes=30))  # later than it would expire counted from creation
    await cs.settled()
    assert (await cs.store.get_proposal(answer["id"])).status.value == "pending"


async def test_a_batch_survives_a_restart_and_goes_out_once(tmp_path: Path) -> None:
    async with running_countersign(tmp_path, config_edit=batched_campaigns()) as cs:
        answers = [await submit(cs, campaign(n)) for n in range(2)]
        await cs.settled()
        assert top_level(cs) == []
    async with running_countersign(tmp_path, config_edit=batched_campaigns()) as cs:
        cs.clock.advance(WINDOW)

        proposals = await shown(cs, [a["id"] for a in answers])
        await cs.settled()

        assert len({p.digest_id for p in proposals}) == 1
        assert len(top_level(cs)) == 1


async def test_the_get_of_a_proposal_says_when_it_is_shown(cs: Countersign) -> None:
    answer = await submit(cs, campaign(1))

    status, read = await cs.read(answer["id"])

    assert status == 200
    assert read["shown_after"] == answer["shown_after"]


async def test_the_agent_reads_shown_at_null_until_the_batch_goes_out_then_when_it_did(
    cs: Countersign,
) -> None:
    answer = await submit(cs, campaign(1))
    other = await submit(cs, campaign(2))  # the batch goes out as a digest holding both
    assert answer["shown_at"] is None and other["shown_at"] is None  # scheduled, not shown
    await cs.settled()

    status, before = await cs.read(answer["id"])

    assert status == 200
    assert before["status"] == "pending" and before["shown_at"] is None
    assert before["shown_after"] == answer["shown_after"]

    cs.clock.advance(WINDOW)
    [proposal, _] = await shown(cs, [answer["id"], other["id"]])
    assert proposal.digest_id is not None
    status, after = await cs.read(answer["id"])

    assert status == 200
    assert after["shown_at"] is not None
    shown_at = at(after["shown_at"])
    assert shown_at >= at(answer["shown_after"])
    assert shown_at == proposal.shown_at
    # the moment the digest's post was recorded, as its audit entry says
    [posted] = [e for e in await cs.store.audit_log(answer["id"]) if e.event == "posted_to_slack"]
    assert posted.at == shown_at
    # nothing else about the post reaches the agent: no channel, message or digest
    assert not {"slack_ts", "slack_channel", "digest_id", "channel"} & set(after)


async def test_a_rule_without_batch_shows_at_once_and_says_so(cs: Countersign) -> None:
    refund = {
        "operation": "payments.refund",
        "request": {"payment_id": "pay_1001", "amount_cents": 1000},
        "requested_by": REQUESTER,
    }
    answer = await submit(cs, refund)

    assert answer["shown_after"] == answer["created_at"]
    proposal = await cs.posted(answer["id"])
    assert len(top_level(cs, REFUNDS_CHANNEL)) == 1
    _, read = await cs.read(answer["id"])
    assert read["shown_at"] is not None and at(read["shown_at"]) == proposal.shown_at


# --- urgent and the hostile agent -----------------------------------------------------------


async def test_urgent_goes_out_at_once_alone_and_changes_nothing_else(cs: Countersign) -> None:
    waiting = await submit(cs, campaign(1))
    urgent = await submit(cs, campaign(2, urgent=True))

    assert urgent["shown_after"] == urgent["created_at"]
    assert at(urgent["expires_at"]) == at(urgent["created_at"]) + timedelta(minutes=30)
    proposal = await cs.posted(urgent["id"])
    assert proposal.digest_id is None and proposal.batch_id is None
    assert proposal.approver_roles == ("finance",)  # the same people decide
    await cs.settled()
    # the other proposal's window is as it was: still waiting, shown when it was told
    held = await cs.store.get_proposal(waiting["id"])
    assert held.slack_ts is None
    assert held.shown_after == at(waiting["shown_after"])
    entries = await cs.store.audit_log(urgent["id"])
    assert [e.detail.get("urgent") for e in entries if e.event == "submitted"] == [True]


@pytest.mark.parametrize(
    "field",
    [
        {"batch_id": "bt_someone_elses"},
        {"shown_after": "2020-01-01T00:00:00Z"},
        {"shown_at": "2020-01-01T00:00:00Z"},
        {"shown_at": None},
        {"batch": {"window": "1s"}},
        {"channel": "C0OTHER"},
        {"window": "1s"},
        {"urgent": "yes"},
    ],
)
async def test_an_agent_cannot_name_a_batch_window_or_channel(
    cs: Countersign, field: dict[str, Any]
) -> None:
    status, answer = await cs.submit(campaign(1, **field))

    assert status == 422, answer
    assert await cs.proposal_count() == 0


async def test_proposals_of_another_rule_or_agent_never_merge_into_a_batch(
    cs: Countersign,
) -> None:
    ours = await submit(cs, campaign(1))
    theirs = await submit(cs, campaign(2), token=OTHER_AGENT_TOKEN)  # same rule: same batch
    refund = await submit(
        cs,
        {
            "operation": "payments.refund",
            "request": {"payment_id": "pay_1001", "amount_cents": 1000},
            "requested_by": REQUESTER,
        },
    )

    first = await cs.store.get_proposal(ours["id"])
    second = await cs.store.get_proposal(theirs["id"])
    other = await cs.store.get_proposal(refund["id"])
    assert first.batch_id is not None and first.batch_id == second.batch_id
    assert other.batch_id is None  # asked by another rule: shown on its own, at once
    cs.clock.advance(WINDOW)
    await shown(cs, [ours["id"], theirs["id"]])
    [message] = top_level(cs)
    assert message.metadata is not None
    listed = message.metadata["event_payload"]["proposal_ids"].split()
    assert sorted(listed) == sorted([ours["id"], theirs["id"]])


async def test_many_urgent_proposals_never_shorten_a_waiting_ones_window(
    cs: Countersign,
) -> None:
    waiting = await submit(cs, campaign(0))
    await asyncio.gather(*(submit(cs, campaign(n, urgent=True)) for n in range(1, 8)))
    await cs.settled()

    held = await cs.store.get_proposal(waiting["id"])
    assert held.slack_ts is None
    batch = await cs.store.digests().get_batch(str(held.batch_id))
    assert batch.size == 1 and batch.status == "open"
    assert held.shown_after == at(waiting["shown_after"])
    assert held.expires_at == at(waiting["expires_at"])


async def test_an_approver_decides_a_batched_proposal_after_the_digest_is_posted(
    cs: Countersign,
) -> None:
    answers = [await submit(cs, campaign(n)) for n in range(2)]
    cs.clock.advance(WINDOW)
    await shown(cs, [a["id"] for a in answers])

    assert await cs.click(APPROVER, "approve", answers[0]["id"]) == 200

    async def done() -> bool:
        return (await cs.store.get_proposal(answers[0]["id"])).status.value == "succeeded"

    await eventually(done)


# --- faults while a batch goes out ------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 500])
async def test_a_batch_slack_refuses_at_first_still_goes_out_once_as_one_digest(
    cs: Countersign, status: int
) -> None:
    cs.fast_slack_retries()
    # requested for two people: one digest of the batch lists both
    answers = [await submit(cs, campaign(n)) for n in range(2)]
    answers.append(await submit(cs, campaign(2, requested_by=APPROVER)))
    cs.slack.fail_next("chat.postMessage", status=status, retry_after=1)

    cs.clock.advance(WINDOW)
    proposals = await shown(cs, [a["id"] for a in answers])
    await cs.settled()

    calls = cs.slack.calls("chat.postMessage")
    assert [c.status for c in calls][:1] == [status]  # refused first, then accepted
    assert len({p.digest_id for p in proposals}) == 1
    [message] = top_level(cs)
    assert f"<@{REQUESTER}>" in str(message.blocks) and f"<@{APPROVER}>" in str(message.blocks)
    batch = await cs.store.digests().get_batch(str(proposals[0].batch_id))
    assert batch.status == "posted"


# --- the reminder ----------------------------------------------------------------------------


async def test_a_digests_reminder_speaks_of_its_pending_items_and_names_who_may_decide_any(
    cs: Countersign,
) -> None:
    # requested for two people: each may decide the other's item, never their own
    ids = [
        (await submit(cs, campaign(0)))["id"],
        (await submit(cs, campaign(1, requested_by=APPROVER)))["id"],
        (await submit(cs, campaign(2)))["id"],
    ]
    cs.clock.advance(WINDOW)
    [proposal, *_] = await shown(cs, ids)
    assert await cs.click(APPROVER_2, "approve", ids[2]) == 200

    async def decided() -> bool:
        return (await cs.store.get_proposal(ids[2])).status.value == "succeeded"

    await eventually(decided)
    cs.clock.advance(timedelta(minutes=24))  # 80% of the 30 minutes from showing
    await cs.service.remind_due()
    await cs.settled()

    thread = cs.slack.replies(CAMPAIGN_CHANNEL, str(proposal.slack_ts))
    [reminder] = [m for m in thread if m.text.startswith("Reminder:")]
    said = reminder.text + json.dumps(reminder.blocks)
    assert "2 proposals of this digest" in said  # not one item's title as if it were alone
    assert "segment-0" not in said and "segment-1" not in said
    for person in (REQUESTER, APPROVER, APPROVER_2):
        assert f"<@{person}>" in said
    assert "Extend button" not in said  # a digest has none
