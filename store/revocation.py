"""What the families whose records are granted once and revoked once share (standing rules,
delegations): the answers of a revocation, and why one changed nothing.

A revocation is a compare-and-set (active -> revoked, once, audited); when it finds nothing to
change, the family re-reads the record and :func:`not_revocable` says why, in the same words in
every backend and every family.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Protocol, TypeVar

__all__ = ["NotRevocable", "Revocable", "Revoked", "not_revocable"]


class Revocable(Protocol):
    """A record that expires and may be revoked once before it does."""

    @property
    def revoked_by(self) -> str | None: ...

    @property
    def revoked_at(self) -> datetime | None: ...

    @property
    def expires_at(self) -> datetime: ...


R = TypeVar("R", bound=Revocable)


@dataclass(frozen=True, slots=True)
class Revoked(Generic[R]):
    """You revoked it."""

    record: R


@dataclass(frozen=True, slots=True)
class NotRevocable(Generic[R]):
    """Nothing changed: it was revoked already, or it expired (``reason`` says which)."""

    record: R
    reason: str


def not_revocable(current: R, now: datetime) -> NotRevocable[R]:
    """Why a revocation of ``current`` (as it is now) found nothing to change."""
    if current.revoked_at is not None:
        return NotRevocable(current, f"it was already revoked by {current.revoked_by}")
    if current.expires_at <= now:
        return NotRevocable(current, f"it expired at {current.expires_at.isoformat()}")
    return NotRevocable(current, "it changed meanwhile; try again")
