"""Who an agent may name as the person who asked (``requested_by``): verified, never asserted.

``requested_by`` decides who may not approve (separation of duties), feeds the policy's
``requester_roles`` conditions and is mentioned in Slack, so an agent may name only the people it
acts for: its ``acts_for`` (Slack user ids, the members of user groups, the holders of roles, as
they are now), or, without acts_for, its owners. A delegation from Slack
(bot/delegations/commands.py) names its person instead. Anything else is refused before anything is
stored or posted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from bot.settings import ROLE_PREFIX, AgentSettings, is_user_group
from contracts.base import ContractViolation, FieldProblem
from store.delegations import Delegation

__all__ = [
    "Membership",
    "RequesterRefused",
    "check_requester",
    "describe_acts_for",
    "may_act_for",
    "verified_requester",
]


class Membership(Protocol):
    """Who holds a role or belongs to a user group now: Slack's directory for the server
    (bot/slack/directory.py), the configuration alone for ``policy simulate``."""

    async def role_members(
        self, roles: Mapping[str, frozenset[str]]
    ) -> dict[str, frozenset[str]]: ...

    async def group_members(self, group: str) -> frozenset[str]: ...


class RequesterRefused(Exception):
    """The agent may not name this person as the one who asked."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def describe_acts_for(agent: AgentSettings) -> str:
    """Whom ``agent`` may name, in the configuration's terms, for the refusal's message."""
    if not agent.acts_for:
        if not agent.owners:
            return "nobody (it has no acts_for and no owners; only delegations from Slack)"
        return "its owners " + ", ".join(agent.owners)
    parts = []
    for entry in agent.acts_for:
        if entry.startswith(ROLE_PREFIX):
            parts.append(f"holders of role {entry.removeprefix(ROLE_PREFIX)!r}")
        elif is_user_group(entry):
            parts.append(f"members of user group {entry}")
        else:
            parts.append(entry)
    return ", ".join(parts)


async def may_act_for(
    agent: AgentSettings,
    person: str,
    *,
    roles: Mapping[str, frozenset[str]],
    directory: Membership,
) -> bool:
    """Whether ``agent`` may name ``person`` now: one of its user ids, a member of one of its
    user groups (a group Slack will not list admits nobody: fail closed) or a holder of one of
    its roles; its owners without acts_for. Membership is tested entry by entry, the cheapest
    first, without building the union of large groups on every submission."""
    if not agent.acts_for:
        return person in agent.owners
    if person in agent.acts_for:
        return True
    for entry in agent.acts_for:
        if is_user_group(entry) and person in await directory.group_members(entry):
            return True
    named_roles = {e.removeprefix(ROLE_PREFIX) for e in agent.acts_for if e.startswith(ROLE_PREFIX)}
    if named_roles:
        members = await directory.role_members({r: roles.get(r, frozenset()) for r in named_roles})
        return any(person in members.get(role, frozenset()) for role in named_roles)
    return False


async def check_requester(
    agent: AgentSettings,
    requested_by: str,
    *,
    roles: Mapping[str, frozenset[str]],
    directory: Membership,
) -> None:
    """Raise RequesterRefused unless ``agent`` may name ``requested_by``."""
    if await may_act_for(agent, requested_by, roles=roles, directory=directory):
        return
    delegate = (
        f"; a person may also delegate to it from Slack (/countersign delegate {agent.name})"
        if agent.delegation
        else ""
    )
    raise RequesterRefused(
        "requested_by",
        f"agent {agent.name!r} may not act for {requested_by}: it may name "
        f"{describe_acts_for(agent)}{delegate}",
    )


async def verified_requester(
    agent: AgentSettings,
    claimed: str | None,
    delegation: Delegation | None,
    *,
    roles: Mapping[str, frozenset[str]],
    directory: Membership,
) -> str:
    """The person accountable for a submission: a delegation's person (the body may repeat it,
    or leave it out), or else the body's ``requested_by`` if ``agent`` may act for them.
    Raises RequesterRefused (403) or ContractViolation (422, none named)."""
    if delegation is not None:
        if claimed is not None and claimed != delegation.person:
            raise RequesterRefused(
                "requested_by",
                f"this delegation token ({delegation.id}) acts for {delegation.person} only, not "
                f"{claimed}; send requested_by {delegation.person!r} or leave it out",
            )
        return delegation.person
    if claimed is None:
        raise ContractViolation(
            [
                FieldProblem(
                    field="requested_by",
                    message="required: the Slack user id (U... or W...) of the person "
                    f"accountable for this run, one agent {agent.name!r} may act for: "
                    f"{describe_acts_for(agent)}",
                )
            ]
        )
    await check_requester(agent, claimed, roles=roles, directory=directory)
    return claimed
