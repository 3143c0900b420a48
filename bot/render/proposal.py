"""The proposal's message in Slack: pure functions of a proposal (and ``now``), no clock, env or
I/O: the message that asks for a decision and, once decided, shows what came of it; the parts of
it the Home tab, the edit modal and standing rules show too (the preview, the risk and quorum
lines, what an edit changed, the buttons); and the reject modal.

Everything a person reads is built here by code from typed values, out of bot/render/blocks.py
and bot/render/words.py. Values that come from an agent or an operation's arguments are made
inert (bot/render/inert.py): no formatting, emoji, mention, link, line break or invisible
character of theirs is interpreted, and they appear only in their labelled place, after
Countersign's own verdict and risk. A message with any clipped text says it is shown in part
and offers "Show full" (a modal with every frozen argument in full and the binding hash;
bot/render/full.py). Its status in words is bot/render/status.py; the thread replies under it,
bot/render/replies.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Final

from pydantic import JsonValue

from bot.render import blocks as kit
from bot.render.actions import (
    APPROVE,
    APPROVE_STANDING,
    EDIT,
    EXTEND,
    REASON_INPUT,
    RECONCILE_FAILED,
    RECONCILE_RETRY,
    RECONCILE_SUCCEEDED,
    REJECT,
    REJECT_VIEW,
)
from bot.render.blocks import Blocks, Message
from bot.render.figures import changed_fields, why_asked
from bot.render.inert import Mrkdwn, inert, own
from bot.render.status import decided_line, goes_ahead, state_line, status_word
from bot.render.words import (
    AGENT_ACTS_LABEL,
    RISK_LABELS,
    mention,
    people,
    reference,
    remaining,
    short_id,
    span,
    when,
)
from contracts.formats import Formats
from store.proposals import Proposal, Status
from store.proposals.approvals import counted, missing

__all__ = [
    "AT_PREVIEW",
    "CHANGES_SHOWN",
    "approval_recorded_text",
    "backup_line",
    "buttons",
    "edit_blocks",
    "explanation",
    "preview_fields",
    "preview_label",
    "preview_note",
    "proposal_message",
    "quorum_progress",
    "reject_modal",
    "request_changes",
    "risk_label",
]

# --- the message ---------------------------------------------------------------------------------


def proposal_message(
    proposal: Proposal,
    *,
    now: datetime,
    agent_display: str | None = None,
    extend_by: timedelta | None = None,
    allow_similar: bool = False,
    previous: Proposal | None = None,
    formats: Formats | None = None,
    agent_acts: bool = False,
) -> Message:
    """The message that asks for a decision; once decided, the same message showing the result.
    ``agent_acts``: a decision operation (contracts/operations/decision.py), which the agent
    carries out itself once approved: its risk, confirmation and outcome say so.

    In a fixed order: Countersign's verdict (risk class, why the policy asked, approvals so
    far, expiry) in a block of its own, then the title and what runs and what the agent said,
    each labelled (the title is built from the agent's values, so it comes after); an edit
    says who edited it and what changed from ``previous`` (the version it replaced), through
    the operation's field ``formats``. ``allow_similar`` adds "Approve + allow similar…" (its
    rule allows standing rules, bot/standing/rules.py).

    While pending it ends with Approve / Reject buttons whose value is the proposal id and
    nothing else (and Extend, when ``extend_by`` says what one extension adds); in any other
    status it ends with who decided, when, and what came of it. When any text had to be cut,
    the message says so and offers Show full.
    """
    verdict = _verdict(proposal, now, agent_acts)
    agent = inert(agent_display or proposal.agent)
    asked = f"*Requested by* agent *{agent}* for {mention(proposal.requested_by)}"
    details: Blocks = [kit.section(own(asked))]
    details += edit_blocks(proposal, previous, formats)
    if proposal.agent_reason:
        details.append(explanation(proposal.agent_reason))
    details.append(kit.context(reference(proposal.id)))
    tail: Blocks = []
    if proposal.status is Status.PENDING:
        actions = buttons(proposal, extend_by, agent_acts=agent_acts)
        actions["elements"].append(_edit_button(proposal))  # the channel message only
        if allow_similar:
            actions["elements"].insert(1, _standing_button(proposal))
        tail.append(actions)
    else:
        tail.append({"type": "divider"})
        tail.append(kit.section(state_line(proposal, agent_acts=agent_acts)))
        if proposal.status is Status.NEEDS_RECONCILIATION:
            tail.append(_reconcile_buttons(proposal))
    reserved = len(kit.shown_in_part(proposal.id))
    fields = preview_fields(proposal)
    note = preview_note(proposal)
    budget = kit.BLOCKS_MAX - 1 - len(verdict) - len(details) - len(tail) - len(note) - reserved
    body = [
        *verdict,  # Countersign's own, before anything the agent supplied (the title too)
        kit.header(proposal.preview.title),
        *kit.field_sections(fields, budget=budget),
        *note,
        *details,
    ]
    if kit.is_clipped([*body, *tail]):
        body += kit.shown_in_part(proposal.id)
    title = inert(proposal.preview.title)
    return kit.message(own(f"{status_word(proposal)}: {title}"), [*body, *tail])


#: How the facts of a decided proposal's preview say when they were read.
AT_PREVIEW: Final = "at preview"


def preview_fields(proposal: Proposal) -> list[Mrkdwn]:
    """The preview's fields as section field texts. The preview was read when the proposal was
    made; once it is decided its facts may no longer hold, so a label that says "now"
    ("Refundable now") reads "at preview" ("Refundable at preview"), and :func:`preview_note`
    says when the others were read."""
    return [
        kit.field_text(preview_label(proposal, f.label), f.value) for f in proposal.preview.fields
    ]


def preview_note(proposal: Proposal) -> Blocks:
    """Under a decided proposal's preview: that its values were read at preview, and when (the
    state they describe may have changed since). Nothing while it is pending."""
    if proposal.status is Status.PENDING or not proposal.preview.fields:
        return []
    return [
        kit.context(
            own(
                f"The values above were read {AT_PREVIEW}, {when(proposal.created_at)}; what they"
                " describe may have changed since."
            )
        )
    ]


def preview_label(proposal: Proposal, label: str) -> str:
    """A preview field's ``label`` as ``proposal`` shows it: as the operation gives it while it
    is pending; once decided, one that says "now" says "at preview" ("Refundable at preview")."""
    if proposal.status is Status.PENDING or not label.endswith(" now"):
        return label
    return f"{label.removesuffix(' now')} {AT_PREVIEW}"


def _verdict(proposal: Proposal, now: datetime, agent_acts: bool = False) -> Blocks:
    """Countersign's own facts, before anything the agent supplied: the risk class, why the
    policy asked, (while pending) the approvals so far and when it expires, and (once
    decided) who decided, when, and the state it is in."""
    lines = [risk_label(proposal, agent_acts), f"*Why you are asked:* {why_asked(proposal)}"]
    progress = quorum_progress(proposal) if proposal.status is Status.PENDING else None
    if progress is not None:
        lines.append(progress)
    decided = decided_line(proposal)
    if decided is not None:
        lines.append(decided)
    if proposal.status is Status.PENDING and proposal.expires_at is not None:
        extended = ""
        if proposal.extended_by is not None:
            extended = f" · extended by {mention(proposal.extended_by)}"
        lines.append(
            f":hourglass_flowing_sand: Expires {when(proposal.expires_at)}"
            f" ({remaining(proposal.expires_at, now)}){extended}"
        )
    backup = backup_line(proposal)
    if backup is not None:
        lines.append(backup)
    return [kit.section(own("\n".join(lines)))]


def backup_line(proposal: Proposal) -> str | None:
    """While pending, who else may decide it when nobody has (its rule's ``then``), and from
    when; once that time passed, that they may now."""
    if proposal.status is not Status.PENDING or not proposal.backup_roles:
        return None
    if proposal.backup_at is None:
        return None
    roles = ", ".join(f"*{inert(role)}*" for role in proposal.backup_roles)
    if proposal.handed_over_at is not None:
        return (
            f":busts_in_silhouette: Nobody decided by {when(proposal.backup_at)}: "
            f"{roles} may decide it too now"
        )
    return (
        f":busts_in_silhouette: If nobody has decided by {when(proposal.backup_at)}, "
        f"{roles} may decide it too"
    )


def explanation(reason: str, limit: int = kit.SECTION_MAX) -> dict[str, Any]:
    """The agent's explanation, labelled as its unverified words and quoted inert."""
    label = "*Agent's explanation (unverified)* _the agent's own words:_\n"
    return kit.section(own(label + kit.quote(reason, limit - len(label))))


def edit_blocks(
    proposal: Proposal, previous: Proposal | None, formats: Formats | None = None
) -> Blocks:
    """For an edit: who edited it, and each request field that changed (old → new) from
    ``previous``, the version it replaced, in the operation's terms (``formats``). Empty for a
    proposal that is not an edit."""
    if proposal.supersedes is None:
        return []
    who = mention(proposal.edited_by) if proposal.edited_by else "someone"
    head = (
        f":pencil2: *Edited by {who}*: this replaces proposal"
        f" {kit.code(short_id(proposal.supersedes), 20)}, and was checked and classified again."
    )
    if previous is None:
        return [kit.section(own(head))]
    changes = request_changes(
        previous.request,
        proposal.request,
        formats,
        arguments=(previous.arguments, proposal.arguments),
    )
    listed = "\n".join(f"• {change}" for change in changes) or "• nothing in the request"
    return [kit.section(own(f"{head}\n*What the edit changed* (old → new):\n{listed}"))]


#: How many changed request fields an edit lists.
CHANGES_SHOWN: Final = 10


def request_changes(
    before: JsonValue,
    after: JsonValue,
    formats: Formats | None = None,
    *,
    arguments: tuple[Mapping[str, JsonValue], Mapping[str, JsonValue]] = ({}, {}),
) -> list[str]:
    """``Label: old → new`` (labels and values in the operation's terms, inert) for each
    top-level request field that differs; ``arguments``, the frozen arguments of each side,
    give a money field its currency."""
    changed = [
        f"*{kit.clip(inert(label), 100)}*: {_changed_value(old)} → {_changed_value(new)}"
        for label, old, new in changed_fields(before, after, formats or {}, arguments)
    ]
    if len(changed) > CHANGES_SHOWN:
        changed = [*changed[:CHANGES_SHOWN], f"{len(changed) - CHANGES_SHOWN} more {kit.CLIPPED}"]
    return changed


def _changed_value(shown: str | None) -> Mrkdwn:
    return own("_(not set)_") if shown is None else kit.code(shown, 200)


def buttons(
    proposal: Proposal, extend_by: timedelta | None = None, *, agent_acts: bool = False
) -> dict[str, Any]:
    """Approve (with its confirmation), Reject and, when ``extend_by`` says what one extension
    adds, Extend; each button's value is the proposal id only. The confirmation says what
    approving does: Countersign carries it out, or (``agent_acts``, a decision) the agent."""
    extend = [] if extend_by is None or proposal.extended_by else [_extend(proposal, extend_by)]
    last = missing(proposal) <= 1
    if agent_acts:
        ask = "Let the agent go ahead?" if last else "Approve?"
        what = f"{proposal.preview.title} · The agent does this itself; Countersign runs nothing."
    else:
        ask = "Approve and execute?" if last else "Approve?"
        what = proposal.preview.title
    return {
        "type": "actions",
        "block_id": "decision",
        "elements": [
            {
                "type": "button",
                "action_id": APPROVE,
                "text": kit.plain("Approve", kit.BUTTON_MAX),
                "style": "primary",
                "value": proposal.id,
                "confirm": {
                    "title": kit.plain(ask, kit.CONFIRM_TITLE_MAX),
                    "text": kit.said(what, kit.CONFIRM_TEXT_MAX),
                    "confirm": kit.plain("Approve", 30),
                    "deny": kit.plain("Cancel", 30),
                    "style": "primary",
                },
            },
            {
                "type": "button",
                "action_id": REJECT,
                "text": kit.plain("Reject", kit.BUTTON_MAX),
                "style": "danger",
                "value": proposal.id,
            },
            *extend,
        ],
    }


def _extend(proposal: Proposal, extend_by: timedelta) -> dict[str, Any]:
    """The Extend button: once, by the rule's extend_by; its value is the proposal id only."""
    return kit.button(EXTEND, f"Extend by {span(extend_by.total_seconds())}", proposal.id)


def _standing_button(proposal: Proposal) -> dict[str, Any]:
    """Approve + allow similar…: opens a modal to approve this one and, for a while, similar
    ones (bot/standing/rules.py); its value is the proposal id only."""
    return kit.button(APPROVE_STANDING, "Approve + allow similar…", proposal.id)


def _edit_button(proposal: Proposal) -> dict[str, Any]:
    """Edit: opens a modal to change the request, which is then checked and classified again
    as a new proposal (bot/flow/edits.py); its value is the proposal id only."""
    return kit.button(EDIT, "Edit", proposal.id)


def _reconcile_buttons(proposal: Proposal) -> dict[str, Any]:
    """For an uncertain execution: record what really happened, or try again (the same request,
    marked as the same one, so a target that recognises repeats acts at most once)."""
    retry = kit.button(RECONCILE_RETRY, "Try again", proposal.id)
    retry["confirm"] = {
        "title": kit.plain("Try it again?", kit.CONFIRM_TITLE_MAX),
        "text": kit.plain(
            "Countersign sends the same request again, marked as a repeat. Only if the target"
            " recognises repeats, or you checked that it did not happen.",
            kit.CONFIRM_TEXT_MAX,
        ),
        "confirm": kit.plain("Try again", 30),
        "deny": kit.plain("Cancel", 30),
    }
    return {
        "type": "actions",
        "block_id": "reconcile",
        "elements": [
            kit.button(RECONCILE_SUCCEEDED, "It happened", proposal.id, "primary"),
            kit.button(RECONCILE_FAILED, "It did not happen", proposal.id, "danger"),
            retry,
        ],
    }


# --- risk and quorum -----------------------------------------------------------------------------


def risk_label(proposal: Proposal, agent_acts: bool = False) -> Mrkdwn:
    """The risk line of ``proposal``: its risk class, or for a decision operation
    (``agent_acts``, or an approved decision) who will act."""
    if agent_acts or goes_ahead(proposal):
        return own(AGENT_ACTS_LABEL)
    return own(RISK_LABELS[proposal.risk])


def _roles(proposal: Proposal) -> Mrkdwn:
    roles = [inert(role) for role in proposal.approver_roles]
    return own(" or ".join(roles) or "the approvers")


def quorum_progress(proposal: Proposal) -> Mrkdwn | None:
    """For a pending proposal that needs several approvers: how many approved, who, and who
    may still approve. None when one approval is enough."""
    if proposal.quorum <= 1:
        return None
    done = counted(proposal)
    shown = f": {people([a.approver for a in done])}" if done else ""
    not_again = " or those who already approved" if done else ""
    return own(
        f":busts_in_silhouette: *{len(done)} of {proposal.quorum} approved*{shown}\n"
        f"{missing(proposal)} more from {_roles(proposal)}; not "
        f"{mention(proposal.requested_by)}{not_again}"
    )


def approval_recorded_text(proposal: Proposal) -> Mrkdwn:
    """What an approver whose approval did not yet complete the quorum sees, only to them."""
    return own(
        kit.clip(
            f":ballot_box_with_check: Your approval is recorded: {len(counted(proposal))} of "
            f"{proposal.quorum}. Waiting for {missing(proposal)} more from {_roles(proposal)}.",
            kit.SECTION_MAX,
        )
    )


# --- the reject modal ----------------------------------------------------------------------------


def reject_modal(proposal: Proposal) -> dict[str, Any]:
    """The modal that asks for the reason of a rejection; private_metadata is the proposal id."""
    return kit.modal(
        REJECT_VIEW,
        "Reject proposal",
        metadata=proposal.id,
        submit="Reject",
        blocks=[
            kit.section(own("Nothing will be executed.")),
            kit.section(own(f"*{inert(proposal.preview.title)}*")),
            kit.text_input(
                REASON_INPUT,
                label="Why do you reject it?",
                hint="The agent and the channel will see this reason.",
                most=kit.REASON_MAX,
                placeholder="What should the agent do instead?",
            ),
        ],
    )
