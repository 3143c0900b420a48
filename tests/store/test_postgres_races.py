"""Races the store's leases and sweeps on PostgreSQL lose to another transaction, forced.

Each statement here locks its rows in a CTE (``FOR UPDATE SKIP LOCKED``, or ``FOR UPDATE``) and
updates them by the row address the lock returns (claim_clicks: by their ids). Under READ
COMMITTED the statement reads from the snapshot it took when it began; a row another
transaction changed and committed after
that is checked again as it now is when it is locked, and the address that comes back is the
new version's, which the statement's own snapshot does not see. Each test makes that happen
with two real connections and no sleeping: the other transaction ("A") changes a row while the
statement waits for it, after the statement has taken its snapshot. What must hold: the caller
gets back exactly the rows the statement changed, no row is leased twice or leased once its
conditions no longer hold, and a row left alone is taken by a later call.

Between its snapshot and its locks a statement never waits on its own (SKIP LOCKED skips), so
the tests make it wait: the instance under test compares times with a ``<=`` of this schema
(its ``search_path`` puts the schema before ``pg_catalog``) that is PostgreSQL's own but waits
on an advisory lock the test holds when it meets one row's time, a row the statement reads
before the one A changes.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from contracts.outcomes import Succeeded
from store.connector import load_queries
from store.digests import new_digest_id
from store.postgres import PostgresStore
from store.proposals import Effect
from tests.store.batch_conformance import WINDOW, waiting
from tests.store.conformance import LEASE, new_proposal
from tests.store.digest_conformance import digest
from tests.store.escalation_conformance import new_escalation

pytestmark = pytest.mark.postgres

URL = "postgresql://postgres@127.0.0.1:5432/test"
NOW = datetime(2031, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)
LATER = NOW + timedelta(hours=1)
WAIT = 30.0  # seconds: how long a test waits for what it must see (a lock wait, a verb's end)

OpenStore = Callable[..., Awaitable[PostgresStore]]
Connection = asyncpg.Connection  # asyncpg.Connection[asyncpg.Record] for the type checker


@pytest.fixture
async def open_pg(schema: str) -> AsyncIterator[OpenStore]:
    """Opens stores (instances) on the test's schema; closes whatever is left open."""
    opened: list[PostgresStore] = []

    async def open_(search_path: str | None = None) -> PostgresStore:
        settings = {"search_path": search_path or schema}
        store = await PostgresStore.open(URL, server_settings=settings)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        await store.close()


async def until(db: Connection, query: str, *args: Any, what: str, task: asyncio.Task[Any]) -> Any:
    """The first non-null value of ``query``, asked again until it has one while ``task`` (what
    should make it so) runs, for up to WAIT seconds."""
    async with asyncio.timeout(WAIT):
        while (value := await db.fetchval(query, *args)) is None:
            if task.done():
                raise AssertionError(f"never saw {what}: it ended with {task.result()!r}")
            await asyncio.sleep(0.01)
    return value


class Stall:
    """Holds the statements of one instance after their snapshot, where they compare a row's
    time equal to ``at`` with ``<=``, until :meth:`release`."""

    def __init__(self, schema: str, at: datetime, holder: Connection, watcher: Connection):
        self.schema = schema
        self.at = at
        self.key = secrets.randbelow(2**31 - 1) + 1
        self._holder = holder
        self._watcher = watcher

    async def install(self) -> None:
        """The schema's ``<=`` on times; the advisory lock held, so that it waits."""
        await self._holder.execute(f"""
            CREATE FUNCTION race_at_most(a timestamptz, b timestamptz) RETURNS boolean
            LANGUAGE plpgsql VOLATILE AS $$
            BEGIN
                IF a OPERATOR(pg_catalog.=) '{self.at.isoformat()}'::timestamptz THEN
                    PERFORM pg_catalog.pg_advisory_xact_lock({self.key});
                END IF;
                RETURN a OPERATOR(pg_catalog.<=) b;
            END $$;
            CREATE OPERATOR <= (
                LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = race_at_most
            );
        """)
        await self._holder.execute("SELECT pg_advisory_lock($1)", self.key)

    @property
    def search_path(self) -> str:
        """The search_path of the instance that stalls."""
        return f'"{self.schema}", pg_catalog'

    async def waiting(self, task: asyncio.Task[Any]) -> int:
        """The server pid of the statement ``task`` runs once it waits on the advisory lock."""
        return int(
            await until(
                self._watcher,
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                " AND classid = 0 AND objid = $1 AND objsubid = 1",
                self.key,
                what="the statement waiting in its comparison",
                task=task,
            )
        )

    async def release(self) -> None:
        await self._holder.execute("SELECT pg_advisory_unlock($1)", self.key)


@pytest.fixture
async def db(connect: Callable[[], Awaitable[Connection]]) -> Connection:
    return await connect()


