"""A batch digest decided from two instances at the same moment, through the whole service.

The store's own race tests (tests/store/decision_races.py) race the digest's verbs on the
store; here two app stacks (each its own service, applier and outbox) share one database (a
PostgreSQL schema, or one SQLite file with a store each), one local Slack and one execution
target. People submit over signed Slack payloads: Review all…'s submit or Approve all, and
Choose…'s rejection. The clicks are recorded by the instance each arrives at; then the test
holds both appliers still and applies them at the same moment, each by the instance it
arrived at, so that the two digests' decisions really overlap (an applier leases the clicks of
one digest one after another; two instances do not). Afterwards, from the tables: each item
executed at most once at the target (and once when its quorum was met), its quorum of
distinct approvers, one audit path of allowed transitions with one outcome, the chain
verified, no click left, and the digest's message in Slack showing each item as it is stored.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import sqlite3
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.app import DECISIONS, build_app
from bot.render import digest as render_digest
from bot.render.actions import DIGEST_APPROVE_ALL, DIGEST_CHOOSE
from bot.settings import load_settings
from bot.slack.local import LocalSlack, running_local_slack
from store.digests import Digest
from store.open import open_store
from store.proposals import OUTCOME_STATUS, TRANSITIONS, Status
from tests.e2e.harness import (
    AGENT_HOOKS,
    APPROVER,
    APPROVER_2,
    BOT_TOKEN,
    CAMPAIGN_CHANNEL,
    ENV,
    FINANCE_GROUP,
    Countersign,
    FakeClock,
    Target,
    config_text,
    eventually,
    replace_rule,
)
from tests.e2e.test_batching import campaign
from tests.e2e.test_digest_review import boxes, open_review
from tests.e2e.test_digests import chosen, click, submit_view, told
from tests.store.conftest import POSTGRES_URL, new_schema
from tests.store.decision_races import Query

ITEMS = 12
#: The target takes this long to answer, so that one instance's executions overlap the other's
#: claims.
TARGET_DELAY = 0.05


def batched(quorum: int) -> Callable[[str], str]:
    """Campaigns wait in a batch of ITEMS (shown at once when it fills), ``quorum`` approvers
    each."""
    return replace_rule(
        "campaigns",
        f"""
        [[policy]]
        id = "campaigns"
        operation = "crm.send_campaign"
        decision = "ask"
        approvers = ["finance"]
        quorum = {quorum}
        channel = "{CAMPAIGN_CHANNEL}"
        expires_after = "30m"
        batch = {{ window = "10m", max = {ITEMS} }}
        """,
    )


@dataclass
class Pair:
    """Two instances over one database, one local Slack and one target."""

    first: Countersign
    second: Countersign
    slack: LocalSlack
    target: Target
    query: Query  #: reads the shared database past both stores


@asynccontextmanager
async def running_pair(tmp_path: Path, backend: str, quorum: int) -> AsyncIterator[Pair]:
    async with AsyncExitStack() as stack:
        target = Target(delay=TARGET_DELAY)
        target_app = web.Application()
        target_app.router.add_route("*", AGENT_HOOKS + "/{name}", target.hook)
        target_app.router.add_route("*", "/{tail:.*}", target.handle)
        target_server = TestServer(target_app, host="127.0.0.1")
        await target_server.start_server()
        stack.push_async_callback(target_server.close)
        target_url = str(target_server.make_url("")).rstrip("/")
        local = LocalSlack(token=BOT_TOKEN)
        local.set_usergroup(FINANCE_GROUP, [])
        slack, slack_url = await stack.enter_async_context(running_local_slack(slack=local))
        config = tmp_path / "countersign.toml"
        config.write_text(batched(quorum)(config_text(target_url)))
        settings = load_settings(config, {**ENV, "SLACK_API_URL": slack_url})
        db_path = tmp_path / "countersign.sqlite"
        if backend == "sqlite":
            url = str(db_path)
        else:
            schema = await stack.enter_async_context(new_schema())
            url = f"{POSTGRES_URL}?search_path={schema}"
        http = await stack.enter_async_context(aiohttp.ClientSession())
        clock = FakeClock()
        instances = []
        for _ in range(2):
            store = await open_store(url)
            stack.push_async_callback(store.close)
            app = build_app(settings, store, clock=clock)
            server = TestServer(app, host="127.0.0.1")
            await server.start_server()
            stack.push_async_callback(server.close)
            instances.append(
                Countersign(
                    url=str(server.make_url("")).rstrip("/"),
                    slack=slack,
                    target=target,
                    clock=clock,
                    store=store,  # type: ignore[arg-type]  # a SQLite or a PostgreSQL store
                    app=app,
                    http=http,
                    db_path=db_path,
                    target_url=target_url,
                )
            )
        first, second = instances
        if backend == "sqlite":  # once the stores have made the file
            query = _sqlite_reader(db_path, stack)
        else:
            query = await _postgres_reader(schema, stack)
        yield Pair(first, second, slack, target, query)


def _sqlite_reader(path: Path, stack: AsyncExitStack) -> Query:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    stack.callback(db.close)

    async def query(sql: str) -> list[dict[str, Any]]:
        return [dict(row) for row in db.execute(sql)]

    return query


async def _postgres_reader(schema: str, stack: AsyncExitStack) -> Query:
    db = await asyncpg.connect(POSTGRES_URL, server_settings={"search_path": schema})
    stack.push_async_callback(db.close)

    async def query(sql: str) -> list[dict[str, Any]]:
        return [dict(row) for row in await db.fetch(sql)]

    return query


BACKENDS = [pytest.param("sqlite"), pytest.param("postgres", marks=pytest.mark.postgres)]


# --- the race ------------------------------------------------------------------------------------


async def posted_batch(pair: Pair) -> Digest:
    """ITEMS campaigns submitted to the first instance, shown as one digest."""
    answers = await asyncio.gather(*(pair.first.submit(campaign(n)) for n in range(ITEMS)))
    assert [status for status, _ in answers] == [201] * ITEMS, answers
    ids = [str(body["id"]) for _, body in answers]

    async def shown() -> Any:
        proposals = [await pair.first.store.get_proposal(i) for i in ids]
        return proposals if all(p.slack_ts for p in proposals) else None

    proposals = await eventually(shown)
    [digest_id] = {p.digest_id for p in proposals}
    assert digest_id is not None
    digest = await pair.first.store.digests().get_digest(digest_id)
    assert digest.batch_id is not None and len(digest.items) == ITEMS
    return digest


Submit = Callable[[], Awaitable[object]]


@dataclass(frozen=True)
class Sent:
    """A person's submit, to send to the instance it arrives at."""

    to: Countersign
    user: str
    submit: Submit


