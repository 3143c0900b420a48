"""Delivering the escalations' outbox entries: Slack posts, updates, replies and agent callbacks.

The outbox worker (bot/outbound/outbox.py) leases entries from the EscalationStore and calls
:meth:`EscalationDeliverer.deliver` once per attempt; DeliveryFailed says whether and when to try
again, exactly as for proposals. Everything is rendered from the escalation as it is *now*.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from bot.api.callbacks import CallbackSender
from bot.escalations.schemas import EscalationOut
from bot.render import escalation as render
from bot.slack.publish import SlackPublisher
from store.escalations import Escalation, EscalationDelivery, EscalationStatus, EscalationStore
from store.proposals import Effect
from store.protocol import Store

__all__ = ["METADATA_EVENT", "EscalationDeliverer"]

log = logging.getLogger(__name__)

#: What Countersign puts in an escalation message's metadata, to find it again.
METADATA_EVENT = "countersign_escalation"


class EscalationDeliverer:
    def __init__(
        self,
        store: Store,
        publisher: SlackPublisher,
        callbacks: CallbackSender,
        clock: Callable[[], datetime],
    ) -> None:
        self._store: EscalationStore = store.escalations()
        self._publisher = publisher
        self._callbacks = callbacks
        self._clock = clock

    async def deliver(self, delivery: EscalationDelivery) -> None:
        escalation = await self._store.get_escalation(delivery.escalation_id)
        if delivery.effect is Effect.CALLBACK:
            await self._callback(escalation, delivery)
        elif delivery.effect is Effect.SLACK_POST:
            await self._post(escalation, search_first=delivery.attempts > 1)
        elif escalation.slack_channel is None or escalation.slack_ts is None:
            return  # never posted (or given up on): nothing to update or reply to
        elif delivery.effect is Effect.SLACK_UPDATE:
            message = render.escalation_message(
                escalation, handed_back_by=await self._handed_back_by(escalation)
            )
            await self._publisher.update_message(
                escalation.slack_channel, escalation.slack_ts, message
            )
        elif delivery.reannounce:
            if escalation.status is EscalationStatus.OPEN:  # nobody took it meanwhile
                reply = render.reannouncement_reply(escalation)
                await self._publisher.reply_message(
                    escalation.slack_channel, escalation.slack_ts, reply, broadcast=True
                )
        elif escalation.status is delivery.status:  # otherwise a later reply tells the news
            reply = render.escalation_reply(
                escalation, handed_back_by=await self._handed_back_by(escalation)
            )
            await self._publisher.reply_message(
                escalation.slack_channel, escalation.slack_ts, reply
            )

    async def _post(self, escalation: Escalation, *, search_first: bool) -> None:
        if escalation.slack_ts is not None:
            return
        if search_first:  # an earlier attempt may have posted it without our knowing
            found = await self._find_posted(escalation)
            if found is not None:
                await self._store.attach_escalation_message(
                    escalation.id, escalation.channel, found, now=self._clock()
                )
                return
        message = render.escalation_message(escalation)
        response = await self._publisher.post_message(
            escalation.channel,
            message,
            event=METADATA_EVENT,
            payload={"escalation_id": escalation.id},
        )
        await self._store.attach_escalation_message(
            escalation.id, str(response["channel"]), str(response["ts"]), now=self._clock()
        )

    async def _find_posted(self, escalation: Escalation) -> str | None:
        """The ts of the message carrying this escalation's id, if an earlier attempt posted it
        (the newest page of the channel)."""
        return await self._publisher.find_marked(
            "conversations.history",
            event_type=METADATA_EVENT,
            marked=lambda payload: payload.get("escalation_id") == escalation.id,
            pages=1,
            channel=escalation.channel,
            oldest=f"{escalation.created_at.timestamp() - 60:.6f}",
        )

    async def _handed_back_by(self, escalation: Escalation) -> str | None:
        """Who handed it back last (the audit log says; the row keeps only the note)."""
        if escalation.status is not EscalationStatus.HANDED_BACK:
            return None
        entries = await self._store.escalation_log(escalation.id)
        return next((e.actor for e in reversed(entries) if e.event == "handed_back"), None)

    async def _callback(self, escalation: Escalation, delivery: EscalationDelivery) -> None:
        await self._callbacks.send(escalation, EscalationOut.of(escalation), delivery)