async def leased(db: Connection, table: str = "outbox") -> set[int]:
    """Ids of the entries leased past LATER."""
    rows = await db.fetch(f"SELECT id FROM {table} WHERE leased_until > $1", LATER)
    return {row["id"] for row in rows}


async def decided(store: PostgresStore, db: Connection, at: datetime) -> tuple[int, int]:
    """A proposal shown and rejected: its message update and reply due at ``at`` and a little
    after, behind no post. Their ids."""
    new, _ = await store.create_proposal(new_proposal(NOW))
    await store.reject(new.id, actor="U0APPROVER", reason="no", now=NOW)
    await db.execute(
        "UPDATE outbox SET delivered_at = $1 WHERE proposal_id = $2 AND effect = 'slack.post'",
        NOW,
        new.id,
    )
    rows = await db.fetch(
        "SELECT id, effect FROM outbox WHERE proposal_id = $1 AND lane = 'slack'"
        " AND delivered_at IS NULL ORDER BY id",
        new.id,
    )
    assert [row["effect"] for row in rows] == ["slack.update", "slack.reply"]
    head, follower = rows[0]["id"], rows[1]["id"]
    await db.execute("UPDATE outbox SET next_attempt_at = $1 WHERE id = $2", at, head)
    await db.execute(
        "UPDATE outbox SET next_attempt_at = $1 WHERE id = $2", at + timedelta(seconds=1), follower
    )
    return head, follower


async def test_a_decision_run_whose_head_changed_after_the_snapshot_is_leased_whole_or_not_at_all(
    open_pg: OpenStore, connect: Callable[[], Awaitable[Connection]], schema: str
) -> None:
    """A commits a change to the second proposal's message update (still due) after the claim
    took its snapshot: locked at its new address, which the snapshot does not see, it is not
    leased, and neither is the reply behind it (leased alone, the reply went out before the
    update, or beside another worker's lease of it). The next claim leases both."""
    store = await open_pg()
    db, a, holder = await connect(), await connect(), await connect()
    first = await decided(store, db, NOW + timedelta(seconds=10))
    second = await decided(store, db, NOW + timedelta(seconds=20))
    stall = Stall(schema, NOW + timedelta(seconds=10), holder, db)
    await stall.install()
    stalled = await open_pg(stall.search_path)

    claim = asyncio.create_task(stalled.claim_deliveries(now=LATER, limit=2, lease=LEASE))
    pid = await stall.waiting(claim)
    query = await db.fetchval("SELECT query FROM pg_stat_activity WHERE pid = $1", pid)
    assert waits_in(query, "claim_decision_deliveries"), query
    async with asyncio.timeout(WAIT):  # the head changed, still due: committed after the snapshot
        await a.execute("UPDATE outbox SET last_error = 'seen' WHERE id = $1", second[0])
    await stall.release()
    got = {d.id for d in await claim}

    assert got == await leased(db)
    assert set(first) <= got
    assert second[1] not in got or second[0] in got
    again = {d.id for d in await store.claim_deliveries(now=LATER, limit=2, lease=LEASE)}
    assert set(second) <= got | again
    assert got | again == await leased(db)


# --- one statement, one table: the leases and the sweeps --------------------------------------

DUE = NOW + timedelta(minutes=10)  # when the rows of these tests fall due: the stall's time
TAKEN = LATER + LEASE  # the lease the statement under test gives
ELSEWHERE = LATER + 2 * LEASE  # the lease another worker gives


@dataclass(frozen=True)
class Sweep:
    """A verb whose statement (SWEEPS names it) takes rows due at DUE."""

    make: Callable[[PostgresStore, Connection], Awaitable[list[Any]]]  #: two rows due, in order
    run: Callable[[PostgresStore], Awaitable[list[Any]]]  #: the verb at LATER: the keys it took
    gone: str  #: SQL: row $1 no longer qualifies (leased elsewhere, delivered, decided)
    kept: str  #: SQL: row $1 changed, still due
    taken: str  #: SQL: the keys of the rows the statement changed


async def _posts(store: PostgresStore, db: Connection) -> list[Any]:
    """Two proposals' cards to post, due at DUE: their outbox entries."""
    made = [(await store.create_proposal(new_proposal(DUE)))[0].id for _ in range(2)]
    rows = await db.fetch(
        "SELECT id FROM outbox WHERE proposal_id = ANY($1) AND effect = 'slack.post' ORDER BY id",
        made,
    )
    await db.execute("DELETE FROM outbox WHERE NOT (proposal_id = ANY($1))", made)
    await db.execute(
        "UPDATE outbox SET delivered_at = $1 WHERE proposal_id = ANY($2) AND lane <> 'slack'",
        NOW,
        made,
    )
    return [row["id"] for row in rows]


async def _escalation_posts(store: PostgresStore, db: Connection) -> list[Any]:
    """Two escalations' posts, due at DUE: their outbox entries."""
    for _ in range(2):
        await store.escalations().create_escalation(new_escalation(DUE))
    rows = await db.fetch("SELECT id FROM escalation_outbox ORDER BY id")
    return [row["id"] for row in rows]


