"""The behaviour every backend's batches must have (store/proposals/batches.py), written against the
protocols only. A backend's test module subclasses :class:`BatchConformance` and provides a
``store`` fixture yielding an empty Store, and ``second_store``: another Store over the same
database (a second instance)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from store.proposals import BatchRequest, Effect, NewProposal
from store.protocol import Store
from tests.store.conformance import LEASE, new_proposal

__all__ = ["BatchConformance"]

NOW = datetime(2031, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)
WINDOW = timedelta(minutes=30)
KEY = '["C0FINANCE","refunds-ask","payments.refund",["finance"],1800,3]'


def waiting(at: datetime, *, key: str = KEY, most: int = 3, **changes: Any) -> NewProposal:
    """A proposal of a rule with a 30-minute window, created at ``at``, shown when a window
    opened then would close; its expiry an hour after that."""
    shown = at + WINDOW
    return new_proposal(
        at,
        batch=BatchRequest(key=key, window=WINDOW, max=most),
        shown_after=shown,
        expires_at=shown + timedelta(hours=1),
        remind_at=shown + timedelta(minutes=48),
        backup_at=shown + timedelta(minutes=30),
        backup_roles=("finance-leads",),
        **changes,
    )


async def _posts_due(store: Store, at: datetime) -> list[str]:
    claimed = await store.claim_deliveries(now=at, limit=100, lease=LEASE)
    return [d.proposal_id for d in claimed if d.effect is Effect.SLACK_POST]


class BatchConformance:
    async def test_proposals_join_one_batch_and_are_shown_when_it_closes(
        self, store: Store
    ) -> None:
        first, _ = await store.create_proposal(waiting(NOW))
        second, _ = await store.create_proposal(waiting(NOW + timedelta(minutes=10)))

        assert first.batch_id is not None and first.batch_id == second.batch_id
        assert first.shown_after == second.shown_after == NOW + WINDOW
        # the second joined a batch closing 20 minutes after it: all its times moved with it
        assert second.expires_at == NOW + WINDOW + timedelta(hours=1)
        assert second.remind_at == NOW + WINDOW + timedelta(minutes=48)
        assert second.backup_at == NOW + WINDOW + timedelta(minutes=30)
        assert await _posts_due(store, NOW + WINDOW - timedelta(seconds=1)) == []
        assert sorted(await _posts_due(store, NOW + WINDOW)) == sorted([first.id, second.id])
        # as created, so as stored: its batch and the times the batch moved, in UTC
        stored = await store.get_proposal(second.id)
        assert second.model_dump_json() == stored.model_dump_json()

    async def test_the_proposal_that_fills_a_batch_brings_the_others_forward(
        self, store: Store
    ) -> None:
        ids = []
        for n in range(3):
            created, _ = await store.create_proposal(waiting(NOW + timedelta(minutes=n)))
            ids.append(created.id)

        batch = await store.digests().get_batch(str((await store.get_proposal(ids[0])).batch_id))
        assert (batch.size, batch.status, batch.closes_at) == (
            3,
            "closed",
            NOW + timedelta(minutes=2),
        )
        assert sorted(await _posts_due(store, NOW + timedelta(minutes=2))) == sorted(ids)
        later, _ = await store.create_proposal(waiting(NOW + timedelta(minutes=3)))
        assert later.batch_id not in (None, batch.id)  # a new batch, a window of its own

    async def test_a_lapsed_window_opens_a_new_batch(self, store: Store) -> None:
        first, _ = await store.create_proposal(waiting(NOW))
        late, _ = await store.create_proposal(waiting(NOW + WINDOW + timedelta(seconds=1)))

        assert late.batch_id != first.batch_id
        assert late.shown_after == NOW + 2 * WINDOW + timedelta(seconds=1)

    async def test_other_keys_never_share_a_batch(self, store: Store) -> None:
        ours, _ = await store.create_proposal(waiting(NOW))
        theirs, _ = await store.create_proposal(waiting(NOW, key=KEY.replace("refunds", "x")))

        assert ours.batch_id != theirs.batch_id

    async def test_a_replayed_submission_joins_nothing(self, store: Store) -> None:
        new = waiting(NOW)
        first, created = await store.create_proposal(new)
        again, created_again = await store.create_proposal(new.model_copy(update={"id": "x" * 32}))

        assert (created, created_again) == (True, False)
        assert again.id == first.id
        batch = await store.digests().get_batch(str(first.batch_id))
        assert batch.size == 1

    async def test_concurrent_proposals_fill_batches_exactly(self, store: Store) -> None:
        made = await asyncio.gather(
            *(store.create_proposal(waiting(NOW, most=4)) for _ in range(10))
        )

        sizes: dict[str | None, int] = {}
        for proposal, _ in made:
            sizes[proposal.batch_id] = sizes.get(proposal.batch_id, 0) + 1
        assert sorted(sizes.values()) == [2, 4, 4]

    async def test_one_worker_at_a_time_leases_a_closed_batch(
        self, store: Store, second_store: Store
    ) -> None:
        created, _ = await store.create_proposal(waiting(NOW))
        batch_id = str(created.batch_id)
        early = NOW + timedelta(minutes=1)
        closed = NOW + WINDOW

        assert not await store.digests().lease_batch(batch_id, now=early, lease=LEASE)
        leases = await asyncio.gather(
            store.digests().lease_batch(batch_id, now=closed, lease=LEASE),
            second_store.digests().lease_batch(batch_id, now=closed, lease=LEASE),
        )
        assert sorted(leases) == [False, True]
        [post] = await store.digests().claim_batch_posts(batch_id, held=[], now=closed, lease=LEASE)
        await store.digests().complete_deliveries([post.id], now=closed)
        await store.digests().finish_batch(batch_id)
        assert not await store.digests().lease_batch(batch_id, now=closed + LEASE, lease=LEASE)
        assert (await store.digests().get_batch(batch_id)).status == "posted"

    async def test_the_batch_holder_claims_every_post_whoever_leased_them(
        self, store: Store, second_store: Store
    ) -> None:
        ids = [(await store.create_proposal(waiting(NOW)))[0].id for _ in range(2)]
        closed = NOW + WINDOW
        # another instance's round leased one of the posts
        [taken, *_] = await second_store.claim_deliveries(now=closed, limit=1, lease=LEASE)
        batch_id = str((await store.get_proposal(ids[0])).batch_id)

        assert await store.digests().lease_batch(batch_id, now=closed, lease=LEASE)
        claimed = await store.digests().claim_batch_posts(
            batch_id, held=[], now=closed, lease=LEASE
        )

        assert sorted(d.proposal_id for d in claimed) == sorted(ids)
        assert taken.id in {d.id for d in claimed}
        again = await store.digests().claim_batch_posts(
            batch_id, held=[d.id for d in claimed], now=closed, lease=LEASE
        )
        assert again == []

    async def test_a_proposal_nobody_decided_is_handed_over_once_with_its_audit_and_update(
        self, store: Store, second_store: Store
    ) -> None:
        created, _ = await store.create_proposal(waiting(NOW))
        assert created.backup_at is not None
        before = created.backup_at - timedelta(seconds=1)

        assert await store.hand_over_due(now=before) == []
        handed = await asyncio.gather(
            store.hand_over_due(now=created.backup_at),
            second_store.hand_over_due(now=created.backup_at),
        )

        assert sorted(len(h) for h in handed) == [0, 1]
        proposal = await store.get_proposal(created.id)
        assert proposal.handed_over_at == created.backup_at
        assert proposal.status.value == "pending"
        [entry] = [e for e in await store.audit_log(created.id) if e.event == "handed_over"]
        assert entry.detail["backup_roles"] == ["finance-leads"]
        assert await store.hand_over_due(now=created.backup_at + LEASE) == []
        updates = [
            d
            for d in await store.claim_deliveries(now=NOW + 2 * WINDOW, limit=100, lease=LEASE)
            if d.effect is Effect.SLACK_UPDATE and d.proposal_id == created.id
        ]
        assert len(updates) == 0  # behind its post in the Slack lane, which is not delivered

    async def test_a_decided_or_expired_proposal_is_never_handed_over(self, store: Store) -> None:
        created, _ = await store.create_proposal(waiting(NOW))
        assert created.expires_at is not None

        assert await store.hand_over_due(now=created.expires_at) == []

    async def test_a_batch_with_a_post_still_to_deliver_is_released_not_finished(
        self, store: Store
    ) -> None:
        ids = [(await store.create_proposal(waiting(NOW)))[0].id for _ in range(2)]
        closed = NOW + WINDOW
        batch_id = str((await store.get_proposal(ids[0])).batch_id)
        assert await store.digests().lease_batch(batch_id, now=closed, lease=LEASE)
        claimed = await store.digests().claim_batch_posts(
            batch_id, held=[], now=closed, lease=LEASE
        )
        await store.digests().complete_deliveries([claimed[0].id], now=closed)

        await store.digests().finish_batch(batch_id)  # the other post failed: to retry

        assert (await store.digests().get_batch(batch_id)).status == "closed"
        assert await store.digests().lease_batch(batch_id, now=closed, lease=LEASE)
        await store.digests().complete_deliveries([claimed[1].id], now=closed)
        await store.digests().finish_batch(batch_id)
        assert (await store.digests().get_batch(batch_id)).status == "posted"

    async def test_a_proposal_whose_clock_read_earlier_is_shown_when_its_batch_closes(
        self, store: Store
    ) -> None:
        opener, _ = await store.create_proposal(waiting(NOW + timedelta(milliseconds=5)))
        earlier, _ = await store.create_proposal(waiting(NOW))  # another instance, a moment back

        assert earlier.batch_id == opener.batch_id
        assert earlier.shown_after == opener.shown_after == NOW + timedelta(milliseconds=5) + WINDOW
        assert earlier.expires_at == earlier.shown_after + timedelta(hours=1)
