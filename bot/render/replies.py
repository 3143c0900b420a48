"""The thread replies under a proposal's message: who rejected it and why, that nobody decided
in time, and what execution came to (its result under the operation's labels and in its terms).
Pure functions of the proposal, like bot/render/proposal.py: Countersign's verdict first, then
which proposal it is about, then anyone else's words, quoted inert.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from bot.render import blocks as kit
from bot.render.blocks import Blocks, Message
from bot.render.figures import result_fields
from bot.render.inert import Mrkdwn, inert, own
from bot.render.status import GO_AHEAD, approved_by, goes_ahead
from bot.render.words import mention, reference, sentence, when
from contracts.formats import Formats
from contracts.outcomes import NeedsReconciliation, RevisionRequired, Succeeded, TerminalFailure
from store.proposals import Proposal

__all__ = ["expiry_reply", "outcome_reply", "rejection_reply"]


def outcome_reply(proposal: Proposal, formats: Formats | None = None) -> Message:
    """The thread reply that reports what execution came to, its result under the operation's
    field labels and in its terms (``formats``), and who approved it when people did (every
    approver, after several), as the message and a digest's reply say it."""
    reply = _outcome_reply(proposal, formats or {})
    if proposal.decided_by is not None:
        # who decided is Countersign's verdict too: with it, before the proposal's title
        first, *rest = reply["blocks"]
        reply["blocks"] = [first, kit.context(approved_by(proposal)), *rest][: kit.BLOCKS_MAX]
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
        return _reply(
            "Approved: the agent may go ahead", f":white_check_mark: *Approved*.\n{GO_AHEAD}", title
        )
    match outcome:
        case Succeeded(result=result):
            return _reply(
                "Succeeded",
                ":white_check_mark: *Succeeded*.",
                title,
                *_result_blocks(result, formats),
            )
        case NeedsReconciliation(detail=detail):
            return _reply(
                "Outcome unknown",
                ":warning: *Outcome unknown*. The effect *may or may not* have happened. Find out"
                " before anyone retries it; it will not be retried automatically.",
                title,
                *_went_wrong(detail, proposal),
            )
        case RevisionRequired(reason=reason):
            return _reply(
                "Revision required",
                ":leftwards_arrow_with_hook: *Revision required*. Nothing was executed: things"
                " changed since the preview was made. The agent must propose again.",
                title,
                kit.section(own(f"*Why*\n{kit.quote(reason, 2000)}")),
            )
        case TerminalFailure(detail=detail):
            return _reply(
                "Failed",
                ":x: *Failed*. The effect did not happen, and retrying the same arguments will"
                " not help.",
                title,
                *_went_wrong(detail, proposal),
            )


def _reply(word: str, verdict: str, title: Mrkdwn, *details: dict[str, Any]) -> Message:
    """An outcome's reply: ``word`` with the title as its fallback text; Countersign's
    ``verdict``, which proposal it is about, then the ``details``."""
    return kit.message(
        own(f"{word}: {title}"), [kit.section(own(verdict)), _about(title), *details]
    )


def _went_wrong(detail: str, proposal: Proposal) -> Blocks:
    """What went wrong, in the words of the target or the operation (quoted, inert), and which
    proposal to look up."""
    return [
        kit.section(own(f"*What went wrong*\n{kit.quote(sentence(detail), 2000)}")),
        kit.context(reference(proposal.id)),
    ]


def _about(title: str) -> dict[str, Any]:
    """Which proposal a reply is about: its title (inert), after Countersign's verdict."""
    return kit.context(own(f"*Proposal:* {title}"))


def _result_blocks(result: JsonValue, formats: Formats) -> Blocks:
    if result is None or result == {}:
        return [kit.context(own("No result details."))]
    if isinstance(result, dict):
        fields = [kit.field_text(label, value) for label, value in result_fields(result, formats)]
        return kit.field_sections(fields, budget=3)
    return [kit.section(own(f"*Result*\n{kit.code_block(kit.compact(result), 2500)}"))]


def rejection_reply(proposal: Proposal) -> Message:
    """The thread reply that says who rejected the proposal, when and why."""
    at = f" {when(proposal.decided_at)}" if proposal.decided_at is not None else ""
    reason = kit.quote(proposal.decision_note or "(no reason given)", 2000)
    return kit.message(
        own(f"Rejected by {mention(proposal.decided_by)}: {inert(proposal.preview.title)}"),
        [
            kit.section(
                own(f":x: *Rejected* by {mention(proposal.decided_by)}{at}. Nothing was executed.")
            ),
            kit.section(own(f"*Reason*\n{reason}")),
        ],
    )


def expiry_reply(proposal: Proposal) -> Message:
    """The thread reply that says nobody decided in time."""
    at = f" {when(proposal.expires_at)}" if proposal.expires_at is not None else ""
    return kit.message(
        own(f"Expired: {inert(proposal.preview.title)}"),
        [
            kit.section(
                own(
                    f":hourglass: *Expired*{at}: nobody decided in time. Nothing was executed;"
                    " the agent has been told it was not approved."
                )
            )
        ],
    )
