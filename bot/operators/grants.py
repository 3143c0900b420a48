"""Standing rules for ``policy simulate``: the store's, and the operator's "what if a lead
granted this" (``--grant RULE:ARGS``), kept in memory and used up as the replay covers calls.

``--grant small-refunds:agent=support-bot,ceiling=50.00 USD,uses=500,for=7d`` grants, under the
``ask`` rule ``small-refunds`` (which must allow standing rules), a standing rule for the agent
``support-bot`` whose ceiling (the rule's ``standing.ceiling`` argument) is 50.00 USD, for 500
calls and 7 days from the first call's time. ``by=U...`` names the granter, who must hold one
of the rule's ``approvers`` and one of its ``standing.admins`` as configured, as a person
granting one from Slack must (their click approves the call too; default: the first such
configured member); every other ``NAME=VALUE`` binds an argument the rule does not let vary (a
JSON value, or else the text). What covers a call is decided by the server's own code
(bot/flow/standing.py ``cover``), reading these grants instead of the store's.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta

from pydantic import JsonValue

from bot.flow.standing import standing_policy
from bot.settings import Settings, is_user_group
from contracts.durations import parse_duration
from contracts.formats import FieldFormat, parse_money
from contracts.standing import CallToCover
from store.standing import StandingRule

__all__ = ["SimulatedGrants", "parse_grant"]

_KEYS = ("agent", "ceiling", "uses", "for", "by")


class SimulatedGrants:
    """Standing rules in memory, found as the store finds them (``find_covering``), each
    counting its uses through the replay."""

    def __init__(self, rules: Sequence[StandingRule]) -> None:
        self._rules = {rule.id: rule for rule in rules}

    async def find_covering(self, call: CallToCover, *, value: int | float) -> list[StandingRule]:
        found = [
            rule
            for rule in self._rules.values()
            if rule.operation == call.operation
            and rule.agent == call.agent
            and rule.rule_id == call.rule_id
            and rule.ceiling >= value
            and rule.created_by != call.requested_by
            and rule.active(call.now)
        ]
        return sorted(found, key=lambda rule: rule.expires_at, reverse=True)

    def used(self, standing_rule_id: str) -> None:
        """One more call covered by this standing rule."""
        rule = self._rules[standing_rule_id]
        self._rules[standing_rule_id] = rule.model_copy(update={"uses": rule.uses + 1})

    @property
    def rules(self) -> tuple[StandingRule, ...]:
        return tuple(self._rules.values())


def parse_grant(
    text: str,
    settings: Settings,
    *,
    start: datetime,
    number: int,
    requesters: Mapping[str, Collection[str]] | None = None,
) -> StandingRule:
    """The standing rule ``text`` (``RULE:NAME=VALUE,...``) describes, granted at ``start``;
    ValueError naming what is wrong and what was expected. ``requesters`` holds, per agent, the
    people its calls name: without ``by``, the granter is the first admin holding an approver
    role of the rule (who could approve its calls by hand, as a standing rule's granter must,
    bot/flow/intake.py) who requested none of them (a standing rule never covers a call its
    granter requested), else the first."""
    rule_id, colon, rest = text.partition(":")
    if not colon or not rule_id:
        raise ValueError(
            f"{text!r}: expected RULE:agent=NAME,ceiling=VALUE[,uses=N][,for=DURATION][,by=USER]"
        )
    try:
        rule, standing = standing_policy(settings.policy, rule_id)
    except ValueError as error:
        raise ValueError(f"{text!r}: {error}") from None
    given: dict[str, str] = {}
    for part in rest.split(","):
        name, equals, value = part.partition("=")
        if not equals or not name.strip():
            raise ValueError(f"{text!r}: {part!r} is not NAME=VALUE")
        given[name.strip()] = value.strip()
    agent = given.pop("agent", None)
    if agent is None or agent not in settings.agents:
        known = ", ".join(sorted(settings.agents)) or "none"
        raise ValueError(f"{text!r}: 'agent' must name a configured agent ({known}), got {agent!r}")
    operation = settings.registry.get(rule.operation)
    ceiling_text = given.pop("ceiling", None)
    if ceiling_text is None:
        raise ValueError(f"{text!r}: 'ceiling' is missing (the most {standing.ceiling} may be)")
    ceiling = _ceiling(ceiling_text, operation.field_formats().get(standing.ceiling), text)
    uses_text = given.pop("uses", str(standing.max_uses))
    if not uses_text.isdigit() or not 1 <= int(uses_text) <= standing.max_uses:
        raise ValueError(
            f"{text!r}: 'uses' must be a whole number from 1 to {standing.max_uses} "
            f"(the rule's standing.max_uses), got {uses_text!r}"
        )
    lasting = standing.max
    if "for" in given:
        try:
            lasting = parse_duration(given.pop("for"))
        except ValueError as error:
            raise ValueError(f"{text!r}: 'for': {error}") from None
        if not timedelta(0) < lasting <= standing.max:
            raise ValueError(f"{text!r}: 'for' must be longer than zero and at most the rule's max")
    approvers = _members(settings, rule.approvers)
    granters = [member for member in _members(settings, standing.admins) if member in approvers]
    asked = set((requesters or {}).get(agent, ()))
    default = next((g for g in granters if g not in asked), granters[0] if granters else None)
    named = "by" in given
    by = given.pop("by", default)
    if by is None or by not in granters:
        raise ValueError(
            f"{text!r}: 'by' must be a member of one of the rule's approvers "
            f"({', '.join(rule.approvers)}) and of one of its standing.admins "
            f"({', '.join(standing.admins)}), as a person granting one from Slack must be "
            f"(members of both: {', '.join(granters) or 'nobody'}), "
            + (f"got {by!r}" if named else "and none is given")
        )
    bound: dict[str, JsonValue] = {}
    types = operation.argument_types()
    for name, value in given.items():
        if name not in types:
            raise ValueError(
                f"{text!r}: {name!r} is not an argument of {rule.operation!r} "
                f"(it has: {', '.join(sorted(types))}; or one of {', '.join(_KEYS)})"
            )
        if name in standing.varying:
            raise ValueError(f"{text!r}: {name!r} may vary under rule {rule_id!r}; do not bind it")
        try:
            bound[name] = json.loads(value)
        except ValueError:
            bound[name] = value
    unbound = sorted(set(types) - set(standing.varying) - set(bound))
    if unbound:
        raise ValueError(
            f"{text!r}: a standing rule binds every argument rule {rule_id!r} does not let vary; "
            f"give {', '.join(f'{name}=VALUE' for name in unbound)}"
        )
    return StandingRule(
        id=f"sr_what_if_{number + 1}",
        operation=rule.operation,
        agent=agent,
        rule_id=rule.id,
        ceiling_field=standing.ceiling,
        ceiling=ceiling,
        arguments=bound,
        varying=standing.varying,
        max_uses=int(uses_text),
        created_by=by,
        created_from="what-if",
        created_at=start,
        expires_at=start + lasting,
    )


def _members(settings: Settings, roles: Collection[str]) -> list[str]:
    """The people ``roles`` list by user id as configured, sorted (a user group's members are
    not read: it admits nobody, as in the replay)."""
    return sorted(
        {
            member
            for role in roles
            for member in settings.roles.get(role, frozenset())
            if not is_user_group(member)
        }
    )


def _ceiling(value: str, shown: object, text: str) -> int | float:
    if isinstance(shown, FieldFormat) and shown.kind == "money" and not _number(value):
        try:
            amount, _currency = parse_money(value, shown)
        except ValueError as error:
            raise ValueError(f"{text!r}: 'ceiling': {error}") from None
        return amount
    if not _number(value):
        raise ValueError(f"{text!r}: 'ceiling' must be a number, got {value!r}")
    number = float(value)
    return int(number) if number.is_integer() and "." not in value else number


def _number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True
