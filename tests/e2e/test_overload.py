"""Past capacity, callers hear so at once, and nothing changes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.api.agent_requests import SUBMISSIONS
from tests.e2e.harness import (
    AGENT_TOKEN,
    REQUESTER,
    Countersign,
    running_countersign,
)

CAMPAIGN: dict[str, Any] = {
    "operation": "crm.send_campaign",
    "request": {"segment": "all", "template": "tmpl_x", "recipients": 9},
    "requested_by": REQUESTER,
}


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path) as running:
        yield running


async def test_a_submission_past_capacity_gets_503_with_retry_after_and_stores_nothing(
    cs: Countersign,
) -> None:
    admission = cs.app[SUBMISSIONS]
    admission.limit = 1
    with admission.slot():  # capacity taken by work in flight
        answer = await cs.request(
            "POST",
            "/v1/proposals",
            data=json.dumps(CAMPAIGN).encode(),
            headers={"Authorization": f"Bearer {AGENT_TOKEN}", "Content-Type": "application/json"},
        )

    assert answer.status == 503
    assert answer.headers["Retry-After"] == "1"
    assert answer.headers["Content-Type"].startswith("application/problem+json")
    assert "Retry after 1 s." in answer.json()["detail"]  # for whoever sees no headers
    assert await cs.proposal_count() == 0
    status, _ = await cs.submit(CAMPAIGN)  # room again: accepted
    assert status == 201
