"""A target slower than the execution lease: the proposal is handed to a person with the true
reason, and the target's late answer is not thrown away: it is audited and shown on the card
the person reconciles from."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from store.proposals import Status
from tests.e2e.harness import APPROVER, CAMPAIGN_CHANNEL, REQUESTER, eventually, running_countersign

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


async def _called(cs: Any) -> bool:
    return bool(cs.target.executions())
