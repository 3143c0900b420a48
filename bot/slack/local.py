"""A local Slack Web API: the Slack that tests and the sandbox talk to.

It serves ``/api/<method>`` the way slack.com does (GET or POST; query string, form or JSON
arguments; ``Authorization: Bearer <token>``), so ``AsyncWebClient(base_url=...)`` works against
it unchanged. It keeps channels, messages, thread replies, ephemeral messages and views in memory,
records every call, and can answer with the faults real Slack produces: 429 with ``Retry-After``
and ``{"ok": false, "error": "ratelimited"}``, and 5xx.

Errors follow Slack's vocabulary (``not_authed``, ``invalid_auth``, ``channel_not_found``,
``message_not_found``, ``invalid_blocks``...) and come with HTTP 200, as Slack's do. Blocks and
views are checked with slack_sdk's Block Kit models, so a message Slack would refuse is refused
here too.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from bot.slack.local_socket import LocalSocketMode

__all__ = [
    "DEFAULT_TOKEN",
    "EphemeralMessage",
    "LocalSlack",
    "LocalUser",
    "OpenedView",
    "RecordedCall",
    "StoredMessage",
    "build_app",
    "running_local_slack",
]

DEFAULT_TOKEN = "xoxb-local-countersign"

#: Slack refuses messages with more blocks than this.
_MAX_BLOCKS_PER_MESSAGE = 50
#: Arguments Slack accepts as JSON text when they arrive form-encoded.
_JSON_ARGUMENTS = ("blocks", "view", "metadata", "attachments")
_FAULT_ERRORS = {
    429: "ratelimited",
    500: "internal_error",
    502: "bad_gateway",
    503: "service_unavailable",
}


# --- what the local Slack keeps -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One Web API call as it arrived, with what was answered."""

    method: str
    args: dict[str, Any]
    at: datetime
    status: int
    response: dict[str, Any]


@dataclass(frozen=True, slots=True)
class LocalUser:
    id: str
    name: str = ""
    real_name: str = ""
    is_bot: bool = False
    deleted: bool = False
    is_restricted: bool = False  #: a multi-channel guest
    is_ultra_restricted: bool = False  #: a single-channel guest
    tz: str = "Europe/Berlin"
    #: the user's own workspace when it is another one (Slack Connect); None: the local one
    team_id: str | None = None

    def to_api(self, team_id: str) -> dict[str, Any]:
        name = self.name or self.id.lower()
        real_name = self.real_name or name
        return {
            "id": self.id,
            "team_id": self.team_id or team_id,
            "name": name,
            "real_name": real_name,
            "deleted": self.deleted,
            "is_bot": self.is_bot,
            "is_app_user": False,
            "is_admin": False,
            "is_owner": False,
            "is_restricted": self.is_restricted,
            "is_ultra_restricted": self.is_ultra_restricted,
            "tz": self.tz,
            "profile": {"real_name": real_name, "display_name": name},
        }


@dataclass(slots=True)
class StoredMessage:
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]
    user: str
    bot_id: str | None
    thread_ts: str | None = None
    metadata: dict[str, Any] | None = None
    edited_ts: str | None = None

    @property
    def is_reply(self) -> bool:
        return self.thread_ts is not None and self.thread_ts != self.ts

    def to_api(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "type": "message",
            "ts": self.ts,
            "text": self.text,
            "user": self.user,
            "blocks": self.blocks,
        }
        if self.bot_id is not None:
            message["bot_id"] = self.bot_id
        if self.thread_ts is not None:
            message["thread_ts"] = self.thread_ts
        if self.metadata is not None:
            message["metadata"] = self.metadata
        if self.edited_ts is not None:
            message["edited"] = {"user": self.user, "ts": self.edited_ts}
        return message


@dataclass(frozen=True, slots=True)
class EphemeralMessage:
    channel: str
    user: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]
    thread_ts: str | None = None


@dataclass(slots=True)
class OpenedView:
    """A modal opened with views.open (and perhaps updated since)."""

    id: str
    user: str | None  #: None when the trigger id was not issued by :meth:`LocalSlack.issue_trigger`
    trigger_id: str
    view: dict[str, Any]
    updates: int = 0


