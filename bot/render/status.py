"""A proposal's status in Countersign's words alone: the word for it ("Approved, executing"),
who decided and when, the state line a decided message shows in place of its buttons (what
came of it: rejected and why, expired, withdrawn, executed and its outcome), and whether an
approved decision lets the agent go ahead. Pure; no value of the agent's but inert, quoted, after
Countersign's own words. The proposal's message, the Home tab, digests, standing rules and the
answers to a late clicker all say a status in these words.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from bot.render.blocks import clip, code, quote
from bot.render.figures import why_asked
from bot.render.inert import Mrkdwn, inert, own
from bot.render.words import mention, people, sentence, when
from contracts.outcomes import (
    Decided,
    NeedsReconciliation,
    Outcome,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)
from store.proposals import Proposal, Status
from store.proposals.approvals import counted

__all__ = ["GO_AHEAD", "approved_by", "decided_line", "goes_ahead", "state_line", "status_word"]


def status_word(proposal: Proposal) -> str:
    """The status of ``proposal`` in a few words ("Approved, executing"), as its message's
    fallback text, the queues and the Home tab say it."""
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


def approved_by(proposal: Proposal) -> Mrkdwn:
    """Who approved ``proposal``, as its message says it: "Approved by @Priya", "Approved by
    @Ana and @Bo (2 of 2)", "Approved automatically by the policy"."""
    if proposal.decided_by is None:
        return own("Approved automatically by the policy")
    if proposal.quorum > 1:
        approvers = people([a.approver for a in counted(proposal)])
        quorum = proposal.quorum
        return own(f"Approved by {approvers} ({quorum} of {quorum})")
    return own(f"Approved by {mention(proposal.decided_by)}")


def _approval(proposal: Proposal) -> Mrkdwn:
    at = f" {when(proposal.decided_at)}" if proposal.decided_at is not None else ""
    if proposal.decided_by is None:
        at = ""
    return own(f":white_check_mark: {approved_by(proposal)}{at}")


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
        return own(f"{_approval(proposal)}.\n{GO_AHEAD}")
    summary = _outcome_summary(proposal.outcome) if proposal.outcome else f"Status: {status.value}"
    return own(f"{_approval(proposal)}.\n{summary}")


#: What the approval of a decision came to: the agent acts, Countersign ran nothing.
GO_AHEAD: Final = (
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
            failed = sentence(clip(inert(detail), 1000))
            return own(f":x: *Failed*: {failed} The effect did not happen.")


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