async def review_all(cs: Countersign, user: str, digest: Digest) -> Sent:
    """``user`` opens Review all… (through ``cs``), every item selected: its submit."""
    view = (await open_review(cs, user, digest)).view
    return Sent(cs, user, lambda: submit_view(cs, user, view, boxes(view)))


async def approve_all(cs: Countersign, user: str, digest: Digest) -> Sent:
    """``user``'s click on Approve all."""

    async def send() -> object:
        assert await click(cs, user, DIGEST_APPROVE_ALL, digest) == 200
        return None

    return Sent(cs, user, send)


async def reject_one(cs: Countersign, user: str, digest: Digest, proposal_id: str) -> Sent:
    """``user`` opens Choose… (through ``cs``): its submit rejecting ``proposal_id`` alone."""
    before = len(cs.slack.views(user))
    assert await click(cs, user, DIGEST_CHOOSE, digest) == 200
    await eventually(lambda: _opened(cs, user, before))
    view = cs.slack.views(user)[-1].view
    values = chosen([proposal_id], "reject", "not this segment")
    return Sent(cs, user, lambda: submit_view(cs, user, view, values))


async def _opened(cs: Countersign, user: str, before: int) -> bool:
    return len(cs.slack.views(user)) > before


async def race(pair: Pair, sent: Sequence[Sent], *, clicks: int) -> None:
    """Send every submit at once, each to its instance; once the ``clicks`` they make are
    recorded, apply each by the instance its person sent it to (the first, when both), all at
    the same moment; then wait until every effect (the messages' updates, the replies) is
    delivered."""
    for cs in (pair.first, pair.second):  # the test applies the clicks itself
        await cs.app[DECISIONS].stop()
    await asyncio.gather(*(s.submit() for s in sent))

    async def recorded() -> bool:
        return await pair.first.store.clicks().waiting_clicks() >= clicks

    await eventually(recorded)
    leased = await pair.first.store.clicks().claim_clicks(
        now=datetime.now(UTC), limit=10, lease=timedelta(minutes=1)
    )
    assert len(leased) == clicks, leased
    arrived: dict[str, Countersign] = {}
    for s in sent:
        arrived.setdefault(s.user, s.to)
    await asyncio.gather(*(arrived[c.actor].app[DECISIONS].apply(c) for c in leased))
    assert await pair.first.store.clicks().waiting_clicks() == 0
    await eventually(lambda: _delivered(pair), timeout=20)


async def _delivered(pair: Pair) -> bool:
    [row] = await pair.query(
        "SELECT count(*) AS n FROM outbox WHERE delivered_at IS NULL AND abandoned_at IS NULL"
    )
    return int(row["n"]) == 0


