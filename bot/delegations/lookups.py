"""Which delegation tokens are looked up in the store, and how often one never seen may be.

A delegation token is found by its hash in the store (bot/delegations/commands.py): each lookup
is a store read, made before the caller is known, so before any agent's limit could apply.
Anyone can send a bearer token that starts with ``csd_``; unchecked, a flood of made-up ones
would cost a store read each. Three checks bound that:

* **shape**: a token that is not ``csd_`` and 43 URL-safe characters (what
  ``secrets.token_urlsafe(32)`` mints) is refused (401) without a lookup (:func:`well_formed`).
* **known tokens**: a hash the store has answered on this instance (minted here, or found here
  once) names its agent; the lookup is charged to that agent's own bucket before it is made, so
  an agent flooding with a revoked or expired token spends its own rate, nobody else's.
* **unknown tokens**: a well-formed token not seen here takes from one small bucket shared by
  all callers (``[delegation] unknown_tokens_per_second``, ``unknown_tokens_burst``) before its
  lookup; with the bucket empty, 429 with Retry-After and no lookup. A token the store finds
  gives its place back and is known from then on.

Why one shared bucket rather than a negative cache or a bucket per caller: made-up tokens are
fresh each time, so a cache of misses never hits; and before the lookup nothing tells one
unauthenticated caller from another (behind a load balancer every address is the balancer's).
What it costs: while someone floods it, the *first* use on an instance of a delegation minted
elsewhere may be told to retry (clients retry 429 after Retry-After); agents' own tokens,
delegations known here, and people's clicks are untouched. The known tokens are bounded
(:data:`REMEMBERED`, the least recently used forgotten first), and only the store's answers
put one there, so no caller can fill them with tokens of its own making.
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from bot.api.buckets import TokenBucket
from bot.settings.delegation import DelegationSettings

__all__ = ["REMEMBERED", "TOKEN_PREFIX", "TOKEN_SHAPE", "TokenLookups", "well_formed"]

#: Every delegation token starts so: an agent's own token never does (they are told apart
#: before any lookup).
TOKEN_PREFIX: Final = "csd_"

#: A delegation token as minted: the prefix and ``secrets.token_urlsafe(32)`` (43 characters).
TOKEN_SHAPE: Final = re.compile(r"csd_[A-Za-z0-9_-]{43}")

#: How many token hashes the store has answered are kept, with their agents.
REMEMBERED: Final = 10_000


def well_formed(token: str) -> bool:
    """Whether ``token`` has the shape of a minted delegation token (checked in full: no
    lookup is made for anything else)."""
    return TOKEN_SHAPE.fullmatch(token) is not None


class TokenLookups:
    """The per-instance record of delegation token lookups: the hashes the store has answered,
    with their agents, and the bucket of lookups of hashes it has not."""

    def __init__(
        self,
        settings: DelegationSettings,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        remembered: int = REMEMBERED,
    ) -> None:
        self._monotonic = monotonic
        self._unknown = TokenBucket.filled(
            settings.unknown_tokens_per_second, settings.unknown_tokens_burst, monotonic()
        )
        self._known: OrderedDict[str, str] = OrderedDict()
        self._remembered = remembered

    def agent_of(self, digest: str) -> str | None:
        """The agent of the delegation whose token hash is ``digest``, when the store answered
        it on this instance before; None otherwise."""
        agent = self._known.get(digest)
        if agent is not None:
            self._known.move_to_end(digest)
        return agent

    def remember(self, digest: str, agent: str) -> None:
        """The store holds a delegation of ``agent`` with token hash ``digest``."""
        self._known[digest] = agent
        self._known.move_to_end(digest)
        while len(self._known) > self._remembered:
            self._known.popitem(last=False)

    def take_unknown(self) -> float:
        """A place for one lookup of a token not known here: 0.0 when taken, otherwise the
        seconds until one is free (nothing taken then)."""
        return self._unknown.take(self._monotonic())

    def give_back_unknown(self) -> None:
        """The place taken by :meth:`take_unknown` back: the store found the token (it was no
        made-up one), or could not be asked."""
        self._unknown.give_back()
