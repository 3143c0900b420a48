"""What the store keeps of digests: the DigestStore protocol every backend gives through
``Store.digests()`` (written once, store/digests/verbs.py). The worker delivers the outbox
entries of a digest's items together (one post, one update, one reply for many), with the
outbox verbs here that lease, settle and defer several entries in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from store.base import Delivery, Proposal
from store.batches import Batch
from store.digests.records import (
    Digest,
    NewDigest,
)
from store.lifecycle import Effect

__all__ = ["DigestStore"]


class DigestStore(Protocol):
    async def attach_digest(
        self,
        digest: NewDigest,
        items: Sequence[str],
        *,
        deliveries: Sequence[int],
        now: datetime,
    ) -> None:
        """Remember that ``digest``'s message shows the proposals ``items``, in one transaction.

        Stores the digest (once: attaching more items to a stored digest with the same fields is
        allowed, other fields raise StoreError); each item not yet shown anywhere gets the
        digest and its message, with a "posted_to_slack" audit entry naming the digest; items
        already shown (by this digest or another message) are left as they are. The outbox
        entries ``deliveries`` (the items' posts) are completed. An item of another operation
        or requester raises StoreError and changes nothing; an unknown one ProposalNotFound.
        Nothing is read back (the poster has what it posted; ``get_digest`` reads it).
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

    # --- batches (store/batches.py) ---------------------------------------------------------

    async def get_batch(self, batch_id: str) -> Batch:
        """Raises BatchNotFound."""
        ...

    async def lease_batch(self, batch_id: str, *, now: datetime, lease: timedelta) -> bool:
        """Whether this worker now holds the batch until ``now + lease`` to post its digest: its
        window has ended (or it filled up), it is not posted, and no other worker holds it."""
        ...

    async def claim_batch_posts(
        self, batch_id: str, *, held: Sequence[int], now: datetime, lease: timedelta
    ) -> list[Delivery]:
        """Every due post of the batch's proposals but the entries ``held``, leased to the
        caller, who holds the batch (lease_batch): it alone posts them, whatever their leases."""
        ...

    async def finish_batch(self, batch_id: str) -> None:
        """The batch's digest went out: release it, and unless a post of it is still to be
        delivered (a retry, a proposal that joined as it went out), nobody posts it again."""
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
