"""Block Kit for proposals: pure functions of a proposal (and ``now``), no clock, env or I/O.

Everything a person reads is built here by code from typed values. Values that come from an agent
or an operation's arguments are made inert (bot/render/inert.py): no formatting, emoji, mention,
link, line break or invisible character of theirs is interpreted, and they appear only in their
labelled place, after Countersign's own verdict and risk. mrkdwn texts are sent ``verbatim`` so
Slack adds no links either. Texts are clipped to Block Kit's limits with a visible note, and a
message with any clipped text says it is shown in part and offers "Show full" (a modal with every
frozen argument in full and the binding hash; bot/render/full.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final, overload

from pydantic import JsonValue

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
    SHOW_FULL,
)
from bot.render.figures import changed_fields, result_fields, when, why_asked
from bot.render.inert import Mrkdwn, inert, inert_plain, inert_quote, own
from contracts.base import Risk
from contracts.durations import spoken_duration
from contracts.formats import Formats
from contracts.outcomes import (
    Decided,
    NeedsReconciliation,
    Outcome,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)
from store.proposals import Proposal, Status
from store.proposals.approvals import counted, missing

#: Besides the messages, the vocabulary the other render modules build with: Block Kit blocks
#: and the words every message uses (mentions, times, code spans, quotes, buttons and state).
__all__ = [
    "AGENT_ACTS_LABEL",
    "CLIPPED",
    "RISK_LABELS",
    "already_decided_text",
    "approval_recorded_text",
    "backup_line",
    "buttons",
    "clip",
    "code",
    "compact",
    "context",
    "decided_line",
    "edit_blocks",
    "escape",
    "expiry_reply",
    "explanation",
    "field_sections",
    "field_text",
    "goes_ahead",
    "header",
    "is_clipped",
    "mention",
    "message",
    "modal",
    "outcome_reply",
    "plain",
    "preview_fields",
    "preview_note",
    "proposal_message",
    "quorum_progress",
    "quote",
    "reference",
    "refusal_text",
    "reject_modal",
    "rejection_reply",
    "remaining",
    "request_changes",
    "risk_label",
    "said",
    "section",
    "short_id",
    "shown_in_part",
    "span",
    "state_line",
    "status_word",
    "store_away_text",
    "store_lost_text",
    "text_input",
    "when",
    "with_times",
    "withdrawn_reason",
]

#: Appended wherever a text was cut to fit.
CLIPPED: Final = "… (clipped)"

# Block Kit limits (https://docs.slack.dev/reference/block-kit/).
HEADER_MAX: Final = 150
SECTION_MAX: Final = 3000
FIELD_MAX: Final = 2000
FIELDS_PER_SECTION: Final = 10
BLOCKS_MAX: Final = 50
BUTTON_MAX: Final = 75
CONFIRM_TITLE_MAX: Final = 100
CONFIRM_TEXT_MAX: Final = 300
MODAL_TITLE_MAX: Final = 24
#: Ours, not Slack's: the fallback text shows in notifications, where less is more.
FALLBACK_MAX: Final = 300
#: The longest rejection reason the modal accepts (Slack allows up to 3000).
REASON_MAX: Final = 1000

Message = dict[str, Any]
Blocks = list[dict[str, Any]]

_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")


# --- text helpers ---------------------------------------------------------------------------------


def escape(text: str) -> str:
    """Escape the three characters Slack treats as markup, so the text shows as written."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@overload
