"""The PostgreSQL backend of the StandingStore protocol.

It shares the PostgresStore's pool and audit chain: every change is one transaction holding the
compare-and-set (which locks its row), then its audit entry (PostgresStore.append_audit, which locks
the audit head: rows first, head second, as everywhere). Get it from
:meth:`PostgresStore.standing`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING

import asyncpg
from pydantic import JsonValue

from contracts.standing import Grant
from store.base import ProposalNotFound, Transitioned, TransitionResult
from store.pg_rows import aware
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
    from store.pg_migrate import Connection
    from store.postgres import PostgresStore

__all__ = ["PgStanding", "standing_rule_from_record"]

#: The approval that grants a standing rule: the claim (pending, unexpired, bound to the
#: contract the approver saw), for a proposal that needs one approval only.
CLAIM_FOR_GRANT = """
UPDATE proposals
SET status = 'executing', decided_by = $2, decided_at = $3, updated_at = $3, lease_until = $5
WHERE id = $1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > $3)
  AND binding_hash = $4 AND quorum = 1
RETURNING *
"""

#: The granter's approval, as every approval is recorded (store/pg_approvals.py).
INSERT_APPROVAL = """
INSERT INTO approvals (proposal_id, approver, binding_hash, approved_at) VALUES ($1, $2, $3, $4)
"""

#: The grant, written in the approval's transaction.
INSERT_STANDING_RULE = """
INSERT INTO standing_rules (
    id, operation, agent, rule_id, ceiling_field, ceiling, created_by, created_from, created_at,
    expires_at, arguments, varying, max_uses
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::json, $12::text[], $13)
"""

#: A standing rule with the number of proposals it approved.
_WITH_USES = """
SELECT s.*, (SELECT count(*) FROM proposals AS p WHERE p.standing_rule_id = s.id) AS uses
FROM standing_rules AS s
"""

#: One standing rule by id.
SELECT_STANDING_RULE = _WITH_USES + "WHERE s.id = $1"

#: The active rules that may cover a call: operation, agent, policy rule, ceiling, not the
#: granter's own request, uses left (the partial index standing_rules_active finds the
#: candidates), binding the call's arguments but the varying ones, as the insert's trigger checks.
SELECT_COVERING = (
    _WITH_USES
    + """
WHERE s.operation = $1 AND s.agent = $2 AND s.revoked_at IS NULL AND s.expires_at > $6
  AND s.rule_id = $3 AND s.ceiling >= $4 AND s.created_by <> $5 AND s.arguments IS NOT NULL
  AND (SELECT count(*) FROM proposals AS p WHERE p.standing_rule_id = s.id) < s.max_uses
  AND ($7::jsonb - s.ceiling_field - s.varying) = s.arguments::jsonb
ORDER BY s.expires_at DESC, s.id
LIMIT 10
"""
)

#: Every active rule, soonest expiry first.
SELECT_ACTIVE = (
    _WITH_USES
    + """
WHERE s.revoked_at IS NULL AND s.expires_at > $1
ORDER BY s.expires_at, s.id
LIMIT $2
"""
)

#: The revocation: active -> revoked, once.
REVOKE = """
UPDATE standing_rules SET revoked_by = $2, revoked_at = $3
WHERE id = $1 AND revoked_at IS NULL AND expires_at > $3
RETURNING id
"""

#: Whether a proposal exists, and was sampled for review.
SELECT_SAMPLED = "SELECT review_sampled FROM proposals WHERE id = $1"

#: One verdict per proposal: no row back means someone gave one first.
INSERT_REVIEW = """
INSERT INTO reviews (proposal_id, verdict, reviewer, at) VALUES ($1, $2, $3, $4)
ON CONFLICT (proposal_id) DO NOTHING
RETURNING *
"""

SELECT_REVIEW = "SELECT * FROM reviews WHERE proposal_id = $1"

#: Sampled automatic approvals per policy rule and standing rule, with their verdicts.
REVIEW_STATS = """
SELECT p.rule_id, p.standing_rule_id, count(*) AS sampled, count(r.proposal_id) AS reviewed,
       count(*) FILTER (WHERE r.verdict = 'should_have_asked') AS flagged
FROM proposals AS p LEFT JOIN reviews AS r ON r.proposal_id = p.id
WHERE p.review_sampled
GROUP BY p.rule_id, p.standing_rule_id
"""


def _number(value: Decimal) -> int | float:
    """A numeric column's value as the argument it bounds: whole numbers stay integers."""
    return int(value) if value == value.to_integral_value() else float(value)


def standing_rule_from_record(row: asyncpg.Record) -> StandingRule:
    """The one place a PostgreSQL record becomes a StandingRule."""
    revoked_at = row["revoked_at"]
    return StandingRule(
        id=row["id"],
        operation=row["operation"],
        agent=row["agent"],
        rule_id=row["rule_id"],
        ceiling_field=row["ceiling_field"],
        ceiling=_number(row["ceiling"]),
        created_by=row["created_by"],
        created_from=row["created_from"],
        created_at=row["created_at"].astimezone(UTC),
        expires_at=row["expires_at"].astimezone(UTC),
        revoked_by=row["revoked_by"],
        revoked_at=None if revoked_at is None else revoked_at.astimezone(UTC),
        # a grant from before arguments were bound (NULL) binds an impossible call: none
        arguments=json.loads(row["arguments"] or "{}"),
        varying=tuple(row["varying"]),
        max_uses=row["max_uses"],
        uses=row["uses"],
    )