# --- the invariants ------------------------------------------------------------------------------

#: The status each audit event moves a proposal into (None: its outcome's).
ENTERS: dict[str, Status | None] = {
    "submitted": Status.PENDING,
    "approved": Status.EXECUTING,
    "rejected": Status.REJECTED,
    "outcome": None,
}


async def check_digest(pair: Pair, digest_id: str) -> dict[str, Status]:
    """Assert the invariants of the digest's items in the tables, the target and Slack; their
    statuses."""
    store = pair.first.store
    report = await store.verify_audit()
    assert report.ok, report
    [unsealed] = await pair.query("SELECT count(*) AS n FROM audit_log WHERE seq IS NULL")
    assert int(unsealed["n"]) == 0
    assert await store.clicks().waiting_clicks() == 0
    [abandoned] = await pair.query(
        "SELECT count(*) AS n FROM outbox WHERE abandoned_at IS NOT NULL"
    )
    assert int(abandoned["n"]) == 0
    digest = await store.digests().get_digest(digest_id)
    rows = {r["id"]: r for r in await pair.query("SELECT * FROM proposals")}
    approvals: dict[str, list[str]] = {}
    for row in await pair.query("SELECT proposal_id, approver FROM approvals"):
        approvals.setdefault(row["proposal_id"], []).append(row["approver"])
    entries: dict[str, list[dict[str, Any]]] = {}
    for row in await pair.query(
        "SELECT * FROM audit_log WHERE proposal_id IS NOT NULL ORDER BY seq"
    ):
        entries.setdefault(row["proposal_id"], []).append(row)
    executed = Counter(
        json.loads(r["body"])["arguments"]["segment"] for r in pair.target.executions()
    )
    assert set(executed) <= {_segment(p) for p in digest.items}

    statuses = {}
    for item in digest.items:
        row = rows[item.id]
        status = Status(row["status"])
        statuses[item.id] = status
        events = [e["event"] for e in entries[item.id]]
        path = [
            entered
            for e in entries[item.id]
            if (entered := _entered(e["event"], _detail(e))) is not None
        ]
        for before, after in itertools.pairwise(path):
            assert after in TRANSITIONS[before], (item.id, events)
        assert path[-1] is status, (item.id, events)
        approvers = approvals.get(item.id, [])
        assert len(approvers) == len(set(approvers)), (item.id, approvers)
        recorded = [e["actor"] for e in entries[item.id] if e["event"] == "approval_recorded"]
        claimed = [e["actor"] for e in entries[item.id] if e["event"] == "approved"]
        outcomes = [e for e in entries[item.id] if e["event"] == "outcome"]
        times = executed[_segment(item)]
        if status is Status.PENDING:
            assert (claimed, outcomes, times) == ([], [], 0), (item.id, events)
            assert sorted(recorded) == sorted(approvers) and len(approvers) < row["quorum"]
        elif status is Status.REJECTED:
            assert (claimed, outcomes, times) == ([], [], 0), (item.id, events)
            assert events.count("rejected") == 1, (item.id, events)
            assert len(approvers) < row["quorum"], (item.id, approvers)
        else:
            assert status is Status.SUCCEEDED, (item.id, events)
            assert len(claimed) == 1 and len(outcomes) == 1 and times == 1, (item.id, events)
            assert sorted([*recorded, *claimed]) == sorted(approvers), (item.id, events)
            assert len(approvers) == row["quorum"], (item.id, approvers)
            assert row["attempt"] == 1
    # the digest's message shows each item as stored
    message = pair.slack.message(digest.channel, digest.ts)
    publisher = pair.first.service.publisher
    formats = publisher.formats_of(digest.operation)
    what = publisher.described(digest.operation)
    shown = render_digest.digest_message(digest, now=pair.first.clock(), formats=formats, what=what)
    # the fifth block holds the time left to the first expiry, while anything is pending
    assert _without_times(message.blocks) == _without_times(shown["blocks"])
    assert message.text == shown["text"]
    # and each item's outcome (or rejection) once in its thread
    replies = json.dumps(
        [m.blocks for m in pair.slack.messages(digest.channel) if m.thread_ts == digest.ts]
    )
    for n, item in enumerate(digest.items, 1):
        times = 0 if statuses[item.id] is Status.PENDING else 1
        assert replies.count(f"*Item {n}:* {item.preview.title}") == times, (item.id, replies)
    return statuses


def _segment(proposal: Any) -> str:
    return str(proposal.arguments["segment"])


def _detail(entry: dict[str, Any]) -> dict[str, Any]:
    detail = entry["detail"]
    return detail if isinstance(detail, dict) else dict(json.loads(detail))


