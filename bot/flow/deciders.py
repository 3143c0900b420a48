"""May this person in Slack decide this, now: the one rule every decision people make uses.

Approving, rejecting, extending, editing or reconciling a proposal (bot/flow/checks.py, and the
digests' items through it), taking, handing back or resolving an escalation, judging a sampled
automatic approval, revoking a standing rule and delegating to an agent all ask the same: the
person's Slack profile, read now (a real, active account, not a bot or app), from an allowed
workspace (``approvals.allowed_teams``, or else the one the app is installed in), nobody behind
the call (its accountable human, the owners of its agent as configured now, its editors; for a
review, also the granter of the standing rule that approved it), no guest unless allowed, and
holding one of the roles that decide it as configured now (their people and the members of
their user groups). contracts.authority.refusal_reason says why not.

What varies is said by the caller, explicitly: which roles decide (None: no role, for a person
acting on their own behalf), the agent and the people behind the call, whether guests may, and
the words the refusals use. An agent that is no longer configured refuses everyone: its owners
cannot be told apart from anyone else then, so nobody decides what it asked for.
"""

from __future__ import annotations

from collections.abc import Collection

from bot.flow.ports import Directory
from bot.settings import Settings
from contracts.authority import DECIDING, DecisionChain, RefusalWords, refusal_reason

__all__ = ["allowed_teams", "holds", "refusal"]


async def refusal(
    settings: Settings,
    directory: Directory,
    user: str,
    *,
    roles: Collection[str] | None,
    agent: str | None,
    requested_by: str | None = None,
    editors: tuple[str, ...] = (),
    granted_by: str | None = None,
    allow_guests: bool = False,
    words: RefusalWords = DECIDING,
) -> str | None:
    """Why ``user`` may not decide now, or None when they may.

    ``roles``: the roles whose members decide, as configured now (none: nobody may; None: no
    role is asked, only a person's own act, delegating). ``agent``: the agent behind the call,
    whose owners may not decide it (None: no agent stands behind it, as behind a standing rule's
    revocation); ``requested_by`` and ``editors``: the people behind it; ``granted_by``: who
    granted the standing rule that approved it, its approver (a review). ``allow_guests``: the
    rule lets guests decide. ``words``: the refusals in the terms of what is decided."""
    owners: tuple[str, ...] = ()
    if agent is not None:
        configured = settings.agents.get(agent)
        if configured is None:  # its owners are unknown now: fail closed rather than forget them
            return words.unknown_agent.format(agent=agent)
        owners = configured.owners
    return refusal_reason(
        approver=await directory.profile(user),
        chain=DecisionChain(
            requested_by=requested_by,
            agent_owners=owners,
            editors=editors,
            granted_by=granted_by,
        ),
        approver_roles=roles,
        roles=await directory.role_members(settings.roles) if roles else {},
        allowed_teams=await allowed_teams(settings, directory),
        allow_guests=allow_guests,
        words=words,
    )


async def allowed_teams(settings: Settings, directory: Directory) -> tuple[str, ...]:
    """The workspaces whose people may decide: ``approvals.allowed_teams``, or when none is
    configured, the one the app is installed in (none while Slack cannot say, so nobody may:
    fail closed)."""
    if settings.approvals.allowed_teams:
        return settings.approvals.allowed_teams
    home = await directory.home_team()
    return (home,) if home else ()


async def holds(
    settings: Settings, directory: Directory, user: str, roles: Collection[str]
) -> bool:
    """Whether ``user`` holds one of ``roles`` now (their people, their user groups' members)."""
    members = await directory.role_members(settings.roles)
    return any(user in members.get(role, frozenset()) for role in roles)
