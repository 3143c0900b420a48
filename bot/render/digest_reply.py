"""The thread reply under a digest: one reply for several items that changed, each item's
outcome in the operation's terms, its rejection or its expiry, and the buttons that resolve an
execution that ended uncertain. Pure, like bot/render/digest.py; the agent's and the target's
words are quoted and inert.

Each item reads as a proposal's own reply reads (bot/render/replies.py): Countersign's verdict
and who decided first, then which item it is (its number in the digest and its title), then
anyone else's words; the reference to quote only where a proposal's own reply has one (an
outcome that is unknown or failed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import JsonValue

from bot.render.actions import RECONCILE_FAILED, RECONCILE_SUCCEEDED
from bot.render.blocks import (
    BLOCKS_MAX,
    Message,
    button,
    clip,
    code,
    compact,
    packed_sections,
    quote,
)
from bot.render.figures import result_fields
from bot.render.inert import Mrkdwn, inert, own
from bot.render.status import approved_by, goes_ahead
from bot.render.words import mention, reference
from contracts.formats import Formats
from contracts.outcomes import NeedsReconciliation, RevisionRequired, Succeeded, TerminalFailure
from store.proposals import Proposal, Status

__all__ = ["digest_reply"]


def digest_reply(
    entries: Sequence[tuple[int, Proposal, Status]],
    *,
    formats_of: Callable[[str], Formats] | None = None,
) -> Message | None:
    """One thread reply for several items that changed: each item (its number in the digest,
    the proposal, and the ``Status`` its outbox entry was written for) with its outcome (its
    result in the operation's terms, ``formats_of``) and who approved it, its rejection and by
    whom, or its expiry. Items whose execution ended uncertain get the buttons that resolve it.
    None when there is nothing to say."""
    lines: list[str] = []
    uncertain: list[tuple[int, Proposal]] = []
    for n, proposal, status in entries:
        formats = formats_of(proposal.operation) if formats_of is not None else {}
        line = _reply_line(n, proposal, status, formats)
        if line is not None:
            lines.append(line)
            if status is Status.NEEDS_RECONCILIATION:
                uncertain.append((n, proposal))
    if not lines:
        return None
    actions = [_reconcile_buttons(n, p) for n, p in uncertain]
    budget = BLOCKS_MAX - 1 - min(len(actions), BLOCKS_MAX // 2)
    blocks = packed_sections(lines, budget=budget)
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


def _reply_line(n: int, proposal: Proposal, status: Status, formats: Formats) -> str | None:
    """Countersign's verdict and who decided, then the item (its number and title), then the
    reason, result or what went wrong."""
    item = f"*Item {n}:* {clip(inert(proposal.preview.title), 150)}"
    if status is Status.REJECTED:
        reason = quote(proposal.decision_note or "(no reason given)", 500)
        by = mention(proposal.decided_by)
        return f":x: *Rejected* by {by}. Nothing was executed.\n{item}\n{reason}"
    if status is Status.EXPIRED:
        return f":hourglass: *Expired*: nobody decided in time. Nothing was executed.\n{item}"
    who = approved_by(proposal)
    if goes_ahead(proposal):
        return (
            f":white_check_mark: *Approved: the agent may go ahead* · {who}. Countersign ran"
            f" nothing.\n{item}"
        )
    match proposal.outcome:
        case Succeeded(result=result):
            shown = "" if result in (None, {}) else f"\n{_result_line(result, formats)}"
            return f":white_check_mark: *Succeeded* · {who}.\n{item}{shown}"
        case NeedsReconciliation(detail=detail):
            return (
                f":warning: *Outcome unknown* · {who}. The effect *may or may not* have happened;"
                f" find out before anyone retries it.\n{item}\n{quote(detail, 300)}\n"
                f"{reference(proposal.id)}"
            )
        case RevisionRequired(reason=why):
            return (
                f":leftwards_arrow_with_hook: *Revision required* · {who}. Nothing was"
                f" executed.\n{item}\n{quote(why, 500)}"
            )
        case TerminalFailure(detail=detail):
            return (
                f":x: *Failed* · {who}. The effect did not happen.\n{item}\n"
                f"{quote(detail, 300)}\n{reference(proposal.id)}"
            )
        case None:
            return None


def _reconcile_buttons(n: int, proposal: Proposal) -> dict[str, Any]:
    return {
        "type": "actions",
        "block_id": f"reconcile_{n}",
        "elements": [
            button(RECONCILE_SUCCEEDED, f"Item {n}: it happened", proposal.id, "primary"),
            button(RECONCILE_FAILED, f"Item {n}: it did not happen", proposal.id, "danger"),
        ],
    }