async def _escalations(store: PostgresStore, db: Connection) -> list[Any]:
    """Two escalations announced at DUE."""
    made = [(await store.escalations().create_escalation(new_escalation(DUE)))[0] for _ in range(2)]
    return sorted(e.id for e in made)


async def _similar(store: PostgresStore, count: int) -> list[str]:
    """``count`` similar proposals (one channel, operation and requester) created at DUE, never
    shown: their ids, in the order their posts are grouped (oldest first, then by id), which is
    the order they were created in."""
    ids = sorted(secrets.token_hex(16) for _ in range(count))
    for proposal_id in ids:
        await store.create_proposal(new_proposal(DUE, id=proposal_id))
    return ids


async def _post_ids(db: Connection, proposals: list[str]) -> list[Any]:
    rows = await db.fetch(
        "SELECT o.id FROM outbox AS o JOIN proposals AS p ON p.id = o.proposal_id"
        " WHERE o.proposal_id = ANY($1) AND o.effect = 'slack.post' ORDER BY p.created_at, p.id",
        proposals,
    )
    return [row["id"] for row in rows]


async def _similar_posts(store: PostgresStore, db: Connection) -> list[Any]:
    """Two similar proposals' cards to post, due at DUE: their outbox entries, oldest first."""
    return await _post_ids(db, await _similar(store, 2))


DIGEST_ID = new_digest_id()  # the digest of _digest_updates (each test has its own schema)


async def _digest_items(store: PostgresStore, db: Connection) -> list[str]:
    """Two proposals shown in the digest DIGEST_ID (their posts delivered) and rejected at DUE:
    each one's Slack lane holds its message update, then its reply, due at DUE."""
    made = [(await store.create_proposal(new_proposal(NOW)))[0].id for _ in range(2)]
    posts = await _post_ids(db, made)
    await store.digests().attach_digest(digest(id=DIGEST_ID), made, deliveries=posts, now=NOW)
    for item in made:
        await store.reject(item, actor="U0APPROVER", reason="no", now=DUE)
    return made


async def _digest_updates(store: PostgresStore, db: Connection) -> list[Any]:
    """Two items of a digest rejected: their message updates, due at DUE."""
    made = await _digest_items(store, db)
    rows = await db.fetch(
        "SELECT id FROM outbox WHERE proposal_id = ANY($1) AND effect = 'slack.update' ORDER BY id",
        made,
    )
    return [row["id"] for row in rows]


async def _claim_similar(store: PostgresStore, limit: int = 10) -> list[Any]:
    posts = await store.digests().claim_similar_posts(
        channel="C0FINANCE",
        operation="payments.refund",
        requested_by="U0123",
        now=LATER,
        limit=limit,
        lease=LEASE,
    )
    return [d.id for d in posts]


def _claim_digest(effect: Effect) -> Callable[[PostgresStore], Awaitable[list[Any]]]:
    async def run(store: PostgresStore) -> list[Any]:
        claimed = await store.digests().claim_digest_deliveries(
            DIGEST_ID, effect, now=LATER, limit=10, lease=LEASE
        )
        return [d.id for d in claimed]

    return run


def _pending(**due: Any) -> Callable[[PostgresStore, Connection], Awaitable[list[Any]]]:
    async def make(store: PostgresStore, db: Connection) -> list[Any]:
        """Two pending proposals, with ``due`` (their expiry, reminder or backup at DUE)."""
        made = [(await store.create_proposal(new_proposal(NOW, **due)))[0] for _ in range(2)]
        return sorted(p.id for p in made)

    return make


async def _claim(store: PostgresStore) -> list[Any]:
    return [d.id for d in await store.claim_deliveries(now=LATER, limit=10, lease=LEASE)]


async def _claim_escalations(store: PostgresStore) -> list[Any]:
    escalations = store.escalations()
    return [d.id for d in await escalations.claim_deliveries(now=LATER, limit=10, lease=LEASE)]


async def _reannounce(store: PostgresStore) -> list[Any]:
    escalations = store.escalations()
    return [
        e.id
        for e in await escalations.reannounce_due(now=LATER, after=LATER - DUE, most=3, limit=10)
    ]


def _sweep(verb: str) -> Callable[[PostgresStore], Awaitable[list[Any]]]:
    async def run(store: PostgresStore) -> list[Any]:
        return [p.id for p in await getattr(store, verb)(now=LATER, limit=10)]

    return run


