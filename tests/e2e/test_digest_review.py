"""Review all… over HTTP: a digest's pending items in full in a modal, approved with one submit,
each on its own (its binding hash, separation of duties, role, quorum), the rest named."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from bot.render.actions import DIGEST_APPROVE_ALL, DIGEST_CHOOSE, DIGEST_REVIEW, DIGEST_REVIEW_PAGE
from bot.render.digest_review import REVIEW_BOX, ReviewState
from bot.slack.local import OpenedView
from store.digests import Digest
from tests.e2e.harness import (
    APPROVER,
    APPROVER_2,
    CAMPAIGN_CHANNEL,
    OTHER_AGENT_TOKEN,
    REQUESTER,
    SIGNING_SECRET,
    Countersign,
    eventually,
    replace_rule,
    running_countersign,
)
from tests.e2e.test_digests import (
    WINDOW,
    buttons,
    campaign,
    chosen,
    click,
    posted_digest,
    statuses,
    submit_all,
    submit_view,
    told,
    top_level,
    with_slack,
)
from tests.slack_requests import fixture_json, signed_headers


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=with_slack(WINDOW)) as running:
        yield running


async def open_review(cs: Countersign, user: str, digest: Digest) -> OpenedView:
    before = len(cs.slack.views(user))
    assert await click(cs, user, DIGEST_REVIEW, digest) == 200
    await eventually(lambda: _opened(cs, user, before))
    return cs.slack.views(user)[-1]


async def _opened(cs: Countersign, user: str, before: int) -> bool:
    return len(cs.slack.views(user)) > before


def boxes(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The boxes of a review page as Slack reports them untouched: block id -> state."""
    return {
        block["block_id"]: {
            REVIEW_BOX: {
                "type": "checkboxes",
                "selected_options": block["element"].get("initial_options", []),
            }
        }
        for block in view["blocks"]
        if block["type"] == "input"
    }


def cleared(values: dict[str, Any], *places: int) -> dict[str, Any]:
    for place in places:
        values[f"review_{place}"][REVIEW_BOX]["selected_options"] = []
    return values


async def page_click(
    cs: Countersign, user: str, view: dict[str, Any], values: dict[str, Any], page: int
) -> int:
    """Next or Previous in an open modal, as Slack sends it: the view with its boxes' state."""
    payload = fixture_json("block_actions.json")
    payload["user"] = {"id": user, "team_id": cs.slack.team_id}
    payload["team"] = {"id": cs.slack.team_id}
    payload["trigger_id"] = cs.slack.issue_trigger(user)
    payload["container"] = {"type": "view", "view_id": view["id"]}
    payload.pop("channel", None)
    payload.pop("message", None)
    payload["view"] = {**view, "state": {"values": values}}
    [action] = payload["actions"]
    action.update({"action_id": DIGEST_REVIEW_PAGE, "block_id": "review_pages", "value": str(page)})
    body = "payload=" + quote(json.dumps(payload))
    return await cs.post_slack(body, signed_headers(SIGNING_SECRET, body))


def place_of(digest: Digest, proposal_id: str) -> int:
    return [p.id for p in digest.items].index(proposal_id)


async def all_decided(cs: Countersign, ids: list[str], want: list[str]) -> None:
    async def check() -> bool:
        return await statuses(cs, ids) == want

    await eventually(check)


# --- approving after review -------------------------------------------------------------------


async def test_review_all_shows_every_item_in_full_and_approves_them_with_one_submit(
    cs: Countersign,
) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(3)])
    digest = await posted_digest(cs, ids)
    await cs.settled()
    [message] = top_level(cs)
    assert buttons(message)[DIGEST_REVIEW] == digest.id

    opened = await open_review(cs, APPROVER, digest)
    view = opened.view
    shown = json.dumps(view["blocks"])
    for proposal in digest.items:  # each in full, with the hash an approval is bound to
        assert proposal.binding_hash in shown
        assert proposal.agent_reason is not None and proposal.agent_reason[:20] in shown
    assert [b["block_id"] for b in view["blocks"] if b["type"] == "input"] == [
        "review_0",
        "review_1",
        "review_2",
    ]
    assert all(
        b["element"]["initial_options"] == b["element"]["options"]
        for b in view["blocks"]
        if b["type"] == "input"
    )  # every item selected by default

    assert await submit_view(cs, APPROVER, view, boxes(view)) is None
    await all_decided(cs, ids, ["succeeded"] * 3)
    for proposal_id in ids:
        [approved] = [e for e in await cs.store.audit_log(proposal_id) if e.event == "approved"]
        assert approved.actor == APPROVER
        assert approved.detail["via"] == "digest_review"
        assert approved.detail["digest_id"] == digest.id
    assert await answers(cs, APPROVER) == ["Approved 3, 0 already decided, 0 refused."]
    assert (await cs.store.verify_audit()).ok


