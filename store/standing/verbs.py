"""Standing rules and reviews, stored: the StandingStore, written once over a backend's
connector (store/connector.py), in the backend's transactions and on its audit chain.

A grant is written in the transaction of the approval that grants it; a revocation is a
compare-and-set that re-reads the rule to say why nothing changed; a verdict is one insert per
proposal, and the first one stands. What differs between the backends is in the named SQL
(store/standing/sql/<dialect>/standing.sql: how a call's arguments are matched, how the sampled
proposals are counted) and in how a ceiling is passed: exactly, as a Decimal, to PostgreSQL's
numeric.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Final, Literal

from pydantic import JsonValue

from contracts.standing import CallToCover, Grant
from store.backend import FamilyStore
from store.connector import Array, Row, Tx
from store.proposals.outbox import enqueue_effects
from store.proposals.records import ProposalNotFound, Transitioned, TransitionResult
from store.proposals.rows import existing_proposal
from store.revocation import Revoked, not_revocable
from store.rows import check_limit, dump_json, model_from_row, read_time, required
from store.shield import finish_even_if_cancelled
from store.standing.records import (
    AlreadyReviewed,
    Reviewed,
    ReviewResult,
    ReviewStats,
    RevokeResult,
    RuleHistory,
    StandingRule,
    StandingRuleNotFound,
    Verdict,
    approval_detail,
    grant_detail,
    grant_refusal,
)

__all__ = [
    "HISTORY_DAYS",
    "HISTORY_MOST",
    "StandingStore",
    "review_from_row",
    "standing_rule_from_row",
]

#: How far back :meth:`StandingStore.rule_history` looks, in days.
HISTORY_DAYS: Final = 30
#: The most proposals :meth:`StandingStore.rule_history` reads: the latest ones.
HISTORY_MOST: Final = 5_000

#: SQLite's integers: 64 bits, signed.
_SQLITE_INTEGER_MIN: Final = -(2**63)
_SQLITE_INTEGER_MAX: Final = 2**63 - 1
#: Which way a whole number past SQLite's integers is rounded to a float (:func:`_exact`).
_RoundTo = Literal["up", "down"]


def _exact(tx: Tx, number: int | float, *, past_64_bits: _RoundTo) -> int | float | Decimal:
    """A ceiling, or the value of a call it bounds, as the database compares it exactly: SQLite
    keeps the integer or real itself; PostgreSQL's numeric is given a Decimal (a float by its
    shortest text, not its binary expansion: 0.1 stays 0.1).

    SQLite's integers hold 64 bits, and an agent may write a whole number past them (a count in
    a webhook's request): it goes as the nearest float on the side ``past_64_bits`` names, the
    side that refuses. A call's value is rounded up (no ceiling below it is found), a ceiling down
    (it covers no more than was approved); :func:`contracts.standing.covers` compares exactly
    again."""
    if tx.dialect != "sqlite":
        return Decimal(number) if isinstance(number, int) else Decimal(repr(number))
    if isinstance(number, float) or _SQLITE_INTEGER_MIN <= number <= _SQLITE_INTEGER_MAX:
        return number
    try:
        nearest = float(number)
    except OverflowError:  # past a float's range too
        nearest = math.inf if number > 0 else -math.inf
    if past_64_bits == "up" and nearest < number:
        return math.nextafter(nearest, math.inf)
    if past_64_bits == "down" and nearest > number:
        return math.nextafter(nearest, -math.inf)
    return nearest


def _number(value: int | float | Decimal) -> int | float:
    """A stored ceiling as the argument it bounds: PostgreSQL's numeric comes back a Decimal
    (whole numbers become integers), SQLite's integer or real as it is."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def standing_rule_from_row(row: Row) -> StandingRule:
    """The one place a stored row (with its ``uses``) becomes a StandingRule."""
    return model_from_row(
        StandingRule,
        row,
        ceiling=_number(row["ceiling"]),
        # a grant from before arguments were bound (NULL) binds an impossible call: none
        arguments=json.loads(row["arguments"] or "{}"),
    )


def review_from_row(row: Row) -> Reviewed:
    """The one place a stored row becomes a verdict."""
    return Reviewed(
        proposal_id=row["proposal_id"],
        verdict=row["verdict"],
        reviewer=row["reviewer"],
        at=read_time(row["at"]),
    )


