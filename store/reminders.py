"""What every backend does alike for reminders and the one extension: who writes the audit
entries, what they say, where a reminder not yet sent moves to, and why an extension changed
nothing.

Neither a reminder nor an extension changes the status: a reminder marks the proposal reminded
(``reminded_at``) and queues a slack.remind; an extension moves ``expires_at`` later once, names
who did it (``extended_by``, ``extended_at``) and queues a slack.update so the message shows the
new expiry. The database allows the expiry to move only this way (the trigger
``proposals_expiry_extends_once``).
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import JsonValue

from store.base import AlreadyDecided, NotApprovable, Proposal, TransitionResult
from store.lifecycle import Effect, Status

__all__ = [
    "EXTENSION_EFFECT",
    "REMINDER_ACTOR",
    "REMINDER_EFFECT",
    "extension_detail",
    "moved_reminder",
    "not_extendable",
    "reminder_detail",
]

#: Who writes the "reminded" entries: the sweep, not a person.
REMINDER_ACTOR = "reminder"
#: The outbox effect of a reminder, for proposals that ask in a channel.
REMINDER_EFFECT = Effect.SLACK_REMIND
#: The outbox effect of an extension: the message shows the new expiry and who extended it.
EXTENSION_EFFECT = Effect.SLACK_UPDATE


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat()


def reminder_detail(proposal: Proposal) -> dict[str, JsonValue]:
    """The detail of a "reminded" audit entry."""
    return {"remind_at": _iso(proposal.remind_at), "expires_at": _iso(proposal.expires_at)}


def extension_detail(previous: datetime, until: datetime) -> dict[str, JsonValue]:
    """The detail of an "extended" audit entry: the expiry before and after."""
    return {"from": _iso(previous), "to": _iso(until)}


def moved_reminder(current: Proposal, until: datetime) -> datetime | None:
    """Where the reminder of ``current`` goes when its expiry moves to ``until``.

    A reminder not yet sent keeps its distance before the expiry: due 12 minutes before the old
    expiry, it is due 12 minutes before the new one. A reminder already sent (or none) stays.
    """
    if current.remind_at is None or current.reminded_at is not None or current.expires_at is None:
        return current.remind_at
    return current.remind_at + (until - current.expires_at)


def not_extendable(current: Proposal, now: datetime, until: datetime) -> TransitionResult:
    """Why an extension's compare-and-set found nothing to change."""
    if current.status is not Status.PENDING:
        return AlreadyDecided(current)
    if current.expires_at is None:
        return NotApprovable(current, "it has no expiry to extend")
    if current.expires_at <= now:
        return NotApprovable(current, f"it expired at {_iso(current.expires_at)}")
    if current.extended_by is not None:
        return NotApprovable(
            current,
            f"it was already extended once, by {current.extended_by} at "
            f"{_iso(current.extended_at)}; a proposal can be extended only once",
        )
    if until <= current.expires_at:
        return NotApprovable(
            current,
            f"the new expiry {_iso(until)} is not later than the current one "
            f"{_iso(current.expires_at)}",
        )
    return NotApprovable(current, "the proposal changed during the extension; try again")
