"""Backup approvers over HTTP: a rule's ``then`` offers a proposal nobody decided in time to
another role too. Before then a backup-only approver's click is refused, privately, saying when
they may decide; after it the message, the thread and the agent's answer say so, and the backup
approver's click decides, with every other click-time check still applied."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import (
    APPROVER,
    CAMPAIGN_CHANNEL,
    OUTSIDER,
    REQUESTER,
    Countersign,
    eventually,
    replace_rule,
    running_countersign,
)
from tests.e2e.test_workspace import open_home

LEAD = OUTSIDER  #: holds the backup role only


def with_backups(text: str) -> str:
    text = text.replace(
        f'support = ["{REQUESTER}"]',
        f'support = ["{REQUESTER}"]\nfinance-leads = ["{LEAD}", "{REQUESTER}"]',
        1,
    )
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
        then = {{ after = "10m", approvers = ["finance-leads"] }}
        """,
    )(text)


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=with_backups) as running:
        yield running


def campaign(n: int = 1) -> dict[str, Any]:
    return {
        "operation": "crm.send_campaign",
        "request": {"segment": f"segment-{n}", "template": "tmpl_winback", "recipients": 100},
        "requested_by": REQUESTER,
        "run_id": f"run-{n}",
    }


async def submitted(cs: Countersign) -> dict[str, Any]:
    status, answer = await cs.submit(campaign())
    assert status == 201, answer
    await cs.posted(answer["id"])
    return answer


async def handed_over(cs: Countersign, proposal_id: str) -> Any:
    async def check() -> Any:
        proposal = await cs.store.get_proposal(proposal_id)
        return proposal if proposal.handed_over_at is not None else None

    return await eventually(check)


def told(cs: Countersign, user: str) -> list[str]:
    return [m.text for m in cs.slack.ephemeral(user)]


async def test_a_backup_approver_is_refused_before_the_time_saying_when(
    cs: Countersign,
) -> None:
    answer = await submitted(cs)

    assert await cs.click(LEAD, "approve", answer["id"]) == 200

    async def refused() -> list[str]:
        return told(cs, LEAD)

    [text] = await eventually(refused)
    assert "you hold finance-leads, a backup role of this rule" in text
    assert "<!date^" in text  # when, as Slack shows times in their time zone
    proposal = await cs.store.get_proposal(answer["id"])
    assert proposal.status.value == "pending"
    events = [e.event for e in await cs.store.audit_log(answer["id"])]
    assert "approve_refused" in events


async def test_nobody_decided_in_time_so_the_backup_role_may_decide(cs: Countersign) -> None:
    answer = await submitted(cs)
    assert answer["backup_after"] is not None and answer["handed_over"] is False
    message = cs.slack.messages(CAMPAIGN_CHANNEL)[0]
    assert "If nobody has decided by" in str(message.blocks)

    cs.clock.advance(timedelta(minutes=10))
    proposal = await handed_over(cs, answer["id"])
    await cs.settled()

    [entry] = [e for e in await cs.store.audit_log(answer["id"]) if e.event == "handed_over"]
    assert entry.detail["backup_roles"] == ["finance-leads"]
    status, read = await cs.read(answer["id"])
    assert status == 200 and read["handed_over"] is True
    shown = cs.slack.message(CAMPAIGN_CHANNEL, str(proposal.slack_ts))
    assert "may decide it too now" in str(shown.blocks)
    replies = [m for m in cs.slack.messages(CAMPAIGN_CHANNEL) if m.is_reply]
    assert any(f"<@{LEAD}>" in m.text or f"<@{LEAD}>" in str(m.blocks) for m in replies)

    assert await cs.click(LEAD, "approve", answer["id"]) == 200

    async def succeeded() -> bool:
        return (await cs.store.get_proposal(answer["id"])).status.value == "succeeded"

    await eventually(succeeded)
    assert (await cs.store.get_proposal(answer["id"])).decided_by == LEAD


async def test_separation_of_duties_holds_for_backup_approvers(cs: Countersign) -> None:
    answer = await submitted(cs)
    cs.clock.advance(timedelta(minutes=10))
    await handed_over(cs, answer["id"])

    # the requester holds the backup role too, and still may not decide their own request
    assert await cs.click(REQUESTER, "approve", answer["id"]) == 200

    async def refused() -> list[str]:
        return told(cs, REQUESTER)

    [text] = await eventually(refused)
    assert "you are the person accountable for this request" in text
    assert (await cs.store.get_proposal(answer["id"])).status.value == "pending"


async def test_the_rules_own_approvers_decide_before_the_hand_over(cs: Countersign) -> None:
    answer = await submitted(cs)

    assert await cs.click(APPROVER, "approve", answer["id"]) == 200

    async def succeeded() -> bool:
        return (await cs.store.get_proposal(answer["id"])).status.value == "succeeded"

    await eventually(succeeded)
    cs.clock.advance(timedelta(minutes=10))
    await cs.settled()
    proposal = await cs.store.get_proposal(answer["id"])
    assert proposal.handed_over_at is None  # decided: nobody else is asked


# --- a digest of a batch --------------------------------------------------------------------


def batched_with_backups(text: str) -> str:
    return with_backups(text).replace(
        'then = { after = "10m"', 'batch = { window = "5m", max = 5 }\nthen = { after = "10m"', 1
    )


async def test_a_digest_says_who_else_may_decide_its_items_and_when(tmp_path: Path) -> None:
    async with running_countersign(tmp_path, config_edit=batched_with_backups) as cs:
        ids = []
        for n in range(3):
            status, answer = await cs.submit(campaign(n))
            assert status == 201, answer
            ids.append(answer["id"])
        cs.clock.advance(timedelta(minutes=5))  # the window closes: one digest
        for proposal_id in ids:
            await cs.posted(proposal_id)
        await cs.settled()
        [message] = [m for m in cs.slack.messages(CAMPAIGN_CHANNEL) if not m.is_reply]
        assert "If nobody has decided by <!date^" in str(message.blocks)
        assert "*finance-leads* may decide them too" in str(message.blocks)

        cs.clock.advance(timedelta(minutes=10))
        for proposal_id in ids:
            await handed_over(cs, proposal_id)
        await cs.settled()

        [message] = [m for m in cs.slack.messages(CAMPAIGN_CHANNEL) if not m.is_reply]
        assert "*finance-leads* may decide them too now" in str(message.blocks)


async def test_a_backup_approvers_home_tab_shows_the_proposal_once_handed_over(
    cs: Countersign,
) -> None:
    answer = await submitted(cs)
    tab = await open_home(cs, LEAD)
    assert "segment-1" not in json.dumps(tab)  # not theirs to decide yet

    cs.clock.advance(timedelta(minutes=10))
    await handed_over(cs, answer["id"])

    async def republished() -> Any:
        view = cs.slack.home_view(LEAD)
        return view if view is not tab and "segment-1" in json.dumps(view) else None

    shown = json.dumps(await eventually(republished))  # without opening the tab again
    assert "*finance-leads* may decide it too now" in shown  # why it is theirs now