def _review_from_record(row: asyncpg.Record) -> Reviewed:
    return Reviewed(
        proposal_id=row["proposal_id"],
        verdict=row["verdict"],
        reviewer=row["reviewer"],
        at=row["at"].astimezone(UTC),
    )


def _numeric(value: int | float) -> Decimal:
    """A ceiling as PostgreSQL's numeric receives it exactly (a float by its shortest text)."""
    return Decimal(value) if isinstance(value, int) else Decimal(repr(value))


class PgStanding:
    """Standing rules and reviews in the PostgresStore's database and audit chain."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    async def _rule(self, db: Connection, standing_rule_id: str) -> StandingRule:
        row = await db.fetchrow(SELECT_STANDING_RULE, standing_rule_id)
        if row is None:
            raise StandingRuleNotFound(f"no standing rule has id {standing_rule_id!r}")
        return standing_rule_from_record(row)

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
        at, lease = aware(now, field="now"), aware(lease_until, field="lease_until")
        async with self._store.transaction() as db:
            row = await db.fetchrow(CLAIM_FOR_GRANT, proposal_id, actor, at, binding_hash, lease)
            if row is None:
                current = await self._store.existing_proposal(db, proposal_id)
                return grant_refusal(current, at, binding_hash)
            await db.execute(INSERT_APPROVAL, proposal_id, actor, binding_hash, at)
            await db.execute(
                INSERT_STANDING_RULE,
                standing_rule_id,
                grant.operation,
                grant.agent,
                grant.rule_id,
                grant.ceiling_field,
                _numeric(grant.ceiling),
                grant.created_by,
                grant.created_from,
                aware(grant.created_at, field="created_at"),
                aware(grant.expires_at, field="expires_at"),
                json.dumps(grant.arguments, ensure_ascii=False, allow_nan=False),
                list(grant.varying),
                grant.max_uses,
            )
            approved = approval_detail(actor, binding_hash)
            await self._store.append_audit(db, at, proposal_id, actor, "approved", approved)
            detail = grant_detail(standing_rule_id, grant)
            await self._store.append_audit(
                db, at, proposal_id, actor, "standing_rule_granted", detail
            )
            return Transitioned(await self._store.enqueue_effects(db, row, at))

    @finish_even_if_cancelled
    async def get_standing_rule(self, standing_rule_id: str) -> StandingRule:
        async with self._store.connection() as db:
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
        at = aware(now, field="now")
        call = json.dumps(dict(arguments), ensure_ascii=False, allow_nan=False)
        async with self._store.connection() as db:
            rows = await db.fetch(
                SELECT_COVERING, operation, agent, rule_id, _numeric(value), requested_by, at, call
            )
            return [standing_rule_from_record(row) for row in rows]

    @finish_even_if_cancelled
    async def active_standing_rules(self, *, now: datetime, limit: int = 50) -> list[StandingRule]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of rules")
        async with self._store.connection() as db:
            rows = await db.fetch(SELECT_ACTIVE, aware(now, field="now"), limit)
            return [standing_rule_from_record(row) for row in rows]

    @finish_even_if_cancelled
    async def revoke_standing_rule(
        self, standing_rule_id: str, *, actor: str, now: datetime
    ) -> RevokeResult:
        at = aware(now, field="now")
        async with self._store.transaction() as db:
            changed = await db.fetchrow(REVOKE, standing_rule_id, actor, at)
            current = await self._rule(db, standing_rule_id)
            if changed is None:
                return not_revocable(current, at)
            detail: dict[str, JsonValue] = {"standing_rule_id": standing_rule_id}
            subject = current.created_from
            await self._store.append_audit(db, at, subject, actor, "standing_rule_revoked", detail)
            return Revoked(current)

    @finish_even_if_cancelled
    async def record_review(
        self, proposal_id: str, *, reviewer: str, verdict: Verdict, now: datetime
    ) -> ReviewResult:
        if verdict not in ("ok", "should_have_asked"):
            raise ValueError(f"verdict: got {verdict!r}; expected 'ok' or 'should_have_asked'")
        at = aware(now, field="now")
        async with self._store.transaction() as db:
            sampled = await db.fetchrow(SELECT_SAMPLED, proposal_id)
            if sampled is None:
                raise ProposalNotFound(f"no proposal has id {proposal_id!r}")
            if not sampled["review_sampled"]:
                raise ValueError(f"proposal {proposal_id!r} was not sampled for review")
            row = await db.fetchrow(INSERT_REVIEW, proposal_id, verdict, reviewer, at)
            if row is None:
                first = await db.fetchrow(SELECT_REVIEW, proposal_id)
                assert first is not None  # the row whose key refused ours
                return AlreadyReviewed(_review_from_record(first))
            detail: dict[str, JsonValue] = {"verdict": verdict}
            await self._store.append_audit(db, at, proposal_id, reviewer, "reviewed", detail)
            return _review_from_record(row)

    @finish_even_if_cancelled
    async def get_review(self, proposal_id: str) -> Reviewed | None:
        async with self._store.connection() as db:
            row = await db.fetchrow(SELECT_REVIEW, proposal_id)
            return None if row is None else _review_from_record(row)

    @finish_even_if_cancelled
    async def review_stats(self) -> list[ReviewStats]:
        async with self._store.connection() as db:
            rows = await db.fetch(REVIEW_STATS)
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
