"""A digest's and an escalation's decisions are recorded at the click and applied after, like a
proposal's: Approve all, the Reject all… and Choose… modals, Take it, Resolve and the hand-back's
note. With room for one click at a time a burst of them is never told busy, each is applied once
and its clicker told its outcome once; with the store really stopped, the clicker is told to try
again (a modal stays open saying so) and nothing changes. Signed Slack payloads over HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.render.actions import DIGEST_APPROVE_ALL, DIGEST_REJECT_VIEW
from store.digests import Digest
from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    APPROVER_2,
    REQUESTER,
    SIGNING_SECRET,
    Countersign,
    eventually,
    running_countersign,
)
from tests.e2e.store_outage import StoreProxy, postgres_through_proxy
from tests.e2e.test_escalations import escalation
from tests.slack_requests import block_action_body, signed_headers, view_submission_body

RECORDED = "is recorded;"
TRY_AGAIN = ("nothing changed", "please click again")


def one_click_at_a_time(text: str) -> str:
    """Room for one click at a time; similar campaigns shown together in one digest."""
    assert "[slack]" not in text
    # agents' submissions are not shed on a loaded machine: the test's own need them
    settings = "max_in_flight_clicks = 1\nshed_agents_at_loop_lag_ms = 0\n"
    text = text.replace("[server]\n", "[server]\n" + settings, 1)
    return f"{text}\n[slack]\ndigest_window_seconds = 1.5\n"


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=one_click_at_a_time) as running:
        yield running


def campaign(n: int) -> dict[str, Any]:
    return {
        "operation": "crm.send_campaign",
        "request": {"segment": f"segment-{n}", "template": "tmpl_winback", "recipients": 100 + n},
        "requested_by": REQUESTER,
        "run_id": f"run-{n}",
    }


async def _digest(cs: Countersign, count: int) -> tuple[Digest, list[str]]:
    answers = await asyncio.gather(*(cs.submit(campaign(n)) for n in range(count)))
    assert [status for status, _ in answers] == [201] * count, answers
    ids = [str(body["id"]) for _, body in answers]

    async def shown() -> Any:
        proposals = [await cs.store.get_proposal(i) for i in ids]
        return proposals if all(p.slack_ts for p in proposals) else None

    proposals = await eventually(shown)
    [digest_id] = {p.digest_id for p in proposals}
    assert digest_id is not None
    return await cs.store.digests().get_digest(digest_id), ids


def _digest_click(cs: Countersign, user: str, digest: Digest) -> str:
    return block_action_body(
        user_id=user,
        action_id=DIGEST_APPROVE_ALL,
        value=digest.id,
        channel_id=digest.channel,
        message_ts=digest.ts,
        trigger_id=cs.slack.issue_trigger(user),
        block_id="digest",
    )


def _reject_all_body(user: str, digest: Digest, reason: str) -> str:
    return view_submission_body(
        user_id=user,
        callback_id=DIGEST_REJECT_VIEW,
        private_metadata=digest.id,
        values={"reason": {"reason": reason}},
    )


async def _escalated(cs: Countersign, count: int) -> list[Any]:
    found = []
    for n in range(count):
        answer = await cs.request(
            "POST",
            "/v1/escalations",
            data=json.dumps(escalation(conversation_id=f"conv-{n}")).encode(),
            headers={"Authorization": f"Bearer {AGENT_TOKEN}", "Content-Type": "application/json"},
        )
        assert answer.status == 201, answer.body
        escalation_id = answer.json()["id"]

        async def posted(i: str = escalation_id) -> Any:
            stored = await cs.store.escalations().get_escalation(i)
            return stored if stored.slack_ts else None

        found.append(await eventually(posted))
    return found


def _escalation_click(cs: Countersign, user: str, action_id: str, found: Any) -> str:
    return block_action_body(
        user_id=user,
        action_id=action_id,
        value=found.id,
        channel_id=found.slack_channel,
        message_ts=found.slack_ts,
        trigger_id=cs.slack.issue_trigger(user),
        block_id="escalation",
    )


async def _post(cs: Countersign, body: str) -> tuple[int, str]:
    headers = signed_headers(SIGNING_SECRET, body)
    async with cs.http.post(f"{cs.url}/slack/events", data=body, headers=headers) as r:
        return r.status, await r.text()


def _told(cs: Countersign, user: str) -> list[str]:
    return [message.text for message in cs.slack.ephemeral(user)]


async def test_a_burst_of_digest_decisions_is_never_told_busy_and_each_item_decided_once(
    cs: Countersign,
) -> None:
    """Approve all clicked three times by one approver and Reject all… submitted by another,
    all at once, with room for one click at a time: the three clicks share one record and one
    tally, every item is decided exactly once (approved or rejected), and each clicker is told
    one tally."""
    digest, ids = await _digest(cs, 6)
    bodies = [_digest_click(cs, APPROVER, digest) for _ in range(3)]
    bodies.append(_reject_all_body(APPROVER_2, digest, "not this week"))

    answers = await asyncio.gather(*(_post(cs, body) for body in bodies))

    assert [status for status, _ in answers] == [200] * len(bodies)
    assert answers[-1][1] in ("", "{}"), answers[-1]  # the modal closed: recorded

    async def both_tallied() -> bool:
        return all(
            any(t.startswith(("Approved", "Rejected")) for t in _told(cs, user))
            for user in (APPROVER, APPROVER_2)
        )

    await eventually(both_tallied, timeout=60)
    await cs.settled()
    assert await cs.store.clicks().waiting_clicks() == 0
    for proposal_id in ids:
        events = [e.event for e in await cs.store.audit_log(proposal_id)]
        assert events.count("approved") + events.count("rejected") == 1, events
    for user in (APPROVER, APPROVER_2):
        told = _told(cs, user)
        assert not any("busy" in text for text in told), told
        tallies = [t for t in told if t.startswith(("Approved", "Rejected"))]
        assert len(tallies) == 1, told
        assert all(RECORDED in t for t in told if t not in tallies), told
    stored = [await cs.store.get_proposal(i) for i in ids]
    approved = sum(p.status.value == "succeeded" for p in stored)
    assert len(cs.target.executions()) == approved


async def test_a_burst_of_escalation_decisions_is_never_told_busy_and_each_applied_once(
    cs: Countersign,
) -> None:
    """Take it on three escalations and Resolve on three others, and a second taker of the
    first, all at once with room for one click at a time: each applied once, the late taker
    told who has it."""
    found = await _escalated(cs, 6)
    bodies = [_escalation_click(cs, APPROVER, "escalation_take", f) for f in found[:3]]
    bodies += [_escalation_click(cs, APPROVER, "escalation_resolve", f) for f in found[3:]]

    answers = await asyncio.gather(*(_post(cs, body) for body in bodies))
    assert [status for status, _ in answers] == [200] * len(bodies)

    async def all_applied() -> bool:
        stored = [await cs.store.escalations().get_escalation(f.id) for f in found]
        return [s.status.value for s in stored] == ["taken"] * 3 + ["resolved"] * 3

    await eventually(all_applied, timeout=60)
    assert (await _post(cs, _escalation_click(cs, APPROVER_2, "escalation_take", found[0])))[
        0
    ] == 200
    told = await eventually(lambda: _async([t for t in _told(cs, APPROVER_2) if "taken" in t]))
    assert f"<@{APPROVER}>" in told[0]
    await cs.settled()
    assert await cs.store.clicks().waiting_clicks() == 0
    for f, event in [(f, "taken") for f in found[:3]] + [(f, "resolved") for f in found[3:]]:
        events = [e.event for e in await cs.store.escalations().escalation_log(f.id)]
        assert events.count(event) == 1, events
    assert not any("busy" in t for t in _told(cs, APPROVER) + _told(cs, APPROVER_2))
    assert all(RECORDED in t for t in _told(cs, APPROVER))


async def _async(value: Any) -> Any:
    return value


@pytest.fixture
async def outage(tmp_path: Path) -> AsyncIterator[tuple[Countersign, StoreProxy]]:
    async with (
        postgres_through_proxy() as (url, proxy),
        running_countersign(tmp_path, store_url=url, config_edit=one_click_at_a_time) as running,
    ):
        yield running, proxy


@pytest.mark.postgres
async def test_with_the_store_away_digest_and_escalation_decisions_are_told_to_try_again(
    outage: tuple[Countersign, StoreProxy],
) -> None:
    cs, proxy = outage
    digest, ids = await _digest(cs, 2)
    [found] = await _escalated(cs, 1)
    approve_all = _digest_click(cs, APPROVER, digest)
    take = _escalation_click(cs, APPROVER_2, "escalation_take", found)

    await proxy.cut()
    assert (await _post(cs, approve_all))[0] == 200
    assert (await _post(cs, take))[0] == 200
    status, answer = await _post(cs, _reject_all_body(APPROVER_2, digest, "no"))

    assert status == 200
    assert "Submit again" in json.loads(answer)["errors"]["reason"]
    for user in (APPROVER, APPROVER_2):
        [text] = await eventually(lambda u=user: _async(_told(cs, u)), timeout=20)
        assert any(words in text for words in TRY_AGAIN), text

    await proxy.restore()

    async def answers() -> bool:
        try:
            return await cs.store.clicks().waiting_clicks() == 0
        except Exception:
            return False

    await eventually(answers, timeout=20)
    for proposal_id in ids:
        assert (await cs.store.get_proposal(proposal_id)).status.value == "pending"
    assert (await cs.store.escalations().get_escalation(found.id)).status.value == "open"
    assert cs.target.executions() == []
