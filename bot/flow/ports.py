"""What the flow needs from the world around it, as small Protocols the edges fulfil.

The flow calls these and never the edges' classes: the app factory (bot/app.py) passes in
Slack's publisher and directory (bot/slack/publish.py, bot/slack/directory.py), the agent API's
long-poll waiters (bot/api/waiters.py) and the store watch the background loops share
(bot/monitoring/store_watch.py); tests may pass anything that answers the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from contracts.authority import ApproverProfile
from store.base import StoreUnavailable
from store.proposals import Proposal

__all__ = ["Directory", "Publisher", "StoreWatch", "Waiters"]


class Publisher(Protocol):
    """Slack, as far as the flow speaks to it directly (everything else goes through the
    outbox, which the transitions fill in the store)."""

    async def tell(self, proposal: Proposal | None, channel: str, user: str, text: str) -> None:
        """A private answer in ``channel`` that only ``user`` sees."""

    async def open_view(
        self, proposal: Proposal | None, trigger_id: str, view: dict[str, Any]
    ) -> bool:
        """Open ``view`` (a modal) for the click ``trigger_id`` came with; False if Slack did
        not."""


class Directory(Protocol):
    """Who people are and what they belong to, as Slack says now."""

    async def profile(self, user_id: str) -> ApproverProfile | None:
        """The person's profile (team, bot, guest), or None when Slack does not know them."""

    async def home_team(self) -> str | None:
        """The workspace Countersign is installed in."""

    async def role_members(self, roles: Mapping[str, frozenset[str]]) -> dict[str, frozenset[str]]:
        """Each role's members, user groups read as their members now."""

    async def group_members(self, group: str) -> frozenset[str]:
        """A user group's members now (none when Slack will not say)."""


class Waiters(Protocol):
    """Whoever waits for a proposal to change (the agents' long polls)."""

    def notify(self, proposal_id: str) -> None:
        """``proposal_id`` changed: wake whoever waits for it."""


class StoreWatch(Protocol):
    """Says once when the store stops answering a background loop, and when it is back."""

    @property
    def unanswered_count(self) -> int:
        """How many times the store did not answer so far."""

    def unanswered(self, error: StoreUnavailable, *, where: str) -> None:
        """The store did not answer ``where`` (said once, not on every round)."""

    def answered(self) -> None:
        """The store answered again."""
