"""The approver's workspace over HTTP: the App Home tab (app_home_opened, clicks on the tab) and
the /countersign slash command, answered privately; what was published is checked at the local
Slack."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest

from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    APPROVER_2,
    OUTSIDER,
    REQUESTER,
    SIGNING_SECRET,
    Countersign,
    eventually,
    running_countersign,
)
from tests.slack_requests import (
    app_home_opened_body,
    block_action_body,
    fixture_json,
    signed_headers,
    slash_command_body,
)


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path) as running:
        yield running


#: Asks finance, expires in 30 minutes; the accountable human is REQUESTER.
CAMPAIGN = {
    "operation": "crm.send_campaign",
    "request": {"segment": "churn-risk", "template": "tmpl_winback", "recipients": 1200},
    "requested_by": REQUESTER,
}
#: Asks finance, expires in an hour; the accountable human is APPROVER_2.
REFUND = {
    "operation": "payments.refund",
    "request": {"payment_id": "pay_1002"},
    "requested_by": APPROVER_2,
}


async def open_home(cs: Countersign, user: str) -> dict[str, Any]:
    """Open ``user``'s Home tab the way Slack says so; return the view published for them."""
    before = cs.slack.home_view(user)
    body = app_home_opened_body(user_id=user)
    headers = signed_headers(SIGNING_SECRET, body, content_type="application/json")
    assert await cs.post_slack(body, headers) == 200

    async def published() -> Any:
        view = cs.slack.home_view(user)
        return view if view is not None and view is not before else None

    view: dict[str, Any] = await eventually(published)
    return view


async def home_click(cs: Countersign, user: str, action_id: str, value: str) -> int:
    """A button click on the Home tab: a block_actions payload whose container is the view."""
    form = block_action_body(
        user_id=user,
        action_id=action_id,
        value=value,
        channel_id="C0UNUSED",
        message_ts="1.1",
        trigger_id=cs.slack.issue_trigger(user),
        block_id=f"decision-{value}",
    )
    payload = json.loads(_unquote_payload(form))
    for key in ("channel", "message", "response_url"):
        payload.pop(key, None)
    view = fixture_json("app_home_opened.json")["event"]["view"]
    payload["container"] = {"type": "view", "view_id": view["id"]}
    payload["view"] = view
    body = "payload=" + quote(json.dumps(payload))
    return await cs.post_slack(body)


def _unquote_payload(form: str) -> str:
    return unquote(form.removeprefix("payload="))


def titles(view: dict[str, Any]) -> list[str]:
    return [
        # the title is the section's first line; why the policy asked and the agent's words
        # follow it
        block["text"]["text"].split("\n")[0].strip("*")
        for block in view["blocks"]
        if block["type"] == "section" and block.get("fields") is not None
    ]


def decision_buttons(view: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (element["action_id"], element["value"])
        for block in view["blocks"]
        if block["type"] == "actions" and block["block_id"].startswith("decision-")
        for element in block["elements"]
        if element["action_id"] != "show_full"  # not a decision: the campaign's fields are cut
    ]


async def slash(cs: Countersign, user: str, text: str) -> dict[str, Any]:
    body = slash_command_body(user_id=user, command="/countersign", text=text)
    answer = await cs.request(
        "POST", "/slack/events", data=body.encode(), headers=signed_headers(SIGNING_SECRET, body)
    )
    assert answer.status == 200, answer.body
    answered: dict[str, Any] = answer.json()
    return answered


async def test_home_lists_what_the_person_may_decide_soonest_expiry_first(
    cs: Countersign,
) -> None:
    _, refund = await cs.submit(REFUND)
    _, campaign = await cs.submit(CAMPAIGN)

    approver = await open_home(cs, APPROVER)
    requester = await open_home(cs, REQUESTER)
    outsider = await open_home(cs, OUTSIDER)

    assert approver["type"] == "home"
    assert titles(approver) == [
        "Email 1200 customers in segment churn-risk",  # expires in 30 minutes
        "Refund 1,200.00 USD to cus_grace",  # in an hour
    ]
    assert decision_buttons(approver) == [
        ("approve", campaign["id"]),
        ("reject", campaign["id"]),
        ("approve", refund["id"]),
        ("reject", refund["id"]),
    ]
    # separation of duties: the accountable human does not see their own agent's request
    assert [value for _, value in decision_buttons(requester)] == [refund["id"]] * 2
    assert decision_buttons(outsider) == []
    assert "Nothing waits for you" in json.dumps(outsider["blocks"])