SWEEPS = {
    "claim_deliveries": Sweep(
        _posts,
        _claim,
        f"UPDATE outbox SET leased_until = '{ELSEWHERE.isoformat()}' WHERE id = $1",
        "UPDATE outbox SET last_error = 'seen' WHERE id = $1",
        f"SELECT id FROM outbox WHERE leased_until = '{TAKEN.isoformat()}'",
    ),
    "claim_escalation_deliveries": Sweep(
        _escalation_posts,
        _claim_escalations,
        f"UPDATE escalation_outbox SET delivered_at = '{LATER.isoformat()}' WHERE id = $1",
        "UPDATE escalation_outbox SET last_error = 'seen' WHERE id = $1",
        f"SELECT id FROM escalation_outbox WHERE leased_until = '{TAKEN.isoformat()}'",
    ),
    "claim_similar_posts": Sweep(
        _similar_posts,
        _claim_similar,
        f"UPDATE outbox SET leased_until = '{ELSEWHERE.isoformat()}' WHERE id = $1",
        "UPDATE outbox SET last_error = 'seen' WHERE id = $1",
        f"SELECT id FROM outbox WHERE leased_until = '{TAKEN.isoformat()}'",
    ),
    "claim_digest_deliveries": Sweep(
        _digest_updates,
        _claim_digest(Effect.SLACK_UPDATE),
        f"UPDATE outbox SET leased_until = '{ELSEWHERE.isoformat()}' WHERE id = $1",
        "UPDATE outbox SET last_error = 'seen' WHERE id = $1",
        f"SELECT id FROM outbox WHERE leased_until = '{TAKEN.isoformat()}'",
    ),
    "expire_due": Sweep(
        _pending(expires_at=DUE),
        _sweep("expire_due"),
        "UPDATE proposals SET status = 'rejected' WHERE id = $1",
        "UPDATE proposals SET updated_at = updated_at WHERE id = $1",
        "SELECT id FROM proposals WHERE status = 'expired'",
    ),
    "remind_due": Sweep(
        _pending(remind_at=DUE, expires_at=LATER + LEASE),
        _sweep("remind_due"),
        f"UPDATE proposals SET reminded_at = '{NOW.isoformat()}' WHERE id = $1",
        "UPDATE proposals SET updated_at = updated_at WHERE id = $1",
        f"SELECT id FROM proposals WHERE reminded_at = '{LATER.isoformat()}'",
    ),
    "hand_over_due": Sweep(
        _pending(backup_at=DUE, backup_roles=("finance-leads",), expires_at=LATER + LEASE),
        _sweep("hand_over_due"),
        "UPDATE proposals SET status = 'rejected' WHERE id = $1",
        "UPDATE proposals SET updated_at = updated_at WHERE id = $1",
        f"SELECT id FROM proposals WHERE handed_over_at = '{LATER.isoformat()}'",
    ),
    "reannounce_due_escalations": Sweep(
        _escalations,
        _reannounce,
        "UPDATE escalations SET status = 'taken', owner = 'U0OWNER', taken_at = now() "
        "WHERE id = $1",
        "UPDATE escalations SET updated_at = updated_at WHERE id = $1",
        f"SELECT id FROM escalations WHERE announced_at = '{LATER.isoformat()}'",
    ),
}


def waits_in(query: str, name: str) -> bool:
    """Whether ``query`` (as pg_stat_activity shows it, cut short) is the named query."""
    return bool(load_queries("postgres")[name].text.startswith(query[:200]))


async def _taken(db: Connection, sweep: Sweep) -> set[Any]:
    return {row[0] for row in await db.fetch(sweep.taken)}


@pytest.mark.parametrize("change", ["gone", "still due"])
@pytest.mark.parametrize("name", list(SWEEPS))
async def test_a_row_changed_after_the_snapshot_is_taken_only_if_still_due_and_once(
    open_pg: OpenStore,
    connect: Callable[[], Awaitable[Connection]],
    schema: str,
    name: str,
    change: str,
) -> None:
    """A commits a change to the second row after the statement took its snapshot and before
    it locks that row: re-checked as it now is, the row is taken if still due (or left for the
    next call, which takes it), never if it no longer qualifies; the verb returns exactly the
    rows its statement changed."""
    sweep = SWEEPS[name]
    store = await open_pg()
    db, a, holder = await connect(), await connect(), await connect()
    first, second = await sweep.make(store, db)
    stall = Stall(schema, DUE, holder, db)
    await stall.install()
    stalled = await open_pg(stall.search_path)

    run = asyncio.create_task(sweep.run(stalled))
    pid = await stall.waiting(run)
    query = await db.fetchval("SELECT query FROM pg_stat_activity WHERE pid = $1", pid)
    assert waits_in(query, name), query
    async with asyncio.timeout(WAIT):  # it holds no row yet
        if change == "gone":
            await a.execute(sweep.gone, second)
        else:
            await a.execute(sweep.kept, second)
    await stall.release()
    got = await run

    assert sorted(got) == sorted(await _taken(db, sweep))
    assert first in got
    again = await sweep.run(store)
    assert sorted(await _taken(db, sweep)) == sorted([*got, *again])
    if change == "gone":
        assert second not in got and second not in again
    else:
        assert sorted([*got, *again]) == sorted([first, second])


