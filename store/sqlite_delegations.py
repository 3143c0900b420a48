"""The SQLite backend of the DelegationStore protocol.

It shares the SqliteStore's connection, lock and audit chain: every change is one write
transaction (SqliteStore.transaction) holding the change and its audit entry. Get it from
:meth:`SqliteStore.delegations`.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING

import aiosqlite
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
from store.rows import db_time, from_db_time
from store.shield import finish_even_if_cancelled

if TYPE_CHECKING:
    from store.sqlite import SqliteStore

__all__ = ["SqliteDelegations", "delegation_from_row"]

#: A new delegation.
INSERT_DELEGATION = """
INSERT INTO delegations (id, token_hash, agent, person, created_at, expires_at)
VALUES (:id, :token_hash, :agent, :person, :created_at, :expires_at)
RETURNING *
"""

#: One delegation by id.
SELECT_DELEGATION = "SELECT * FROM delegations WHERE id = ?"

#: The delegation a token belongs to (its hash is unique).
SELECT_BY_TOKEN_HASH = "SELECT * FROM delegations WHERE token_hash = ?"

#: A person's active delegations, newest first.
SELECT_ACTIVE_OF = """
SELECT * FROM delegations
WHERE person = :person AND revoked_at IS NULL AND expires_at > :now
ORDER BY created_at DESC, id
LIMIT :limit
"""

#: The revocation: active -> revoked, once.
REVOKE = """
UPDATE delegations SET revoked_by = :actor, revoked_at = :now
WHERE id = :id AND revoked_at IS NULL AND expires_at > :now
RETURNING id
"""


def delegation_from_row(row: sqlite3.Row) -> Delegation:
    """The one place a SQLite row becomes a Delegation."""
    revoked_at = row["revoked_at"]
    return Delegation(
        id=row["id"],
        agent=row["agent"],
        person=row["person"],
        created_at=from_db_time(row["created_at"]),
        expires_at=from_db_time(row["expires_at"]),
        revoked_by=row["revoked_by"],
        revoked_at=None if revoked_at is None else from_db_time(revoked_at),
    )


class SqliteDelegations:
    """Delegations in the SqliteStore's database, transactions and audit chain."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    async def _delegation(self, db: aiosqlite.Connection, delegation_id: str) -> Delegation:
        row = await self._store.one(db, SELECT_DELEGATION, (delegation_id,))
        if row is None:
            raise DelegationNotFound(f"no delegation has id {delegation_id!r}")
        return delegation_from_row(row)

    @finish_even_if_cancelled
    async def create_delegation(self, new: NewDelegation) -> Delegation:
        if new.expires_at <= new.created_at:
            raise ValueError(
                f"delegation {new.id!r}: expires_at ({new.expires_at.isoformat()}) must be after "
                f"created_at ({new.created_at.isoformat()})"
            )
        params = {
            "id": new.id,
            "token_hash": new.token_hash,
            "agent": new.agent,
            "person": new.person,
            "created_at": db_time(new.created_at, field="created_at"),
            "expires_at": db_time(new.expires_at, field="expires_at"),
        }
        async with self._store.transaction(write=True) as db:
            row = await self._store.one(db, INSERT_DELEGATION, params)
            assert row is not None  # RETURNING of an INSERT that did not fail
            detail = grant_detail(new)
            await self._store.append_audit(
                db, new.created_at, new.id, new.person, "delegation_granted", detail
            )
            return delegation_from_row(row)

    @finish_even_if_cancelled
    async def delegation_for_token(self, token_hash: str) -> Delegation | None:
        async with self._store.transaction(write=False) as db:
            row = await self._store.one(db, SELECT_BY_TOKEN_HASH, (token_hash,))
            return None if row is None else delegation_from_row(row)

    @finish_even_if_cancelled
    async def get_delegation(self, delegation_id: str) -> Delegation:
        async with self._store.transaction(write=False) as db:
            return await self._delegation(db, delegation_id)

    @finish_even_if_cancelled
    async def delegations_of(
        self, person: str, *, now: datetime, limit: int = 50
    ) -> list[Delegation]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of delegations")
        params = {"person": person, "now": db_time(now, field="now"), "limit": limit}
        async with self._store.transaction(write=False) as db:
            rows = await db.execute_fetchall(SELECT_ACTIVE_OF, params)
            return [delegation_from_row(row) for row in rows]

    @finish_even_if_cancelled
    async def revoke_delegation(
        self, delegation_id: str, *, actor: str, now: datetime
    ) -> DelegationRevokeResult:
        params = {"id": delegation_id, "actor": actor, "now": db_time(now, field="now")}
        async with self._store.transaction(write=True) as db:
            changed = await self._store.one(db, REVOKE, params)
            current = await self._delegation(db, delegation_id)
            if changed is None:
                return not_revocable(current, now)
            detail: dict[str, JsonValue] = {"delegation_id": delegation_id, "agent": current.agent}
            await self._store.append_audit(
                db, now, delegation_id, actor, "delegation_revoked", detail
            )
            return DelegationRevoked(current)
