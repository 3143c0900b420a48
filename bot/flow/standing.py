"""Standing rules as the flow reads them: which one covers a call, and what a click may grant.

A rule with ``standing`` (contracts/standing.py) lets an admin approve a proposal and allow
similar calls for a while (bot/standing/rules.py grants them from Slack). A later submission
that the same rule would ask for is approved automatically when an active standing rule covers
it (:func:`cover`, called when a submission or an edit is classified, bot/flow/intake.py): the
same call but for the ceiling (and the arguments the rule lets vary), while it has uses left.
Everything is read as the policy is configured *now* and fails closed: a rule that no longer
allows standing rules, a changed ceiling field, a shorter ``max``, fewer ``max_uses``, other
varying arguments or a granter who lost the admin role stops a standing rule from covering
anything more. The granter approves every call it covers, so they are judged, when it would cover
one, as a click of theirs on it would be (the caller's :data:`GranterRefusal`: deactivated in
Slack, configured as an owner of the agent since, no longer holding an approver role of the
rule, ...); a granter who could not decide the call by hand now covers nothing, and the ask's
note says why.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Protocol

from pydantic import JsonValue

from contracts.formats import Formats, field_label
from contracts.policy import Ask, AskRule, Auto, Condition, Decision, PolicyTable
from contracts.standing import CallToCover, StandingPolicy, covers
from store.proposals import Proposal, Status
from store.standing import StandingRule

__all__ = [
    "RACE_ATTEMPTS",
    "CoveringRules",
    "GranterRefusal",
    "cover",
    "new_standing_rule_id",
    "offer",
    "offers",
    "standing_policy",
]

#: How often a submission is classified again when the database refuses the standing rule that
#: covered it (concurrent calls used it up, or it was revoked, since it was read); each attempt
#: finds the rules with uses left anew, so the last one normally finds none and asks.
RACE_ATTEMPTS = 3


class CoveringRules(Protocol):
    """Where :func:`cover` finds the standing rules that may cover a call: the store's
    (``Store.standing()``), or the simulator's grants (bot/operators/simulate.py)."""

    async def find_covering(
        self, call: CallToCover, *, value: int | float
    ) -> Sequence[StandingRule]: ...


#: Why ``granter`` could not decide a call of ``rule`` by hand now, or None when they could: the
#: click's checks (bot/flow/deciders.py) with the rule's approver roles, read when a standing
#: rule of theirs would cover it.
GranterRefusal = Callable[[str, AskRule], Awaitable[str | None]]


def new_standing_rule_id() -> str:
    """128 random bits in hex: opaque, unguessable, safe in a Slack button value."""
    return "sr_" + secrets.token_hex(16)


def standing_policy(policy: PolicyTable, rule_id: str | None) -> tuple[AskRule, StandingPolicy]:
    """The ask rule ``rule_id`` and its standing policy as configured now; ValueError saying
    why not when it has none."""
    rule = next((r for r in policy.rules if r.id == rule_id), None)
    if not isinstance(rule, AskRule):
        raise ValueError(f"policy rule {rule_id!r} no longer asks for approval")
    if rule.standing is None:
        raise ValueError(f"policy rule {rule_id!r} does not allow standing rules")
    return rule, rule.standing


def offers(policy: PolicyTable, proposal: Proposal) -> bool:
    """Whether the proposal's message shows "Approve + allow similar…"."""
    return isinstance(offer(policy, proposal), StandingPolicy)


def offer(
    policy: PolicyTable, proposal: Proposal, formats: Formats | None = None
) -> StandingPolicy | str:
    """What an "Approve + allow similar…" click on ``proposal`` may grant, or why nothing
    (naming its fields by their labels in the operation's ``formats``)."""
    if proposal.status is not Status.PENDING:
        return f"it is {proposal.status.value}, not pending"
    try:
        rule, standing = standing_policy(policy, proposal.rule_id)
    except ValueError as error:
        return str(error)
    if rule.quorum != 1 or proposal.quorum != 1:
        return (
            f"it needs {max(rule.quorum, proposal.quorum)} approvals; a standing rule is granted "
            "with one approval"
        )
    if not _is_number(proposal.arguments.get(standing.ceiling)):
        label = field_label(formats or {}, standing.ceiling)
        return f"its {label} is not a number to bound similar calls by"
    return standing


async def cover(
    rules: CoveringRules,
    policy: PolicyTable,
    decision: Decision,
    *,
    operation: str,
    agent: str,
    arguments: Mapping[str, JsonValue],
    requested_by: str,
    members: Mapping[str, frozenset[str]],
    granter_refusal: GranterRefusal,
    now: datetime,
    formats: Formats | None = None,
    editors: tuple[str, ...] = (),
) -> tuple[Decision, StandingRule | None]:
    """``decision``, or an automatic approval when an active standing rule covers the call;
    its note shows the ceiling through the operation's ``formats``. ``editors``: for an edit,
    its editor and those of the versions it replaces, whose standing rules cover nothing of it
    (none of them may decide it).

    Only an Ask of a rule that allows standing rules (as configured now) can be covered; the
    standing rule must match the rule's current ceiling field, last no longer than its current
    ``max``, and have been granted by someone who still holds one of its admin roles and who
    could decide the call by hand now (``granter_refusal``, asked only of a rule that would
    otherwise cover it); when one could not, ``decision``'s note says why.
    """
    if not isinstance(decision, Ask):
        return decision, None
    try:
        rule, standing = standing_policy(policy, decision.rule_id)
    except ValueError:
        return decision, None
    value = arguments.get(standing.ceiling)
    if rule.quorum != 1 or not _is_number(value):
        return decision, None
    assert isinstance(value, int | float)
    admins = frozenset().union(*(members.get(role, frozenset()) for role in standing.admins))
    call = CallToCover(
        operation=operation,
        agent=agent,
        rule_id=rule.id,
        arguments=arguments,
        requested_by=requested_by,
        now=now,
        editors=editors,
    )
    refused: list[str] = []
    for candidate in await rules.find_covering(call, value=value):
        if (
            candidate.ceiling_field == standing.ceiling
            and candidate.expires_at - candidate.created_at <= standing.max
            and candidate.uses < min(candidate.max_uses, standing.max_uses)
            and set(candidate.varying) <= set(standing.varying)
            and candidate.created_by in admins
            and covers(candidate, call)
        ):
            why = await granter_refusal(candidate.created_by, rule)
            if why is not None:
                refused.append(
                    f"standing rule {candidate.id}, granted by {candidate.created_by}, does not "
                    f"cover it: {why}, so they could not decide it"
                )
                continue
            within = Condition(
                field=standing.ceiling,
                comparison="lte",
                value=candidate.ceiling,
                format=(formats or {}).get(standing.ceiling),
            )
            note = (
                f"standing rule {candidate.id}, granted by {candidate.created_by} until "
                f"{candidate.expires_at.astimezone(UTC).isoformat(timespec='seconds')} under "
                f"rule {rule.id!r}: {within.evaluate(arguments)[1]}, the other arguments as "
                f"approved; use {candidate.uses + 1} of {candidate.max_uses}"
            )
            return Auto(rule_id=rule.id, explanation=note), candidate
    if refused:
        note = "; ".join((decision.explanation, *refused))
        return decision.model_copy(update={"explanation": note}), None
    return decision, None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
