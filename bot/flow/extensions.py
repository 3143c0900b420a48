"""Extend: an approver pushes back the expiry of a pending proposal, once, by its rule's
``extend_by``.

The rule is read as the policy is configured *now* (as the approver checks are): a rule that no
longer sets ``extend_by``, or no longer asks, offers no Extend button and refuses the click. The
new expiry is the current one plus ``extend_by``; since a proposal is extended at most once, it
lives at most ``expires_after + extend_by``, which the policy keeps within its MAX_EXPIRY.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from contracts.policy import AskRule, PolicyTable
from store.proposals import Proposal, Status

__all__ = ["ask_rule", "extension_of", "extension_until"]


def ask_rule(policy: PolicyTable, rule_id: str | None) -> AskRule | None:
    """The ask rule with id ``rule_id`` in the policy as configured now, if there is one."""
    for rule in policy.rules:
        if rule.id == rule_id:
            return rule if isinstance(rule, AskRule) else None
    return None


def extension_of(policy: PolicyTable, proposal: Proposal) -> timedelta | None:
    """What an Extend click would add to the expiry; None when the message offers no Extend
    button (not pending, no expiry, extended already, or the rule allows none)."""
    if (
        proposal.status is not Status.PENDING
        or proposal.expires_at is None
        or proposal.extended_by is not None
    ):
        return None
    rule = ask_rule(policy, proposal.rule_id)
    return rule.extend_by if rule is not None else None


def extension_until(policy: PolicyTable, proposal: Proposal, now: datetime) -> datetime | str:
    """The new expiry an Extend click on ``proposal`` asks for, or why it cannot be extended,
    in words for the clicker."""
    if proposal.extended_by is not None:
        at = "" if proposal.extended_at is None else f" at {_iso(proposal.extended_at)}"
        return (
            f"it was already extended once, by {proposal.extended_by}{at}; a proposal can be "
            "extended only once"
        )
    if proposal.expires_at is None:
        return "it has no expiry to extend"
    if proposal.expires_at <= now:
        return f"it expired at {_iso(proposal.expires_at)}"
    rule = ask_rule(policy, proposal.rule_id)
    if rule is None or rule.extend_by is None:
        return (
            f"policy rule {proposal.rule_id!r} does not allow extending its proposals "
            "(it sets no extend_by)"
        )
    return proposal.expires_at + rule.extend_by


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")
