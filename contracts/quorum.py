"""N-of-M approval: how many distinct people must approve an ``ask`` rule's proposals.

A rule's ``quorum`` (1 to :data:`MAX_QUORUM`, default 1) must be reachable: its approver roles
must hold at least that many distinct people. Roles that list only Slack user ids are counted
when the policy loads. A role that names a Slack user group (an id starting with ``S``) cannot
be counted then, since the group's members are read from Slack; the running app checks those
rules once it can read the groups (:func:`shortfall`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Final

from contracts.toml_text import as_toml

__all__ = [
    "DEFAULT_QUORUM",
    "MAX_QUORUM",
    "is_user_group_id",
    "quorum_problem",
    "read_quorum",
    "shortfall",
    "statically_known_members",
]

DEFAULT_QUORUM: Final = 1
MAX_QUORUM: Final = 20


def is_user_group_id(member: str) -> bool:
    """A Slack user group id (``S...``): its members are only known by asking Slack."""
    return member.startswith("S")


def read_quorum(value: object) -> tuple[int, str | None]:
    """The quorum given in a rule (None: the default), and what is wrong with it, if anything."""
    if value is None:
        return DEFAULT_QUORUM, None
    if isinstance(value, bool) or not isinstance(value, int):
        return DEFAULT_QUORUM, (
            f"field 'quorum': expected a whole number from 1 to {MAX_QUORUM} (how many distinct "
            f"approvers must approve), got {as_toml(value)}"
        )
    if not 1 <= value <= MAX_QUORUM:
        return DEFAULT_QUORUM, (
            f"field 'quorum' is {value}; it must be from 1 to {MAX_QUORUM} (how many distinct "
            "approvers must approve)"
        )
    return value, None


def statically_known_members(
    approvers: Collection[str], roles: Mapping[str, Collection[str]]
) -> frozenset[str] | None:
    """The distinct people holding ``approvers``, or None when a role names a user group."""
    people: set[str] = set()
    for role in approvers:
        for member in roles.get(role, ()):
            if is_user_group_id(member):
                return None
            people.add(member)
    return frozenset(people)


def quorum_problem(
    quorum: int, approvers: Collection[str], roles: Mapping[str, Collection[str]]
) -> str | None:
    """What is wrong with ``quorum`` for these approver roles, as far as the roles tell now."""
    if quorum <= 1:
        return None
    members = statically_known_members(approvers, roles)
    if members is None or len(members) >= quorum:
        return None
    return (
        f"field 'quorum' is {quorum}, but its approver roles ({', '.join(approvers)}) hold only "
        f"{len(members)} distinct {'person' if len(members) == 1 else 'people'}, so it could "
        "never be reached; lower the quorum or add people to the roles"
    )


def shortfall(
    rule_id: str, quorum: int, approvers: Collection[str], members: Mapping[str, Collection[str]]
) -> str | None:
    """With the roles' members as read now (user groups expanded): why the quorum cannot be
    reached, or None."""
    people = {person for role in approvers for person in members.get(role, ())}
    if quorum <= 1 or len(people) >= quorum:
        return None
    return (
        f"policy rule {rule_id!r}: quorum {quorum} cannot be reached: its approver roles "
        f"({', '.join(approvers)}) hold {len(people)} distinct "
        f"{'person' if len(people) == 1 else 'people'} now, user groups included; its "
        "proposals will expire unless more people join the roles or groups"
    )
