"""Who may decide a proposal: separation of duties, including by proxy, and roles.

Checked at click time against the configuration and the clicker's Slack profile *as they are
now*. Every check fails closed: an unknown role grants nothing, and a clicker whose profile
could not be read is refused.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from contracts.frozen import Frozen

__all__ = ["ApproverProfile", "DecisionChain", "refusal_reason"]


class ApproverProfile(Frozen):
    """What Slack says about the clicker (users.info), read at click time."""

    user_id: str
    team_id: str | None  #: the clicker's own workspace (another one for Slack Connect users)
    is_bot: bool = False  #: a bot or app user
    deleted: bool = False  #: a deactivated account
    is_guest: bool = False  #: a multi- or single-channel guest


class DecisionChain(Frozen):
    """Everyone behind a proposal, none of whom may decide it."""

    requested_by: str  #: the accountable human
    agent_owners: tuple[str, ...] = ()  #: the people configured as the agent's owners
    editors: tuple[str, ...] = ()  #: anyone who edited the proposal


def refusal_reason(
    *,
    approver: ApproverProfile | None,
    chain: DecisionChain,
    approver_roles: Collection[str],
    roles: Mapping[str, Collection[str]],
    allowed_teams: Collection[str],
    allow_guests: bool = False,
) -> str | None:
    """Why the clicker may not decide, or None when they may.

    ``approver_roles`` are the roles the matched rule names *under the current configuration*
    and ``roles`` maps each role to its members now, so a person removed from a role since the
    proposal was posted can no longer decide it. ``allowed_teams`` are the workspaces whose
    people may decide (people from other workspaces in a shared channel are refused).
    """
    if approver is None or not approver.user_id:
        return "Countersign could not check who you are in Slack right now; try again shortly"
    if approver.is_bot:
        return "bots and apps cannot decide proposals"
    if approver.deleted:
        return "deactivated accounts cannot decide proposals"
    if approver.team_id is None or approver.team_id not in allowed_teams:
        return (
            "people from another workspace cannot decide proposals here "
            f"(your workspace {approver.team_id or 'is unknown'} is not configured)"
        )
    who = approver.user_id
    if who == chain.requested_by:
        return "you are the person accountable for this request; someone else has to decide it"
    if who in chain.agent_owners:
        return "you own the agent that asked; someone outside that chain has to decide it"
    if who in chain.editors:
        return "you edited this proposal; someone else has to decide it"
    if approver.is_guest and not allow_guests:
        return "guests cannot decide proposals under this rule"
    if not approver_roles:
        return "the policy rule names no approver role, so nobody can approve it"
    if not any(who in roles.get(role, ()) for role in approver_roles):
        needed = ", ".join(sorted(approver_roles))
        return f"deciding this needs the role {needed}, which you do not hold"
    return None
