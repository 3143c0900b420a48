"""The tests' agent sends a busy submission again, as an agent's client does, and nothing else."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.api.agent_requests import SUBMISSIONS
from tests.e2e.harness import AGENT_TOKEN, REQUESTER, running_countersign
from tests.resend import resent_while_busy

CAMPAIGN: dict[str, Any] = {
    "operation": "crm.send_campaign",
    "request": {"segment": "all", "template": "tmpl_x", "recipients": 9},
    "requested_by": REQUESTER,
}


@dataclass(frozen=True)
class _Given:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


async def test_a_submission_turned_away_busy_is_sent_again_with_its_key_and_taken_once(
    tmp_path: Path,
) -> None:
    async with running_countersign(tmp_path) as cs:
        admission = cs.app[SUBMISSIONS]
        admission.limit = 1
        headers = {
            "Authorization": f"Bearer {AGENT_TOKEN}",
            "Content-Type": "application/json",
            "Idempotency-Key": "busy-then-taken",
        }
        sent: list[int] = []
        answered = asyncio.Event()

        async def once() -> Any:
            answer = await cs.request(
                "POST", "/v1/proposals", data=json.dumps(CAMPAIGN).encode(), headers=headers
            )
            sent.append(answer.status)
            answered.set()
            return answer

        with admission.slot():  # capacity taken by work in flight
            sending = asyncio.create_task(resent_while_busy(once))
            await answered.wait()
        answer = await sending

        assert sent == [503, 201]  # told busy, waited its Retry-After (1 s), taken
        assert answer.status == 201
        assert admission.refused == 1
        assert await cs.proposal_count() == 1


async def test_only_the_busy_answer_is_sent_again() -> None:
    """A store that is away is answered 503 with Retry-After too: that answer is the test's to
    see, as is every other refusal."""
    away = _Given(503, {"Retry-After": "5"}, json.dumps({"title": "Store unavailable"}).encode())
    for answer in (away, _Given(429, {"Retry-After": "2"}, b"{}"), _Given(201, {}, b"{}")):
        sent: list[_Given] = []

        async def once(given: _Given = answer, log: list[_Given] = sent) -> _Given:
            log.append(given)
            return given

        assert await resent_while_busy(once) is answer
        assert sent == [answer]


async def test_a_submission_busy_every_time_is_given_back_busy_after_its_tries() -> None:
    busy = _Given(503, {"Retry-After": "0"}, json.dumps({"title": "Busy"}).encode())
    sent: list[_Given] = []

    async def once() -> _Given:
        sent.append(busy)
        return busy

    assert await resent_while_busy(once, tries=3) is busy
    assert len(sent) == 3
    with pytest.raises(ValueError, match="tries: got 0"):
        await resent_while_busy(once, tries=0)
