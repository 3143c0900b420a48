"""Who hears what the services did: every proposal and escalation that changed, and the private
answers to clicks made on the App Home tab.

A :class:`Subscribers` is built first and passed to ``Service`` and ``EscalationService`` at
construction; they call it after every transition and for every answer to a click on the Home tab.
Whoever listens (the App Home tab, bot/slack/home.py) is added with :meth:`Subscribers.add` when it
is built (it needs those services itself, so it cannot exist before them): nothing is patched onto
the services afterwards.
"""

from __future__ import annotations

from typing import Protocol

from store.escalations import Escalation
from store.proposals import Proposal

__all__ = ["Subscriber", "Subscribers"]


class Subscriber(Protocol):
    def proposal_changed(self, proposal: Proposal) -> None:
        """``proposal`` went through a transition (called at once: do no I/O inline)."""

    def escalation_changed(self, escalation: Escalation, previous_owner: str | None) -> None:
        """``escalation`` went through a transition; ``previous_owner`` owned it before."""

    async def notice(self, user: str, text: str) -> None:
        """Show ``text`` to ``user`` on their App Home tab (the answer to a click made there)."""


class Subscribers:
    """The subscribers the services tell; none at first."""

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def add(self, subscriber: Subscriber) -> None:
        self._subscribers.append(subscriber)

    def proposal_changed(self, proposal: Proposal) -> None:
        for subscriber in self._subscribers:
            subscriber.proposal_changed(proposal)

    def escalation_changed(self, escalation: Escalation, previous_owner: str | None) -> None:
        for subscriber in self._subscribers:
            subscriber.escalation_changed(escalation, previous_owner)

    async def notice(self, user: str, text: str) -> bool:
        """Show ``text`` on ``user``'s Home tab; False when nobody shows Home tabs (then the
        caller answers another way)."""
        for subscriber in self._subscribers:
            await subscriber.notice(user, text)
        return bool(self._subscribers)
