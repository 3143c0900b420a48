"""Who people are in Slack, read at click time: users.info and the app's own workspace.

Answers are cached briefly (a click storm reads a profile once); a profile that cannot be read
is None, and the authority checks then refuse (fail closed).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.settings import is_user_group
from contracts.authority import ApproverProfile

__all__ = ["SlackDirectory"]

log = logging.getLogger(__name__)


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