def clip(text: Mrkdwn, limit: int) -> Mrkdwn: ...
@overload
def clip(text: str, limit: int) -> str: ...
def clip(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters; otherwise cut, ending with :data:`CLIPPED`
    (Slack text stays Slack text: a cut adds nothing of anyone's).

    The cut never ends inside an escape (``&amp;``) or a Slack token (``<@U123>``).
    """
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - len(CLIPPED))]
    ampersand = cut.rfind("&")
    if ampersand != -1 and ";" not in cut[ampersand:]:
        cut = cut[:ampersand]
    bracket = cut.rfind("<")
    if bracket != -1 and ">" not in cut[bracket:]:
        cut = cut[:bracket]
    return own(cut + CLIPPED) if isinstance(text, Mrkdwn) else cut + CLIPPED


def _clip_plain(text: str, limit: int) -> str:
    """Clip a plain_text value (shown as is: no escapes or tokens to respect)."""
    return text if len(text) <= limit else text[: limit - len(CLIPPED)] + CLIPPED


def code(value: str, limit: int) -> Mrkdwn:
    """``value`` as inline code on one line, made inert (backticks become look-alikes, so it
    cannot break out)."""
    return own(f"`{clip(inert(value), limit - 2)}`")


def _code_block(value: str, limit: int) -> Mrkdwn:
    inner = "\n".join(inert(line) for line in value.splitlines()) or " "
    return own(f"```\n{clip(inner, limit - 8)}\n```")


def quote(value: str, limit: int) -> Mrkdwn:
    """Someone else's words as a block quote, every line marked and inert, so they cannot pose
    as ours."""
    return clip(inert_quote(value), limit)


def mention(user_id: str | None) -> Mrkdwn:
    """A Slack user id as a mention (a person Slack names); anything else as inert code."""
    if user_id is None:
        return own("someone")
    return own(f"<@{user_id}>") if _USER_ID.match(user_id) else code(user_id, 60)


def span(seconds: float) -> str:
    """A length of time as people say it: "1 hour", "90 minutes", "7 days"."""
    return spoken_duration(seconds)


def remaining(expires_at: datetime, now: datetime) -> str:
    left = (expires_at - now).total_seconds()
    return f"in {span(left)}" if left > 0 else f"{span(left)} ago"


def short_id(proposal_id: str) -> str:
    return proposal_id if len(proposal_id) <= 12 else proposal_id[:12]


def reference(proposal_id: str) -> Mrkdwn:
    """The one short reference a person quotes to find a proposal (``/countersign show``, the
    audit log, a target's logs, whose correlation ids start with it)."""
    return own(f"Reference {code(proposal_id, 60)}")


# --- block helpers --------------------------------------------------------------------------------


def _mrkdwn(text: Mrkdwn, limit: int = SECTION_MAX) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": clip(text, limit), "verbatim": True}


def plain(text: str, limit: int) -> dict[str, Any]:
    """Countersign's own plain text (button labels, modal titles)."""
    return {"type": "plain_text", "text": _clip_plain(text, limit), "emoji": True}


def said(text: str, limit: int) -> dict[str, Any]:
    """Plain text that holds agent-supplied values: inert, and no emoji from shortcodes."""
    return {"type": "plain_text", "text": _clip_plain(inert_plain(text), limit), "emoji": False}


def button(action_id: str, text: str, value: str, style: str | None = None) -> dict[str, Any]:
    """A button labelled ``text`` whose value is ``value`` (an id only, never more)."""
    element: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "text": plain(text, BUTTON_MAX),
        "value": value,
    }
    if style is not None:
        element["style"] = style
    return element


def section(text: Mrkdwn) -> dict[str, Any]:
    return {"type": "section", "text": _mrkdwn(text)}


def modal(
    callback_id: str,
    title: str,
    blocks: Blocks,
    *,
    metadata: str | None = None,
    submit: str | None = None,
    close: str = "Cancel",
) -> dict[str, Any]:
    """A modal of ``blocks`` already made; its title and buttons are Countersign's words, and
    ``metadata`` (its private_metadata) names what it is about."""
    view: dict[str, Any] = {"type": "modal", "callback_id": callback_id}
    if metadata is not None:
        view["private_metadata"] = metadata
    view["title"] = plain(title, MODAL_TITLE_MAX)
    if submit is not None:
        view["submit"] = plain(submit, MODAL_TITLE_MAX)
    view["close"] = plain(close, MODAL_TITLE_MAX)
    view["blocks"] = blocks
    return view


def text_input(
    block_id: str,
    *,
    label: str,
    hint: str,
    most: int,
    optional: bool = False,
    placeholder: str | None = None,
) -> dict[str, Any]:
    """A modal's input of free text, several lines of at most ``most`` characters; ``block_id``
    is its action id too (bot/slack/listeners.py text_submission_listener reads it there)."""
    element: dict[str, Any] = {
        "type": "plain_text_input",
        "action_id": block_id,
        "multiline": True,
        "max_length": most,
    }
    if placeholder is not None:
        element["placeholder"] = plain(placeholder, 150)
    return {
        "type": "input",
        "block_id": block_id,
        "optional": optional,
        "label": plain(label, 2000),
        "hint": plain(hint, 2000),
        "element": element,
    }


def context(*texts: Mrkdwn) -> dict[str, Any]:
    return {"type": "context", "elements": [_mrkdwn(text, FIELD_MAX) for text in texts]}


def header(title: str) -> dict[str, Any]:
    return {"type": "header", "text": said(title or "(untitled)", HEADER_MAX)}


def field_text(label: str, value: str) -> Mrkdwn:
    shown_label = clip(inert(label), 200)
    return own(f"*{shown_label}*\n{clip(inert(value) or ' ', FIELD_MAX - len(shown_label) - 3)}")


def is_clipped(blocks: Blocks) -> bool:
    """Whether any text in ``blocks`` was cut to fit (it carries :data:`CLIPPED`). Agent text
    that contains the marker itself only makes a message look clipped: safe, never silent."""
    return CLIPPED in json.dumps(blocks, ensure_ascii=False)


def shown_in_part(
    value: str, *, action_id: str = SHOW_FULL, what: str = "some values above"
) -> Blocks:
    """The note that a message is shown in part, and the button that shows all of it."""
    return [
        context(
            own(
                f":scissors: *Shown in part*: {what} are longer than Slack shows in a message and"
                " are cut where marked. *Show full* shows every value in full, exactly as it will"
                " be used."
            )
        ),
        {
            "type": "actions",
            "block_id": "show_full",
            "elements": [
                {
                    "type": "button",
                    "action_id": action_id,
                    "text": plain("Show full", BUTTON_MAX),
                    "value": value,
                }
            ],
        },
    ]


def field_sections(texts: Sequence[Mrkdwn], *, budget: int) -> Blocks:
    """``texts`` as section fields, ten to a section, in at most ``budget`` sections."""
    texts = list(texts)
    capacity = max(budget, 1) * FIELDS_PER_SECTION
    if len(texts) > capacity:
        hidden = len(texts) - capacity + 1
        texts = [*texts[: capacity - 1], own(f"_{hidden} more not shown_ {CLIPPED}")]
    return [
        {
            "type": "section",
            "fields": [
                _mrkdwn(text, FIELD_MAX) for text in texts[start : start + FIELDS_PER_SECTION]
            ],
        }
        for start in range(0, len(texts), FIELDS_PER_SECTION)
    ]


def message(text: Mrkdwn, blocks: Blocks) -> Message:
    return {"text": clip(text, FALLBACK_MAX), "blocks": blocks[:BLOCKS_MAX]}


# --- the proposal message -------------------------------------------------------------------------


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
    details: Blocks = [section(own(asked))]
    details += edit_blocks(proposal, previous, formats)
    if proposal.agent_reason:
        details.append(explanation(proposal.agent_reason))
    details.append(context(reference(proposal.id)))
    tail: Blocks = []
    if proposal.status is Status.PENDING:
        actions = buttons(proposal, extend_by, agent_acts=agent_acts)
        actions["elements"].append(_edit_button(proposal))  # the channel message only
        if allow_similar:
            actions["elements"].insert(1, _standing_button(proposal))
        tail.append(actions)
    else:
        tail.append({"type": "divider"})
        tail.append(section(state_line(proposal, agent_acts=agent_acts)))
        if proposal.status is Status.NEEDS_RECONCILIATION:
            tail.append(_reconcile_buttons(proposal))
    reserved = len(shown_in_part(proposal.id))
    fields = preview_fields(proposal)
    note = preview_note(proposal)
    budget = BLOCKS_MAX - 1 - len(verdict) - len(details) - len(tail) - len(note) - reserved
    body = [
        *verdict,  # Countersign's own, before anything the agent supplied (the title too)
        header(proposal.preview.title),
        *field_sections(fields, budget=budget),
        *note,
        *details,
    ]
    if is_clipped([*body, *tail]):
        body += shown_in_part(proposal.id)
    title = inert(proposal.preview.title)
    return message(own(f"{status_word(proposal)}: {title}"), [*body, *tail])


#: How the facts of a decided proposal's preview say when they were read.
AT_PREVIEW: Final = "at preview"


def preview_fields(proposal: Proposal) -> list[Mrkdwn]:
    """The preview's fields as section field texts. The preview was read when the proposal was
    made; once it is decided its facts may no longer hold, so a label that says "now"
    ("Refundable now") reads "at preview" ("Refundable at preview"), and :func:`preview_note`
    says when the others were read."""
    if proposal.status is Status.PENDING:
        return [field_text(f.label, f.value) for f in proposal.preview.fields]
    return [field_text(_at_preview(f.label), f.value) for f in proposal.preview.fields]


def preview_note(proposal: Proposal) -> Blocks:
    """Under a decided proposal's preview: that its values were read at preview, and when (the
    state they describe may have changed since). Nothing while it is pending."""
    if proposal.status is Status.PENDING or not proposal.preview.fields:
        return []
    return [
        context(
            own(
                f"The values above were read {AT_PREVIEW}, {when(proposal.created_at)}; what they"
                " describe may have changed since."
            )
        )
    ]


def _at_preview(label: str) -> str:
    return f"{label.removesuffix(' now')} {AT_PREVIEW}" if label.endswith(" now") else label


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
    return [section(own("\n".join(lines)))]


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


def explanation(reason: str, limit: int = SECTION_MAX) -> dict[str, Any]:
    """The agent's explanation, labelled as its unverified words and quoted inert."""
    label = "*Agent's explanation (unverified)* _the agent's own words:_\n"
    return section(own(label + quote(reason, limit - len(label))))


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
        f" {code(short_id(proposal.supersedes), 20)}, and was checked and classified again."
    )
    if previous is None:
        return [section(own(head))]
    changes = request_changes(
        previous.request,
        proposal.request,
        formats,
        arguments=(previous.arguments, proposal.arguments),
    )
    listed = "\n".join(f"• {change}" for change in changes) or "• nothing in the request"
    return [section(own(f"{head}\n*What the edit changed* (old → new):\n{listed}"))]


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
        f"*{clip(inert(label), 100)}*: {_changed_value(old)} → {_changed_value(new)}"
        for label, old, new in changed_fields(before, after, formats or {}, arguments)
    ]
    if len(changed) > CHANGES_SHOWN:
        changed = [*changed[:CHANGES_SHOWN], f"{len(changed) - CHANGES_SHOWN} more {CLIPPED}"]
    return changed


