"""Slack's rate limits, kept on Countersign's side: per method, and per channel for posting.

Slack limits each Web API method per workspace by tier (Tier 2: about 20 calls a minute, Tier 3:
about 50, Tier 4: about 100) and chat.postMessage to about one message a second per channel
(https://api.slack.com/apis/rate-limits). A 429 answer's ``Retry-After`` holds for the whole
method (for chat.postMessage, the whole channel), not only for the call that got it. So the
outbox asks :class:`SlackPacer` before each call: after a 429, every call to that method (and
channel) waits out the time Slack asked, and for a minute after that the backlog is spread at
the method's documented rate, with the short bursts Slack allows, so that it goes out at the
pace Slack takes it instead of meeting 429s again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["PACED_FOR_SECONDS", "PER_CHANNEL", "TIERS", "Pace", "SlackPacer", "pace_of"]


@dataclass(frozen=True, slots=True)
class Pace:
    """At most ``per_minute`` calls a minute on average, ``burst`` of them at once."""

    per_minute: float
    burst: int

    @property
    def interval(self) -> float:
        return 60.0 / self.per_minute


#: How long after a 429's Retry-After has passed calls to that method (and channel) stay paced
#: at its documented rate; without a 429 lately, calls go as fast as Slack takes them.
PACED_FOR_SECONDS = 60.0

#: Slack's tiers (calls a minute per method and workspace), with the bursts Slack tolerates.
TIERS = {1: Pace(1, 1), 2: Pace(20, 3), 3: Pace(50, 5), 4: Pace(100, 10)}

#: The methods Countersign calls, by tier (Slack's documentation of each method).
_METHOD_TIERS = {
    "chat.update": 3,
    "chat.delete": 3,
    "conversations.history": 3,
    "conversations.replies": 3,
    "conversations.info": 3,
    "chat.getPermalink": 4,
    "chat.postEphemeral": 4,
    "views.open": 4,
    "views.update": 4,
    "views.push": 4,
    "views.publish": 4,
    "users.info": 4,
    "usergroups.users.list": 2,
}

#: Methods limited per channel rather than per method: chat.postMessage, about one a second
#: (kept a little under, so that network jitter does not bring two inside Slack's second).
PER_CHANNEL = {"chat.postMessage": Pace(50, 1)}


def pace_of(method: str) -> Pace | None:
    """How fast ``method`` may be called (per channel for those in PER_CHANNEL); None: Slack
    documents no tier for it (auth.test, say), so only its 429s are heeded."""
    if method in PER_CHANNEL:
        return PER_CHANNEL[method]
    tier = _METHOD_TIERS.get(method)
    return None if tier is None else TIERS[tier]


class SlackPacer:
    """When each Slack call may go: Slack's 429s heeded per method (and channel), and calls
    spread at each method's documented rate (generic cell rate: a call is due at its turn, a
    burst of them may come early)."""

    def __init__(self, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        #: per (method, channel or ""): when its next call is due at the steady rate
        self._turn: dict[tuple[str, str], float] = {}
        #: per (method, channel or ""): until when Slack said to wait (Retry-After)
        self._blocked: dict[tuple[str, str], float] = {}

    @staticmethod
    def _key(method: str, channel: str | None) -> tuple[str, str]:
        return (method, channel or "") if method in PER_CHANNEL else (method, "")

    def wait(self, method: str, channel: str | None, *, longest: float) -> float:
        """Seconds until a call of ``method`` (to ``channel``) may go. When that is at most
        ``longest``, its turn is taken (call it after that wait); otherwise nothing is taken
        and the caller comes back later."""
        key = self._key(method, channel)
        now = self._monotonic()
        blocked = self._blocked.get(key, 0.0)
        pace = pace_of(method)
        if pace is None or now >= blocked + PACED_FOR_SECONDS:
            return max(blocked - now, 0.0)  # no 429 lately: as fast as Slack takes them
        turn = max(self._turn.get(key, now), now, blocked)
        early = (pace.burst - 1) * pace.interval  # a burst may come this much before its turn
        wait = max(turn - early - now, blocked - now, 0.0)
        if wait > longest:
            return wait
        self._turn[key] = turn + pace.interval
        return wait

    def limited(self, method: str, channel: str | None, retry_after: float) -> None:
        """Slack answered 429 with ``Retry-After``: nothing more to that method (and channel)
        until then, and what waited is spread out from then on, not sent all at once."""
        key = self._key(method, channel)
        until = self._monotonic() + max(retry_after, 0.0)
        self._blocked[key] = max(self._blocked.get(key, 0.0), until)
        self._turn[key] = max(self._turn.get(key, 0.0), until)
