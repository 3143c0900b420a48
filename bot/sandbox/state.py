"""The local Slack as one person sees it: the JSON the sandbox page draws."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bot.sandbox.demo import Person
from bot.slack.local import EphemeralMessage, LocalSlack, StoredMessage

__all__ = ["workspace_view"]


def workspace_view(slack: LocalSlack, people: Iterable[Person], user: str) -> dict[str, Any]:
    """Channels with their messages and threads, and what only ``user`` sees: their ephemeral
    messages, their open modals and their Home tab."""
    bot = next((u for u in slack.users() if u.id == slack.bot_user_id), None)
    return {
        "me": user,
        "bot": {"id": slack.bot_user_id, "name": (bot.real_name or bot.name) if bot else "app"},
        "people": [{"id": p.id, "name": p.name, "about": p.about} for p in people],
        "names": {u.id: u.real_name or u.name or u.id for u in slack.users()},
        "channels": [
            {
                "id": channel["id"],
                "name": channel["name"],
                "messages": _threads(slack.messages(channel["id"])),
                "ephemeral": [
                    _ephemeral(m) for m in slack.ephemeral(user) if m.channel == channel["id"]
                ],
            }
            for channel in slack.channel_list()
            if not channel["is_im"]
        ],
        "views": [{"id": opened.id, "view": opened.view} for opened in slack.views(user)],
        "home": slack.home_view(user),
    }


def _threads(messages: list[StoredMessage]) -> list[dict[str, Any]]:
    """Top-level messages, oldest first, each with its replies under it."""
    replies: dict[str, list[dict[str, Any]]] = {}
    for message in messages:
        if message.is_reply and message.thread_ts is not None:
            replies.setdefault(message.thread_ts, []).append(_message(message))
    return [
        {**_message(message), "replies": replies.get(message.ts, [])}
        for message in messages
        if not message.is_reply
    ]


def _message(message: StoredMessage) -> dict[str, Any]:
    return {
        "ts": message.ts,
        "user": message.user,
        "text": message.text,
        "blocks": message.blocks,
        "edited": message.edited_ts is not None,
    }


def _ephemeral(message: EphemeralMessage) -> dict[str, Any]:
    return {
        "ts": message.ts,
        "text": message.text,
        "blocks": message.blocks,
        "thread_ts": message.thread_ts,
    }
