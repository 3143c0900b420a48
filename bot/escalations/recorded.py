"""An escalation's decision clicks, recorded at the click and applied after (bot/flow/clicks.py):
Take it, Resolve, and the hand-back modal's note. Each is applied through the escalation's own
path (:class:`bot.escalations.flow.EscalationService`), which checks the clicker when it is
applied and tells them why when it refuses; the store's compare-and-set makes each once."""

from __future__ import annotations

from bot.escalations.flow import EscalationService
from store.proposals.clicks import Clicked, RecordedClick

__all__ = ["EscalationClicks"]


class EscalationClicks:
    """The :class:`bot.flow.clicks.Applier` of ``escalation_take``, ``escalation_resolve`` and
    ``escalation_hand_back``."""

    def __init__(self, escalations: EscalationService) -> None:
        self._escalations = escalations

    async def apply(self, click: Clicked) -> None:
        subject, user, channel = click.subject, click.actor, click.channel
        # a recorded click's own take, resolution or hand-back is not refused (flow.py, since)
        since = click.recorded_at if isinstance(click, RecordedClick) else None
        if click.verb == "escalation_take":
            await self._escalations.take(subject, user=user, channel=channel, since=since)
        elif click.verb == "escalation_resolve":
            await self._escalations.resolve(subject, user=user, channel=channel, since=since)
        elif click.verb == "escalation_hand_back":
            note = str(click.detail.get("note", ""))
            await self._escalations.hand_back(subject, user=user, note=note, since=since)
        else:
            raise ValueError(f"verb: got {click.verb!r}; expected an escalation's")

    async def tell(self, click: Clicked, text: str) -> None:
        await self._escalations.tell(
            click.subject, user=click.actor, channel=click.channel, text=text
        )
