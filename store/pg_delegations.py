"""The PostgreSQL backend of the DelegationStore protocol.

It shares the PostgresStore's pool and audit chain: every change is one transaction holding the
change (which locks its row), then its audit entry (PostgresStore.append_audit, which locks the
audit head: rows first, head second, as everywhere). Get it from :meth:`PostgresStore.delegations`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import asyncpg
from pydantic import JsonValue

from store.delegations import (
    Delegation,
    DelegationNotFound,
    DelegationRevoked,
    DelegationRevokeResult,
    NewDelegation,
    grant_detail,
    not_revocable,
)
from store.pg_rows import aware
from store.shield import finish_even_if_cancelled

if TYPE_CHECKING:
    from store.pg_migrate import Connection
    from store.postgres import PostgresStore

__all__ = ["PgDelegations", "delegation_from_record"]

#: A new delegation.
INSERT_DELEGATION = """
INSERT INTO delegations (id, token_hash, agent, person, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING *
"""

#: One delegation by id.
SELECT_DELEGATION = "SELECT * FROM delegations WHERE id = $1"

#: The delegation a token belongs to (its hash is unique).
SELECT_BY_TOKEN_HASH = "SELECT * FROM delegations WHERE token_hash = $1"

#: A person's active delegations, newest first.
SELECT_ACTIVE_OF = """
SELECT * FROM delegations
WHERE person = $1 AND revoked_at IS NULL AND expires_at > $2
ORDER BY created_at DESC, id
LIMIT $3
"""

#: The revocation: active -> revoked, once.
REVOKE = """
UPDATE delegations SET revoked_by = $2, revoked_at = $3
WHERE id = $1 AND revoked_at IS NULL AND expires_at > $3
RETURNING id
"""


def delegation_from_record(row: asyncpg.Record) -> Delegation:
    """The one place a PostgreSQL record becomes a Delegation."""
    revoked_at = row["revoked_at"]
    return Delegation(
        id=row["id"],
        agent=row["agent"],
        person=row["person"],
        created_at=row["created_at"].astimezone(UTC),
        expires_at=row["expires_at"].astimezone(UTC),
        revoked_by=row["revoked_by"],
        revoked_at=None if revoked_at is None else revoked_at.astimezone(UTC),
    )


class PgDelegations:
    """Delegations in the PostgresStore's database and audit chain."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    async def _delegation(self, db: Connection, delegation_id: str) -> Delegation:
        row = await db.fetchrow(SELECT_DELEGATION, delegation_id)
        if row is None:
            raise DelegationNotFound(f"no delegation has id {delegation_id!r}")
        return delegation_from_record(row)

    @finish_even_if_cancelled
    async def create_delegation(self, new: NewDelegation) -> Delegation:
        if new.expires_at <= new.created_at:
            raise ValueError(
                f"delegation {new.id!r}: expires_at ({new.expires_at.isoformat()}) must be after "
                f"created_at ({new.created_at.isoformat()})"
            )
        created = aware(new.created_at, field="created_at")
        expires = aware(new.expires_at, field="expires_at")
        async with self._store.transaction() as db:
            row = await db.fetchrow(
                INSERT_DELEGATION, new.id, new.token_hash, new.agent, new.person, created, expires
            )
            assert row is not None  # RETURNING of an INSERT that did not fail
            detail = grant_detail(new)
            await self._store.append_audit(
                db, created, new.id, new.person, "delegation_granted", detail
            )
            return delegation_from_record(row)

    @finish_even_if_cancelled
    async def delegation_for_token(self, token_hash: str) -> Delegation | None:
        async with self._store.connection() as db:
            row = await db.fetchrow(SELECT_BY_TOKEN_HASH, token_hash)
            return None if row is None else delegation_from_record(row)

    @finish_even_if_cancelled
    async def get_delegation(self, delegation_id: str) -> Delegation:
        async with self._store.connection() as db:
            return await self._delegation(db, delegation_id)

    @finish_even_if_cancelled
    async def delegations_of(
        self, person: str, *, now: datetime, limit: int = 50
    ) -> list[Delegation]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of delegations")
        async with self._store.connection() as db:
            rows = await db.fetch(SELECT_ACTIVE_OF, person, aware(now, field="now"), limit)
            return [delegation_from_record(row) for row in rows]

    @finish_even_if_cancelled
    async def revoke_delegation(
        self, delegation_id: str, *, actor: str, now: datetime
    ) -> DelegationRevokeResult:
        at = aware(now, field="now")
        async with self._store.transaction() as db:
            changed = await db.fetchrow(REVOKE, delegation_id, actor, at)
            current = await self._delegation(db, delegation_id)
            if changed is None:
                return not_revocable(current, at)
            detail: dict[str, JsonValue] = {"delegation_id": delegation_id, "agent": current.agent}
            await self._store.append_audit(
                db, at, delegation_id, actor, "delegation_revoked", detail
            )
            return DelegationRevoked(current)