def _changed_value(shown: str | None) -> Mrkdwn:
    return own("_(not set)_") if shown is None else code(shown, 200)


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
                "text": plain("Approve", BUTTON_MAX),
                "style": "primary",
                "value": proposal.id,
                "confirm": {
                    "title": plain(ask, CONFIRM_TITLE_MAX),
                    "text": said(what, CONFIRM_TEXT_MAX),
                    "confirm": plain("Approve", 30),
                    "deny": plain("Cancel", 30),
                    "style": "primary",
                },
            },
            {
                "type": "button",
                "action_id": REJECT,
                "text": plain("Reject", BUTTON_MAX),
                "style": "danger",
                "value": proposal.id,
            },
            *extend,
        ],
    }


def _extend(proposal: Proposal, extend_by: timedelta) -> dict[str, Any]:
    """The Extend button: once, by the rule's extend_by; its value is the proposal id only."""
    return button(EXTEND, f"Extend by {span(extend_by.total_seconds())}", proposal.id)


def _standing_button(proposal: Proposal) -> dict[str, Any]:
    """Approve + allow similar…: opens a modal to approve this one and, for a while, similar
    ones (bot/standing/rules.py); its value is the proposal id only."""
    return button(APPROVE_STANDING, "Approve + allow similar…", proposal.id)


