"""Which outbox entries a transition writes: lifecycle.EFFECTS, applied to one proposal."""

from __future__ import annotations

from store.proposals.lifecycle import EFFECTS, Effect, Status
from store.proposals.records import Proposal

__all__ = ["effects_of", "lane_of"]

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
    (slack.review), written with its creation.
    """
    effects = [
        effect
        for effect in EFFECTS[proposal.status]
        if (effect in _SLACK and proposal.channel is not None)
        or (effect is Effect.CALLBACK and proposal.callback_url is not None)
    ]
    if _sampled_auto_approval_created(proposal):
        effects.append(Effect.SLACK_REVIEW)
    return effects


def _sampled_auto_approval_created(proposal: Proposal) -> bool:
    """Just created executing (auto-approved) and sampled for review. Created, not retried: an
    auto-approved proposal enters executing again only by a retry, which moves updated_at."""
    return (
        proposal.review_sampled
        and proposal.status is Status.EXECUTING
        and proposal.decision == "auto"
        and proposal.updated_at == proposal.created_at
    )


def lane_of(effect: Effect) -> str:
    """Entries of one proposal are delivered in order within a lane, lanes independently."""
    return "slack" if effect in _SLACK else "callback"
