"""What a person who clicked a decision is told, only to them (pure).

The click is recorded first (bot/flow/clicks.py), and the clicker is told so at once; applying
it (the checks, the decision, the execution) follows, and its outcome reaches the clicker as the
message changes, or, when it changes nothing, as a private answer saying why: a check refused it,
someone decided first, the agent withdrew the proposal, or the store did not answer.
"""

from __future__ import annotations

from datetime import UTC
from typing import Final

from bot.render.blocks import SECTION_MAX, clip
from bot.render.inert import Mrkdwn, own
from bot.render.status import state_line, status_word
from bot.render.words import with_times
from store.proposals import Proposal, Status

__all__ = [
    "already_decided_text",
    "click_recorded_text",
    "refusal_text",
    "store_away_text",
    "store_lost_text",
    "withdrawn_reason",
]

#: What each verb's click is called, as the clicker reads it.
_DECISIONS: Final = {
    "approve": "approval of {}",
    "reject": "rejection of {}",
    "extend": "extension of {}",
    "retry": "retry of {}",
    "reconcile_succeeded": "answer that {} happened",
    "reconcile_failed": "answer that {} did not happen",
    "digest_approve_all": "approval of this digest's proposals",
    "digest_approve": "decision on this digest's proposals",
    "digest_reject": "rejection of this digest's proposals",
    "digest_review": "approval of the proposals you reviewed",
    "escalation_take": "taking of escalation {}",
    "escalation_resolve": "resolution of escalation {}",
    "escalation_hand_back": "hand-back of escalation {}",
}


def click_recorded_text(subject: str, verb: str, *, again: bool) -> str:
    """The decision is durable and will be applied, in the order clicks arrived."""
    what = _DECISIONS.get(verb, "decision on {}").format(subject)
    recorded = "is already recorded;" if again else "is recorded;"
    checked = "checked and run now" if verb in ("approve", "retry") else "checked and applied now"
    shown = (
        "You will be told what came of it."
        if verb.startswith("digest_")
        else "The message will show the outcome."
    )
    return f":hourglass_flowing_sand: Your {what} {recorded} it is being {checked}. {shown}"


def store_away_text() -> Mrkdwn:
    """What a clicker sees when the store did not answer before their click changed anything."""
    return own(
        ":warning: Countersign could not record your decision just now; nothing changed. "
        "Please try again in a moment."
    )


def store_lost_text() -> Mrkdwn:
    """What a clicker sees when the store stopped answering while their click was being
    recorded: whether it was is not known yet, and the message will say."""
    return own(
        ":warning: Countersign lost its store while recording your decision, so it cannot say "
        "yet whether it was recorded. The message shows it once it is; if the message still "
        "asks for a decision in a minute, please click again."
    )


def refusal_text(reason: str) -> Mrkdwn:
    """What a person who may not do what they clicked sees, only to them. A time in the reason
    ("it expired at 2031-03-14T13:42:00+00:00", as the store words it) reads as Slack shows
    times: "it expired today at 13:42"."""
    return own(
        clip(f":no_entry_sign: Countersign did not do that: {with_times(reason)}", SECTION_MAX)
    )


def already_decided_text(proposal: Proposal) -> Mrkdwn:
    """What a late clicker sees, only to them: who decided first and how it ended."""
    if proposal.status is Status.CANCELLED:
        return own(clip(f"The agent withdrew this proposal.\n{state_line(proposal)}", SECTION_MAX))
    return own(
        clip(
            f"This proposal was already decided. {status_word(proposal)}.\n{state_line(proposal)}",
            SECTION_MAX,
        )
    )


def withdrawn_reason(proposal: Proposal) -> str:
    """Why a click on a withdrawn proposal does nothing (told to the clicker and audited)."""
    at = ""
    if proposal.decided_at is not None:
        at = f" at {proposal.decided_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
    return f"the agent withdrew this proposal{at}; nothing changed"
