"""The behaviour every DigestStore backend must have, written against the protocols only.

A backend's test module subclasses :class:`DigestConformance` and provides a ``store`` fixture
that yields an empty Store; its digests come from ``store.digests()``.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from store.base import StoreError
from store.digests import DigestNotFound, NewDigest, new_digest_id
from store.proposals import Delivery, Effect, ProposalNotFound, Status, Transitioned
from store.protocol import Store
from tests.store.conformance import LEASE, new_proposal

__all__ = ["NOW", "DigestConformance"]

NOW = datetime(2031, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)
CHANNEL = "C0FINANCE"


def digest(**changes: Any) -> NewDigest:
    fields: dict[str, Any] = {
        "id": new_digest_id(),
        "channel": CHANNEL,
        "ts": "1700000000.000100",
        "operation": "payments.refund",
        "requested_by": "U0123",
        "created_at": NOW,
    }
    fields.update(changes)
    return NewDigest(**fields)


async def _submitted(store: Store, count: int, **changes: Any) -> list[str]:
    """``count`` pending proposals of one channel, operation and requester, a second apart."""
    ids = []
    for n in range(count):
        created, _ = await store.create_proposal(
            new_proposal(NOW + timedelta(seconds=n), **changes)
        )
        ids.append(created.id)
    return ids


async def _posts(store: Store, ids: list[str]) -> list[Delivery]:
    later = NOW + timedelta(minutes=1)
    claimed = await store.claim_deliveries(now=later, limit=100, lease=LEASE)
    return [d for d in claimed if d.effect is Effect.SLACK_POST and d.proposal_id in ids]


class DigestConformance:
    """Subclass with a ``store`` fixture yielding an empty Store of the backend under test."""

    async def test_attaching_a_digest_shows_each_item_audits_it_and_completes_the_posts(
        self, store: Store
    ) -> None:
        ids = await _submitted(store, 3)
        posts = await _posts(store, ids)
        new = digest()

        await store.digests().attach_digest(new, ids, deliveries=[d.id for d in posts], now=NOW)

        stored = await store.digests().get_digest(new.id)
        assert [p.id for p in stored.items] == ids
        assert stored.model_dump(exclude={"items"}) == new.model_dump()
        for item in ids:
            proposal = await store.get_proposal(item)
            assert (proposal.digest_id, proposal.slack_channel, proposal.slack_ts) == (
                new.id,
                CHANNEL,
                new.ts,
            )
            [posted] = [e for e in await store.audit_log(item) if e.event == "posted_to_slack"]
            assert posted.detail == {"channel": CHANNEL, "ts": new.ts, "digest_id": new.id}
        assert await store.pending_deliveries() == 0  # the posts are done
        assert (await store.verify_audit()).ok

    async def test_attaching_again_adds_only_items_not_shown_yet(self, store: Store) -> None:
        ids = await _submitted(store, 3)
        new = digest()
        await store.digests().attach_digest(new, ids[:2], deliveries=[], now=NOW)

        await store.digests().attach_digest(new, ids, deliveries=[], now=NOW)

        again = await store.digests().get_digest(new.id)
        assert [p.id for p in again.items] == ids
        for item in ids:
            posted = [e for e in await store.audit_log(item) if e.event == "posted_to_slack"]
            assert len(posted) == 1

    async def test_an_item_shown_by_another_message_stays_there(self, store: Store) -> None:
        [alone, other] = await _submitted(store, 2)
        await store.attach_message(alone, CHANNEL, "1700000000.000001")

        new = digest()
        await store.digests().attach_digest(new, [alone, other], deliveries=[], now=NOW)

        stored = await store.digests().get_digest(new.id)
        assert [p.id for p in stored.items] == [other]
        shown = await store.get_proposal(alone)
        assert (shown.digest_id, shown.slack_ts) == (None, "1700000000.000001")
        assert shown.shown_at is not None and shown.shown_at != NOW  # its own post's moment
        assert (await store.get_proposal(other)).shown_at == NOW  # shown by the digest

    async def test_an_item_of_another_requester_is_refused_and_nothing_changes(
        self, store: Store
    ) -> None:
        mine = await _submitted(store, 2)
        [theirs] = await _submitted(store, 1, requested_by="U0OTHER")
        new = digest()

        with pytest.raises(StoreError, match="shares its operation and requester"):
            await store.digests().attach_digest(new, [*mine, theirs], deliveries=[], now=NOW)

        for item in [*mine, theirs]:
            assert (await store.get_proposal(item)).digest_id is None
        with pytest.raises(DigestNotFound):
            await store.digests().get_digest(new.id)

    async def test_an_unknown_item_is_refused_and_nothing_changes(self, store: Store) -> None:
        [item] = await _submitted(store, 1)
        new = digest()

        with pytest.raises(ProposalNotFound, match="cs_nothing"):
            await store.digests().attach_digest(new, [item, "cs_nothing"], deliveries=[], now=NOW)

        assert (await store.get_proposal(item)).digest_id is None

    async def test_a_digest_id_names_one_message(self, store: Store) -> None:
        ids = await _submitted(store, 2)
        new = digest()
        await store.digests().attach_digest(new, ids[:1], deliveries=[], now=NOW)

        with pytest.raises(StoreError, match=new.id):
            await store.digests().attach_digest(
                new.model_copy(update={"ts": "1700000000.999999"}), ids[1:], deliveries=[], now=NOW
            )

    async def test_similar_posts_are_leased_once_and_others_are_not(self, store: Store) -> None:
        similar = await _submitted(store, 4)
        other_requester = await _submitted(store, 1, requested_by="U0OTHER")
        other_channel = await _submitted(store, 1, channel="C0ELSEWHERE")
        other_operation = await _submitted(store, 1, operation="payments.other")
        [decided] = await _submitted(store, 1)
        await store.reject(decided, actor="U0APPROVER", reason="no", now=NOW)
        later = NOW + timedelta(minutes=1)
        digests = store.digests()

        async def claim(limit: int) -> list[Delivery]:
            return await digests.claim_similar_posts(
                channel=CHANNEL,
                operation="payments.refund",
                requested_by="U0123",
                now=later,
                limit=limit,
                lease=LEASE,
            )

        first, second, third = await claim(3), await claim(3), await claim(3)

        assert [d.proposal_id for d in first + second] == similar
        assert {d.effect for d in first + second} == {Effect.SLACK_POST}
        assert [d.attempts for d in first + second] == [1, 1, 1, 1]
        assert third == []
        left = await store.claim_deliveries(now=later, limit=100, lease=LEASE)
        posts = {d.proposal_id for d in left if d.effect is Effect.SLACK_POST}
        assert posts == {*other_requester, *other_channel, *other_operation, decided}
        with pytest.raises(ValueError, match="limit"):
            await claim(0)

    async def test_concurrent_fills_never_lease_one_post_twice(self, store: Store) -> None:
        ids = await _submitted(store, 12)
        later = NOW + timedelta(minutes=1)

        batches = await asyncio.gather(
            *(
                store.digests().claim_similar_posts(
                    channel=CHANNEL,
                    operation="payments.refund",
                    requested_by="U0123",
                    now=later,
                    limit=3,
                    lease=LEASE,
                )
                for _ in range(8)
            )
        )

        leased = [d.proposal_id for batch in batches for d in batch]
        assert sorted(leased) == sorted(ids)

    async def test_a_digests_updates_are_leased_together_in_lane_order(self, store: Store) -> None:
        ids = await _submitted(store, 3)
        new = digest()
        posts = await _posts(store, ids)
        await store.digests().attach_digest(new, ids, deliveries=[d.id for d in posts], now=NOW)
        for item in ids[:2]:
            result = await store.reject(item, actor="U0APPROVER", reason="no", now=NOW)
            assert isinstance(result, Transitioned)
        later = NOW + timedelta(minutes=2)

        updates = await store.digests().claim_digest_deliveries(
            new.id, Effect.SLACK_UPDATE, now=later, limit=10, lease=LEASE
        )
        replies = await store.digests().claim_digest_deliveries(
            new.id, Effect.SLACK_REPLY, now=later, limit=10, lease=LEASE
        )

        assert sorted(d.proposal_id for d in updates) == sorted(ids[:2])
        assert {d.status for d in updates} == {Status.REJECTED}
        assert replies == []  # each waits behind its proposal's update
        await store.digests().complete_deliveries([d.id for d in updates], now=later)
        replies = await store.digests().claim_digest_deliveries(
            new.id, Effect.SLACK_REPLY, now=later, limit=10, lease=LEASE
        )
        assert sorted(d.proposal_id for d in replies) == sorted(ids[:2])

    async def test_retried_entries_wait_and_deferred_ones_do_not_count_an_attempt(
        self, store: Store
    ) -> None:
        ids = await _submitted(store, 4)
        posts = await _posts(store, ids)
        assert [d.attempts for d in posts] == [1, 1, 1, 1]
        later = NOW + timedelta(minutes=1)
        retry_at, defer_at = later + timedelta(seconds=5), later + timedelta(seconds=9)
        digests = store.digests()

        await digests.retry_deliveries([d.id for d in posts[:2]], at=retry_at, error="429")
        await digests.defer_deliveries([d.id for d in posts[2:]], at=defer_at)

        def posts_of(claimed: list[Delivery]) -> dict[str, int]:
            return {d.proposal_id: d.attempts for d in claimed if d.effect is Effect.SLACK_POST}

        assert posts_of(await store.claim_deliveries(now=later, limit=100, lease=LEASE)) == {}
        at_retry = await store.claim_deliveries(now=retry_at, limit=100, lease=LEASE)
        assert posts_of(at_retry) == {ids[0]: 2, ids[1]: 2}
        at_defer = await store.claim_deliveries(now=defer_at, limit=100, lease=LEASE)
        assert posts_of(at_defer) == {ids[2]: 1, ids[3]: 1}  # the deferral was no attempt

    async def test_proposals_are_read_in_the_order_asked(self, store: Store) -> None:
        ids = await _submitted(store, 3)

        found = await store.digests().get_proposals([ids[2], "cs_unknown", ids[0]])

        assert [p.id for p in found] == [ids[2], ids[0]]
        assert await store.digests().get_proposals([]) == []
