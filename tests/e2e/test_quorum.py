"""Risk classes and N-of-M approval over HTTP: signed Slack clicks, the local Slack, the target.

A rule with ``quorum = 2`` runs its proposal only once two distinct people holding its role
approved it, each passing every click-time check; each proposal shows its risk class, and every
queue shows the riskiest first.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import (
    APPROVER,
    APPROVER_2,
    CAMPAIGN_CHANNEL,
    REFUNDS_CHANNEL,
    REQUESTER,
    Countersign,
    eventually,
    replace_rule,
    running_countersign,
)
from tests.e2e.test_workspace import decision_buttons, open_home, slash

#: The campaigns rule of the e2e configuration, needing two of finance.
TWO_OF_FINANCE = f"""
[[policy]]
id = "campaigns"
operation = "crm.send_campaign"
decision = "ask"
approvers = ["finance"]
channel = "{CAMPAIGN_CHANNEL}"
expires_after = "30m"
quorum = 2
"""

CAMPAIGN = {
    "operation": "crm.send_campaign",
    "request": {"segment": "churn-risk", "template": "tmpl_winback", "recipients": 1200},
    "requested_by": REQUESTER,
    "reason": "These customers have not logged in for 60 days.",
}


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(
        tmp_path, config_edit=replace_rule("campaigns", TWO_OF_FINANCE)
    ) as running:
        yield running


def _text(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def _has_buttons(blocks: list[dict[str, Any]]) -> bool:
    return any(block["type"] == "actions" for block in blocks)


async def _told(cs: Countersign, user: str, count: int) -> str:
    """The ``count``-th private answer ``user`` got (1-based), once it came."""

    async def arrived() -> Any:
        found = cs.slack.ephemeral(user)
        return found[count - 1] if len(found) >= count else None

    told = await eventually(arrived)
    return str(told.text)


async def _events(cs: Countersign, proposal_id: str, event: str) -> list[Any]:
    return [e for e in await cs.store.audit_log(proposal_id) if e.event == event]


async def test_two_approvers_run_the_campaign_once_and_the_outcome_names_both(
    cs: Countersign,
) -> None:
    _, created = await cs.submit(CAMPAIGN)
    proposal = await cs.posted(created["id"])
    first = cs.slack.message(CAMPAIGN_CHANNEL, proposal.slack_ts)
    assert "0 of 2 approved" in _text(first.blocks)
    assert "2 more from finance" in _text(first.blocks)

    await cs.click(APPROVER, "approve", created["id"])

    told = await _told(cs, APPROVER, 1)
    assert told.endswith("Your approval is recorded: 1 of 2. Waiting for 1 more from finance.")
    await cs.settled()
    progress = cs.slack.message(CAMPAIGN_CHANNEL, proposal.slack_ts)
    shown = _text(progress.blocks)
    assert f"1 of 2 approved*: <@{APPROVER}>" in shown
    assert f"1 more from finance; not <@{REQUESTER}> or those who already approved" in shown
    assert _has_buttons(progress.blocks)
    assert cs.target.executions() == []
    assert (await cs.store.get_proposal(created["id"])).status == "pending"
    [recorded] = await _events(cs, created["id"], "approval_recorded")
    assert (recorded.actor, recorded.detail["count"], recorded.detail["quorum"]) == (
        APPROVER,
        1,
        2,
    )

    # the same person again: refused, audited, not counted
    await cs.click(APPROVER, "approve", created["id"])

    again = await _told(cs, APPROVER, 2)
    assert "you already approved this; 1 more approval(s) needed" in again
    [refused] = await _events(cs, created["id"], "approve_refused")
    assert refused.detail == {
        "user": APPROVER,
        "reason": "you already approved this; 1 more approval(s) needed",
    }
    assert len((await cs.store.get_proposal(created["id"])).approvals) == 1

    await cs.click(APPROVER_2, "approve", created["id"])

    _, final = await cs.read(created["id"], wait=10)
    assert final["status"] == "succeeded"
    assert final["decision"]["by"] == APPROVER_2
    await cs.settled()
    assert len(cs.target.executions()) == 1
    [approved] = await _events(cs, created["id"], "approved")
    assert approved.detail["approvers"] == [APPROVER, APPROVER_2]
    assert approved.detail["quorum"] == 2
    done = cs.slack.message(CAMPAIGN_CHANNEL, proposal.slack_ts)
    assert not _has_buttons(done.blocks)
    assert f"Approved by <@{APPROVER}> and <@{APPROVER_2}> (2 of 2)" in _text(done.blocks)
    [reply] = cs.slack.replies(CAMPAIGN_CHANNEL, proposal.slack_ts)
    assert "cmp_1" in _text(reply.blocks)
    assert f"Approved by <@{APPROVER}> and <@{APPROVER_2}>" in _text(reply.blocks)
    assert (await cs.store.verify_audit()).ok


async def test_the_requesters_click_never_counts_towards_the_quorum(cs: Countersign) -> None:
    _, created = await cs.submit(CAMPAIGN)
    await cs.posted(created["id"])

    await cs.click(REQUESTER, "approve", created["id"])
    assert "accountable" in await _told(cs, REQUESTER, 1)
    await cs.click(APPROVER, "approve", created["id"])
    await _told(cs, APPROVER, 1)

    stored = await cs.store.get_proposal(created["id"])
    assert stored.status == "pending"
    assert [a.approver for a in stored.approvals] == [APPROVER]
    assert cs.target.executions() == []


async def test_one_rejection_after_an_approval_closes_the_proposal(cs: Countersign) -> None:
    _, created = await cs.submit(CAMPAIGN)
    proposal = await cs.posted(created["id"])
    await cs.click(APPROVER, "approve", created["id"])
    await _told(cs, APPROVER, 1)

    await cs.click(APPROVER_2, "reject", created["id"])
    await eventually(lambda: _views(cs, APPROVER_2))
    await cs.submit_reason(APPROVER_2, created["id"], "Wrong segment")

    _, final = await cs.read(created["id"], wait=10)
    assert final["status"] == "rejected"
    await cs.settled()
    assert cs.target.executions() == []
    closed = cs.slack.message(CAMPAIGN_CHANNEL, proposal.slack_ts)
    assert not _has_buttons(closed.blocks)
    assert "Rejected" in _text(closed.blocks)
    # a late approval changes nothing
    await cs.click(REQUESTER, "approve", created["id"])
    await _told(cs, REQUESTER, 1)
    assert (await cs.store.get_proposal(created["id"])).status == "rejected"
    assert cs.target.executions() == []


async def _views(cs: Countersign, user: str) -> Any:
    return cs.slack.views(user)


# --- risk classes ---------------------------------------------------------------------------------

#: A read operation and reversible writes that ask finance, next to the e2e configuration's
#: irreversible refunds and campaigns. The read one expires first, the reversible one next:
#: ordered by expiry alone they would come before the irreversible ones.
EVERY_CLASS = f"""
[[policy]]
id = "small-tags"
operation = "crm.tag_customers"
when = [{{ field = "customers", lte = 100 }}]
decision = "auto"

