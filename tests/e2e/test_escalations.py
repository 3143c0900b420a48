"""Escalations over HTTP: an agent hands a conversation to people, who take it in Slack, hand it
back with a note or resolve it; unclaimed ones are announced again."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from aiohttp import web

from bot.app import OUTBOX
from bot.slack.local import LocalUser, StoredMessage
from contracts.signing import CALLBACK, verify
from tests.e2e.conftest import new_postgres_url
from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    APPROVER_2,
    ESCALATION_CHANNEL,
    LEGAL_CHANNEL,
    OTHER_AGENT_TOKEN,
    OUTSIDER,
    REQUESTER,
    Countersign,
    eventually,
    running_countersign,
)
from tests.slack_requests import block_action_body, view_submission_body


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path) as running:
        yield running


def escalation(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "conversation_id": "conv-1001",
        "requested_by": REQUESTER,
        "customer_ref": "cus_ada",
        "team": "billing",
        "summary": {
            "goal": "Refund the second charge of order 7 <!channel>",
            "steps_done": ["Looked up the order", "Tried the refund twice"],
            "tool_results": [
                {"tool": "payments.refund", "result_summary": "HTTP 500 from the processor"}
            ],
            "blocked_on": "The refund tool keeps failing",
        },
        "trigger": {
            "kind": "repeated_failure",
            "signals": {"failed_turns": 4, "error_codes": ["E500", "E500", "E500"]},
        },
    }
    body.update(changes)
    return body


async def post(
    cs: Countersign, body: dict[str, Any], *, key: str | None = None, token: str = AGENT_TOKEN
) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    answer = await cs.request(
        "POST", "/v1/escalations", data=json.dumps(body).encode(), headers=headers
    )
    return answer.status, answer.json()


async def read(cs: Countersign, escalation_id: str, **params: str) -> tuple[int, dict[str, Any]]:
    answer = await cs.request(
        "GET",
        f"/v1/escalations/{escalation_id}",
        headers={"Authorization": f"Bearer {AGENT_TOKEN}"},
        params=params,
    )
    return answer.status, answer.json()


async def posted(cs: Countersign, escalation_id: str) -> Any:
    async def check() -> Any:
        found = await cs.store.escalations().get_escalation(escalation_id)
        return found if found.slack_ts else None

    return await eventually(check)


async def click(cs: Countersign, user: str, action_id: str, escalation_id: str) -> int:
    found = await posted(cs, escalation_id)
    body = block_action_body(
        user_id=user,
        action_id=action_id,
        value=escalation_id,
        channel_id=found.slack_channel,
        message_ts=found.slack_ts,
        trigger_id=cs.slack.issue_trigger(user),
        block_id="escalation",
    )
    return await cs.post_slack(body)


def buttons(blocks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (element["action_id"], element["value"])
        for block in blocks
        if block["type"] == "actions"
        for element in block["elements"]
    ]


async def escalation_rows(cs: Countersign) -> int:
    async with (
        aiosqlite.connect(f"file:{cs.db_path}?mode=ro", uri=True) as db,
        db.execute("SELECT count(*) FROM escalations") as cursor,
    ):
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def test_an_escalation_is_posted_from_the_summary_with_the_agents_words_labelled(
    cs: Countersign,
) -> None:
    status, created = await post(cs, escalation())

    assert status == 201, created
    assert (created["status"], created["handed_off"], created["final"]) == ("open", False, False)
    # the agent learns which trigger held, not the configured threshold (Slack shows it)
    assert created["verdict"]["note"] == "repeated failures reached the configured threshold"
    assert "threshold 3" not in json.dumps(created)
    assert created["channel"] == ESCALATION_CHANNEL
    found = await posted(cs, created["id"])
    message = cs.slack.message(ESCALATION_CHANNEL, found.slack_ts)
    shown = json.dumps(message.blocks)
    assert "The agent's report (unverified)" in shown
    assert "4 turns without progress (threshold 3)" in shown  # Countersign's reading
    assert "Tried the refund twice" in shown and "HTTP 500 from the processor" in shown
    assert "&lt;!channel&gt;" in shown and "<!channel>" not in shown  # the agent cannot ping
    assert buttons(message.blocks) == [
        ("escalation_take", created["id"]),
        ("escalation_resolve", created["id"]),
    ]
    assert [e.event for e in await cs.store.escalations().escalation_log(created["id"])] == [
        "escalated",
        "posted_to_slack",
    ]


async def test_the_same_escalation_twice_is_one_and_another_body_is_refused(
    cs: Countersign,
) -> None:
    first_status, first = await post(cs, escalation())
    again_status, again = await post(cs, escalation())
    changed_status, changed = await post(
        cs, escalation(summary={**escalation()["summary"], "goal": "something else"})
    )
    keyed_status, keyed = await post(cs, escalation(), key="esc-key-1")
    rekeyed_status, rekeyed = await post(cs, escalation(team="other"), key="esc-key-1")

    assert (first_status, again_status) == (201, 200)
    assert again["id"] == first["id"]
    assert changed_status == 422
    assert changed["errors"][0]["field"] == "conversation_id"
    assert keyed_status == 201 and keyed["id"] != first["id"]
    assert rekeyed_status == 422
    assert rekeyed["errors"][0]["field"] == "Idempotency-Key"
    assert await escalation_rows(cs) == 2


@pytest.mark.parametrize(
    ("trigger", "field", "expected"),
    [
        (
            {"kind": "repeated_failure", "signals": {"failed_turns": 2}},
            "trigger.signals.failed_turns",
            "repeated_failure_turns = 3",
        ),
        (
            {"kind": "negative_sentiment", "signals": {"sentiment_scores": [0.2, -0.1]}},
            "trigger.signals.sentiment_scores",
            "sentiment_threshold = -0.5",
        ),
        (
            {"kind": "reserved_topic", "signals": {"topic_labels": ["billing"]}},
            "trigger.signals.topic_labels",
            "'legal'",
        ),
        (
            {"kind": "low_confidence", "signals": {"confidence": 0.1}},
            "trigger.signals.confidence",
            "confidence alone never suffices",
        ),
        (
            {"kind": "low_confidence", "signals": {"confidence": 0.9, "failed_turns": 2}},
            "trigger.signals.confidence",
            "confidence_threshold = 0.4",
        ),
        (
            {"kind": "explicit_request", "signals": {}},
            "trigger.signals.customer_quote",
            "customer's words",
        ),
    ],
)
async def test_a_trigger_that_does_not_hold_is_refused_and_nothing_is_stored(
    cs: Countersign, trigger: dict[str, Any], field: str, expected: str
) -> None:
    status, problem = await post(cs, escalation(trigger=trigger))

    assert status == 422, problem
    [error] = problem["errors"]
    assert error["field"] == field
    assert expected in error["message"]
    assert await escalation_rows(cs) == 0
    assert cs.slack.calls("chat.postMessage") == []


async def test_triggers_that_hold_on_measured_signals_are_accepted(cs: Countersign) -> None:
    accepted = [
        {"kind": "explicit_request", "signals": {"customer_quote": "Let me talk to a human"}},
        {"kind": "negative_sentiment", "signals": {"sentiment_scores": [0.3, -0.2, -0.4]}},
        {"kind": "low_confidence", "signals": {"confidence": 0.2, "retrieval_hits": 0}},
        {"kind": "repeated_failure", "signals": {"error_codes": ["E1", "E9", "E9", "E9"]}},
    ]
    for n, trigger in enumerate(accepted):
        status, created = await post(cs, escalation(conversation_id=f"c{n}", trigger=trigger))
        assert status == 201, (trigger, created)


async def test_a_reserved_topic_goes_to_its_own_channel_and_neither_person_nor_customer_is_422(
    cs: Countersign,
) -> None:
    trigger = {"kind": "reserved_topic", "signals": {"topic_labels": ["refunds", "Legal"]}}
    status, created = await post(cs, escalation(trigger=trigger))
    nobody_status, nobody = await post(
        cs, escalation(conversation_id="c-2", requested_by=None, customer_ref=None)
    )

    assert status == 201, created
    assert created["channel"] == LEGAL_CHANNEL
    assert created["verdict"]["topic"] == "legal"
    await posted(cs, created["id"])
    assert nobody_status == 422
    assert nobody["errors"][0]["field"] == "requested_by"


async def test_take_it_hands_the_conversation_off_and_a_second_taker_is_told_who_has_it(
    cs: Countersign,
) -> None:
    _, created = await post(cs, escalation())
    await posted(cs, created["id"])
    _, still_open = await read(cs, created["id"], wait="0.2")
    assert still_open["handed_off"] is False

    assert await click(cs, APPROVER, "escalation_take", created["id"]) == 200
    _, taken = await read(cs, created["id"], wait="10")
    assert (taken["status"], taken["handed_off"], taken["owner"]) == ("taken", True, APPROVER)

    assert await click(cs, APPROVER_2, "escalation_take", created["id"]) == 200
    told = await eventually(lambda: _ephemeral(cs, APPROVER_2))
    assert f"<@{APPROVER}>" in told.text and "already taken" in told.text
    await cs.settled()
    found = await cs.store.escalations().get_escalation(created["id"])
    assert found.owner == APPROVER
    message = cs.slack.message(ESCALATION_CHANNEL, found.slack_ts)
    assert f"Taken by <@{APPROVER}>" in json.dumps(message.blocks)
    assert [a for a, _ in buttons(message.blocks)] == ["escalation_hand_back", "escalation_resolve"]
    [reply] = cs.slack.replies(ESCALATION_CHANNEL, found.slack_ts)
    assert "stop replying" in reply.text or "stop replying" in json.dumps(reply.blocks)
    events = [e.event for e in await cs.store.escalations().escalation_log(created["id"])]
    assert events.count("taken") == 1


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store_url(request: pytest.FixtureRequest) -> AsyncIterator[str | None]:
    """The store to run on: a SQLite file (None), or a new PostgreSQL schema."""
    if request.param == "sqlite":
        yield None
    else:
        async with new_postgres_url() as url:
            yield url


async def test_a_take_after_its_message_was_posted_again_is_told_it_is_taken_already(
    tmp_path: Path, store_url: str | None
) -> None:
    """APPROVER takes an escalation whose Slack post's answer was lost (Slack had taken it); a
    minute later the outbox finds the message and records its place, which writes the row
    again. Later APPROVER clicks Take it again, recorded by a clock that runs behind the one
    that recorded the place (another instance's, say) but well after the take: a new click,
    not the take's own click applied twice (tests/e2e/test_click_applied_twice.py). It is told
    that they have already taken it; it was taken once."""
    async with running_countersign(tmp_path, store_url=store_url) as cs:
        cs.app[OUTBOX].policy.base_delay = 60  # a lost post is looked for a minute later
        cs.slack.stall_after_accepting("chat.postMessage", seconds=2.5)  # too late: lost
        _, created = await post(cs, escalation())
        [message] = await eventually(lambda: _async(cs.slack.messages(ESCALATION_CHANNEL)))
        assert await _click_on(cs, message, APPROVER, "escalation_take", created["id"]) == 200
        _, taken = await read(cs, created["id"], wait="10")
        assert (taken["status"], taken["owner"]) == ("taken", APPROVER)
        await eventually(lambda: _async(cs.app[OUTBOX].in_flight == 0))  # given up, due later

        cs.clock.advance(timedelta(minutes=1, seconds=1))
        found = await posted(cs, created["id"])  # its place recorded, a minute after the take
        assert found.slack_ts == message.ts
        cs.clock.advance(timedelta(seconds=-30))  # the clock recording the next click is behind
        assert await _click_on(cs, message, APPROVER, "escalation_take", created["id"]) == 200

        told = await eventually(lambda: _ephemeral(cs, APPROVER), timeout=20)
        assert "you have already taken it" in told.text
        events = [e.event for e in await cs.store.escalations().escalation_log(created["id"])]
        assert events.count("taken") == 1, events


async def _click_on(
    cs: Countersign, message: StoredMessage, user: str, action_id: str, escalation_id: str
) -> int:
    """``user`` clicks ``action_id`` on ``message`` in Slack (whether or not Countersign knows
    where the message is yet)."""
    body = block_action_body(
        user_id=user,
        action_id=action_id,
        value=escalation_id,
        channel_id=message.channel,
        message_ts=message.ts,
        trigger_id=cs.slack.issue_trigger(user),
        block_id="escalation",
    )
    return await cs.post_slack(body)


async def test_someone_without_the_responder_role_cannot_take_it_and_the_refusal_is_audited(
    cs: Countersign,
) -> None:
    _, created = await post(cs, escalation())

    await click(cs, OUTSIDER, "escalation_take", created["id"])

    told = await eventually(lambda: _ephemeral(cs, OUTSIDER))
    assert "finance" in told.text
    log = await cs.store.escalations().escalation_log(created["id"])
    assert "take_refused" in [e.event for e in log]
    _, current = await read(cs, created["id"])
    assert current["status"] == "open"


async def _refused_and_unchanged(
    cs: Countersign, escalation_id: str, user: str, verb: str, expected: str
) -> None:
    """``user`` was told ``expected`` privately, the refusal is audited, and nothing moved."""
    told = await eventually(lambda: _ephemeral(cs, user))
    assert expected in told.text
    await cs.settled()
    log = await cs.store.escalations().escalation_log(escalation_id)
    refused = [e for e in log if e.event == f"{verb}_refused"]
    assert refused and refused[-1].actor == user and expected in json.dumps(refused[-1].detail)
    assert not {"taken", "handed_back", "resolved"} & {e.event for e in log}
    found = await cs.store.escalations().get_escalation(escalation_id)
    assert (found.status.value, found.owner) == ("open", None)
    assert cs.slack.views(user) == []


async def test_the_accountable_human_cannot_take_their_own_escalation(cs: Countersign) -> None:
    # REQUESTER holds finance, the responder role: only being the requester stops them
    _, created = await post(cs, escalation(requested_by=REQUESTER))
    await posted(cs, created["id"])

    await click(cs, REQUESTER, "escalation_take", created["id"])

    await _refused_and_unchanged(cs, created["id"], REQUESTER, "take", "accountable")
    _, current = await read(cs, created["id"])
    assert (current["status"], current["handed_off"]) == ("open", False)


@pytest.mark.parametrize(
    ("action", "verb"),
    [("escalation_take", "take"), ("escalation_resolve", "resolve")],
)
async def test_the_agents_owner_cannot_take_or_resolve_its_escalation(
    tmp_path: Path, action: str, verb: str
) -> None:
    owners = {"support-bot": {"owners": [APPROVER_2]}}
    async with running_countersign(tmp_path, agent_settings=owners) as cs:
        _, created = await post(cs, escalation())
        await posted(cs, created["id"])

        await click(cs, APPROVER_2, action, created["id"])

        await _refused_and_unchanged(cs, created["id"], APPROVER_2, verb, "own the agent")


async def test_an_owner_cannot_hand_back_an_escalation_someone_else_took(tmp_path: Path) -> None:
    owners = {"support-bot": {"owners": [APPROVER_2]}}
    async with running_countersign(tmp_path, agent_settings=owners) as cs:
        _, created = await post(cs, escalation())
        await click(cs, APPROVER, "escalation_take", created["id"])
        await read(cs, created["id"], wait="10")

        submitted = view_submission_body(
            user_id=APPROVER_2,
            callback_id="escalation_hand_back",
            private_metadata=created["id"],
            values={"note": {"note": "Done, carry on."}},
        )
        assert await cs.post_slack(submitted) == 200

        async def refused() -> Any:
            log = await cs.store.escalations().escalation_log(created["id"])
            return [e for e in log if e.event == "hand_back_refused"] or None

        [entry] = await eventually(refused)
        assert "own the agent" in json.dumps(entry.detail)
        found = await cs.store.escalations().get_escalation(created["id"])
        assert (found.status.value, found.owner, found.note) == ("taken", APPROVER, None)


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        (LocalUser(id=APPROVER, is_bot=True), "bots and apps"),
        (LocalUser(id=APPROVER, deleted=True), "deactivated"),
        (LocalUser(id=APPROVER, is_restricted=True), "guests"),
        (LocalUser(id=APPROVER, is_ultra_restricted=True), "guests"),
        (LocalUser(id=APPROVER, team_id="T0ELSEWHERE"), "another workspace"),
    ],
)
async def test_a_responder_slack_says_may_not_take_part_is_refused(
    cs: Countersign, profile: LocalUser, expected: str
) -> None:
    # APPROVER holds finance, the responder role: only the Slack profile stops them
    cs.slack.add_user(profile)
    _, created = await post(cs, escalation())
    await posted(cs, created["id"])

    await click(cs, APPROVER, "escalation_take", created["id"])

    await _refused_and_unchanged(cs, created["id"], APPROVER, "take", expected)


async def test_a_clicker_slack_cannot_tell_about_cannot_resolve(cs: Countersign) -> None:
    _, created = await post(cs, escalation())
    await posted(cs, created["id"])
    cs.slack.fail_next("users.info", status=200, error="user_not_found", times=5)

    await click(cs, APPROVER, "escalation_resolve", created["id"])

    await _refused_and_unchanged(cs, created["id"], APPROVER, "resolve", "could not check")


async def test_hand_back_asks_for_a_note_and_the_agent_gets_it_by_long_poll_and_callback(
    tmp_path: Path,
) -> None:
    received: list[tuple[dict[str, str], bytes]] = []

    async def callback(request: web.Request) -> web.Response:
        received.append((dict(request.headers), await request.read()))
        return web.json_response({"ok": True})

    async with running_countersign(tmp_path) as cs:
        url = cs.agent_hook("hook", callback)
        _, created = await post(cs, escalation(callback_url=url))
        await click(cs, APPROVER, "escalation_take", created["id"])
        await read(cs, created["id"], wait="10")

        await click(cs, APPROVER, "escalation_hand_back", created["id"])
        [modal] = await eventually(lambda: _views(cs, APPROVER))
        assert modal.view["callback_id"] == "escalation_hand_back"
        assert modal.view["private_metadata"] == created["id"]
        submitted = view_submission_body(
            user_id=APPROVER,
            callback_id="escalation_hand_back",
            private_metadata=created["id"],
            values={"note": {"note": "Refunded by hand; confirm with the customer."}},
        )
        assert await cs.post_slack(submitted) == 200

        _, back = await read(cs, created["id"], wait="10", while_status="taken")
        assert (back["status"], back["handed_off"]) == ("handed_back", False)
        assert back["note"] == "Refunded by hand; confirm with the customer."
        await cs.settled()
        statuses = [json.loads(body)["status"] for _, body in received]
        assert statuses[-1] == "handed_back"
        headers, body = received[-1]
        assert headers["X-Countersign-Escalation"] == created["id"]
        # the escalations' outbox numbers its entries apart from the proposals'
        assert re.fullmatch(r"escalation-\d+", headers["X-Countersign-Delivery"])
        assert verify(
            AGENT_TOKEN,
            headers["X-Countersign-Timestamp"],
            body,
            headers["X-Countersign-Callback-Signature"],
            now=cs.clock(),
            purpose=CALLBACK,
        )
        found = await cs.store.escalations().get_escalation(created["id"])
        shown = json.dumps(cs.slack.message(ESCALATION_CHANNEL, found.slack_ts).blocks)
        assert f"by <@{APPROVER}>" in shown and "confirm with the customer" in shown


async def test_only_the_owner_may_hand_back(cs: Countersign) -> None:
    _, created = await post(cs, escalation())
    await click(cs, APPROVER, "escalation_take", created["id"])
    await read(cs, created["id"], wait="10")

    await click(cs, APPROVER_2, "escalation_hand_back", created["id"])

    told = await eventually(lambda: _ephemeral(cs, APPROVER_2))
    assert f"<@{APPROVER}>" in told.text
    assert cs.slack.views(APPROVER_2) == []


async def test_resolve_closes_it_and_later_clicks_see_who_resolved_it(cs: Countersign) -> None:
    _, created = await post(cs, escalation())
    await click(cs, APPROVER, "escalation_take", created["id"])
    await read(cs, created["id"], wait="10")

    await click(cs, APPROVER, "escalation_resolve", created["id"])
    _, done = await read(cs, created["id"], wait="10", while_status="taken")
    await click(cs, APPROVER_2, "escalation_take", created["id"])

    assert (done["status"], done["final"], done["resolved_by"]) == ("resolved", True, APPROVER)
    told = await eventually(lambda: _ephemeral(cs, APPROVER_2))
    assert "already resolved" in told.text
    await cs.settled()
    found = await cs.store.escalations().get_escalation(created["id"])
    assert buttons(cs.slack.message(ESCALATION_CHANNEL, found.slack_ts).blocks) == []
    events = [e.event for e in await cs.store.escalations().escalation_log(created["id"])]
    assert events[0] == "escalated"
    assert {"taken", "resolved"} <= set(events)
    assert (await cs.store.verify_audit()).ok


async def test_an_unclaimed_escalation_is_announced_again_after_the_configured_time(
    cs: Countersign,
) -> None:
    _, created = await post(cs, escalation())
    found = await posted(cs, created["id"])

    cs.clock.advance(timedelta(minutes=11))

    async def reminder() -> Any:
        replies = cs.slack.replies(ESCALATION_CHANNEL, found.slack_ts)
        return replies[-1] if replies else None

    reply = await eventually(reminder)
    assert "<!here>" in json.dumps(reply.blocks)
    posts = [c for c in cs.slack.calls("chat.postMessage") if c.args.get("thread_ts")]
    assert posts[-1].args.get("reply_broadcast") is True
    log = await cs.store.escalations().escalation_log(created["id"])
    assert [e.event for e in log].count("reannounced") == 1


async def test_another_agent_cannot_read_an_escalation(cs: Countersign) -> None:
    _, created = await post(cs, escalation())

    answer = await cs.request(
        "GET",
        f"/v1/escalations/{created['id']}",
        headers={"Authorization": f"Bearer {OTHER_AGENT_TOKEN}"},
    )

    assert answer.status == 404


async def _ephemeral(cs: Countersign, user: str) -> Any:
    found = cs.slack.ephemeral(user)
    return found[-1] if found else None


async def _views(cs: Countersign, user: str) -> Any:
    return cs.slack.views(user)


async def _async(value: Any) -> Any:
    return value
