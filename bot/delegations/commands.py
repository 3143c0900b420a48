"""Delegation from Slack: a person lets one agent act for them for a short while.

``/countersign delegate <agent> [for 8h]`` mints a token bound to that person and agent, shown
once and only to them (the slash command's ephemeral answer); the store keeps only its SHA-256.
A proposal sent with the token (``Authorization: Bearer <token>``) is the agent's, with
``requested_by`` = that person: the person delegates their own authority, so they need not be in
the agent's ``acts_for``, and like any requester they can never approve what it proposes. Only
agents configured with ``delegation = true`` accept delegations. A delegation lasts the
``[delegation]`` default (1 hour) unless the person names a duration, never past the configured
``max``; its person revokes it with ``/countersign revoke-delegation <id>`` or on the Home tab.
Minting, every delegated submission and revoking are audited. An expired or revoked token, or
one whose agent no longer accepts delegations, is refused (401); so is one not shaped as minted,
without a lookup. Lookups are charged to the token's agent when it is known here, and those of
tokens never seen are bounded for all callers together (bot/delegations/lookups.py). Tokens
refused without a lookup (their shape, the bound) are told to the app's metrics.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from aiohttp import web

from bot.api.refusals import UNCOUNTED, Refusals
from bot.delegations.lookups import TOKEN_PREFIX, TokenLookups, well_formed
from bot.flow import deciders
from bot.render.blocks import escape
from bot.render.clicks import refusal_text
from bot.render.delegations import delegation_list_blocks, minted_blocks
from bot.settings import AgentSettings
from contracts.authority import RefusalWords
from contracts.durations import parse_duration, spoken_duration
from contracts.ids import opaque_id
from store.base import StoreUnavailable
from store.delegations import Delegation, DelegationNotFound, NewDelegation, token_hash
from store.revocation import Revoked

if TYPE_CHECKING:
    from bot.flow.service import Service

__all__ = [
    "DELEGATIONS",
    "TOKEN_PREFIX",
    "DelegationTokenRefused",
    "Delegations",
    "UnknownTokensLimited",
    "is_delegation_token",
]

Answer = tuple[str, list[dict[str, Any]]]

#: what the agent's admission is: it charges a request to the agent's bucket or raises its 429
Admit = Callable[[AgentSettings], None]


class DelegationTokenRefused(Exception):
    """The delegation token is malformed, unknown, expired or revoked, or its agent no longer
    accepts delegations."""


class UnknownTokensLimited(Exception):
    """Too many delegation tokens this instance has not seen were sent: this one was not looked
    up."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(self.__doc__)
        self.retry_after = retry_after


def is_delegation_token(token: str) -> bool:
    return token.startswith(TOKEN_PREFIX)


def _new_id() -> str:
    return opaque_id("dl_")


#: Delegating in the words of the checks of any decision (only those a person's own act takes:
#: a role, and the people behind a call, are not asked).
DELEGATING: Final = RefusalWords(
    bot="bots and apps cannot delegate",
    deleted="deactivated accounts cannot delegate",
    team="people from another workspace cannot delegate here",
    guest="guests cannot delegate to agents",
)