def _entered(event: str, detail: dict[str, Any]) -> Status | None:
    if event not in ENTERS:
        return None
    status = ENTERS[event]
    if status is None:
        return OUTCOME_STATUS[detail["kind"]]
    return status


def _without_times(blocks: list[dict[str, Any]]) -> str:
    return re.sub(r"\*First to expire:\*[^\"]*", "", json.dumps(blocks))


TALLY = re.compile(
    r"(?:Approved|Rejected) (\d+), (?:(\d+) approvals? counted, waiting for more approvers, )?"
    r"(\d+) already decided, (\d+) refused"
)


def tallies(pair: Pair, user: str) -> list[tuple[int, int, int, int]]:
    """What ``user`` was told of their digest decisions: how many items each decided, counted
    (an approval short of the quorum), found decided already, refused."""
    return [
        (int(m[1]), int(m[2] or 0), int(m[3]), int(m[4]))
        for text in told(pair.first, user)
        if (m := TALLY.search(text)) is not None
    ]


# --- the tests -----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("quorum", [1, 2])
@pytest.mark.parametrize("how", [review_all, approve_all], ids=["review_all", "approve_all"])
async def test_two_approvers_approving_all_at_once_from_two_instances_execute_each_item_once(
    tmp_path: Path, backend: str, quorum: int, how: Callable[..., Awaitable[Sent]]
) -> None:
    """Each item is executed once: with a quorum of one by whichever approver claimed it (the
    other is told it was decided), with a quorum of two once both approvals are counted."""
    async with running_pair(tmp_path, backend, quorum) as pair:
        digest = await posted_batch(pair)
        sent = [
            await how(pair.first, APPROVER, digest),
            await how(pair.second, APPROVER_2, digest),
        ]

        await race(pair, sent, clicks=2)

        statuses = await check_digest(pair, digest.id)
        assert set(statuses.values()) == {Status.SUCCEEDED}
        assert len(pair.target.executions()) == ITEMS
        [[first], [second]] = [tallies(pair, user) for user in (APPROVER, APPROVER_2)]
        assert first[0] + second[0] == ITEMS  # each claimed by one of them
        if quorum == 1:
            assert first[1:] == (0, second[0], 0) and second[1:] == (0, first[0], 0)
        else:  # the other approval was counted first, or completed the quorum
            assert first[1] + second[1] == ITEMS and first[2:] == second[2:] == (0, 0)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_approving_all_while_another_rejects_one_item_decides_that_item_once(
    tmp_path: Path, backend: str
) -> None:
    async with running_pair(tmp_path, backend, quorum=1) as pair:
        digest = await posted_batch(pair)
        contested = digest.items[2].id
        sent = [
            await review_all(pair.first, APPROVER, digest),
            await reject_one(pair.second, APPROVER_2, digest, contested),
        ]

        await race(pair, sent, clicks=2)

        statuses = await check_digest(pair, digest.id)
        assert statuses[contested] in (Status.SUCCEEDED, Status.REJECTED)
        assert {s for i, s in statuses.items() if i != contested} == {Status.SUCCEEDED}
        rejected = int(statuses[contested] is Status.REJECTED)
        assert len(pair.target.executions()) == ITEMS - rejected
        assert tallies(pair, APPROVER) == [(ITEMS - rejected, 0, rejected, 0)]
        assert tallies(pair, APPROVER_2) == [(rejected, 0, 1 - rejected, 0)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("quorum", [1, 2])
async def test_one_persons_submit_arriving_at_both_instances_approves_each_item_once(
    tmp_path: Path, backend: str, quorum: int
) -> None:
    """Slack delivers one submit to both instances (a retry reaching the other one): it is one
    click, recorded once and applied once; with a quorum of two every item keeps that one
    approval and stays pending."""
    async with running_pair(tmp_path, backend, quorum) as pair:
        digest = await posted_batch(pair)
        sent = await review_all(pair.first, APPROVER, digest)
        view = pair.slack.views(APPROVER)[-1].view
        again = Sent(
            pair.second, APPROVER, lambda: submit_view(pair.second, APPROVER, view, boxes(view))
        )

        await race(pair, [sent, again], clicks=1)

        statuses = await check_digest(pair, digest.id)
        want = Status.SUCCEEDED if quorum == 1 else Status.PENDING
        assert set(statuses.values()) == {want}
        assert len(pair.target.executions()) == (ITEMS if quorum == 1 else 0)
        done = (ITEMS, 0) if quorum == 1 else (0, ITEMS)
        assert tallies(pair, APPROVER) == [(*done, 0, 0)]
