"""Delegations: a person lets one agent act for them for a short while (``/countersign
delegate``). Records, answers, the protocol.

The delegation's token is shown to the person once and never stored: only its SHA-256 is, and a
proposal sent with the token is found by that hash. A delegation is written once and never
changed except for one revocation (a compare-and-set, audited); it stops working when it expires.
A proposal made under a delegation names it (``NewProposal.delegation_id``, audited in its
"submitted" entry), and the database refuses one whose delegation does not name its agent and
requester or was revoked or expired when it was created. Every backend implements
:class:`DelegationStore` on its own database and audit chain; get it from
``Store.delegations()``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from pydantic import Field, JsonValue

from contracts.frozen import Frozen
from store.base import StoreError
from store.connector import Connector, Row, Tx
from store.rows import read_optional_time, read_time
from store.shield import finish_even_if_cancelled

__all__ = [
    "Delegation",
    "DelegationNotFound",
    "DelegationNotRevocable",
    "DelegationRevokeResult",
    "DelegationRevoked",
    "DelegationStore",
    "Delegations",
    "NewDelegation",
    "grant_detail",
    "not_revocable",
    "token_hash",
]


def token_hash(token: str) -> str:
    """What is stored of a delegation token, and looked up when one is used: SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


class NewDelegation(Frozen):
    """A delegation as ``/countersign delegate`` hands it to the store."""

    id: str  #: "dl_" + 128 random bits: shown in lists and audit entries, never a credential
    token_hash: str = Field(pattern=r"^[0-9a-f]{64}$")  #: token_hash(token); never the token
    agent: str  #: the agent that may act for the person
    person: str  #: the Slack user id who delegated: the requester of what the agent proposes
    created_at: datetime
    expires_at: datetime


class Delegation(Frozen):
    """A stored delegation (without its token hash: nothing reads it back but the lookup)."""

    id: str
    agent: str
    person: str
    created_at: datetime
    expires_at: datetime
    revoked_by: str | None = None
    revoked_at: datetime | None = None

    def active(self, now: datetime) -> bool:
        return self.revoked_at is None and now < self.expires_at


@dataclass(frozen=True, slots=True)
class DelegationRevoked:
    """You revoked it."""

    delegation: Delegation


@dataclass(frozen=True, slots=True)
class DelegationNotRevocable:
    """Nothing changed: it was revoked already, or it expired (``reason`` says which)."""

    delegation: Delegation
    reason: str


DelegationRevokeResult = DelegationRevoked | DelegationNotRevocable


class DelegationNotFound(StoreError):
    """No delegation has that id."""


def not_revocable(current: Delegation, now: datetime) -> DelegationNotRevocable:
    """Why a revocation found nothing to change (the same words in every backend)."""
    if current.revoked_at is not None:
        return DelegationNotRevocable(current, f"it was already revoked by {current.revoked_by}")
    if current.expires_at <= now:
        return DelegationNotRevocable(current, f"it expired at {current.expires_at.isoformat()}")
    return DelegationNotRevocable(current, "it changed meanwhile; try again")


def grant_detail(new: NewDelegation) -> dict[str, JsonValue]:
    """What the audit records of a new delegation (every backend alike): never the token."""
    return {
        "delegation_id": new.id,
        "agent": new.agent,
        "person": new.person,
        "expires_at": new.expires_at.isoformat(),
    }


class DelegationStore(Protocol):
    async def create_delegation(self, new: NewDelegation) -> Delegation:
        """Store it, audited as "delegation_granted" (subject: the delegation's id, actor: the
        person). Raises ValueError when it does not expire after it is created."""
        ...

    async def delegation_for_token(self, token_hash: str) -> Delegation | None:
        """The delegation whose token has this hash, whatever its state (the caller checks
        ``active``), or None."""
        ...

    async def get_delegation(self, delegation_id: str) -> Delegation:
        """Raises DelegationNotFound."""
        ...

    async def delegations_of(
        self, person: str, *, now: datetime, limit: int = 50
    ) -> list[Delegation]:
        """``person``'s active delegations (unrevoked, unexpired), newest first."""
        ...

    async def revoke_delegation(
        self, delegation_id: str, *, actor: str, now: datetime
    ) -> DelegationRevokeResult:
        """Active -> revoked, once, audited as "delegation_revoked" (subject: the delegation's
        id). Raises DelegationNotFound."""
        ...


def delegation_from_row(row: Row) -> Delegation:
    """The one place a stored row becomes a Delegation."""
    return Delegation(
        id=row["id"],
        agent=row["agent"],
        person=row["person"],
        created_at=read_time(row["created_at"]),
        expires_at=read_time(row["expires_at"]),
        revoked_by=row["revoked_by"],
        revoked_at=read_optional_time(row["revoked_at"]),
    )


class Delegations:
    """The DelegationStore, written once over a backend's connector (store/connector.py): it
    shares the backend's transactions and audit chain. Get it from ``Store.delegations()``."""

    def __init__(self, backend: Connector) -> None:
        self._backend = backend

    @staticmethod
    async def _existing(tx: Tx, delegation_id: str) -> Delegation:
        row = await tx.one("select_delegation", id=delegation_id)
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
        async with self._backend.tx(write=False) as tx:
            row = await tx.one("select_delegation_by_token_hash", token_hash=token_hash)
            return None if row is None else delegation_from_row(row)

    @finish_even_if_cancelled
    async def get_delegation(self, delegation_id: str) -> Delegation:
        async with self._backend.tx(write=False) as tx:
            return await self._existing(tx, delegation_id)

    @finish_even_if_cancelled
    async def delegations_of(
        self, person: str, *, now: datetime, limit: int = 50
    ) -> list[Delegation]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of delegations")
        async with self._backend.tx(write=False) as tx:
            rows = await tx.all("select_active_delegations_of", person=person, now=now, limit=limit)
            return [delegation_from_row(row) for row in rows]

    @finish_even_if_cancelled
    async def revoke_delegation(
        self, delegation_id: str, *, actor: str, now: datetime
    ) -> DelegationRevokeResult:
        async with self._backend.tx(write=True) as tx:
            changed = await tx.one("revoke_delegation", id=delegation_id, actor=actor, now=now)
            current = await self._existing(tx, delegation_id)
            if changed is None:
                return not_revocable(current, now)
            detail: dict[str, JsonValue] = {"delegation_id": delegation_id, "agent": current.agent}
            await tx.append_audit(now, delegation_id, actor, "delegation_revoked", detail)
            return DelegationRevoked(current)
