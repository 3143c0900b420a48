"""The SQLite backend of the StandingStore protocol.

It shares the SqliteStore's connection, lock and audit chain: every change is one ``BEGIN
IMMEDIATE`` transaction (SqliteStore.transaction) holding the compare-and-set and its audit
entry. Get it from :meth:`SqliteStore.standing`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

import aiosqlite
from pydantic import JsonValue

from contracts.standing import Grant
from store.base import ProposalNotFound, Transitioned, TransitionResult
from store.rows import db_time, dump_json, from_db_time
from store.shield import finish_even_if_cancelled
from store.standing import (
    AlreadyReviewed,
    Reviewed,
    ReviewResult,
    ReviewStats,
    Revoked,
    RevokeResult,
    StandingRule,
    StandingRuleNotFound,
    Verdict,
    approval_detail,
    grant_detail,
    grant_refusal,
    not_revocable,
)

if TYPE_CHECKING:
    from store.sqlite import SqliteStore

__all__ = ["SqliteStanding", "standing_rule_from_row"]

#: The approval that grants a standing rule: the claim (pending, unexpired, bound to the
#: contract the approver saw), for a proposal that needs one approval only.
CLAIM_FOR_GRANT = """
UPDATE proposals
SET status = 'executing', decided_by = :actor, decided_at = :now, updated_at = :now,
    lease_until = :lease
WHERE id = :id AND status = 'pending' AND (expires_at IS NULL OR expires_at > :now)
  AND binding_hash = :binding_hash AND quorum = 1
RETURNING *
"""

#: The granter's approval, as every approval is recorded (store/sqlite_approvals.py).
INSERT_APPROVAL = """
INSERT INTO approvals (proposal_id, approver, binding_hash, approved_at) VALUES (?, ?, ?, ?)
"""

#: The grant, written in the approval's transaction.
INSERT_STANDING_RULE = """
INSERT INTO standing_rules (
    id, operation, agent, rule_id, ceiling_field, ceiling, created_by, created_from, created_at,
    expires_at, arguments, varying, max_uses
) VALUES (
    :id, :operation, :agent, :rule_id, :ceiling_field, :ceiling, :created_by, :created_from,
    :created_at, :expires_at, :arguments, :varying, :max_uses
)
"""

#: A standing rule with the number of proposals it approved.
_WITH_USES = """
SELECT s.*, (SELECT count(*) FROM proposals AS p WHERE p.standing_rule_id = s.id) AS uses
FROM standing_rules AS s
"""

#: One standing rule by id.
SELECT_STANDING_RULE = _WITH_USES + "WHERE s.id = ?"

#: The active rules that may cover a call: operation, agent, policy rule, ceiling, not the
#: granter's own request, uses left (the partial index standing_rules_active finds the
#: candidates), binding the call's arguments but the varying ones, as the insert's trigger checks.
SELECT_COVERING = (
    _WITH_USES
    + """
WHERE s.operation = :operation AND s.agent = :agent AND s.revoked_at IS NULL
  AND s.expires_at > :now AND s.rule_id = :rule_id AND s.ceiling >= :value
  AND s.created_by <> :requested_by AND s.arguments IS NOT NULL
  AND (SELECT count(*) FROM proposals AS p WHERE p.standing_rule_id = s.id) < s.max_uses
  AND NOT EXISTS (
      SELECT 1 FROM json_each(:arguments) AS a
      WHERE a.key <> s.ceiling_field
        AND a.key NOT IN (SELECT v.value FROM json_each(s.varying) AS v)
        AND NOT EXISTS (
            SELECT 1 FROM json_each(s.arguments) AS b
            WHERE b.key = a.key AND b.type = a.type AND b.value IS a.value))
  AND NOT EXISTS (
      SELECT 1 FROM json_each(s.arguments) AS b
      WHERE NOT EXISTS (SELECT 1 FROM json_each(:arguments) AS a WHERE a.key = b.key))
ORDER BY s.expires_at DESC, s.id
LIMIT 10
"""
)

#: Every active rule, soonest expiry first.
SELECT_ACTIVE = (
    _WITH_USES
    + """
