"""Which outbox entries a transition writes: lifecycle.EFFECTS, applied to one proposal."""

from __future__ import annotations

from store.proposals.lifecycle import EFFECTS, Effect, Status
from store.proposals.records import NewProposal, Proposal

__all__ = ["created_effects", "effects_of", "lane_of"]

_SLACK = {
    Effect.SLACK_POST,
    Effect.SLACK_UPDATE,
    Effect.SLACK_REPLY,
    Effect.SLACK_REMIND,
    Effect.SLACK_REVIEW,
}


def effects_of(proposal: Proposal) -> list[Effect]:
    """The effects of ``proposal`` having just entered its current status.

    Slack effects only for proposals that ask in a channel; callbacks only when the agent gave a
    callback_url. An automatic approval sampled for review is posted to the review channel
    (slack.review), written with its creation: created, not retried (an auto-approved proposal
    enters executing again only by a retry, which moves updated_at).
    """
    created = proposal.updated_at == proposal.created_at
    return _effects(proposal, sampled=created and _sampled_auto_approval(proposal))


def created_effects(new: NewProposal) -> list[Effect]:
    """The effects of ``new`` entering its first status as it is stored: those
    :func:`effects_of` gives its row once written, known before (store/proposals/submissions.py
    writes them in the same statement as the proposal)."""
    return _effects(new, sampled=_sampled_auto_approval(new))


def _effects(proposal: Proposal | NewProposal, *, sampled: bool) -> list[Effect]:
    effects = [
        effect
        for effect in EFFECTS[proposal.status]
        if (effect in _SLACK and proposal.channel is not None)
        or (effect is Effect.CALLBACK and proposal.callback_url is not None)
    ]
    if sampled:
        effects.append(Effect.SLACK_REVIEW)
    return effects


def _sampled_auto_approval(proposal: Proposal | NewProposal) -> bool:
    """Executing (auto-approved) and sampled for review."""
    return (
        proposal.review_sampled
        and proposal.status is Status.EXECUTING
        and proposal.decision == "auto"
    )


def lane_of(effect: Effect) -> str:
    """Entries of one proposal are delivered in order within a lane, lanes independently."""
    return "slack" if effect in _SLACK else "callback"
