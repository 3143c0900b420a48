"""A crash between claim and outcome: nothing runs again blindly; a person reconciles."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from contracts.canonical import binding_hash
from tests.e2e.harness import (
    APPROVER,
    APPROVER_2,
    CAMPAIGN_CHANNEL,
    OUTSIDER,
    REQUESTER,
    Countersign,
    eventually,
    running_countersign,
)

CAMPAIGN: dict[str, Any] = {
    "operation": "crm.send_campaign",
    "request": {"segment": "dormant", "template": "tmpl_back", "recipients": 300},
    "requested_by": REQUESTER,
}


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path) as running:
        yield running


async def _claimed_by_a_process_that_died(cs: Countersign) -> str:
    """A proposal claimed for execution by an executor that never records an outcome."""
    _, created = await cs.submit(CAMPAIGN)
    proposal = await cs.posted(created["id"])
    now = cs.clock()
    await cs.store.claim_for_execution(
        proposal.id,
        actor=APPROVER,
        now=now,
        binding_hash=binding_hash(
            proposal.operation, proposal.arguments, proposal.preview.model_dump(mode="json")
        ),
        lease_until=now + timedelta(seconds=30),
    )
    cs.clock.advance(timedelta(minutes=1))
    return str(created["id"])


def _actions(cs: Countersign, ts: str) -> list[str]:
    message = cs.slack.message(CAMPAIGN_CHANNEL, ts)
    return [
        element["action_id"]
        for block in message.blocks
        if block["type"] == "actions"
        for element in block["elements"]
    ]


async def test_an_abandoned_execution_is_handed_to_a_person_not_run_again(
    cs: Countersign,
) -> None:
    proposal_id = await _claimed_by_a_process_that_died(cs)

    _, state = await cs.read(proposal_id, wait=10)

    assert state["status"] == "needs_reconciliation"
    assert state["outcome"]["kind"] == "needs_reconciliation"
    assert cs.target.executions() == []
    await cs.settled()
    ts = (await cs.store.get_proposal(proposal_id)).slack_ts or ""
    assert _actions(cs, ts) == ["reconcile_succeeded", "reconcile_failed", "reconcile_retry"]
    [reply] = cs.slack.replies(CAMPAIGN_CHANNEL, ts)
    assert "may or may not" in json.dumps(reply.blocks)
    events = [e.event for e in await cs.store.audit_log(proposal_id)]
    assert "execution_abandoned" in events


async def test_an_approver_records_that_it_happened(cs: Countersign) -> None:
    proposal_id = await _claimed_by_a_process_that_died(cs)
    await eventually(lambda: _status_is(cs, proposal_id, "needs_reconciliation"))
    await cs.settled()

    assert await cs.click(APPROVER_2, "reconcile_succeeded", proposal_id) == 200
    # the click is acknowledged before it is worked on, and a read of a proposal that waits
    # for a person answers at once: wait for the change itself
    await eventually(lambda: _status_is(cs, proposal_id, "succeeded"))

    _, state = await cs.read(proposal_id, wait=10)
    assert state["status"] == "succeeded"
    assert state["final"] is True
    assert cs.target.executions() == []  # recorded, not executed
    [entry] = [e for e in await cs.store.audit_log(proposal_id) if e.event == "reconciled"]
    assert entry.actor == APPROVER_2
    await cs.settled()
    ts = (await cs.store.get_proposal(proposal_id)).slack_ts or ""
    assert _actions(cs, ts) == []


async def test_a_retry_executes_once_with_the_same_idempotency_key(cs: Countersign) -> None:
    proposal_id = await _claimed_by_a_process_that_died(cs)
    await eventually(lambda: _status_is(cs, proposal_id, "needs_reconciliation"))
    await cs.settled()

    await cs.click(APPROVER, "reconcile_retry", proposal_id)
    await eventually(lambda: _status_is(cs, proposal_id, "succeeded"))  # acknowledged first
    _, state = await cs.read(proposal_id, wait=10)

    assert state["status"] == "succeeded"
    [execution] = cs.target.executions()
    assert execution["headers"]["Idempotency-Key"] == f"countersign-{proposal_id}"
    await cs.click(APPROVER_2, "reconcile_retry", proposal_id)  # too late: already settled
    await eventually(lambda: _ephemeral_for(cs, APPROVER_2))
    assert len(cs.target.executions()) == 1


@pytest.mark.parametrize("user", [REQUESTER, OUTSIDER])
async def test_the_requester_and_people_without_the_role_cannot_reconcile(
    cs: Countersign, user: str
) -> None:
    proposal_id = await _claimed_by_a_process_that_died(cs)
    await eventually(lambda: _status_is(cs, proposal_id, "needs_reconciliation"))
    await cs.settled()

    await cs.click(user, "reconcile_succeeded", proposal_id)

    refusal = await eventually(lambda: _ephemeral_for(cs, user))
    assert refusal.text
    assert (await cs.store.get_proposal(proposal_id)).status == "needs_reconciliation"
    refused = [e for e in await cs.store.audit_log(proposal_id) if e.event == "reconcile_refused"]
    assert [e.actor for e in refused] == [user]


async def _status_is(cs: Countersign, proposal_id: str, status: str) -> bool:
    return (await cs.store.get_proposal(proposal_id)).status == status


async def _ephemeral_for(cs: Countersign, user: str) -> Any:
    found = cs.slack.ephemeral(user)
    return found[-1] if found else None
