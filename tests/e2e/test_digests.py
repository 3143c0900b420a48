"""Digests over HTTP: similar proposals due together become one Slack message; its buttons and
modals decide each item on its own, with its own checks, execution and outcome."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from bot.digests.outbox import DIGEST_EVENT, DIGEST_REPLY_EVENT
from bot.render.actions import (
    DIGEST_APPROVE_ALL,
    DIGEST_CHOOSE,
    DIGEST_CHOOSE_VIEW,
    DIGEST_REJECT_ALL,
    DIGEST_REJECT_VIEW,
    DIGEST_REVIEW,
)
from bot.slack.local import StoredMessage
from store.digests import Digest
from tests.e2e.harness import (
    APPROVER,
    APPROVER_2,
    CAMPAIGN_CHANNEL,
    OUTSIDER,
    REFUNDS_CHANNEL,
    REQUESTER,
    SIGNING_SECRET,
    Countersign,
    eventually,
    replace_rule,
    running_countersign,
)
from tests.slack_requests import block_action_body, fixture_json, signed_headers

#: Long enough for ten submissions over HTTP on a busy machine to arrive within it.
WINDOW = "[slack]\ndigest_window_seconds = 1.5\n"


def with_slack(section: str) -> Callable[[str], str]:
    """A ``config_edit`` that appends ``section`` (the [slack] table) to the configuration."""
    return lambda text: text + "\n" + section


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=with_slack(WINDOW)) as running:
        yield running


def campaign(n: int, requested_by: str = REQUESTER) -> dict[str, Any]:
    return {
        "operation": "crm.send_campaign",
        "request": {"segment": f"segment-{n}", "template": "tmpl_winback", "recipients": 100 + n},
        "requested_by": requested_by,
        "run_id": f"run-{requested_by}-{n}",
        "reason": f"Batch item {n} <!channel>",
    }


async def submit_all(cs: Countersign, bodies: list[dict[str, Any]]) -> list[str]:
    answers = await asyncio.gather(*(cs.submit(body) for body in bodies))
    assert [status for status, _ in answers] == [201] * len(bodies), answers
    return [str(body["id"]) for _, body in answers]


async def posted_digest(cs: Countersign, ids: list[str]) -> Digest:
    """Wait until every one of ``ids`` is shown; return the one digest showing them all."""

    async def check() -> Any:
        proposals = [await cs.store.get_proposal(i) for i in ids]
        return proposals if all(p.slack_ts for p in proposals) else None

    proposals = await eventually(check)
    digests = {p.digest_id for p in proposals}
    assert len(digests) == 1 and None not in digests, digests
    [digest_id] = digests
    assert digest_id is not None
    return await cs.store.digests().get_digest(digest_id)


def top_level(cs: Countersign, channel: str = CAMPAIGN_CHANNEL) -> list[StoredMessage]:
    return [m for m in cs.slack.messages(channel) if not m.is_reply]


def buttons(message: StoredMessage) -> dict[str, str]:
    return {
        element["action_id"]: element["value"]
        for block in message.blocks
        if block["type"] == "actions"
        for element in block["elements"]
    }


async def click(cs: Countersign, user: str, action_id: str, digest: Digest) -> int:
    body = block_action_body(
        user_id=user,
        action_id=action_id,
        value=digest.id,
        channel_id=digest.channel,
        message_ts=digest.ts,
        trigger_id=cs.slack.issue_trigger(user),
        block_id="digest",
    )
    return await cs.post_slack(body)


async def submit_view(
    cs: Countersign, user: str, view: dict[str, Any], values: dict[str, Any]
) -> dict[str, Any] | None:
    """Submit an opened modal as Slack does, with ``values`` as its state; the JSON answer."""
    payload = fixture_json("view_submission.json")
    payload["user"].update({"id": user, "team_id": cs.slack.team_id})
    payload["team"]["id"] = cs.slack.team_id
    payload["view"] = {**view, "state": {"values": values}}
    body = "payload=" + quote(json.dumps(payload))
    answer = await cs.request(
        "POST", "/slack/events", data=body.encode(), headers=signed_headers(SIGNING_SECRET, body)
    )
    assert answer.status == 200
    return answer.json() if answer.body else None


def chosen(ids: list[str], decision: str, reason: str | None = None) -> dict[str, Any]:
    return {
        "items_0": {
            "items": {
                "type": "checkboxes",
                "selected_options": [
                    {"value": i, "text": {"type": "plain_text", "text": i}} for i in ids
                ],
            }
        },
        "decision": {"decision": {"type": "radio_buttons", "selected_option": {"value": decision}}},
        "reason": {"reason": {"type": "plain_text_input", "value": reason}},
    }


def listed_items(digest: Digest, text: str) -> list[int]:
    """How often ``text`` (replies' blocks as JSON) names each item of ``digest``, as the
    digest numbers it, with its title."""
    return [text.count(f"*Item {n}:* {p.preview.title}") for n, p in enumerate(digest.items, 1)]


async def statuses(cs: Countersign, ids: list[str]) -> list[str]:
    return [str((await cs.store.get_proposal(i)).status) for i in ids]


def told(cs: Countersign, user: str) -> list[str]:
    return [m.text for m in cs.slack.ephemeral(user)]


# --- posting ----------------------------------------------------------------------------------


async def test_ten_similar_proposals_submitted_together_are_one_digest_message(
    cs: Countersign,
) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(10)])

    digest = await posted_digest(cs, ids)
    await cs.settled()

    [message] = top_level(cs)
    assert len(cs.slack.calls("chat.postMessage")) == 1
    assert message.ts == digest.ts
    # concurrent submissions may be stored, and so listed, in any order
    assert sorted(p.id for p in digest.items) == sorted(ids)
    assert message.metadata is not None
    assert message.metadata["event_type"] == DIGEST_EVENT
    payload = message.metadata["event_payload"]
    assert payload["digest_id"] == digest.id
    assert sorted(str(payload["proposal_ids"]).split()) == sorted(ids)
    assert (digest.operation, digest.requested_by) == ("crm.send_campaign", REQUESTER)
    rendered = json.dumps(message.blocks)
    for n, proposal_id in enumerate(ids):
        assert proposal_id[:12] in rendered
        assert f"Email {100 + n} customers in segment segment-{n}" in rendered
    assert "<!channel>" not in rendered  # the agent's words are escaped, and labelled
    assert "Agent's words (unverified)" in rendered
    # the buttons carry the digest's opaque id and nothing else
    assert buttons(message) == dict.fromkeys(
        [DIGEST_APPROVE_ALL, DIGEST_REVIEW, DIGEST_REJECT_ALL, DIGEST_CHOOSE], digest.id
    )
    for proposal_id in ids:
        [posted] = [
            e for e in await cs.store.audit_log(proposal_id) if e.event == "posted_to_slack"
        ]
        assert posted.detail == {
            "channel": CAMPAIGN_CHANNEL,
            "ts": digest.ts,
            "digest_id": digest.id,
        }
    assert (await cs.store.verify_audit()).ok


async def test_the_items_of_a_digest_get_one_reminder_in_its_thread_not_one_each(
    cs: Countersign,
) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(6)])
    digest = await posted_digest(cs, ids)
    await cs.settled()

    cs.clock.advance(timedelta(minutes=25))  # the campaigns rule expires after 30 min: 80% is 24
    assert len(await cs.service.remind_due()) == 6
    await cs.settled()

    thread = cs.slack.replies(CAMPAIGN_CHANNEL, digest.ts)
    reminders = [m for m in thread if m.text.startswith("Reminder:")]
    assert len(reminders) == 1, [m.text for m in thread]
    assert APPROVER in json.dumps(reminders[0].blocks) + reminders[0].text
    for proposal_id in ids:  # every item's reminder is audited and delivered
        assert "reminded" in [e.event for e in await cs.store.audit_log(proposal_id)]
    assert await cs.store.pending_deliveries() == 0


async def test_a_digest_names_its_proposals_in_peoples_words_not_by_the_operations_name(
    cs: Countersign,
) -> None:
    """Its header, Approve all's confirmation and the Reject all… modal read as a proposal's own
    message does: what the operation does, never its name."""
    ids = await submit_all(cs, [campaign(n) for n in range(3)])
    digest = await posted_digest(cs, ids)
    await cs.settled()

    message = cs.slack.message(CAMPAIGN_CHANNEL, digest.ts)
    [header] = [b for b in message.blocks if b["type"] == "header"]
    assert header["text"]["text"] == "3 proposals: Email a campaign to a customer segment"
    assert message.text == "Approval needed: 3 proposals: Email a campaign to a customer segment"
    [approve_all] = [
        element
        for block in message.blocks
        if block["type"] == "actions"
        for element in block["elements"]
        if element["action_id"] == DIGEST_APPROVE_ALL
    ]
    assert approve_all["confirm"]["text"]["text"].startswith("Every pending proposal listed here")
    assert await click(cs, APPROVER, DIGEST_REJECT_ALL, digest) == 200
    [opened] = await eventually(lambda: _views(cs, APPROVER))
    asked = json.dumps(opened.view["blocks"])
    assert "Reject the *3* pending proposals of this digest (Email a campaign to a" in asked
    for shown in (json.dumps(message.blocks), message.text, asked):
        assert "crm.send_campaign" not in shown


async def test_dissimilar_proposals_are_not_merged(tmp_path: Path) -> None:
    refunds_here = replace_rule(
        "refunds",
        f"""
        [[policy]]
        id = "refunds"
        operation = "payments.refund"
        when = [{{ field = "amount_cents", lte = 200000 }}]
        decision = "ask"
        approvers = ["finance"]
        channel = "{CAMPAIGN_CHANNEL}"
        expires_after = "1h"
        """,
    )

    def config(text: str) -> str:
        return with_slack(WINDOW)(refunds_here(text))

    async with running_countersign(tmp_path, config_edit=config) as cs:
        mine = [campaign(n) for n in range(2)]
        theirs = [campaign(n, requested_by=APPROVER_2) for n in range(2)]
        refunds = [
            {
                "operation": "payments.refund",
                "request": {"payment_id": p},
                "requested_by": REQUESTER,
            }
            for p in ("pay_1001", "pay_1002")
        ]
        alone = [campaign(0, requested_by=OUTSIDER)]
        ids = await submit_all(cs, [*mine, *theirs, *refunds, *alone])

        groups = [await posted_digest(cs, ids[k : k + 2]) for k in (0, 2, 4)]
        single = await cs.posted(ids[6])
        await cs.settled()

        # (submitted at once: in each digest by when the server stored them)
        assert [sorted(p.id for p in g.items) for g in groups] == [
            sorted(ids[0:2]),
            sorted(ids[2:4]),
            sorted(ids[4:6]),
        ]
        assert [(g.operation, g.requested_by) for g in groups] == [
            ("crm.send_campaign", REQUESTER),
            ("crm.send_campaign", APPROVER_2),
            ("payments.refund", REQUESTER),
        ]
        assert single.digest_id is None
        messages = top_level(cs)
        assert len(messages) == 4
        [own] = [m for m in messages if m.ts == single.slack_ts]
        assert own.metadata is not None
        assert own.metadata["event_payload"] == {"proposal_id": ids[6]}


async def test_a_group_bigger_than_digest_max_is_split_into_even_digests(tmp_path: Path) -> None:
    config = with_slack(WINDOW + "digest_max = 4\n")
    async with running_countersign(tmp_path, config_edit=config) as cs:
        # Ten similar posts due in one round: another requester's post meets a 429 first, so
        # the ten (submitted once that answer is back) are all held to the same moment, however
        # slowly they arrive. Submitted freely, the outbox's rounds would share them out by
        # timing, and no one round would hold more than digest_max.
        cs.slack.fail_next("chat.postMessage", status=429, retry_after=3)
        await submit_all(cs, [campaign(99, requested_by=APPROVER_2)])

        async def refused() -> bool:
            return len(cs.slack.calls("chat.postMessage")) == 1

        await eventually(refused)
        ids = await submit_all(cs, [campaign(n) for n in range(10)])

        async def shown() -> bool:
            return all([(await cs.store.get_proposal(i)).slack_ts for i in ids])

        await eventually(shown)
        await cs.settled()

        sizes = sorted(
            len(str(m.metadata["event_payload"]["proposal_ids"]).split())
            for m in top_level(cs)
            if m.metadata and m.metadata["event_type"] == DIGEST_EVENT
        )
        assert sizes == [3, 3, 4]


async def test_a_digest_post_whose_answer_was_lost_is_not_posted_twice(cs: Countersign) -> None:
    cs.fast_slack_retries()
    cs.slack.stall_after_accepting("chat.postMessage", seconds=2.5)  # the client gives up at 1 s

    ids = await submit_all(cs, [campaign(n) for n in range(4)])
    digest = await posted_digest(cs, ids)
    await cs.settled()

    [message] = top_level(cs)
    assert len(cs.slack.calls("chat.postMessage")) == 1
    assert len(cs.slack.calls("conversations.history")) == 1  # looked before posting again
    assert message.ts == digest.ts
    assert message.metadata is not None
    assert message.metadata["event_payload"]["digest_id"] == digest.id
    assert sorted(p.id for p in digest.items) == sorted(ids)


async def test_posts_due_while_the_channel_is_rate_limited_go_out_together(
    cs: Countersign,
) -> None:
    cs.slack.fail_next("chat.postMessage", status=429, retry_after=2)
    first = await submit_all(cs, [campaign(n) for n in range(10)])
    await eventually(lambda: _calls(cs, "chat.postMessage"))  # refused: wait 2 s

    later = await submit_all(cs, [campaign(n) for n in range(10, 15)])
    digest = await posted_digest(cs, first + later)
    await cs.settled()

    refused, accepted = cs.slack.calls("chat.postMessage")
    assert (refused.status, accepted.status) == (429, 200)
    assert (accepted.at - refused.at).total_seconds() >= 2  # Retry-After was honoured
    assert [m.ts for m in top_level(cs)] == [digest.ts]
    assert sorted(p.id for p in digest.items) == sorted(first + later)


# --- deciding -------------------------------------------------------------------------------------


async def test_approve_all_executes_each_item_once_with_its_own_outcome(cs: Countersign) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(10)])
    digest = await posted_digest(cs, ids)

    assert await click(cs, APPROVER, DIGEST_APPROVE_ALL, digest) == 200

    async def all_succeeded() -> bool:
        return await statuses(cs, ids) == ["succeeded"] * 10

    await eventually(all_succeeded)
    await cs.settled()
    keys = sorted(e["headers"]["Idempotency-Key"] for e in cs.target.executions())
    assert keys == sorted(f"countersign-{i}" for i in ids)  # each executed once, on its own
    for proposal_id in ids:
        proposal = await cs.store.get_proposal(proposal_id)
        assert proposal.decided_by == APPROVER
        assert proposal.outcome is not None and proposal.outcome.kind == "succeeded"
        events = [e.event for e in await cs.store.audit_log(proposal_id)]
        assert events.count("approved") == 1 and events.count("outcome") == 1
    message = cs.slack.message(CAMPAIGN_CHANNEL, digest.ts)
    assert buttons(message) == {}  # nothing left to decide
    assert json.dumps(message.blocks).count("Succeeded") == 10
    replies = cs.slack.replies(CAMPAIGN_CHANNEL, digest.ts)
    listed = " ".join(json.dumps(r.blocks, ensure_ascii=False) for r in replies)
    assert listed_items(digest, listed) == [1] * 10  # each outcome reported once
    # as a proposal's own reply: who approved, which item (by its number), no id to read
    assert listed.count(f"*Succeeded* · Approved by <@{APPROVER}>.") == 10
    assert "cs_" not in listed
    assert {r.metadata["event_type"] for r in replies if r.metadata} == {DIGEST_REPLY_EVENT}
    assert await eventually(lambda: _told(cs, APPROVER)) == [
        "Approved 10, 0 already decided, 0 refused."
    ]


async def test_updates_and_outcomes_due_while_slack_is_rate_limited_go_out_together(
    cs: Countersign,
) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(10)])
    digest = await posted_digest(cs, ids)
    await cs.settled()
    cs.slack.fail_next("chat.update", status=429, retry_after=2)

    assert await click(cs, APPROVER, DIGEST_APPROVE_ALL, digest) == 200

    async def all_reported() -> bool:
        return len(cs.slack.replies(CAMPAIGN_CHANNEL, digest.ts)) > 0

    await eventually(all_reported)
    await cs.settled()
    # 20 updates (executing, then succeeded) of 10 items: one refused, then one call for all
    # of them: each item's updates are leased together and the last one shows the state
    updates = [c for c in cs.slack.calls("chat.update") if c.args.get("ts") == digest.ts]
    assert [c.status for c in updates] == [429, 200]
    shown = json.dumps(cs.slack.message(CAMPAIGN_CHANNEL, digest.ts).blocks)
    assert "xecuting" not in shown
    [reply] = cs.slack.replies(CAMPAIGN_CHANNEL, digest.ts)  # 10 outcomes, one reply
    assert listed_items(digest, json.dumps(reply.blocks)) == [1] * 10
    assert len(cs.target.executions()) == 10


async def test_an_outcome_reply_whose_answer_was_lost_is_not_posted_twice(
    cs: Countersign,
) -> None:
    cs.fast_slack_retries()
    ids = await submit_all(cs, [campaign(n) for n in range(4)])
    digest = await posted_digest(cs, ids)
    await cs.settled()
    cs.slack.stall_after_accepting("chat.postMessage", seconds=2.5)  # the client gives up at 1 s

    assert await click(cs, APPROVER, DIGEST_APPROVE_ALL, digest) == 200

    async def delivered() -> bool:
        done = await statuses(cs, ids) == ["succeeded"] * 4
        return done and await cs.store.pending_deliveries() == 0

    await eventually(delivered)
    replies = cs.slack.replies(CAMPAIGN_CHANNEL, digest.ts)
    listed = " ".join(json.dumps(r.blocks) for r in replies)
    assert listed_items(digest, listed) == [1] * 4
    assert cs.slack.calls("conversations.replies")  # looked before posting again


async def test_an_uncertain_item_is_resolved_from_the_buttons_in_the_digests_thread(
    cs: Countersign,
) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(2)])
    digest = await posted_digest(cs, ids)
    cs.target.status = 503  # the effect may or may not have happened

    assert await click(cs, APPROVER, DIGEST_APPROVE_ALL, digest) == 200

    async def uncertain() -> bool:
        return await statuses(cs, ids) == ["needs_reconciliation"] * 2

    await eventually(uncertain)
    await cs.settled()
    offered = {
        (element["action_id"], element["value"]): (reply.ts, block["block_id"])
        for reply in cs.slack.replies(CAMPAIGN_CHANNEL, digest.ts)
        for block in reply.blocks
        if block["type"] == "actions"
        for element in block["elements"]
    }
    assert sorted(offered) == sorted(
        (action, i) for i in ids for action in ("reconcile_succeeded", "reconcile_failed")
    )
    reply_ts, block_id = offered[("reconcile_failed", ids[0])]
    body = block_action_body(
        user_id=APPROVER_2,
        action_id="reconcile_failed",
        value=ids[0],
        channel_id=CAMPAIGN_CHANNEL,
        message_ts=reply_ts,
        block_id=block_id,
    )
    assert await cs.post_slack(body) == 200

    await eventually(lambda: _has_status(cs, ids[0], "failed"))
    await cs.settled()
    assert await statuses(cs, ids) == ["failed", "needs_reconciliation"]
    [entry] = [e for e in await cs.store.audit_log(ids[0]) if e.event == "reconciled"]
    assert entry.actor == APPROVER_2
    rendered = json.dumps(cs.slack.message(CAMPAIGN_CHANNEL, digest.ts).blocks)
    assert "Failed" in rendered and "Outcome unknown" in rendered


async def test_choosing_three_of_ten_executes_only_those(cs: Countersign) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(10)])
    digest = await posted_digest(cs, ids)

    assert await click(cs, APPROVER, DIGEST_CHOOSE, digest) == 200
    [opened] = await eventually(lambda: _views(cs, APPROVER))
    view = opened.view
    assert view["callback_id"] == DIGEST_CHOOSE_VIEW and view["private_metadata"] == digest.id
    offered = [
        option["value"]
        for block in view["blocks"]
        if block.get("block_id", "").startswith("items_")
        for option in block["element"]["options"]
    ]
    assert offered == [p.id for p in digest.items]  # in the digest's order
    assert sorted(offered) == sorted(ids)
    assert await submit_view(cs, APPROVER, view, chosen(ids[2:5], "approve")) is None

    async def three_done() -> bool:
        return (await statuses(cs, ids)).count("succeeded") == 3

    await eventually(three_done)
    await cs.settled()
    assert await statuses(cs, ids) == ["pending"] * 2 + ["succeeded"] * 3 + ["pending"] * 5
    assert sorted(e["headers"]["Idempotency-Key"] for e in cs.target.executions()) == sorted(
        f"countersign-{i}" for i in ids[2:5]
    )
    message = cs.slack.message(CAMPAIGN_CHANNEL, digest.ts)
    assert buttons(message) == dict.fromkeys(
        [DIGEST_APPROVE_ALL, DIGEST_REVIEW, DIGEST_REJECT_ALL, DIGEST_CHOOSE], digest.id
    )
    assert "Approve all (7)" in json.dumps(message.blocks)
    assert await eventually(lambda: _told(cs, APPROVER)) == [
        "Approved 3, 0 already decided, 0 refused."
    ]


async def test_rejecting_chosen_items_needs_a_reason_and_rejects_only_those(
    cs: Countersign,
) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(4)])
    digest = await posted_digest(cs, ids)
    assert await click(cs, APPROVER, DIGEST_CHOOSE, digest) == 200
    [opened] = await eventually(lambda: _views(cs, APPROVER))

    refused = await submit_view(cs, APPROVER, opened.view, chosen(ids[:2], "reject"))
    assert refused == {
        "response_action": "errors",
        "errors": {"reason": "Say why you reject them."},
    }
    nothing = await submit_view(cs, APPROVER, opened.view, chosen([], "approve"))
    assert nothing is not None and "items_0" in nothing["errors"]
    assert await statuses(cs, ids) == ["pending"] * 4

    await submit_view(cs, APPROVER, opened.view, chosen(ids[:2], "reject", "Duplicate batch"))

    async def two_rejected() -> bool:
        return await statuses(cs, ids) == ["rejected"] * 2 + ["pending"] * 2

    await eventually(two_rejected)
    await cs.settled()
    for proposal_id in ids[:2]:
        proposal = await cs.store.get_proposal(proposal_id)
        assert (proposal.decided_by, proposal.decision_note) == (APPROVER, "Duplicate batch")
    assert cs.target.executions() == []
    [reply] = cs.slack.replies(CAMPAIGN_CHANNEL, digest.ts)
    assert "Duplicate batch" in json.dumps(reply.blocks)
    assert await eventually(lambda: _told(cs, APPROVER)) == [
        "Rejected 2, 0 already decided, 0 refused."
    ]


async def test_a_decided_items_facts_read_as_at_preview_while_the_pending_ones_read_now(
    cs: Countersign,
) -> None:
    """As a proposal's own message: once decided, "Refundable now" says "Refundable at
    preview" (the payment may have changed since); the pending items still say "now"."""
    refunds = [
        {"operation": "payments.refund", "request": {"payment_id": p}, "requested_by": REQUESTER}
        for p in ("pay_1001", "pay_1002", "pay_1003")
    ]
    ids = await submit_all(cs, refunds)
    digest = await posted_digest(cs, ids)
    await cs.settled()
    shown = json.dumps(cs.slack.message(REFUNDS_CHANNEL, digest.ts).blocks, ensure_ascii=False)
    assert shown.count("*Refundable now*") == 3 and "at preview" not in shown

    assert await click(cs, APPROVER, DIGEST_CHOOSE, digest) == 200
    [choose] = await eventually(lambda: _views(cs, APPROVER))
    await submit_view(cs, APPROVER, choose.view, chosen(ids[:1], "approve"))
    await eventually(lambda: _has_status(cs, ids[0], "succeeded"))
    await cs.settled()

    shown = json.dumps(cs.slack.message(REFUNDS_CHANNEL, digest.ts).blocks, ensure_ascii=False)
    number = [p.id for p in digest.items].index(ids[0]) + 1
    rows = [
        row
        for block in cs.slack.message(REFUNDS_CHANNEL, digest.ts).blocks
        if block["type"] == "section"
        for row in block["text"]["text"].split("\n\n")
        if row[:3] in ("*1.", "*2.", "*3.")
    ]
    assert len(rows) == 3
    for row in rows:
        decided = row.startswith(f"*{number}.*")
        assert ("*Refundable at preview* 45.00 USD" in row) is decided, row
        assert ("*Refundable now*" in row) is not decided, row
    assert shown.count("*Refundable now*") == 2


async def test_reject_all_asks_one_reason_and_skips_what_was_decided(cs: Countersign) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(3)])
    digest = await posted_digest(cs, ids)
    assert await click(cs, APPROVER, DIGEST_CHOOSE, digest) == 200
    [choose] = await eventually(lambda: _views(cs, APPROVER))
    await submit_view(cs, APPROVER, choose.view, chosen(ids[:1], "approve"))
    await eventually(lambda: _has_status(cs, ids[0], "succeeded"))

    assert await click(cs, APPROVER_2, DIGEST_REJECT_ALL, digest) == 200
    [opened] = await eventually(lambda: _views(cs, APPROVER_2))
    assert opened.view["callback_id"] == DIGEST_REJECT_VIEW
    values = {"reason": {"reason": {"type": "plain_text_input", "value": "Not this week"}}}
    await submit_view(cs, APPROVER_2, opened.view, values)

    async def rejected() -> bool:
        return await statuses(cs, ids) == ["succeeded", "rejected", "rejected"]

    await eventually(rejected)
    # the clicker is told once every item is decided: a moment after the last one is
    assert await eventually(lambda: _told(cs, APPROVER_2)) == [
        "Rejected 2, 1 already decided, 0 refused."
    ]


