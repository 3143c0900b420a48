"""The decision verbs racing each other from two instances on one PostgreSQL schema.

The interleavings the rounds of tests/store/decision_races.py (run on both backends by
tests/store/test_decision_races.py) may not produce by luck, forced: a
transaction that holds a proposal's row (as a withdrawal, a rejection or another approval does
while it commits) while approvals wait for it, seen waiting in ``pg_blocking_pids``; and a digest's
Approve all whose read of its items is older than the decisions made on them since.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import pytest

from contracts.outcomes import OUTCOMES, NeedsReconciliation, Succeeded, TerminalFailure
from store.postgres import PostgresStore
from store.proposals import (
    AlreadyDecided,
    ApprovalCounted,
    NewProposal,
    StaleRead,
    Status,
    Transitioned,
)
from tests.store.conformance import LEASE, new_proposal
from tests.store.decision_races import (
    BEFORE,
    EXPIRES,
    NOW,
    Query,
    approve_all,
    check_decided,
)
from tests.store.digest_conformance import digest

pytestmark = pytest.mark.postgres

URL = "postgresql://postgres@127.0.0.1:5432/test"
WAIT = 30.0  # seconds: how long a test waits for what it must see (a lock wait, a verb's end)

Connection = asyncpg.Connection  # asyncpg.Connection[asyncpg.Record] for the type checker


@pytest.fixture
async def instances(schema: str) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    """Two stores on the schema: two instances, each with its own pool."""
    settings = {"search_path": schema}
    first = await PostgresStore.open(URL, server_settings=settings)
    second = await PostgresStore.open(URL, server_settings=settings)
    try:
        yield first, second
    finally:
        await first.close()
        await second.close()


@pytest.fixture
async def query(connect: Callable[[], Awaitable[Connection]]) -> Query:
    db = await connect()

    async def query_(sql: str) -> list[dict[str, Any]]:
        return [dict(row) for row in await db.fetch(sql)]

    return query_


# --- forced interleavings ------------------------------------------------------------------------


#: The sessions waiting behind the session $1, directly or behind another waiting for it.
BEHIND = """
WITH RECURSIVE behind (pid) AS (
    SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))
    UNION
    SELECT a.pid FROM pg_stat_activity AS a JOIN behind AS b ON b.pid = ANY(pg_blocking_pids(a.pid))
)
SELECT count(*) FROM behind
"""


def _approving_from_both(
    first: PostgresStore, second: PostgresStore, new: NewProposal
) -> list[asyncio.Task[Any]]:
    """Ada approving ``new`` through the first instance and Grace through the second, each in a
    task of its own (so that both can wait for a row another session holds)."""
    return [
        asyncio.create_task(
            store.claim_for_execution(
                new.id,
                actor=actor,
                now=BEFORE,
                binding_hash=new.binding_hash,
                lease_until=BEFORE + LEASE,
            )
        )
        for store, actor in ((first, "U0ADA"), (second, "U0GRACE"))
    ]


async def _waiting_behind(db: Connection, holder: int, count: int, tasks: list[Any]) -> None:
    """Return once ``count`` sessions wait for a lock the session ``holder`` holds, or for one
    another session waiting for it holds (the second waiter for a row queues behind the first);
    fail if a task ends first (it did not wait)."""
    async with asyncio.timeout(WAIT):
        while True:
            waiting = await db.fetchval(BEHIND, holder)
            if waiting >= count:
                return
            for task in tasks:
                if task.done():
                    raise AssertionError(f"it never waited: it ended with {task.result()!r}")
            await asyncio.sleep(0.01)


async def test_an_approval_waiting_for_a_withdrawal_that_commits_records_nothing(
    instances: tuple[PostgresStore, PostgresStore],
    connect: Callable[[], Awaitable[Connection]],
    query: Query,
) -> None:
    """The withdrawal has changed the proposal's row and not yet committed when two approvals
    from two instances come: they wait for the row, then find it withdrawn, and neither an
    approval nor its audit entry or message update is written."""
    first, second = instances
    new = new_proposal(NOW, quorum=2)
    await first.create_proposal(new)
    holder, watcher = await connect(), await connect()
    withdrawal = holder.transaction()
    await withdrawal.start()
    # what the cancel verb's transaction writes: its compare-and-set first (the row held from
    # then on), then, once the approvals wait, its audit entry and outbox entries
    await holder.execute(
        "UPDATE proposals SET status = 'cancelled', decided_at = $2, updated_at = $2 WHERE id = $1",
        new.id,
        BEFORE,
    )
    approvals = _approving_from_both(first, second, new)

    await _waiting_behind(watcher, holder.get_server_pid(), 2, approvals)
    await holder.execute(
        "INSERT INTO audit_log (at, proposal_id, actor, event, detail) "
        "VALUES ($1, $2, $3, 'cancelled', '{}')",
        BEFORE,
        new.id,
        new.agent,
    )
    await holder.execute(
        "INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at) "
        "VALUES ($1, 'slack.update', 'slack', 'cancelled', $2, $2), "
        "($1, 'callback', 'callback', 'cancelled', $2, $2)",
        new.id,
        BEFORE,
    )
    await withdrawal.commit()
    async with asyncio.timeout(WAIT):
        results = await asyncio.gather(*approvals)

    assert all(isinstance(r, AlreadyDecided) for r in results), results
    assert {r.proposal.status for r in results} == {Status.CANCELLED}
    assert await query("SELECT * FROM approvals") == []
    assert await check_decided(second, query, [new.id]) == {new.id: Status.CANCELLED}


async def test_approvals_queued_behind_a_held_proposal_complete_its_quorum_once(
    instances: tuple[PostgresStore, PostgresStore],
    connect: Callable[[], Awaitable[Connection]],
    query: Query,
) -> None:
    """Two approvals of a quorum-2 proposal from two instances wait behind a transaction that
    holds its row (a third approver's, say, that then changes nothing): released together, one
    counts the other's approval and claims the proposal; neither leaves it pending with its
    quorum met."""
    first, second = instances
    new = new_proposal(NOW, quorum=2)
    await first.create_proposal(new)
    holder, watcher = await connect(), await connect()
    held = holder.transaction()
    await held.start()
    await holder.execute("SELECT 1 FROM proposals WHERE id = $1 FOR UPDATE", new.id)
    approvals = _approving_from_both(first, second, new)

    await _waiting_behind(watcher, holder.get_server_pid(), 2, approvals)
    await held.rollback()
    async with asyncio.timeout(WAIT):
        results = await asyncio.gather(*approvals)

    assert sorted(type(r).__name__ for r in results) == ["ApprovalCounted", "Transitioned"]
    [claimed] = [r for r in results if isinstance(r, Transitioned)]
    [counted] = [r for r in results if isinstance(r, ApprovalCounted)]
    assert [a.approver for a in counted.proposal.approvals] != [claimed.proposal.decided_by]
    assert sorted(a.approver for a in claimed.proposal.approvals) == ["U0ADA", "U0GRACE"]
    assert await check_decided(second, query, [new.id]) == {new.id: Status.EXECUTING}


async def test_a_late_answer_waiting_for_another_shown_on_its_card_writes_nothing(
    instances: tuple[PostgresStore, PostgresStore],
    connect: Callable[[], Awaitable[Connection]],
    query: Query,
) -> None:
    """A late answer built on the reconciliation card as it was: another instance has shown
    another late answer on the card and not yet committed. The first waits for the row, then
    finds its card changed and writes nothing over it: neither the outcome nor an audit
    entry or a message update."""
    first, _ = instances
    new = new_proposal(NOW)
    await first.create_proposal(new)
    await first.claim_for_execution(
        new.id, actor="U0ADA", now=BEFORE, binding_hash=new.binding_hash, lease_until=EXPIRES
    )
    read = NeedsReconciliation(detail="timeout", correlation_id="c")
    await first.record_outcome(new.id, read, now=BEFORE)
    other = read.model_copy(update={"detail": "timeout; failure", "answered_late": "failure"})
    mine = read.model_copy(update={"detail": "timeout; success", "answered_late": "success"})
    outbox = await query("SELECT id FROM outbox")
    holder, watcher = await connect(), await connect()
    shown = holder.transaction()
    await shown.start()
    # the other instance's compare-and-set (the row held from then on)
    await holder.execute(
        "UPDATE proposals SET outcome = $2 WHERE id = $1",
        new.id,
        OUTCOMES.dump_json(other).decode(),
    )
    late = asyncio.create_task(
        first.record_late_outcome(
            new.id, Succeeded(result={}), mine, attempt=1, read=read, now=BEFORE
        )
    )

    await _waiting_behind(watcher, holder.get_server_pid(), 1, [late])
    await shown.commit()
    async with asyncio.timeout(WAIT):
        result = await late

    assert isinstance(result, StaleRead), result
    assert result.proposal.outcome == other
    assert (await first.get_proposal(new.id)).outcome == other
    assert await query("SELECT * FROM audit_log WHERE event = 'late_outcome'") == []
    assert await query("SELECT id FROM outbox") == outbox


async def test_one_earlier_attempts_late_answer_audited_from_both_instances_at_once_is_audited_once(
    instances: tuple[PostgresStore, PostgresStore],
    connect: Callable[[], Awaitable[Connection]],
    query: Query,
) -> None:
    """The target's answer to an earlier attempt reaches both instances (delivered twice), and
    each audits it at the same moment. Forced: a session holding the audit log's inserts lets
    whatever read the proposal's late answers first wait on its insert. The second waits for
    the proposal's row, then finds the first's entry and writes none."""
    first, second = instances
    new = new_proposal(NOW)
    await first.create_proposal(new)
    await first.audit_log(new.id)  # sealed: the sealer has nothing to write while the log is held
    late = TerminalFailure(detail="target refused the request with 400", correlation_id="c1")
    holder, watcher = await connect(), await connect()
    held = holder.transaction()
    await held.start()
    await holder.execute("LOCK TABLE audit_log IN EXCLUSIVE MODE")  # reads go on, inserts wait
    audits = [
        asyncio.create_task(store.audit_late_outcome(new.id, late, attempt=1, now=BEFORE))
        for store in (first, second)
    ]

    await _waiting_behind(watcher, holder.get_server_pid(), 2, audits)
    await held.commit()
    async with asyncio.timeout(WAIT):
        await asyncio.gather(*audits)

    entries = await query("SELECT detail FROM audit_log WHERE event = 'late_outcome'")
    assert len(entries) == 1, entries
    assert (await second.verify_audit()).ok


async def test_approve_all_read_before_its_items_were_decided_approves_only_those_still_pending(
    instances: tuple[PostgresStore, PostgresStore], query: Query
) -> None:
    """Approve all read its digest while every item was pending; before its approvals reach the
    store, another instance withdraws one item, expires one and another person claims one. Only
    the two items still pending are approved by the digest's clicker; the other three are
    answered as decided, and nothing is written for them."""
    first, second = instances
    items = []
    for n in range(5):
        expires_at = EXPIRES if n == 1 else EXPIRES + LEASE
        stored, _ = await first.create_proposal(new_proposal(NOW, expires_at=expires_at))
        items.append(stored)
    new = digest()
    await first.digests().attach_digest(new, [p.id for p in items], deliveries=[], now=NOW)
    shown = await first.digests().get_digest(new.id)
    assert {p.status for p in shown.items} == {Status.PENDING}
    withdrawn, overdue, taken = (p.id for p in items[:3])

    await second.cancel(withdrawn, agent=items[0].agent, now=BEFORE)
    assert [p.id for p in await second.expire_due(now=EXPIRES)] == [overdue]
    await second.claim_for_execution(
        taken,
        actor="U0GRACE",
        now=BEFORE,
        binding_hash=items[2].binding_hash,
        lease_until=BEFORE + LEASE,
    )
    ids = [p.id for p in shown.items]
    results = {
        r.proposal.id: r
        for r in await asyncio.gather(
            *(
                first.claim_for_execution(
                    p.id,
                    actor="U0ADA",
                    now=BEFORE,  # its clock is behind the sweep's: the item looks open to it
                    binding_hash=p.binding_hash,
                    lease_until=BEFORE + LEASE,
                    via={"via": "digest", "digest_id": new.id},
                )
                for p in shown.items  # as read: all pending
            )
        )
    }

    assert {i: type(results[i]).__name__ for i in (withdrawn, overdue, taken)} == dict.fromkeys(
        (withdrawn, overdue, taken), "AlreadyDecided"
    )
    assert all(isinstance(results[p.id], Transitioned) for p in items[3:])
    approvers = await query("SELECT proposal_id, approver FROM approvals")
    assert sorted((r["proposal_id"], r["approver"]) for r in approvers) == sorted(
        [(taken, "U0GRACE"), *((p.id, "U0ADA") for p in items[3:])]
    )
    assert await check_decided(second, query, ids) == {
        withdrawn: Status.CANCELLED,
        overdue: Status.EXPIRED,
        taken: Status.EXECUTING,
        items[3].id: Status.EXECUTING,
        items[4].id: Status.EXECUTING,
    }
    # the helper the rounds use asks the same of the store, now with nothing left to approve
    assert await approve_all(first, new.id, "U0ALAN") == []