def _edit_button(proposal: Proposal) -> dict[str, Any]:
    """Edit: opens a modal to change the request, which is then checked and classified again
    as a new proposal (bot/flow/edits.py); its value is the proposal id only."""
    return button(EDIT, "Edit", proposal.id)


def _reconcile_buttons(proposal: Proposal) -> dict[str, Any]:
    """For an uncertain execution: record what really happened, or try again (the same request,
    marked as the same one, so a target that recognises repeats acts at most once)."""
    retry = button(RECONCILE_RETRY, "Try again", proposal.id)
    retry["confirm"] = {
        "title": plain("Try it again?", CONFIRM_TITLE_MAX),
        "text": plain(
            "Countersign sends the same request again, marked as a repeat. Only if the target"
            " recognises repeats, or you checked that it did not happen.",
            CONFIRM_TEXT_MAX,
        ),
        "confirm": plain("Try again", 30),
        "deny": plain("Cancel", 30),
    }
    return {
        "type": "actions",
        "block_id": "reconcile",
        "elements": [
            button(RECONCILE_SUCCEEDED, "It happened", proposal.id, "primary"),
            button(RECONCILE_FAILED, "It did not happen", proposal.id, "danger"),
            retry,
        ],
    }


def status_word(proposal: Proposal) -> str:
    if proposal.status is Status.SUCCEEDED and goes_ahead(proposal):
        return "Approved: the agent may go ahead"
    return {
        Status.PENDING: "Approval needed",
        Status.DENIED: "Denied by policy",
        Status.REJECTED: "Rejected",
        Status.EXPIRED: "Expired",
        Status.EXECUTING: "Approved, executing",
        Status.SUCCEEDED: "Succeeded",
        Status.NEEDS_RECONCILIATION: "Outcome unknown",
        Status.REVISION_REQUIRED: "Revision required",
        Status.FAILED: "Failed",
        Status.SUPERSEDED: "Superseded by an edit",
        Status.CANCELLED: "Withdrawn by the agent",
    }[proposal.status]


