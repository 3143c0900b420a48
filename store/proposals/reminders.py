"""What every backend does alike for reminders and the one extension: who writes the audit
entries, what they say, where a reminder not yet sent moves to, and why an extension changed
nothing.

Neither a reminder nor an extension changes the status: a reminder marks the proposal reminded
(``reminded_at``) and queues a slack.remind; an extension moves ``expires_at`` later once, names
who did it (``extended_by``, ``extended_at``) and queues a slack.update so the message shows the
new expiry. The database allows the expiry to move only this way (the trigger
``proposals_expiry_extends_once``).

Both verbs are written once (:class:`ReminderVerbs`): each is one transaction holding the
compare-and-set, its audit entry and its outbox entry. The sweep takes its rows with ``FOR UPDATE
SKIP LOCKED`` on PostgreSQL, so instances sweeping at once remind each proposal once and never
wait for each other; on SQLite the write transaction holds the one write lock.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import JsonValue

from store.backend import Backend
from store.proposals.lifecycle import Effect, Status
from store.proposals.outbox import enqueue
from store.proposals.records import (
    AlreadyDecided,
    NotApprovable,
    Proposal,
    Transitioned,
    TransitionResult,
)
from store.proposals.rows import existing_proposal, proposal_from_row, with_approvals
from store.rows import aware, check_limit
from store.shield import finish_even_if_cancelled

__all__ = [
    "EXTENSION_EFFECT",
    "REMINDER_ACTOR",
    "REMINDER_EFFECT",
    "ReminderVerbs",
    "extended_since",
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


def extended_since(proposal: Proposal, actor: str, since: datetime) -> bool:
    """Whether ``actor`` extended ``proposal`` at or after ``since`` (a recorded click's moment:
    an extension made since is that click's own, bot/flow/clicks.py)."""
    return (
        proposal.extended_by == actor
        and proposal.extended_at is not None
        and proposal.extended_at >= since
    )


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


def _in_channel(proposal: Proposal, effect: Effect) -> list[Effect]:
    """``effect`` when the proposal asks in a channel (Slack effects need one)."""
    return [effect] if proposal.channel is not None else []


class ReminderVerbs(Backend):
    """The Store protocol's reminder and extension verbs, written once over the backend's
    transactions."""

    @finish_even_if_cancelled
    async def remind_due(self, *, now: datetime, limit: int = 100) -> list[Proposal]:
        check_limit(limit, "proposals")
        async with self.tx(write=True) as tx:
            rows = await tx.all("remind_due", now=now, limit=limit)
            reminded = []
            for row in sorted(rows, key=lambda r: (r["remind_at"], r["id"])):
                proposal = proposal_from_row(row)
                detail = reminder_detail(proposal)
                await tx.append_audit(now, proposal.id, REMINDER_ACTOR, "reminded", detail)
                await enqueue(tx, proposal, _in_channel(proposal, REMINDER_EFFECT), now)
                reminded.append(proposal)
            return await with_approvals(tx, reminded)

    @finish_even_if_cancelled
    async def extend(
        self, proposal_id: str, *, actor: str, until: datetime, now: datetime
    ) -> TransitionResult:
        now, until = aware(now, field="now"), aware(until, field="until")
        async with self.tx(write=True) as tx:
            current = await existing_proposal(tx, proposal_id)
            if current.expires_at is None:
                return not_extendable(current, now, until)
            row = await tx.one(
                "extend_expiry",
                id=proposal_id,
                actor=actor,
                now=now,
                until=until,
                previous=current.expires_at,
                remind_at=moved_reminder(current, until),
            )
            if row is None:  # nothing changed: say why from the proposal as it is now
                return not_extendable(await existing_proposal(tx, proposal_id), now, until)
            proposal = proposal_from_row(row)
            detail = extension_detail(current.expires_at, until)
            await tx.append_audit(now, proposal.id, actor, "extended", detail)
            await enqueue(tx, proposal, _in_channel(proposal, EXTENSION_EFFECT), now)
            [proposal] = await with_approvals(tx, [proposal])
            return Transitioned(proposal)