@dataclass(slots=True)
class _Channel:
    id: str
    name: str
    is_private: bool = False
    messages: list[StoredMessage] = field(default_factory=list)

    def find(self, ts: str) -> StoredMessage | None:
        return next((message for message in self.messages if message.ts == ts), None)

    def to_api(self) -> dict[str, Any]:
        is_im = self.id.startswith("D")
        return {
            "id": self.id,
            "name": self.name,
            "is_channel": not is_im and not self.is_private,
            "is_group": not is_im and self.is_private,
            "is_im": is_im,
            "is_private": self.is_private or is_im,
            "is_archived": False,
            "is_member": True,
        }


@dataclass(slots=True)
class _Fault:
    status: int
    retry_after: int
    error: str


class _ApiError(Exception):
    def __init__(self, error: str, *messages: str) -> None:
        super().__init__(error)
        self.error = error
        self.messages = messages


# --- the controller -------------------------------------------------------------------------------


class LocalSlack:
    """The local Slack's state, its answers, and the knobs tests turn.

    ``strict_channels``: unknown channel ids are ``channel_not_found`` (otherwise they are created
    on first use). ``strict_users``: unknown user ids are ``user_not_found`` (otherwise they are
    active, full members). ``messages_per_second``: chat.postMessage calls allowed per channel per
    second before answering 429. ``clock``: seconds, for that rate limit only. ``wall_clock``:
    Unix seconds that message timestamps follow (the sandbox shows them as times); by default
    they count up from a fixed moment, so tests see the same ts on every run.
    """

    def __init__(
        self,
        *,
        token: str = DEFAULT_TOKEN,
        team_id: str = "T0001",
        bot_user_id: str = "UCOUNTERSIGN",
        bot_id: str = "BCOUNTERSIGN",
        channels: Iterable[str] = (),
        users: Iterable[LocalUser] = (),
        strict_channels: bool = False,
        strict_users: bool = False,
        messages_per_second: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] | None = None,
        permalink_base: str = "https://countersign-local.slack.invalid",
    ) -> None:
        self.token = token
        self.team_id = team_id
        self.bot_user_id = bot_user_id
        self.bot_id = bot_id
        self.strict_channels = strict_channels
        self.strict_users = strict_users
        self.messages_per_second = messages_per_second
        self.permalink_base = permalink_base
        self.base_url: str | None = None  #: set while served by running_local_slack
        self._clock = clock
        self._wall_clock = wall_clock
        self._channels: dict[str, _Channel] = {}
        self._users: dict[str, LocalUser] = {}
        self._calls: list[RecordedCall] = []
        self._faults: dict[str, deque[_Fault]] = {}
        self._stalls: dict[str, deque[float]] = {}
        self._usergroups: dict[str, list[str]] = {}
        #: False: the workspace's plan has no user groups (usergroups.* answer paid_only)
        self.usergroups_allowed = True
        self._posted_at: dict[str, deque[float]] = {}
        self._ephemeral: list[EphemeralMessage] = []
        self._views: dict[str, OpenedView] = {}
        self._home: dict[str, dict[str, Any]] = {}
        self._triggers: dict[str, str] = {}
        self._micros = 1_700_000_000_000_000
        self._serial = 0
        for channel_id in channels:
            self.add_channel(channel_id)
        for user in (LocalUser(id=bot_user_id, name="countersign", is_bot=True), *users):
            self.add_user(user)

    # --- configuring ------------------------------------------------------------------------------

    def add_channel(
        self, channel_id: str, *, name: str | None = None, private: bool = False
    ) -> None:
        self._channels[channel_id] = _Channel(channel_id, name or channel_id.lower(), private)

    def add_user(self, user: LocalUser) -> None:
        self._users[user.id] = user

    def issue_trigger(self, user_id: str) -> str:
        """A trigger id (as in an interaction payload) that opens views for ``user_id``."""
        self._serial += 1
        trigger_id = f"{self._serial}.{self.team_id}.{user_id}"
        self._triggers[trigger_id] = user_id
        return trigger_id

    def fail_next(
        self,
        method: str,
        *,
        status: int = 429,
        retry_after: int = 1,
        error: str | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` calls of ``method`` with a fault instead of doing them.

        429 carries ``Retry-After: <retry_after>``. ``status=200`` with ``error`` injects an
        API-level error such as ``"is_archived"``.
        """
        if status == 200 and error is None:
            raise ValueError(f"fail_next({method!r}, status=200) needs error='<slack error code>'")
        fault = _Fault(status, retry_after, error or _FAULT_ERRORS.get(status, "fatal_error"))
        self._faults.setdefault(method, deque()).extend(fault for _ in range(times))

    def set_usergroup(self, group_id: str, members: Iterable[str]) -> None:
        """Create or replace a user group (an id starting with S) and its members."""
        self._usergroups[group_id] = list(members)

    def stall_after_accepting(self, method: str, *, seconds: float, times: int = 1) -> None:
        """Do the next ``times`` calls of ``method``, then hold the answer for ``seconds``.

        What a client sees as a timeout although Slack did what was asked: the case where a
        retried chat.postMessage would show a person the same message twice.
        """
        self._stalls.setdefault(method, deque()).extend(seconds for _ in range(times))

    def take_stall(self, method: str) -> float:
        queued = self._stalls.get(method)
        return queued.popleft() if queued else 0.0

    # --- inspecting -------------------------------------------------------------------------------

    def calls(self, method: str | None = None) -> list[RecordedCall]:
        """Every call received, oldest first; only those of ``method`` when given."""
        return [call for call in self._calls if method is None or call.method == method]

    def messages(self, channel: str) -> list[StoredMessage]:
        """All messages of a channel, thread replies included, oldest first."""
        known = self._channels.get(channel)
        return list(known.messages) if known is not None else []

    def message(self, channel: str, ts: str) -> StoredMessage:
        known = self._channels.get(channel)
        found = known.find(ts) if known is not None else None
        if found is None:
            raise LookupError(f"local Slack has no message ts={ts!r} in channel {channel!r}")
        return found

    def replies(self, channel: str, thread_ts: str) -> list[StoredMessage]:
        """The replies in a thread, oldest first, without the parent."""
        return [m for m in self.messages(channel) if m.is_reply and m.thread_ts == thread_ts]

    def ephemeral(self, user: str | None = None) -> list[EphemeralMessage]:
        return [m for m in self._ephemeral if user is None or m.user == user]

    def views(self, user: str | None = None) -> list[OpenedView]:
        """Views opened with views.open, oldest first; only ``user``'s when given."""
        return [v for v in self._views.values() if user is None or v.user == user]

    def home_view(self, user_id: str) -> dict[str, Any] | None:
        return self._home.get(user_id)

    def channel_list(self) -> list[dict[str, Any]]:
        """Every channel as conversations.info describes it, in the order they were added."""
        return [channel.to_api() for channel in self._channels.values()]

    def users(self) -> list[LocalUser]:
        """Every user, the bot first."""
        return list(self._users.values())

    def close_view(self, view_id: str) -> bool:
        """Close a modal as Slack does after its submission is acknowledged (or it is cancelled)."""
        return self._views.pop(view_id, None) is not None

    # --- answering --------------------------------------------------------------------------------

    def answer(
        self,
        method: str,
        args: dict[str, Any],
        authorization: str | None,
        *,
        unreadable: tuple[str, str] | None = None,
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Handle one call: (HTTP status, JSON body, extra headers). Records it.

        ``unreadable``: the arguments could not be read; (Slack error code, explanation).
        """
        status: int
        body: dict[str, Any]
        headers: dict[str, str]
        if unreadable is not None:
            error, message = unreadable
            status, headers = 200, {}
            body = {"ok": False, "error": error, "response_metadata": {"messages": [message]}}
        else:
            status, body, headers = self._answer(method, dict(args), authorization)
        recorded = {key: value for key, value in args.items() if key != "token"}
        self._calls.append(RecordedCall(method, recorded, datetime.now(UTC), status, body))
        return status, body, headers

    def _answer(
        self, method: str, args: dict[str, Any], authorization: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        queued = self._faults.get(method)
        if queued:
            fault = queued.popleft()
            headers = {"Retry-After": str(fault.retry_after)} if fault.status == 429 else {}
            return fault.status, {"ok": False, "error": fault.error}, headers
        handler = _METHODS.get(method)
        try:
            self._authenticate(args.pop("token", None), authorization)
            if handler is None:
                raise _ApiError("unknown_method", f"[ERROR] no method {method!r} here")
            if method == "chat.postMessage" and self._rate_limited(str(args.get("channel", ""))):
                return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"}
            return 200, {"ok": True, **handler(self, args)}, {}
        except _ApiError as error:
            body: dict[str, Any] = {"ok": False, "error": error.error}
            if error.messages:
                body["response_metadata"] = {"messages": list(error.messages)}
            return 200, body, {}

    def _authenticate(self, form_token: Any, authorization: str | None) -> None:
        given = form_token if isinstance(form_token, str) and form_token else None
        if authorization is not None and authorization.startswith("Bearer "):
            given = authorization.removeprefix("Bearer ").strip() or given
        if given is None:
            raise _ApiError("not_authed")
        if given != self.token:
            raise _ApiError("invalid_auth")

    def _rate_limited(self, channel: str) -> bool:
        if self.messages_per_second is None:
            return False
        now = self._clock()
        recent = self._posted_at.setdefault(channel, deque())
        while recent and now - recent[0] >= 1.0:
            recent.popleft()
        if len(recent) >= self.messages_per_second:
            return True
        recent.append(now)
        return False

    def _next_ts(self) -> str:
        self._micros += 100
        if self._wall_clock is not None:
            self._micros = max(self._micros, int(self._wall_clock() * 1_000_000))
        return f"{self._micros // 1_000_000}.{self._micros % 1_000_000:06d}"

    def _channel(self, args: dict[str, Any], key: str = "channel") -> _Channel:
        channel_id = args.get(key)
        if not isinstance(channel_id, str) or not channel_id:
            raise _ApiError("channel_not_found", f"[ERROR] missing required field: {key}")
        known = self._channels.get(channel_id)
        if known is None:
            if self.strict_channels:
                raise _ApiError("channel_not_found")
            self.add_channel(channel_id)
            known = self._channels[channel_id]
        return known

    def _user(self, user_id: Any) -> LocalUser:
        if not isinstance(user_id, str) or not user_id:
            raise _ApiError("user_not_found", "[ERROR] missing required field: user")
        known = self._users.get(user_id)
        if known is None:
            if self.strict_users:
                raise _ApiError("user_not_found")
            known = LocalUser(id=user_id)
            self.add_user(known)
        return known

    # --- methods ----------------------------------------------------------------------------------

    def _auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": f"{self.permalink_base}/",
            "team": "Countersign Local",
            "user": "countersign",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _post_message(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args)
        text, blocks = _message_content(args)
        if not text and not blocks:
            raise _ApiError("no_text")
        thread_ts = _optional_str(args, "thread_ts")
        metadata = args.get("metadata")
        message = StoredMessage(
            channel=channel.id,
            ts=self._next_ts(),
            text=text,
            blocks=blocks,
            user=self.bot_user_id,
            bot_id=self.bot_id,
            thread_ts=thread_ts,
            metadata=metadata if isinstance(metadata, dict) else None,
        )
        channel.messages.append(message)
        return {"channel": channel.id, "ts": message.ts, "message": message.to_api()}

    def _update(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args)
        message = channel.find(str(args.get("ts", "")))
        if message is None:
            raise _ApiError("message_not_found")
        text, blocks = _message_content(args)
        if "text" in args:
            message.text = text
        if "blocks" in args:
            message.blocks = blocks
        if isinstance(args.get("metadata"), dict):
            message.metadata = args["metadata"]
        message.edited_ts = self._next_ts()
        return {
            "channel": channel.id,
            "ts": message.ts,
            "text": message.text,
            "message": message.to_api(),
        }

    def _post_ephemeral(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args)
        user = self._user(args.get("user"))
        text, blocks = _message_content(args)
        if not text and not blocks:
            raise _ApiError("no_text")
        message = EphemeralMessage(
            channel=channel.id,
            user=user.id,
            ts=self._next_ts(),
            text=text,
            blocks=blocks,
            thread_ts=_optional_str(args, "thread_ts"),
        )
        self._ephemeral.append(message)
        return {"message_ts": message.ts}

    def _get_permalink(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args)
        ts = str(args.get("message_ts", ""))
        if channel.find(ts) is None:
            raise _ApiError("message_not_found")
        return {
            "channel": channel.id,
            "permalink": f"{self.permalink_base}/archives/{channel.id}/p{ts.replace('.', '')}",
        }

    def _views_open(self, args: dict[str, Any]) -> dict[str, Any]:
        trigger_id = _optional_str(args, "trigger_id")
        if trigger_id is None:
            raise _ApiError("invalid_arguments", "[ERROR] missing required field: trigger_id")
        view = _checked_view(args.get("view"), allowed_types=("modal",))
        self._serial += 1
        view_id = f"V{self._serial:08d}"
        stored = _stored_view(view, view_id=view_id, team_id=self.team_id, bot_id=self.bot_id)
        self._views[view_id] = OpenedView(
            view_id, self._triggers.get(trigger_id), trigger_id, stored
        )
        return {"view": stored}

    def _views_update(self, args: dict[str, Any]) -> dict[str, Any]:
        view_id = _optional_str(args, "view_id")
        external_id = _optional_str(args, "external_id")
        opened = self._views.get(view_id or "") or next(
            (
                v
                for v in self._views.values()
                if external_id and v.view.get("external_id") == external_id
            ),
            None,
        )
        if opened is None:
            raise _ApiError("not_found")
        given_hash = _optional_str(args, "hash")
        if given_hash is not None and given_hash != opened.view["hash"]:
            raise _ApiError("hash_conflict")
        view = _checked_view(args.get("view"), allowed_types=("modal",))
        opened.updates += 1
        opened.view = _stored_view(
            view, view_id=opened.id, team_id=self.team_id, bot_id=self.bot_id, serial=opened.updates
        )
        return {"view": opened.view}

    def _views_publish(self, args: dict[str, Any]) -> dict[str, Any]:
        user = self._user(args.get("user_id"))
        view = _checked_view(args.get("view"), allowed_types=("home",))
        self._serial += 1
        stored = _stored_view(
            view, view_id=f"V{self._serial:08d}", team_id=self.team_id, bot_id=self.bot_id
        )
        self._home[user.id] = stored
        return {"view": stored}

    def _conversations_info(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"channel": self._channel(args).to_api()}

    def _usergroup_users(self, args: dict[str, Any]) -> dict[str, Any]:
        if not self.usergroups_allowed:
            raise _ApiError("paid_only")
        members = self._usergroups.get(str(args.get("usergroup", "")))
        if members is None:
            raise _ApiError("no_such_subteam")
        return {"users": list(members)}

    def _users_info(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"user": self._user(args.get("user")).to_api(self.team_id)}

    def _history(self, args: dict[str, Any]) -> dict[str, Any]:
        """Top-level messages, newest first, ``limit`` at a time (``cursor`` for the next page).

        ``oldest`` and ``latest`` bound them (exclusive, as Slack's are without ``inclusive``)
        only when timestamps follow ``wall_clock``; otherwise they follow their own clock.
        """
        channel = self._channel(args)
        limit = _limit(args)
        start = _cursor_offset(args)
        top = [m for m in reversed(channel.messages) if not m.is_reply]
        if self._wall_clock is not None:
            top = [m for m in top if _within(m.ts, args)]
        threads: dict[str, list[StoredMessage]] = {}  # one pass: busy channels stay quick
        for reply in channel.messages:
            if reply.is_reply and reply.thread_ts is not None:
                threads.setdefault(reply.thread_ts, []).append(reply)
        listed = []
        for message in top[start : start + limit]:
            entry = message.to_api()
            replies = threads.get(message.ts, [])
            if replies:
                entry["thread_ts"] = message.ts
                entry["reply_count"] = len(replies)
                entry["latest_reply"] = replies[-1].ts
            listed.append(entry)
        more = len(top) > start + limit
        answer: dict[str, Any] = {"messages": listed, "has_more": more}
        if more:
            answer["response_metadata"] = {"next_cursor": f"offset:{start + limit}"}
        return answer

    def _replies(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args)
        message = channel.find(str(args.get("ts", "")))
        if message is None:
            raise _ApiError("thread_not_found")
        root_ts = message.thread_ts or message.ts
        thread = [m for m in channel.messages if m.ts == root_ts or m.thread_ts == root_ts]
        limit, start = _limit(args), _cursor_offset(args)
        more = len(thread) > start + limit
        answer: dict[str, Any] = {
            "messages": [m.to_api() for m in thread[start : start + limit]],
            "has_more": more,
        }
        if more:
            answer["response_metadata"] = {"next_cursor": f"offset:{start + limit}"}
        return answer


_METHODS: dict[str, Callable[[LocalSlack, dict[str, Any]], dict[str, Any]]] = {
    "auth.test": LocalSlack._auth_test,
    "chat.postMessage": LocalSlack._post_message,
    "chat.update": LocalSlack._update,
    "chat.postEphemeral": LocalSlack._post_ephemeral,
    "chat.getPermalink": LocalSlack._get_permalink,
    "views.open": LocalSlack._views_open,
    "views.update": LocalSlack._views_update,
    "views.publish": LocalSlack._views_publish,
    "conversations.info": LocalSlack._conversations_info,
    "users.info": LocalSlack._users_info,
    "conversations.history": LocalSlack._history,
    "conversations.replies": LocalSlack._replies,
    "usergroups.users.list": LocalSlack._usergroup_users,
}


# --- argument checks ------------------------------------------------------------------------------


def _optional_str(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    return value if isinstance(value, str) and value else None


def _within(ts: str, args: dict[str, Any]) -> bool:
    """Whether ``ts`` is after ``oldest`` and before ``latest`` (when given)."""
    try:
        oldest = float(args.get("oldest") or 0)
        latest = float(args["latest"]) if args.get("latest") else None
    except (TypeError, ValueError):
        raise _ApiError("invalid_ts_oldest", "[ERROR] oldest and latest are timestamps") from None
    at = float(ts)
    return at > oldest and (latest is None or at < latest)


def _cursor_offset(args: dict[str, Any]) -> int:
    """Where the page a ``cursor`` from an earlier answer asks for starts (0 without one)."""
    cursor = args.get("cursor")
    if not cursor:
        return 0
    kind, _, offset = str(cursor).partition(":")
    if kind != "offset" or not offset.isdigit():
        raise _ApiError("invalid_cursor", f"[ERROR] cursor {cursor!r} was not given by this API")
    return int(offset)


def _limit(args: dict[str, Any]) -> int:
    try:
        return max(1, min(int(args.get("limit", 100)), 1000))
    except (TypeError, ValueError):
        raise _ApiError(
            "invalid_limit", f"[ERROR] limit must be an integer, got {args['limit']!r}"
        ) from None


def _message_content(args: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    text = args.get("text", "")
    if not isinstance(text, str):
        raise _ApiError(
            "invalid_arguments", f"[ERROR] text must be a string, got {type(text).__name__}"
        )
    return text, _checked_blocks(args.get("blocks", []), limit=_MAX_BLOCKS_PER_MESSAGE)


def _checked_blocks(blocks: Any, *, limit: int) -> list[dict[str, Any]]:
    if not isinstance(blocks, list):
        raise _ApiError(
            "invalid_blocks_format",
            f"[ERROR] blocks must be a JSON array, got {type(blocks).__name__}",
        )
    if len(blocks) > limit:
        raise _ApiError(
            "invalid_blocks", f"[ERROR] no more than {limit} items allowed [json-pointer:/blocks]"
        )
    for index, block in enumerate(blocks):
        if not isinstance(block, dict):
            raise _ApiError(
                "invalid_blocks",
                f"[ERROR] block {index} must be an object, got {type(block).__name__}"
                f" [json-pointer:/blocks/{index}]",
            )
        problem = _block_problem(block)
        if problem is not None:
            raise _ApiError("invalid_blocks", f"[ERROR] {problem} [json-pointer:/blocks/{index}]")
    return blocks


def _block_problem(block: dict[str, Any]) -> str | None:
    try:
        parsed = Block.parse(block)
        if parsed is None:
            return f"unknown block type {block.get('type')!r}"
        parsed.validate_json()
    except (SlackObjectFormationError, TypeError, ValueError, KeyError, AttributeError) as error:
        return str(error) or type(error).__name__
    return None


def _checked_view(view: Any, *, allowed_types: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(view, dict):
        raise _ApiError("invalid_arguments", "[ERROR] view must be a JSON object")
    if view.get("type") not in allowed_types:
        raise _ApiError(
            "invalid_arguments",
            f"[ERROR] view type must be one of {', '.join(allowed_types)},"
            f" got {view.get('type')!r}",
        )
    _checked_blocks(view.get("blocks", []), limit=100)
    try:
        View(**view).validate_json()
    except (SlackObjectFormationError, TypeError, ValueError, KeyError, AttributeError) as error:
        raise _ApiError("invalid_arguments", f"[ERROR] {error}") from None
    return view


def _stored_view(
    view: dict[str, Any], *, view_id: str, team_id: str, bot_id: str, serial: int = 0
) -> dict[str, Any]:
    return {
        "callback_id": "",
        "private_metadata": "",
        "external_id": "",
        **view,
        "id": view_id,
        "team_id": team_id,
        "bot_id": bot_id,
        "app_id": "ACOUNTERSIGN",
        "root_view_id": view_id,
        "previous_view_id": None,
        "state": {"values": {}},
        "hash": f"1700000000.{view_id}{serial:04d}",
    }


# --- HTTP -----------------------------------------------------------------------------------------

_LOCAL_SLACK = web.AppKey("local_slack", LocalSlack)


async def _read_arguments(request: web.Request) -> dict[str, Any]:
    args: dict[str, Any] = dict(request.query)
    if request.can_read_body:
        if request.content_type == "application/json":
            try:
                body = await request.json()
            except ValueError:
                raise _ApiError("invalid_json", "[ERROR] the body is not valid JSON") from None
            if not isinstance(body, dict):
                raise _ApiError("invalid_json", "[ERROR] the JSON body must be an object")
            args.update(body)
        else:
            form = await request.post()
            args.update({key: value for key, value in form.items() if isinstance(value, str)})
    for key in _JSON_ARGUMENTS:
        value = args.get(key)
        if isinstance(value, str):
            try:
                args[key] = json.loads(value)
            except ValueError:
                if key == "blocks":
                    raise _ApiError("invalid_blocks_format", "[ERROR] blocks is not JSON") from None
                raise _ApiError("invalid_arguments", f"[ERROR] {key} is not JSON") from None
    return args


async def _handle(request: web.Request) -> web.Response:
    slack = request.app[_LOCAL_SLACK]
    method = request.match_info["method"]
    authorization = request.headers.get("Authorization")
    try:
        args = await _read_arguments(request)
    except _ApiError as error:
        explanation = error.messages[0] if error.messages else f"[ERROR] {error.error}"
        status, body, headers = slack.answer(
            method, {}, authorization, unreadable=(error.error, explanation)
        )
    else:
        status, body, headers = slack.answer(method, args, authorization)
        stall = slack.take_stall(method)
        if stall:
            await asyncio.sleep(stall)
    return web.json_response(body, status=status, headers=headers)


def build_app(slack: LocalSlack, socket_mode: LocalSocketMode | None = None) -> web.Application:
    """The aiohttp application serving ``slack`` at ``/api/<method>`` (and Socket Mode)."""
    app = web.Application()
    app[_LOCAL_SLACK] = slack
    if socket_mode is not None:
        socket_mode.install(app)
    app.router.add_route("*", "/api/{method}", _handle)
    return app


@asynccontextmanager
async def running_local_slack(
    token: str = DEFAULT_TOKEN,
    *,
    slack: LocalSlack | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    socket_mode: LocalSocketMode | None = None,
) -> AsyncIterator[tuple[LocalSlack, str]]:
    """Serve a local Slack on ``host:port`` (0: any free port); yield it and its API base URL.

    The base URL ends with ``/api/``, ready for ``AsyncWebClient(base_url=...)``.
    """
    slack = slack if slack is not None else LocalSlack(token=token)
    runner = web.AppRunner(build_app(slack, socket_mode), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound_host, bound_port = runner.addresses[0][:2]
        slack.base_url = f"http://{bound_host}:{bound_port}/api/"
        yield slack, slack.base_url
    finally:
        slack.base_url = None
        if socket_mode is not None:
            await socket_mode.close()
        await runner.cleanup()
