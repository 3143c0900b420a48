"""One agent cannot starve the others: each agent's rate, pending proposals, long-polls, open
escalations and body time are bounded, and what one agent is refused never touches another.

Each test plays the flooding agent over real HTTP (the support bot's token) and checks both
sides: the flooder gets ``429`` (or ``408``) with ``Retry-After`` and a problem naming the
limit, nothing of the refused request is stored, posted or audited, and the other agent (the
ops bot's token) is still served.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.api.agent_requests import QUOTAS, SUBMISSIONS
from tests.e2e.conftest import new_postgres_url
from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    CAMPAIGN_CHANNEL,
    ESCALATION_CHANNEL,
    OTHER_AGENT_TOKEN,
    REQUESTER,
    SIGNING_SECRET,
    Answer,
    Countersign,
    eventually,
    running_countersign,
)
from tests.slack_requests import app_home_opened_body, signed_headers, slash_command_body
from tests.store.conformance import new_proposal


def limits(table: str = "limits", **values: float) -> Callable[[str], str]:
    """A ``config_edit`` adding ``[table]`` (``limits``, or ``agents.NAME.limits``)."""
    lines = "".join(f"{key} = {value}\n" for key, value in values.items())
    return lambda text: f"{text}\n[{table}]\n{lines}"


def both(*edits: Callable[[str], str]) -> Callable[[str], str]:
    def edit(text: str) -> str:
        for one in edits:
            text = one(text)
        return text

    return edit


def campaign(n: int) -> dict[str, Any]:
    """A campaign the policy asks finance about: it waits, pending, for a person."""
    return {
        "operation": "crm.send_campaign",
        "request": {"segment": f"segment-{n}", "template": "tmpl_winback", "recipients": 10 + n},
        "requested_by": REQUESTER,
    }


def escalation(conversation: str) -> dict[str, Any]:
    return {
        "conversation_id": conversation,
        "requested_by": REQUESTER,
        "summary": {"goal": "Refund a double charge", "blocked_on": "the refund tool fails"},
        "trigger": {"kind": "repeated_failure", "signals": {"failed_turns": 5}},
    }


async def post(
    cs: Countersign, path: str, body: dict[str, Any], token: str, *, once: bool = False
) -> Answer:
    """The agent's submission, sent again while Countersign answers busy (a busy answer charges
    nothing, so the counts of 201 and 429 stay exact); ``once``: its first answer, busy or not."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    send = cs.request if once else cs.agent_request
    return await send("POST", path, data=json.dumps(body).encode(), headers=headers)


async def audit_entries(cs: Countersign) -> int:
    return len(await cs.store.audit_log())


def assert_refused(answer: Answer, setting: str) -> None:
    assert answer.status == 429, answer.body
    assert answer.headers["Content-Type"].startswith("application/problem+json")
    assert int(answer.headers["Retry-After"]) >= 1
    problem = answer.json()
    assert [e["field"] for e in problem["errors"]] == [f"limits.{setting}"]
    assert "support-bot" in problem["detail"]
    assert "nothing was stored" in problem["detail"]


# --- submissions per second -------------------------------------------------------------------


async def test_a_flooding_agent_gets_429_with_retry_after_from_its_bucket_and_the_other_agent_is_served(  # noqa: E501
    tmp_path: Path,
) -> None:
    edit = limits(submissions_per_second=0.5, submissions_burst=3)
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        answers = await asyncio.gather(
            *(post(cs, "/v1/proposals", campaign(n), AGENT_TOKEN) for n in range(10))
        )
        audited, stored = await audit_entries(cs), await cs.proposal_count()
        other = await post(cs, "/v1/proposals", campaign(99), OTHER_AGENT_TOKEN)

        statuses = sorted(a.status for a in answers)
        assert statuses == [201] * 3 + [429] * 7
        refused = [a for a in answers if a.status == 429]
        for answer in refused:
            assert_refused(answer, "submissions_per_second")
            # the bucket is empty and refills one token every 2 s: that is the wait it names
            assert answer.headers["Retry-After"] == "2"
        assert stored == 3  # nothing of the refused ones was stored
        assert other.status == 201  # the ops bot has a bucket of its own
        assert await audit_entries(cs) == audited + 1  # only the ops bot's submission


