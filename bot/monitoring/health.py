"""Readiness: whether this instance can do its work now, and Slack's answer to the bot token.

``/healthz`` says the process answers (no I/O: bot/api/proposals.py). ``/readyz`` says it is
ready, each check with a detail:

- **store**: the store answers a read (the audit chain's head) within 5 seconds;
- **migrations**: the store applied every migration this version knows when it was opened
  (opening refuses a database with migrations this version does not know);
- **slack**: ``auth.test`` succeeded with the bot token at least once since start;
- **outbox**: not stuck. Stuck means entries wait to be delivered (Slack posts, callbacks) and
  this instance delivered none of them, nor saw the outbox empty, for
  ``monitoring.outbox_stuck_seconds`` (5 minutes by default): a dead delivery loop, a Slack
  refusing every call, or a database that takes no writes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.monitoring.metrics import Metrics
from bot.settings.monitoring import MonitoringSettings
from store.protocol import Store

__all__ = ["Check", "Readiness", "SlackUnusable", "confirm_slack", "confirm_slack_forever"]

log = logging.getLogger(__name__)

#: auth.test's answers that mean the token itself is wrong, not that Slack is unwell
_TOKEN_REFUSED = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "not_allowed_token_type",
        "no_permission",
        "team_access_not_granted",
    }
)
#: how long the store may take to answer the readiness read
_STORE_TIMEOUT = 5.0


class SlackUnusable(Exception):
    """Slack refused the bot token, or could not be reached, when Countersign started."""


@dataclass(frozen=True, slots=True)
class Check:
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "detail": self.detail}


async def confirm_slack(client: AsyncWebClient, api_url: str, *, starting: bool = True) -> str:
    """Call ``auth.test`` with the bot token; the workspace and bot it names. SlackUnusable
    says what is wrong and where to fix it: the token (SLACK_BOT_TOKEN) or the way to Slack,
    and, at a start (``starting``), that --allow-offline runs anyway."""
    # at a start, the way to run anyway; once running (--allow-offline), what happens next
    offline = "or start with --allow-offline to run anyway"
    retried = offline if starting else "Countersign tries auth.test again until it succeeds"
    refused = offline if starting else "then restart Countersign"
    try:
        answer = await client.auth_test()
    except SlackApiError as error:
        code = str(error.response.get("error") or f"HTTP {error.response.status_code}")
        if code in _TOKEN_REFUSED:
            raise SlackUnusable(
                f"Slack refused the bot token SLACK_BOT_TOKEN (auth.test answered {code}). Set "
                "SLACK_BOT_TOKEN to the Bot User OAuth Token (xoxb-...) from your Slack app's "
                "'OAuth & Permissions' page (install or reinstall the app to the workspace "
                f"first if it has none, or it was revoked), {refused}."
            ) from None
        shortly = "Try again shortly, " if starting else ""
        raise SlackUnusable(
            f"Slack at {api_url} answered auth.test with {code}. {shortly}{retried} "
            "(posts wait in the outbox until Slack answers)."
        ) from None
    except (SlackClientError, aiohttp.ClientError, OSError, TimeoutError) as error:
        raise SlackUnusable(
            f"cannot reach Slack at {api_url} (auth.test: {type(error).__name__}: {error}). "
            f"Check the network, and SLACK_API_URL if it is set, {retried}."
        ) from None
    return f"workspace {answer.get('team')} ({answer.get('team_id')}) as {answer.get('user')}"


class Readiness:
    """What ``/readyz`` reports (see the module's docstring)."""

    def __init__(
        self,
        store: Store,
        metrics: Metrics,
        settings: MonitoringSettings,
        *,
        version: str,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._metrics = metrics
        self._settings = settings
        self._monotonic = monotonic
        self.version = version
        self._slack = Check(False, "auth.test has not answered yet")
        #: since when the outbox is known to be moving: start, an empty outbox, a delivery
        self._outbox_moved = monotonic()

    @property
    def slack_ok(self) -> bool:
        return self._slack.ok

    def slack_confirmed(self, who: str) -> None:
        self._slack = Check(True, f"auth.test succeeded: {who}")
        self._metrics.slack_auth_ok.set(1)

    def slack_failed(self, problem: str) -> None:
        if not self._slack.ok:  # once it succeeded, a later hiccup does not unready it
            self._slack = Check(False, f"auth.test has not succeeded: {problem}")

    def outbox_idle(self) -> None:
        """Nothing is waiting in the outbox now."""
        self._outbox_moved = self._monotonic()

    async def report(self) -> tuple[bool, dict[str, Any]]:
        """Whether the instance is ready, and the answer ``/readyz`` gives."""
        store, pending = await self._store_check()
        checks = {
            "store": store,
            "migrations": Check(
                store.ok,
                "every migration of this version was applied when the store was opened"
                if store.ok
                else "unknown: the store does not answer",
            ),
            "slack": self._slack,
            "outbox": self._outbox_check(pending),
        }
        ready = all(check.ok for check in checks.values())
        return ready, {
            "ready": ready,
            "version": self.version,
            "checks": {name: check.to_json() for name, check in checks.items()},
        }

    async def _store_check(self) -> tuple[Check, int | None]:
        try:
            async with asyncio.timeout(_STORE_TIMEOUT):
                head = await self._store.audit_head()
                pending = await self._store.pending_deliveries()
                pending += await self._store.escalations().pending_deliveries()
        except TimeoutError:
            return Check(False, f"the store did not answer within {_STORE_TIMEOUT:g} s"), None
        except Exception as error:  # whatever the store says, it is not answering
            return Check(False, f"the store does not answer: {error}"), None
        if pending == 0:
            self.outbox_idle()
        return Check(True, f"answered; the audit chain has {head.seq} entries"), pending

    def _outbox_check(self, pending: int | None) -> Check:
        if pending is None:
            return Check(False, "unknown: the store does not answer")
        if pending == 0:
            return Check(True, "nothing waiting")
        moved = self._outbox_moved
        if self._metrics.last_delivery is not None:
            moved = max(moved, self._metrics.last_delivery)
        still = self._monotonic() - moved
        limit = self._settings.outbox_stuck_seconds
        if still > limit:
            return Check(
                False,
                f"stuck: {pending} entries wait and none was delivered for {still:.0f} s "
                f"(monitoring.outbox_stuck_seconds = {limit:g})",
            )
        return Check(True, f"{pending} entries waiting; moving {still:.0f} s ago")


async def confirm_slack_forever(
    readiness: Readiness, client: AsyncWebClient, api_url: str, every: float
) -> None:
    """Try ``auth.test`` now and then every ``every`` seconds until it succeeds: the start
    with --allow-offline, which does not wait for Slack."""
    tries = 0
    while True:
        try:
            who = await confirm_slack(client, api_url, starting=False)  # it runs already
        except SlackUnusable as problem:
            readiness.slack_failed(str(problem))
            if tries == 0:
                log.error("running without Slack (--allow-offline) until it answers: %s", problem)
            else:
                log.warning("Slack is still not usable: %s", problem)
            tries += 1
            await asyncio.sleep(every)
        else:
            readiness.slack_confirmed(who)
            log.info("connected to Slack: %s", who)
            return