def _approval(proposal: Proposal) -> Mrkdwn:
    if proposal.decided_by is None:
        return own(":white_check_mark: Approved automatically by the policy")
    at = f" {when(proposal.decided_at)}" if proposal.decided_at is not None else ""
    if proposal.quorum > 1:
        people = _people(a.approver for a in counted(proposal))
        quorum = proposal.quorum
        return own(f":white_check_mark: Approved by {people} ({quorum} of {quorum}){at}")
    return own(f":white_check_mark: Approved by {mention(proposal.decided_by)}{at}")


def decided_line(proposal: Proposal) -> Mrkdwn | None:
    """Who decided and when, and the state the proposal is in, in Countersign's words alone
    (no value of the agent's, no reason or answer of anyone's: those follow, labelled); None
    while pending."""
    status = proposal.status
    at = _at(proposal)
    if status is Status.PENDING:
        return None
    if status is Status.REJECTED:
        return own(f":x: *Rejected* by {mention(proposal.decided_by)}{at}.")
    if status is Status.EXPIRED:
        expired = f" {when(proposal.expires_at)}" if proposal.expires_at is not None else ""
        return own(f":hourglass: *Expired*{expired}: nobody decided in time.")
    if status is Status.DENIED:
        return own(":no_entry: *Denied by the policy*.")
    if status is Status.SUPERSEDED:
        return own(f":pencil2: *Superseded* by an edit of {mention(proposal.decided_by)}{at}.")
    if status is Status.CANCELLED:
        return own(f":leftwards_arrow_with_hook: *Withdrawn by the agent*{at}.")
    return own(f"{_approval(proposal)} · *{status_word(proposal)}*")


