"""The thread replies under a proposal's message: who rejected it and why, that nobody decided
in time, and what execution came to (its result under the operation's labels and in its terms).
Pure functions of the proposal, like bot/render/proposal.py: Countersign's verdict first, then
which proposal it is about, then anyone else's words, quoted inert.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from bot.render.blocks import (
    BLOCKS_MAX,
    Blocks,
    Message,
    code_block,
    compact,
    context,
    field_sections,
    field_text,
    message,
    quote,
    section,
)
from bot.render.figures import result_fields
from bot.render.inert import inert, own
from bot.render.status import GO_AHEAD, goes_ahead
from bot.render.words import mention, people, reference, sentence, when
from contracts.formats import Formats
from contracts.outcomes import NeedsReconciliation, RevisionRequired, Succeeded, TerminalFailure
from store.proposals import Proposal
from store.proposals.approvals import counted

__all__ = ["expiry_reply", "outcome_reply", "rejection_reply"]


def outcome_reply(proposal: Proposal, formats: Formats | None = None) -> Message:
    """The thread reply that reports what execution came to, its result under the operation's
    field labels and in its terms (``formats``); after several approvals, it names every
    approver."""
    reply = _outcome_reply(proposal, formats or {})
    if proposal.quorum > 1 and proposal.decided_by is not None:
        # who decided is Countersign's verdict too: with it, before the proposal's title
        approvers = people([a.approver for a in counted(proposal)])
        first, *rest = reply["blocks"]
        reply["blocks"] = [first, context(own(f"Approved by {approvers}")), *rest][:BLOCKS_MAX]
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
            [section(own(f":white_check_mark: *Approved*.\n{GO_AHEAD}")), _about(title)],
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
                    section(own(f"*What went wrong*\n{quote(sentence(detail), 2000)}")),
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
                    section(own(f"*What went wrong*\n{quote(sentence(detail), 2000)}")),
                    context(reference(proposal.id)),
                ],
            )


def _about(title: str) -> dict[str, Any]:
    """Which proposal a reply is about: its title (inert), after Countersign's verdict."""
    return context(own(f"*Proposal:* {title}"))


def _result_blocks(result: JsonValue, formats: Formats) -> Blocks:
    if result is None or result == {}:
        return [context(own("No result details."))]
    if isinstance(result, dict):
        fields = [field_text(label, value) for label, value in result_fields(result, formats)]
        return field_sections(fields, budget=3)
    return [section(own(f"*Result*\n{code_block(compact(result), 2500)}"))]


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
