"""Who may decide a proposal: separation of duties, including by proxy, and roles.

Checked at click time against the configuration and the clicker's Slack profile *as they are
now*. Every check fails closed: an unknown role grants nothing, and a clicker whose profile
could not be read is refused.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Final

from contracts.frozen import Frozen

__all__ = [
    "COVERING",
    "DECIDING",
    "ApproverProfile",
    "DecisionChain",
    "RefusalWords",
    "refusal_reason",
]


class ApproverProfile(Frozen):
    """What Slack says about the clicker (users.info), read at click time."""

    user_id: str
    team_id: str | None  #: the clicker's own workspace (another one for Slack Connect users)
    is_bot: bool = False  #: a bot or app user
    deleted: bool = False  #: a deactivated account
    is_guest: bool = False  #: a multi- or single-channel guest


class DecisionChain(Frozen):
    """Everyone behind a proposal, none of whom may decide it."""

    requested_by: str | None = None  #: the accountable human (None: nobody, or a customer)
    agent_owners: tuple[str, ...] = ()  #: the people configured as the agent's owners
    editors: tuple[str, ...] = ()  #: anyone who edited the proposal
    #: who granted the standing rule that approved the call (None: no standing rule did): the
    #: approver of every call the grant covers, who may not review one of them
    granted_by: str | None = None


class RefusalWords(Frozen):
    """What each refusal says, in the terms of what is decided (the defaults: a proposal).

    Only the words differ between the decisions people make (a proposal, an escalation, a
    delegation, a standing rule's revocation): the checks are the same, in the same order."""

    unreadable: str = (
        "Countersign could not check who you are in Slack right now; try again shortly"
    )
    bot: str = "bots and apps cannot decide proposals"
    deleted: str = "deactivated accounts cannot decide proposals"
    team: str = "people from another workspace cannot decide proposals here"
    #: ``{team}``: the person's workspace id
    workspace: str = "your workspace {team} is not configured"
    #: Slack's profile names no workspace
    workspace_unknown: str = "Slack did not say which workspace you are in"
    requester: str = (
        "you are the person accountable for this request; someone else has to decide it"
    )
    owner: str = "you own the agent that asked; someone outside that chain has to decide it"
    editor: str = "you edited this proposal; someone else has to decide it"
    granter: str = (
        "you granted the standing rule that approved this call, so you approved it; "
        "someone else has to review it"
    )
    guest: str = "guests cannot decide proposals under this rule"
    no_role: str = "the policy rule names no approver role, so nobody can approve it"
    #: ``{needed}``: the roles that decide, comma-separated
    role: str = "deciding this needs the role {needed}, which you do not hold"
    #: ``{agent}``: the agent behind the call, whose owners are unknown now
    unknown_agent: str = (
        "agent {agent!r} is no longer configured, so its owners cannot be told apart from "
        "other approvers; nobody can decide its proposals"
    )


#: A proposal's words (Approve, Reject, Extend, Edit, reconcile, a digest, a review).
DECIDING: Final = RefusalWords()
#: A standing rule's granter, judged as their click would be when their rule would cover a
#: call (they approve every call it covers): said of them, in the ask's note.
COVERING: Final = RefusalWords(
    unreadable="Countersign could not check the granter in Slack",
    bot="the granter is a bot or app",
    deleted="the granter's account is deactivated",
    team="the granter is from a workspace whose people cannot decide proposals here",
    workspace="the granter's workspace {team} is not configured",
    workspace_unknown="Slack did not say which workspace the granter is in",
    requester="the granter is the person accountable for this request",
    owner="the granter owns the agent that asked",
    editor="the granter edited this call",
    guest="the granter is a guest, and guests cannot decide proposals under this rule",
    role="the granter does not hold a role that approves it ({needed})",
)


def refusal_reason(
    *,
    approver: ApproverProfile | None,
    chain: DecisionChain,
    approver_roles: Collection[str] | None,
    roles: Mapping[str, Collection[str]],
    allowed_teams: Collection[str],
    allow_guests: bool = False,
    words: RefusalWords = DECIDING,
) -> str | None:
    """Why the clicker may not decide, or None when they may.

    ``approver_roles`` are the roles the matched rule names *under the current configuration*
    and ``roles`` maps each role to its members now, so a person removed from a role since the
    proposal was posted can no longer decide it; None asks for no role at all (a person acting
    on their own behalf: delegating their own authority), while no roles refuses everyone.
    ``allowed_teams`` are the workspaces whose people may decide (people from other workspaces
    in a shared channel are refused). ``words`` say each refusal in the terms of what is decided.
    """
    if approver is None or not approver.user_id:
        return words.unreadable
    if approver.is_bot:
        return words.bot
    if approver.deleted:
        return words.deleted
    if approver.team_id is None:
        return f"{words.team} ({words.workspace_unknown})"
    if approver.team_id not in allowed_teams:
        return f"{words.team} ({words.workspace.format(team=approver.team_id)})"
    who = approver.user_id
    if chain.requested_by is not None and who == chain.requested_by:
        return words.requester
    if who in chain.agent_owners:
        return words.owner
    if who in chain.editors:
        return words.editor
    if chain.granted_by is not None and who == chain.granted_by:
        return words.granter
    if approver.is_guest and not allow_guests:
        return words.guest
    if approver_roles is None:
        return None
    if not approver_roles:
        return words.no_role
    if not any(who in roles.get(role, ()) for role in approver_roles):
        return words.role.format(needed=", ".join(sorted(approver_roles)))
    return None