async def test_an_agent_with_a_raised_rate_of_its_own_is_not_held_to_the_default(
    tmp_path: Path,
) -> None:
    edit = both(
        limits(submissions_per_second=0.5, submissions_burst=2),
        limits("agents.ops-bot.limits", submissions_burst=8),
    )
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        theirs = [await post(cs, "/v1/proposals", campaign(n), OTHER_AGENT_TOKEN) for n in range(8)]
        mine = [await post(cs, "/v1/proposals", campaign(n), AGENT_TOKEN) for n in range(3)]

    assert [a.status for a in theirs] == [201] * 8
    assert [a.status for a in mine] == [201, 201, 429]


async def test_a_submission_refused_at_capacity_is_not_charged_to_the_rate_one_at_its_limit_is(
    tmp_path: Path,
) -> None:
    """A 503 (capacity) is Countersign's own refusal, before anything is done for the request:
    it gives the token back, so the agent is not rate-limited for requests never served. A 429
    for the agent's own pending limit comes after the request was served up to the store, so it
    spends its token (see the flood below)."""
    edit = limits(submissions_per_second=0.01, submissions_burst=3, max_pending_proposals=1)
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        admission = cs.app[SUBMISSIONS]
        admission.limit = 1
        with admission.slot():  # capacity taken by work in flight
            busy = [
                await post(cs, "/v1/proposals", campaign(n), AGENT_TOKEN, once=True)
                for n in range(3)
            ]
        admission.limit = 64
        first = await post(cs, "/v1/proposals", campaign(1), AGENT_TOKEN)
        over = await post(cs, "/v1/proposals", campaign(2), AGENT_TOKEN)
        auto_tag = {
            "operation": "crm.tag_customers",
            "request": {"segment": "vip", "tag": "thanks", "customers": 5},
            "requested_by": REQUESTER,
        }
        served = await post(cs, "/v1/proposals", auto_tag, AGENT_TOKEN)
        spent = await post(cs, "/v1/proposals", {**auto_tag, "run_id": "again"}, AGENT_TOKEN)

    assert [a.status for a in busy] == [503] * 3
    assert first.status == 201
    assert_refused(over, "max_pending_proposals")
    assert served.status == 201  # the burst's third token: the 503s took none
    assert_refused(spent, "submissions_per_second")  # the pending limit's refusal took one


async def test_an_agent_that_filled_its_pending_places_is_still_held_to_its_rate(
    tmp_path: Path,
) -> None:
    """The attack: an agent fills its pending places, then floods. Each submission it sends is
    served (parsed, its requester checked, resolved through the operation, classified, counted
    by the store) before the pending limit refuses it; were that refusal not charged to the
    agent's rate, the flood would run at whatever rate the agent likes, however low its
    configured one. Its own limit's refusals spend tokens: past its burst it is refused by its
    rate, before its body is read, and the other agent is served."""
    edit = limits(submissions_per_second=0.01, submissions_burst=3, max_pending_proposals=1)
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        assert (await post(cs, "/v1/proposals", campaign(0), AGENT_TOKEN)).status == 201
        flood = [await post(cs, "/v1/proposals", campaign(n), AGENT_TOKEN) for n in range(1, 41)]
        by_limit = [a.json()["errors"][0]["field"] for a in flood]
        assert (
            by_limit
            == ["limits.max_pending_proposals"] * 2 + ["limits.submissions_per_second"] * 38
        )
        for answer in flood:
            assert answer.status == 429
        assert await cs.store.count_pending("support-bot") == 1
        assert (await post(cs, "/v1/proposals", campaign(99), OTHER_AGENT_TOKEN)).status == 201


