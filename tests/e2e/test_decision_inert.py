"""A decision operation's title and detail are the agent's words: they reach Slack inert (no
mention, link, broadcast or forged Countersign line), like every other field an agent writes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.harness import REQUESTER, Countersign, running_countersign
from tests.e2e.test_client import with_decisions
from tests.e2e.test_inert_rendering import ATTACK, FORGERY, mrkdwn, posted_message


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=with_decisions) as running:
        yield running


async def test_a_decisions_title_and_detail_reach_slack_inert(cs: Countersign) -> None:
    status, created = await cs.submit(
        {
            "operation": "decision",
            "request": {"title": f"{FORGERY} <!channel>", "detail": ATTACK},
            "requested_by": REQUESTER,
        }
    )
    assert status == 201, created
    message = await posted_message(cs, created["id"])
    texts = [*mrkdwn(message.blocks), message.text]

    for token in ("<@U0BOSS>", "<!here>", "<!channel>", "<https://evil", ":white_check_mark:"):
        assert not any(token in text for text in texts), token
    assert message.blocks[1]["type"] == "header"
    assert message.blocks[1]["text"]["emoji"] is False
    # the forged line never stands as a line of Countersign's own
    assert not any(
        line.startswith("*Approved by")
        for text in mrkdwn(message.blocks)
        for line in text.split("\n")
    )
    assert "U0BOSS" in json.dumps(message.blocks)  # shown, as text