async def test_approve_on_the_home_tab_behaves_like_in_the_channel_and_the_tab_refreshes(
    cs: Countersign,
) -> None:
    _, campaign = await cs.submit(CAMPAIGN)
    await cs.posted(campaign["id"])
    await open_home(cs, APPROVER)
    other_before = await open_home(cs, APPROVER_2)
    assert decision_buttons(other_before) != []

    assert await home_click(cs, APPROVER, "approve", campaign["id"]) == 200

    _, final = await cs.read(campaign["id"], wait=10)
    assert (final["status"], final["decision"]["by"]) == ("succeeded", APPROVER)
    assert len(cs.target.executions()) == 1

    async def refreshed(user: str, showing: str = "") -> Any:
        view = cs.slack.home_view(user)
        done = view is not None and decision_buttons(view) == []
        return view if done and showing in json.dumps(view["blocks"]) else None

    # (a refresh while it executed shows no buttons yet no outcome: the next one does)
    await eventually(lambda: refreshed(APPROVER, "Succeeded: Email 1200 customers"))
    await eventually(lambda: refreshed(APPROVER_2))  # another approver of the rule


async def test_a_refused_click_on_the_home_tab_is_answered_on_the_tab(cs: Countersign) -> None:
    _, campaign = await cs.submit(CAMPAIGN)
    await cs.posted(campaign["id"])
    await open_home(cs, REQUESTER)

    await home_click(cs, REQUESTER, "approve", campaign["id"])

    async def noticed() -> Any:
        view = cs.slack.home_view(REQUESTER)
        return view if view is not None and "accountable" in json.dumps(view["blocks"]) else None

    await eventually(noticed)
    assert cs.slack.ephemeral(REQUESTER) == []  # no channel message the person would not see
    assert (await cs.store.get_proposal(campaign["id"])).status == "pending"
    refused = [e.event for e in await cs.store.audit_log(campaign["id"])]
    assert "approve_refused" in refused


async def test_the_home_tab_shows_the_escalations_the_person_owns(cs: Countersign) -> None:
    body = {
        "conversation_id": "conv-77",
        "customer_ref": "cus_ada",
        "summary": {"goal": "Cancel the contract", "blocked_on": "legal review"},
        "trigger": {"kind": "reserved_topic", "signals": {"topic_labels": ["legal"]}},
    }
    answer = await cs.request(
        "POST",
        "/v1/escalations",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {AGENT_TOKEN}", "Content-Type": "application/json"},
    )
    created = answer.json()
    assert answer.status == 201, created
    before = await open_home(cs, APPROVER)
    assert "conv-77" not in json.dumps(before["blocks"])

    async def posted() -> Any:
        found = await cs.store.escalations().get_escalation(created["id"])
        return found if found.slack_ts else None

    found = await eventually(posted)
    click = block_action_body(
        user_id=APPROVER,
        action_id="escalation_take",
        value=created["id"],
        channel_id=found.slack_channel,
        message_ts=found.slack_ts,
        block_id="escalation",
    )
    await cs.post_slack(click)

    async def owned() -> Any:
        view = cs.slack.home_view(APPROVER)
        return view if view is not None and "conv-77" in json.dumps(view["blocks"]) else None

    view = await eventually(owned)
    actions = [
        element["action_id"]
        for block in view["blocks"]
        if block["type"] == "actions" and block["block_id"].startswith("escalation-")
        for element in block["elements"]
    ]
    assert actions == ["escalation_hand_back", "escalation_resolve"]


async def test_slash_list_answers_privately_with_the_same_buttons(cs: Countersign) -> None:
    _, campaign = await cs.submit(CAMPAIGN)

    answer = await slash(cs, APPROVER, "list")
    nothing = await slash(cs, REQUESTER, "list")

    assert answer["response_type"] == "ephemeral"
    assert "1 proposal(s) wait" in answer["text"]
    shown = json.dumps(answer["blocks"])
    assert "Email 1200 customers in segment churn-risk" in shown
    assert decision_buttons({"blocks": answer["blocks"]}) == [
        ("approve", campaign["id"]),
        ("reject", campaign["id"]),
    ]
    assert "Nothing waits for you" in json.dumps(nothing["blocks"])


