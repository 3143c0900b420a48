"""Every decision button is recorded when it arrives and applied after, like Approve: a
rejection's reason, Extend, Retry and the two reconciliations. With room for one click at a time
a burst of them is never told busy and every one is applied, through the checks of its own
decision path, exactly once; only a click the store could not record is told to try again.
Every click here is a signed Slack payload sent over HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.app import DECISIONS
from contracts.canonical import binding_hash
from store.proposals import Status
from store.proposals.clicks import ClickVerb
from tests.e2e.harness import (
    APPROVER,
    OUTSIDER,
    REQUESTER,
    SIGNING_SECRET,
    Countersign,
    eventually,
    running_countersign,
)
from tests.e2e.store_outage import StoreProxy, postgres_through_proxy
from tests.slack_requests import block_action_body, signed_headers, view_submission_body

POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
REFUSED = ":no_entry_sign: Countersign did not do that"
NOTHING_CHANGED = "could not record your decision just now; nothing changed"


def campaign(n: int) -> dict[str, Any]:
    return {
        "operation": "crm.send_campaign",
        "request": {"segment": f"segment-{n}", "template": "tmpl_winback", "recipients": 10 + n},
        "requested_by": REQUESTER,
        "run_id": f"run-{n}",
    }


def one_click_at_a_time(text: str) -> str:
    """Room for one click at a time, campaigns extendable once, each its own message."""
    assert "[slack]" not in text
    # agents' submissions are not shed on a loaded machine: the test's own need them
    settings = "max_in_flight_clicks = 1\nshed_agents_at_loop_lag_ms = 0\n"
    text = text.replace("[server]\n", "[server]\n" + settings, 1)
    text = text.replace('expires_after = "30m"\n', 'expires_after = "30m"\nextend_by = "15m"\n', 1)
    return f"{text}\n[slack]\ndigests = false\n"


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=one_click_at_a_time) as running:
        yield running


async def _posted(cs: Countersign, count: int, start: int = 0) -> list[str]:
    ids = []
    for n in range(start, start + count):
        status, created = await cs.submit(campaign(n))
        assert status == 201, created
        await cs.posted(created["id"])
        ids.append(created["id"])
    return ids


async def _uncertain(cs: Countersign, proposal_ids: list[str]) -> None:
    """Each claimed by an executor that died: a person must reconcile it (or retry it)."""
    now = cs.clock()
    for proposal_id in proposal_ids:
        proposal = await cs.store.get_proposal(proposal_id)
        await cs.store.claim_for_execution(
            proposal.id,
            actor=APPROVER,
            now=now,
            binding_hash=binding_hash(
                proposal.operation, proposal.arguments, proposal.preview.model_dump(mode="json")
            ),
            lease_until=now + timedelta(seconds=30),
        )
    cs.clock.advance(timedelta(minutes=1))

    async def all_uncertain() -> bool:
        stored = [await cs.store.get_proposal(i) for i in proposal_ids]
        return all(p.status is Status.NEEDS_RECONCILIATION for p in stored)

    await eventually(all_uncertain, timeout=20)


def _reason_body(user: str, proposal_id: str, reason: str) -> str:
    return view_submission_body(
        user_id=user,
        callback_id="reject_reason",
        private_metadata=proposal_id,
        values={"reason": {"reason": reason}},
    )


async def _post(cs: Countersign, body: str) -> tuple[int, str]:
    headers = signed_headers(SIGNING_SECRET, body)
    async with cs.http.post(f"{cs.url}/slack/events", data=body, headers=headers) as r:
        return r.status, await r.text()


async def _click_body(cs: Countersign, user: str, action_id: str, proposal_id: str) -> str:
    proposal = await cs.posted(proposal_id)
    return block_action_body(
        user_id=user,
        action_id=action_id,
        value=proposal_id,
        channel_id=proposal.slack_channel,
        message_ts=proposal.slack_ts,
        trigger_id=cs.slack.issue_trigger(user),
    )


def _told(cs: Countersign, user: str) -> list[str]:
    return [message.text for message in cs.slack.ephemeral(user)]


async def _events(cs: Countersign, proposal_id: str) -> list[str]:
    return [e.event for e in await cs.store.audit_log(proposal_id)]


async def test_a_burst_of_every_decision_button_is_never_told_busy_and_every_one_is_applied(
    cs: Countersign,
) -> None:
    """Extend, the reject modal's reason, It happened, It did not happen and Retry, sent at
    once with room for one click at a time: all answered 200 at once, none told busy, each
    applied once."""
    ids = await _posted(cs, 25)
    extend, reject, happened, not_happened, retry = (ids[i : i + 5] for i in range(0, 25, 5))
    await _uncertain(cs, happened + not_happened + retry)
    bodies = [await _click_body(cs, APPROVER, "extend", i) for i in extend]
    bodies += [_reason_body(APPROVER, i, f"not {i}") for i in reject]
    bodies += [await _click_body(cs, APPROVER, "reconcile_succeeded", i) for i in happened]
    bodies += [await _click_body(cs, APPROVER, "reconcile_failed", i) for i in not_happened]
    bodies += [await _click_body(cs, APPROVER, "reconcile_retry", i) for i in retry]

    answers = await asyncio.gather(*(_post(cs, body) for body in bodies))

    assert [status for status, _ in answers] == [200] * len(bodies)
    assert all(text in ("", "{}") for _, text in answers), answers  # every modal closed

    async def all_applied() -> bool:
        stored = {i: await cs.store.get_proposal(i) for i in ids}
        return (
            all(stored[i].extended_by == APPROVER for i in extend)
            and all(stored[i].status is Status.REJECTED for i in reject)
            and all(stored[i].status is Status.SUCCEEDED for i in happened + retry)
            and all(stored[i].status is Status.FAILED for i in not_happened)
        )

    await eventually(all_applied, timeout=60)
    await cs.settled()
    assert await cs.store.clicks().waiting_clicks() == 0
    told = _told(cs, APPROVER)
    assert not any("busy" in text for text in told), told
    assert all("is recorded;" in text for text in told), told
    for proposal_id in reject:
        stored = await cs.store.get_proposal(proposal_id)
        assert stored.decided_by == APPROVER and stored.decision_note == f"not {proposal_id}"
    for proposal_id in extend:
        assert (await _events(cs, proposal_id)).count("extended") == 1
    for proposal_id in happened + not_happened:
        assert (await _events(cs, proposal_id)).count("reconciled") == 1
    for proposal_id in retry:
        assert (await _events(cs, proposal_id)).count("retry_approved") == 1
    assert len(cs.target.executions()) == len(retry)  # only the retries run again


async def test_a_recorded_decision_is_checked_when_applied_and_a_refusal_told_once(
    cs: Countersign,
) -> None:
    """Roles are checked when the click is applied: an outsider's Extend and rejection are
    refused, audited and told once; the proposals wait."""
    extend, reject = await _posted(cs, 2)

    assert (await _post(cs, await _click_body(cs, OUTSIDER, "extend", extend)))[0] == 200
    assert (await _post(cs, _reason_body(OUTSIDER, reject, "no")))[0] == 200

    async def both_refused() -> bool:
        return len([t for t in _told(cs, OUTSIDER) if t.startswith(REFUSED)]) == 2

    await eventually(both_refused, timeout=20)
    await cs.settled()
    assert await cs.store.clicks().waiting_clicks() == 0
    for proposal_id, verb in ((extend, "extend"), (reject, "reject")):
        stored = await cs.store.get_proposal(proposal_id)
        assert stored.status is Status.PENDING and stored.extended_by is None
        assert (await _events(cs, proposal_id)).count(f"{verb}_refused") == 1


@pytest.mark.parametrize(("verb", "event"), [("reject", "rejected"), ("extend", "extended")])
async def test_a_decision_applied_but_not_settled_is_not_applied_again(
    cs: Countersign, verb: ClickVerb, event: str
) -> None:
    """An applier that stopped after applying a rejection (or an extension) and before settling
    it leaves it to be leased again: the decision its path finds is the click's own, so nobody
    is told twice and no refusal is audited."""
    [proposal_id] = await _posted(cs, 1)
    decisions = cs.app[DECISIONS]
    await decisions.stop()  # the test leases and applies the click itself
    recorded = await cs.store.clicks().record_click(
        proposal_id,
        actor=APPROVER,
        verb=verb,
        channel=None,
        now=cs.clock(),
        detail={"reason": "not now"} if verb == "reject" else {},
    )
    assert recorded is not None
    await cs.store.clicks().claim_clicks(now=cs.clock(), limit=1, lease=timedelta(seconds=1))
    # the applier that leased it applied it, then stopped before settling it
    if verb == "reject":
        await cs.service.reject(proposal_id, user=APPROVER, reason="not now")
    else:
        await cs.service.extend(proposal_id, user=APPROVER, channel=None)

    [again] = await cs.store.clicks().claim_clicks(
        now=cs.clock() + timedelta(seconds=2), limit=1, lease=timedelta(seconds=1)
    )
    assert again.attempts == 2
    await decisions.apply(again)  # as after a crash before the settle

    await cs.settled()
    events = await _events(cs, proposal_id)
    assert events.count(event) == 1 and f"{verb}_refused" not in events, events
    assert _told(cs, APPROVER) == []  # not told it was decided (extended) already, by them
    assert await cs.store.clicks().waiting_clicks() == 0


@pytest.fixture
async def outage(tmp_path: Path) -> AsyncIterator[tuple[Countersign, StoreProxy]]:
    async with (
        postgres_through_proxy() as (url, proxy),
        running_countersign(tmp_path, store_url=url, config_edit=one_click_at_a_time) as running,
    ):
        yield running, proxy


@pytest.mark.postgres
async def test_with_the_store_away_a_decision_is_told_to_try_again_and_nothing_changes(
    outage: tuple[Countersign, StoreProxy],
) -> None:
    """A button's clicker is told nothing changed; a reject modal stays open, its reason kept,
    saying to submit again. Once the store is back, nothing was recorded or changed."""
    cs, proxy = outage
    extend, reject = await _posted(cs, 2)
    click = await _click_body(cs, APPROVER, "extend", extend)

    await proxy.cut()
    assert (await _post(cs, click))[0] == 200
    status, answer = await _post(cs, _reason_body(APPROVER, reject, "not this month"))

    assert status == 200
    errors = json.loads(answer)
    assert errors["response_action"] == "errors"
    assert "Submit again" in errors["errors"]["reason"]
    told = await eventually(lambda: _async(_told(cs, APPROVER)), timeout=20)
    assert len(told) == 1 and NOTHING_CHANGED in told[0], told

    await proxy.restore()
    await eventually(lambda: _answers(cs), timeout=20)
    assert await cs.store.clicks().waiting_clicks() == 0
    for proposal_id in (extend, reject):
        stored = await cs.store.get_proposal(proposal_id)
        assert stored.status is Status.PENDING and stored.extended_by is None
        assert await _events(cs, proposal_id) == ["submitted", "posted_to_slack"]
    assert not any("busy" in text for text in _told(cs, APPROVER))


async def _answers(cs: Countersign) -> bool:
    try:
        await cs.store.clicks().waiting_clicks()
    except Exception:
        return False
    return True


async def _async(value: Any) -> Any:
    return value


@pytest.mark.postgres
async def test_decisions_recorded_on_a_stopped_instance_are_applied_once_by_the_other(
    tmp_path: Path, postgres_url: str
) -> None:
    """Two instances on one PostgreSQL database: rejections, extensions and reconciliations
    taken by one that stopped applying are applied by the other, each once."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    async with (
        running_countersign(
            tmp_path / "a", store_url=postgres_url, config_edit=one_click_at_a_time
        ) as first,
        running_countersign(
            tmp_path / "b", store_url=postgres_url, config_edit=one_click_at_a_time
        ) as second,
    ):
        await second.app[DECISIONS].stop()  # the second takes clicks but does not apply them
        ids = await _posted(second, 9)
        extend, reject, happened = ids[:3], ids[3:6], ids[6:]
        await _uncertain(second, happened)
        bodies = [await _click_body(second, APPROVER, "extend", i) for i in extend]
        bodies += [_reason_body(APPROVER, i, "no") for i in reject]
        bodies += [await _click_body(second, APPROVER, "reconcile_succeeded", i) for i in happened]
        answers = await asyncio.gather(*(_post(second, body) for body in bodies))
        assert [status for status, _ in answers] == [200] * len(bodies)

        async def all_applied() -> bool:
            stored = {i: await first.store.get_proposal(i) for i in ids}
            return (
                all(stored[i].extended_by == APPROVER for i in extend)
                and all(stored[i].status is Status.REJECTED for i in reject)
                and all(stored[i].status is Status.SUCCEEDED for i in happened)
            )

        await eventually(all_applied, timeout=30)

        async def all_settled() -> bool:  # each is settled just after it is applied
            return await first.store.clicks().waiting_clicks() == 0

        await eventually(all_settled)
        for proposal_id, event in (
            [(i, "extended") for i in extend]
            + [(i, "rejected") for i in reject]
            + [(i, "reconciled") for i in happened]
        ):
            assert (await _events(first, proposal_id)).count(event) == 1
