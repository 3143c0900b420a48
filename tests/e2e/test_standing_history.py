"""The grant modal says what people decided lately on the calls it would let through: an admin
clicks "Approve + allow similar…" (Slack's signed block_actions body, over HTTP) and the modal
the local Slack opened holds one sentence counting the agent's calls under that rule that people
approved, rejected and let expire, read from the store at the click; without it when the store
does not answer that read, the grant itself unchanged."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.standing import rules
from tests.e2e.harness import APPROVER_2, Countersign, eventually, running_countersign
from tests.e2e.test_standing import ADMIN, allow_similar, asked, configured, refund


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=configured()) as running:
        yield running


async def decided(cs: Countersign, amount: int, verb: str) -> None:
    """A refund of the agent under 'refunds', approved or rejected by a person in Slack."""
    created = await asked(cs, refund("pay_1004", amount))
    assert await cs.click(APPROVER_2, verb, created["id"]) == 200
    if verb == "reject":
        assert await cs.submit_reason(APPROVER_2, created["id"], "not this one") == 200
    _, final = await cs.read(created["id"], wait=10)
    assert final["status"] == ("succeeded" if verb == "approve" else "rejected"), final


async def views(cs: Countersign, user: str) -> list[Any]:
    return cs.slack.views(user)


def history_of(view: dict[str, Any]) -> list[str]:
    return [b["text"]["text"] for b in view["blocks"] if b.get("block_id") == "history"]


async def test_the_grant_modal_counts_the_decisions_people_made_on_such_requests(
    cs: Countersign,
) -> None:
    for amount, verb in [(10_000, "approve"), (10_001, "reject"), (10_002, "approve")]:
        await decided(cs, amount, verb)
    created = await asked(cs, refund("pay_1002", 50_000))
    await cs.posted(created["id"])

    assert await cs.click(ADMIN, "approve_standing", created["id"]) == 200

    [view] = await eventually(lambda: views(cs, ADMIN))
    assert view.view["callback_id"] == "approve_standing"
    assert history_of(view.view) == [
        "In the last 30 days people approved 2 such requests from support-bot under this rule,"
        " rejected 1 and let none expire: 1 in 3 was not approved."
    ]
    assert await allow_similar(cs, ADMIN, created["id"], "1h") == 200
    _, final = await cs.read(created["id"], wait=10)
    assert final["status"] == "succeeded"


async def test_the_grant_modal_opens_without_the_history_when_the_store_does_not_answer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the real read, given no time at all: it does not answer within its bound, as a store
    # stalled or a table too large would not (Slack opens a modal only within 3 s of the click)
    monkeypatch.setattr(rules, "HISTORY_WAIT", 0)
    async with running_countersign(tmp_path, config_edit=configured()) as cs:
        created = await asked(cs, refund("pay_1002", 50_000))
        await cs.posted(created["id"])

        with caplog.at_level(logging.WARNING, logger="bot.standing.rules"):
            assert await cs.click(ADMIN, "approve_standing", created["id"]) == 200
            [view] = await eventually(lambda: views(cs, ADMIN))

        assert history_of(view.view) == []
        assert "*Amount* up to `500.00 USD`" in json.dumps(view.view["blocks"])
        assert any(
            "without the rule's history" in r.getMessage() and created["id"] in r.getMessage()
            for r in caplog.records
            if r.levelno == logging.WARNING
        )
        assert await allow_similar(cs, ADMIN, created["id"], "1h") == 200
        _, final = await cs.read(created["id"], wait=10)
        assert final["status"] == "succeeded"
