"""``countersign check-config``'s warning about separation of duties that rests on an agent's word.

An agent names the person who asked (``requested_by``) from its ``acts_for``, and that person may
not approve. But when someone the agent may act for can also approve a rule alone (quorum 1), a
prompt-injected agent can name someone else it acts for as the requester, and that person
approves their own agent's request. Read from the file alone (user groups are compared by id:
their members live in Slack); the agent's owners are left out, as they never approve its
proposals. Delegations need no warning: their person is verified by Slack, not named by the
agent.
"""

from __future__ import annotations

from bot.settings import ROLE_PREFIX, AgentSettings, Settings, is_user_group
from contracts.policy import AskRule

__all__ = ["separation_warnings"]

#: People named per warning before "and N more".
NAMED: int = 5


def separation_warnings(settings: Settings) -> list[str]:
    """One sentence per (agent, ask rule) where someone the agent acts for may also approve the
    rule with quorum 1, saying how to fix it."""
    warnings = []
    for agent in settings.agents.values():
        reach = _acts_for(agent, settings)
        for rule in settings.policy.rules:
            if not isinstance(rule, AskRule) or rule.quorum != 1:
                continue
            if rule.agents and agent.name not in rule.agents:
                continue
            approvers = {
                member: role for role in rule.approvers for member in settings.roles.get(role, ())
            }
            both = sorted(m for m in approvers if m in reach and m not in agent.owners)
            if both:
                warnings.append(_sentence(agent, rule, both, reach, approvers))
    return warnings


def _acts_for(agent: AgentSettings, settings: Settings) -> dict[str, str]:
    """Everyone (user ids, user group ids) ``agent`` may name, each with how acts_for names
    them."""
    reach: dict[str, str] = {}
    for entry in agent.acts_for:
        if entry.startswith(ROLE_PREFIX):
            role = entry.removeprefix(ROLE_PREFIX)
            for member in settings.roles.get(role, ()):
                reach.setdefault(member, f"role {role!r}")
        else:
            reach[entry] = "user group" if is_user_group(entry) else "directly"
    return reach


def _sentence(
    agent: AgentSettings,
    rule: AskRule,
    both: list[str],
    reach: dict[str, str],
    approvers: dict[str, str],
) -> str:
    shown = [
        f"{member} ({'user group, ' if is_user_group(member) else ''}acts_for: {reach[member]}; "
        f"approver role {approvers[member]!r})"
        for member in both[:NAMED]
    ]
    more = f" and {len(both) - NAMED} more" if len(both) > NAMED else ""
    via_roles = sorted({reach[m][len("role ") :] for m in both if reach[m].startswith("role ")})
    remove = f"remove them from agents.{agent.name}.acts_for"
    if via_roles:
        remove += f" (or from the role{'s' if len(via_roles) > 1 else ''} {', '.join(via_roles)})"
    return (
        f"agent {agent.name!r} may act for {', '.join(shown)}{more}, who may also approve policy "
        f"rule {rule.id!r} alone (quorum 1): separation of duties then rests on the agent's word "
        f"about who asked. Fix it with quorum = 2 on rule {rule.id!r}, or {remove}."
    )