def state_line(proposal: Proposal, *, agent_acts: bool = False) -> Mrkdwn:
    """The final (or current) state, in place of the buttons (``agent_acts``: a decision
    operation, which the agent carries out itself)."""
    status = proposal.status
    if status is Status.REJECTED:
        at = f" {when(proposal.decided_at)}" if proposal.decided_at is not None else ""
        reason = quote(proposal.decision_note or "(no reason given)", 2000)
        return own(
            f":x: *Rejected* by {mention(proposal.decided_by)}{at}. Nothing was executed.\n{reason}"
        )
    if status is Status.EXPIRED:
        at = f" {when(proposal.expires_at)}" if proposal.expires_at is not None else ""
        return own(f":hourglass: *Expired*{at}: nobody decided in time. Nothing was executed.")
    if status is Status.DENIED:
        return own(f":no_entry: *Denied by the policy*: {why_asked(proposal)}")
    if status is Status.SUPERSEDED:
        at = f" {when(proposal.decided_at)}" if proposal.decided_at is not None else ""
        edit = f" (id {code(proposal.superseded_by, 60)})" if proposal.superseded_by else ""
        return own(
            f":pencil2: *Superseded* by an edit of {mention(proposal.decided_by)}{at}: this"
            f" version will not be executed. The edit{edit} was checked and classified again"
            " as a new proposal; the thread says where it went."
        )
    if status is Status.CANCELLED:
        return own(
            f":leftwards_arrow_with_hook: *Withdrawn by the agent*{_at(proposal)}. {_WITHDRAWN}"
        )
    if status is Status.EXECUTING:
        if agent_acts:
            return own(f"{_approval(proposal)}. Telling the agent it may go ahead…")
        return own(f"{_approval(proposal)}. :gear: Executing…")
    if status is Status.SUCCEEDED and goes_ahead(proposal):
        return own(f"{_approval(proposal)}.\n{_GO_AHEAD}")
    summary = _outcome_summary(proposal.outcome) if proposal.outcome else f"Status: {status.value}"
    return own(f"{_approval(proposal)}.\n{summary}")


#: What the approval of a decision came to: the agent acts, Countersign ran nothing.
_GO_AHEAD: Final = (
    ":arrow_forward: *Approved: the agent may go ahead.* Countersign ran nothing: the agent"
    " carries out what was approved itself, and is trusted to do only that."
)


def goes_ahead(proposal: Proposal) -> bool:
    """Whether ``proposal`` is an approved decision: its outcome holds a
    :class:`~contracts.outcomes.Decided` result (contracts/operations/decision.py), so the
    agent, not Countersign, carries it out."""
    outcome = proposal.outcome
    if not isinstance(outcome, Succeeded) or not isinstance(outcome.result, dict):
        return False
    try:
        Decided.model_validate(outcome.result)
    except ValueError:
        return False
    return True


#: What a withdrawal means, said wherever a withdrawn proposal shows.
_WITHDRAWN = "Nobody decided it, and nothing was executed."


def _at(proposal: Proposal) -> str:
    return f" {when(proposal.decided_at)}" if proposal.decided_at is not None else ""


def withdrawn_reason(proposal: Proposal) -> str:
    """Why a click on a withdrawn proposal does nothing (told to the clicker and audited)."""
    at = ""
    if proposal.decided_at is not None:
        at = f" at {proposal.decided_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
    return f"the agent withdrew this proposal{at}; nothing changed"


def _outcome_summary(outcome: Outcome) -> Mrkdwn:
    match outcome:
        case Succeeded():
            return own(":white_check_mark: *Succeeded.*")
        case NeedsReconciliation(answered_late=answered, answered_at=at):
            return own(
                ":warning: *Outcome unknown*: the effect may or may not have happened."
                " Check before trying again." + _late_answer(answered, at)
            )
        case RevisionRequired(reason=reason):
            return own(
                f":leftwards_arrow_with_hook: *Revision required*: {clip(inert(reason), 1000)}"
                " Nothing was executed."
            )
        case TerminalFailure(detail=detail):
            failed = _sentence(clip(inert(detail), 1000))
            return own(f":x: *Failed*: {failed} The effect did not happen.")


