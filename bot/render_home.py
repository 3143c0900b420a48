"""Block Kit for a person's own workspace in Slack: the App Home tab and the ``/countersign``
answers. Pure functions of stored values and ``now``; no clock, env or I/O.

The proposals waiting for the person come as the store ranks them: riskiest first (irreversible,
reversible, read), then soonest expiry; each shows its risk class and, when it needs several
approvers, how many approved so far. Their Approve / Reject buttons
are the channel message's own (same action ids, the proposal id as the only value), so a click
here is checked and handled exactly like one in the channel.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from bot.render import (
    RISK_LABELS,
    SECTION_MAX,
    Blocks,
    _buttons,
    _code,
    _context,
    _field_text,
    _header,
    _mention,
    _remaining,
    _section,
    _status_word,
    _when,
    clip,
    escape,
)
from bot.render_escalation import HAND_BACK, RESOLVE
from store.approvals import counted
from store.base import AuditEntry, Proposal
from store.escalations import Escalation

__all__ = [
    "HOME_BLOCKS_MAX",
    "help_blocks",
    "home_view",
    "proposal_detail_blocks",
    "waiting_blocks",
]

#: Slack's limit for a Home tab.
HOME_BLOCKS_MAX: Final = 100
#: How many waiting proposals the tab shows (each takes three blocks).
WAITING_SHOWN: Final = 15
#: Preview fields shown per waiting proposal: the key ones, first in the preview.
KEY_FIELDS: Final = 4


def home_view(
    *,
    waiting: Sequence[Proposal],
    owned: Sequence[Escalation],
    decisions: Sequence[Proposal],
    now: datetime,
    notice: str | None = None,
) -> dict[str, Any]:
    """The Home tab: a notice (the answer to a click made here), what waits for the person,
    the escalations they own, and their recent decisions."""
    blocks: Blocks = []
    if notice:
        blocks += [_section(clip(notice, SECTION_MAX)), {"type": "divider"}]
    blocks += [_header("Waiting for your decision"), *waiting_blocks(waiting, now=now)]
    blocks += [_header("Escalations you own"), *_owned_blocks(owned)]
    blocks += [_header("Your recent decisions"), *_decision_blocks(decisions)]
    return {"type": "home", "blocks": blocks[:HOME_BLOCKS_MAX]}


def waiting_blocks(waiting: Sequence[Proposal], *, now: datetime) -> Blocks:
    """The proposals a person may decide, in the order given (riskiest first, then soonest
    expiry), with their buttons."""
    if not waiting:
        return [_context("Nothing waits for you. :tada:")]
    blocks: Blocks = []
    for proposal in waiting[:WAITING_SHOWN]:
        fields = [_field_text(f.label, f.value) for f in proposal.preview.fields[:KEY_FIELDS]]
        section: dict[str, Any] = {
            "type": "section",
            "text": {
                "type": "mrkdwn",
                "text": clip(f"*{escape(proposal.preview.title)}*", SECTION_MAX),
                "verbatim": True,
            },
        }
        if fields:
            section["fields"] = [
                {"type": "mrkdwn", "text": text, "verbatim": True} for text in fields
            ]
        expiry = (
            f":hourglass_flowing_sand: expires {_when(proposal.expires_at)} "
            f"({_remaining(proposal.expires_at, now)})"
            if proposal.expires_at is not None
            else "no expiry"
        )
        asked = f"agent *{escape(proposal.agent)}* for {_mention(proposal.requested_by)}"
        buttons = _buttons(proposal)
        buttons["block_id"] = f"decision-{proposal.id}"  # block ids are unique within a view
        line = f"{RISK_LABELS[proposal.risk]} · {expiry} · {asked} · {_code(proposal.id, 40)}"
        if proposal.quorum > 1:
            line += f" · {len(counted(proposal))} of {proposal.quorum} approved"
        blocks += [section, _context(line), buttons]
    hidden = len(waiting) - WAITING_SHOWN
    if hidden > 0:
        blocks.append(
            _context(f"{hidden} more not shown; the riskiest and soonest to expire come first.")
        )
    return blocks


def _owned_blocks(owned: Sequence[Escalation]) -> Blocks:
    if not owned:
        return [_context("You own no escalations.")]
    blocks: Blocks = []
    for escalation in owned[:10]:
        goal = clip(escape(escalation.summary.goal), 300)
        blocks.append(
            _section(
                f"*Conversation {_code(escalation.conversation_id, 120)}* from agent "
                f"*{escape(escalation.agent)}*\n_The agent's words:_ {goal}\n"
                f"Why: {escape(escalation.verdict.note)}"
            )
        )
        blocks.append(
            {
                "type": "actions",
                "block_id": f"escalation-{escalation.id}",
                "elements": [
                    _escalation_button(HAND_BACK, "Hand back", escalation.id),
                    _escalation_button(RESOLVE, "Resolve", escalation.id, "primary"),
                ],
            }
        )
    return blocks


def _escalation_button(
    action_id: str, text: str, value: str, style: str | None = None
) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": text, "emoji": True},
        "value": value,
    }
    if style is not None:
        button["style"] = style
    return button


def _decision_blocks(decisions: Sequence[Proposal]) -> Blocks:
    if not decisions:
        return [_context("You have decided nothing yet.")]
    lines = [
        f"• {_status_word(p)}: {clip(escape(p.preview.title), 150)}"
        + (f" ({_when(p.decided_at)})" if p.decided_at is not None else "")
        for p in decisions
    ]
    return [_section("\n".join(lines))]


# --- /countersign -------------------------------------------------------------------------------


def proposal_detail_blocks(
    proposal: Proposal, trail: Sequence[AuditEntry], *, now: datetime
) -> Blocks:
    """``/countersign show <id>``: the preview, the status and the audit trail of one proposal."""
    fields = [_field_text(f.label, f.value) for f in proposal.preview.fields[:10]]
    blocks: Blocks = [_header(proposal.preview.title)]
    if fields:
        blocks.append(
            {
                "type": "section",
                "fields": [{"type": "mrkdwn", "text": t, "verbatim": True} for t in fields],
            }
        )
    status = (
        f"*Status:* {_status_word(proposal)} ({_code(proposal.status.value, 40)})"
        f" · {RISK_LABELS[proposal.risk]}"
    )
    if proposal.expires_at is not None:
        status += (
            f" · expires {_when(proposal.expires_at)} ({_remaining(proposal.expires_at, now)})"
        )
    blocks.append(_section(status))
    lines = [
        f"`{entry.seq}` {_when(entry.at)} {_code(entry.event, 60)} by {_actor(entry.actor)}"
        for entry in trail[-25:]
    ]
    blocks.append(_section("*Audit trail*\n" + ("\n".join(lines) or "_empty_")))
    blocks.append(_context(f"Proposal {_code(proposal.id, 60)}"))
    return blocks


def _actor(actor: str) -> str:
    return _mention(actor) if actor[:1] in ("U", "W") and actor.isupper() else escape(actor)


def help_blocks() -> Blocks:
    return [
        _section(
            "*/countersign* shows what waits for you, only to you:\n"
            "• `/countersign list`: the proposals you may decide, riskiest first, then "
            "soonest expiry\n"
            "• `/countersign show <id>`: a proposal's preview, status and audit trail\n"
            "• `/countersign standing`: the active standing rules, to revoke (admins only)\n"
            "• `/countersign help`: this help\n"
            "Your Home tab in the Countersign app shows the same list, your escalations and "
            "your recent decisions."
        )
    ]
