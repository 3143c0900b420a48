"""Countersign's words for people, moments and proposals, as its sentences say them: a Slack
user as a mention, several as "@Ana, @Bo and @Cy", a moment as Slack shows it in the reader's
time zone, a length of time as people say it ("90 minutes"), the time left, the reference a
person quotes, and how each risk class reads. Pure, like all of bot/render/.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Final

from bot.render.blocks import code
from bot.render.inert import Mrkdwn, inert, own
from contracts.base import Risk
from contracts.durations import spoken_duration

__all__ = [
    "AGENT_ACTS_LABEL",
    "RISK_LABELS",
    "mention",
    "people",
    "reference",
    "remaining",
    "short_id",
    "span",
    "when",
    "with_times",
]

_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")


# --- people --------------------------------------------------------------------------------------


def mention(user_id: str | None) -> Mrkdwn:
    """A Slack user id as a mention (a person Slack names); anything else as inert code."""
    if user_id is None:
        return own("someone")
    return own(f"<@{user_id}>") if _USER_ID.match(user_id) else code(user_id, 60)


def people(users: Sequence[str]) -> Mrkdwn:
    """Several Slack users as a list people read: "@Ana, @Bo and @Cy" (or "nobody")."""
    mentions = [mention(user) for user in users]
    if len(mentions) <= 1:
        return own("".join(mentions) or "nobody")
    return own(", ".join(mentions[:-1]) + f" and {mentions[-1]}")


# --- moments and lengths of time -----------------------------------------------------------------


def when(moment: datetime) -> Mrkdwn:
    """A moment as Slack shows it in the reader's own time zone: "today at 13:42", "Mar 14,
    2031 at 09:05" (a ``<!date^…>`` token; where Slack cannot, "2031-03-14 13:42 UTC"). It
    reads as a time of its own: write "expires {when}", never "at {when}"."""
    fallback = f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    return own(f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} at {{time}}|{fallback}>")


def span(seconds: float) -> str:
    """A length of time as people say it: "1 hour", "90 minutes", "7 days"."""
    return spoken_duration(seconds)


def remaining(expires_at: datetime, now: datetime) -> str:
    """The time left until ``expires_at`` ("in 65 minutes"), or since ("5 minutes ago")."""
    left = (expires_at - now).total_seconds()
    return f"in {span(left)}" if left > 0 else f"{span(left)} ago"


def with_times(reason: str) -> Mrkdwn:
    """``reason`` made inert, with each moment in it as the store words them ("at
    2031-03-14T13:42:00+00:00") shown as Slack shows times ("today at 13:42")."""
    parts: list[str] = []
    start = 0
    for found in _ISO_TIME.finditer(reason):
        parts += [inert(reason[start : found.start()]), _slack_time(found)]
        start = found.end()
    return own("".join([*parts, inert(reason[start:])]))


#: A moment as the store and the services write it in a reason, with the "at" before it.
_ISO_TIME: Final = re.compile(
    r"(?:\bat )?\b([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?"
    r"(?:[+-][0-9]{2}:[0-9]{2}|Z))"
)


def _slack_time(found: re.Match[str]) -> Mrkdwn:
    try:
        moment = datetime.fromisoformat(found.group(1).replace("Z", "+00:00"))
    except ValueError:
        return inert(found.group(0))
    return when(moment)


# --- proposals and risk --------------------------------------------------------------------------


def short_id(proposal_id: str) -> str:
    return proposal_id if len(proposal_id) <= 12 else proposal_id[:12]


def reference(proposal_id: str) -> Mrkdwn:
    """The one short reference a person quotes to find a proposal (``/countersign show``, the
    audit log, a target's logs, whose correlation ids start with it)."""
    return own(f"Reference {code(proposal_id, 60)}")


#: How each risk class shows, in the message and in every queue.
RISK_LABELS: Final[Mapping[Risk, str]] = {
    "irreversible": ":red_circle: Irreversible (money or external effect)",
    "reversible": ":large_orange_circle: Reversible write",
    "read": ":white_circle: Read only",
}


#: How a decision operation's risk shows: the agent will act itself, trusted to do only this.
AGENT_ACTS_LABEL: Final = (
    ":raised_hand: *The agent will do this itself* once approved: Countersign runs nothing,"
    " and trusts the agent to do only what is described here"
)


# --- sentences ----------------------------------------------------------------------------------


def sentence(text: str) -> str:
    """``text`` ending as a sentence ends, so the next one does not run on from it."""
    text = text.rstrip()
    return text if not text or text[-1] in ".!?…)" else f"{text}."
