"""Decisions racing each other from two instances on one database: the rounds every backend plays,
and what must hold afterwards, read from the database itself.

Each round submits many proposals and starts, for each at once, the verbs that decide it from two
store instances (two pools on one PostgreSQL schema, two connections to one SQLite file): two
approvers and one of them twice, a rejection, an edit, the agent's withdrawal, expiry sweeps, a
digest's Approve all, a recorded click applied by two appliers. A backend's test module calls
the rounds with its two stores and a :data:`Query` that reads its tables past the store.

What :func:`check_decided` asserts of every proposal, in its tables:

- its status is the one outcome its audit entries name: exactly one of "approved", "rejected",
  "cancelled", "expired", "superseded", and it is the outcome stored (executing, rejected,
  cancelled, expired, superseded);
- no approval was recorded after that outcome (nothing follows it in its entries);
- its approvals are one per person, bound to its binding hash; executing, it has exactly its
  quorum of them, the "approved" entry names them and its actor is who claimed it; otherwise
  fewer than its quorum, each with its "approval_recorded" entry;
- its outbox holds the entries of each status it entered, once each: the post, a progress update
  per approval short of the quorum, the effects of its outcome, and none of another outcome;
- the audit chain verifies, with every entry sealed, and the pending counts the database keeps
  equal the pending proposals.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import JsonValue

from contracts.outcomes import Succeeded, TerminalFailure
from store.digests import new_digest_id
from store.proposals import (
    EFFECTS,
    OUTCOME_STATUS,
    TRANSITIONS,
    AlreadyDecided,
    ApprovalCounted,
    InvalidTransition,
    NotApprovable,
    Proposal,
    Status,
    Transitioned,
    TransitionResult,
)
from store.protocol import Store
from tests.store.conformance import LEASE, new_proposal
from tests.store.digest_conformance import digest

__all__ = [
    "NOW",
    "Query",
    "approve_all",
    "check_decided",
    "round_of_approvers",
    "round_of_clicks_applied_twice",
    "round_of_digests",
    "round_of_every_decision",
    "round_of_executions",
]

#: Reads rows past the store: a SQL statement (no parameters), its rows as dicts.
Query = Callable[[str], Awaitable[list[dict[str, Any]]]]

NOW = datetime(2031, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)
#: When the round's proposals expire; decisions are made just before, the expiry sweeps at it.
EXPIRES = NOW + timedelta(hours=1)
BEFORE = EXPIRES - timedelta(milliseconds=1)

#: What the executors and the people reconciling say happened.
SUCCEEDED = Succeeded(result={"refund_id": "re_1"})
FAILED = TerminalFailure(detail="nothing was refunded", correlation_id="corr-1")

#: The audit event of each outcome a pending proposal can be decided to.
OUTCOME_EVENT = {
    Status.EXECUTING: "approved",
    Status.REJECTED: "rejected",
    Status.CANCELLED: "cancelled",
    Status.EXPIRED: "expired",
    Status.SUPERSEDED: "superseded",
}


async def _approve(
    store: Store,
    proposal_id: str,
    actor: str,
    binding_hash: str,
    *,
    now: datetime = BEFORE,
    via: dict[str, JsonValue] | None = None,
) -> TransitionResult:
    return await store.claim_for_execution(
        proposal_id,
        actor=actor,
        now=now,
        binding_hash=binding_hash,
        lease_until=now + LEASE,
        via=via,
    )


async def _submit(store: Store, count: int, **changes: Any) -> list[tuple[str, str, str]]:
    """``count`` pending proposals: (id, agent, binding hash) of each."""
    made = []
    for n in range(count):
        fields = {"expires_at": EXPIRES, **changes}
        new = new_proposal(NOW + timedelta(microseconds=n), **fields)
        stored, _ = await store.create_proposal(new)
        made.append((stored.id, stored.agent, stored.binding_hash))
    return made


def _winners(results: Sequence[object]) -> int:
    return sum(isinstance(r, Transitioned) for r in results)


async def check_decided(
    store: Store, query: Query, ids: Sequence[str], *, pending: bool = False
) -> dict[str, Status]:
    """Assert the module's invariants of the proposals ``ids`` (decided, unless ``pending``
    allows some still pending) in the database; their statuses."""
    report = await store.verify_audit()  # seals what has committed, then checks the chain
    assert report.ok, report
    [unsealed] = await query("SELECT count(*) AS n FROM audit_log WHERE seq IS NULL")
    assert unsealed["n"] == 0
    rows = {r["id"]: r for r in await query("SELECT * FROM proposals")}
    approvals: dict[str, list[dict[str, Any]]] = {}
    for row in await query("SELECT * FROM approvals ORDER BY approved_at, approver"):
        approvals.setdefault(row["proposal_id"], []).append(row)
    entries: dict[str, list[dict[str, Any]]] = {}
    for row in await query("SELECT * FROM audit_log WHERE proposal_id IS NOT NULL ORDER BY seq"):
        entries.setdefault(row["proposal_id"], []).append(row)
    outbox: dict[str, Counter[tuple[str, str]]] = {}
    for row in await query("SELECT proposal_id, effect, status FROM outbox"):
        outbox.setdefault(row["proposal_id"], Counter())[(row["effect"], row["status"])] += 1

    statuses = {}
    for proposal_id in ids:
        row = rows[proposal_id]
        status = Status(row["status"])
        statuses[proposal_id] = status
        mine = entries[proposal_id]
        events = [e["event"] for e in mine]
        assert events[0] == "submitted", (proposal_id, events)
        outcomes = [e for e in mine if e["event"] in OUTCOME_EVENT.values()]
        approvers = [a["approver"] for a in approvals.get(proposal_id, [])]
        recorded = [e["actor"] for e in mine if e["event"] == "approval_recorded"]
        assert len(set(approvers)) == len(approvers), (proposal_id, approvers)
        assert {a["binding_hash"] for a in approvals.get(proposal_id, [])} <= {row["binding_hash"]}
        assert sorted(recorded) == sorted(set(recorded)), (proposal_id, events)
        if status is Status.PENDING:
            assert pending, (proposal_id, events)
            assert outcomes == []
            assert sorted(recorded) == sorted(approvers) and len(approvers) < row["quorum"]
        else:
            assert [e["event"] for e in outcomes] == [OUTCOME_EVENT[status]], (proposal_id, events)
            [outcome] = outcomes
            assert mine[-1] is outcome, (proposal_id, events)  # nothing recorded after it
            if status is Status.EXECUTING:
                detail = json.loads(outcome["detail"])
                assert outcome["actor"] == row["decided_by"]
                assert sorted(detail["approvers"]) == sorted(approvers), (proposal_id, detail)
                assert len(approvers) == row["quorum"]
                assert sorted([*recorded, outcome["actor"]]) == sorted(approvers)
            else:
                assert sorted(recorded) == sorted(approvers), (proposal_id, events, approvers)
                assert len(approvers) < row["quorum"]
        expected: Counter[tuple[str, str]] = Counter({("slack.post", "pending"): 1})
        expected[("slack.update", "pending")] += len(recorded)  # each approval's progress
        if status is not Status.PENDING:
            for effect in EFFECTS[status]:
                expected[(effect.value, status.value)] += 1
        assert outbox[proposal_id] == expected, (proposal_id, events, outbox[proposal_id])

    counted = await query(
        "SELECT agent, sum(pending) AS pending FROM pending_counts GROUP BY agent"
    )
    kept = {r["agent"]: int(r["pending"]) for r in counted if int(r["pending"])}
    truly = Counter(r["agent"] for r in rows.values() if r["status"] == "pending")
    assert kept == dict(truly)
    return statuses


# --- the rounds ----------------------------------------------------------------------------------


async def round_of_approvers(first: Store, second: Store, query: Query, *, count: int) -> None:
    """Two approvers of a quorum-2 proposal approve at the same moment from the two instances,
    and each approves a second time from the other one: exactly one claim, each person's
    approval counted once."""
    made = await _submit(first, count, quorum=2)
    calls = []
    for n, (proposal_id, _, hashed) in enumerate(made):
        mine = [
            _approve(first, proposal_id, "U0ADA", hashed),
            _approve(second, proposal_id, "U0ADA", hashed),
            _approve(second, proposal_id, "U0GRACE", hashed),
            _approve(first, proposal_id, "U0GRACE", hashed),
        ]
        calls += mine[n % 4 :] + mine[: n % 4]  # one person's two clicks side by side

    results = await asyncio.gather(*calls)

    for n in range(len(made)):
        mine = results[4 * n : 4 * n + 4]
        assert _winners(mine) == 1, mine
        assert sum(isinstance(r, ApprovalCounted) for r in mine) == 1, mine
        for late in mine:  # a second click of the same person, or after the claim
            assert isinstance(late, Transitioned | ApprovalCounted | AlreadyDecided) or (
                isinstance(late, NotApprovable) and "already approved" in late.reason
            ), late
    statuses = await check_decided(second, query, [m[0] for m in made])
    assert set(statuses.values()) == {Status.EXECUTING}


async def round_of_every_decision(first: Store, second: Store, query: Query, *, count: int) -> None:
    """Approvals, a rejection, an approver's edit, the agent's withdrawal and expiry sweeps of
    each proposal at once, from both instances (half the proposals need two approvals, half
    one): each ends in exactly one outcome, reported to exactly one caller, with nothing
    approved after it."""
    made = [
        *await _submit(first, count - count // 2, quorum=1),
        *await _submit(first, count // 2, quorum=2),
    ]
    calls: list[Awaitable[Any]] = []
    edits = {}  # the edit's id: the proposal it would replace
    for n, (proposal_id, agent, hashed) in enumerate(made):
        a, b = (first, second) if n % 2 else (second, first)
        edit = new_proposal(
            BEFORE,
            submission_key=f"edit:{proposal_id}",
            supersedes=proposal_id,
            edited_by="U0EDITOR",
            arguments={"payment_id": "pay_42", "amount_cents": 4000},
        )
        edits[edit.id] = proposal_id
        mine: list[Awaitable[Any]] = [
            _approve(a, proposal_id, "U0ADA", hashed),
            b.reject(proposal_id, actor="U0ALAN", reason="no", now=BEFORE),
            _approve(b, proposal_id, "U0GRACE", hashed),
            a.cancel(proposal_id, agent=agent, now=BEFORE),
            b.supersede(proposal_id, edit, actor="U0EDITOR", now=BEFORE),
        ]
        calls += mine[n % 5 :] + mine[: n % 5]  # each verb first in turn
        if n % 8 == 0:  # expiry sweeps now and then, each taking a few
            calls.append((a if n % 2 else b).expire_due(now=EXPIRES, limit=2))

    results = await asyncio.gather(*calls)
    swept = [await first.expire_due(now=EXPIRES), await second.expire_due(now=EXPIRES)]

    expired = Counter(
        p.id for result in [*results, *swept] if isinstance(result, list) for p in result
    )
    assert all(times == 1 for times in expired.values()), expired
    won: dict[str, list[TransitionResult]] = {}
    for result in results:
        if isinstance(result, Transitioned):  # an edit's answer is the edit, pending
            decided = edits.get(result.proposal.id, result.proposal.id)
            won.setdefault(decided, []).append(result)
    statuses = await check_decided(second, query, [m[0] for m in made])
    stored = {p.id: p for p in await first.digests().get_proposals(list(edits))}
    for proposal_id, status in statuses.items():
        mine_won = won.get(proposal_id, [])
        assert len(mine_won) == (0 if status is Status.EXPIRED else 1), (proposal_id, mine_won)
        assert (proposal_id in expired) == (status is Status.EXPIRED)
        for result in mine_won:
            if status is Status.SUPERSEDED:
                assert result.proposal.supersedes == proposal_id
                assert result.proposal.status is Status.PENDING
            else:
                assert result.proposal.status is status
    # an edit is stored exactly when it replaced its proposal
    assert {stored[e].supersedes for e in stored} == {
        i for i, status in statuses.items() if status is Status.SUPERSEDED
    }


async def approve_all(
    store: Store, digest_id: str, user: str, *, now: datetime = BEFORE
) -> list[TransitionResult]:
    """What a digest's Approve all asks of the store (bot/digests/decisions.py): the digest's
    items read once, then each still pending in that read approved on its own, bound to the hash
    that read showed, side by side."""
    shown = await store.digests().get_digest(digest_id)
    via: dict[str, JsonValue] = {"via": "digest", "digest_id": digest_id}
    return await asyncio.gather(
        *(
            _approve(store, p.id, user, p.binding_hash, now=now, via=via)
            for p in shown.items
            if p.status is Status.PENDING
        )
    )


async def round_of_digests(
    first: Store, second: Store, query: Query, *, digests: int, size: int = 5
) -> None:
    """Each digest's Approve all (one instance) races, on its items, another person's approval,
    the agent's withdrawal and an expiry sweep (the other instance): nothing the digest's
    clicker approved had left pending, no item is claimed twice."""
    made, shown = [], []
    for d in range(digests):
        # the last item of each digest expires as the sweep runs, the rest an hour later
        items = await _submit(first, size - 1, quorum=1 + d % 2, expires_at=EXPIRES + LEASE)
        items += await _submit(first, 1, quorum=1 + d % 2)
        new = digest(id=new_digest_id(), ts=f"1700000000.{d:06d}")
        await first.digests().attach_digest(new, [i[0] for i in items], deliveries=[], now=NOW)
        made += items
        shown.append((new.id, items))

    calls: list[Awaitable[Any]] = []
    clicked: list[int] = []  # where in ``calls`` each Approve all is
    for d, (digest_id, items) in enumerate(shown):
        clicker, other = (first, second) if d % 2 else (second, first)
        (one, _, one_hash), (two, agent, _) = items[d % 3], items[3]
        mine: list[Awaitable[Any]] = [
            approve_all(clicker, digest_id, "U0ADA"),
            _approve(other, one, "U0GRACE", one_hash),
            other.cancel(two, agent=agent, now=BEFORE),
            other.expire_due(now=EXPIRES, limit=2),
        ]
        turn = d % 4
        clicked.append(len(calls) + (len(mine) - turn) % len(mine))
        calls += mine[turn:] + mine[:turn]

    results = await asyncio.gather(*calls)
    await first.expire_due(now=EXPIRES + 2 * LEASE)  # whatever is left pending, expired

    by_ada = {r.proposal.id: r for at in clicked for r in results[at]}
    statuses = await check_decided(second, query, [m[0] for m in made])
    approved = {e.proposal_id: e for e in await first.audit_log() if e.event == "approved"}
    for proposal_id, status in statuses.items():
        result = by_ada.get(proposal_id)
        if isinstance(result, Transitioned):  # the digest's clicker claimed it
            assert status is Status.EXECUTING
            assert approved[proposal_id].actor == "U0ADA"
            assert approved[proposal_id].detail["via"] == "digest"
        elif status is Status.EXECUTING:  # claimed by the other approver
            assert approved[proposal_id].actor == "U0GRACE"
        if result is not None:  # what the clicker was answered is what the item became
            assert result.proposal.status in (status, Status.PENDING), (result, status)


async def round_of_clicks_applied_twice(
    first: Store, second: Store, query: Query, *, count: int
) -> None:
    """Two approvers' recorded clicks on quorum-2 proposals are leased by one instance's
    applier, whose lease then ends while it applies them, and leased again by the other's: both
    apply each click (the approval, then the settling) at once. Each person's approval is
    counted once, each proposal claimed once, every click settled."""
    made = await _submit(first, count, quorum=2)
    for proposal_id, _, _ in made:
        for user in ("U0ADA", "U0GRACE"):
            recorded = await first.clicks().record_click(
                proposal_id, actor=user, verb="approve", channel="C0FINANCE", now=NOW
            )
            assert recorded is not None and recorded[1]
    lease = timedelta(seconds=30)
    leased_first = await first.clicks().claim_clicks(now=NOW, limit=4 * count, lease=lease)
    leased_again = await second.clicks().claim_clicks(now=NOW + lease, limit=4 * count, lease=lease)
    assert [c.id for c in leased_again] == [c.id for c in leased_first]
    assert len(leased_first) == 2 * count
    assert {c.attempts for c in leased_again} == {2}
    hashes = {proposal_id: hashed for proposal_id, _, hashed in made}

    async def apply(store: Store, click_id: int, subject: str, actor: str) -> TransitionResult:
        result = await _approve(store, subject, actor, hashes[subject])
        await store.clicks().settle_click(click_id)
        return result

    results = await asyncio.gather(
        *(
            apply(store, c.id, c.subject, c.actor)
            for pair in zip(leased_first, leased_again, strict=True)
            for store, c in zip((first, second), pair, strict=True)
        )
    )

    assert _winners(results) == count
    assert await first.clicks().waiting_clicks() == 0
    statuses = await check_decided(second, query, list(hashes))
    assert set(statuses.values()) == {Status.EXECUTING}


# --- executions: at most one at a time, each attempt's outcome once -----------------------------

#: The status each audit event of an execution's life moves a proposal to (None: its outcome's).
ENTERS: dict[str, Status | None] = {
    "submitted": Status.PENDING,
    "approved": Status.EXECUTING,
    "execution_abandoned": Status.NEEDS_RECONCILIATION,
    "retry_approved": Status.EXECUTING,
    "outcome": None,
    "reconciled": None,
}


def _entered(event: str, detail: dict[str, Any]) -> Status | None:
    """The status an audit entry says its proposal entered, or None if it changed none."""
    if event not in ENTERS:
        return None
    status = ENTERS[event]
    if status is None:
        kind = (detail["outcome"] if event == "reconciled" else detail)["kind"]
        status = OUTCOME_STATUS[kind]
    return status


async def check_path(store: Store, query: Query, ids: Sequence[str]) -> dict[str, list[Status]]:
    """Assert that each proposal's audit entries name a path of allowed transitions
    (lifecycle.TRANSITIONS) ending in its stored status, with an attempt counted for each time
    it entered executing, and that its outbox holds the effects of each status it entered, once
    for each time; the paths."""
    report = await store.verify_audit()
    assert report.ok, report
    rows = {r["id"]: r for r in await query("SELECT id, status, attempt FROM proposals")}
    entries: dict[str, list[dict[str, Any]]] = {}
    for row in await query("SELECT * FROM audit_log WHERE proposal_id IS NOT NULL ORDER BY seq"):
        entries.setdefault(row["proposal_id"], []).append(row)
    outbox: dict[str, Counter[tuple[str, str]]] = {}
    for row in await query("SELECT proposal_id, effect, status FROM outbox"):
        outbox.setdefault(row["proposal_id"], Counter())[(row["effect"], row["status"])] += 1
    paths = {}
    for proposal_id in ids:
        path = [
            status
            for e in entries[proposal_id]
            if (status := _entered(e["event"], json.loads(e["detail"]))) is not None
        ]
        for before, after in itertools.pairwise(path):
            assert after in TRANSITIONS[before], (proposal_id, path)
        assert path[-1] is Status(rows[proposal_id]["status"]), (proposal_id, path)
        assert rows[proposal_id]["attempt"] == path.count(Status.EXECUTING), (proposal_id, path)
        expected: Counter[tuple[str, str]] = Counter()
        for status in path:
            for effect in EFFECTS[status] if status is not Status.PENDING else ():
                expected[(effect.value, status.value)] += 1
        expected[("slack.post", "pending")] += 1
        assert outbox[proposal_id] == expected, (proposal_id, path, outbox[proposal_id])
        paths[proposal_id] = path
    return paths


async def _outcome(store: Store, proposal_id: str, *, attempt: int, now: datetime) -> object:
    """The executor's outcome of ``attempt``: the proposal, or the refusal it was answered."""
    try:
        return await store.record_outcome(proposal_id, SUCCEEDED, now=now, attempt=attempt)
    except InvalidTransition as refused:
        return refused


