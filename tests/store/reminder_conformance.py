"""Reminders before expiry and the one extension, as every Store backend must do them.

Part of the shared conformance suite: :class:`tests.store.conformance.StoreConformance` inherits
these tests, so every backend runs them.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from store.proposals import AlreadyDecided, Effect, NewProposal, NotApprovable, Status, Transitioned
from store.protocol import Store

__all__ = ["ReminderConformance"]

HOUR = timedelta(hours=1)


def _new(now: datetime, **changes: Any) -> NewProposal:
    """A pending proposal created ``now``, expiring in an hour, reminded at 80% (48 minutes)."""
    # Imported here: tests.store.conformance imports this module to inherit from it.
    from tests.store.conformance import new_proposal

    fields: dict[str, Any] = {"expires_at": now + HOUR, "remind_at": now + HOUR * 0.8}
    return new_proposal(now, **(fields | changes))


async def _effects(store: Store, now: datetime) -> list[tuple[str, Effect]]:
    """Every outbox entry due at ``now``, delivered in order: (proposal id, effect)."""
    delivered = []
    while batch := await store.claim_deliveries(now=now, limit=50, lease=timedelta(minutes=1)):
        for delivery in batch:
            delivered.append((delivery.proposal_id, delivery.effect))
            await store.complete_delivery(delivery.id, now=now)
    return delivered


async def _events(store: Store, proposal_id: str) -> list[str]:
    return [entry.event for entry in await store.audit_log(proposal_id)]


class ReminderConformance:
    """Mixed into StoreConformance, which provides the ``store`` and ``now`` fixtures."""

    # --- reminders ---------------------------------------------------------------------------

    async def test_due_reminders_are_sent_once_each_and_audited(
        self, store: Store, now: datetime
    ) -> None:
        start = now - HOUR * 0.9  # 54 minutes ago: 80% of an hour has passed
        due = _new(start)
        exactly_due = _new(now - HOUR, expires_at=now + HOUR, remind_at=now)
        unposted = _new(start, channel=None)  # asks nowhere: reminded, but nothing to post
        not_due = _new(now - HOUR * 0.5)
        expired = _new(now - 2 * HOUR)  # its reminder was due, but it expired meanwhile
        rejected = _new(start)
        never = _new(start, remind_at=None)
        for new in (due, exactly_due, unposted, not_due, expired, rejected, never):
            await store.create_proposal(new)
        await store.reject(rejected.id, actor="U1", reason="no", now=now - timedelta(minutes=1))
        await _effects(store, now)

        reminded = await store.remind_due(now=now)
        again = await store.remind_due(now=now)

        assert {p.id for p in reminded} == {due.id, exactly_due.id, unposted.id}
        assert all(p.reminded_at == now and p.status is Status.PENDING for p in reminded)
        assert again == []
        assert sorted(await _effects(store, now)) == sorted(
            [(due.id, Effect.SLACK_REMIND), (exactly_due.id, Effect.SLACK_REMIND)]
        )
        for new in (due, exactly_due, unposted):
            assert (await _events(store, new.id)).count("reminded") == 1
            stored = await store.get_proposal(new.id)
            assert (stored.reminded_at, stored.updated_at) == (now, new.created_at)
        for new in (not_due, expired, rejected, never):
            assert "reminded" not in await _events(store, new.id)
            assert (await store.get_proposal(new.id)).reminded_at is None
        [entry] = [e for e in await store.audit_log(due.id) if e.event == "reminded"]
        assert entry.actor == "reminder"
        assert entry.detail == {
            "remind_at": (start + HOUR * 0.8).isoformat(),
            "expires_at": (start + HOUR).isoformat(),
        }
        assert (await store.verify_audit()).ok

    async def test_a_reminder_comes_due_later_and_is_then_sent_once(
        self, store: Store, now: datetime
    ) -> None:
        new = _new(now)
        await store.create_proposal(new)

        early = await store.remind_due(now=now + timedelta(minutes=47))
        on_time = await store.remind_due(now=now + timedelta(minutes=48))
        later = await store.remind_due(now=now + timedelta(minutes=59))

        assert (early, [p.id for p in on_time], later) == ([], [new.id], [])

    async def test_remind_due_takes_at_most_limit(self, store: Store, now: datetime) -> None:
        for _ in range(5):
            await store.create_proposal(_new(now - HOUR * 0.9))

        first = await store.remind_due(now=now, limit=3)
        rest = await store.remind_due(now=now, limit=3)

        assert (len(first), len(rest)) == (3, 2)
        assert not {p.id for p in first} & {p.id for p in rest}

    async def test_concurrent_reminder_sweeps_remind_each_proposal_once(
        self, store: Store, now: datetime
    ) -> None:
        for _ in range(8):
            await store.create_proposal(_new(now - HOUR * 0.9))

        sweeps = await asyncio.gather(*(store.remind_due(now=now) for _ in range(4)))

        reminded = [p.id for sweep in sweeps for p in sweep]
        assert len(reminded) == len(set(reminded)) == 8
        assert sum(e.event == "reminded" for e in await store.audit_log()) == 8

    # --- the one extension -------------------------------------------------------------------

    async def test_extend_moves_the_expiry_once_names_who_and_updates_the_message(
        self, store: Store, now: datetime
    ) -> None:
        new = _new(now - timedelta(minutes=10))
        await store.create_proposal(new)
        await _effects(store, now)
        until = new.created_at + 2 * HOUR

        result = await store.extend(new.id, actor="U1", until=until, now=now)

        assert isinstance(result, Transitioned)
        stored = await store.get_proposal(new.id)
        assert result.proposal == stored
        assert (stored.status, stored.expires_at, stored.updated_at) == (
            Status.PENDING,
            until,
            now,
        )
        assert (stored.extended_by, stored.extended_at) == ("U1", now)
        [entry] = [e for e in await store.audit_log(new.id) if e.event == "extended"]
        assert entry.actor == "U1"
        previous = (new.created_at + HOUR).isoformat()
        assert entry.detail == {"from": previous, "to": until.isoformat()}
        assert await _effects(store, now) == [(new.id, Effect.SLACK_UPDATE)]
        assert (await store.verify_audit()).ok

    async def test_a_second_extension_is_refused_and_changes_nothing(
        self, store: Store, now: datetime
    ) -> None:
        new = _new(now)
        await store.create_proposal(new)
        await store.extend(new.id, actor="U1", until=now + 2 * HOUR, now=now)

        again = await store.extend(new.id, actor="U2", until=now + 3 * HOUR, now=now)

        assert isinstance(again, NotApprovable)
        assert "already extended" in again.reason and "U1" in again.reason
        stored = await store.get_proposal(new.id)
        assert (stored.expires_at, stored.extended_by) == (now + 2 * HOUR, "U1")
        assert (await _events(store, new.id)).count("extended") == 1

    async def test_concurrent_extensions_extend_once(self, store: Store, now: datetime) -> None:
        new = _new(now)
        await store.create_proposal(new)

        later = [now + HOUR + timedelta(minutes=i) for i in range(1, 9)]

        results = await asyncio.gather(
            *(store.extend(new.id, actor=f"U{i}", until=at, now=now) for i, at in enumerate(later))
        )

        [won] = [r for r in results if isinstance(r, Transitioned)]
        assert all(isinstance(r, NotApprovable) for r in results if r is not won)
        stored = await store.get_proposal(new.id)
        assert stored.expires_at == won.proposal.expires_at
        assert (await _events(store, new.id)).count("extended") == 1

    async def test_extend_refuses_expired_decided_and_not_later(
        self, store: Store, now: datetime
    ) -> None:
        expired = _new(now - 2 * HOUR)
        rejected = _new(now)
        pending = _new(now)
        for new in (expired, rejected, pending):
            await store.create_proposal(new)
        await store.reject(rejected.id, actor="U1", reason="no", now=now)

        late = await store.extend(expired.id, actor="U1", until=now + HOUR, now=now)
        decided = await store.extend(rejected.id, actor="U2", until=now + 2 * HOUR, now=now)
        sooner = await store.extend(pending.id, actor="U2", until=now + HOUR / 2, now=now)

        assert isinstance(late, NotApprovable) and "expired" in late.reason
        assert isinstance(decided, AlreadyDecided)
        assert isinstance(sooner, NotApprovable) and "not later" in sooner.reason
        for new in (expired, rejected, pending):
            stored = await store.get_proposal(new.id)
            assert (stored.expires_at, stored.extended_by) == (new.expires_at, None)
            assert "extended" not in await _events(store, new.id)

    async def test_a_reminder_not_yet_sent_moves_with_the_expiry(
        self, store: Store, now: datetime
    ) -> None:
        new = _new(now)  # reminded 12 minutes before its expiry
        await store.create_proposal(new)

        await store.extend(new.id, actor="U1", until=now + 2 * HOUR, now=now)

        stored = await store.get_proposal(new.id)
        assert stored.remind_at == now + 2 * HOUR - timedelta(minutes=12)
        assert await store.remind_due(now=now + timedelta(minutes=50)) == []
        [reminded] = await store.remind_due(now=now + timedelta(minutes=108))
        assert reminded.id == new.id

    async def test_a_reminder_already_sent_is_not_sent_again_after_an_extension(
        self, store: Store, now: datetime
    ) -> None:
        new = _new(now)
        await store.create_proposal(new)
        at = now + timedelta(minutes=50)
        await store.remind_due(now=at)

        await store.extend(new.id, actor="U1", until=now + 2 * HOUR, now=at)

        stored = await store.get_proposal(new.id)
        assert (stored.remind_at, stored.reminded_at) == (new.remind_at, at)
        assert await store.remind_due(now=now + timedelta(minutes=110)) == []

    async def test_an_extended_proposal_outlives_its_old_expiry_and_expires_at_the_new_one(
        self, store: Store, now: datetime
    ) -> None:
        kept, approved = _new(now), _new(now)
        for new in (kept, approved):
            await store.create_proposal(new)
            await store.extend(new.id, actor="U1", until=now + 2 * HOUR, now=now)
        after_old_expiry = now + HOUR + timedelta(minutes=5)

        assert await store.expire_due(now=after_old_expiry) == []
        claimed = await store.claim_for_execution(
            approved.id,
            actor="U2",
            now=after_old_expiry,
            binding_hash=approved.binding_hash,
            lease_until=after_old_expiry + timedelta(minutes=5),
        )
        [expired] = await store.expire_due(now=now + 2 * HOUR)

        assert isinstance(claimed, Transitioned)
        assert claimed.proposal.status is Status.EXECUTING
        assert (expired.id, expired.status) == (kept.id, Status.EXPIRED)