class StandingStore(FamilyStore):
    """Standing rules and reviews; get it from ``Store.standing()``."""

    @finish_even_if_cancelled
    async def claim_and_grant(
        self,
        proposal_id: str,
        *,
        actor: str,
        now: datetime,
        binding_hash: str,
        lease_until: datetime,
        grant: Grant,
        standing_rule_id: str,
    ) -> TransitionResult:
        """One transaction: the approval (pending -> executing, as claim_for_execution, for a
        proposal needing one approval) and the standing rule ``grant`` describes, audited as
        "approved" and "standing_rule_granted". Nothing is granted unless the claim succeeds."""
        async with self._backend.tx(write=True) as tx:
            row = await tx.one(
                "claim_for_grant",
                id=proposal_id,
                actor=actor,
                now=now,
                lease_until=lease_until,
                binding_hash=binding_hash,
            )
            if row is None:
                current = await existing_proposal(tx, proposal_id)
                return grant_refusal(current, now, binding_hash)
            await tx.execute(
                "insert_granter_approval",
                proposal_id=proposal_id,
                approver=actor,
                binding_hash=binding_hash,
                approved_at=now,
            )
            rule: dict[str, Any] = {
                **grant.model_dump(exclude={"ceiling", "arguments", "varying"}),
                "id": standing_rule_id,
                "ceiling": _exact(tx, grant.ceiling, past_64_bits="down"),
                "arguments": dump_json(grant.arguments),
                "varying": Array(grant.varying),
            }
            await tx.execute("insert_standing_rule", **rule)
            approved = approval_detail(actor, binding_hash)
            await tx.append_audit(now, proposal_id, actor, "approved", approved)
            detail = grant_detail(standing_rule_id, grant)
            await tx.append_audit(now, proposal_id, actor, "standing_rule_granted", detail)
            return Transitioned(await enqueue_effects(tx, row, now))

    @finish_even_if_cancelled
    async def get_standing_rule(self, standing_rule_id: str) -> StandingRule:
        """Raises StandingRuleNotFound."""
        return await self._reading(self._existing, standing_rule_id)

    @finish_even_if_cancelled
    async def find_covering(self, call: CallToCover, *, value: int | float) -> list[StandingRule]:
        """Active standing rules for the call's operation, agent and policy rule whose ceiling is
        at least ``value``, which bind exactly the call's arguments but those they let vary,
        whose granter is not its requester and which have uses left, latest expiry first.
        (:func:`contracts.standing.covers` checks it all again, and so does the database, with
        the uses, when the covered proposal is created.)"""
        arguments = dump_json(dict(call.arguments))
        async with self._backend.tx(write=False) as tx:
            rows = await tx.all(
                "select_covering_standing_rules",
                operation=call.operation,
                agent=call.agent,
                rule_id=call.rule_id,
                value=_exact(tx, value, past_64_bits="up"),
                arguments=arguments,
                requested_by=call.requested_by,
                now=call.now,
            )
            return [standing_rule_from_row(row) for row in rows]

    @finish_even_if_cancelled
    async def active_standing_rules(self, *, now: datetime, limit: int = 50) -> list[StandingRule]:
        """Unrevoked, unexpired standing rules (used up or not), soonest expiry first."""
        check_limit(limit, "rules")
        async with self._backend.tx(write=False) as tx:
            rows = await tx.all("select_active_standing_rules", now=now, limit=limit)
            return [standing_rule_from_row(row) for row in rows]

    @finish_even_if_cancelled
    async def revoke_standing_rule(
        self, standing_rule_id: str, *, actor: str, now: datetime
    ) -> RevokeResult:
        """Active -> revoked, once, audited as "standing_rule_revoked" on the proposal that
        granted it. Raises StandingRuleNotFound."""
        async with self._backend.tx(write=True) as tx:
            changed = await tx.one(
                "revoke_standing_rule", id=standing_rule_id, actor=actor, now=now
            )
            current = await self._existing(tx, standing_rule_id)
            if changed is None:
                return not_revocable(current, now)
            detail: dict[str, JsonValue] = {"standing_rule_id": standing_rule_id}
            subject = current.created_from
            await tx.append_audit(now, subject, actor, "standing_rule_revoked", detail)
            return Revoked(current)

    @finish_even_if_cancelled
    async def record_review(
        self, proposal_id: str, *, reviewer: str, verdict: Verdict, now: datetime
    ) -> ReviewResult:
        """The verdict on a sampled automatic approval, once per proposal, audited as
        "reviewed". Raises ProposalNotFound, or ValueError when it was not sampled."""
        if verdict not in ("ok", "should_have_asked"):
            raise ValueError(f"verdict: got {verdict!r}; expected 'ok' or 'should_have_asked'")
        async with self._backend.tx(write=True) as tx:
            sampled = await tx.one("select_review_sample", id=proposal_id)
            if sampled is None:
                raise ProposalNotFound(f"no proposal has id {proposal_id!r}")
            if not sampled["review_sampled"]:
                raise ValueError(f"proposal {proposal_id!r} was not sampled for review")
            row = await tx.one(
                "insert_review",
                proposal_id=proposal_id,
                verdict=verdict,
                reviewer=reviewer,
                at=now,
            )
            if row is None:
                first = await tx.one("select_review", proposal_id=proposal_id)
                assert first is not None  # the row whose key refused ours
                return AlreadyReviewed(review_from_row(first))
            detail: dict[str, JsonValue] = {"verdict": verdict}
            await tx.append_audit(now, proposal_id, reviewer, "reviewed", detail)
            return review_from_row(row)

    @finish_even_if_cancelled
    async def get_review(self, proposal_id: str) -> Reviewed | None:
        async with self._backend.tx(write=False) as tx:
            row = await tx.one("select_review", proposal_id=proposal_id)
            return None if row is None else review_from_row(row)

    @finish_even_if_cancelled
    async def review_stats(self) -> list[ReviewStats]:
        """Per policy rule and standing rule: sampled, reviewed and flagged counts."""
        async with self._backend.tx(write=False) as tx:
            rows = await tx.all("select_review_stats")
        stats = [
            ReviewStats(
                rule_id=row["rule_id"],
                standing_rule_id=row["standing_rule_id"],
                sampled=row["sampled"],
                reviewed=row["reviewed"],
                flagged=row["flagged"],
            )
            for row in rows
        ]
        return sorted(stats, key=lambda s: (s.rule_id or "", s.standing_rule_id or ""))

    @finish_even_if_cancelled
    async def rule_history(
        self,
        agent: str,
        rule_id: str,
        *,
        now: datetime,
        days: int = HISTORY_DAYS,
        most: int = HISTORY_MOST,
    ) -> RuleHistory:
        """What people decided on ``agent``'s proposals that policy rule ``rule_id`` asked them
        about (decision ``ask``), created in the ``days`` days before ``now``: how many they
        approved (executing and onward, none a standing rule ran), rejected and let expire.

        Bounded: only the latest ``most`` such proposals by ``created_at`` are read (pending,
        superseded and cancelled ones among them, counted in none of the three), whatever order
        they were stored in; ``capped_at`` says so when the window held that many. They are
        walked newest first by the partial index proposals_asked_by_rule (migration 0026), so
        the read stops there however many the agent has stored. On SQLite it runs on a reader,
        whose statements move to a thread once they pass the loop's budget
        (store/sqlite_conn.py)."""
        check_limit(most, "proposals")
        if days < 1:
            raise ValueError(f"days: got {days}; expected a positive number of days")
        async with self._backend.tx(write=False) as tx:
            row = await tx.one(
                "select_rule_history",
                agent=agent,
                rule_id=rule_id,
                since=now - timedelta(days=days),
                most=most,
            )
        assert row is not None  # an aggregate has one row
        return RuleHistory(
            approved=row["approved"],
            rejected=row["rejected"],
            expired=row["expired"],
            days=days,
            capped_at=most if row["counted"] >= most else None,
        )

    @staticmethod
    async def _existing(tx: Tx, standing_rule_id: str) -> StandingRule:
        missing = StandingRuleNotFound(f"no standing rule has id {standing_rule_id!r}")
        row = await required(tx, missing, "select_standing_rule", id=standing_rule_id)
        return standing_rule_from_row(row)
