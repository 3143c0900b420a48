"""What revoking a standing rule and reviewing an automatic approval share: the collaborators
they are built with. Who may decide is bot/flow/deciders.py's, as for any decision."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from bot.slack.publish import SlackPublisher

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
    ) -> None:
        self._service = service
        self._clock = clock
        self._publisher = publisher
