"""Escalations: a conversation an agent hands to people, its lifecycle, records and answers.

The lifecycle, like the proposals' (store/proposals/lifecycle.py), is one status column with one
table of transitions, enforced by the database too:

* ``open``: posted in the route's channel, nobody has taken it; the agent may keep talking.
* ``taken``: one person owns the conversation; the agent must stop replying (handed off).
* ``handed_back``: the owner gave it back to the agent with a note; the agent resumes. People
  may still take it again, or resolve it.
* ``resolved``: closed, by a person. Final.

``open -> resolved`` is allowed (someone closes a duplicate without taking it), and taking is
allowed from ``handed_back`` (the agent got stuck again). Only the owner hands back; only the
owner resolves a taken escalation.

Every backend keeps them in its own database, on its one audit chain, through the same code:
:class:`store.escalations.verbs.EscalationStore`, got from ``Store.escalations()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

from contracts.escalation import Summary, Trigger, TriggerVerdict
from contracts.frozen import Frozen
from store.base import StoreError
from store.proposals.lifecycle import Effect

__all__ = [
    "ESCALATION_EFFECTS",
    "ESCALATION_TRANSITIONS",
    "FINAL_ESCALATION",
    "Escalation",
    "EscalationConflict",
    "EscalationDelivery",
    "EscalationNotFound",
    "EscalationResult",
    "EscalationStatus",
    "Moved",
    "NewEscalation",
    "Refused",
    "escalation_effects_of",
    "handed_back_since",
    "refusal_of",
    "resolved_since",
    "taken_since",
]


class EscalationStatus(StrEnum):
    OPEN = "open"  #: waiting for a person to take it
    TAKEN = "taken"  #: one person owns it; the agent must stop replying
    HANDED_BACK = "handed_back"  #: returned to the agent, with a note
    RESOLVED = "resolved"  #: closed by a person


ESCALATION_TRANSITIONS: Final[dict[EscalationStatus, frozenset[EscalationStatus]]] = {
    EscalationStatus.OPEN: frozenset({EscalationStatus.TAKEN, EscalationStatus.RESOLVED}),
    EscalationStatus.TAKEN: frozenset({EscalationStatus.HANDED_BACK, EscalationStatus.RESOLVED}),
    EscalationStatus.HANDED_BACK: frozenset({EscalationStatus.TAKEN, EscalationStatus.RESOLVED}),
    EscalationStatus.RESOLVED: frozenset(),
}

FINAL_ESCALATION: Final = frozenset(
    status for status, nexts in ESCALATION_TRANSITIONS.items() if not nexts
)

_CHANGED = (Effect.SLACK_UPDATE, Effect.SLACK_REPLY, Effect.CALLBACK)

#: The outbox entries written with each status entered (a re-announcement writes a reply while
#: the escalation stays open).
ESCALATION_EFFECTS: Final[dict[EscalationStatus, tuple[Effect, ...]]] = {
    EscalationStatus.OPEN: (Effect.SLACK_POST,),
    EscalationStatus.TAKEN: _CHANGED,
    EscalationStatus.HANDED_BACK: _CHANGED,
    EscalationStatus.RESOLVED: _CHANGED,
}


class NewEscalation(Frozen):
    """An escalation as the submission path hands it to the store (always created open)."""

    id: str  #: "esc_" + 128 random bits: the only thing Slack buttons carry
    agent: str  #: from the agent's token
    submission_key: str
    submission_fingerprint: str
    conversation_id: str
    requested_by: str | None = None  #: the accountable human's Slack id
    customer_ref: str | None = None  #: or the customer's reference
    team: str | None = None
    summary: Summary
    trigger: Trigger
    verdict: TriggerVerdict  #: the server's reading of the trigger
    channel: str  #: where the route sends it
    callback_url: str | None = None
    created_at: datetime


class Escalation(NewEscalation):
    status: EscalationStatus
    owner: str | None = None  #: who took it (while taken)
    taken_at: datetime | None = None  #: when the owner took it (while taken)
    note: str | None = None  #: the last hand-back or resolution note
    resolved_by: str | None = None
    resolved_at: datetime | None = None
    #: who last handed it back to its agent, and when
    handed_back_by: str | None = None
    handed_back_at: datetime | None = None
    announced_at: datetime  #: last (re-)announcement: creation, then each re-announcement
    reannouncements: int = 0
    slack_channel: str | None = None
    slack_ts: str | None = None
    updated_at: datetime

    @property
    def handed_off(self) -> bool:
        """A person owns the conversation: the agent must stop replying."""
        return self.status is EscalationStatus.TAKEN


class EscalationDelivery(Frozen):
    """One escalation outbox entry handed to a worker (the proposals' Delivery, for escalations)."""

    id: int
    escalation_id: str
    effect: Effect
    status: EscalationStatus  #: the status when it was written
    reannounce: bool = False  #: a re-announcement reply, not a status change
    attempts: int
    created_at: datetime


def escalation_effects_of(escalation: Escalation) -> list[Effect]:
    """The effects of ``escalation`` having just entered its status (callbacks only with a URL)."""
    return [
        effect
        for effect in ESCALATION_EFFECTS[escalation.status]
        if effect is not Effect.CALLBACK or escalation.callback_url is not None
    ]


def taken_since(escalation: Escalation, actor: str, since: datetime) -> bool:
    """Whether ``actor`` took ``escalation`` at or after ``since`` (a recorded click's moment:
    a take made since is that click's own, bot/flow/clicks.py). Judged by ``taken_at``, which
    only the take writes: ``updated_at`` moves on when the message is posted again, and a new
    click of the owner's made after the take is no application of the take's click."""
    return (
        escalation.status is EscalationStatus.TAKEN
        and escalation.owner == actor
        and escalation.taken_at is not None
        and escalation.taken_at >= since
    )


def resolved_since(escalation: Escalation, actor: str, since: datetime) -> bool:
    """Whether ``actor`` resolved ``escalation`` at or after ``since`` (as :func:`taken_since`)."""
    return (
        escalation.status is EscalationStatus.RESOLVED
        and escalation.resolved_by == actor
        and escalation.resolved_at is not None
        and escalation.resolved_at >= since
    )


def handed_back_since(escalation: Escalation, actor: str, since: datetime) -> bool:
    """Whether ``actor`` handed ``escalation`` back at or after ``since`` (as
    :func:`taken_since`)."""
    return (
        escalation.status is EscalationStatus.HANDED_BACK
        and escalation.handed_back_by == actor
        and escalation.handed_back_at is not None
        and escalation.handed_back_at >= since
    )


def refusal_of(current: Escalation, actor: str, verb: str) -> str:
    """Why ``actor`` could not ``verb`` the escalation as it is now (the same in every backend)."""
    if current.status is EscalationStatus.RESOLVED:
        return f"it was already resolved by {current.resolved_by}"
    if current.status is EscalationStatus.TAKEN:
        if current.owner == actor:
            return "you have already taken it" if verb == "take" else "it changed meanwhile"
        if verb == "take":
            return f"{current.owner} has already taken it"
        return f"{current.owner} has taken it; only they can {verb} it now"
    if verb == "hand back":
        return "only the person who took it can hand it back, and nobody has it now"
    return f"it changed meanwhile (it is {current.status.value}); try again"


# --- answers of the transition verbs ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Moved:
    """You made the transition."""

    escalation: Escalation


@dataclass(frozen=True, slots=True)
class Refused:
    """Nothing changed; ``reason`` says why (who owns it, or that it is resolved)."""

    escalation: Escalation
    reason: str


EscalationResult = Moved | Refused


class EscalationNotFound(StoreError):
    """No escalation has that id."""


class EscalationConflict(StoreError):
    """That idempotency key was already used by this agent for a different escalation."""

    def __init__(self, existing: Escalation) -> None:
        super().__init__()
        self.existing = existing