@pytest.mark.parametrize("change", ["gone", "still due"])
@pytest.mark.parametrize("name", list(SWEEPS))
async def test_a_row_another_transaction_holds_is_skipped_and_taken_later_if_still_due(
    open_pg: OpenStore, connect: Callable[[], Awaitable[Connection]], name: str, change: str
) -> None:
    """While A holds its change to the second row uncommitted, the verb takes the first and
    does not wait for the second; once A commits, the next call takes the second if it is
    still due, never if it no longer qualifies."""
    sweep = SWEEPS[name]
    store = await open_pg()
    db, a = await connect(), await connect()
    first, second = await sweep.make(store, db)

    holding = a.transaction()
    await holding.start()
    if change == "gone":
        await a.execute(sweep.gone, second)
    else:
        await a.execute(sweep.kept, second)
    async with asyncio.timeout(WAIT):  # skipped, not awaited
        got = await sweep.run(store)
    await holding.commit()

    assert got == [first]
    assert sorted(got) == sorted(await _taken(db, sweep))
    again = await sweep.run(store)
    assert again == ([] if change == "gone" else [second])
    assert sorted(await _taken(db, sweep)) == sorted([*got, *again])


# --- a digest's replies: each behind its item's update ---------------------------------------


#: What A does to the second item's message update while the digest's replies are claimed.
UPDATE_CHANGES = {
    "delivered": f"UPDATE outbox SET delivered_at = '{LATER.isoformat()}' WHERE id = $1",
    "leased elsewhere": f"UPDATE outbox SET leased_until = '{ELSEWHERE.isoformat()}',"
    " attempts = attempts + 1 WHERE id = $1",
}


@pytest.mark.parametrize("held", [False, True], ids=["committed", "held"])
@pytest.mark.parametrize("change", list(UPDATE_CHANGES))
async def test_a_digest_reply_is_never_leased_while_its_update_is_not_delivered(
    open_pg: OpenStore,
    connect: Callable[[], Awaitable[Connection]],
    schema: str,
    change: str,
    held: bool,
) -> None:
    """The first item's update is delivered; A changes the second's (delivered, or leased by
    another worker) after the claim of the digest's replies took its snapshot, committed or
    held: each claim returns exactly what it leased, the first reply at once, the second only
    once its update is delivered, and then once (now or by the next claim)."""
    store = await open_pg()
    db, a, holder = await connect(), await connect(), await connect()
    items = await _digest_items(store, db)
    rows = await db.fetch(
        "SELECT id, proposal_id, effect FROM outbox WHERE proposal_id = ANY($1)"
        " AND effect IN ('slack.update', 'slack.reply')",
        items,
    )
    entry = {(row["proposal_id"], row["effect"]): row["id"] for row in rows}
    update, reply = (
        [entry[i, "slack.update"] for i in items],
        [entry[i, "slack.reply"] for i in items],
    )
    await store.digests().complete_deliveries([update[0]], now=DUE)
    claim_replies = _claim_digest(Effect.SLACK_REPLY)

    if held:
        holding = a.transaction()
        await holding.start()
        await a.execute(UPDATE_CHANGES[change], update[1])
        async with asyncio.timeout(WAIT):  # nothing of A's is waited for
            got = await claim_replies(store)
        await holding.commit()
    else:
        stall = Stall(schema, DUE, holder, db)
        await stall.install()
        stalled = await open_pg(stall.search_path)
        run = asyncio.create_task(claim_replies(stalled))
        pid = await stall.waiting(run)
        query = await db.fetchval("SELECT query FROM pg_stat_activity WHERE pid = $1", pid)
        assert waits_in(query, "claim_digest_deliveries"), query
        async with asyncio.timeout(WAIT):  # it holds no entry yet
            await a.execute(UPDATE_CHANGES[change], update[1])
        await stall.release()
        got = await run

    assert got == await _mine(db)
    assert reply[0] in got
    again = await claim_replies(store)
    assert sorted(got + again) == await _mine(db)
    if change == "delivered":
        assert sorted(got + again) == reply
    else:
        assert got + again == [reply[0]]


# --- oldest first, up to a limit: similar posts and recorded clicks ------------------------------


@dataclass(frozen=True)
class Queue:
    """A verb whose statement (QUEUES names it) takes rows due at DUE oldest first, up to a
    limit."""

    make: Callable[[PostgresStore, Connection], Awaitable[list[Any]]]  #: three rows, oldest first
    run: Callable[[PostgresStore, int], Awaitable[list[Any]]]  #: the verb at LATER: keys taken
    changes: dict[str, str]  #: SQL: what A does to row $1 ("still due" leaves it due)
    attempts: str  #: SQL: each row's key and attempts
    taken: str  #: SQL: the keys of the rows the statement changed


