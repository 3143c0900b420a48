"""Showing proposals in Slack.

State changes reach Slack through the outbox (bot/outbound/outbox.py), which calls :meth:`deliver`
for each entry and decides from :class:`DeliveryFailed` when to try again. Answers to one person's
click (a private refusal, the reject modal) are not state changes and go out directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot.render import edit as render_edit
from bot.render.blocks import Message
from bot.render.proposal import proposal_message
from bot.render.replies import expiry_reply, outcome_reply, rejection_reply
from bot.slack.pacing import SlackPacer
from contracts.formats import Formats
from store.proposals import Delivery, Effect, Proposal, ProposalNotFound, Status
from store.protocol import Store

__all__ = ["DeliveryFailed", "SlackPublisher", "make_web_client"]

log = logging.getLogger(__name__)

#: What Countersign puts in a proposal message's metadata, to find it again.
METADATA_EVENT = "countersign_proposal"
#: ... and in a thread reply's, with the outbox entry it delivers, to find that reply again.
REPLY_METADATA_EVENT = "countersign_reply"

#: How many times a superseded proposal's reply waits (a second each) for the edit's message.
_EDIT_POST_WAITS = 10

#: The longest an outbox call waits for its turn under Slack's rate limits; longer, and its entry
#: is due again then (the round goes on with the others).
_LONGEST_PACING_WAIT = 0.25

#: How many pages of channel history (200 messages each) a search for a lost post reads.
_HISTORY_PAGES = 50

#: Slack errors that will not go away by retrying soon (the channel, the message or the app).
_LASTING = {
    "channel_not_found", "not_in_channel", "is_archived", "message_not_found",
    "cant_update_message", "invalid_auth", "account_inactive", "token_revoked",
    "missing_scope", "not_authed", "invalid_blocks", "invalid_blocks_format", "msg_too_long",
    "no_permission", "restricted_action",
}  # fmt: skip


def make_web_client(
    token: str | None, api_url: str, *, timeout: float = 10.0, retries: bool = True
) -> AsyncWebClient:
    """A Slack client; ``retries`` adds slack_sdk's handlers (429, 5xx, dropped connections).

    The outbox's client has none: it reschedules instead, so a rate-limited channel never holds
    up the delivery of anything else.
    """
    handlers = (
        [
            AsyncRateLimitErrorRetryHandler(max_retry_count=3),
            AsyncServerErrorRetryHandler(max_retry_count=2),
            AsyncConnectionErrorRetryHandler(max_retry_count=2),
        ]
        if retries
        else []
    )
    return AsyncWebClient(
        token=token, base_url=api_url, timeout=max(1, round(timeout)), retry_handlers=handlers
    )


@dataclass(frozen=True, slots=True)
class DeliveryFailed(Exception):
    """A delivery did not happen; how the outbox should go on."""

    detail: str
    retry_after: float | None = None  #: the other side said when (Retry-After)
    lasting: bool = False  #: retrying soon will not help (few, slow retries, then give up)
    uncertain: bool = False  #: it may have happened (a timeout after sending)
    #: nothing was sent: it waits its turn under Slack's rate limits (not counted an attempt)
    not_sent: bool = False

    def __str__(self) -> str:
        return self.detail


class SlackPublisher:
    def __init__(
        self,
        client: AsyncWebClient,
        store: Store,
        clock: Callable[[], datetime],
        *,
        outbox_client: AsyncWebClient | None = None,
        extension_of: Callable[[Proposal], timedelta | None] | None = None,
        offers_standing: Callable[[Proposal], bool] | None = None,
        reminder: Callable[[Proposal], Awaitable[Message]] | None = None,
        formats_of: Callable[[str], Formats] | None = None,
        agent_acts: Callable[[str], bool] | None = None,
        described: Callable[[str], str | None] | None = None,
        pacer: SlackPacer | None = None,
    ) -> None:
        """``extension_of`` says what an Extend button on a proposal's message would add to its
        expiry, or None for no button (bot/flow/extensions.py); ``offers_standing`` whether it shows
        "Approve + allow similar…" (bot/standing/rules.py); ``reminder`` builds the reminder posted
        for a slack.remind (bot/flow/reminders.py; none without it); ``formats_of`` how an operation
        shows its fields (contracts/formats.py), for what an edit changed and the outcome;
        ``agent_acts`` whether the agent carries out an operation itself (a decision), which its
        message, confirmation and outcome say; ``described`` what an operation does in its
        definition's words, which names it where several proposals show together (a digest)."""
        self.client = client
        self._outbox_client = outbox_client or client
        self._store = store
        self._clock = clock
        self._extension_of = extension_of or (lambda _: None)
        self._reminder = reminder
        self._offers_standing = offers_standing or (lambda _: False)
        self._formats_of = formats_of or (lambda _: {})
        #: Slack's rate limits per method and channel, shared by every outbox call
        self.pacer = pacer or SlackPacer()
        self._agent_acts = agent_acts or (lambda _: False)
        self._described = described or (lambda _: None)

    def formats_of(self, operation: str) -> Formats:
        """How ``operation`` shows its fields (contracts/formats.py)."""
        return self._formats_of(operation)

    def agent_acts(self, operation: str) -> bool:
        """Whether the agent carries out ``operation`` itself once approved (a decision)."""
        return self._agent_acts(operation)

    def described(self, operation: str) -> str | None:
        """What ``operation`` does, in its definition's words; None when it is not configured."""
        return self._described(operation)

    # --- the outbox's effects -----------------------------------------------------------------

    async def deliver(self, delivery: Delivery) -> None:
        """Carry out one Slack effect from the current state; raise DeliveryFailed if not done."""
        await self._carry_out(await self._store.get_proposal(delivery.proposal_id), delivery)

    async def deliver_run(
        self,
        run: Sequence[Delivery],
        proposal: Proposal | None,
        delivered: Callable[[Delivery], None],
    ) -> None:
        """Carry out one proposal's consecutive Slack entries (a decision's message update and
        thread reply, leased together) in their order, from one read of the proposal: the
        outbox round's (``proposal``, read after the claim), or this one's when None.
        ``delivered`` hears each entry as soon as its call succeeded; the first failure raises
        DeliveryFailed, and the entries after it are not attempted. An update followed by
        another update needs no call of its own: the later one renders the same state."""
        if proposal is None:
            proposal = await self._store.get_proposal(run[0].proposal_id)
        for delivery, following in zip(run, [*run[1:], None], strict=True):
            if delivery.proposal_id != proposal.id:
                raise ValueError(f"entry {delivery.id} is not of proposal {proposal.id}")
            moot = (
                delivery.effect is Effect.SLACK_UPDATE
                and following is not None
                and following.effect is Effect.SLACK_UPDATE
            )
            if not moot:
                await self._carry_out(proposal, delivery)
            delivered(delivery)

    async def _carry_out(self, proposal: Proposal, delivery: Delivery) -> None:
        if delivery.effect is Effect.SLACK_POST:
            await self._post(proposal, search_first=delivery.attempts > 1)
            return
        channel, ts = proposal.slack_channel, proposal.slack_ts
        if channel is None or ts is None:
            return  # never posted (or given up on): nothing to update or reply to
        thread = (channel, ts)
        if delivery.effect is Effect.SLACK_UPDATE:
            await self.update_message(*thread, await self._proposal_message(proposal))
        elif delivery.effect is Effect.SLACK_REPLY:
            reply = (
                await self._superseded_reply(proposal, delivery)
                if delivery.status is Status.SUPERSEDED
                else _reply(proposal, delivery.status, self._formats_of(proposal.operation))
            )
            if reply is not None:
                await self._thread_reply(thread, proposal, delivery, reply)
        elif delivery.effect is Effect.SLACK_REMIND:
            # only while it is still pending: a decision since the sweep makes it moot
            if proposal.status is Status.PENDING and self._reminder is not None:
                reminder = await self._reminder(proposal)
                await self._thread_reply(thread, proposal, delivery, reminder)
        else:
            raise ValueError(f"not a Slack effect: {delivery.effect}")

    async def _superseded_reply(self, proposal: Proposal, delivery: Delivery) -> Message:
        """The reply that points to the edit. While the edit's own message is still to be posted,
        it waits a little (retried) so that it can link to it; then goes without the link."""
        edit = None
        if proposal.superseded_by is not None:
            edit = await self._store.get_proposal(proposal.superseded_by)
        link = None
        if edit is not None and edit.slack_channel and edit.slack_ts:
            found = await self._outbox_call(
                "chat.getPermalink", channel=edit.slack_channel, message_ts=edit.slack_ts
            )
            link = found.get("permalink")
        elif (
            edit is not None
            and edit.status is Status.PENDING
            and edit.channel is not None
            and delivery.attempts < _EDIT_POST_WAITS
        ):
            raise DeliveryFailed("waiting for the edit's message, to link to it", retry_after=1.0)
        return render_edit.superseded_reply(
            proposal, edit, link=link, formats=self._formats_of(proposal.operation)
        )

    async def _thread_reply(
        self,
        thread: tuple[str, str],
        proposal: Proposal,
        delivery: Delivery,
        reply: Message,
    ) -> None:
        """Post ``reply`` in the proposal's thread, once: its metadata names the outbox entry,
        and a retry first looks for it."""
        marker = {"proposal_id": proposal.id, "delivery": delivery.id}
        if delivery.attempts > 1 and await self._find_reply(proposal, marker):
            return  # an earlier attempt posted it; its answer was lost
        await self.reply_message(*thread, reply, event=REPLY_METADATA_EVENT, payload=marker)

    async def _proposal_message(self, proposal: Proposal) -> Message:
        previous = None  # an edit shows what changed from the version it replaced
        if proposal.supersedes is not None:
            with contextlib.suppress(ProposalNotFound):
                previous = await self._store.get_proposal(proposal.supersedes)
        return proposal_message(
            proposal,
            now=self._clock(),
            extend_by=self._extension_of(proposal),
            allow_similar=self._offers_standing(proposal),
            previous=previous,
            formats=self._formats_of(proposal.operation),
            agent_acts=self._agent_acts(proposal.operation),
        )

    async def post(self, proposal: Proposal) -> None:
        """Post ``proposal``'s own message now, not looking for an earlier post first (the
        digests' outbox looked already: bot/digests/outbox.py)."""
        await self._post(proposal, search_first=False)

    async def _post(self, proposal: Proposal, *, search_first: bool) -> None:
        if proposal.slack_ts is not None or proposal.channel is None:
            return
        if proposal.status is not Status.PENDING:
            return  # decided before it was ever shown: its outcome goes to the agent only
        if search_first:  # an earlier attempt may have posted it without our knowing
            found = await self._find_posted(proposal)
            if found is not None:
                await self._store.attach_message(proposal.id, proposal.channel, found)
                return
        message = await self._proposal_message(proposal)
        response = await self.post_message(
            proposal.channel, message, event=METADATA_EVENT, payload={"proposal_id": proposal.id}
        )
        await self._store.attach_message(proposal.id, str(response["channel"]), str(response["ts"]))

    async def listed(
        self, method: str, *, pages: int = _HISTORY_PAGES, **where: Any
    ) -> AsyncGenerator[list[dict[str, Any]]]:
        """The messages ``method`` (``conversations.history`` or ``conversations.replies``) lists
        for ``where``, with their metadata: newest first, 200 a page, at most ``pages`` pages.
        For outbox entries (DeliveryFailed says how a call failed); close it when stopping
        early (``contextlib.aclosing``)."""
        page: dict[str, Any] = {}
        for _ in range(pages):
            response = await self._outbox_call(
                method, include_all_metadata=True, limit=200, **where, **page
            )
            yield response.get("messages", [])
            cursor = (response.get("response_metadata") or {}).get("next_cursor")
            if not response.get("has_more") or not cursor:
                return
            page = {"cursor": cursor}

    async def find_marked(
        self,
        method: str,
        *,
        event_type: str,
        marked: Callable[[dict[str, Any]], bool],
        pages: int = _HISTORY_PAGES,
        **where: Any,
    ) -> str | None:
        """The ts of a message :meth:`listed` whose metadata is an ``event_type`` with a
        payload ``marked`` accepts: how an outbox entry's retry finds what an earlier attempt
        posted when its answer was lost."""
        async with contextlib.aclosing(self.listed(method, pages=pages, **where)) as listed:
            async for messages in listed:
                for message in messages:
                    metadata = message.get("metadata") or {}
                    if metadata.get("event_type") == event_type and marked(
                        metadata.get("event_payload") or {}
                    ):
                        return str(message["ts"])
        return None

    async def _find_posted(self, proposal: Proposal) -> str | None:
        """The ts of a message already carrying this proposal's id in its metadata, if any (in
        a busy channel the message may be pages back)."""
        assert proposal.channel is not None
        return await self.find_marked(
            "conversations.history",
            event_type=METADATA_EVENT,
            marked=lambda payload: payload.get("proposal_id") == proposal.id,
            channel=proposal.channel,
            oldest=f"{proposal.created_at.timestamp() - 60:.6f}",
        )

    async def _find_reply(self, proposal: Proposal, marker: dict[str, Any]) -> bool:
        """Whether the thread already has the reply that ``marker`` names in its metadata."""
        found = await self.find_marked(
            "conversations.replies",
            event_type=REPLY_METADATA_EVENT,
            marked=lambda payload: payload == marker,
            channel=proposal.slack_channel,
            ts=proposal.slack_ts,
        )
        return found is not None

    async def post_message(
        self, channel: str, message: Message, *, event: str, payload: dict[str, Any]
    ) -> Any:
        """Post ``message`` for an outbox entry as a new message of ``channel``, its metadata
        (``event`` and ``payload``) saying what it shows so that a retry can find it, links
        not unfurled. Slack's answer, or DeliveryFailed."""
        return await self._outbox_call(
            "chat.postMessage",
            channel=channel,
            text=message["text"],
            blocks=message["blocks"],
            metadata={"event_type": event, "event_payload": payload},
            unfurl_links=False,
            unfurl_media=False,
        )

    async def reply_message(
        self,
        channel: str,
        thread_ts: str,
        message: Message,
        *,
        event: str | None = None,
        payload: dict[str, Any] | None = None,
        broadcast: bool = False,
    ) -> Any:
        """Post ``message`` for an outbox entry in the thread of ``thread_ts`` (also to the
        channel when ``broadcast``), with metadata when an ``event`` is given."""
        extra: dict[str, Any] = {"reply_broadcast": True} if broadcast else {}
        if event is not None:
            extra["metadata"] = {"event_type": event, "event_payload": payload or {}}
        return await self._outbox_call(
            "chat.postMessage",
            channel=channel,
            thread_ts=thread_ts,
            text=message["text"],
            blocks=message["blocks"],
            **extra,
        )

    async def update_message(self, channel: str, ts: str, message: Message) -> Any:
        """Replace the message ``ts`` of ``channel`` with ``message``, for an outbox entry."""
        return await self._outbox_call(
            "chat.update", channel=channel, ts=ts, text=message["text"], blocks=message["blocks"]
        )

    async def _outbox_call(self, method: str, **kwargs: Any) -> Any:
        channel = kwargs.get("channel")
        channel = channel if isinstance(channel, str) else None
        wait = self.pacer.wait(method, channel, longest=_LONGEST_PACING_WAIT)
        if wait > _LONGEST_PACING_WAIT:
            raise DeliveryFailed(
                f"{method}: waiting {wait:.1f} s for Slack's rate limit",
                retry_after=wait,
                not_sent=True,
            )
        if wait > 0:
            await asyncio.sleep(wait)
        try:
            return await self._outbox_client.api_call(method, json=kwargs)
        except SlackApiError as error:
            failure = _classify(method, error)
            if failure.retry_after is not None:  # 429: the whole method (channel) waits
                self.pacer.limited(method, channel, failure.retry_after)
            raise failure from error
        except (TimeoutError, SlackClientError, OSError) as error:
            raise DeliveryFailed(
                f"{method}: {type(error).__name__}: {error}", uncertain=True
            ) from error

    # --- answers to one person ------------------------------------------------------------------

    async def tell(self, proposal: Proposal | None, channel: str, user: str, text: str) -> None:
        """An ephemeral message only ``user`` sees."""
        await self._direct(proposal, "chat.postEphemeral", channel=channel, user=user, text=text)

    async def update(
        self, proposal: Proposal | None, channel: str, ts: str, *, text: str, blocks: Any
    ) -> None:
        """Re-render a message Countersign posted (a review post), at once; a failure is
        logged and audited, not retried."""
        await self._direct(
            proposal, "chat.update", channel=channel, ts=ts, text=text, blocks=blocks
        )

    async def open_view(
        self, proposal: Proposal | None, trigger_id: str, view: dict[str, Any]
    ) -> bool:
        return (
            await self._direct(proposal, "views.open", trigger_id=trigger_id, view=view) is not None
        )

    async def update_view(self, view_id: str, view_hash: str | None, view: dict[str, Any]) -> bool:
        """Replace an open modal (``view_hash``: the version it was changed from, so that a
        stale change is refused by Slack rather than applied over a newer one)."""
        args: dict[str, Any] = {"view_id": view_id, "view": view}
        if view_hash:
            args["hash"] = view_hash
        return await self._direct(None, "views.update", **args) is not None

    async def _direct(self, proposal: Proposal | None, method: str, **kwargs: Any) -> Any:
        try:
            return await self.client.api_call(method, json=kwargs)
        except (SlackApiError, SlackClientError, OSError, TimeoutError) as error:
            detail = _describe(error)
            log.warning("Slack %s failed for %s: %s", method, proposal and proposal.id, detail)
            await self._store.record_event(
                proposal.id if proposal else None,
                actor="countersign",
                event="slack_call_failed",
                detail={"method": method, "error": detail},
                now=self._clock(),
            )
            return None


def _reply(proposal: Proposal, status: Status, formats: Formats) -> dict[str, Any] | None:
    if status is Status.REJECTED:
        return rejection_reply(proposal)
    if status is Status.EXPIRED:
        return expiry_reply(proposal)
    if proposal.outcome is not None:
        return outcome_reply(proposal, formats)
    return None


def _classify(method: str, error: SlackApiError) -> DeliveryFailed:
    status = error.response.status_code
    code = str(error.response.get("error") or "")
    detail = f"{method}: {status} {code}".strip()
    if status == 429 or code == "ratelimited":
        retry_after = error.response.headers.get("Retry-After") or error.response.headers.get(
            "retry-after"
        )
        try:
            seconds = float(retry_after) if retry_after is not None else 1.0
        except ValueError:
            seconds = 1.0
        return DeliveryFailed(detail, retry_after=seconds)
    if status >= 500:
        return DeliveryFailed(detail, uncertain=method == "chat.postMessage")
    return DeliveryFailed(detail, lasting=code in _LASTING or 400 <= status < 500)


def _describe(error: Exception) -> str:
    if isinstance(error, SlackApiError):
        return f"{error.response.status_code} {error.response.get('error')}"
    return f"{type(error).__name__}: {error}"
