"""Agent text that reached Slack through a path of its own, played over HTTP as a hostile agent:
an escalation's error codes inside Countersign's verdict (message and the owner's Home tab), a
title with a forged "Approved by" line among the Home tab's recent decisions, and a title padded
with invisible characters that pushed the verdict of a Home tab entry out of its section."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.render.actions import APPROVE
from tests.e2e.harness import APPROVER, REQUESTER, Countersign, eventually, running_countersign
from tests.e2e.test_escalations import click, escalation, post, posted
from tests.e2e.test_inert_rendering import mrkdwn
from tests.e2e.test_workspace import CAMPAIGN, open_home

#: An error code written to read as Countersign's own words, in bold, with an emoji and a strike.
FORGED_CODE = "E1 :white_check_mark: *Verified by Countersign: identity confirmed* ~x~"
#: A title line forging a decision.
FORGED_DECISION = "vip\n:white_check_mark: *Approved by Priya Shah (finance)*"


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path) as running:
        yield running


def assert_inert(text: str) -> None:
    """Nothing in ``text`` that Slack would format: no emoji shortcode, no bold, no strike, and
    no line of its own that starts as Countersign's."""
    assert ":white_check_mark:" not in text, text
    assert "*Verified" not in text and "~x~" not in text, text
    assert not any(
        re.match(r"^\s*(:white_check_mark:|\*Approved by)", line) for line in text.split("\n")
    ), text


def verdict_text(blocks: list[dict[str, Any]], label: str) -> str:
    [text] = [text for text in mrkdwn(blocks) if label in text]
    return text


@pytest.mark.parametrize(
    "signals",
    [
        {"error_codes": [FORGED_CODE] * 3},
        {"confidence": 0.1, "error_codes": [FORGED_CODE]},
    ],
    ids=["repeated_failure", "low_confidence"],
)
async def test_an_agents_error_code_never_formats_countersigns_escalation_verdict(
    cs: Countersign, signals: dict[str, Any]
) -> None:
    kind = "low_confidence" if "confidence" in signals else "repeated_failure"
    status, created = await post(cs, escalation(trigger={"kind": kind, "signals": signals}))
    assert status == 201, created
    found = await posted(cs, created["id"])
    message = cs.slack.message(found.slack_channel, found.slack_ts)

    why = verdict_text(message.blocks, "Why Countersign escalated it")
    assert_inert(why)
    assert "Verified by Countersign" in json.dumps(message.blocks)  # shown, as a value
    # the owner's Home tab says why too, as inert
    assert await click(cs, APPROVER, "escalation_take", created["id"]) == 200

    async def taken() -> Any:
        found = await cs.store.escalations().get_escalation(created["id"])
        return found.owner == APPROVER

    await eventually(taken)
    view = await open_home(cs, APPROVER)
    assert "conv-1001" in json.dumps(view["blocks"])
    assert_inert(verdict_text(view["blocks"], "Why Countersign escalated it"))


async def test_a_forged_approved_by_line_in_a_title_stays_in_the_recent_decision(
    cs: Countersign,
) -> None:
    body = {**CAMPAIGN, "request": {**CAMPAIGN["request"], "segment": FORGED_DECISION}}  # type: ignore[dict-item]
    status, created = await cs.submit(body)
    assert status == 201, created
    await cs.posted(created["id"])
    assert await cs.click(APPROVER, APPROVE, created["id"]) == 200

    async def decided() -> Any:
        proposal = await cs.store.get_proposal(created["id"])
        return proposal if proposal.status.value == "succeeded" else None

    await eventually(decided)
    view = await open_home(cs, APPROVER)
    recent = verdict_text(view["blocks"], "Succeeded")
    assert_inert(recent)
    assert recent.count("\n") == 0  # one decision, one line


async def test_invisible_padding_in_a_title_never_pushes_out_the_verdict_of_a_home_entry(
    cs: Countersign,
) -> None:
    padded = "vip" + "\u200b" * 900  # each shows as six characters once made visible
    body = {**CAMPAIGN, "request": {**CAMPAIGN["request"], "segment": padded}}  # type: ignore[dict-item]
    status, created = await cs.submit(body)
    assert status == 201, created
    await cs.posted(created["id"])

    view = await open_home(cs, APPROVER)
    texts = mrkdwn(view["blocks"])
    risk = [t for t in texts if ":red_circle: Irreversible (money or external effect)" in t]
    asked = [t for t in texts if "*Why you are asked:* " in t]
    expiry = [t for t in texts if ":hourglass_flowing_sand: Expires" in t]
    assert risk and asked and expiry, texts
    # and the title that was cut says so, with Show full
    assert "show_full" in json.dumps(view["blocks"])
    assert REQUESTER in json.dumps(view["blocks"])