# --- risk classes and quorum ---------------------------------------------------------------------

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


def risk_label(proposal: Proposal, agent_acts: bool = False) -> Mrkdwn:
    """The risk line of ``proposal``: its risk class, or for a decision operation
    (``agent_acts``, or an approved decision) who will act."""
    if agent_acts or goes_ahead(proposal):
        return own(AGENT_ACTS_LABEL)
    return own(RISK_LABELS[proposal.risk])


def _people(users: Iterable[str]) -> Mrkdwn:
    mentions = [mention(user) for user in users]
    if len(mentions) <= 1:
        return own("".join(mentions) or "nobody")
    return own(", ".join(mentions[:-1]) + f" and {mentions[-1]}")


def _roles(proposal: Proposal) -> Mrkdwn:
    roles = [inert(role) for role in proposal.approver_roles]
    return own(" or ".join(roles) or "the approvers")


def quorum_progress(proposal: Proposal) -> Mrkdwn | None:
    """For a pending proposal that needs several approvers: how many approved, who, and who
    may still approve. None when one approval is enough."""
    if proposal.quorum <= 1:
        return None
    done = counted(proposal)
    shown = f": {_people(a.approver for a in done)}" if done else ""
    not_again = " or those who already approved" if done else ""
    return own(
        f":busts_in_silhouette: *{len(done)} of {proposal.quorum} approved*{shown}\n"
        f"{missing(proposal)} more from {_roles(proposal)}; not "
        f"{mention(proposal.requested_by)}{not_again}"
    )


def approval_recorded_text(proposal: Proposal) -> Mrkdwn:
    """What an approver whose approval did not yet complete the quorum sees, only to them."""
    return own(
        clip(
            f":ballot_box_with_check: Your approval is recorded: {len(counted(proposal))} of "
            f"{proposal.quorum}. Waiting for {missing(proposal)} more from {_roles(proposal)}.",
            SECTION_MAX,
        )
    )


# --- thread replies -------------------------------------------------------------------------------


def outcome_reply(proposal: Proposal, formats: Formats | None = None) -> Message:
    """The thread reply that reports what execution came to, its result under the operation's
    field labels and in its terms (``formats``); after several approvals, it names every
    approver."""
    reply = _outcome_reply(proposal, formats or {})
    if proposal.quorum > 1 and proposal.decided_by is not None:
        # who decided is Countersign's verdict too: with it, before the proposal's title
        people = _people(a.approver for a in counted(proposal))
        first, *rest = reply["blocks"]
        reply["blocks"] = [first, context(own(f"Approved by {people}")), *rest][:BLOCKS_MAX]
    return reply


def _outcome_reply(proposal: Proposal, formats: Formats) -> Message:
    """The thread reply that reports what execution came to, one rendering per outcome kind."""
    outcome = proposal.outcome
    if outcome is None:
        raise ValueError(
            f"proposal {proposal.id!r} has no outcome yet (status {proposal.status.value!r});"
            " outcome_reply needs one"
        )
    title = inert(proposal.preview.title)
    if goes_ahead(proposal):
        return message(
            own(f"Approved: the agent may go ahead: {title}"),
            [section(own(f":white_check_mark: *Approved*.\n{_GO_AHEAD}")), _about(title)],
        )
    match outcome:
        case Succeeded(result=result):
            return message(
                own(f"Succeeded: {title}"),
                [
                    section(own(":white_check_mark: *Succeeded*.")),
                    _about(title),
                    *_result_blocks(result, formats),
                ],
            )
        case NeedsReconciliation(detail=detail):
            return message(
                own(f"Outcome unknown: {title}"),
                [
                    section(
                        own(
                            ":warning: *Outcome unknown*. The effect *may or may not* have"
                            " happened. Find out before anyone retries it; it will not be retried"
                            " automatically."
                        )
                    ),
                    _about(title),
                    section(own(f"*What went wrong*\n{quote(_sentence(detail), 2000)}")),
                    context(reference(proposal.id)),
                ],
            )
        case RevisionRequired(reason=reason):
            return message(
                own(f"Revision required: {title}"),
                [
                    section(
                        own(
                            ":leftwards_arrow_with_hook: *Revision required*. Nothing was executed:"
                            " things changed since the preview was made. The agent must propose"
                            " again."
                        )
                    ),
                    _about(title),
                    section(own(f"*Why*\n{quote(reason, 2000)}")),
                ],
            )
        case TerminalFailure(detail=detail):
            return message(
                own(f"Failed: {title}"),
                [
                    section(
                        own(
                            ":x: *Failed*. The effect did not happen, and retrying the same"
                            " arguments will not help."
                        )
                    ),
                    _about(title),
                    section(own(f"*What went wrong*\n{quote(_sentence(detail), 2000)}")),
                    context(reference(proposal.id)),
                ],
            )