async def round_of_executions(first: Store, second: Store, query: Query, *, count: int) -> None:
    """Claimed proposals whose lease has just ended: each executor's outcome races the lost
    executions' sweeps of both instances; then, on each execution handed to people, two
    people's Retry (one per instance) race a third's reconciliation; then each retry's outcome
    races the first attempt's late answer. Every proposal goes one allowed way, each attempt
    gets one outcome at most (a late attempt's answer never becomes a retry's), and at most
    one retry starts per hand-over."""
    made = await _submit(first, count, quorum=1)
    for proposal_id, _, hashed in made:
        assert isinstance(await _approve(first, proposal_id, "U0ADA", hashed), Transitioned)
    ended = BEFORE + LEASE  # every lease ends now
    ids = [m[0] for m in made]

    calls: list[Awaitable[Any]] = []
    for n, proposal_id in enumerate(ids):
        calls.append(_outcome(first if n % 2 else second, proposal_id, attempt=1, now=ended))
        if n % 4 == 0:
            calls.append((second if n % 2 else first).reclaim_abandoned(now=ended, limit=3))
    first_answers = await asyncio.gather(*calls)
    reclaimed = Counter(p.id for r in first_answers if isinstance(r, list) for p in r)
    assert all(times == 1 for times in reclaimed.values()), reclaimed
    handed = [i for i in ids if i in reclaimed]

    later = ended + timedelta(minutes=1)
    people: list[Awaitable[Any]] = []
    for n, proposal_id in enumerate(handed):
        mine: list[Awaitable[Any]] = [
            first.retry_execution(proposal_id, actor="U0ADA", now=later, lease_until=later + LEASE),
            second.retry_execution(
                proposal_id, actor="U0GRACE", now=later, lease_until=later + LEASE
            ),
            (second if n % 2 else first).resolve_reconciliation(
                proposal_id, actor="U0ALAN", outcome=FAILED, note="checked", now=later
            ),
        ]
        people += mine[n % 3 :] + mine[: n % 3]
    decided = await asyncio.gather(*people)
    won = [r.proposal for r in decided if isinstance(r, Transitioned)]
    assert sorted(p.id for p in won) == sorted(handed)  # one decision each
    retried = [p.id for p in won if p.status is Status.EXECUTING]

    asked = [
        (proposal_id, store, attempt)
        for n, proposal_id in enumerate(retried)
        for store, attempt in ((first, 1 + n % 2), (second, 2 - n % 2))
    ]
    answers = await asyncio.gather(
        *(_outcome(store, i, attempt=attempt, now=later) for i, store, attempt in asked)
    )

    paths = await check_path(second, query, ids)
    for proposal_id, path in paths.items():
        if proposal_id not in reclaimed:  # its outcome came first
            assert path == [Status.PENDING, Status.EXECUTING, Status.SUCCEEDED]
        elif proposal_id in retried:  # the retry's own outcome, not the first attempt's
            assert path[3:] == [Status.EXECUTING, Status.SUCCEEDED], path
        else:
            assert path[3:] == [Status.FAILED], path
    for (_, _, attempt), answer in zip(asked, answers, strict=True):
        if attempt == 1:  # the first attempt's late answer: refused, whenever it came
            assert isinstance(answer, InvalidTransition), answer
        else:
            assert isinstance(answer, Proposal) and answer.attempt == 2, answer
