"""Digests: similar proposals shown together in one Slack message. The records, their errors,
and what makes a second digest of the same message a conflict.

Proposals of one channel, operation and requester that become due together in the outbox are
posted as one digest message. A digest is written once, when that message is posted: the digest
row and, for each item, its ``digest_id`` and Slack message, in the transaction that also
completes the items' outbox entries (``DigestStore.attach_digest``). Each item keeps its own
status, decision, outcome, audit trail and outbox entries. The database keeps each item in its
digest and its digest's message, and refuses items of another operation or requester (the
digests migration of each backend).
"""

from __future__ import annotations

import base64
import secrets
from datetime import datetime

from contracts.frozen import Frozen
from store.base import StoreError
from store.proposals.records import Proposal

__all__ = ["BatchNotFound", "Digest", "DigestNotFound", "NewDigest", "conflict", "new_digest_id"]


def new_digest_id() -> str:
    """128 random bits, base32: opaque, unguessable, safe in a Slack button value."""
    return "dg_" + base64.b32encode(secrets.token_bytes(16)).decode().rstrip("=").lower()


class NewDigest(Frozen):
    """A digest message just posted (or found again after a post whose answer was lost)."""

    id: str  #: the only thing the digest's buttons carry
    channel: str  #: the Slack channel of its message
    ts: str  #: its message
    operation: str  #: every item's operation
    #: every item's accountable human; None: the items of a batch, of several requesters
    requested_by: str | None
    created_at: datetime
    batch_id: str | None = None  #: the batch whose items it shows (store.proposals.batches)


class Digest(NewDigest):
    """A stored digest and its items, in the order its message lists them."""

    items: tuple[Proposal, ...]


class DigestNotFound(StoreError):
    """No digest has that id."""


class BatchNotFound(StoreError):
    """No batch has that id."""


def conflict(stored: NewDigest, given: NewDigest) -> StoreError | None:
    """The error for attaching ``given`` under the id of a different ``stored`` digest."""
    fields = ("channel", "ts", "operation", "requested_by", "batch_id")
    if all(getattr(stored, name) == getattr(given, name) for name in fields):
        return None
    return StoreError(
        f"digest {given.id!r} is stored for message {stored.ts!r} in {stored.channel!r} "
        f"({stored.operation!r} requested by {stored.requested_by!r}); got message "
        f"{given.ts!r} in {given.channel!r} ({given.operation!r} requested by "
        f"{given.requested_by!r})"
    )