def _about(title: str) -> dict[str, Any]:
    """Which proposal a reply is about: its title (inert), after Countersign's verdict."""
    return context(own(f"*Proposal:* {title}"))


def _sentence(text: str) -> str:
    """``text`` ending as a sentence ends, so the next one does not run on from it."""
    text = text.rstrip()
    return text if not text or text[-1] in ".!?…)" else f"{text}."


def _result_blocks(result: JsonValue, formats: Formats) -> Blocks:
    if result is None or result == {}:
        return [context(own("No result details."))]
    if isinstance(result, dict):
        fields = [field_text(label, value) for label, value in result_fields(result, formats)]
        return field_sections(fields, budget=3)
    return [section(own(f"*Result*\n{_code_block(compact(result), 2500)}"))]


def compact(value: JsonValue) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def rejection_reply(proposal: Proposal) -> Message:
    """The thread reply that says who rejected the proposal, when and why."""
    at = f" {when(proposal.decided_at)}" if proposal.decided_at is not None else ""
    reason = quote(proposal.decision_note or "(no reason given)", 2000)
    return message(
        own(f"Rejected by {mention(proposal.decided_by)}: {inert(proposal.preview.title)}"),
        [
            section(
                own(f":x: *Rejected* by {mention(proposal.decided_by)}{at}. Nothing was executed.")
            ),
            section(own(f"*Reason*\n{reason}")),
        ],
    )


def expiry_reply(proposal: Proposal) -> Message:
    """The thread reply that says nobody decided in time."""
    at = f" {when(proposal.expires_at)}" if proposal.expires_at is not None else ""
    return message(
        own(f"Expired: {inert(proposal.preview.title)}"),
        [
            section(
                own(
                    f":hourglass: *Expired*{at}: nobody decided in time. Nothing was executed;"
                    " the agent has been told it was not approved."
                )
            )
        ],
    )


# --- ephemeral texts and the reject modal ---------------------------------------------------------


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


def _late_answer(answered: str | None, at: str | None) -> str:
    """The target's answer after Countersign had given up waiting, on its own line, or ""."""
    if answered is None or at is None:
        return ""
    try:
        moment = datetime.fromisoformat(at)
    except ValueError:
        return ""
    return (
        f"\nThe target answered *{answered}* {when(moment)}, after Countersign had given up "
        "waiting. Check the target, then record what happened."
    )


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


def reject_modal(proposal: Proposal) -> dict[str, Any]:
    """The modal that asks for the reason of a rejection; private_metadata is the proposal id."""
    return modal(
        REJECT_VIEW,
        "Reject proposal",
        metadata=proposal.id,
        submit="Reject",
        blocks=[
            section(own("Nothing will be executed.")),
            section(own(f"*{inert(proposal.preview.title)}*")),
            text_input(
                REASON_INPUT,
                label="Why do you reject it?",
                hint="The agent and the channel will see this reason.",
                most=REASON_MAX,
                placeholder="What should the agent do instead?",
            ),
        ],
    )
