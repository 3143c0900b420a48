"""What the store keeps of delegations: the DelegationStore protocol every backend gives through
``Store.delegations()``, on its own database and audit chain (written once,
store/delegations/verbs.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from store.delegations.records import (
    Delegation,
    DelegationRevokeResult,
    NewDelegation,
)

__all__ = ["DelegationStore"]


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