async def test_the_requesters_approve_all_is_refused_for_each_item_and_audited(
    cs: Countersign,
) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(3)])
    digest = await posted_digest(cs, ids)

    assert await click(cs, REQUESTER, DIGEST_APPROVE_ALL, digest) == 200

    [text] = await eventually(lambda: _told(cs, REQUESTER))
    assert text.startswith("Approved 0, 0 already decided, 3 refused.")
    assert "accountable" in text
    assert await statuses(cs, ids) == ["pending"] * 3
    assert cs.target.executions() == []
    for proposal_id in ids:
        [refusal] = [
            e for e in await cs.store.audit_log(proposal_id) if e.event == "approve_refused"
        ]
        assert refusal.actor == REQUESTER
        assert "accountable" in str(refusal.detail["reason"])

    # nor may someone without the rule's role open the list to choose from
    assert await click(cs, OUTSIDER, DIGEST_CHOOSE, digest) == 200
    [text] = await eventually(lambda: _told(cs, OUTSIDER))
    assert "finance" in text
    assert cs.slack.views(OUTSIDER) == []


async def test_a_click_on_an_unknown_digest_changes_nothing(cs: Countersign) -> None:
    ids = await submit_all(cs, [campaign(n) for n in range(2)])
    digest = await posted_digest(cs, ids)
    forged = digest.model_copy(update={"id": "dg_" + "a" * 26})

    assert await click(cs, APPROVER, DIGEST_APPROVE_ALL, forged) == 200

    [text] = await eventually(lambda: _told(cs, APPROVER))
    assert "does not exist" in text
    assert await statuses(cs, ids) == ["pending"] * 2


async def _calls(cs: Countersign, method: str) -> list[Any]:
    return cs.slack.calls(method)


async def _views(cs: Countersign, user: str) -> list[Any]:
    return cs.slack.views(user)


async def _told(cs: Countersign, user: str) -> list[str]:
    return told(cs, user)


async def _has_status(cs: Countersign, proposal_id: str, status: str) -> bool:
    return str((await cs.store.get_proposal(proposal_id)).status) == status
