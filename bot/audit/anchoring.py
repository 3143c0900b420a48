"""Writing audit anchors: ``countersign audit anchor`` and serve's periodic ``anchor_every``.

Each anchor goes to every configured destination: appended (and synced) to the anchor file,
and posted in the anchor channel with the same JSON line, so the channel's history can serve as
an anchor file too. Anchors are logged, not audited: an audit entry per anchor would move the
head it just anchored.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.audit.anchors import Anchor, anchor_line, make_anchor
from bot.settings.audit import AnchorSettings
from store.protocol import Store

__all__ = ["AnchorFailed", "Anchorer", "anchor_forever", "anchor_message"]

log = logging.getLogger(__name__)


class AnchorFailed(Exception):
    """An anchor could not be written everywhere it should go (the message says where, why)."""


def anchor_message(anchor: Anchor) -> str:
    """The anchor channel's message: what it says, and the line to keep."""
    signed = "signed with the anchor key" if anchor.mac else "not signed"
    return (
        f"Audit anchor: entry {anchor.sequence} of the audit log has hash `{anchor.hash}` "
        f"({signed}). `countersign audit verify --anchors FILE` checks the log against "
        f"anchors; this one as a line of FILE:\n```{anchor_line(anchor)}```"
    )


class Anchorer:
    """Anchors the store's audit head where ``settings`` says. ``slack`` is needed only when
    there is an anchor channel."""

    def __init__(
        self,
        store: Store,
        settings: AnchorSettings,
        *,
        slack: AsyncWebClient | None,
        clock: Callable[[], datetime],
        on_anchor: Callable[[Anchor], None] | None = None,
    ) -> None:
        """``on_anchor`` is told of each anchor written everywhere (the metrics)."""
        if settings.channel is not None and slack is None:
            raise ValueError("audit.anchor_channel is set but there is no Slack client to post")
        self._store = store
        self._settings = settings
        self._slack = slack
        self._clock = clock
        self._last_sequence: int | None = None
        self._on_anchor = on_anchor

    async def anchor(self, *, only_if_moved: bool = False) -> Anchor | None:
        """Write an anchor of the head as it is now; return it. With ``only_if_moved``, nothing
        is written (None) when the head has not moved since this anchorer's last anchor.

        Every destination is tried; AnchorFailed names each one that failed.
        """
        head = await self._store.audit_head()
        if only_if_moved and head.seq == self._last_sequence:
            return None
        anchor = make_anchor(head, at=self._clock(), key=self._settings.key)
        failures = []
        if self._settings.file is not None:
            try:
                await asyncio.to_thread(_append_line, self._settings.file, anchor_line(anchor))
            except OSError as error:
                failures.append(
                    f"audit.anchor_file: cannot append to {self._settings.file}: {error}"
                )
        if self._settings.channel is not None:
            assert self._slack is not None
            try:
                await self._slack.chat_postMessage(
                    channel=self._settings.channel, text=anchor_message(anchor)
                )
            except SlackApiError as error:
                failures.append(
                    f"audit.anchor_channel: Slack refused the anchor in {self._settings.channel}: "
                    f"{error.response.get('error', 'unknown error')}"
                )
            except (aiohttp.ClientError, TimeoutError) as error:
                failures.append(
                    f"audit.anchor_channel: cannot reach Slack to post in "
                    f"{self._settings.channel}: {error!r}"
                )
        if failures:
            raise AnchorFailed("; ".join(failures))
        self._last_sequence = anchor.sequence
        if self._on_anchor is not None:
            self._on_anchor(anchor)
        log.info(
            "anchored the audit log at entry %d (hash %s) to %s",
            anchor.sequence,
            anchor.hash,
            ", ".join(self._settings.destinations),
        )
        return anchor


async def anchor_forever(anchorer: Anchorer, every: float) -> None:
    """Anchor at start and then every ``every`` seconds, when the head has moved."""
    while True:
        try:
            await anchorer.anchor(only_if_moved=True)
        except AnchorFailed as failed:
            log.warning("audit anchor failed; trying again in %.0f s: %s", every, failed)
        except Exception:
            log.exception("audit anchor failed; trying again in %.0f s", every)
        await asyncio.sleep(every)


def _append_line(path: Path, line: str) -> None:
    """Append ``line`` and a newline in one write, and make it durable before returning."""
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
    try:
        os.write(descriptor, (line + "\n").encode())
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