async def test_an_agent_that_filled_its_open_escalations_is_still_held_to_its_rate(
    tmp_path: Path,
) -> None:
    """The same for escalations: a refusal for the agent's open-escalations limit spends a
    token of its rate."""
    edit = limits(submissions_per_second=0.01, submissions_burst=3, max_open_escalations=1)
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        assert (await post(cs, "/v1/escalations", escalation("c-0"), AGENT_TOKEN)).status == 201
        flood = [
            await post(cs, "/v1/escalations", escalation(f"c-{n}"), AGENT_TOKEN)
            for n in range(1, 21)
        ]
        fields = [a.json()["errors"][0]["field"] for a in flood]
        assert (
            fields == ["limits.max_open_escalations"] * 2 + ["limits.submissions_per_second"] * 18
        )


async def test_an_escalation_refused_at_capacity_is_not_charged_to_the_rate(
    tmp_path: Path,
) -> None:
    """As for proposals: the escalations' 503 (capacity) gives the token back. Were it charged,
    the third busy answer would already be the rate's 429."""
    edit = limits(submissions_per_second=0.01, submissions_burst=2)
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        admission = cs.app[SUBMISSIONS]
        admission.limit = 1
        with admission.slot():  # capacity taken by work in flight
            busy = [
                await post(cs, "/v1/escalations", escalation(f"c-{n}"), AGENT_TOKEN, once=True)
                for n in range(3)
            ]
        admission.limit = 64
        served = [
            await post(cs, "/v1/escalations", escalation(f"c-{n}"), AGENT_TOKEN) for n in range(2)
        ]
        spent = await post(cs, "/v1/escalations", escalation("c-2"), AGENT_TOKEN)

    assert [a.status for a in busy] == [503] * 3
    assert [a.status for a in served] == [201] * 2  # the whole burst: the 503s took none
    assert_refused(spent, "submissions_per_second")


# --- pending proposals ----------------------------------------------------------------------------


async def test_past_its_pending_limit_an_agent_is_refused_and_nothing_is_stored_posted_or_audited(
    tmp_path: Path,
) -> None:
    async with running_countersign(tmp_path, config_edit=limits(max_pending_proposals=2)) as cs:
        first = await post(cs, "/v1/proposals", campaign(1), AGENT_TOKEN)
        await post(cs, "/v1/proposals", campaign(2), AGENT_TOKEN)
        await cs.settled()
        audited, posts = await audit_entries(cs), len(cs.slack.messages(CAMPAIGN_CHANNEL))

        third = await post(cs, "/v1/proposals", campaign(3), AGENT_TOKEN)

        assert_refused(third, "max_pending_proposals")
        assert third.headers["Retry-After"] == "30"
        await cs.settled()
        assert await cs.proposal_count() == 2
        assert await audit_entries(cs) == audited
        assert len(cs.slack.messages(CAMPAIGN_CHANNEL)) == posts
        # a retry of a stored submission is no new proposal: it still gets its answer
        replay = await post(cs, "/v1/proposals", campaign(1), AGENT_TOKEN)
        assert (replay.status, replay.json()["id"]) == (200, first.json()["id"])
        # what waits for nobody is not held back: a small tagging runs at once
        auto = await post(
            cs,
            "/v1/proposals",
            {
                "operation": "crm.tag_customers",
                "request": {"segment": "vip", "tag": "thanks", "customers": 5},
                "requested_by": REQUESTER,
            },
            AGENT_TOKEN,
        )
        assert auto.status == 201
        # the other agent's share is its own
        assert (await post(cs, "/v1/proposals", campaign(3), OTHER_AGENT_TOKEN)).status == 201

        # when the waiting ones expire, there is room again
        cs.clock.advance(timedelta(minutes=31))

        async def expired() -> bool:
            return await cs.store.count_pending("support-bot") == 0

        await eventually(expired)
        assert (await post(cs, "/v1/proposals", campaign(3), AGENT_TOKEN)).status == 201


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store_url(request: pytest.FixtureRequest) -> AsyncIterator[str | None]:
    """The store of the test's one instance: a SQLite file (None), or a new PostgreSQL schema."""
    if request.param == "sqlite":
        yield None
        return
    async with new_postgres_url() as url:
        yield url


