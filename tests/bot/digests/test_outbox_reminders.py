"""A digest's one reminder (bot/digests/outbox.py, DigestOutbox.split): the reminders of its
items are due together and one of them is posted, for the items still pending; on a real SQLite
store, with the entries its sweep queued and the proposals as the outbox round reads them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.digests.outbox import DigestOutbox
from bot.outbound.outbox import RetryPolicy
from bot.settings.digests import DigestSettings
from bot.slack.publish import SlackPublisher, make_web_client
from store.digests import NewDigest
from store.proposals import Delivery, Effect, Proposal
from store.sqlite import SqliteStore
from tests.store.conformance import new_proposal

NOW = datetime(2031, 3, 14, 15, 9, 26, tzinfo=UTC)
LEASE = timedelta(seconds=60)
REMINDED = NOW + timedelta(minutes=31)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    store = await SqliteStore.open(tmp_path / "countersign.sqlite")
    try:
        yield store
    finally:
        await store.close()


def outbox(store: SqliteStore) -> DigestOutbox:
    publisher = SlackPublisher(make_web_client("xoxb-test", "http://127.0.0.1:9"), store, _clock)
    return DigestOutbox(
        store, publisher, _clock, settings=DigestSettings(), policy=RetryPolicy(), lease=LEASE
    )


def _clock() -> datetime:
    return REMINDED


async def reminders_due(store: SqliteStore, count: int) -> list[Delivery]:
    """``count`` proposals shown in one digest, their reminders queued by the sweep and claimed
    by an outbox round (oldest first)."""
    created = [
        (await store.create_proposal(new_proposal(NOW, remind_at=NOW + timedelta(minutes=30))))[0]
        for _ in range(count)
    ]
    posts = await store.claim_deliveries(now=NOW, limit=100, lease=LEASE)
    digest = NewDigest(
        id="dg_reminded",
        channel="C0FINANCE",
        ts="1700000000.000100",
        operation="payments.refund",
        requested_by="U0123",
        created_at=NOW,
    )
    await store.digests().attach_digest(
        digest, [p.id for p in created], deliveries=[d.id for d in posts], now=NOW
    )
    assert len(await store.remind_due(now=REMINDED)) == count
    due = await store.claim_deliveries(now=REMINDED, limit=100, lease=LEASE)
    reminders = sorted((d for d in due if d.effect is Effect.SLACK_REMIND), key=lambda d: d.id)
    assert len(reminders) == count
    return reminders


async def read(store: SqliteStore, due: list[Delivery]) -> dict[str, Proposal]:
    """The proposals as the outbox round reads them, after its claim."""
    found = await store.digests().get_proposals([d.proposal_id for d in due])
    return {p.id: p for p in found}


async def test_the_reminder_goes_with_an_item_still_pending_when_the_first_was_decided(
    store: SqliteStore,
) -> None:
    first, second, third = await reminders_due(store, 3)
    # decided between the sweep and the delivery: its own reminder would post nothing
    await store.reject(first.proposal_id, actor="U0REJECTER", reason="dup", now=REMINDED)

    due = [first, second, third]
    jobs, rest = await outbox(store).split(due, full=False, proposals=await read(store, due))

    assert rest == [second]  # delivered by the publisher: the digest's reminder
    [covered] = jobs  # the others are marked done, posted by the one that carries it
    assert sorted(d.id for d in covered.deliveries) == [first.id, third.id]


async def test_the_first_pending_item_carries_it_and_none_when_none_is_pending(
    store: SqliteStore,
) -> None:
    first, second = await reminders_due(store, 2)

    jobs, rest = await outbox(store).split(
        [first, second], full=False, proposals=await read(store, [first, second])
    )
    assert rest == [first]
    assert [[d.id for d in job.deliveries] for job in jobs] == [[second.id]]

    for delivery in (first, second):
        await store.reject(delivery.proposal_id, actor="U0REJECTER", reason="no", now=REMINDED)
    jobs, rest = await outbox(store).split(
        [first, second], full=False, proposals=await read(store, [first, second])
    )
    assert rest == []
    assert [sorted(d.id for d in job.deliveries) for job in jobs] == [[first.id, second.id]]