async def _similar_three(store: PostgresStore, db: Connection) -> list[Any]:
    """Three similar proposals' cards to post, due at DUE: their outbox entries, oldest first."""
    return await _post_ids(db, await _similar(store, 3))


async def _clicks(store: PostgresStore, db: Connection) -> list[Any]:
    """Three recorded clicks, oldest first, each leased once by an applier that stopped: its
    lease ran out at DUE."""
    clicks = store.clicks()
    for _ in range(3):
        proposal = (await store.create_proposal(new_proposal(NOW)))[0]
        await clicks.record_click(
            proposal.id, actor="U0APPROVER", verb="approve", channel=None, now=NOW
        )
    await db.execute("UPDATE recorded_clicks SET leased_until = $1, attempts = 1", DUE)
    return [row["id"] for row in await db.fetch("SELECT id FROM recorded_clicks ORDER BY id")]


async def _claim_clicks(store: PostgresStore, limit: int) -> list[Any]:
    return [c.id for c in await store.clicks().claim_clicks(now=LATER, limit=limit, lease=LEASE)]


QUEUES = {
    "claim_similar_posts": Queue(
        _similar_three,
        _claim_similar,
        {
            "leased elsewhere": f"UPDATE outbox SET leased_until = '{ELSEWHERE.isoformat()}',"
            " attempts = attempts + 1 WHERE id = $1",
            "delivered": f"UPDATE outbox SET delivered_at = '{LATER.isoformat()}',"
            " attempts = attempts + 1 WHERE id = $1",
            "still due": "UPDATE outbox SET last_error = 'seen' WHERE id = $1",
        },
        "SELECT id, attempts FROM outbox WHERE effect = 'slack.post'",
        f"SELECT id FROM outbox WHERE leased_until = '{TAKEN.isoformat()}'",
    ),
    "claim_clicks": Queue(
        _clicks,
        _claim_clicks,
        {
            "leased elsewhere": "UPDATE recorded_clicks"
            f" SET leased_until = '{ELSEWHERE.isoformat()}', attempts = attempts + 1 WHERE id = $1",
            "settled": "DELETE FROM recorded_clicks WHERE id = $1",
            "still due": "UPDATE recorded_clicks SET attempts = attempts WHERE id = $1",
        },
        "SELECT id, attempts FROM recorded_clicks",
        f"SELECT id FROM recorded_clicks WHERE leased_until = '{TAKEN.isoformat()}'",
    ),
}

QUEUE_CASES = [(name, change) for name, queue in QUEUES.items() for change in queue.changes]


async def _attempts(db: Connection, queue: Queue) -> dict[Any, int]:
    return {row["id"]: row["attempts"] for row in await db.fetch(queue.attempts)}


async def _taken_by(db: Connection, queue: Queue) -> list[Any]:
    return sorted(row[0] for row in await db.fetch(queue.taken))


async def _leased_once(db: Connection, queue: Queue, before: dict[Any, int]) -> None:
    """Each row still there was leased once since ``before``: by the statement under test or
    by A, never both (A's changes that lease count an attempt; the others count none)."""
    after = await _attempts(db, queue)
    assert after == {key: before[key] + 1 for key in after}


@pytest.mark.parametrize(("name", "change"), QUEUE_CASES)
async def test_a_row_changed_after_the_snapshot_never_lets_a_younger_one_go_first(
    open_pg: OpenStore,
    connect: Callable[[], Awaitable[Connection]],
    schema: str,
    name: str,
    change: str,
) -> None:
    """A commits a change to the second of three rows after the statement (limit 2) took its
    snapshot: what it takes is the oldest of the rows still due, and exactly what it changed;
    the row A left due is taken once, now or by the next call; one A took is never taken; no
    row is leased twice, none is lost."""
    queue = QUEUES[name]
    store = await open_pg()
    db, a, holder = await connect(), await connect(), await connect()
    rows = await queue.make(store, db)
    before = await _attempts(db, queue)
    stall = Stall(schema, DUE, holder, db)
    await stall.install()
    stalled = await open_pg(stall.search_path)

    run = asyncio.create_task(queue.run(stalled, 2))
    pid = await stall.waiting(run)
    query = await db.fetchval("SELECT query FROM pg_stat_activity WHERE pid = $1", pid)
    assert waits_in(query, name), query
    async with asyncio.timeout(WAIT):  # it holds no row yet
        await a.execute(queue.changes[change], rows[1])
    await stall.release()
    got = await run

    due = rows if change == "still due" else [rows[0], rows[2]]
    assert got == await _taken_by(db, queue)
    assert rows[0] in got
    assert got == due[: len(got)]  # oldest first
    again = await queue.run(store, 10)
    assert got + again == due
    assert await _taken_by(db, queue) == due
    await _leased_once(db, queue, before)