[[policy]]
id = "large-tags"
operation = "crm.tag_customers"
decision = "ask"
approvers = ["finance"]
channel = "{CAMPAIGN_CHANNEL}"
expires_after = "10m"

[[policy]]
id = "lookups"
operation = "crm.lookup_customer"
decision = "ask"
approvers = ["finance"]
channel = "{CAMPAIGN_CHANNEL}"
expires_after = "5m"

[operations."crm.lookup_customer"]
kind = "webhook"
description = "Look a customer up in the CRM"
url = "http://127.0.0.1:9/customers/lookup"
secret_env = "E2E_WEBHOOK_SECRET"
risk = "read"
request_schema = {{ type = "object", required = ["customer"], properties = {{ customer = {{ type = "string" }} }} }}
preview = {{ title = "Look up customer {{customer}}" }}
"""  # noqa: E501

LOOKUP = {
    "operation": "crm.lookup_customer",
    "request": {"customer": "cus_ada"},
    "requested_by": REQUESTER,
}
LARGE_TAG = {
    "operation": "crm.tag_customers",
    "request": {"segment": "churn-risk", "tag": "winback", "customers": 5000},
    "requested_by": REQUESTER,
}
REFUND = {
    "operation": "payments.refund",
    "request": {"payment_id": "pay_1002"},
    "requested_by": REQUESTER,
}


def _every_class(text: str) -> str:
    return replace_rule("small-tags", EVERY_CLASS)(text)


@pytest.fixture
async def classes(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=_every_class) as running:
        yield running


async def test_each_message_shows_its_risk_class(classes: Countersign) -> None:
    expected = {
        "payments.refund": (REFUND, REFUNDS_CHANNEL, ":red_circle: Irreversible (money or"),
        "crm.tag_customers": (LARGE_TAG, CAMPAIGN_CHANNEL, ":large_orange_circle: Reversible"),
        "crm.lookup_customer": (LOOKUP, CAMPAIGN_CHANNEL, ":white_circle: Read only"),
    }
    for body, channel, label in expected.values():
        _, created = await classes.submit(body)
        assert created["status"] == "pending", created
        proposal = await classes.posted(created["id"])

        message = classes.slack.message(channel, proposal.slack_ts)

        # Countersign's verdict comes first, before any agent-supplied value (the title too)
        verdict, header = message.blocks[0], message.blocks[1]
        assert header["type"] == "header", message.blocks
        assert verdict["text"]["text"].startswith(label), verdict


async def test_every_queue_shows_the_riskiest_first_then_the_soonest_to_expire(
    classes: Countersign,
) -> None:
    made = {}
    for name, body in [
        ("lookup", LOOKUP),  # read, expires in 5 minutes
        ("tag", LARGE_TAG),  # reversible, 10 minutes
        ("refund", REFUND),  # irreversible, an hour
        ("campaign", CAMPAIGN),  # irreversible, 30 minutes
    ]:
        _, created = await classes.submit(body)
        made[name] = created["id"]
    riskiest_first = [made[name] for name in ("campaign", "refund", "tag", "lookup")]

    pending = await classes.store.pending_proposals()
    home = await open_home(classes, APPROVER)
    listed = await slash(classes, APPROVER, "list")

    assert [p.id for p in pending] == riskiest_first
    assert _approve_buttons(home) == riskiest_first
    assert _approve_buttons({"blocks": listed["blocks"]}) == riskiest_first
    shown = _text(home["blocks"])
    assert shown.index(":red_circle:") < shown.index(":large_orange_circle:")
    assert shown.index(":large_orange_circle:") < shown.index(":white_circle: Read only")
    assert shown.index("Email 1200 customers") < shown.index("Look up customer cus_ada")


def _approve_buttons(view: dict[str, Any]) -> list[str]:
    return [value for action, value in decision_buttons(view) if action == "approve"]


# --- quorums that rest on user groups ---------------------------------------------------------


async def test_startup_warns_of_a_quorum_its_user_groups_cannot_reach(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    five: Callable[[str], str] = replace_rule(
        "campaigns", TWO_OF_FINANCE.replace("quorum = 2", "quorum = 5")
    )
    caplog.set_level(logging.WARNING, logger="bot.app")

    async with running_countersign(tmp_path, config_edit=five):
        pass

    warnings = [r.getMessage() for r in caplog.records if r.name == "bot.app"]
    assert (
        "policy rule 'campaigns': quorum 5 cannot be reached: its approver roles (finance) hold "
        "3 distinct people now, user groups included; its proposals will expire unless more "
        "people join the roles or groups"
    ) in warnings
