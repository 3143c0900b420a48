"""Showing proposals in Slack: post, update, reply in the thread, tell one person privately.

Every call goes through slack_sdk's AsyncWebClient with its retry handlers (429 with Retry-After,
5xx, dropped connections). A Slack failure never undoes a decision: it is logged and audited, and
the state in the store stays the truth.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot import render
from store.base import Proposal, Store
from store.lifecycle import Status

__all__ = ["SlackPublisher", "make_web_client"]

log = logging.getLogger(__name__)


def make_web_client(token: str | None, api_url: str) -> AsyncWebClient:
    return AsyncWebClient(
        token=token,
        base_url=api_url,
        timeout=10,
        retry_handlers=[
            AsyncRateLimitErrorRetryHandler(max_retry_count=5),
            AsyncServerErrorRetryHandler(max_retry_count=3),
            AsyncConnectionErrorRetryHandler(max_retry_count=2),
        ],
    )


class SlackPublisher:
    def __init__(self, client: AsyncWebClient, store: Store, clock: Callable[[], datetime]) -> None:
        self.client = client
        self._store = store
        self._clock = clock
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._posting: set[str] = set()  #: posts in flight, never started twice
        self._attempted: dict[str, datetime] = {}  #: last post attempt of unposted proposals

    async def post_proposal(self, proposal: Proposal) -> Proposal:
        """Post the interactive message in the rule's channel and remember its ts."""
        if proposal.channel is None or proposal.id in self._posting:
            return proposal
        self._posting.add(proposal.id)
        self._attempted[proposal.id] = self._clock()
        try:
            current = await self._store.get_proposal(proposal.id)  # another task may have posted
            if current.slack_ts is not None or current.status is not Status.PENDING:
                return current
            return await self._post(current)
        finally:
            self._posting.discard(proposal.id)

    def due_for_retry(self, proposal: Proposal, *, every: timedelta) -> bool:
        """Whether an unposted proposal's last post attempt (in this process) is ``every`` ago."""
        if proposal.id in self._posting:
            return False
        last = self._attempted.get(proposal.id)
        return last is None or self._clock() - last >= every

    async def _post(self, proposal: Proposal) -> Proposal:
        assert proposal.channel is not None
        message = render.proposal_message(proposal, now=self._clock())
        response = await self._call(
            proposal,
            "chat.postMessage",
            channel=proposal.channel,
            text=message["text"],
            blocks=message["blocks"],
            metadata={
                "event_type": "countersign_proposal",
                "event_payload": {"proposal_id": proposal.id},
            },
            unfurl_links=False,
            unfurl_media=False,
        )
        if response is None:
            return proposal
        posted = await self._store.attach_message(
            proposal.id, str(response["channel"]), str(response["ts"])
        )
        self._attempted.pop(proposal.id, None)
        if posted.status is not Status.PENDING:  # decided or expired while the post was in flight
            await self.show_decision(posted, None)
        return posted

    async def show_decision(self, proposal: Proposal, reply: dict[str, Any] | None) -> None:
        """Update the original message (buttons gone) and post ``reply`` in its thread.

        Updates for one proposal are serialized and each renders the state as stored at that
        moment, so the message ends showing the latest state whatever order tasks run in.
        """
        lock = self._locks.get(proposal.id)
        if lock is None:
            lock = self._locks[proposal.id] = asyncio.Lock()
        async with lock:
            current = await self._store.get_proposal(proposal.id)
            if current.slack_channel is None or current.slack_ts is None:
                return
            message = render.proposal_message(current, now=self._clock())
            await self._call(
                current,
                "chat.update",
                channel=current.slack_channel,
                ts=current.slack_ts,
                text=message["text"],
                blocks=message["blocks"],
            )
            if reply is not None:
                await self._call(
                    current,
                    "chat.postMessage",
                    channel=current.slack_channel,
                    thread_ts=current.slack_ts,
                    text=reply["text"],
                    blocks=reply["blocks"],
                )

    async def tell(self, proposal: Proposal | None, channel: str, user: str, text: str) -> None:
        """An ephemeral message only ``user`` sees."""
        await self._call(proposal, "chat.postEphemeral", channel=channel, user=user, text=text)

    async def open_view(self, proposal: Proposal, trigger_id: str, view: dict[str, Any]) -> bool:
        return (
            await self._call(proposal, "views.open", trigger_id=trigger_id, view=view) is not None
        )

    async def _call(self, proposal: Proposal | None, method: str, **kwargs: Any) -> Any:
        try:
            return await self.client.api_call(method, json=kwargs)
        except (SlackApiError, SlackClientError, OSError, TimeoutError) as error:
            detail = _describe(error)
            log.warning("Slack %s failed for %s: %s", method, proposal and proposal.id, detail)
            try:
                await self._store.record_event(
                    proposal.id if proposal else None,
                    actor="countersign",
                    event="slack_call_failed",
                    detail={"method": method, "error": detail},
                    now=self._clock(),
                )
            except Exception:  # the audit is best effort here; the failure is already logged
                log.exception("could not audit a failed Slack call")
            return None


def _describe(error: Exception) -> str:
    if isinstance(error, SlackApiError):
        return f"{error.response.status_code} {error.response.get('error')}"
    return f"{type(error).__name__}: {error}"
