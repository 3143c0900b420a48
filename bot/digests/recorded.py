"""A digest's decision clicks, recorded at the click and applied after (bot/flow/clicks.py):
Approve all, the Choose… and Reject all… modals, and the Review all… submission. Each is applied
through the digest's own path (:class:`bot.digests.decisions.DigestService`): every item is
decided as a click on it alone would be, with that click's checks made when it is applied, and
the clicker is told the tally. An item decided already is counted as such, never decided
twice; one whose decision by the clicker was made since the click (by another application of the
same click, leased again while one still ran) is counted as this click's, not refused or
audited (bot/flow/decide.py, ``since``)."""

from __future__ import annotations

from pydantic import JsonValue

from bot.digests.decisions import DigestService
from bot.render.digest_review import ReviewState
from store.proposals.clicks import Clicked, RecordedClick

__all__ = ["DigestClicks", "chosen_detail"]


def chosen_detail(items: tuple[str, ...] | None, reason: str = "") -> dict[str, JsonValue]:
    """What a digest modal's click carries: the items chosen (None: all) and the reason."""
    return {"items": None if items is None else list(items), "reason": reason}


class DigestClicks:
    """The :class:`bot.flow.clicks.Applier` of the ``digest_`` verbs."""

    def __init__(self, digests: DigestService) -> None:
        self._digests = digests

    async def apply(self, click: Clicked) -> None:
        subject, user, detail = click.subject, click.actor, click.detail
        items = detail.get("items")
        chosen = None if not isinstance(items, list) else [str(i) for i in items]
        # an item's decision made since the recorded click is the click's own (decide.py)
        since = click.recorded_at if isinstance(click, RecordedClick) else None
        if click.verb == "digest_approve_all":
            await self._digests.approve_all(subject, user=user, channel=click.channel, since=since)
        elif click.verb == "digest_approve":
            await self._digests.approve(subject, chosen or [], user=user, since=since)
        elif click.verb == "digest_reject":
            reason = str(detail.get("reason", ""))
            await self._digests.reject(subject, chosen, user=user, reason=reason, since=since)
        elif click.verb == "digest_review":
            state = ReviewState.parse(str(detail.get("review", "")))
            await self._digests.approve_reviewed(state, {}, user=user, since=since)
        else:
            raise ValueError(f"verb: got {click.verb!r}; expected a digest's")

    async def tell(self, click: Clicked, text: str) -> None:
        await self._digests.tell(click.subject, user=click.actor, channel=click.channel, text=text)