@pytest.mark.parametrize(("name", "change"), QUEUE_CASES)
async def test_a_row_held_by_another_transaction_is_skipped_oldest_first_and_never_lost(
    open_pg: OpenStore, connect: Callable[[], Awaitable[Connection]], name: str, change: str
) -> None:
    """While A holds its change to the second of three rows uncommitted, the statement (limit
    2) takes the first and the third without waiting; once A commits, the next call takes the
    second if A left it due, never if A took it; no row is leased twice, none is lost."""
    queue = QUEUES[name]
    store = await open_pg()
    db, a = await connect(), await connect()
    rows = await queue.make(store, db)
    before = await _attempts(db, queue)

    holding = a.transaction()
    await holding.start()
    await a.execute(queue.changes[change], rows[1])
    async with asyncio.timeout(WAIT):  # skipped, not awaited
        got = await queue.run(store, 2)
    await holding.commit()

    assert got == [rows[0], rows[2]]
    assert got == await _taken_by(db, queue)
    again = await queue.run(store, 10)
    assert again == ([rows[1]] if change == "still due" else [])
    assert await _taken_by(db, queue) == sorted(got + again)
    await _leased_once(db, queue, before)


# --- a decision's run of three: its followers --------------------------------------------------


async def executed(store: PostgresStore, db: Connection) -> list[int]:
    """A proposal approved and executed, its post delivered: its Slack lane's message update
    (executing; under way when the outcome came, so not made moot, then released), update and
    reply (succeeded), due at DUE, a second and two seconds after (its callbacks are gone).
    Their ids, in lane order."""
    new = new_proposal(NOW)
    await store.create_proposal(new)
    await store.claim_for_execution(
        new.id,
        actor="U0APPROVER",
        now=NOW,
        binding_hash=new.binding_hash,
        lease_until=NOW + LEASE,
    )
    await db.execute(
        "UPDATE outbox SET leased_until = $1 WHERE proposal_id = $2 AND effect = 'slack.update'",
        NOW + LEASE,
        new.id,
    )
    await store.record_outcome(new.id, Succeeded(result={}), now=NOW)
    await db.execute("DELETE FROM outbox WHERE proposal_id = $1 AND lane <> 'slack'", new.id)
    await db.execute(
        "UPDATE outbox SET delivered_at = $1 WHERE proposal_id = $2 AND effect = 'slack.post'",
        NOW,
        new.id,
    )
    rows = await db.fetch(
        "SELECT id, effect FROM outbox WHERE proposal_id = $1 AND delivered_at IS NULL ORDER BY id",
        new.id,
    )
    assert [row["effect"] for row in rows] == ["slack.update", "slack.update", "slack.reply"]
    run = [row["id"] for row in rows]
    for n, entry in enumerate(run):
        await db.execute(
            "UPDATE outbox SET next_attempt_at = $1, leased_until = NULL WHERE id = $2",
            DUE + timedelta(seconds=n),
            entry,
        )
    return run


#: What A does to an entry of the run: leases it elsewhere, or changes it and leaves it due.
FOLLOWER_CHANGES = {
    "leased elsewhere": f"UPDATE outbox SET leased_until = '{ELSEWHERE.isoformat()}',"
    " attempts = attempts + 1 WHERE id = $1",
    "still due": "UPDATE outbox SET last_error = 'seen' WHERE id = $1",
}


async def _mine(db: Connection) -> list[int]:
    """Ids of the outbox entries the claims under test leased (until TAKEN), in order."""
    rows = await db.fetch("SELECT id FROM outbox WHERE leased_until = $1 ORDER BY id", TAKEN)
    return [row["id"] for row in rows]


async def _claim_after(store: PostgresStore, db: Connection, got: list[int]) -> list[int]:
    """What the next claim leases once the entries ``got`` are delivered."""
    await db.execute(
        "UPDATE outbox SET delivered_at = $1, leased_until = NULL WHERE id = ANY($2)", LATER, got
    )
    return [d.id for d in await store.claim_deliveries(now=LATER, limit=10, lease=LEASE)]


@pytest.mark.parametrize("change", list(FOLLOWER_CHANGES))
@pytest.mark.parametrize("changed", [1, 2], ids=["middle", "last"])
async def test_a_decision_run_whose_follower_changed_after_the_snapshot_is_leased_up_to_it(
    open_pg: OpenStore,
    connect: Callable[[], Awaitable[Connection]],
    schema: str,
    changed: int,
    change: str,
) -> None:
    """A commits a change to the second or third entry of a run of three (update, update,
    reply) after the claim took its snapshot and locked the head: the claim leases a prefix of
    the run, never an entry after one it does not lease. An entry still due is leased once, now
    or by the claim after the prefix is delivered, with the rest of the run behind it; one
    leased elsewhere stops the run there (what follows it is never leased)."""
    store = await open_pg()
    db, a, holder = await connect(), await connect(), await connect()
    run = await executed(store, db)
    stall = Stall(schema, DUE, holder, db)
    await stall.install()
    stalled = await open_pg(stall.search_path)

    claim = asyncio.create_task(stalled.claim_deliveries(now=LATER, limit=10, lease=LEASE))
    pid = await stall.waiting(claim)
    query = await db.fetchval("SELECT query FROM pg_stat_activity WHERE pid = $1", pid)
    assert waits_in(query, "claim_decision_deliveries"), query
    async with asyncio.timeout(WAIT):  # it holds no entry of the run yet
        await a.execute(FOLLOWER_CHANGES[change], run[changed])
    await stall.release()
    got = [d.id for d in await claim]

    assert got == await _mine(db)
    assert got == run[: len(got)]  # a prefix: no gap
    assert run[0] in got
    again = await _claim_after(store, db, got)
    assert again == await _mine(db)
    if change == "still due":
        assert got + again == run
    else:
        assert got + again == run[:changed]