async def test_slash_show_gives_preview_status_and_audit_trail_to_those_involved(
    cs: Countersign,
) -> None:
    _, campaign = await cs.submit(CAMPAIGN)
    await cs.posted(campaign["id"])

    shown = await slash(cs, APPROVER, f"show {campaign['id']}")
    hidden = await slash(cs, OUTSIDER, f"show {campaign['id']}")
    missing = await slash(cs, APPROVER, "show cs_doesnotexist")

    assert shown["response_type"] == "ephemeral"
    blocks = json.dumps(shown["blocks"])
    assert "Email 1200 customers in segment churn-risk" in blocks
    assert "tmpl_winback" in blocks  # a preview field
    assert "Approval needed" in blocks and "pending" in blocks
    assert "submitted" in blocks and "posted_to_slack" in blocks  # the audit trail
    assert "No proposal" in hidden["text"] and "churn-risk" not in json.dumps(hidden)
    assert hidden["text"].replace(campaign["id"], "cs_doesnotexist") == missing["text"]


async def test_slash_show_gives_the_current_state_in_the_verdict_as_the_home_tab_does(
    cs: Countersign,
) -> None:
    _, refund = await cs.submit(REFUND)  # the refund revalidates: it reads its ledger
    _, campaign = await cs.submit(CAMPAIGN)  # a webhook without revalidate_url checks nothing
    await cs.posted(refund["id"])

    unchanged = verdict(await slash(cs, APPROVER, f"show {refund['id']}"))
    ledger = cs.service.settings.registry.get("payments.refund").ledger
    ledger.record_outside_refund("pay_1002", 30000)  # someone refunds 300.00 USD meanwhile
    fresh = verdict(await slash(cs, APPROVER, f"show {refund['id']}"))
    cs.clock.advance(timedelta(minutes=3))  # the last check is stale now: checked again
    changed = verdict(await slash(cs, APPROVER, f"show {refund['id']}"))

    assert unchanged[0].startswith(":red_circle:")  # the verdict first, then the state
    assert unchanged[1].startswith("*Why you are asked:*")
    assert unchanged[-1].startswith(
        ":mag: *Current state:* unchanged since the preview (checked <!date^"
    )
    # checked at most once every 2 minutes: the same check, with the moment it was made (the
    # lines above it may say less time is left: the clock runs between the two answers)
    assert fresh[-1] == unchanged[-1]
    assert changed[-1].startswith(
        ":warning: *Current state has changed:* refundable amount on pay_1002 changed since "
        "the preview: was 1,200.00 USD, now 900.00 USD (checked <!date^"
    )
    assert changed[-1].endswith(
        "Approved now, it would stop before executing and be sent back for revision."
    )
    assert "Current state" not in json.dumps(await slash(cs, APPROVER, f"show {campaign['id']}"))
    assert await cs.submit_reason(APPROVER, refund["id"], "Not now") == 200
    await eventually(lambda: status_of(cs, refund["id"], "rejected"))
    decided = await slash(cs, APPROVER, f"show {refund['id']}")
    assert "Current state" not in json.dumps(decided)  # shown only while it waits


def verdict(answer: dict[str, Any]) -> list[str]:
    """The lines of the verdict section of a ``show`` answer (first, before its header)."""
    assert answer["blocks"][1]["type"] == "header"
    lines: list[str] = answer["blocks"][0]["text"]["text"].split("\n")
    return lines


async def status_of(cs: Countersign, proposal_id: str, status: str) -> bool:
    return (await cs.store.get_proposal(proposal_id)).status == status


async def test_an_unknown_command_is_told_every_command_there_is(cs: Countersign) -> None:
    answer = await slash(cs, APPROVER, "frob")

    assert answer["text"] == (
        "`frob` is not a /countersign command. Try `list`, `show <id>`, `standing`, "
        "`delegate <agent>`, `delegations`, `revoke-delegation <id>` or `help`."
    )


async def test_each_command_an_unknown_one_is_told_of_is_answered(cs: Countersign) -> None:
    told = (await slash(cs, APPROVER, "frob"))["text"].split("Try ", 1)[1]
    verbs = re.findall(r"`([a-z-]+)[^`]*`", told)
    assert len(verbs) == 7, told

    for verb in verbs:
        answer = await slash(cs, APPROVER, verb)
        assert "is not a /countersign command" not in answer["text"], (verb, answer["text"])


@pytest.mark.parametrize(("text", "expected"), [("help", "list"), ("", "show"), ("frob", "not")])
async def test_slash_help_and_unknown_commands(cs: Countersign, text: str, expected: str) -> None:
    answer = await slash(cs, APPROVER, text)

    assert answer["response_type"] == "ephemeral"
    assert expected in json.dumps(answer["blocks"])
