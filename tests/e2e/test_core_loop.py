"""The whole loop over HTTP: agent proposal -> Slack message -> click -> execution -> outcome."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pytest

from contracts.signing import EXECUTION, verify
from tests.e2e.harness import (
    APPROVER,
    APPROVER_2,
    CAMPAIGN_CHANNEL,
    OUTSIDER,
    REQUESTER,
    SIGNING_SECRET,
    WEBHOOK_SECRET,
    Countersign,
    eventually,
    running_countersign,
)
from tests.slack_requests import block_action_body, signed_headers


@pytest.fixture
async def cs(tmp_path: Path):  # type: ignore[no-untyped-def]
    async with running_countersign(tmp_path) as running:
        yield running


CAMPAIGN = {
    "operation": "crm.send_campaign",
    "request": {"segment": "churn-risk", "template": "tmpl_winback", "recipients": 1200},
    "requested_by": REQUESTER,
    "run_id": "run-1",
    "reason": "These customers have not logged in for 60 days.",
}


async def test_webhook_operation_runs_once_after_a_proper_approval(cs: Countersign) -> None:
    status, created = await cs.submit(CAMPAIGN)
    assert status == 201, created
    assert created["status"] == "pending"
    assert created["preview"]["title"] == "Email 1200 customers in segment churn-risk"
    assert created["arguments"]["send_at"] == "now"  # the default, resolved and frozen
    proposal = await cs.posted(created["id"])
    assert proposal.slack_channel == CAMPAIGN_CHANNEL
    message = cs.slack.message(CAMPAIGN_CHANNEL, proposal.slack_ts)
    rendered = json.dumps(message.blocks)
    assert "Email 1200 customers in segment churn-risk" in rendered
    assert "tmpl_winback" in rendered
    values = [
        element["value"]
        for block in message.blocks
        if block["type"] == "actions"
        for element in block["elements"]
    ]
    assert values == [created["id"]] * 3  # Approve, Reject, Edit: the opaque id only

    # the accountable human may not approve their own agent's request
    assert await cs.click(REQUESTER, "approve", created["id"]) == 200
    refusal = await eventually(lambda: _ephemeral_for(cs, REQUESTER))
    assert "accountable" in refusal.text
    # nor may someone without the rule's role
    assert await cs.click(OUTSIDER, "approve", created["id"]) == 200
    refusal = await eventually(lambda: _ephemeral_for(cs, OUTSIDER))
    assert "finance" in refusal.text
    assert (await cs.store.get_proposal(created["id"])).status == "pending"
    assert cs.target.executions() == []
    refused = [e.event for e in await cs.store.audit_log(created["id"])]
    assert refused.count("approve_refused") == 2

    assert await cs.click(APPROVER, "approve", created["id"]) == 200
    _, final = await cs.read(created["id"], wait=10)
    assert final["status"] == "succeeded"
    assert final["outcome"] == {
        "kind": "succeeded",
        "result": {"campaign_id": "cmp_1", "queued": True},
    }
    assert final["decision"]["by"] == APPROVER
    [execution] = cs.target.executions()
    headers = execution["headers"]
    assert headers["Idempotency-Key"] == f"countersign-{created['id']}"
    assert verify(
        WEBHOOK_SECRET,
        headers["X-Countersign-Timestamp"],
        execution["body"],
        headers["X-Countersign-Signature"],
        now=cs.clock(),
        purpose=EXECUTION,
    )
    assert json.loads(execution["body"])["arguments"] == created["arguments"]

    await cs.settled()
    updated = cs.slack.message(CAMPAIGN_CHANNEL, proposal.slack_ts)
    assert not any(block["type"] == "actions" for block in updated.blocks)
    assert APPROVER in json.dumps(updated.blocks)
    [reply] = cs.slack.replies(CAMPAIGN_CHANNEL, proposal.slack_ts)
    assert "cmp_1" in json.dumps(reply.blocks)
    assert (await cs.store.verify_audit()).ok


async def test_twenty_concurrent_approvals_execute_once(cs: Countersign) -> None:
    _, created = await cs.submit(CAMPAIGN)
    await cs.posted(created["id"])

    statuses = await asyncio.gather(
        *(cs.click(APPROVER if i % 2 else APPROVER_2, "approve", created["id"]) for i in range(20))
    )

    assert statuses == [200] * 20
    _, final = await cs.read(created["id"], wait=10)
    assert final["status"] == "succeeded"
    await cs.settled()
    assert len(cs.target.executions()) == 1
    approvals = [e for e in await cs.store.audit_log(created["id"]) if e.event == "approved"]
    assert len(approvals) == 1
    proposal = await cs.store.get_proposal(created["id"])
    replies = cs.slack.replies(CAMPAIGN_CHANNEL, proposal.slack_ts)
    assert len(replies) == 1  # the outcome is posted once


async def test_second_approver_sees_who_decided_and_nothing_runs_again(cs: Countersign) -> None:
    _, created = await cs.submit(CAMPAIGN)
    await cs.posted(created["id"])
    await cs.click(APPROVER, "approve", created["id"])
    await cs.read(created["id"], wait=10)

    await cs.click(APPROVER_2, "approve", created["id"])

    told = await eventually(lambda: _ephemeral_for(cs, APPROVER_2))
    assert APPROVER in told.text
    assert len(cs.target.executions()) == 1


async def test_refund_revalidation_stops_execution_when_state_changed(cs: Countersign) -> None:
    status, created = await cs.submit(
        {
            "operation": "payments.refund",
            "request": {"payment_id": "pay_1002"},
            "requested_by": REQUESTER,
        }
    )
    assert status == 201, created
    assert created["arguments"]["amount_cents"] == 120000  # computed by the operation
    await cs.posted(created["id"])
    ledger = cs.service.settings.registry.get("payments.refund").ledger
    ledger.record_outside_refund("pay_1002", 1000)

    await cs.click(APPROVER, "approve", created["id"])

    _, final = await cs.read(created["id"], wait=10)
    assert final["status"] == "revision_required"
    assert final["outcome"]["kind"] == "revision_required"
    assert "120000" in final["outcome"]["reason"] or "1,200.00" in final["outcome"]["reason"]


async def test_auto_policy_executes_at_once_and_answers_the_outcome(cs: Countersign) -> None:
    status, created = await cs.submit(
        {
            "operation": "crm.tag_customers",
            "request": {"segment": "churn-risk", "tag": "winback", "customers": 40},
            "requested_by": REQUESTER,
        }
    )

    assert status == 201
    assert created["status"] == "succeeded"
    assert created["policy"] == {
        "decision": "auto",
        "rule_id": "small-tags",
        "note": created["policy"]["note"],
    }
    assert created["policy"]["note"] == "approved automatically by policy rule 'small-tags'"
    assert created["outcome"]["kind"] == "succeeded"
    assert len(cs.target.taggings()) == 1
    assert cs.slack.calls("chat.postMessage") == []


async def test_deny_policy_answers_the_rule_and_reason_and_runs_nothing(cs: Countersign) -> None:
    status, created = await cs.submit(
        {
            "operation": "payments.refund",
            "request": {"payment_id": "pay_1004"},
            "requested_by": REQUESTER,
        }
    )

    assert status == 201
    assert created["status"] == "denied"
    assert created["policy"]["rule_id"] == "huge-refunds"
    assert "manual process" in created["policy"]["note"]
    assert created["outcome"] is None
    await cs.settled()
    assert cs.slack.calls("chat.postMessage") == []


async def test_reject_asks_for_a_reason_and_tells_agent_and_thread(cs: Countersign) -> None:
    _, created = await cs.submit(CAMPAIGN)
    proposal = await cs.posted(created["id"])

    assert await cs.click(APPROVER, "reject", created["id"]) == 200
    [view] = await eventually(lambda: _views_for(cs, APPROVER))
    assert view.view["callback_id"] == "reject_reason"
    assert view.view["private_metadata"] == created["id"]
    assert (await cs.store.get_proposal(created["id"])).status == "pending"

    assert await cs.submit_reason(APPROVER, created["id"], "Wrong segment: use dormant-90") == 200

    _, final = await cs.read(created["id"], wait=10)
    assert final["status"] == "rejected"
    assert final["decision"] == {
        "by": APPROVER,
        "at": final["decision"]["at"],
        "reason": "Wrong segment: use dormant-90",
    }
    await cs.settled()
    [reply] = cs.slack.replies(CAMPAIGN_CHANNEL, proposal.slack_ts)
    assert "Wrong segment: use dormant-90" in json.dumps(reply.blocks)
    assert cs.target.executions() == []


async def test_empty_reason_is_refused_by_the_modal(cs: Countersign) -> None:
    _, created = await cs.submit(CAMPAIGN)
    await cs.posted(created["id"])
    body_status = await cs.submit_reason(APPROVER, created["id"], "   ")
    assert body_status == 200
    assert (await cs.store.get_proposal(created["id"])).status == "pending"


async def test_expiry_is_a_denial_seen_in_slack_and_by_the_agent(cs: Countersign) -> None:
    _, created = await cs.submit(CAMPAIGN)
    proposal = await cs.posted(created["id"])

    cs.clock.advance(timedelta(minutes=31))

    _, final = await cs.read(created["id"], wait=10)
    assert final["status"] == "expired"
    assert final["final"] is True
    await cs.settled()
    updated = cs.slack.message(CAMPAIGN_CHANNEL, proposal.slack_ts)
    assert not any(block["type"] == "actions" for block in updated.blocks)
    assert "xpire" in json.dumps(cs.slack.replies(CAMPAIGN_CHANNEL, proposal.slack_ts)[0].blocks)
    await cs.click(APPROVER, "approve", created["id"])
    await eventually(lambda: _ephemeral_for(cs, APPROVER))
    assert cs.target.executions() == []


@pytest.mark.parametrize(
    "headers",
    [
        {},  # unsigned
        {"X-Slack-Request-Timestamp": "1", "X-Slack-Signature": "v0=" + "0" * 64},  # forged
        "stale",
        "wrong-secret",
    ],
)
async def test_forged_stale_or_unsigned_clicks_get_401_and_change_nothing(
    cs: Countersign, headers: object
) -> None:
    _, created = await cs.submit(CAMPAIGN)
    proposal = await cs.posted(created["id"])
    body = block_action_body(
        user_id=APPROVER,
        action_id="approve",
        value=created["id"],
        channel_id=proposal.slack_channel or "",
        message_ts=proposal.slack_ts or "",
    )
    if headers == "stale":
        sent = signed_headers(SIGNING_SECRET, body, timestamp=int(cs.clock().timestamp()) - 600)
    elif headers == "wrong-secret":
        sent = signed_headers("not-the-secret", body)
    else:
        sent = {"Content-Type": "application/x-www-form-urlencoded", **headers}  # type: ignore[dict-item]

    assert await cs.post_slack(body, sent) == 401

    await asyncio.sleep(0.2)
    assert (await cs.store.get_proposal(created["id"])).status == "pending"
    assert cs.target.executions() == []


async def _ephemeral_for(cs: Countersign, user: str):  # type: ignore[no-untyped-def]
    found = cs.slack.ephemeral(user)
    return found[-1] if found else None


async def _views_for(cs: Countersign, user: str):  # type: ignore[no-untyped-def]
    return cs.slack.views(user)
