"""The DelegationStore, written once over a backend's connector, and the one place a stored row
becomes a Delegation. Its SQL: store/delegations/sql/."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import JsonValue

from store.backend import FamilyStore
from store.connector import Row, Tx
from store.delegations.records import (
    Delegation,
    DelegationNotFound,
    DelegationRevokeResult,
    NewDelegation,
    grant_detail,
)
from store.revocation import Revoked, not_revocable
from store.rows import check_limit, model_from_row, required
from store.shield import finish_even_if_cancelled

__all__ = ["DelegationStore", "delegation_from_row"]


def delegation_from_row(row: Row) -> Delegation:
    """The one place a stored row becomes a Delegation."""
    return model_from_row(Delegation, row)


class DelegationStore(FamilyStore):
    """Delegations from Slack; get it from ``Store.delegations()``."""

    @finish_even_if_cancelled
    async def create_delegation(self, new: NewDelegation) -> Delegation:
        """Store it, audited as "delegation_granted" (subject: the delegation's id, actor: the
        person). Raises ValueError when it does not expire after it is created."""
        if new.expires_at <= new.created_at:
            raise ValueError(
                f"delegation {new.id!r}: expires_at ({new.expires_at.isoformat()}) must be after "
                f"created_at ({new.created_at.isoformat()})"
            )
        params: dict[str, Any] = new.model_dump()
        async with self._backend.tx(write=True) as tx:
            row = await tx.one("insert_delegation", **params)
            assert row is not None  # RETURNING of an INSERT that did not fail
            await tx.append_audit(
                new.created_at, new.id, new.person, "delegation_granted", grant_detail(new)
            )
            return delegation_from_row(row)

    @finish_even_if_cancelled
    async def delegation_for_token(self, token_hash: str) -> Delegation | None:
        """The delegation whose token has this hash, whatever its state (the caller checks
        ``active``), or None."""
        async with self._backend.tx(write=False) as tx:
            row = await tx.one("select_delegation_by_token_hash", token_hash=token_hash)
            return None if row is None else delegation_from_row(row)

    @finish_even_if_cancelled
    async def get_delegation(self, delegation_id: str) -> Delegation:
        """Raises DelegationNotFound."""
        return await self._reading(self._existing, delegation_id)

    @finish_even_if_cancelled
    async def delegations_of(
        self, person: str, *, now: datetime, limit: int = 50
    ) -> list[Delegation]:
        """``person``'s active delegations (unrevoked, unexpired), newest first."""
        check_limit(limit, "delegations")
        async with self._backend.tx(write=False) as tx:
            rows = await tx.all("select_active_delegations_of", person=person, now=now, limit=limit)
            return [delegation_from_row(row) for row in rows]

    @finish_even_if_cancelled
    async def revoke_delegation(
        self, delegation_id: str, *, actor: str, now: datetime
    ) -> DelegationRevokeResult:
        """Active -> revoked, once, audited as "delegation_revoked" (subject: the delegation's
        id). Raises DelegationNotFound."""
        async with self._backend.tx(write=True) as tx:
            changed = await tx.one("revoke_delegation", id=delegation_id, actor=actor, now=now)
            current = await self._existing(tx, delegation_id)
            if changed is None:
                return not_revocable(current, now)
            detail: dict[str, JsonValue] = {"delegation_id": delegation_id, "agent": current.agent}
            await tx.append_audit(now, delegation_id, actor, "delegation_revoked", detail)
            return Revoked(current)

    @staticmethod
    async def _existing(tx: Tx, delegation_id: str) -> Delegation:
        missing = DelegationNotFound(f"no delegation has id {delegation_id!r}")
        return delegation_from_row(
            await required(tx, missing, "select_delegation", id=delegation_id)
        )
