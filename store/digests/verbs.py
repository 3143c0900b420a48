"""The DigestStore, written once over a backend's connector, and the one place a stored digest
row becomes a Digest. Its SQL: store/digests/sql/.

The worker delivers the outbox entries of a digest's items together (one post, one update, one
reply for many), with the outbox verbs here that lease, settle and defer several entries in one
transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import JsonValue

from store.backend import FamilyStore
from store.connector import Array, Row, Tx
from store.digests.records import (
    BatchNotFound,
    Digest,
    DigestNotFound,
    NewDigest,
    conflict,
)
from store.proposals.batches import Batch, batch_from_row
from store.proposals.lifecycle import Effect
from store.proposals.records import Delivery, Proposal, ProposalNotFound
from store.proposals.rows import delivery_from_row, proposal_from_row, with_approvals
from store.rows import check_limit, model_from_row, required
from store.shield import finish_even_if_cancelled

__all__ = ["DigestStore", "digest_from_row"]

#: Who the audit names for posting the digest message.
SLACK_ACTOR = "slack"


def digest_from_row(row: Row, items: Sequence[Proposal] = ()) -> Digest:
    """The one place a stored digest row (and its items, read apart) becomes a Digest."""
    return model_from_row(Digest, row, items=tuple(items))


def _ids(values: Sequence[object]) -> Array:
    return Array(str(value) for value in values)


def _leased(rows: list[Row]) -> list[Delivery]:
    """The outbox entries a claim leased, in the order they were written."""
    return sorted(map(delivery_from_row, rows), key=lambda d: d.id)


class DigestStore(FamilyStore):
    """Digests of similar proposals; get it from ``Store.digests()``."""

    @staticmethod
    async def _read(tx: Tx, digest_id: str) -> Digest:
        missing = DigestNotFound(f"no digest has id {digest_id!r}")
        row = await required(tx, missing, "select_digest", id=digest_id)
        rows = await tx.all("select_digest_items", digest_id=digest_id)
        items = await with_approvals(tx, [proposal_from_row(item) for item in rows])
        return digest_from_row(row, items)

    @finish_even_if_cancelled
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
        params: dict[str, Any] = digest.model_dump()
        ids = list(dict.fromkeys(items))
        async with self._backend.tx(write=True) as tx:
            await tx.execute("insert_digest", **params)
            stored = await tx.one("select_digest", id=digest.id)
            assert stored is not None  # inserted just now, or found stored
            problem = conflict(digest_from_row(stored), digest)
            if problem is not None:
                raise problem
            rows = await tx.all(
                "attach_digest_items",
                ids=_ids(ids),
                digest_id=digest.id,
                channel=digest.channel,
                ts=digest.ts,
                now=now,
            )
            attached = {row["id"] for row in rows}
            if len(attached) < len(ids):
                known_rows = await tx.all("select_known_proposal_ids", ids=_ids(ids))
                known = {row["id"] for row in known_rows}
                unknown = [item for item in ids if item not in known]
                if unknown:
                    raise ProposalNotFound(f"no proposal has id {unknown[0]!r}")
            detail: dict[str, JsonValue] = {
                "channel": digest.channel,
                "ts": digest.ts,
                "digest_id": digest.id,
            }
            await tx.append_audit_entries(
                now,
                [
                    (item, SLACK_ACTOR, "posted_to_slack", detail)
                    for item in ids
                    if item in attached
                ],
            )
            if deliveries:
                await tx.execute("complete_deliveries", ids=_ids(deliveries), now=now)

    @finish_even_if_cancelled
    async def get_digest(self, digest_id: str) -> Digest:
        """Raises DigestNotFound."""
        async with self._backend.tx(write=False) as tx:
            return await self._read(tx, digest_id)

    @finish_even_if_cancelled
    async def get_proposals(self, proposal_ids: Sequence[str]) -> list[Proposal]:
        """The proposals with these ids, in that order, in one read; unknown ids are left out."""
        if not proposal_ids:
            return []
        async with self._backend.tx(write=False) as tx:
            rows = await tx.all("select_proposals_by_ids", ids=_ids(proposal_ids))
            proposals = await with_approvals(tx, [proposal_from_row(row) for row in rows])
        found = {p.id: p for p in proposals}
        return [found[i] for i in proposal_ids if i in found]

    # --- the outbox, several entries at a time ----------------------------------------------

    @finish_even_if_cancelled
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
        check_limit(limit, "entries")
        async with self._backend.tx(write=True) as tx:
            rows = await tx.all(
                "claim_similar_posts",
                now=now,
                lease=now + lease,
                limit=limit,
                channel=channel,
                operation=operation,
                requested_by=requested_by,
            )
            return _leased(rows)

    @finish_even_if_cancelled
    async def claim_digest_deliveries(
        self, digest_id: str, effect: Effect, *, now: datetime, limit: int, lease: timedelta
    ) -> list[Delivery]:
        """Up to ``limit`` more due ``effect`` entries of the digest's items (each the first
        undelivered entry of its proposal and lane), leased as claim_deliveries leases."""
        check_limit(limit, "entries")
        async with self._backend.tx(write=True) as tx:
            rows = await tx.all(
                "claim_digest_deliveries",
                now=now,
                lease=now + lease,
                limit=limit,
                digest_id=digest_id,
                effect=effect.value,
            )
            return _leased(rows)

    @finish_even_if_cancelled
    async def complete_deliveries(self, delivery_ids: Sequence[int], *, now: datetime) -> None:
        """Delivered, all of them, in one transaction."""
        if delivery_ids:
            async with self._backend.tx(write=True) as tx:
                await tx.execute("complete_deliveries", ids=_ids(delivery_ids), now=now)

    @finish_even_if_cancelled
    async def retry_deliveries(
        self, delivery_ids: Sequence[int], *, at: datetime, error: str
    ) -> None:
        """Release their leases; try them again at ``at`` (retry_delivery for several)."""
        if delivery_ids:
            async with self._backend.tx(write=True) as tx:
                await tx.execute(
                    "retry_deliveries", ids=_ids(delivery_ids), at=at, error=error[:2000]
                )

    @finish_even_if_cancelled
    async def defer_deliveries(self, delivery_ids: Sequence[int], *, at: datetime) -> None:
        """Not attempted (their channel is rate limited): release the leases, due again at
        ``at``, and the attempt their claim counted is not counted."""
        if delivery_ids:
            async with self._backend.tx(write=True) as tx:
                await tx.execute("defer_deliveries", ids=_ids(delivery_ids), at=at)

    # --- batches ------------------------------------------------------------------------------

    @finish_even_if_cancelled
    async def get_batch(self, batch_id: str) -> Batch:
        """Raises BatchNotFound."""
        async with self._backend.tx(write=False) as tx:
            row = await tx.one("select_batch", id=batch_id)
        if row is None:
            raise BatchNotFound(f"no batch has id {batch_id!r}")
        return batch_from_row(row)

    @finish_even_if_cancelled
    async def lease_batch(self, batch_id: str, *, now: datetime, lease: timedelta) -> bool:
        """Whether this worker now holds the batch until ``now + lease`` to post its digest: its
        window has ended (or it filled up), it is not posted, and no other worker holds it."""
        async with self._backend.tx(write=True) as tx:
            row = await tx.one("lease_batch", id=batch_id, now=now, lease=now + lease)
            return row is not None

    @finish_even_if_cancelled
    async def claim_batch_posts(
        self, batch_id: str, *, held: Sequence[int], now: datetime, lease: timedelta
    ) -> list[Delivery]:
        """Every due post of the batch's proposals but the entries ``held``, leased to the
        caller, who holds the batch (lease_batch): it alone posts them, whatever their leases."""
        async with self._backend.tx(write=True) as tx:
            rows = await tx.all(
                "claim_batch_posts",
                batch_id=batch_id,
                held=_ids(held),
                now=now,
                lease=now + lease,
            )
            return _leased(rows)

    @finish_even_if_cancelled
    async def finish_batch(self, batch_id: str) -> None:
        """The batch's digest went out: release it, and unless a post of it is still to be
        delivered (a retry, a proposal that joined as it went out), nobody posts it again."""
        async with self._backend.tx(write=True) as tx:
            await tx.execute("finish_batch", id=batch_id)
