"""Block Kit for a digest's message: one message listing similar proposals.

Pure functions of stored values (and ``now``), like bot/render/proposal.py, built of the same
blocks and words (bot/render/blocks.py, bot/render/words.py): everything from an agent or an
operation's arguments is made inert and clipped, the agent's words are labelled as such, and
buttons carry the digest's opaque id only.

The message is a compact table (bot/render/digest_table.py): the preview fields every item shows
alike, once; the total of the operation's money over the pending items; one line per item,
numbered by Countersign, with only the fields that differ, under bold labels that agent text
cannot produce. Review all… is offered on every digest with pending items
(bot/render/digest_review.py shows each in full). When a pending item is not shown in full here
(a clipped value or reason, rows beyond the message's), the digest says so, offers Show full, and
does not offer Approve all: approving goes through the review. Each item keeps its own line with
its own status; the whole message is rendered again from the current state on every change.

Its thread reply is bot/render/digest_reply.py; the modals its buttons open and what a clicker is
told, bot/render/digest_clicks.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from bot.render import blocks as kit
from bot.render.actions import (
    DIGEST_APPROVE_ALL,
    DIGEST_CHOOSE,
    DIGEST_REJECT_ALL,
    DIGEST_REVIEW,
    DIGEST_SHOW_FULL,
)
from bot.render.blocks import Blocks, Message
from bot.render.digest_table import Table, compact_table, total_text
from bot.render.figures import why_asked
from bot.render.inert import Mrkdwn, inert, own
from bot.render.proposal import preview_label
from bot.render.status import goes_ahead
from bot.render.words import RISK_LABELS, mention, remaining, when
from contracts.base import Risk
from contracts.formats import Formats
from contracts.outcomes import NeedsReconciliation, RevisionRequired, Succeeded, TerminalFailure
from store.digests import Digest
from store.proposals import Proposal, Status
from store.proposals.approvals import counted

__all__ = ["cut_items", "digest_message", "shown_whole"]


#: How many distinct reasons of the policy the head of a digest lists.
NOTES_SHOWN: Final = 3
#: Risk classes as a digest's head lists them, riskiest first.
RISK_ORDER: Final[tuple[Risk, ...]] = ("irreversible", "reversible", "read")


# --- the message ----------------------------------------------------------------------------------


def digest_message(
    digest: Digest, *, now: datetime, formats: Formats | None = None, what: str | None = None
) -> Message:
    """The digest: what its items are (``what``: the operation's description), who asked and
    why, the fields every item shares once, the total where the operation has money
    (``formats``), one numbered line per item with only the fields that differ and its status,
    and while any item is pending the buttons Review all…, Reject all… and Choose… (and Approve
    all when every pending item is shown in full)."""
    items = digest.items
    pending = [p for p in items if p.status is Status.PENDING]
    blocks, rows, budget = _pieces(digest, now, formats, what)
    sections = kit.packed_sections(rows, budget=budget)
    whole = _whole(rows, items, budget) and kit.CLIPPED not in blocks[-1]["text"]["text"]
    blocks += sections
    if not whole:
        blocks += kit.shown_in_part(
            digest.id, action_id=DIGEST_SHOW_FULL, what="some proposals listed above"
        )
    tail: Blocks = [_buttons(digest, len(pending), approve_all=whole)] if pending else []
    text = f"{'Approval needed' if pending else 'Decided'}: {_title(digest, what)}"
    return kit.message(inert(text), [*blocks, *tail])


def cut_items(digest: Digest, *, now: datetime, formats: Formats | None = None) -> list[str]:
    """The ids of the pending items :func:`digest_message` does not show in full: a value or
    the agent's words of its row cut, its row beyond the message's, or what every item shares
    cut; in the digest's order. Choose… approves none of them: Review all… shows them whole."""
    head, rows, budget = _pieces(digest, now, formats, None)
    texts = kit.packed(rows)
    listed = len(rows)
    if len(texts) > budget:  # as kit.packed_sections counts the rows it leaves out
        listed = sum(text.count("\n\n") + 1 for text in texts[: budget - 1])
    shared_cut = kit.CLIPPED in head[-1]["text"]["text"]
    return [
        p.id
        for n, (row, p) in enumerate(zip(rows, digest.items, strict=True))
        if p.status is Status.PENDING and (shared_cut or n >= listed or kit.CLIPPED in row)
    ]


def _pieces(
    digest: Digest, now: datetime, formats: Formats | None, what: str | None
) -> tuple[Blocks, list[Mrkdwn], int]:
    """The digest's head (its last block: what every item shares), one row per item, and how
    many sections the rows may take."""
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
    head: Blocks = [
        kit.header(_title(digest, what)),
        kit.section(own("\n".join([*risks, f"*Why you are asked:* {'; '.join(whys)}"]))),
        kit.context(own(f"{_counts(items)}. Each proposal is checked and executed on its own.")),
        kit.section(own(asked)),
        kit.section(_common_text(table, items, pending, now)),
    ]
    rows = [_row(n, p, table, now) for n, p in enumerate(items, 1)]
    return head, rows, _rows_budget(len(head), bool(pending))


def shown_whole(digest: Digest, *, now: datetime, formats: Formats | None = None) -> bool:
    """Whether :func:`digest_message` shows every pending item in full (then, and only then, it
    offers Approve all; the digest service checks this again before approving all)."""
    shown = digest_message(digest, now=now, formats=formats)
    return any(
        element.get("action_id") == DIGEST_APPROVE_ALL
        for block in shown["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    )


def _common_text(
    table: Table, items: Sequence[Proposal], pending: Sequence[Proposal], now: datetime
) -> Mrkdwn:
    lines: list[str] = []
    if table.common:
        # once none is pending, the facts they share were read at preview, as each one's says
        shown_as = items[0] if not pending else pending[0]
        lines.append("*Same for every item:*")
        lines += [
            f"*{kit.clip(inert(preview_label(shown_as, label)), 60)}*: "
            f"{kit.clip(inert(value), 300)}"
            for label, value in table.common
        ]
    total = total_text(table, len(pending), 0)
    if total is not None and pending:
        lines.append(total)
    expiries = [p.expires_at for p in pending if p.expires_at is not None]
    if expiries:
        first = min(expiries)
        lines.append(f"*First to expire:* {when(first)} ({remaining(first, now)})")
    backup = _backup_text(pending)
    if backup is not None:
        lines.append(backup)
    if table.same_reason:
        lines.append("_Agent's words (unverified), the same for every item:_")
        lines.append(kit.quote(table.same_reason, 1200))
    return own("\n".join(lines) or "_Every item differs in every field; each line below shows it._")


def _backup_text(pending: Sequence[Proposal]) -> str | None:
    """Who else may decide the pending items when nobody has (their rule's ``then``), and from
    when; once that time passed, that they may now (as a proposal's own message says it)."""
    offered = [(p, p.backup_at) for p in pending if p.backup_roles and p.backup_at is not None]
    if not offered:
        return None
    roles = ", ".join(
        f"*{inert(role)}*" for role in dict.fromkeys(r for p, _ in offered for r in p.backup_roles)
    )
    them = "it" if len(pending) == 1 else "them"
    handed = [at for p, at in offered if p.handed_over_at is not None]
    waiting = [at for p, at in offered if p.handed_over_at is None]
    if not waiting:
        return (
            f":busts_in_silhouette: Nobody decided by {when(min(handed))}: "
            f"{roles} may decide {them} too now"
        )
    if not handed:
        return (
            f":busts_in_silhouette: If nobody has decided by {when(min(waiting))}, "
            f"{roles} may decide {them} too"
        )
    return (
        f":busts_in_silhouette: Nobody decided {len(handed):,} of them by {when(min(handed))}: "
        f"{roles} may decide those too now, and the others if nobody has decided them by "
        f"{when(min(waiting))}"
    )


def _rows_budget(head: int, pending: bool) -> int:
    """Sections left for the rows, keeping room for the buttons and the shown-in-part note."""
    return kit.BLOCKS_MAX - head - (1 if pending else 0) - len(kit.shown_in_part(""))


def _whole(rows: Sequence[str], items: Sequence[Proposal], budget: int) -> bool:
    """No pending item's row was cut, and every row fits in the message."""
    if len(kit.packed(rows)) > budget:
        return False
    return not any(
        kit.CLIPPED in row for row, p in zip(rows, items, strict=True) if p.status is Status.PENDING
    )


def _title(digest: Digest, what: str | None) -> str:
    """ "4 proposals: Refund a settled card payment, in full or in part": the items named by
    ``what``, the operation's description (configured, never the agent's: the header comes
    before Countersign's verdict), never by the operation's name."""
    count = f"{len(digest.items):,} proposals"
    named = (what or "").strip().removesuffix(".")
    return f"{count}: {named}" if named else count


def _counts(items: Sequence[Proposal]) -> str:
    counts = Counter(p.status.value.replace("_", " ") for p in items)
    return ", ".join(f"{n:,} {status}" for status, n in sorted(counts.items()))


def _row(n: int, proposal: Proposal, table: Table, now: datetime) -> Mrkdwn:
    """One item on one line: Countersign's number for it, its short id, the fields that differ
    (bold labels are ours; agent text cannot make bold), its status; what had to be left out
    is marked clipped. The agent's words follow, quoted, unless every item has the same."""
    values = {f.label: f.value for f in proposal.preview.fields}
    cells = [  # a decided item's facts were read at preview, as its own message says
        f"*{kit.clip(inert(preview_label(proposal, label)), 40)}* "
        f"{kit.clip(inert(values[label]), 120)}"
        for label in table.columns
        if label in values
    ]
    if table.titles_differ and not cells:
        cells.insert(0, f"*Title* {kit.clip(inert(proposal.preview.title), 150)}")
    line = f"*{n}.* {kit.code(proposal.id[:12], 20)} · " + " · ".join(
        [*cells, _status(proposal, now)]
    )
    if proposal.agent_reason and table.same_reason is None:
        line += "\n_Agent's words (unverified):_\n" + kit.quote(proposal.agent_reason, 200)
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
        reason = kit.clip(inert(proposal.decision_note or "(no reason given)"), 200)
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


def _buttons(digest: Digest, pending: int, *, approve_all: bool = True) -> dict[str, Any]:
    """Approve all (only when ``approve_all``: every pending item is shown in full), Review
    all… (always: every item in full in a modal, approved from there), Reject all… and
    Choose…."""
    approve = kit.button(DIGEST_APPROVE_ALL, f"Approve all ({pending})", digest.id, "primary")
    approve["confirm"] = {
        "title": kit.plain(f"Approve {pending} proposals?", kit.CONFIRM_TITLE_MAX),
        "text": kit.plain(
            "Every pending proposal listed here is checked and executed on its own, with its "
            "own outcome in the thread.",
            kit.CONFIRM_TEXT_MAX,
        ),
        "confirm": kit.plain("Approve all", 30),
        "deny": kit.plain("Cancel", 30),
        "style": "primary",
    }
    review = kit.button(DIGEST_REVIEW, f"Review all ({pending:,})…", digest.id)
    if not approve_all:
        review["style"] = "primary"
    return {
        "type": "actions",
        "block_id": "digest",
        "elements": [
            *([approve] if approve_all else []),
            review,
            kit.button(DIGEST_REJECT_ALL, "Reject all…", digest.id, "danger"),
            kit.button(DIGEST_CHOOSE, "Choose…", digest.id),
        ],
    }