async def test_a_burst_of_concurrent_submissions_cannot_all_take_the_last_free_places(
    tmp_path: Path, store_url: str | None
) -> None:
    """Twenty at once, each counting the store before any is stored, would all see room; and
    with places freed by decisions in between, the limit still holds exactly."""
    edit = limits(max_pending_proposals=3, submissions_per_second=1000, submissions_burst=1000)
    async with running_countersign(tmp_path, config_edit=edit, store_url=store_url) as cs:
        answers = await asyncio.gather(
            *(post(cs, "/v1/proposals", campaign(n), AGENT_TOKEN) for n in range(20))
        )
        assert sorted(a.status for a in answers) == [201] * 3 + [429] * 17
        assert await cs.store.count_pending("support-bot") == 3

        first = next(a.json()["id"] for a in answers if a.status == 201)
        await cs.store.reject(first, actor=APPROVER, reason="no", now=cs.clock())
        again = await asyncio.gather(
            *(post(cs, "/v1/proposals", campaign(n), AGENT_TOKEN) for n in range(20, 40))
        )
        assert sorted(a.status for a in again) == [201] + [429] * 19
        assert await cs.store.count_pending("support-bot") == 3
        assert len(await cs.store.pending_proposals(agent="support-bot")) == 3


async def test_a_burst_of_concurrent_escalations_cannot_all_take_the_last_free_places(
    tmp_path: Path,
) -> None:
    edit = limits(max_open_escalations=2, submissions_per_second=1000, submissions_burst=1000)
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        answers = await asyncio.gather(
            *(post(cs, "/v1/escalations", escalation(f"conv-{n}"), AGENT_TOKEN) for n in range(12))
        )
        opened = await cs.store.escalations().count_open("support-bot")

    assert sorted(a.status for a in answers) == [201] * 2 + [429] * 10
    assert opened == 2


async def test_the_pending_limit_counts_what_the_store_holds_not_what_this_instance_saw(
    tmp_path: Path,
) -> None:
    """Another instance's proposals count too: the count is read from the shared store."""
    async with running_countersign(tmp_path, config_edit=limits(max_pending_proposals=3)) as cs:
        for _ in range(3):  # stored by "another instance": straight into the store
            await cs.store.create_proposal(
                new_proposal(cs.clock(), agent="support-bot", channel=CAMPAIGN_CHANNEL)
            )

        answer = await post(cs, "/v1/proposals", campaign(1), AGENT_TOKEN)

        assert_refused(answer, "max_pending_proposals")
        assert await cs.proposal_count() == 3


# --- long-polls ---------------------------------------------------------------------------------


async def test_past_its_long_poll_limit_an_agent_gets_429_while_other_agents_keep_polling(
    tmp_path: Path,
) -> None:
    async with running_countersign(tmp_path, config_edit=limits(max_long_polls=2)) as cs:
        mine = (await post(cs, "/v1/proposals", campaign(1), AGENT_TOKEN)).json()["id"]
        theirs = (await post(cs, "/v1/proposals", campaign(2), OTHER_AGENT_TOKEN)).json()["id"]
        quotas = cs.app[QUOTAS]
        held = [asyncio.create_task(cs.read(mine, wait=2)) for _ in range(2)]
        await eventually(lambda: _true(quotas.long_polls("support-bot") == 2))

        third = await cs.request(
            "GET",
            f"/v1/proposals/{mine}",
            params={"wait": "2"},
            headers={"Authorization": f"Bearer {AGENT_TOKEN}"},
        )
        plain = await cs.read(mine)  # a read that does not wait is no long-poll
        other = await cs.read(theirs, wait=0.2, token=OTHER_AGENT_TOKEN)

        assert_refused(third, "max_long_polls")
        assert plain[0] == 200
        assert other[0] == 200
        assert [status for status, _ in await asyncio.gather(*held)] == [200, 200]
        assert quotas.long_polls("support-bot") == 0  # the places are given back
        assert (await cs.read(mine, wait=0.1))[0] == 200


async def _true(value: bool) -> bool:
    return value


# --- escalations --------------------------------------------------------------------------------


