"""Block Kit for digests: one message listing similar proposals, its thread replies, its modals.

Pure functions of stored values (and ``now``), like bot/render/proposal.py, built of the same
blocks and words (bot/render/blocks.py, bot/render/words.py): everything from an agent or an
operation's arguments is made inert and clipped, the agent's words are labelled as such, and
buttons carry the digest's opaque id only.

The message is a compact table (:func:`compact_table`): the preview fields every item shows
alike, once; the total of the operation's money (its first money field in minor units, from the
frozen arguments) over the pending items; one line per item, numbered by Countersign, with only
the fields that differ, under bold labels that agent text cannot produce. Review all… is offered
on every digest with pending items (bot/render/digest_review.py shows each in full). When a
pending item is not shown in full here (a clipped value or reason, rows beyond the message's),
the digest says so, offers Show full, and does not offer Approve all: approving goes through the
review. Each item keeps its own line with its own status; the whole message is rendered again
from the current state on every change.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from pydantic import JsonValue

from bot.render.actions import (
    DIGEST_APPROVE_ALL,
    DIGEST_CHOOSE,
    DIGEST_CHOOSE_VIEW,
    DIGEST_DECISION_INPUT,
    DIGEST_ITEMS_INPUT,
    DIGEST_REJECT_ALL,
    DIGEST_REJECT_VIEW,
    DIGEST_REVIEW,
    DIGEST_SHOW_FULL,
    REASON_INPUT,
    RECONCILE_FAILED,
    RECONCILE_SUCCEEDED,
)
from bot.render.blocks import (
    BLOCKS_MAX,
    CLIPPED,
    CONFIRM_TEXT_MAX,
    CONFIRM_TITLE_MAX,
    FALLBACK_MAX,
    REASON_MAX,
    SECTION_MAX,
    Blocks,
    Message,
    button,
    clip,
    code,
    compact,
    context,
    header,
    modal,
    plain,
    quote,
    said,
    section,
    shown_in_part,
    text_input,
)
from bot.render.figures import result_fields, why_asked
from bot.render.inert import Mrkdwn, inert, own
from bot.render.status import goes_ahead
from bot.render.words import RISK_LABELS, mention, remaining, when, with_times
from contracts.base import Risk
from contracts.formats import Formats, format_money, money_currency
from contracts.outcomes import NeedsReconciliation, RevisionRequired, Succeeded, TerminalFailure
from store.digests import Digest
from store.proposals import Proposal, Status
from store.proposals.approvals import counted

__all__ = [
    "Tally",
    "choose_modal",
    "digest_message",
    "digest_reply",
    "reject_modal",
    "shown_whole",
    "tally_text",
]


#: A private answer that names items (Slack takes 40,000 characters of text; fifty items with
#: the longest reasons fit).
NAMED_TEXT_MAX: Final = 20_000
#: Options in one checkboxes element (Slack's limit).
OPTIONS_MAX: Final = 10
OPTION_TEXT_MAX: Final = 75
#: Preview fields shown in an item's row.
ROW_FIELDS: Final = 3
#: How many distinct reasons of the policy the head of a digest lists.
NOTES_SHOWN: Final = 3
#: Risk classes as a digest's head lists them, riskiest first.
RISK_ORDER: Final[tuple[Risk, ...]] = ("irreversible", "reversible", "read")


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


# --- the message ----------------------------------------------------------------------------------


def digest_message(digest: Digest, *, now: datetime, formats: Formats | None = None) -> Message:
    """The digest: who asked and why, the fields every item shares once, the total where the
    operation has money (``formats``), one numbered line per item with only the fields that
    differ and its status, and while any item is pending the buttons Review all…, Reject all…
    and Choose… (and Approve all when every pending item is shown in full)."""
    items = digest.items
    pending = [p for p in items if p.status is Status.PENDING]
    agents = sorted({p.agent for p in items})
    whys = sorted({why_asked(p) for p in items})
    if len(whys) > NOTES_SHOWN:
        whys = [*whys[:NOTES_SHOWN], own(f"and {len(whys) - NOTES_SHOWN} more reasons")]
    asked = (
        f"*Requested by* agent{'s' if len(agents) > 1 else ''} "
        f"{', '.join(f'*{inert(a)}*' for a in agents)} for "
        # a batch's items may be of several requesters: each is named
        f"{', '.join(mention(r) for r in sorted({p.requested_by for p in items}))}"
    )
    risks = [RISK_LABELS[risk] for risk in RISK_ORDER if any(p.risk == risk for p in items)]
    table = compact_table(items, formats or {})
    blocks: Blocks = [
        header(_title(digest)),
        section(own("\n".join([*risks, f"*Why you are asked:* {'; '.join(whys)}"]))),
        context(own(f"{_counts(items)}. Each proposal is checked and executed on its own.")),
        section(own(asked)),
        section(_common_text(table, pending, now)),
    ]
    budget = _rows_budget(len(blocks), bool(pending))
    rows = [_row(n, p, table, now) for n, p in enumerate(items, 1)]
    sections = _rows_in_sections(rows, budget)
    whole = _whole(rows, items, budget) and CLIPPED not in blocks[-1]["text"]["text"]
    blocks += sections
    if not whole:
        blocks += shown_in_part(
            digest.id, action_id=DIGEST_SHOW_FULL, what="some proposals listed above"
        )
    tail: Blocks = [_buttons(digest, len(pending), approve_all=whole)] if pending else []
    text = f"{'Approval needed' if pending else 'Decided'}: {_title(digest)}"
    return {"text": clip(inert(text), FALLBACK_MAX), "blocks": [*blocks, *tail][:BLOCKS_MAX]}


def shown_whole(digest: Digest, *, now: datetime, formats: Formats | None = None) -> bool:
    """Whether :func:`digest_message` shows every pending item in full (then, and only then, it
    offers Approve all; the digest service checks this again before approving all)."""
    message = digest_message(digest, now=now, formats=formats)
    return any(
        element.get("action_id") == DIGEST_APPROVE_ALL
        for block in message["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    )


@dataclass(frozen=True)
class Table:
    """A digest's items as a table: the preview fields every item shows alike (once), the labels
    of those that differ (a column each, in the preview's order), whether the titles differ,
    the agent's words when every item has the same, and the total of the operation's money."""

    common: tuple[tuple[str, str], ...]
    columns: tuple[str, ...]
    titles_differ: bool
    same_reason: str | None
    total: tuple[str, dict[str, int]] | None  #: (label, minor units by currency)
    money_field: str | None


def compact_table(items: Sequence[Proposal], formats: Formats) -> Table:
    """What :func:`digest_message` shows once and what it shows per item."""
    labels: list[str] = []
    for proposal in items:
        for f in proposal.preview.fields:
            if f.label not in labels:
                labels.append(f.label)
    values = [{f.label: f.value for f in p.preview.fields} for p in items]
    common = tuple(
        (label, values[0][label])
        for label in labels
        if all(label in v for v in values) and len({v[label] for v in values}) == 1
    )
    shared = {label for label, _ in common}
    columns = tuple(label for label in labels if label not in shared)
    reasons = {p.agent_reason for p in items}
    same_reason = next(iter(reasons)) if len(reasons) == 1 and len(items) > 1 else None
    money_field = _money_field(items, formats)
    total = None
    if money_field is not None:
        fmt = formats[money_field]
        sums: dict[str, int] = {}
        counted_items = [p for p in items if p.status is Status.PENDING] or list(items)
        for p in counted_items:
            amount = p.arguments.get(money_field)
            currency = money_currency(fmt, p.arguments) or "XXX"
            if isinstance(amount, int) and not isinstance(amount, bool):
                sums[currency] = sums.get(currency, 0) + amount
        total = (fmt.label, sums)
    return Table(
        common=common,
        columns=columns,
        titles_differ=len({p.preview.title for p in items}) > 1,
        same_reason=same_reason,
        total=total,
        money_field=money_field,
    )


def _money_field(items: Sequence[Proposal], formats: Formats) -> str | None:
    """The operation's money: its first declared money field in minor units that every item
    holds as a whole number (a refund's amount), or None."""
    for name, fmt in formats.items():
        if fmt.kind != "money" or not fmt.minor_units:
            continue
        if all(
            isinstance(p.arguments.get(name), int) and not isinstance(p.arguments.get(name), bool)
            for p in items
        ):
            return name
    return None


def total_text(table: Table, pending: int, items: int) -> str | None:
    """ "*Total amount* of the 3 pending: 45.00 USD", or None when the operation has no money."""
    if table.total is None:
        return None
    label, sums = table.total
    shown = " + ".join(
        format_money(amount, currency).replace(" XXX", " (currency unknown)")
        for currency, amount in sorted(sums.items())
    )
    whose = f"the {pending:,} pending" if pending else f"all {items:,}"
    return f"*Total {inert(label.lower())}* of {whose}: {shown or 'none'}"


def _common_text(table: Table, pending: Sequence[Proposal], now: datetime) -> Mrkdwn:
    lines: list[str] = []
    if table.common:
        lines.append("*Same for every item:*")
        lines += [
            f"*{clip(inert(label), 60)}*: {clip(inert(value), 300)}"
            for label, value in table.common
        ]
    total = total_text(table, len(pending), 0)
    if total is not None and pending:
        lines.append(total)
    expiries = [p.expires_at for p in pending if p.expires_at is not None]
    if expiries:
        first = min(expiries)
        lines.append(f"*First to expire:* {when(first)} ({remaining(first, now)})")
    if table.same_reason:
        lines.append("_Agent's words (unverified), the same for every item:_")
        lines.append(quote(table.same_reason, 1200))
    return own("\n".join(lines) or "_Every item differs in every field; each line below shows it._")


def _rows_budget(head: int, pending: bool) -> int:
    """Sections left for the rows, keeping room for the buttons and the shown-in-part note."""
    return BLOCKS_MAX - head - (1 if pending else 0) - len(shown_in_part(""))


def _whole(rows: Sequence[str], items: Sequence[Proposal], budget: int) -> bool:
    """No pending item's row was cut, and every row fits in the message."""
    if len(_pack(rows)) > budget:
        return False
    return not any(
        CLIPPED in row for row, p in zip(rows, items, strict=True) if p.status is Status.PENDING
    )


def _title(digest: Digest) -> str:
    return f"{len(digest.items)} proposals: {digest.operation}"


def _counts(items: Sequence[Proposal]) -> str:
    counts = Counter(p.status.value.replace("_", " ") for p in items)
    return ", ".join(f"{n:,} {status}" for status, n in sorted(counts.items()))


def _row(n: int, proposal: Proposal, table: Table, now: datetime) -> Mrkdwn:
    """One item on one line: Countersign's number for it, its short id, the fields that differ
    (bold labels are ours; agent text cannot make bold), its status; what had to be left out
    is marked clipped. The agent's words follow, quoted, unless every item has the same."""
    values = {f.label: f.value for f in proposal.preview.fields}
    cells = [
        f"*{clip(inert(label), 40)}* {clip(inert(values[label]), 120)}"
        for label in table.columns
        if label in values
    ]
    if table.titles_differ and not cells:
        cells.insert(0, f"*Title* {clip(inert(proposal.preview.title), 150)}")
    line = f"*{n}.* {code(proposal.id[:12], 20)} · " + " · ".join([*cells, _status(proposal, now)])
    if proposal.agent_reason and table.same_reason is None:
        line += "\n_Agent's words (unverified):_\n" + quote(proposal.agent_reason, 200)
    return own(line)


def _status(proposal: Proposal, now: datetime) -> Mrkdwn:
    status = proposal.status
    if status is Status.PENDING:
        progress = ""
        if proposal.quorum > 1:
            progress = f" · {len(counted(proposal))} of {proposal.quorum} approved"
        return own(f":hourglass_flowing_sand: Pending{progress}")
    by = mention(proposal.decided_by)
    if status is Status.REJECTED:
        reason = clip(inert(proposal.decision_note or "(no reason given)"), 200)
        return own(f":x: Rejected by {by}: {reason}")
    if status is Status.EXPIRED:
        return own(":hourglass: Expired: nobody decided in time. Nothing was executed.")
    if status is Status.CANCELLED:
        return own(":leftwards_arrow_with_hook: Withdrawn by the agent. Nothing was executed.")
    if status is Status.SUPERSEDED:
        return own(f":pencil2: Superseded by an edit of {by}.")
    if status is Status.EXECUTING:
        return own(f":gear: Approved by {by}, executing…")
    approved = f"approved by {by}" if proposal.decided_by else "approved"
    return own(f"{_outcome_word(proposal)} ({approved}; details in the thread)")


def _outcome_word(proposal: Proposal) -> Mrkdwn:
    if goes_ahead(proposal):
        return own(":white_check_mark: Approved: the agent may go ahead")
    match proposal.outcome:
        case Succeeded():
            return own(":white_check_mark: Succeeded")
        case NeedsReconciliation():
            return own(":warning: Outcome unknown: a person must check")
        case RevisionRequired():
            return own(":leftwards_arrow_with_hook: Revision required, nothing executed")
        case TerminalFailure():
            return own(":x: Failed, the effect did not happen")
        case None:
            return own(f"Status: {proposal.status.value}")


def _pack(rows: Sequence[str]) -> list[str]:
    """``rows`` joined into as few texts of at most 3000 characters as they fit in."""
    sections: list[str] = []
    for row in rows:
        if sections and len(sections[-1]) + 2 + len(row) <= SECTION_MAX:
            sections[-1] += "\n\n" + row
        else:
            sections.append(row)
    return sections


def _rows_in_sections(rows: Sequence[str], budget: int) -> Blocks:
    """``rows`` joined into as few sections as fit (3000 characters each), at most ``budget``."""
    sections = _pack(rows)
    if len(sections) > budget:
        hidden = sum(s.count("\n\n") + 1 for s in sections[budget - 1 :])
        sections = [*sections[: budget - 1], f"_{hidden} more not shown here_ {CLIPPED}"]
    return [section(own(text)) for text in sections]


def _buttons(digest: Digest, pending: int, *, approve_all: bool = True) -> dict[str, Any]:
    """Approve all (only when ``approve_all``: every pending item is shown in full), Review
    all… (always: every item in full in a modal, approved from there), Reject all… and
    Choose…."""
    approve = button(DIGEST_APPROVE_ALL, f"Approve all ({pending})", digest.id, "primary")
    approve["confirm"] = {
        "title": plain(f"Approve {pending} proposals?", CONFIRM_TITLE_MAX),
        "text": plain(
            f"Every pending {digest.operation} listed here is checked and executed on its own, "
            "with its own outcome in the thread.",
            CONFIRM_TEXT_MAX,
        ),
        "confirm": plain("Approve all", 30),
        "deny": plain("Cancel", 30),
        "style": "primary",
    }
    review = button(DIGEST_REVIEW, f"Review all ({pending:,})…", digest.id)
    if not approve_all:
        review["style"] = "primary"
    return {
        "type": "actions",
        "block_id": "digest",
        "elements": [
            *([approve] if approve_all else []),
            review,
            button(DIGEST_REJECT_ALL, "Reject all…", digest.id, "danger"),
            button(DIGEST_CHOOSE, "Choose…", digest.id),
        ],
    }


# --- the thread reply -----------------------------------------------------------------------------


def digest_reply(
    entries: Sequence[tuple[Proposal, Status]],
    *,
    formats_of: Callable[[str], Formats] | None = None,
) -> Message | None:
    """One thread reply for several items that changed: each item's outcome (its result in the
    operation's terms, ``formats_of``), rejection or expiry (``Status``: the status its outbox
    entry was written for). Items whose execution ended uncertain get the buttons that resolve
    it. None when there is nothing to say."""
    lines: list[str] = []
    uncertain: list[Proposal] = []
    for proposal, status in entries:
        formats = formats_of(proposal.operation) if formats_of is not None else {}
        line = _reply_line(proposal, status, formats)
        if line is not None:
            lines.append(line)
            if status is Status.NEEDS_RECONCILIATION:
                uncertain.append(proposal)
    if not lines:
        return None
    actions = [_reconcile_buttons(n, p) for n, p in enumerate(uncertain, 1)]
    budget = BLOCKS_MAX - 1 - min(len(actions), BLOCKS_MAX // 2)
    blocks = _rows_in_sections(lines, budget)
    blocks += actions[: BLOCKS_MAX - len(blocks)]
    text = f"{len(lines)} proposal{'s' if len(lines) > 1 else ''} of this digest changed"
    return {"text": text, "blocks": blocks}


def _result_line(result: JsonValue, formats: Formats) -> Mrkdwn:
    """An item's result in a line: "Refund re_000001 · Amount 450.00 USD"."""
    if not isinstance(result, dict):
        return own(f"Result {code(compact(result), 300)}")
    pairs = result_fields(result, formats)
    return own(
        clip(" · ".join(f"{inert(label)} {code(value, 120)}" for label, value in pairs), 600)
    )


def _reply_line(proposal: Proposal, status: Status, formats: Formats) -> str | None:
    head = f"{code(proposal.id[:12], 20)} *{clip(inert(proposal.preview.title), 150)}*"
    if status is Status.REJECTED:
        reason = quote(proposal.decision_note or "(no reason given)", 500)
        by = mention(proposal.decided_by)
        return f":x: *Rejected* by {by}: {head}. Nothing was executed.\n{reason}"
    if status is Status.EXPIRED:
        return f":hourglass: *Expired*: {head}. Nobody decided in time; nothing was executed."
    if goes_ahead(proposal):
        return (
            f":white_check_mark: *Approved*: {head}. The agent may go ahead; Countersign ran"
            " nothing."
        )
    match proposal.outcome:
        case Succeeded(result=result):
            shown = "" if result in (None, {}) else f"\n{_result_line(result, formats)}"
            return f":white_check_mark: *Succeeded*: {head}{shown}"
        case NeedsReconciliation(detail=detail):
            return (
                f":warning: *Outcome unknown*: {head}. The effect *may or may not* have happened;"
                f" find out before anyone retries it.\n{quote(detail, 300)}"
            )
        case RevisionRequired(reason=why):
            return (
                f":leftwards_arrow_with_hook: *Revision required*: {head}. Nothing was executed.\n"
                f"{quote(why, 500)}"
            )
        case TerminalFailure(detail=detail):
            return f":x: *Failed*: {head}. The effect did not happen.\n{quote(detail, 300)}"
        case None:
            return None


def _reconcile_buttons(n: int, proposal: Proposal) -> dict[str, Any]:
    short = proposal.id[:12]
    return {
        "type": "actions",
        "block_id": f"reconcile_{n}",
        "elements": [
            button(RECONCILE_SUCCEEDED, f"{short}: it happened", proposal.id, "primary"),
            button(RECONCILE_FAILED, f"{short}: it did not happen", proposal.id, "danger"),
        ],
    }


# --- modals and private answers -------------------------------------------------------------------


def reject_modal(digest: Digest, pending: int) -> dict[str, Any]:
    """The reason for rejecting every pending item; private_metadata is the digest id."""
    return modal(
        DIGEST_REJECT_VIEW,
        "Reject all",
        metadata=digest.id,
        submit="Reject all",
        blocks=[
            section(
                own(
                    f"Reject the *{pending}* pending proposals of {code(digest.operation, 200)} in "
                    "this digest. Nothing of them will be executed."
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
                "label": plain(f"Proposals {start + 1} to {start + len(chunk)}", 2000),
                "element": {
                    "type": "checkboxes",
                    "action_id": DIGEST_ITEMS_INPUT,
                    "options": [_option(p) for p in chunk],
                },
            }
        )
    return modal(
        DIGEST_CHOOSE_VIEW,
        "Choose proposals",
        metadata=digest.id,
        submit="Apply",
        blocks=[
            section(
                own(
                    f"Select pending proposals of {code(digest.operation, 200)}; each one is "
                    "checked and decided on its own."
                )
            ),
            *groups,
            {
                "type": "input",
                "block_id": DIGEST_DECISION_INPUT,
                "label": plain("Decision", 2000),
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
        "text": said(f"{proposal.id[:12]} {proposal.preview.title}", OPTION_TEXT_MAX),
        "value": proposal.id,
    }
    if fields:
        option["description"] = said(fields, OPTION_TEXT_MAX)
    return option


def _choice(value: str) -> dict[str, Any]:
    words = {"approve": "Approve and execute them", "reject": "Reject them"}
    return {"text": plain(words[value], OPTION_TEXT_MAX), "value": value}


def _reason_input(*, optional: bool) -> dict[str, Any]:
    return text_input(
        REASON_INPUT,
        label="Why do you reject them?" if not optional else "Reason (to reject)",
        hint="The agent and the channel will see this reason.",
        most=REASON_MAX,
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
            text += f"\n• *Item {number}* ({clip(inert(title), 80)}): {inert(what)}"
        return own(clip(text, NAMED_TEXT_MAX))
    for reason, count in tally.refused.most_common(5):
        text += f"\n• {count} refused: {with_times(reason)}"
    return own(clip(text, SECTION_MAX))