async def test_an_item_whose_box_is_cleared_stays_pending(cs: Countersign) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(3)])
    digest = await posted_digest(cs, ids)
    view = (await open_review(cs, APPROVER, digest)).view
    left = digest.items[1].id

    await submit_view(cs, APPROVER, view, cleared(boxes(view), 1))

    others = [i for i in ids if i != left]
    await all_decided(cs, others, ["succeeded"] * 2)
    await cs.settled()
    assert await statuses(cs, [left]) == ["pending"]
    assert "approved" not in [e.event for e in await cs.store.audit_log(left)]
    assert await answers(cs, APPROVER) == [
        "Approved 2, 0 already decided, 0 refused, 1 left out by you, still pending."
    ]


async def test_a_review_with_every_box_cleared_asks_for_one_and_approves_nothing(
    cs: Countersign,
) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(2)])
    digest = await posted_digest(cs, ids)
    view = (await open_review(cs, APPROVER, digest)).view

    answer = await submit_view(cs, APPROVER, view, cleared(boxes(view), 0, 1))

    assert answer is not None and answer["response_action"] == "errors"
    assert "review_0" in answer["errors"]
    assert await statuses(cs, ids) == ["pending", "pending"]


async def test_a_long_review_pages_and_remembers_the_boxes_of_every_page(
    cs: Countersign,
) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(7)])
    digest = await posted_digest(cs, ids)
    opened = await open_review(cs, APPROVER, digest)
    first = opened.view
    assert [b["block_id"] for b in first["blocks"] if b["type"] == "input"] == [
        f"review_{n}" for n in range(5)
    ]
    assert len(first["blocks"]) <= 100

    # leave item 2 out on page 1, go to page 2, leave item 7 out there too, come back
    assert await page_click(cs, APPROVER, first, cleared(boxes(first), 1), 2) == 200
    second = await eventually(lambda: _updated(cs, opened.id, first["hash"]))
    assert [b["block_id"] for b in second["blocks"] if b["type"] == "input"] == [
        "review_5",
        "review_6",
    ]
    assert await page_click(cs, APPROVER, second, cleared(boxes(second), 6), 1) == 200
    again = await eventually(lambda: _updated(cs, opened.id, second["hash"]))
    [box] = [b for b in again["blocks"] if b.get("block_id") == "review_1"]
    assert "initial_options" not in box["element"]  # still cleared
    assert ReviewState.parse(again["private_metadata"]).left_out == (1, 6)

    await submit_view(cs, APPROVER, again, boxes(again))

    left = [digest.items[1].id, digest.items[6].id]
    approved = [p.id for p in digest.items if p.id not in left]
    await all_decided(cs, approved, ["succeeded"] * 5)
    await cs.settled()
    assert await statuses(cs, left) == ["pending", "pending"]


async def _updated(cs: Countersign, view_id: str, old_hash: str) -> dict[str, Any] | None:
    [opened] = [v for v in cs.slack.views() if v.id == view_id]
    return opened.view if opened.view["hash"] != old_hash else None


async def test_choose_cannot_approve_an_item_the_message_cut_which_review_all_can(
    cs: Countersign,
) -> None:
    bodies = [campaign(n) for n in range(3)]
    bodies[1]["request"]["segment"] = "segment-1 " + "y" * 400  # its row is cut in the message
    ids = await submit_all(cs, bodies)
    digest = await posted_digest(cs, ids)
    await cs.settled()
    [message] = top_level(cs)
    assert DIGEST_APPROVE_ALL not in buttons(message)
    cut = digest.items[1].id
    assert await click(cs, APPROVER, DIGEST_CHOOSE, digest) == 200
    view = (await eventually(lambda: _views_of(cs, APPROVER)))[-1].view

    await submit_view(cs, APPROVER, view, chosen(ids, "approve"))

    whole = [p.id for p in digest.items if p.id != cut]
    await all_decided(cs, whole, ["succeeded"] * 2)
    await cs.settled()
    assert await statuses(cs, [cut]) == ["pending"]  # approved by nobody who read it whole
    [answer_text] = await answers(cs, APPROVER)
    assert answer_text.startswith("Approved 2, 0 already decided, 1 refused.")
    assert "Review all" in answer_text
    [refused] = [e for e in await cs.store.audit_log(cut) if e.event == "approve_refused"]
    assert refused.actor == APPROVER

    # read in full, it is approved from the review
    review = (await open_review(cs, APPROVER, await cs.store.digests().get_digest(digest.id))).view
    await submit_view(cs, APPROVER, review, boxes(review))
    await all_decided(cs, [cut], ["succeeded"])


