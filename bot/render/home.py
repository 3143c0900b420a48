"""Block Kit for a person's own workspace in Slack: the App Home tab and the ``/countersign``
answers. Pure functions of stored values and ``now``; no clock, env or I/O.

The proposals waiting for the person come as the store ranks them: riskiest first (irreversible,
reversible, read), then soonest expiry; each shows, in the channel message's order,
Countersign's verdict in a block of its own (risk class, why the policy asked, how many approved
so far when it needs several, the expiry, the current state when the operation's revalidation
was run for the tab: :class:`StateCheck`), so that no length of agent text can push it out; then
its title, who edited it (if it is an edit), its key values, then the agent's
explanation (labelled, inert), who asked, and its buttons, apart from the next by a divider.
What had to be cut says so, with Show full. Their
Approve / Reject buttons are the channel message's own (same action ids, the proposal id as the
only value), so a click here is checked and handled exactly like one in the channel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from bot.render import blocks as kit
from bot.render.actions import ESCALATION_HAND_BACK, ESCALATION_RESOLVE, SHOW_FULL
from bot.render.blocks import Blocks
from bot.render.delegations import delegation_list_blocks
from bot.render.escalation import why_escalated
from bot.render.figures import why_asked
from bot.render.inert import Mrkdwn, inert, own
from bot.render.proposal import (
    backup_line,
    buttons,
    edit_blocks,
    explanation,
    preview_fields,
    preview_note,
    quorum_progress,
    risk_label,
)
from bot.render.status import status_word
from bot.render.words import mention, reference, remaining, short_id, when
from contracts.formats import Formats
from store.audit import AuditEntry
from store.delegations import Delegation
from store.escalations import Escalation
from store.proposals import Proposal, Status
from store.proposals.approvals import counted

__all__ = [
    "HOME_BLOCKS_MAX",
    "StateCheck",
    "help_blocks",
    "home_view",
    "proposal_detail_blocks",
    "waiting_blocks",
]


@dataclass(frozen=True, slots=True)
class StateCheck:
    """The operation's revalidation of a pending proposal, run for the Home tab at ``at``: the
    state it found changed (``reason``, as the operation words it), unchanged (None), or the
    check could not be made (``failed``, ``reason`` saying why)."""

    at: datetime
    reason: str | None = None
    failed: bool = False


#: Characters of a revalidation's reason shown.
STATE_SHOWN: Final = 300

#: Slack's limit for a Home tab.
HOME_BLOCKS_MAX: Final = 100
#: How many waiting proposals the tab shows (each takes at most five blocks).
WAITING_SHOWN: Final = 12
#: Preview fields shown per waiting proposal: the key ones, first in the preview.
KEY_FIELDS: Final = 4
#: Characters of the agent's explanation shown per waiting proposal.
REASON_SHOWN: Final = 500
#: Characters of a waiting proposal's title shown (its section also holds the edit and the
#: explanation, each with a share of its own; Show full has them whole).
TITLE_SHOWN: Final = 600
#: Characters of who edited a waiting proposal and what the edit changed.
EDIT_SHOWN: Final = 1500


def home_view(
    *,
    waiting: Sequence[Proposal],
    owned: Sequence[Escalation],
    decisions: Sequence[Proposal],
    now: datetime,
    notice: str | None = None,
    delegations: Sequence[Delegation] = (),
    previous: Mapping[str, Proposal] | None = None,
    beyond: Mapping[str, int] | None = None,
    formats_of: Callable[[str], Formats] | None = None,
    current: Mapping[str, StateCheck] | None = None,
    agent_acts_of: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """The Home tab: a notice (the answer to a click made here), what waits for the person,
    the escalations they own, the agents acting for them (delegations, with Revoke) and their
    recent decisions. ``formats_of`` says how each operation shows its fields; ``current``
    maps a waiting proposal's id to its last revalidation, if one was run for the tab;
    ``agent_acts_of`` whether the agent carries out an operation itself (a decision)."""
    blocks: Blocks = []
    if notice:
        blocks += [kit.section(own(kit.clip(notice, kit.SECTION_MAX))), {"type": "divider"}]
    blocks += [
        kit.header("Waiting for your decision"),
        *waiting_blocks(
            waiting,
            now=now,
            previous=previous,
            beyond=beyond,
            formats_of=formats_of,
            current=current,
            agent_acts_of=agent_acts_of,
        ),
    ]
    blocks += [kit.header("Escalations you own"), *_owned_blocks(owned)]
    if delegations:
        blocks += [
            kit.header("Agents acting for you"),
            *delegation_list_blocks(delegations, now=now),
        ]
    blocks += [kit.header("Your recent decisions"), *_decision_blocks(decisions)]
    return {"type": "home", "blocks": blocks[:HOME_BLOCKS_MAX]}


def waiting_blocks(
    waiting: Sequence[Proposal],
    *,
    now: datetime,
    previous: Mapping[str, Proposal] | None = None,
    beyond: Mapping[str, int] | None = None,
    formats_of: Callable[[str], Formats] | None = None,
    current: Mapping[str, StateCheck] | None = None,
    agent_acts_of: Callable[[str], bool] | None = None,
) -> Blocks:
    """The proposals a person may decide, in the order given (riskiest first, then soonest
    expiry), with their buttons and, from ``current``, the state their last revalidation
    found. ``previous`` maps an edit's id to the version it replaced, to list what the edit
    changed. With ``beyond`` (per agent, its pending proposals not on
    the page: bot/slack/waiting_page.py), the page comes grouped by agent, each group saying how
    many more of that agent's are pending, and a last line counts the other agents'."""
    if not waiting and not beyond:
        return [kit.context(own("Nothing waits for you. :tada:"))]
    blocks: Blocks = []
    group: str | None = None
    for proposal in waiting[:WAITING_SHOWN]:
        if beyond is not None and proposal.agent != group:
            group = proposal.agent
            blocks.append(kit.context(_group_line(group, beyond.get(group, 0))))
        fields = [kit.field_text(f.label, f.value) for f in proposal.preview.fields[:KEY_FIELDS]]
        more = len(proposal.preview.fields) - KEY_FIELDS
        if more > 0:
            fields.append(own(f"_{more} more field{'s' if more > 1 else ''}_ {kit.CLIPPED}"))
        expiry = (
            f":hourglass_flowing_sand: Expires {when(proposal.expires_at)} "
            f"({remaining(proposal.expires_at, now)})"
            if proposal.expires_at is not None
            else "No expiry"
        )
        # Countersign's verdict, in a block of its own before anything the agent supplied: no
        # length of agent text can push it out
        acts = agent_acts_of(proposal.operation) if agent_acts_of is not None else False
        lines = [risk_label(proposal, acts), f"*Why you are asked:* {why_asked(proposal)}"]
        if proposal.quorum > 1:
            lines.append(
                f":busts_in_silhouette: {len(counted(proposal))} of {proposal.quorum} approved"
            )
        lines.append(expiry)
        backup = backup_line(proposal)
        if backup is not None:  # who else may decide it, or that they may now
            lines.append(backup)
        checked = (current or {}).get(proposal.id)
        if checked is not None:
            lines.append(state_line(checked))
        verdict = kit.section(own("\n".join(lines)))
        # then the title, who edited it and what changed, and the agent's explanation: each
        # part clipped to its own share of the section
        earlier = (previous or {}).get(proposal.id)
        formats = formats_of(proposal.operation) if formats_of is not None else None
        parts = [f"*{kit.clip(inert(proposal.preview.title), TITLE_SHOWN)}*"]
        parts += [
            kit.clip(block["text"]["text"], EDIT_SHOWN)
            for block in edit_blocks(proposal, earlier, formats)
        ]
        if proposal.agent_reason:
            parts.append(explanation(proposal.agent_reason, REASON_SHOWN)["text"]["text"])
        row: dict[str, Any] = {
            "type": "section",
            "text": {"type": "mrkdwn", "text": "\n".join(parts), "verbatim": True},
        }
        if fields:
            row["fields"] = [
                {"type": "mrkdwn", "text": text, "verbatim": True} for text in fields[:10]
            ]
        asked = f"Requested by agent *{inert(proposal.agent)}* for {mention(proposal.requested_by)}"
        actions = buttons(proposal)
        actions["block_id"] = f"decision-{proposal.id}"  # block ids are unique within a view
        if kit.is_clipped([verdict, row]):
            actions["elements"].append(_show_full_button(proposal.id))
        line = f"{asked} · {kit.code(short_id(proposal.id), 20)}"
        blocks += [verdict, row, kit.context(own(line)), actions, {"type": "divider"}]
    if beyond is not None:
        return blocks + _beyond_lines(waiting[:WAITING_SHOWN], beyond)
    hidden = len(waiting) - WAITING_SHOWN
    if hidden > 0:
        blocks.append(
            kit.context(
                own(f"{hidden} more not shown; the riskiest and soonest to expire come first.")
            )
        )
    return blocks


def state_line(checked: StateCheck) -> Mrkdwn:
    """What the operation's revalidation found, and when: the reason is the operation's (or its
    target's) words, so it is shown inert."""
    at = f"checked {when(checked.at)}"
    if checked.failed:
        why = inert(kit.clip(checked.reason or "no answer", STATE_SHOWN))
        return own(
            f":grey_question: *Current state:* could not be checked ({why}; {at}). It is checked "
            "again before anything runs."
        )
    if checked.reason is None:
        return own(f":mag: *Current state:* unchanged since the preview ({at}).")
    return own(
        f":warning: *Current state has changed:* {inert(kit.clip(checked.reason, STATE_SHOWN))} "
        f"({at}). Approved now, it would stop before executing and be sent back for revision."
    )


def _group_line(agent: str, more: int) -> Mrkdwn:
    line = f":robot_face: From agent *{inert(agent)}*"
    return own(line + (f" · and {more} more pending from this agent, not shown" if more else ""))


def _beyond_lines(shown: Sequence[Proposal], beyond: Mapping[str, int]) -> Blocks:
    """What is pending beyond the page: the agents with nothing on it, and the total."""
    on_page = {proposal.agent for proposal in shown}
    others = {agent: n for agent, n in beyond.items() if agent not in on_page}
    lines = []
    if others:
        names = ", ".join(f"*{inert(agent)}*" for agent in sorted(others)[:5])
        if len(others) > 5:
            names += f" and {len(others) - 5} more"
        lines.append(
            f"And {sum(others.values())} more pending from {len(others)} other "
            f"agent{'s' if len(others) > 1 else ''} ({names}), not shown."
        )
    total = sum(beyond.values())
    if total:
        lines.append(
            f"{total} more pending beyond this page. Each agent gets a share of the page, "
            "its riskiest and soonest to expire first."
        )
    return [kit.context(own(" ".join(lines)))] if lines else []


def _show_full_button(proposal_id: str) -> dict[str, Any]:
    """Show full, for a proposal whose entry here had to be cut (its value: the id only)."""
    return kit.button(SHOW_FULL, "Show full", proposal_id)


def _owned_blocks(owned: Sequence[Escalation]) -> Blocks:
    if not owned:
        return [kit.context(own("You own no escalations."))]
    blocks: Blocks = []
    for escalation in owned[:10]:
        goal = kit.clip(inert(escalation.summary.goal), 300)
        blocks.append(
            kit.section(own(f"*Why Countersign escalated it:* {why_escalated(escalation)}"))
        )
        blocks.append(
            kit.section(
                own(
                    f"*Conversation {kit.code(escalation.conversation_id, 120)}* from agent "
                    f"*{inert(escalation.agent)}*\n_The agent's words:_ {goal}"
                )
            )
        )
        blocks.append(
            {
                "type": "actions",
                "block_id": f"escalation-{escalation.id}",
                "elements": [
                    kit.button(ESCALATION_HAND_BACK, "Hand back", escalation.id),
                    kit.button(ESCALATION_RESOLVE, "Resolve", escalation.id, "primary"),
                ],
            }
        )
    return blocks


def _decision_blocks(decisions: Sequence[Proposal]) -> Blocks:
    if not decisions:
        return [kit.context(own("You have decided nothing yet."))]
    lines = [
        f"• {status_word(p)}: {kit.clip(inert(p.preview.title), 150)}"
        + (f" ({when(p.decided_at)})" if p.decided_at is not None else "")
        for p in decisions
    ]
    return [kit.section(own("\n".join(lines)))]


# --- /countersign -------------------------------------------------------------------------------


def proposal_detail_blocks(
    proposal: Proposal,
    trail: Sequence[AuditEntry],
    *,
    now: datetime,
    previous: Proposal | None = None,
    formats: Formats | None = None,
    current: StateCheck | None = None,
    agent_acts: bool = False,
) -> Blocks:
    """``/countersign show <id>`` (``agent_acts``: a decision operation): in the channel
    message's order, Countersign's verdict (risk, why the policy asked, status and expiry,
    approvals so far, and the ``current`` state the operation's revalidation found, as the Home
    tab shows it), the title, the preview, who edited it and what changed from ``previous``, who
    asked, the agent's explanation, and the audit trail of one proposal. What had to be cut says
    so, with Show full."""
    verdict = [risk_label(proposal, agent_acts), f"*Why you are asked:* {why_asked(proposal)}"]
    status = f"*Status:* {status_word(proposal)} ({kit.code(proposal.status.value, 40)})"
    if proposal.expires_at is not None:
        status += f" · expires {when(proposal.expires_at)} ({remaining(proposal.expires_at, now)})"
    progress = quorum_progress(proposal) if proposal.status is Status.PENDING else None
    verdict += [status, *([progress] if progress else [])]
    if current is not None:
        verdict.append(state_line(current))
    blocks: Blocks = [kit.section(own("\n".join(verdict))), kit.header(proposal.preview.title)]
    fields = preview_fields(proposal)
    blocks += kit.field_sections(fields, budget=3)
    blocks += preview_note(proposal)
    blocks += edit_blocks(proposal, previous, formats)
    blocks.append(
        kit.section(
            own(
                f"*Requested by* agent *{inert(proposal.agent)}* for "
                f"{mention(proposal.requested_by)}"
            )
        )
    )
    if proposal.agent_reason:
        blocks.append(explanation(proposal.agent_reason))
    if kit.is_clipped(blocks):
        blocks += kit.shown_in_part(proposal.id)
    lines = [
        f"`{entry.seq}` {when(entry.at)} {kit.code(entry.event, 60)} by {_actor(entry.actor)}"
        for entry in trail[-25:]
    ]
    blocks.append(kit.section(own("*Audit trail*\n" + ("\n".join(lines) or "_empty_"))))
    blocks.append(kit.context(reference(proposal.id)))
    return blocks[: kit.BLOCKS_MAX]


def _actor(actor: str) -> Mrkdwn:
    return mention(actor) if actor[:1] in ("U", "W") and actor.isupper() else inert(actor)


def help_blocks() -> Blocks:
    return [
        kit.section(
            own(
                "*/countersign* shows what waits for you, only to you:\n"
                "• `/countersign list`: the proposals you may decide, riskiest first, then "
                "soonest expiry\n"
                "• `/countersign show <id>`: a proposal's preview, status and audit trail\n"
                "• `/countersign standing`: the active standing rules, to revoke (admins only)\n"
                "• `/countersign delegate <agent> [for 8h]`: let an agent act for you for a while "
                "(a token shown once); `/countersign delegations` lists them, "
                "`/countersign revoke-delegation <id>` revokes one\n"
                "• `/countersign help`: this help\n"
                "Your Home tab in the Countersign app shows the same list, your escalations and "
                "your recent decisions."
            )
        )
    ]
