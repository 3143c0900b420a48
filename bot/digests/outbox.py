"""The outbox's digests: similar posts due together go out as one message, and the updates and
replies of a digest's items as one chat.update and one thread reply.

The worker (bot/outbound/outbox.py) hands every round's claim to :meth:`DigestOutbox.split`. Posts
of pending proposals with the same channel, operation and requester become one job: when the round
found little else to do it first waits ``digest_window_seconds`` for similar proposals still
arriving, then leases the similar posts now due (up to ``digest_max``) and posts them as one digest,
or one by one below ``digest_min``. The updates (replies) of one digest's items become one job that
renders the whole digest once (posts one reply listing each item).

A digest's message carries its id and its items' ids in its metadata, and a reply the ids of the
entries it delivers, so after an answer that was lost the next attempt finds what was posted
instead of posting twice. When Slack answers 429 for a channel, nothing more is sent there until
its Retry-After has passed: what falls due meanwhile is deferred (no attempt counted) to that
moment, and goes out together then.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from datetime import datetime, timedelta
from functools import partial
from typing import Any, NamedTuple

from bot.outbound.outbox import Interrupted, Job, RetryPolicy
from bot.render import digest as render_digest
from bot.render.digest_reply import digest_reply
from bot.settings.digests import DIGEST_MAX, DigestSettings
from bot.slack.publish import METADATA_EVENT, DeliveryFailed, SlackPublisher
from store.base import StoreUnavailable
from store.digests import Digest, NewDigest, new_digest_id
from store.proposals import Delivery, Effect, Proposal, Status
from store.protocol import Store

__all__ = ["DIGEST_EVENT", "DIGEST_REPLY_EVENT", "DigestOutbox", "digest_chunks", "shown_in"]

log = logging.getLogger(__name__)

#: What a digest message carries in its metadata: its id and its items' ids (space-separated).
DIGEST_EVENT = "countersign_digest"
#: ... and a digest's thread reply: the digest and the outbox entries it delivers.
DIGEST_REPLY_EVENT = "countersign_digest_reply"

_POST, _UPDATE, _REPLY = Effect.SLACK_POST, Effect.SLACK_UPDATE, Effect.SLACK_REPLY
_REMIND = Effect.SLACK_REMIND


class Similar(NamedTuple):
    """What the items of one digest share: a channel and an operation, and a requester or a
    batch (store/proposals/batches.py: then requested_by is None when its items have several)."""

    channel: str
    operation: str
    requested_by: str | None
    batch_id: str | None = None

    def digest(self, digest_id: str, ts: str, created_at: datetime) -> NewDigest:
        """The record of these items' digest ``digest_id``, posted as message ``ts``."""
        return NewDigest(id=digest_id, ts=ts, created_at=created_at, **self._asdict())


def shown_in(message: dict[str, Any]) -> dict[str, str | None]:
    """The proposals a Slack message shows, by its metadata: id -> its digest's id (None when
    the message is the proposal's own)."""
    metadata = message.get("metadata") or {}
    payload = metadata.get("event_payload") or {}
    if metadata.get("event_type") == METADATA_EVENT and isinstance(payload.get("proposal_id"), str):
        return {payload["proposal_id"]: None}
    if metadata.get("event_type") == DIGEST_EVENT and isinstance(payload.get("digest_id"), str):
        return dict.fromkeys(str(payload.get("proposal_ids", "")).split(), payload["digest_id"])
    return {}


