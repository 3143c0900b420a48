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

__all__ = ["NOBODY_CAN_APPROVE", "reminder_reply"]

#: What the reminder says when nobody left may approve the proposal.
NOBODY_CAN_APPROVE: Final = (
    "Nobody can approve it now: everyone holding its approver roles asked for it, owns the "
    "agent, has approved it already or may not decide. Unless someone is given the role, it "
    "will expire, and expiry is a denial."
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