async def test_past_its_open_escalations_limit_an_agent_is_refused_and_nothing_is_stored(
    tmp_path: Path,
) -> None:
    async with running_countersign(tmp_path, config_edit=limits(max_open_escalations=2)) as cs:
        first = await post(cs, "/v1/escalations", escalation("conv-1"), AGENT_TOKEN)
        await post(cs, "/v1/escalations", escalation("conv-2"), AGENT_TOKEN)
        await cs.settled()  # their posts are audited too
        audited = await audit_entries(cs)

        third = await post(cs, "/v1/escalations", escalation("conv-3"), AGENT_TOKEN)
        other = await post(cs, "/v1/escalations", escalation("conv-3"), OTHER_AGENT_TOKEN)

        assert_refused(third, "max_open_escalations")
        assert other.status == 201
        assert await audit_entries(cs) == audited + 1  # the ops bot's only
        assert await cs.store.escalations().count_open("support-bot") == 2
        # once a person has taken one, its place is free
        taken = await cs.store.escalations().take(
            first.json()["id"], actor="U0APPROVER", now=cs.clock()
        )
        assert taken.escalation.status == "taken"
        again = await post(cs, "/v1/escalations", escalation("conv-3"), AGENT_TOKEN)
        assert again.status == 201


# --- slow bodies --------------------------------------------------------------------------------


async def test_a_slow_body_holds_no_submission_slot_and_gets_408(tmp_path: Path) -> None:
    """The slow sender dribbles its body; with one submission slot in all, the other agent is
    still served at once, and the slow one is cut off when its time is up."""
    edit = both(
        lambda text: text.replace("[server]\n", "[server]\nmax_in_flight_submissions = 1\n", 1),
        limits(body_timeout_seconds=1),
    )
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        host, port = cs.url.removeprefix("http://").split(":")
        body = json.dumps(campaign(1)).encode()
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            (
                "POST /v1/proposals HTTP/1.1\r\n"
                f"Host: {host}:{port}\r\n"
                f"Authorization: Bearer {AGENT_TOKEN}\r\n"
                "Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode()
            + body[:5]
        )
        await writer.drain()

        async def dribble() -> None:
            for byte in body[5:40]:
                await asyncio.sleep(0.1)
                writer.write(bytes([byte]))
                await writer.drain()

        dribbling = asyncio.create_task(dribble())
        await asyncio.sleep(0.3)  # the slow request is in the server, reading its body
        started = time.perf_counter()
        other = await post(cs, "/v1/proposals", campaign(2), OTHER_AGENT_TOKEN)
        served_in = time.perf_counter() - started
        status_line = await asyncio.wait_for(reader.readline(), timeout=5)
        dribbling.cancel()
        writer.close()

        assert other.status == 201, other.body
        assert served_in < 0.5
        assert status_line.startswith(b"HTTP/1.1 408"), status_line
        assert await cs.proposal_count() == 1  # the ops bot's only


# --- re-announcements ---------------------------------------------------------------------------


async def test_an_unclaimed_escalation_is_announced_again_a_bounded_number_of_times_and_here_once(
    tmp_path: Path,
) -> None:
    def edit(text: str) -> str:
        return text.replace(
            'reannounce_after = "10m"\n', 'reannounce_after = "10m"\nreannounce_max = 2\n'
        )

    async with running_countersign(tmp_path, config_edit=edit) as cs:
        created = (await post(cs, "/v1/escalations", escalation("conv-1"), AGENT_TOKEN)).json()

        async def posted() -> Any:
            found = await cs.store.escalations().get_escalation(created["id"])
            return found if found.slack_ts else None

        ts = (await eventually(posted)).slack_ts

        def replies() -> list[Any]:
            return cs.slack.replies(ESCALATION_CHANNEL, ts)

        for announced in (1, 2):
            cs.clock.advance(timedelta(minutes=11))

            async def reminded(n: int = announced) -> bool:
                return len(replies()) == n

            await eventually(reminded)
        for _ in range(3):  # more periods pass: nobody is paged again
            cs.clock.advance(timedelta(minutes=11))
            await asyncio.sleep(0.3)  # several sweeps (every 0.05 s)
        await cs.settled()

        texts = [json.dumps(reply.blocks) for reply in replies()]
        assert len(texts) == 2
        assert ["<!here>" in text for text in texts] == [True, False]
        log = await cs.store.escalations().escalation_log(created["id"])
        assert [e.event for e in log].count("reannounced") == 2


