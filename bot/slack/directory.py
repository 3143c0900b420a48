"""Who people are in Slack, read at click time: users.info and the app's own workspace.

Answers are cached briefly (a click storm reads a profile once); a profile that cannot be read
is None, and the authority checks then refuse (fail closed).

What Slack says has changed is forgotten at once rather than at the cache's end: a person's
profile (``user_change``: deactivated, turned into a guest) and a user group's members
(``subteam_members_changed``, ``subteam_updated``: someone removed from the group a role
names, the group disabled). The next check reads them from Slack again, so a person removed from
an approvers' group cannot decide in the minute the cache would have kept them. The event is
not applied itself: Slack may deliver events late, out of order or twice, and a stale "added"
must not undo a later removal; forgetting can only make a check read the current state.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.settings import is_user_group
from contracts.authority import ApproverProfile
from store.base import StoreUnavailable

__all__ = [
    "DIRECTORY_EVENTS",
    "SlackDirectory",
    "forget",
    "heard",
    "register_directory_listeners",
]

log = logging.getLogger(__name__)

#: The events after which the directory forgets what it read (manifest.yml subscribes to them).
DIRECTORY_EVENTS: Final = ("user_change", "subteam_members_changed", "subteam_updated")
#: What starts an instance's message to the others that something in Slack changed.
ANNOUNCED: Final = "directory:"


class SlackDirectory:
    def __init__(
        self,
        client: AsyncWebClient,
        *,
        ttl: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._ttl = ttl
        self._monotonic = monotonic
        self._profiles: dict[str, tuple[float, ApproverProfile]] = {}
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}
        self._home_team: str | None = None

    async def profile(self, user_id: str) -> ApproverProfile | None:
        cached = self._profiles.get(user_id)
        if cached is not None and self._monotonic() - cached[0] < self._ttl:
            return cached[1]
        try:
            response = await self._client.users_info(user=user_id)
        except (SlackApiError, SlackClientError, OSError, TimeoutError) as error:
            log.warning("users.info for %s failed: %s", user_id, error)
            return None
        user = response.get("user") or {}
        profile = ApproverProfile(
            user_id=str(user.get("id") or user_id),
            team_id=user.get("team_id"),
            is_bot=bool(user.get("is_bot")) or bool(user.get("is_app_user")),
            deleted=bool(user.get("deleted")),
            is_guest=bool(user.get("is_restricted")) or bool(user.get("is_ultra_restricted")),
        )
        self._profiles[user_id] = (self._monotonic(), profile)
        return profile

    def forget_user(self, user_id: str) -> None:
        """Slack said ``user_id``'s profile changed: read it again at the next check."""
        self._profiles.pop(user_id, None)

    def forget_group(self, group: str) -> None:
        """Slack said user group ``group`` changed: read its members again at the next check.
        Until they can be read, the group adds nobody (:meth:`group_members`)."""
        self._groups.pop(group, None)

    async def home_team(self) -> str | None:
        """The workspace the app is installed in (auth.test), read once."""
        if self._home_team is None:
            try:
                response = await self._client.auth_test()
            except (SlackApiError, SlackClientError, OSError, TimeoutError) as error:
                log.warning("auth.test failed: %s", error)
                return None
            self._home_team = response.get("team_id")
        return self._home_team

    async def role_members(self, roles: Mapping[str, frozenset[str]]) -> dict[str, frozenset[str]]:
        """Each role's members now: its user ids, plus the members of its user groups.

        A group's members are read with usergroups.users.list and kept for the cache's time;
        a group that cannot be read adds nobody (fail closed) until it can.
        """
        expanded = {}
        for role, members in roles.items():
            people = {member for member in members if not is_user_group(member)}
            for group in members - people:
                people |= await self.group_members(group)
            expanded[role] = frozenset(people)
        return expanded

    async def group_members(self, group: str) -> frozenset[str]:
        cached = self._groups.get(group)
        if cached is not None and self._monotonic() - cached[0] < self._ttl:
            return cached[1]
        try:
            response = await self._client.usergroups_users_list(usergroup=group)
        except (SlackApiError, SlackClientError, OSError, TimeoutError) as error:
            log.warning("usergroups.users.list for %s failed: %s", group, error)
            return cached[1] if cached is not None else frozenset()
        members = frozenset(str(user) for user in response.get("users") or [])
        self._groups[group] = (self._monotonic(), members)
        return members

    async def check_user_groups(self, roles: Mapping[str, frozenset[str]]) -> list[str]:
        """At startup: a sentence for each role whose user groups Slack will not list."""
        problems = []
        for role, members in roles.items():
            for group in sorted(member for member in members if is_user_group(member)):
                try:
                    await self._client.usergroups_users_list(usergroup=group)
                except SlackApiError as error:
                    code = error.response.get("error")
                    why = (
                        "this workspace's plan has no user groups"
                        if code in ("paid_only", "paid_teams_only")
                        else f"Slack answered {code}"
                    )
                    problems.append(
                        f"role {role!r} names user group {group}, which cannot be read ({why}); "
                        "its members cannot decide until it can. The user ids listed in roles "
                        "still work."
                    )
                except (SlackClientError, OSError, TimeoutError) as error:
                    problems.append(f"role {role!r}: user group {group} could not be read: {error}")
        return problems


