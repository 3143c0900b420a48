"""Who people are in Slack, read at click time: users.info and the app's own workspace.

Answers are cached briefly (a click storm reads a profile once); a profile that cannot be read
is None, and the authority checks then refuse (fail closed).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

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
