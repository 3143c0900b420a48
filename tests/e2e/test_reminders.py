"""Reminders before expiry and the one extension, over HTTP with signed Slack payloads.

The refunds rule asks finance and expires after an hour; by default approvers are reminded at
80% of the lifetime (48 minutes). REQUESTER holds the finance role too, and is never mentioned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import (
    APPROVER,
    APPROVER_2,
    FINANCE_GROUP,
    OUTSIDER,
    REFUNDS_CHANNEL,
    REQUESTER,
    Countersign,
    eventually,
    replace_rule,
    running_countersign,
)

REFUND = {
    "operation": "payments.refund",
    "request": {"payment_id": "pay_1001"},  # 45.00: the refunds rule asks
    "requested_by": REQUESTER,
}


def refunds_rule(**extra: Any) -> Callable[[str], str]:
    """The e2e refunds rule with ``extra`` fields, such as extend_by."""
    fields = {
        "id": "refunds",
        "operation": "payments.refund",
        "decision": "ask",
        "approvers": ["finance"],
        "channel": REFUNDS_CHANNEL,
        "expires_after": "1h",
        **extra,
    }
    lines = [f"{key} = {json.dumps(value)}" for key, value in fields.items()]
    condition = 'when = [{ field = "amount_cents", lte = 200000 }]'
    return replace_rule("refunds", "\n".join(["[[policy]]", *lines, condition]))


def also(*edits: Callable[[str], str]) -> Callable[[str], str]:
    def edit(text: str) -> str:
        for each in edits:
            text = each(text)
        return text

    return edit


def approvals_section(text: str) -> Callable[[str], str]:
    """A config_edit adding an [approvals] section."""
    return lambda config: config + "\n[approvals]\n" + text + "\n"


@pytest.fixture
async def cs(tmp_path: Path):  # type: ignore[no-untyped-def]
    async with running_countersign(tmp_path) as running:
        yield running


@pytest.fixture
async def extendable(tmp_path: Path):  # type: ignore[no-untyped-def]
    async with running_countersign(tmp_path, config_edit=refunds_rule(extend_by="30m")) as running:
        yield running


async def submitted(cs: Countersign) -> tuple[str, Any]:
    status, created = await cs.submit(REFUND)
    assert status == 201, created
    assert created["status"] == "pending"
    return created["id"], await cs.posted(created["id"])


async def sweep(cs: Countersign) -> None:
    """One pass of the sweeper, now (it also runs on its own), then Slack caught up."""
    await cs.service.expire_due()
    await cs.service.remind_due()
    await cs.settled()


async def events(cs: Countersign, proposal_id: str) -> list[str]:
    return [entry.event for entry in await cs.store.audit_log(proposal_id)]


def reminders(cs: Countersign, ts: str) -> list[Any]:
    return [m for m in cs.slack.replies(REFUNDS_CHANNEL, ts) if ":alarm_clock:" in text_of(m)]


def text_of(message: Any) -> str:
    return json.dumps(message.blocks)


def action_ids(cs: Countersign, ts: str) -> list[str]:
    message = cs.slack.message(REFUNDS_CHANNEL, ts)
    return [
        element["action_id"]
        for block in message.blocks
        if block["type"] == "actions"
        for element in block["elements"]
    ]


async def ephemeral_for(cs: Countersign, user: str) -> Any:
    found = cs.slack.ephemeral(user)
    return found[-1] if found else None


# --- reminders ------------------------------------------------------------------------------------


async def test_at_80_percent_the_thread_gets_one_reminder_naming_the_approvers(
    cs: Countersign,
) -> None:
    proposal_id, proposal = await submitted(cs)

    cs.clock.advance(timedelta(minutes=47))
    await sweep(cs)
    assert reminders(cs, proposal.slack_ts) == []

    cs.clock.advance(timedelta(minutes=2))
    await eventually(lambda: _has_event(cs, proposal_id, "reminded"))
    await cs.settled()
    cs.clock.advance(timedelta(minutes=5))
    await sweep(cs)

    [reminder] = reminders(cs, proposal.slack_ts)
    shown = reminder.text + text_of(reminder)
    assert f"<@{APPROVER}>" in shown and f"<@{APPROVER_2}>" in shown
    assert REQUESTER not in shown  # the accountable human cannot approve: not mentioned
    assert FINANCE_GROUP not in shown  # the group is empty: nobody in it can approve
    assert re.search(r"expires in 1[01] minutes \(<!date\^", shown)
    assert (await events(cs, proposal_id)).count("reminded") == 1
    assert (await cs.store.get_proposal(proposal_id)).status == "pending"
    assert (await cs.store.verify_audit()).ok


async def test_a_reminder_whose_answer_was_lost_is_not_posted_twice(cs: Countersign) -> None:
    proposal_id, proposal = await submitted(cs)
    await cs.settled()
    cs.slack.stall_after_accepting("chat.postMessage", seconds=2.5)  # the client gives up at 1 s

    cs.clock.advance(timedelta(minutes=49))
    await eventually(lambda: _has_event(cs, proposal_id, "reminded"))
    await eventually(lambda: _called(cs, "conversations.replies"))  # the retry looked first
    await cs.settled()

    assert len(reminders(cs, proposal.slack_ts)) == 1
    assert len(cs.slack.calls("chat.postMessage")) == 2  # the proposal, the reminder once


async def test_the_agents_owners_and_those_who_approved_already_are_not_mentioned(
    tmp_path: Path,
) -> None:
    owners = {"support-bot": {"owners": [APPROVER_2]}}
    edit = refunds_rule(quorum=2)
    async with running_countersign(tmp_path, agent_settings=owners, config_edit=edit) as cs:
        proposal_id, proposal = await submitted(cs)
        assert await cs.click(APPROVER, "approve", proposal_id) == 200
        await eventually(lambda: _has_event(cs, proposal_id, "approval_recorded"))  # 1 of 2

        cs.clock.advance(timedelta(minutes=49))
        await eventually(lambda: _has_event(cs, proposal_id, "reminded"))
        await cs.settled()

        # finance: the requester, APPROVER (approved already), APPROVER_2 (owns the agent)
        [reminder] = reminders(cs, proposal.slack_ts)
        shown = reminder.text + text_of(reminder)
        assert "Nobody can approve it now" in shown
        for cannot in (REQUESTER, APPROVER, APPROVER_2):
            assert cannot not in shown


async def test_no_reminder_for_a_proposal_decided_before_it_was_due(cs: Countersign) -> None:
    proposal_id, proposal = await submitted(cs)
    cs.clock.advance(timedelta(minutes=10))
    assert await cs.click(APPROVER, "approve", proposal_id) == 200
    _, final = await cs.read(proposal_id, wait=10)
    assert final["status"] == "succeeded"

    cs.clock.advance(timedelta(minutes=45))
    await sweep(cs)

    assert reminders(cs, proposal.slack_ts) == []
    assert "reminded" not in await events(cs, proposal_id)
    assert len(cs.slack.replies(REFUNDS_CHANNEL, proposal.slack_ts)) == 1  # the outcome only


async def test_remind_at_off_on_the_rule_sends_no_reminder(tmp_path: Path) -> None:
    async with running_countersign(tmp_path, config_edit=refunds_rule(remind_at="off")) as cs:
        proposal_id, proposal = await submitted(cs)

        cs.clock.advance(timedelta(minutes=59))
        await sweep(cs)

        assert reminders(cs, proposal.slack_ts) == []
        assert "reminded" not in await events(cs, proposal_id)


async def test_the_global_default_applies_and_a_rule_overrides_it(tmp_path: Path) -> None:
    edit = also(approvals_section('remind_at = "off"'), refunds_rule(remind_at="50%"))
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        refund_id, refund = await submitted(cs)
        _, campaign = await cs.submit(
            {
                "operation": "crm.send_campaign",
                "request": {"segment": "vip", "template": "tmpl_hello", "recipients": 3},
                "requested_by": REQUESTER,
            }
        )
        await cs.posted(campaign["id"])

        cs.clock.advance(timedelta(minutes=29))  # past 80% of the campaign's 30 minutes
        await sweep(cs)
        assert reminders(cs, refund.slack_ts) == []
        assert "reminded" not in await events(cs, campaign["id"])  # the default is off here
        cs.clock.advance(timedelta(minutes=2))
        await sweep(cs)

        [reminder] = reminders(cs, refund.slack_ts)  # the rule's own 50%
        assert re.search(r"expires in 2[89] min", text_of(reminder))
        assert (await events(cs, refund_id)).count("reminded") == 1


async def test_a_user_group_with_someone_who_may_approve_is_mentioned(cs: Countersign) -> None:
    cs.slack.set_usergroup(FINANCE_GROUP, [REQUESTER, OUTSIDER])
    proposal_id, proposal = await submitted(cs)

    cs.clock.advance(timedelta(minutes=49))
    await eventually(lambda: _has_event(cs, proposal_id, "reminded"))
    await cs.settled()

    [reminder] = reminders(cs, proposal.slack_ts)
    assert f"<!subteam^{FINANCE_GROUP}>" in reminder.text + text_of(reminder)


async def test_when_nobody_may_approve_the_reminder_says_so(tmp_path: Path) -> None:
    edit = replace_rule(
        "refunds",
        f"""
        [[policy]]
        id = "refunds"
        operation = "payments.refund"
        when = [{{ field = "amount_cents", lte = 200000 }}]
        decision = "ask"
        approvers = ["support"]
        channel = "{REFUNDS_CHANNEL}"
        """,
    )
    async with running_countersign(tmp_path, config_edit=edit) as cs:  # support: REQUESTER only
        proposal_id, proposal = await submitted(cs)

        cs.clock.advance(timedelta(minutes=49))
        await eventually(lambda: _has_event(cs, proposal_id, "reminded"))
        await cs.settled()

        [reminder] = reminders(cs, proposal.slack_ts)
        assert "Nobody can approve it now" in reminder.text
        assert "<@" not in reminder.text + text_of(reminder)


# --- the one extension ----------------------------------------------------------------------------


async def test_an_approver_extends_once_and_the_agent_and_message_see_the_new_expiry(
    extendable: Countersign,
) -> None:
    cs = extendable
    proposal_id, proposal = await submitted(cs)
    assert "extend" in action_ids(cs, proposal.slack_ts)
    before = proposal.expires_at

    assert await cs.click(APPROVER, "extend", proposal_id) == 200

    await eventually(lambda: _has_event(cs, proposal_id, "extended"))
    _, seen = await cs.read(proposal_id)
    assert datetime.fromisoformat(seen["expires_at"]) == before + timedelta(minutes=30)
    assert seen["status"] == "pending"
    await cs.settled()
    assert "extend" not in action_ids(cs, proposal.slack_ts)  # once only
    message = cs.slack.message(REFUNDS_CHANNEL, proposal.slack_ts)
    assert f"extended by <@{APPROVER}>" in text_of(message)
    [entry] = [e for e in await cs.store.audit_log(proposal_id) if e.event == "extended"]
    assert (entry.actor, entry.detail) == (
        APPROVER,
        {"from": before.isoformat(), "to": (before + timedelta(minutes=30)).isoformat()},
    )


async def test_a_second_extension_is_refused_privately_and_audited(
    extendable: Countersign,
) -> None:
    cs = extendable
    proposal_id, _ = await submitted(cs)
    await cs.click(APPROVER, "extend", proposal_id)
    await eventually(lambda: _has_event(cs, proposal_id, "extended"))
    extended = await cs.store.get_proposal(proposal_id)

    assert await cs.click(APPROVER_2, "extend", proposal_id) == 200

    told = await eventually(lambda: ephemeral_for(cs, APPROVER_2))
    assert "already extended once" in told.text
    assert (await cs.store.get_proposal(proposal_id)).expires_at == extended.expires_at
    assert (await events(cs, proposal_id)).count("extended") == 1
    [refused] = [e for e in await cs.store.audit_log(proposal_id) if e.event == "extend_refused"]
    assert refused.actor == APPROVER_2 and "already extended" in str(refused.detail["reason"])


async def test_the_requester_cannot_extend(extendable: Countersign) -> None:
    cs = extendable
    proposal_id, proposal = await submitted(cs)

    assert await cs.click(REQUESTER, "extend", proposal_id) == 200

    told = await eventually(lambda: ephemeral_for(cs, REQUESTER))
    assert "accountable" in told.text
    assert "extend_refused" in await events(cs, proposal_id)
    stored = await cs.store.get_proposal(proposal_id)
    assert (stored.expires_at, stored.extended_by) == (proposal.expires_at, None)


async def test_a_rule_without_extend_by_shows_no_button_and_refuses_the_click(
    cs: Countersign,
) -> None:
    proposal_id, proposal = await submitted(cs)
    assert "approve" in action_ids(cs, proposal.slack_ts)
    assert "extend" not in action_ids(cs, proposal.slack_ts)

    assert await cs.click(APPROVER, "extend", proposal_id) == 200  # a crafted payload

    told = await eventually(lambda: ephemeral_for(cs, APPROVER))
    assert "does not allow extending" in told.text
    assert "extend_refused" in await events(cs, proposal_id)
    assert (await cs.store.get_proposal(proposal_id)).expires_at == proposal.expires_at


async def test_an_extended_proposal_is_approvable_after_its_original_expiry(
    extendable: Countersign,
) -> None:
    cs = extendable
    proposal_id, _ = await submitted(cs)
    await cs.click(APPROVER, "extend", proposal_id)
    await eventually(lambda: _has_event(cs, proposal_id, "extended"))

    cs.clock.advance(timedelta(minutes=65))
    await sweep(cs)
    assert (await cs.store.get_proposal(proposal_id)).status == "pending"
    await cs.click(APPROVER_2, "approve", proposal_id)

    _, final = await cs.read(proposal_id, wait=10)
    assert final["status"] == "succeeded"


async def test_an_extended_proposal_expires_at_its_new_expiry(extendable: Countersign) -> None:
    cs = extendable
    proposal_id, _ = await submitted(cs)
    await cs.click(APPROVER, "extend", proposal_id)
    await eventually(lambda: _has_event(cs, proposal_id, "extended"))

    cs.clock.advance(timedelta(minutes=89))
    await sweep(cs)
    assert (await cs.store.get_proposal(proposal_id)).status == "pending"
    cs.clock.advance(timedelta(minutes=2))

    _, final = await cs.read(proposal_id, wait=10)
    assert final["status"] == "expired"


async def test_the_reminder_moves_with_the_extension(extendable: Countersign) -> None:
    cs = extendable
    proposal_id, proposal = await submitted(cs)
    cs.clock.advance(timedelta(minutes=10))
    await cs.click(APPROVER, "extend", proposal_id)
    await eventually(lambda: _has_event(cs, proposal_id, "extended"))

    cs.clock.advance(timedelta(minutes=40))  # 50 minutes in: past the old reminder time
    await sweep(cs)
    assert reminders(cs, proposal.slack_ts) == []
    cs.clock.advance(timedelta(minutes=29))  # 79: 11 minutes before the new expiry

    await eventually(lambda: _has_event(cs, proposal_id, "reminded"))
    await cs.settled()
    [reminder] = reminders(cs, proposal.slack_ts)
    assert re.search(r"expires in 1[01] min", text_of(reminder))


async def _has_event(cs: Countersign, proposal_id: str, event: str) -> bool:
    return event in await events(cs, proposal_id)


async def _called(cs: Countersign, method: str) -> bool:
    return bool(cs.slack.calls(method))