def register_directory_listeners(
    app: AsyncApp,
    directory: SlackDirectory,
    *,
    announce: Callable[[str], Awaitable[None]] | None = None,
) -> None:
    """Forget a profile or a user group's members when Slack says it changed
    (:data:`DIRECTORY_EVENTS`), here and, through ``announce`` (the store's), in the other
    instances (:func:`heard`): Slack sends each event to one of them only."""

    async def changed(key: str) -> None:
        forget(directory, key)
        if announce is None:
            return
        try:
            await announce(ANNOUNCED + key)
        except StoreUnavailable as error:  # the others forget it when their cache ends
            log.warning("could not tell the other instances that %s changed: %s", key, error)

    @app.event("user_change")
    async def on_user_change(event: dict[str, Any]) -> None:
        user = event.get("user")
        user_id = user.get("id") if isinstance(user, dict) else None
        if isinstance(user_id, str) and user_id:
            await changed(f"user:{user_id}")

    @app.event("subteam_members_changed")
    async def on_members_changed(event: dict[str, Any]) -> None:
        group = event.get("subteam_id")
        if isinstance(group, str) and group:
            await changed(f"group:{group}")

    @app.event("subteam_updated")
    async def on_group_updated(event: dict[str, Any]) -> None:
        subteam = event.get("subteam")
        group = subteam.get("id") if isinstance(subteam, dict) else None
        if isinstance(group, str) and group:
            await changed(f"group:{group}")


def heard(directory: SlackDirectory, otherwise: Callable[[str], None]) -> Callable[[str], None]:
    """What the store's ``listen`` calls: an announcement of :func:`register_directory_listeners`
    makes ``directory`` forget what it names; anything else (a proposal's id) goes to
    ``otherwise``."""

    def on_message(message: str) -> None:
        if message.startswith(ANNOUNCED):
            forget(directory, message.removeprefix(ANNOUNCED))
        else:
            otherwise(message)

    return on_message


def forget(directory: SlackDirectory, key: str) -> None:
    """Forget what ``key`` names: ``user:<id>`` or ``group:<id>`` (anything else: nothing)."""
    kind, _, ident = key.partition(":")
    if kind == "user" and ident:
        directory.forget_user(ident)
    elif kind == "group" and ident:
        directory.forget_group(ident)
    else:
        return
    # debug: a large workspace's people change their status all day, each a user_change
    log.debug("Slack says %s %s changed: read again at the next check", kind, ident)