@pytest.mark.parametrize("change", list(FOLLOWER_CHANGES))
@pytest.mark.parametrize("changed", [1, 2], ids=["middle", "last"])
async def test_a_decision_run_whose_follower_is_held_is_leased_up_to_it(
    open_pg: OpenStore, connect: Callable[[], Awaitable[Connection]], changed: int, change: str
) -> None:
    """While A holds its change to the second or third entry of a run of three uncommitted, the
    claim leases the run up to that entry without waiting for it, and nothing after it. Once A
    commits, the entry still due is leased with the rest of the run after the prefix is
    delivered; leased elsewhere, it stops the run there."""
    store = await open_pg()
    db, a = await connect(), await connect()
    run = await executed(store, db)

    holding = a.transaction()
    await holding.start()
    await a.execute(FOLLOWER_CHANGES[change], run[changed])
    async with asyncio.timeout(WAIT):  # skipped, not awaited
        got = [d.id for d in await store.claim_deliveries(now=LATER, limit=10, lease=LEASE)]
    await holding.commit()

    assert got == run[:changed]
    assert got == await _mine(db)
    again = await _claim_after(store, db, got)
    assert again == await _mine(db)
    assert again == (run[changed:] if change == "still due" else [])


# --- a batch's posts: waited for, not skipped -----------------------------------------------------


@pytest.mark.parametrize("change", ["delivered", "leased elsewhere"])
async def test_a_batch_post_changed_while_the_batch_claim_waits_is_never_leased_twice(
    open_pg: OpenStore, connect: Callable[[], Awaitable[Connection]], change: str
) -> None:
    """The worker holding a closed batch claims its posts FOR UPDATE, waiting for a post A
    holds. A commits: delivered, the post is not leased; leased by another worker, it is
    leased once, to the batch's worker or (as now: its new version is not in the claim's
    snapshot) left to that lease and claimed again once it runs out. The claim returns exactly
    the posts it leased."""
    store = await open_pg()
    db, a = await connect(), await connect()
    items = [(await store.create_proposal(waiting(NOW)))[0] for _ in range(3)]
    batch_id = str(items[0].batch_id)
    closed = NOW + WINDOW
    assert await store.digests().lease_batch(batch_id, now=closed, lease=LEASE)
    posts = [
        row["id"]
        for row in await db.fetch(
            "SELECT id FROM outbox WHERE effect = 'slack.post' AND proposal_id = ANY($1)"
            " ORDER BY id",
            [p.id for p in items],
        )
    ]
    held = posts[1]
    elsewhere = closed + 2 * LEASE

    holding = a.transaction()
    await holding.start()
    if change == "delivered":
        await a.execute("UPDATE outbox SET delivered_at = $1 WHERE id = $2", closed, held)
    else:
        await a.execute(
            "UPDATE outbox SET leased_until = $1, attempts = attempts + 1 WHERE id = $2",
            elsewhere,
            held,
        )
    claim = asyncio.create_task(
        store.digests().claim_batch_posts(batch_id, held=[], now=closed, lease=LEASE)
    )
    await until(
        db,
        "SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
        a.get_server_pid(),
        what="the batch's claim waiting for A",
        task=claim,
    )
    await holding.commit()
    got = {d.id for d in await claim}

    mine = {
        row["id"]
        for row in await db.fetch("SELECT id FROM outbox WHERE leased_until = $1", closed + LEASE)
    }
    assert got == mine
    assert got - {held} == {posts[0], posts[2]}
    row = await db.fetchrow("SELECT * FROM outbox WHERE id = $1", held)
    if change == "delivered":
        assert held not in got
        assert row["leased_until"] is None
    elif held in got:  # taken over: the batch's worker posts it
        assert (row["leased_until"], row["attempts"]) == (closed + LEASE, 2)
    else:  # left to the other worker's lease, taken again once it runs out
        assert (row["leased_until"], row["attempts"]) == (elsewhere, 1)
        later = await store.claim_deliveries(now=elsewhere, limit=10, lease=LEASE)
        assert held in {d.id for d in later}