WHERE s.revoked_at IS NULL AND s.expires_at > :now
ORDER BY s.expires_at, s.id
LIMIT :limit
"""
)

#: The revocation: active -> revoked, once.
REVOKE = """
UPDATE standing_rules SET revoked_by = :actor, revoked_at = :now
WHERE id = :id AND revoked_at IS NULL AND expires_at > :now
RETURNING id
"""

#: Whether a proposal exists, and was sampled for review.
SELECT_SAMPLED = "SELECT review_sampled FROM proposals WHERE id = ?"

#: One verdict per proposal: no row back means someone gave one first.
INSERT_REVIEW = """
INSERT INTO reviews (proposal_id, verdict, reviewer, at) VALUES (?, ?, ?, ?)
ON CONFLICT (proposal_id) DO NOTHING
RETURNING *
"""

SELECT_REVIEW = "SELECT * FROM reviews WHERE proposal_id = ?"

#: Sampled automatic approvals per policy rule and standing rule, with their verdicts.
REVIEW_STATS = """
SELECT p.rule_id, p.standing_rule_id, count(*) AS sampled, count(r.proposal_id) AS reviewed,
       coalesce(sum(r.verdict = 'should_have_asked'), 0) AS flagged
FROM proposals AS p LEFT JOIN reviews AS r ON r.proposal_id = p.id
WHERE p.review_sampled = 1
GROUP BY p.rule_id, p.standing_rule_id
"""


def standing_rule_from_row(row: sqlite3.Row) -> StandingRule:
    """The one place a SQLite row becomes a StandingRule."""
    revoked_at = row["revoked_at"]
    return StandingRule(
        id=row["id"],
        operation=row["operation"],
        agent=row["agent"],
        rule_id=row["rule_id"],
        ceiling_field=row["ceiling_field"],
        ceiling=row["ceiling"],
        created_by=row["created_by"],
        created_from=row["created_from"],
        created_at=from_db_time(row["created_at"]),
        expires_at=from_db_time(row["expires_at"]),
        revoked_by=row["revoked_by"],
        revoked_at=None if revoked_at is None else from_db_time(revoked_at),
        # a grant from before arguments were bound (NULL) binds an impossible call: none
        arguments=json.loads(row["arguments"] or "{}"),
        varying=tuple(json.loads(row["varying"])),
        max_uses=row["max_uses"],
        uses=row["uses"],
    )


def _review_from_row(row: sqlite3.Row) -> Reviewed:
    return Reviewed(
        proposal_id=row["proposal_id"],
        verdict=row["verdict"],
        reviewer=row["reviewer"],
        at=from_db_time(row["at"]),
    )


class SqliteStanding:
    """Standing rules and reviews in the SqliteStore's database, transactions and audit chain."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    async def _rule(self, db: aiosqlite.Connection, standing_rule_id: str) -> StandingRule:
        row = await self._store.one(db, SELECT_STANDING_RULE, (standing_rule_id,))
        if row is None:
            raise StandingRuleNotFound(f"no standing rule has id {standing_rule_id!r}")
        return standing_rule_from_row(row)

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
        at = db_time(now, field="now")
        claim = {
            "id": proposal_id,
            "actor": actor,
            "now": at,
            "lease": db_time(lease_until, field="lease_until"),
            "binding_hash": binding_hash,
        }
        rule = {
            "id": standing_rule_id,
            "operation": grant.operation,
            "agent": grant.agent,
            "rule_id": grant.rule_id,
            "ceiling_field": grant.ceiling_field,
            "ceiling": grant.ceiling,
            "created_by": grant.created_by,
            "created_from": grant.created_from,
            "created_at": db_time(grant.created_at, field="created_at"),
            "expires_at": db_time(grant.expires_at, field="expires_at"),
            "arguments": dump_json(grant.arguments),
            "varying": dump_json(list(grant.varying)),
            "max_uses": grant.max_uses,
        }
        async with self._store.transaction(write=True) as db:
            row = await self._store.one(db, CLAIM_FOR_GRANT, claim)
            if row is None:
                current = await self._store.existing_proposal(db, proposal_id)
                return grant_refusal(current, now, binding_hash)
            await db.execute(INSERT_APPROVAL, (proposal_id, actor, binding_hash, at))
            await db.execute(INSERT_STANDING_RULE, rule)
            approved = approval_detail(actor, binding_hash)
            await self._store.append_audit(db, now, proposal_id, actor, "approved", approved)
            detail = grant_detail(standing_rule_id, grant)
            await self._store.append_audit(
                db, now, proposal_id, actor, "standing_rule_granted", detail
            )
            return Transitioned(await self._store.enqueue_effects(db, row, now))

    @finish_even_if_cancelled
    async def get_standing_rule(self, standing_rule_id: str) -> StandingRule:
        async with self._store.transaction(write=False) as db:
            return await self._rule(db, standing_rule_id)

    @finish_even_if_cancelled
    async def find_covering(
        self,
        *,
        operation: str,
        agent: str,
        rule_id: str,
        value: int | float,
        arguments: Mapping[str, JsonValue],
        requested_by: str,
        now: datetime,
    ) -> list[StandingRule]:
        params = {
            "operation": operation,
            "agent": agent,
            "rule_id": rule_id,
            "value": value,
            "arguments": dump_json(dict(arguments)),
            "requested_by": requested_by,
            "now": db_time(now, field="now"),
        }
        async with self._store.transaction(write=False) as db:
            rows = await db.execute_fetchall(SELECT_COVERING, params)
            return [standing_rule_from_row(row) for row in rows]

    @finish_even_if_cancelled
    async def active_standing_rules(self, *, now: datetime, limit: int = 50) -> list[StandingRule]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of rules")
        params = {"now": db_time(now, field="now"), "limit": limit}
        async with self._store.transaction(write=False) as db:
            rows = await db.execute_fetchall(SELECT_ACTIVE, params)
            return [standing_rule_from_row(row) for row in rows]

    @finish_even_if_cancelled
    async def revoke_standing_rule(
        self, standing_rule_id: str, *, actor: str, now: datetime
    ) -> RevokeResult:
        params = {"id": standing_rule_id, "actor": actor, "now": db_time(now, field="now")}
        async with self._store.transaction(write=True) as db:
            changed = await self._store.one(db, REVOKE, params)
            current = await self._rule(db, standing_rule_id)
            if changed is None:
                return not_revocable(current, now)
            detail: dict[str, JsonValue] = {"standing_rule_id": standing_rule_id}
            subject = current.created_from
            await self._store.append_audit(db, now, subject, actor, "standing_rule_revoked", detail)
            return Revoked(current)

    @finish_even_if_cancelled
    async def record_review(
        self, proposal_id: str, *, reviewer: str, verdict: Verdict, now: datetime
    ) -> ReviewResult:
        if verdict not in ("ok", "should_have_asked"):
            raise ValueError(f"verdict: got {verdict!r}; expected 'ok' or 'should_have_asked'")
        at = db_time(now, field="now")
        async with self._store.transaction(write=True) as db:
            sampled = await self._store.one(db, SELECT_SAMPLED, (proposal_id,))
            if sampled is None:
                raise ProposalNotFound(f"no proposal has id {proposal_id!r}")
            if not sampled["review_sampled"]:
                raise ValueError(f"proposal {proposal_id!r} was not sampled for review")
            row = await self._store.one(db, INSERT_REVIEW, (proposal_id, verdict, reviewer, at))
            if row is None:
                first = await self._store.one(db, SELECT_REVIEW, (proposal_id,))
                assert first is not None  # the row whose key refused ours
                return AlreadyReviewed(_review_from_row(first))
            detail: dict[str, JsonValue] = {"verdict": verdict}
            await self._store.append_audit(db, now, proposal_id, reviewer, "reviewed", detail)
            return _review_from_row(row)

    @finish_even_if_cancelled
    async def get_review(self, proposal_id: str) -> Reviewed | None:
        async with self._store.transaction(write=False) as db:
            row = await self._store.one(db, SELECT_REVIEW, (proposal_id,))
            return None if row is None else _review_from_row(row)

    @finish_even_if_cancelled
    async def review_stats(self) -> list[ReviewStats]:
        async with self._store.transaction(write=False) as db:
            rows = await db.execute_fetchall(REVIEW_STATS)
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
