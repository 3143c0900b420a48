"""An escalation's Slack post when Slack's answer is lost (bot/escalations/delivery.py)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import (
    AGENT_TOKEN,
    ESCALATION_CHANNEL,
    REQUESTER,
    Countersign,
    eventually,
    running_countersign,
)


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path) as running:
        yield running


ESCALATION: dict[str, Any] = {
    "conversation_id": "conv-2002",
    "requested_by": REQUESTER,
    "team": "billing",
    "summary": {
        "goal": "Refund the second charge of order 9",
        "steps_done": ["Looked up the order"],
        "tool_results": [],
        "blocked_on": "The refund tool keeps failing",
    },
    "trigger": {
        "kind": "repeated_failure",
        "signals": {"failed_turns": 4, "error_codes": ["E500", "E500", "E500"]},
    },
}


async def test_an_escalation_post_whose_answer_was_lost_is_found_not_posted_twice(
    cs: Countersign,
) -> None:
    cs.slack.stall_after_accepting("chat.postMessage", seconds=2.5)  # the client gives up at 1 s

    answer = await cs.request(
        "POST",
        "/v1/escalations",
        data=json.dumps(ESCALATION).encode(),
        headers={"Authorization": f"Bearer {AGENT_TOKEN}", "Content-Type": "application/json"},
    )
    created = answer.json()
    assert answer.status == 201, created

    async def attached() -> Any:
        found = await cs.store.escalations().get_escalation(created["id"])
        return found if found.slack_ts else None

    escalation = await eventually(attached)
    await cs.settled()

    assert len(cs.slack.calls("chat.postMessage")) == 1
    assert cs.slack.calls("conversations.history")  # the retry looked before posting again
    [message] = [m for m in cs.slack.messages(ESCALATION_CHANNEL) if not m.is_reply]
    assert escalation.slack_ts == message.ts