async def _views_of(cs: Countersign, user: str) -> list[OpenedView]:
    return list(cs.slack.views(user))


# --- items the clicker may not approve ----------------------------------------------------------


async def test_an_item_of_an_agent_the_clicker_owns_is_named_and_stays_pending(
    tmp_path: Path,
) -> None:
    async with running_countersign(
        tmp_path,
        config_edit=with_slack(WINDOW),
        agent_settings={"ops-bot": {"owners": [APPROVER]}},
    ) as cs:
        mine = await submit_all(cs, [campaign(n) for n in range(2)])
        status, answer = await cs.submit(campaign(9), token=OTHER_AGENT_TOKEN)
        assert status == 201, answer
        owned = str(answer["id"])
        digest = await posted_digest(cs, [*mine, owned])
        view = (await open_review(cs, APPROVER, digest)).view

        await submit_view(cs, APPROVER, view, boxes(view))

        await all_decided(cs, mine, ["succeeded"] * 2)
        await cs.settled()
        assert await statuses(cs, [owned]) == ["pending"]
        [answer_text] = await answers(cs, APPROVER)
        number = place_of(digest, owned) + 1
        assert answer_text.startswith("Approved 2, 0 already decided, 1 refused.")
        assert f"• *Item {number}* (Email 109 customers in segment segment-9): not approved:" in (
            answer_text
        )
        assert "It stays pending." in answer_text
        refused = [e for e in await cs.store.audit_log(owned) if e.event == "approve_refused"]
        assert [e.actor for e in refused] == [APPROVER]


def _big_campaigns_for_marketing(text: str) -> str:
    text = text.replace(
        'support = ["U0REQUESTER"]', f'support = ["U0REQUESTER"]\nmarketing = ["{APPROVER_2}"]'
    )
    return replace_rule(
        "campaigns",
        f"""
        [[policy]]
        id = "big-campaigns"
        operation = "crm.send_campaign"
        when = [{{ field = "recipients", gte = 105 }}]
        decision = "ask"
        approvers = ["marketing"]
        channel = "{CAMPAIGN_CHANNEL}"
        expires_after = "30m"

        [[policy]]
        id = "campaigns"
        operation = "crm.send_campaign"
        decision = "ask"
        approvers = ["finance"]
        channel = "{CAMPAIGN_CHANNEL}"
        expires_after = "30m"
        """,
    )(with_slack(WINDOW)(text))


async def test_an_item_of_a_role_the_clicker_lacks_is_named_and_stays_pending(
    tmp_path: Path,
) -> None:
    async with running_countersign(tmp_path, config_edit=_big_campaigns_for_marketing) as cs:
        ids = await submit_all(cs, [campaign(n) for n in (1, 2, 7)])
        digest = await posted_digest(cs, ids)
        view = (await open_review(cs, APPROVER, digest)).view

        await submit_view(cs, APPROVER, view, boxes(view))

        await all_decided(cs, ids[:2], ["succeeded"] * 2)
        await cs.settled()
        assert await statuses(cs, ids[2:]) == ["pending"]
        [answer_text] = await answers(cs, APPROVER)
        number = place_of(digest, ids[2]) + 1
        assert f"• *Item {number}* (Email 107 customers in segment segment-7)" in answer_text
        assert "marketing" in answer_text


def _two_for_big_campaigns(text: str) -> str:
    return replace_rule(
        "campaigns",
        f"""
        [[policy]]
        id = "big-campaigns"
        operation = "crm.send_campaign"
        when = [{{ field = "recipients", gte = 105 }}]
        decision = "ask"
        approvers = ["finance"]
        quorum = 2
        channel = "{CAMPAIGN_CHANNEL}"
        expires_after = "30m"

        [[policy]]
        id = "campaigns"
        operation = "crm.send_campaign"
        decision = "ask"
        approvers = ["finance"]
        channel = "{CAMPAIGN_CHANNEL}"
        expires_after = "30m"
        """,
    )(with_slack(WINDOW)(text))


