"""A target slower than the execution lease: the proposal is handed to a person with the true
reason, and the target's late answer is not thrown away: it is audited and shown on the card
the person reconciles from."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from store.proposals import Status
from tests.e2e.harness import (
    APPROVER,
    APPROVER_2,
    CAMPAIGN_CHANNEL,
    REQUESTER,
    eventually,
    running_countersign,
)

CAMPAIGN: dict[str, Any] = {
    "operation": "crm.send_campaign",
    "request": {"segment": "churn-risk", "template": "tmpl_winback", "recipients": 1200},
    "requested_by": REQUESTER,
    "run_id": "run-slow",
}

#: How long the target takes to answer (within the webhook's own timeout, set to 10 s here).
TARGET_SECONDS = 2.0


def _patient_webhooks(text: str) -> str:
    assert "\ntimeout_seconds = 2\n" in text
    return text.replace("\ntimeout_seconds = 2\n", "\ntimeout_seconds = 10\n")


async def test_a_success_after_the_lease_ended_is_audited_and_shown_to_the_reconciler(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_countersign(tmp_path, config_edit=_patient_webhooks) as cs:
        cs.target.delay = TARGET_SECONDS
        _, created = await cs.submit(CAMPAIGN)
        proposal_id = created["id"]
        await cs.posted(proposal_id)
        lease = cs.service.settings.server.execution_lease_seconds

        assert await cs.click(APPROVER, "approve", proposal_id) == 200
        await eventually(lambda: _called(cs))  # the target has it, and takes its time
        cs.clock.advance(timedelta(seconds=lease + 1))  # meanwhile the lease ends

        async def handed_over() -> bool:
            return (await cs.store.get_proposal(proposal_id)).status is Status.NEEDS_RECONCILIATION

        await eventually(handed_over, timeout=TARGET_SECONDS / 2)
        reclaimed = await cs.store.get_proposal(proposal_id)
        assert reclaimed.outcome is not None
        # the true reason: the process did not stop; the target had not answered yet
        assert "the process executing it stopped before" not in reclaimed.outcome.detail
        assert "or the target had not answered yet" in reclaimed.outcome.detail

        async def late_recorded() -> list[Any]:
            log = await cs.store.audit_log(proposal_id)
            return [entry for entry in log if entry.event == "late_outcome"]

        [late] = await eventually(late_recorded, timeout=TARGET_SECONDS * 5)
        await cs.settled()
        stored = await cs.store.get_proposal(proposal_id)

    assert late.actor == "executor"
    assert late.detail["outcome"]["kind"] == "succeeded"
    assert stored.status is Status.NEEDS_RECONCILIATION  # a person still records it
    assert stored.outcome is not None
    assert stored.outcome.answered_late == "success"
    assert "the target answered success at " in stored.outcome.detail
    assert "after Countersign had given up waiting" in stored.outcome.detail
    # the card the person reconciles from says so, with the time as Slack shows times
    [message] = [m for m in cs.slack.messages(CAMPAIGN_CHANNEL) if not m.is_reply]
    card = json.dumps(message.blocks)
    assert "The target answered *success* <!date^" in card, card  # "today at 14:02"
    assert "after Countersign had given up waiting. Check the target" in card
    assert "reconcile_succeeded" in card
    # nothing lost in a log line: no listener failed on an invalid transition
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not failures, [r.getMessage() for r in failures]


async def test_a_late_answer_of_an_earlier_attempt_is_not_the_outcome_of_its_retry(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The first attempt hangs past its lease, then refuses (400). Meanwhile the execution was
    # handed to a person and retried with the same idempotency key: applied by another
    # instance, whose applier leased the Retry click once the Approve click's lease ended
    # (here the same decision path, called while this instance still waits for the target).
    # The retry succeeds a little later. The first attempt's refusal arrives while the retry
    # is executing: it is that attempt's answer, not the retry's outcome.
    first_answers_at, retry_answers_at = TARGET_SECONDS, TARGET_SECONDS * 2
    async with running_countersign(tmp_path, config_edit=_patient_webhooks) as cs:
        cs.target.answers = [(first_answers_at, 400), (retry_answers_at, 200)]
        _, created = await cs.submit(CAMPAIGN)
        proposal_id = created["id"]
        await cs.posted(proposal_id)
        lease = cs.service.settings.server.execution_lease_seconds

        async def status_is(status: Status) -> bool:
            return (await cs.store.get_proposal(proposal_id)).status is status

        async def late_recorded() -> list[Any]:
            log = await cs.store.audit_log(proposal_id)
            return [entry for entry in log if entry.event == "late_outcome"]

        assert await cs.click(APPROVER, "approve", proposal_id) == 200
        await eventually(lambda: _called(cs))  # the first attempt: the target takes its time
        cs.clock.advance(timedelta(seconds=lease + 1))
        await eventually(lambda: status_is(Status.NEEDS_RECONCILIATION), timeout=TARGET_SECONDS / 2)
        retry = asyncio.create_task(cs.service.retry(proposal_id, user=APPROVER_2, channel=None))
        await eventually(lambda: _called(cs, times=2), timeout=TARGET_SECONDS / 2)
        # the retry is executing, and the first attempt has not answered yet
        assert await late_recorded() == []
        assert await status_is(Status.EXECUTING)

        # the first attempt's refusal arrives while the retry is under way: audited as late
        [late] = await eventually(late_recorded, timeout=TARGET_SECONDS * 3)
        assert late.detail["outcome"]["kind"] == "terminal_failure"
        assert await status_is(Status.EXECUTING)

        retried = await asyncio.wait_for(retry, timeout=TARGET_SECONDS * 3)
        await cs.settled()
        stored = await cs.store.get_proposal(proposal_id)
        trail = [entry.event for entry in await cs.store.audit_log(proposal_id)]

    assert retried is not None and retried.status is Status.SUCCEEDED
    assert stored.status is Status.SUCCEEDED
    assert stored.outcome is not None and stored.outcome.kind == "succeeded"
    assert trail.count("outcome") == 1  # the retry's
    assert trail.index("retry_approved") < trail.index("late_outcome") < trail.index("outcome")
    assert [r["headers"]["Idempotency-Key"] for r in cs.target.executions()] == [
        f"countersign-{proposal_id}"
    ] * 2
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not failures, [r.getMessage() for r in failures]


async def _called(cs: Any, times: int = 1) -> bool:
    return len(cs.target.executions()) >= times
