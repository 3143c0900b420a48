"""What revoking a standing rule and reviewing an automatic approval share: the collaborators
they are built with, and the checks any decision makes of the person on their Slack profile."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from bot.slack.directory import SlackDirectory
from bot.slack.publish import SlackPublisher
from contracts.authority import DecisionChain, refusal_reason

if TYPE_CHECKING:
    from bot.flow.service import Service

__all__ = ["StandingDecisions"]


class StandingDecisions:
    """A person's decision about standing rules, made in Slack (bot/standing/admin.py,
    bot/standing/review.py)."""

    def __init__(
        self,
        service: Service,
        clock: Callable[[], datetime],
        *,
        publisher: SlackPublisher,
        directory: SlackDirectory,
    ) -> None:
        self._service = service
        self._clock = clock
        self._publisher = publisher
        self._directory = directory

    async def _profile_refusal(
        self, user: str, *, approver_roles: Sequence[str], chain: DecisionChain
    ) -> str | None:
        """Why ``user`` may not decide (contracts.authority): a real, active member of an allowed
        workspace holding one of ``approver_roles``, nobody of ``chain``; or None."""
        service = self._service
        teams = await self._directory.allowed_teams(service.settings.approvals.allowed_teams)
        return refusal_reason(
            approver=await service.directory.profile(user),
            chain=chain,
            approver_roles=approver_roles,
            roles=await service.directory.role_members(service.settings.roles),
            allowed_teams=teams,
        )
