"""What the approver sees is what runs, over HTTP: an agent that writes Slack markup, mentions,
links, bidi overrides and fake Countersign lines into its proposal gets them shown inert in its
labelled place; a clipped value offers Show full, whose signed click opens the whole frozen
proposal with its binding hash; a digest with a clipped item offers no Approve all; an edit's
message says who edited it and what changed."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.render.actions import DIGEST_APPROVE_ALL, DIGEST_CHOOSE, DIGEST_SHOW_FULL, SHOW_FULL
from bot.slack.local import StoredMessage
from tests.e2e.harness import (
    APPROVER,
    APPROVER_2,
    CAMPAIGN_CHANNEL,
    OUTSIDER,
    REQUESTER,
    SIGNING_SECRET,
    Countersign,
    eventually,
    running_countersign,
)
from tests.e2e.test_edit import asked, number, open_edit, refund, submit_edit, the_edit_of
from tests.slack_requests import block_action_body, signed_headers, slash_command_body

FORGERY = "*Approved by <@U0BOSS>*\n:white_check_mark: Why you are asked: safe"
ATTACK = (
    f"{FORGERY}\n<!here> <!channel> <https://evil.example|click> "
    "refund \u202e0001\u202c a\u200db\ufeffc"
)


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path) as running:
        yield running


def campaign(segment: str, **extra: Any) -> dict[str, Any]:
    request = {"segment": segment, "template": "tmpl_winback", "recipients": 1200, **extra}
    return {
        "operation": "crm.send_campaign",
        "request": request,
        "requested_by": REQUESTER,
        "run_id": FORGERY,
        "reason": ATTACK,
    }


async def posted_message(cs: Countersign, proposal_id: str) -> StoredMessage:
    proposal = await cs.posted(proposal_id)
    return cs.slack.message(proposal.slack_channel, proposal.slack_ts)


async def views_of(cs: Countersign, user: str) -> list[Any] | None:
    """The modals opened for ``user``, once there is one."""
    return cs.slack.views(user) or None


async def told(cs: Countersign, user: str) -> list[str] | None:
    """What ``user`` was told privately, once something was."""
    return [m.text for m in cs.slack.ephemeral(user)] or None


def mrkdwn(blocks: Any) -> list[str]:
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "mrkdwn":
                found.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(blocks)
    return found


def action_ids(blocks: list[dict[str, Any]]) -> dict[str, str]:
    return {
        element["action_id"]: element["value"]
        for block in blocks
        if block["type"] == "actions"
        for element in block["elements"]
    }


async def test_an_agents_markup_reaches_slack_inert_and_labelled(cs: Countersign) -> None:
    status, created = await cs.submit(campaign(f"vip {FORGERY} <!here>"))
    assert status == 201, created
    message = await posted_message(cs, created["id"])
    blocks = message.blocks
    texts = [*mrkdwn(blocks), message.text]

    # nothing the agent wrote mentions, links, pages or shows an emoji
    for token in ("<@U0BOSS>", "<!here>", "<!channel>", "<https://evil", ":white_check_mark:"):
        assert not any(token in text for text in texts), token
    everything = json.dumps(blocks, ensure_ascii=False)
    assert not any(unicodedata.category(c) in ("Cf", "Cc") for c in everything)
    assert "\\\\u202e" in everything  # the override is shown, by its code
    # Countersign's lines are exactly its own: one "Why you are asked", right after the title
    asked = [
        line
        for text in mrkdwn(blocks)
        for line in text.split("\n")
        if re.match(r"^\*Why you are asked:\*", line)
    ]
    assert asked == [
        "*Why you are asked:* every request of this kind is asked for (rule *campaigns*)"
    ]
    # the verdict first, in a block of its own; then the title (the agent's values), plain text
    assert blocks[0]["text"]["text"].startswith(":red_circle: Irreversible")
    assert blocks[1]["type"] == "header" and blocks[1]["text"]["emoji"] is False
    # the agent's words: labelled, each line quoted
    [reason] = [t for t in mrkdwn(blocks) if t.startswith("*Agent's explanation (unverified)*")]
    assert reason.split("\n")[1:] == [
        ">\u2217Approved by &lt;@U0BOSS&gt;\u2217",
        ">\u2236white_check_mark: Why you are asked: safe",
        ">&lt;!here&gt; &lt;!channel&gt; &lt;https\u2236//evil.example|click&gt; refund "
        "\\u202e0001\\u202c a\\u200db\\ufeffc",
    ]


async def test_a_clipped_value_offers_show_full_and_the_signed_click_opens_it_whole(
    cs: Countersign,
) -> None:
    send_at = "tomorrow " + "x" * 4000 + " END"
    status, created = await cs.submit(campaign("vip", send_at=send_at))
    assert status == 201, created
    message = await posted_message(cs, created["id"])
    assert "*Shown in part*" in json.dumps(message.blocks)
    assert action_ids(message.blocks)[SHOW_FULL] == created["id"]

    # anyone in the channel may look (no role), with a real, signed click
    assert await cs.click(OUTSIDER, SHOW_FULL, created["id"]) == 200
    views = await eventually(lambda: views_of(cs, OUTSIDER))
    view = views[-1].view
    assert "submit" not in view  # read-only
    plain = "".join(
        block["text"]["text"]
        for block in view["blocks"]
        if block["type"] == "section" and block["text"]["type"] == "plain_text"
    )
    assert json.dumps(send_at) in plain  # the frozen argument, whole
    stored = await cs.store.get_proposal(created["id"])
    assert stored.binding_hash in json.dumps(view)
    # nothing was decided or changed by looking
    assert stored.status.value == "pending"


async def test_an_unsigned_show_full_click_opens_nothing(cs: Countersign) -> None:
    status, created = await cs.submit(campaign("vip", send_at="x" * 4000))
    assert status == 201, created
    proposal = await cs.posted(created["id"])
    body = block_action_body(
        user_id=OUTSIDER,
        action_id=SHOW_FULL,
        value=created["id"],
        channel_id=proposal.slack_channel,
        message_ts=proposal.slack_ts,
        trigger_id=cs.slack.issue_trigger(OUTSIDER),
    )
    unsigned = {"Content-Type": "application/x-www-form-urlencoded"}
    assert await cs.post_slack(body, headers=unsigned) == 401
    assert await cs.post_slack(body, headers=signed_headers("not-the-secret", body)) == 401
    await cs.settled()
    assert cs.slack.views(OUTSIDER) == []


async def test_a_digest_with_a_clipped_item_offers_choose_but_not_approve_all(
    tmp_path: Path,
) -> None:
    window = "\n[slack]\ndigest_window_seconds = 1.5\n"
    async with running_countersign(tmp_path, config_edit=lambda t: t + window) as cs:
        bodies = [campaign(f"segment-{n}") for n in range(3)]
        bodies[1] = campaign("segment-1 " + "y" * 400)  # its title is cut in the row
        ids = []
        for body in bodies:
            status, created = await cs.submit(body)
            assert status == 201, created
            ids.append(created["id"])

        async def digest_message() -> StoredMessage | None:
            proposals = [await cs.store.get_proposal(i) for i in ids]
            if not all(p.slack_ts for p in proposals) or len({p.digest_id for p in proposals}) != 1:
                return None
            return cs.slack.message(CAMPAIGN_CHANNEL, proposals[0].slack_ts or "")

        message = await eventually(digest_message)
        actions = action_ids(message.blocks)
        assert DIGEST_APPROVE_ALL not in actions
        assert DIGEST_CHOOSE in actions
        digest_id = actions[DIGEST_SHOW_FULL]
        assert "*Shown in part*" in json.dumps(message.blocks)

        proposal = await cs.store.get_proposal(ids[1])
        click = block_action_body(
            user_id=OUTSIDER,
            action_id=DIGEST_SHOW_FULL,
            value=digest_id,
            channel_id=CAMPAIGN_CHANNEL,
            message_ts=proposal.slack_ts or "",
            trigger_id=cs.slack.issue_trigger(OUTSIDER),
        )
        assert await cs.post_slack(click) == 200
        views = await eventually(lambda: views_of(cs, OUTSIDER))
        shown = json.dumps(views[-1].view, ensure_ascii=False)
        assert "segment-1 " + "y" * 400 in shown
        for item in ids:
            assert (await cs.store.get_proposal(item)).binding_hash in shown

        # an Approve all click (a message from before, say) is refused: nothing runs
        approve_all = block_action_body(
            user_id=APPROVER,
            action_id=DIGEST_APPROVE_ALL,
            value=digest_id,
            channel_id=CAMPAIGN_CHANNEL,
            message_ts=proposal.slack_ts or "",
            trigger_id=cs.slack.issue_trigger(APPROVER),
            block_id="digest",
        )
        assert await cs.post_slack(approve_all) == 200
        refusal = await eventually(lambda: told(cs, APPROVER))
        assert "not shown in full" in refusal[-1]
        await cs.settled()
        assert [str((await cs.store.get_proposal(i)).status) for i in ids] == ["pending"] * 3
        assert cs.target.executions() == []


async def test_an_edits_message_says_who_edited_it_and_what_changed(cs: Countersign) -> None:
    old = await asked(cs, refund("pay_1002"))
    view = await open_edit(cs, APPROVER, old["id"])
    await submit_edit(cs, APPROVER, view, amount_cents=number("500"))
    edit = await the_edit_of(cs, old["id"])

    message = await posted_message(cs, edit.id)
    [said] = [text for text in mrkdwn(message.blocks) if "Edited by" in text]
    assert f"*Edited by <@{APPROVER}>*" in said
    assert "• *Amount*: _(not set)_ → `500.00 USD`" in said
    assert "payment_id" not in said  # unchanged: not listed


async def test_countersign_show_and_the_home_tab_say_what_an_edit_changed_and_why_asked(
    cs: Countersign,
) -> None:
    old = await asked(cs, refund("pay_1002"))
    view = await open_edit(cs, APPROVER, old["id"])
    await submit_edit(cs, APPROVER, view, amount_cents=number("500"))
    edit = await the_edit_of(cs, old["id"])

    shown = json.dumps((await slash(cs, APPROVER_2, f"show {edit.id}"))["blocks"])
    assert f"*Edited by <@{APPROVER}>*" in shown
    assert "*Amount*: _(not set)_ \\u2192 `500.00 USD`" in shown
    assert "*Why you are asked:* Amount 500.00 USD" in shown
    assert "Agent's explanation (unverified)" in shown
    assert ">The customer asked for their money back." in shown

    listed = json.dumps((await slash(cs, APPROVER_2, "list"))["blocks"])
    assert "*Amount*: _(not set)_ \\u2192 `500.00 USD`" in listed
    assert ">The customer asked for their money back." in listed


async def slash(cs: Countersign, user: str, text: str) -> dict[str, Any]:
    """``/countersign text`` as ``user``, signed; the answer Slack would show them."""
    body = slash_command_body(user_id=user, command="/countersign", text=text)
    answer = await cs.request(
        "POST", "/slack/events", data=body.encode(), headers=signed_headers(SIGNING_SECRET, body)
    )
    assert answer.status == 200, answer.body
    answered: dict[str, Any] = answer.json()
    return answered
