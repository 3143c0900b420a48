"""Digests: similar proposals shown together in one Slack message, and the store's verbs for them.

Proposals of one channel, operation and requester that become due together in the outbox are
posted as one digest message. A digest is written once, when that message is posted: the digest
row and, for each item, its ``digest_id`` and Slack message, in the transaction that also
completes the items' outbox entries (:meth:`DigestStore.attach_digest`). Each item keeps its own
status, decision, outcome, audit trail and outbox entries; the worker delivers the entries of a
digest's items together (one post, one update, one reply for many), with the outbox verbs here
that lease, settle and defer several entries in one transaction.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from contracts.frozen import Frozen
from store.base import Delivery, Proposal, StoreError
from store.lifecycle import Effect

__all__ = [
    "Digest",
    "DigestNotFound",
    "DigestStore",
    "NewDigest",
    "conflict",
    "new_digest_id",
]


def new_digest_id() -> str:
    """128 random bits, base32: opaque, unguessable, safe in a Slack button value."""
    return "dg_" + base64.b32encode(secrets.token_bytes(16)).decode().rstrip("=").lower()


class NewDigest(Frozen):
    """A digest message just posted (or found again after a post whose answer was lost)."""

    id: str  #: the only thing the digest's buttons carry
    channel: str  #: the Slack channel of its message
    ts: str  #: its message
    operation: str  #: every item's operation
    requested_by: str  #: every item's accountable human
    created_at: datetime


class Digest(NewDigest):
    """A stored digest and its items, in the order its message lists them."""

    items: tuple[Proposal, ...]


class DigestNotFound(StoreError):
    """No digest has that id."""


def conflict(stored: NewDigest, given: NewDigest) -> StoreError | None:
    """The error for attaching ``given`` under the id of a different ``stored`` digest."""
    fields = ("channel", "ts", "operation", "requested_by")
    if all(getattr(stored, name) == getattr(given, name) for name in fields):
        return None
    return StoreError(
        f"digest {given.id!r} is stored for message {stored.ts!r} in {stored.channel!r} "
        f"({stored.operation!r} requested by {stored.requested_by!r}); got message "
        f"{given.ts!r} in {given.channel!r} ({given.operation!r} requested by "
        f"{given.requested_by!r})"
    )


class DigestStore(Protocol):
    async def attach_digest(
        self,
        digest: NewDigest,
        items: Sequence[str],
        *,
        deliveries: Sequence[int],
        now: datetime,
    ) -> Digest:
        """Remember that ``digest``'s message shows the proposals ``items``, in one transaction.

        Stores the digest (once: attaching more items to a stored digest with the same fields is
        allowed, other fields raise StoreError); each item not yet shown anywhere gets the
        digest and its message, with a "posted_to_slack" audit entry naming the digest; items
        already shown (by this digest or another message) are left as they are. The outbox
        entries ``deliveries`` (the items' posts) are completed. An item of another operation
        or requester raises StoreError and changes nothing; an unknown one ProposalNotFound.
        """
        ...

    async def get_digest(self, digest_id: str) -> Digest:
        """Raises DigestNotFound."""
        ...

    async def get_proposals(self, proposal_ids: Sequence[str]) -> list[Proposal]:
        """The proposals with these ids, in that order, in one read; unknown ids are left out."""
        ...

    # --- the outbox, several entries at a time ----------------------------------------------

    async def claim_similar_posts(
        self,
        *,
        channel: str,
        operation: str,
        requested_by: str,
        now: datetime,
        limit: int,
        lease: timedelta,
    ) -> list[Delivery]:
        """Up to ``limit`` more due slack.post entries of pending, never shown proposals asked
        in ``channel`` with this operation and requester, leased as claim_deliveries leases."""
        ...

    async def claim_digest_deliveries(
        self, digest_id: str, effect: Effect, *, now: datetime, limit: int, lease: timedelta
    ) -> list[Delivery]:
        """Up to ``limit`` more due ``effect`` entries of the digest's items (each the first
        undelivered entry of its proposal and lane), leased as claim_deliveries leases."""
        ...

    async def complete_deliveries(self, delivery_ids: Sequence[int], *, now: datetime) -> None:
        """Delivered, all of them, in one transaction."""
        ...

    async def retry_deliveries(
        self, delivery_ids: Sequence[int], *, at: datetime, error: str
    ) -> None:
        """Release their leases; try them again at ``at`` (retry_delivery for several)."""
        ...

    async def defer_deliveries(self, delivery_ids: Sequence[int], *, at: datetime) -> None:
        """Not attempted (their channel is rate limited): release the leases, due again at
        ``at``, and the attempt their claim counted is not counted."""
        ...