# --- App Home and /countersign list ----------------------------------------------------------


async def open_home(cs: Countersign, user: str) -> dict[str, Any]:
    before = cs.slack.home_view(user)
    body = app_home_opened_body(user_id=user)
    headers = signed_headers(SIGNING_SECRET, body, content_type="application/json")
    assert await cs.post_slack(body, headers) == 200

    async def published() -> Any:
        view = cs.slack.home_view(user)
        return view if view is not None and view is not before else None

    view: dict[str, Any] = await eventually(published)
    return view


async def slash_list(cs: Countersign, user: str) -> dict[str, Any]:
    body = slash_command_body(user_id=user, command="/countersign", text="list")
    answer = await cs.request(
        "POST", "/slack/events", data=body.encode(), headers=signed_headers(SIGNING_SECRET, body)
    )
    assert answer.status == 200, answer.body
    answered: dict[str, Any] = answer.json()
    return answered


def buttons_by_agent(blocks: list[dict[str, Any]], ids: dict[str, str]) -> dict[str, int]:
    """How many proposals with decision buttons each agent has in ``blocks``."""
    shown: dict[str, int] = {}
    for block in blocks:
        if block["type"] == "actions" and block["block_id"].startswith("decision-"):
            agent = ids[block["block_id"].removeprefix("decision-")]
            shown[agent] = shown.get(agent, 0) + 1
    return shown


async def test_one_agents_200_proposals_do_not_crowd_the_other_agent_out_of_app_home_or_list(
    tmp_path: Path,
) -> None:
    flood = limits(
        "agents.support-bot.limits",
        max_pending_proposals=1000,
        submissions_per_second=100000,
        submissions_burst=100000,
    )
    async with running_countersign(tmp_path, config_edit=flood) as cs:
        ids: dict[str, str] = {}
        for batch in range(10):
            answers = await asyncio.gather(
                *(
                    post(cs, "/v1/proposals", campaign(batch * 20 + n), AGENT_TOKEN)
                    for n in range(20)
                )
            )
            ids.update((a.json()["id"], "support-bot") for a in answers)
        for payment in ("pay_1001", "pay_1003"):
            refund = {
                "operation": "payments.refund",
                "request": {"payment_id": payment},
                "requested_by": REQUESTER,
            }
            answer = await post(cs, "/v1/proposals", refund, OTHER_AGENT_TOKEN)
            assert answer.status == 201, answer.body
            ids[answer.json()["id"]] = "ops-bot"
        assert len(ids) == 202

        home = await open_home(cs, APPROVER)
        listed = await slash_list(cs, APPROVER)

    # a page shows 12 (the Home tab's blocks stay under Slack's 100); the other agent's two are
    # on the first page all the same
    shown, more = 12, 190
    for blocks in (home["blocks"], listed["blocks"]):
        assert buttons_by_agent(blocks, ids) == {"support-bot": shown - 2, "ops-bot": 2}
        text = json.dumps(blocks)
        assert "From agent *ops-bot*" in text
        assert f"and {more} more pending from this agent, not shown" in text
        assert f"{more} more pending beyond this page" in text
    assert len(home["blocks"]) <= 100
    assert listed["text"] == (
        "12 proposal(s) wait for your decision, and 190 more pending beyond this page"
    )


async def test_the_openapi_document_lists_the_refusals_of_the_limits(tmp_path: Path) -> None:
    async with running_countersign(tmp_path) as cs:
        document = (await cs.request("GET", "/v1/openapi.json")).json()

    submit = document["paths"]["/v1/proposals"]["post"]["responses"]
    read = document["paths"]["/v1/proposals/{id}"]["get"]["responses"]
    cancel = document["paths"]["/v1/proposals/{id}/cancel"]["post"]["responses"]
    assert {"408", "429"} <= set(submit)
    assert {"429", "503"} <= set(read) & set(cancel)
    too_many = document["components"]["responses"]["TooManyRequests"]
    assert "Retry-After" in too_many["headers"]
