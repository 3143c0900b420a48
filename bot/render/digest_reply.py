"""The thread reply under a digest: one reply for several items that changed, each item's
outcome in the operation's terms, its rejection or its expiry, and the buttons that resolve an
execution that ended uncertain. Pure, like bot/render/digest.py; the agent's and the target's
words are quoted and inert.
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
from bot.render.status import goes_ahead
from bot.render.words import mention
from contracts.formats import Formats
from contracts.outcomes import NeedsReconciliation, RevisionRequired, Succeeded, TerminalFailure
from store.proposals import Proposal, Status

__all__ = ["digest_reply"]


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