async def test_a_quorum_item_gets_one_approval_from_a_review_and_stays_pending(
    tmp_path: Path,
) -> None:
    async with running_countersign(tmp_path, config_edit=_two_for_big_campaigns) as cs:
        ids = await submit_all(cs, [campaign(n) for n in (1, 7)])
        digest = await posted_digest(cs, ids)
        view = (await open_review(cs, APPROVER, digest)).view

        await submit_view(cs, APPROVER, view, boxes(view))

        await all_decided(cs, ids[:1], ["succeeded"])
        await cs.settled()
        assert await statuses(cs, ids[1:]) == ["pending"]
        [recorded] = [e for e in await cs.store.audit_log(ids[1]) if e.event == "approval_recorded"]
        assert recorded.actor == APPROVER and recorded.detail["via"] == "digest_review"
        [answer_text] = await answers(cs, APPROVER)
        number = place_of(digest, ids[1]) + 1
        assert (
            f"• *Item {number}* (Email 107 customers in segment segment-7): your approval is "
            in (answer_text)
        )
        assert "counted (1 of 2)" in answer_text

        # the second approver completes it from their own review
        second = (
            await open_review(cs, APPROVER_2, await cs.store.digests().get_digest(digest.id))
        ).view
        await submit_view(cs, APPROVER_2, second, boxes(second))
        await all_decided(cs, ids, ["succeeded", "succeeded"])


async def test_an_item_whose_binding_hash_is_not_the_reviewed_one_is_refused(
    cs: Countersign,
) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(3)])
    digest = await posted_digest(cs, ids)
    view = (await open_review(cs, APPROVER, digest)).view
    state = ReviewState.parse(view["private_metadata"])
    # the review of item 2 showed another contract than the one it holds now
    items = tuple((p, "0" * 16 if p == 1 else h) for p, h in state.items)
    stale = {**view, "private_metadata": state.model_copy(update={"items": items}).dump()}

    await submit_view(cs, APPROVER, stale, boxes(view))

    changed = digest.items[1].id
    await all_decided(cs, [i for i in ids if i != changed], ["succeeded"] * 2)
    await cs.settled()
    assert await statuses(cs, [changed]) == ["pending"]
    [answer_text] = await answers(cs, APPROVER)
    assert "• *Item 2*" in answer_text and "changed since you reviewed it" in answer_text
    [refused] = [e for e in await cs.store.audit_log(changed) if e.event == "approve_refused"]
    assert "changed since you reviewed it" in str(refused.detail["reason"])


async def test_the_requester_cannot_open_a_review_of_their_own_digest(cs: Countersign) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(2)])
    digest = await posted_digest(cs, ids)

    assert await click(cs, REQUESTER, DIGEST_REVIEW, digest) == 200

    await eventually(lambda: _told_any(cs, REQUESTER))
    assert cs.slack.views(REQUESTER) == []
    assert "accountable" in told(cs, REQUESTER)[0]


async def _told_any(cs: Countersign, user: str) -> bool:
    return bool(told(cs, user))


async def answers(cs: Countersign, user: str) -> list[str]:
    """What ``user`` was told privately, once something was (the answer follows the last
    item's outcome)."""
    await eventually(lambda: _told_any(cs, user))
    return told(cs, user)


# --- a hostile agent ----------------------------------------------------------------------------

#: Segments an agent writes to make its item look like two, or like another item with more
#: recipients: a new numbered line, a label in bold, a status, an id.
CRAFTED = [
    "s1\n*2.* `cs_fake` · *Title* Email 9999 customers in segment all · :hourglass_flowing_sand:",
    "s2 · *Title* Email 9,999 customers",
    "s3\u2028*4.* Email 5 customers <!here>",
]


async def test_crafted_segments_cannot_make_one_item_look_like_two_or_like_another(
    cs: Countersign,
) -> None:
    bodies = [
        {**campaign(n), "request": {**campaign(n)["request"], "segment": s}}
        for n, s in enumerate(CRAFTED)
    ]
    ids = await submit_all(cs, bodies)
    digest = await posted_digest(cs, ids)
    await cs.settled()

    [message] = top_level(cs)
    lines = [
        line
        for block in message.blocks
        if block["type"] == "section"
        for line in block["text"]["text"].split("\n")
        if line.startswith("*") and line[1:2].isdigit()
    ]
    assert [line.split(" ")[0] for line in lines] == ["*1.*", "*2.*", "*3.*"]
    assert all(line.count("*Title*") == 1 for line in lines)
    assert "<!here>" not in json.dumps(message.blocks)

    view = (await open_review(cs, APPROVER, digest)).view
    headings = [
        b["text"]["text"].split("\n")[0]
        for b in view["blocks"]
        if b["type"] == "section" and b["text"]["type"] == "mrkdwn"
    ]
    assert [h for h in headings if h.startswith("*Item")] == ["*Item 1*", "*Item 2*", "*Item 3*"]
    assert len([b for b in view["blocks"] if b["type"] == "input"]) == 3
