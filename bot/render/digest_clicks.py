"""What a click on a digest opens and what the clicker alone is told: the Reject all… and
Choose… modals (their private_metadata is the digest id, each option's value an item's id), and
the :class:`Tally` of what one click did, item by item. Pure, like bot/render/digest.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from bot.render import blocks as kit
from bot.render.actions import (
    DIGEST_CHOOSE_VIEW,
    DIGEST_DECISION_INPUT,
    DIGEST_ITEMS_INPUT,
    DIGEST_REJECT_VIEW,
    REASON_INPUT,
)
from bot.render.blocks import Blocks
from bot.render.inert import Mrkdwn, inert, own
from bot.render.words import with_times
from store.digests import Digest
from store.proposals import Proposal

__all__ = ["Tally", "choose_modal", "reject_modal", "tally_text"]


#: A private answer that names items (Slack takes 40,000 characters of text; fifty items with
#: the longest reasons fit).
NAMED_TEXT_MAX: Final = 20_000
#: Options in one checkboxes element (Slack's limit).
OPTIONS_MAX: Final = 10
OPTION_TEXT_MAX: Final = 75
#: Preview fields an item's option shows (in Choose…).
ROW_FIELDS: Final = 3


@dataclass
class Tally:
    """What one click on a digest did, item by item, to tell the clicker."""

    verb: str  #: "approved" or "rejected"
    done: int = 0  #: decided by this click
    counted: int = 0  #: approvals recorded towards a quorum not reached yet
    already: int = 0  #: decided before this click
    refused: Counter[str] = field(default_factory=Counter)  #: why, and how many times
    left_out: int = 0  #: reviewed items whose box the clicker cleared (not decided)
    #: items not decided by this click, named: (Countersign's number, title, what happened)
    named: list[tuple[int, str, str]] = field(default_factory=list)

    @property
    def refusals(self) -> int:
        return sum(self.refused.values())


def reject_modal(digest: Digest, pending: int, what: str | None = None) -> dict[str, Any]:
    """The reason for rejecting every pending item, named as the digest's header names them
    (``what``: the operation's description); private_metadata is the digest id."""
    named = (what or "").strip().removesuffix(".")
    named = f" ({kit.clip(inert(named), 200)})" if named else ""
    return kit.modal(
        DIGEST_REJECT_VIEW,
        "Reject all",
        metadata=digest.id,
        submit="Reject all",
        blocks=[
            kit.section(
                own(
                    f"Reject the *{pending:,}* pending proposals of this digest{named}. Nothing "
                    "of them will be executed."
                )
            ),
            _reason_input(optional=False),
        ],
    )


def choose_modal(digest: Digest, pending: Sequence[Proposal]) -> dict[str, Any]:
    """Checkboxes for the pending items (ten to a group), approve or reject, and a reason for
    rejecting; private_metadata is the digest id, each option's value an item's id."""
    groups: Blocks = []
    for start in range(0, len(pending), OPTIONS_MAX):
        chunk = pending[start : start + OPTIONS_MAX]
        groups.append(
            {
                "type": "input",
                "block_id": f"{DIGEST_ITEMS_INPUT}_{start // OPTIONS_MAX}",
                "optional": True,
                "label": kit.plain(f"Proposals {start + 1} to {start + len(chunk)}", 2000),
                "element": {
                    "type": "checkboxes",
                    "action_id": DIGEST_ITEMS_INPUT,
                    "options": [_option(p) for p in chunk],
                },
            }
        )
    return kit.modal(
        DIGEST_CHOOSE_VIEW,
        "Choose proposals",
        metadata=digest.id,
        submit="Apply",
        blocks=[
            kit.section(
                own(
                    "Select pending proposals of this digest; each one is checked and decided "
                    "on its own."
                )
            ),
            *groups,
            {
                "type": "input",
                "block_id": DIGEST_DECISION_INPUT,
                "label": kit.plain("Decision", 2000),
                "element": {
                    "type": "radio_buttons",
                    "action_id": DIGEST_DECISION_INPUT,
                    "initial_option": _choice("approve"),
                    "options": [_choice("approve"), _choice("reject")],
                },
            },
            _reason_input(optional=True),
        ],
    )


def _option(proposal: Proposal) -> dict[str, Any]:
    fields = " · ".join(f"{f.label}: {f.value}" for f in proposal.preview.fields[:ROW_FIELDS])
    option: dict[str, Any] = {
        "text": kit.said(f"{proposal.id[:12]} {proposal.preview.title}", OPTION_TEXT_MAX),
        "value": proposal.id,
    }
    if fields:
        option["description"] = kit.said(fields, OPTION_TEXT_MAX)
    return option


def _choice(value: str) -> dict[str, Any]:
    words = {"approve": "Approve and execute them", "reject": "Reject them"}
    return {"text": kit.plain(words[value], OPTION_TEXT_MAX), "value": value}


def _reason_input(*, optional: bool) -> dict[str, Any]:
    return kit.text_input(
        REASON_INPUT,
        label="Why do you reject them?" if not optional else "Reason (to reject)",
        hint="The agent and the channel will see this reason.",
        most=kit.REASON_MAX,
        optional=optional,
    )


def tally_text(tally: Tally) -> Mrkdwn:
    """What the clicker alone is told: how many items were decided, and why the others were not."""
    parts = [f"{tally.verb.capitalize()} {tally.done}"]
    if tally.counted:
        parts.append(
            f"{tally.counted} approval{'s' if tally.counted > 1 else ''} counted, "
            "waiting for more approvers"
        )
    parts.append(f"{tally.already} already decided")
    parts.append(f"{tally.refusals} refused")
    if tally.left_out:
        parts.append(f"{tally.left_out} left out by you, still pending")
    text = ", ".join(parts) + "."
    if tally.named:
        for number, title, what in sorted(tally.named):
            text += f"\n• *Item {number}* ({kit.clip(inert(title), 80)}): {inert(what)}"
        return own(kit.clip(text, NAMED_TEXT_MAX))
    for reason, count in tally.refused.most_common(5):
        text += f"\n• {count} refused: {with_times(reason)}"
    return own(kit.clip(text, kit.SECTION_MAX))
