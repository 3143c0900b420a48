"""Quorums that rest on Slack user groups, checked once the running app can read the groups.

A policy rule's quorum is checked when the policy loads, but only against roles that list user
ids: a user group's members are known only by asking Slack. At startup the groups are read
(through the directory, bot/flow/ports.py) and each rule whose approver roles hold fewer people
than its quorum is named in a warning: its proposals could never be approved and would expire.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.flow.ports import Directory
from contracts.policy import AskRule, PolicyTable
from contracts.quorum import shortfall, statically_known_members

__all__ = ["unreachable_quorums"]


async def unreachable_quorums(
    policy: PolicyTable, roles: Mapping[str, frozenset[str]], directory: Directory
) -> list[str]:
    """A sentence for each rule whose quorum its roles, user groups read now, cannot reach."""
    rules = [
        rule
        for rule in policy.rules
        if isinstance(rule, AskRule)
        and rule.quorum > 1
        and statically_known_members(rule.approvers, roles) is None
    ]
    if not rules:
        return []
    members = await directory.role_members(roles)
    problems = [shortfall(rule.id, rule.quorum, rule.approvers, members) for rule in rules]
    return [problem for problem in problems if problem is not None]
