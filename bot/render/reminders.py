"""Block Kit for the reminder before expiry: a pure function of the proposal, ``now`` and who
may still approve it; no clock, env or I/O.

The reminder is a thread reply on the proposal's message. It mentions the people (``<@U…>``)
and user groups (``<!subteam^S…>``) who may still approve, so Slack notifies them; when nobody
can, it says so plainly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Final

from bot.render.blocks import Message, context, message, section
from bot.render.inert import Mrkdwn, inert, own
from bot.render.words import mention, remaining, span, when
from store.proposals import Proposal

__all__ = [
    "NOBODY_CAN_APPROVE",
    "NOBODY_CAN_APPROVE_ANY",
    "digest_reminder_reply",
    "reminder_reply",
]

#: What the reminder says when nobody left may approve the proposal.
NOBODY_CAN_APPROVE: Final = (
    "Nobody can approve it now: everyone holding its approver roles asked for it, owns the "
    "agent, has approved it already or may not decide. Unless someone is given the role, it "
    "will expire, and expiry is a denial."
)

#: What a digest's reminder says when nobody left may approve any of its pending proposals.
NOBODY_CAN_APPROVE_ANY: Final = (
    "Nobody can approve them now: everyone holding their approver roles asked for them, owns "
    "the agent, has approved them already or may not decide. Unless someone is given the role, "
    "they will expire, and expiry is a denial."
)

_USER_GROUP = re.compile(r"^S[A-Z0-9]{2,}$")


def _who(approver: str) -> Mrkdwn:
    """A person or a user group, mentioned so Slack notifies them."""
    if _USER_GROUP.match(approver):
        return own(f"<!subteam^{approver}>")
    return mention(approver)


def reminder_reply(
    proposal: Proposal,
    *,
    now: datetime,
    approvers: Sequence[str],
    extend_by: timedelta | None = None,
) -> Message:
    """The thread reply before expiry: when it expires and who can approve it.

    ``approvers`` are the Slack user ids and user group ids who may still approve it, in the
    order to mention them; empty says nobody can. ``extend_by``, when the proposal can still be
    extended, adds how.
    """
    title = inert(proposal.preview.title)
    if proposal.expires_at is not None:
        expiry = f"expires {remaining(proposal.expires_at, now)} ({when(proposal.expires_at)})"
    else:
        expiry = "is still waiting for a decision"
    names = " ".join(_who(approver) for approver in approvers)
    decide = f"{names} can approve." if approvers else NOBODY_CAN_APPROVE
    blocks = [section(own(f":alarm_clock: This {expiry}. {decide}"))]
    notes = [own(f"Reminder: {title}")]
    if extend_by is not None:
        longer = span(extend_by.total_seconds())
        notes.append(own(f"An approver can extend it once, by {longer}, with the Extend button."))
    blocks.append(context(*notes))
    fallback = f"Reminder: {title} {expiry}. {decide}"
    return message(own(fallback), blocks)


def digest_reminder_reply(
    pending: Sequence[Proposal], *, now: datetime, approvers: Sequence[str]
) -> Message:
    """The reminder in a digest's thread, for its ``pending`` proposals together: how many
    wait, when the first expires and who can approve one of them (``approvers``, as for
    :func:`reminder_reply`; empty says nobody can). A digest has no Extend button, so it
    offers none."""
    count = f"{len(pending):,} proposal{'s' if len(pending) != 1 else ''} of this digest"
    waiting = f"{count} {'are' if len(pending) != 1 else 'is'} still waiting"
    expiries = [p.expires_at for p in pending if p.expires_at is not None]
    if expiries:
        first = min(expiries)
        waiting += f"; the first expires {remaining(first, now)} ({when(first)})"
    names = " ".join(_who(approver) for approver in approvers)
    decide = f"{names} can approve." if approvers else NOBODY_CAN_APPROVE_ANY
    blocks = [
        section(own(f":alarm_clock: {waiting}. {decide}")),
        context(own(f"Reminder: {count}, listed above")),
    ]
    return message(own(f"Reminder: {waiting}. {decide}"), blocks)
