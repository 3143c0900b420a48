"""Delegations: a person lets one agent act for them for a short while (``/countersign
delegate``). The records, the answers of a revocation, the error, and the audit detail.

The delegation's token is shown to the person once and never stored: only its SHA-256 is, and a
proposal sent with the token is found by that hash. A delegation is written once and never
changed except for one revocation (a compare-and-set, audited); it stops working when it expires.
A proposal made under a delegation names it (``NewProposal.delegation_id``, audited in its
"submitted" entry), and the database refuses one whose delegation does not name its agent and
requester or was revoked or expired when it was created.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from pydantic import Field, JsonValue

from contracts.frozen import Frozen
from store.base import StoreError
from store.revocation import NotRevocable, Revoked

__all__ = [
    "Delegation",
    "DelegationNotFound",
    "DelegationRevokeResult",
    "NewDelegation",
    "grant_detail",
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


#: the answer of a revocation (store/revocation.py)
DelegationRevokeResult = Revoked[Delegation] | NotRevocable[Delegation]


class DelegationNotFound(StoreError):
    """No delegation has that id."""


def grant_detail(new: NewDelegation) -> dict[str, JsonValue]:
    """What the audit records of a new delegation (every backend alike): never the token."""
    return {
        "delegation_id": new.id,
        "agent": new.agent,
        "person": new.person,
        "expires_at": new.expires_at.isoformat(),
    }