def digest_chunks(count: int, most: int) -> list[int]:
    """Sizes of about equal digests for ``count`` similar posts, none above ``most``."""
    parts = -(-count // most)
    return [count // parts + (1 if n < count % parts else 0) for n in range(parts)]


class DigestOutbox:
    """Groups and delivers the entries of similar posts and of digests (OutboxWorker's
    Coalescer); it settles every entry it takes."""

    def __init__(
        self,
        store: Store,
        publisher: SlackPublisher,
        clock: Callable[[], datetime],
        *,
        settings: DigestSettings,
        policy: RetryPolicy,
        lease: timedelta,
    ) -> None:
        self._store = store
        self._digests = store.digests()
        self._publisher = publisher
        self._clock = clock
        self.settings = settings
        self._policy = policy  #: the worker's own: the same waits after the same failures
        self._lease = lease
        #: (Web API method, channel) -> until when Slack asked to send nothing more there
        self._blocked: dict[tuple[str, str], datetime] = {}

    async def split(
        self, due: Sequence[Delivery], *, full: bool, proposals: Mapping[str, Proposal]
    ) -> tuple[list[Job], list[Delivery]]:
        posts: dict[Similar, list[Delivery]] = {}
        batches: dict[str, list[Delivery]] = {}
        follow_ups: dict[tuple[str, Effect], list[Delivery]] = {}
        reminders: dict[str, list[Delivery]] = {}
        rest: list[Delivery] = []
        for delivery in due:
            proposal = proposals.get(delivery.proposal_id)
            if proposal is None:
                rest.append(delivery)
            elif delivery.effect is _POST and proposal.batch_id is not None and _showable(proposal):
                batches.setdefault(proposal.batch_id, []).append(delivery)
            elif delivery.effect is _POST and self.settings.digests and _showable(proposal):
                assert proposal.channel is not None
                key = Similar(proposal.channel, proposal.operation, proposal.requested_by)
                posts.setdefault(key, []).append(delivery)
            elif delivery.effect in (_UPDATE, _REPLY) and proposal.digest_id is not None:
                follow_ups.setdefault((proposal.digest_id, delivery.effect), []).append(delivery)
            elif delivery.effect is _REMIND and proposal.digest_id is not None:
                reminders.setdefault(proposal.digest_id, []).append(delivery)
            else:
                rest.append(delivery)
        jobs = [
            Job(tuple(held), partial(self._post_similar, key, held, full=full))
            for key, held in posts.items()
        ]
        jobs += [
            Job(tuple(held), partial(self._post_batch, batch_id, held))
            for batch_id, held in batches.items()
        ]
        # a digest's update and reply, leased together, go in that order in one job
        by_digest: dict[str, dict[Effect, list[Delivery]]] = {}
        for (digest_id, effect), held in follow_ups.items():
            by_digest.setdefault(digest_id, {})[effect] = held
        jobs += [
            Job(
                tuple(d for held in effects.values() for d in held),
                partial(self._follow_ups, digest_id, effects),
            )
            for digest_id, effects in by_digest.items()
        ]
        # Items of one digest were asked together and expire together: their thread gets one
        # reminder (for the pending items, naming who can approve), not one per item. An item
        # still pending carries it: the publisher posts nothing for a decided one, so an item
        # decided since the sweep would leave the others unreminded. None pending: none.
        for held in reminders.values():
            ordered = sorted(held, key=lambda d: d.id)
            carrier = next(
                (d for d in ordered if proposals[d.proposal_id].status is Status.PENDING), None
            )
            others = [d for d in ordered if d is not carrier]
            if carrier is not None:
                rest.append(carrier)
            if others:
                jobs.append(Job(tuple(others), partial(self._covered, others)))
        return jobs, rest

    async def _covered(self, held: list[Delivery]) -> None:
        """Entries another entry of the same digest delivers for them: done."""
        await self._digests.complete_deliveries([d.id for d in held], now=self._clock())

    # --- posts ----------------------------------------------------------------------------------

    async def _post_batch(self, batch_id: str, held: list[Delivery]) -> None:
        """Post a closed batch as one digest: the worker that leases the batch posts every post
        of it (whoever claimed them), so several instances post it once."""
        try:
            now = self._clock()
            if not await self._digests.lease_batch(batch_id, now=now, lease=self._lease):
                batch = await self._digests.get_batch(batch_id)
                if batch.status != "posted":
                    return  # another worker holds it and posts these too; our leases lapse
                # joined just as the batch went out: shown, still as the batch's
                similar = await self._similar(held)
                await self._post_held(similar._replace(batch_id=batch_id), held)
                return
            held = held + await self._digests.claim_batch_posts(
                batch_id, held=[d.id for d in held], now=now, lease=self._lease
            )
            similar = await self._similar(held)
            await self._post_held(similar._replace(batch_id=batch_id), held)
            await self._digests.finish_batch(batch_id)
        except StoreUnavailable as error:  # an outage: the outbox settles them once it is back
            raise Interrupted(held) from error
        except Exception as error:  # a bug: retry as a transient failure
            log.exception("posting batch %s failed", batch_id)
            await self._failed(held, DeliveryFailed(f"{type(error).__name__}: {error}"))

    async def _similar(self, held: list[Delivery]) -> Similar:
        """What the proposals of ``held`` (of one batch) share."""
        found = await self._digests.get_proposals([d.proposal_id for d in held])
        first = found[0]
        assert first.channel is not None  # a batch is of one channel
        requesters = {p.requested_by for p in found}
        requested_by = first.requested_by if len(requesters) == 1 else None
        return Similar(first.channel, first.operation, requested_by)

    async def _post_similar(self, similar: Similar, held: list[Delivery], *, full: bool) -> None:
        """Gather the similar posts due now and post them: digests, or one message each."""
        channel, operation, requested_by, _ = similar
        assert requested_by is not None  # similar posts share their requester
        try:
            until = self._blocked_until("chat.postMessage", channel)
            if until is not None:  # they go out together with the rest when Slack allows
                await self._digests.defer_deliveries([d.id for d in held], at=until)
                return
            waits = (
                not full
                and self.settings.digest_window_seconds > 0
                and all(d.attempts == 1 for d in held)
            )
            if waits:  # a post found alone: the rest of a batch may be arriving right now
                await asyncio.sleep(self.settings.digest_window_seconds)
            room = self.settings.digest_max - len(held)
            if (waits or full) and room > 0:
                held = held + await self._digests.claim_similar_posts(
                    channel=channel,
                    operation=operation,
                    requested_by=requested_by,
                    now=self._clock(),
                    limit=room,
                    lease=self._lease,
                )
            await self._post_held(similar, held)
        except StoreUnavailable as error:  # an outage: the outbox settles them once it is back
            raise Interrupted(held) from error
        except Exception as error:  # a bug: retry as a transient failure
            log.exception("posting %d similar proposals in %s failed", len(held), channel)
            await self._failed(held, DeliveryFailed(f"{type(error).__name__}: {error}"))

    async def _post_held(self, similar: Similar, held: list[Delivery]) -> None:
        channel = similar[0]
        until = self._blocked_until("chat.postMessage", channel)
        if until is not None:
            await self._digests.defer_deliveries([d.id for d in held], at=until)
            return
        current = {
            p.id: p for p in await self._digests.get_proposals([d.proposal_id for d in held])
        }
        showable = [d for d in held if _showable(current[d.proposal_id])]
        # decided or shown meanwhile: nothing to post (as SlackPublisher.deliver would find)
        kept = {d.id for d in showable}
        shown = [d.id for d in held if d.id not in kept]
        await self._digests.complete_deliveries(shown, now=self._clock())
        if any(d.attempts > 1 for d in showable):  # an earlier attempt may have posted them
            showable = await self._attach_found(similar, showable, current)
        batched = similar.batch_id is not None
        if len(showable) < (2 if batched else self.settings.digest_min):
            for delivery in showable:
                proposal = current[delivery.proposal_id]
                await self._settle(
                    [delivery], "chat.postMessage", channel, self._one(delivery, proposal)
                )
            return
        start = 0
        most = DIGEST_MAX if batched else self.settings.digest_max  # a batch: one digest
        for size in digest_chunks(len(showable), most):
            chunk = showable[start : start + size]
            start += size
            items = [current[d.proposal_id] for d in chunk]
            await self._settle(
                chunk, "chat.postMessage", channel, self._digest(similar, chunk, items)
            )

    def _one(self, delivery: Delivery, proposal: Proposal) -> Callable[[], Awaitable[None]]:
        async def post() -> None:
            await self._publisher.post(proposal)
            await self._store.complete_delivery(delivery.id, now=self._clock())

        return post

    def _digest(
        self, similar: Similar, chunk: list[Delivery], items: list[Proposal]
    ) -> Callable[[], Awaitable[None]]:
        async def post() -> None:
            now = self._clock()
            record = similar.digest(new_digest_id(), "", now)  # its ts is Slack's, once posted
            shown = Digest(**record.model_dump(), items=tuple(items))
            message = render_digest.digest_message(
                shown,
                now=now,
                formats=self._publisher.formats_of(similar.operation),
                what=self._publisher.described(similar.operation),
            )
            payload = {"digest_id": shown.id, "proposal_ids": " ".join(p.id for p in items)}
            response = await self._publisher.post_message(
                similar.channel, message, event=DIGEST_EVENT, payload=payload
            )
            posted = NewDigest.model_validate(
                {
                    **shown.model_dump(exclude={"items"}),
                    "channel": str(response["channel"]),
                    "ts": str(response["ts"]),
                }
            )
            await self._digests.attach_digest(
                posted, [p.id for p in items], deliveries=[d.id for d in chunk], now=self._clock()
            )

        return post

    async def _attach_found(
        self, similar: Similar, showable: list[Delivery], current: dict[str, Proposal]
    ) -> list[Delivery]:
        """Attach the proposals an earlier attempt posted (found by metadata); the rest."""
        channel = similar.channel
        oldest = min(current[d.proposal_id].created_at for d in showable)
        found = await self._search(
            "conversations.history",
            {"channel": channel, "oldest": f"{oldest.timestamp() - 60:.6f}"},
            lambda message: {
                pid: (str(message["ts"]), digest_id) for pid, digest_id in shown_in(message).items()
            },
            wanted={d.proposal_id for d in showable},
        )
        by_digest: dict[tuple[str, str], list[Delivery]] = {}
        for delivery in showable:
            if delivery.proposal_id not in found:
                continue
            ts, digest_id = found[delivery.proposal_id]
            if digest_id is None:
                await self._store.attach_message(delivery.proposal_id, channel, ts)
                await self._store.complete_delivery(delivery.id, now=self._clock())
            else:
                by_digest.setdefault((digest_id, ts), []).append(delivery)
        for (digest_id, ts), chunk in by_digest.items():
            items = [d.proposal_id for d in chunk]
            await self._digests.attach_digest(
                similar.digest(digest_id, ts, self._clock()),
                items,
                deliveries=[d.id for d in chunk],
                now=self._clock(),
            )
        return [d for d in showable if d.proposal_id not in found]

    # --- updates and replies ----------------------------------------------------------------

    async def _follow_ups(self, digest_id: str, effects: dict[Effect, list[Delivery]]) -> None:
        """The digest's update, then its reply: when the update is not done, the replies wait
        behind it (released, their attempt taken back)."""
        updates, replies = effects.get(_UPDATE, []), effects.get(_REPLY, [])
        if updates and not await self._follow_up(digest_id, _UPDATE, updates):
            if replies:
                try:
                    ids = [d.id for d in replies]
                    await self._digests.defer_deliveries(ids, at=self._clock())
                except StoreUnavailable as error:
                    raise Interrupted(replies) from error
            return
        if replies:
            await self._follow_up(digest_id, _REPLY, replies)

    async def _follow_up(self, digest_id: str, effect: Effect, held: list[Delivery]) -> bool:
        """One chat.update of the whole digest, or one reply, for all its items' entries due;
        whether it was done."""
        try:
            held = held + await self._digests.claim_digest_deliveries(
                digest_id, effect, now=self._clock(), limit=DIGEST_MAX, lease=self._lease
            )
            digest = await self._digests.get_digest(digest_id)
            if effect is _UPDATE:
                action = self._update(digest, held)
                return await self._settle(held, "chat.update", digest.channel, action)
            action = self._reply(digest, held)
            return await self._settle(held, "chat.postMessage", digest.channel, action)
        except StoreUnavailable as error:  # an outage: the outbox settles them once it is back
            raise Interrupted(held) from error
        except Exception as error:  # a bug: retry as a transient failure
            log.exception("delivering %s of digest %s failed", effect, digest_id)
            await self._failed(held, DeliveryFailed(f"{type(error).__name__}: {error}"))
            return False

    def _update(self, digest: Digest, held: list[Delivery]) -> Callable[[], Awaitable[None]]:
        async def update() -> None:
            message = render_digest.digest_message(
                digest,
                now=self._clock(),
                formats=self._publisher.formats_of(digest.operation),
                what=self._publisher.described(digest.operation),
            )
            await self._publisher.update_message(digest.channel, digest.ts, message)
            await self._digests.complete_deliveries([d.id for d in held], now=self._clock())

        return update

    def _reply(self, digest: Digest, held: list[Delivery]) -> Callable[[], Awaitable[None]]:
        async def reply() -> None:
            todo = held
            if any(d.attempts > 1 for d in held):  # an earlier attempt may have posted it
                posted = await self._search(
                    "conversations.replies",
                    {"channel": digest.channel, "ts": digest.ts},
                    lambda message: _delivered_by(message, digest.id),
                    wanted={str(d.id) for d in held},
                )
                todo = [d for d in held if str(d.id) not in posted]
                done = [d.id for d in held if str(d.id) in posted]
                await self._digests.complete_deliveries(done, now=self._clock())
            items = {p.id: p for p in digest.items}
            order = {p.id: n for n, p in enumerate(digest.items)}
            todo = sorted(todo, key=lambda d: (order[d.proposal_id], d.id))
            message = digest_reply(
                [(order[d.proposal_id] + 1, items[d.proposal_id], d.status) for d in todo],
                formats_of=self._publisher.formats_of,
            )
            if message is not None:
                marker = {"digest_id": digest.id, "deliveries": " ".join(str(d.id) for d in todo)}
                await self._publisher.reply_message(
                    digest.channel, digest.ts, message, event=DIGEST_REPLY_EVENT, payload=marker
                )
            await self._digests.complete_deliveries([d.id for d in todo], now=self._clock())

        return reply

    # --- failures, rate limits, searches ------------------------------------------------------

    async def _settle(
        self,
        held: list[Delivery],
        method: str,
        channel: str,
        action: Callable[[], Awaitable[None]],
    ) -> bool:
        """Run ``action`` for ``held``, unless Slack asked us to wait; settle what failed.
        Whether it was done."""
        until = self._blocked_until(method, channel)
        if until is not None:
            await self._digests.defer_deliveries([d.id for d in held], at=until)
            return False
        try:
            await action()
        except DeliveryFailed as failure:
            now = self._clock()  # the retries and the block end at the same moment
            if failure.retry_after is not None:
                wait = timedelta(seconds=max(failure.retry_after, 0.1))
                self._blocked[(method, channel)] = now + wait
            await self._failed(held, failure, now=now)
            return False
        return True

    def _blocked_until(self, method: str, channel: str) -> datetime | None:
        until = self._blocked.get((method, channel))
        if until is None or until <= self._clock():
            self._blocked.pop((method, channel), None)
            return None
        return until

    async def _failed(
        self, held: Sequence[Delivery], failure: DeliveryFailed, *, now: datetime | None = None
    ) -> None:
        """What OutboxWorker does with one failed entry, for several: one retry per moment."""
        now = now or self._clock()
        retries: dict[datetime, list[int]] = {}
        for delivery in held:
            wait = self._policy.retry_in(delivery, failure)
            if wait is None:
                await self._store.abandon_delivery(delivery.id, now=now, error=str(failure))
            else:
                retries.setdefault(now + wait, []).append(delivery.id)
        for at, ids in retries.items():
            await self._digests.retry_deliveries(ids, at=at, error=str(failure))

    async def _search(
        self,
        method: str,
        where: dict[str, Any],
        read: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        wanted: set[str],
    ) -> dict[str, Any]:
        """Page through ``method`` (newest first) until ``read`` has found every key wanted."""
        found: dict[str, Any] = {}
        async with aclosing(self._publisher.listed(method, **where)) as listed:
            async for messages in listed:
                for message in messages:
                    for key, value in read(message).items():
                        if key in wanted:
                            found.setdefault(key, value)
                if wanted <= found.keys():
                    break
        return found


def _showable(proposal: Proposal) -> bool:
    """Pending, never shown, asked in a channel: what a post would show."""
    return (
        proposal.status is Status.PENDING
        and proposal.slack_ts is None
        and proposal.channel is not None
    )


def _delivered_by(message: dict[str, Any], digest_id: str) -> dict[str, bool]:
    """The outbox entries (ids as text) a reply of this digest delivered, by its metadata."""
    metadata = message.get("metadata") or {}
    payload = metadata.get("event_payload") or {}
    if metadata.get("event_type") != DIGEST_REPLY_EVENT or payload.get("digest_id") != digest_id:
        return {}
    return dict.fromkeys(str(payload.get("deliveries", "")).split(), True)