class Delegations:
    def __init__(
        self,
        service: Service,
        clock: Callable[[], datetime],
        *,
        lookups: TokenLookups | None = None,
        refusals: Refusals = UNCOUNTED,
    ) -> None:
        self._service = service
        self._clock = clock
        self._refusals = refusals
        self.lookups = lookups or TokenLookups(service.settings.delegation)

    # --- the agent's side -------------------------------------------------------------------

    async def authenticate(self, token: str, admit: Admit) -> tuple[AgentSettings, Delegation]:
        """The agent and delegation ``token`` stands for, or DelegationTokenRefused. The token
        is found by its hash: no stored secret is ever compared character by character.

        Before the store is asked: a token not shaped as minted is refused; one whose hash the
        store answered here before is charged by ``admit`` to its agent (its 429); any other
        takes a place among the lookups of unknown tokens (UnknownTokensLimited past them). A
        token found first here is charged by ``admit`` once found. Each refusal made without
        a lookup is told to the ``refusals`` given."""
        if not well_formed(token):
            self._refusals.token_refused("malformed")
            raise DelegationTokenRefused(
                f"malformed delegation token: expected {TOKEN_PREFIX!r} and 43 URL-safe "
                "characters (A-Z, a-z, 0-9, '-', '_'), as /countersign delegate shows it"
            )
        digest = token_hash(token)
        settings = self._service.settings
        known = self.lookups.agent_of(digest)
        agent = None if known is None else settings.agents.get(known)
        if agent is not None:
            admit(agent)
        else:
            wait = self.lookups.take_unknown()
            if wait > 0:
                self._refusals.token_refused("unknown_tokens_limit")
                raise UnknownTokensLimited(wait)
        store = self._service.store.delegations()
        try:
            delegation = await store.delegation_for_token(digest)
        except StoreUnavailable:
            if agent is None:  # not looked up after all: its place among unknown ones is free
                self.lookups.give_back_unknown()
            raise
        if delegation is None:
            raise DelegationTokenRefused("unknown delegation token")
        if agent is None:  # a real token, first seen here: known, and charged, from now on
            self.lookups.give_back_unknown()
            self.lookups.remember(digest, delegation.agent)
            first = settings.agents.get(delegation.agent)
            if first is not None:
                admit(first)
        now = self._clock()
        if delegation.revoked_at is not None:
            raise DelegationTokenRefused(
                f"delegation {delegation.id} was revoked by {delegation.revoked_by}; ask "
                f"{delegation.person} to delegate again (/countersign delegate {delegation.agent})"
            )
        if delegation.expires_at <= now:
            raise DelegationTokenRefused(
                f"delegation {delegation.id} expired at {delegation.expires_at.isoformat()}; ask "
                f"{delegation.person} to delegate again (/countersign delegate {delegation.agent})"
            )
        agent = self._service.settings.agents.get(delegation.agent)
        if agent is None or not agent.delegation:
            raise DelegationTokenRefused(
                f"delegation {delegation.id}: agent {delegation.agent!r} no longer accepts "
                "delegations (its configuration needs delegation = true)"
            )
        return agent, delegation

    # --- the person's side: /countersign delegate, delegations, revoke-delegation -------------

    async def delegate(self, user: str, text: str) -> Answer:
        """``/countersign delegate <agent> [for 8h]``: mint a token, shown once, to ``user``."""
        words = text.split()
        settings = self._service.settings
        accepting = sorted(name for name, agent in settings.agents.items() if agent.delegation)
        usage = "Say which agent: `/countersign delegate <agent>` or `... <agent> for 8h`."
        if accepting:
            usage += f" Agents that accept delegations: {', '.join(accepting)}."
        if not words:
            return _plain(usage)
        name, rest = words[0], words[1:]
        agent = settings.agents.get(name)
        if agent is None or not agent.delegation:
            why = "is not configured" if agent is None else "does not accept delegations"
            return _plain(f"Agent `{escape(name[:60])}` {why}. {usage}")
        limits = settings.delegation
        duration = limits.default
        if rest:
            if len(rest) != 2 or rest[0].lower() != "for":
                return _plain(f"Expected `for` and a duration after the agent's name. {usage}")
            try:
                duration = parse_duration(rest[1])
            except ValueError as error:
                return _plain(f"{escape(str(error))}.")
            if duration <= timedelta(0) or duration > limits.max:
                longest = spoken_duration(limits.max.total_seconds())
                return _plain(
                    f"A delegation lasts at most {longest} here (asked: `{escape(rest[1][:20])}`)."
                )
        refused = await self._person_refusal(user)
        if refused is not None:
            return _plain(refusal_text(refused))
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        now = self._clock()
        delegation = await self._service.store.delegations().create_delegation(
            NewDelegation(
                id=_new_id(),
                token_hash=token_hash(token),
                agent=agent.name,
                person=user,
                created_at=now,
                expires_at=now + duration,
            )
        )
        self.lookups.remember(token_hash(token), agent.name)
        # the fallback text never holds the token: only the blocks, shown to this person once
        return (
            f"Agent {agent.name} may act for you for {spoken_duration(duration.total_seconds())}",
            minted_blocks(delegation, token, now=now),
        )

    async def listing(self, user: str) -> Answer:
        """``/countersign delegations``: ``user``'s active delegations, each with Revoke."""
        now = self._clock()
        mine = await self.active_of(user)
        return f"{len(mine)} agent(s) act for you", delegation_list_blocks(mine, now=now)

    async def active_of(self, user: str) -> list[Delegation]:
        return await self._service.store.delegations().delegations_of(user, now=self._clock())

    async def revoke(self, user: str, delegation_id: str) -> str:
        """Revoke ``delegation_id`` if it is ``user``'s own; the answer, for ``user`` alone."""
        store = self._service.store.delegations()
        try:
            delegation = await store.get_delegation(delegation_id)
        except DelegationNotFound:
            delegation = None
        if delegation is None or delegation.person != user:
            # the same answer for someone else's delegation and one that does not exist
            return refusal_text(f"you have no delegation {delegation_id[:60]}")
        result = await store.revoke_delegation(delegation.id, actor=user, now=self._clock())
        if isinstance(result, Revoked):
            return (
                f":no_entry: Delegation `{delegation.id}` is revoked: agent "
                f"*{escape(delegation.agent)}* can no longer act for you with it."
            )
        return refusal_text(result.reason)

    async def _person_refusal(self, user: str) -> str | None:
        """Only a real, active, full member of an allowed workspace may delegate: the checks of
        any decision (bot/flow/deciders.py) without a role, since a person delegates their own
        authority, and with nobody behind it but themselves."""
        service = self._service
        return await deciders.refusal(
            service.settings, service.directory, user, roles=None, agent=None, words=DELEGATING
        )


#: The Delegations of an app, for the agent API (bot/api/proposals.py).
DELEGATIONS: web.AppKey[Delegations] = web.AppKey("delegations", Delegations)


def _plain(text: str) -> Answer:
    return text, [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]
