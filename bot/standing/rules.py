"""Standing rules: "Approve, and allow similar for a while", and the calls they approve.

A rule with ``standing`` (contracts/standing.py) offers a third button on its proposals,
**Approve + allow similar…**. An admin's click opens a modal to pick how long; its submission is
checked like an Approve click (``Service.decidable``: separation of duties, approver role,
profile) plus the admin role, then the proposal is approved and the standing rule granted in one
transaction (``StandingStore.claim_and_grant``) and the proposal executes once, as any approval.

Later submissions that the same rule would ask for are approved automatically when an active
standing rule covers them (:func:`cover`, called by ``Service.submit``): the same call but for
the ceiling (and the arguments the rule lets vary), while it has uses left. Everything is read
as the policy is configured *now* and fails closed: a rule that no longer allows standing
rules, a changed ceiling field, a shorter ``max``, fewer ``max_uses``, other varying arguments
or a granter who lost the admin role stops a standing rule from covering anything more.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from pydantic import JsonValue

from bot.render import standing as render_standing
from contracts.canonical import binding_hash
from contracts.durations import format_duration, parse_duration
from contracts.formats import Formats, field_label
from contracts.policy import Ask, AskRule, Auto, Condition, Decision, PolicyTable
from contracts.standing import (
    Grant,
    StandingPolicy,
    bound_arguments,
    covers,
    duration_choices,
    uses_choices,
)
from store.base import Proposal, Transitioned
from store.lifecycle import Status
from store.standing import StandingRule

if TYPE_CHECKING:
    from bot.service import Service

__all__ = [
    "RACE_ATTEMPTS",
    "CoveringRules",
    "StandingGrants",
    "cover",
    "new_standing_rule_id",
    "offer",
    "offers",
    "standing_policy",
]

log = logging.getLogger(__name__)

#: How often a submission is classified again when the database refuses the standing rule that
#: covered it (concurrent calls used it up, or it was revoked, since it was read); each attempt
#: finds the rules with uses left anew, so the last one normally finds none and asks.
RACE_ATTEMPTS = 3


class CoveringRules(Protocol):
    """Where :func:`cover` finds the standing rules that may cover a call: the store's
    (``Store.standing()``), or the simulator's grants (bot/operators/simulate.py)."""

    async def find_covering(
        self,
        *,
        operation: str,
        agent: str,
        rule_id: str,
        value: int | float,
        arguments: Mapping[str, JsonValue],
        requested_by: str,
        now: datetime,
    ) -> Sequence[StandingRule]: ...


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
    now: datetime,
    formats: Formats | None = None,
) -> tuple[Decision, StandingRule | None]:
    """``decision``, or an automatic approval when an active standing rule covers the call;
    its note shows the ceiling through the operation's ``formats``.

    Only an Ask of a rule that allows standing rules (as configured now) can be covered; the
    standing rule must match the rule's current ceiling field, last no longer than its current
    ``max``, and have been granted by someone who still holds one of its admin roles.
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
    for candidate in await rules.find_covering(
        operation=operation,
        agent=agent,
        rule_id=rule.id,
        value=value,
        arguments=arguments,
        requested_by=requested_by,
        now=now,
    ):
        if (
            candidate.ceiling_field == standing.ceiling
            and candidate.expires_at - candidate.created_at <= standing.max
            and candidate.uses < min(candidate.max_uses, standing.max_uses)
            and set(candidate.varying) <= set(standing.varying)
            and candidate.created_by in admins
            and covers(
                candidate,
                operation=operation,
                agent=agent,
                rule_id=rule.id,
                arguments=arguments,
                requested_by=requested_by,
                now=now,
            )
        ):
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
    return decision, None


class StandingGrants:
    """The Slack side of granting: the button's modal and its submission."""

    def __init__(self, service: Service, clock: Callable[[], datetime]) -> None:
        self._service = service
        self._clock = clock

    async def begin(
        self, proposal_id: str, *, user: str, channel: str | None, trigger_id: str
    ) -> None:
        """The button: the Approve checks and the admin role, then the modal."""
        checked = await self._checked(proposal_id, user=user, channel=channel)
        if checked is not None:
            proposal, standing = checked
            modal = render_standing.standing_modal(
                proposal,
                standing,
                duration_choices(standing.max),
                uses_choices(standing.max_uses),
                self._service.publisher.formats_of(proposal.operation),
            )
            await self._service.publisher.open_view(proposal, trigger_id, modal)

    async def grant(
        self, proposal_id: str, *, user: str, duration: str, uses: str | None = None
    ) -> Proposal | None:
        """The modal, submitted: check everything again, approve and grant, execute once.

        ``uses`` is the number of calls chosen in the modal, one of :func:`uses_choices`
        under the rule's ``max_uses`` as configured now (None: that maximum)."""
        checked = await self._checked(proposal_id, user=user, channel=None)
        if checked is None:
            return None
        proposal, standing = checked
        service = self._service
        choices = duration_choices(standing.max)
        try:
            lasting = parse_duration(duration)
        except ValueError:
            lasting = None
        if lasting not in choices:
            allowed = ", ".join(format_duration(choice) for choice in choices)
            why = f"the duration {duration!r} is not one of: {allowed}"
            await self._refuse(proposal, user, None, why)
            return None
        assert lasting is not None
        allowed_uses = uses_choices(standing.max_uses)
        max_uses = standing.max_uses if uses is None else _whole_number(uses)
        if max_uses not in allowed_uses:
            listed = ", ".join(str(choice) for choice in allowed_uses)
            why = f"the number of uses {uses!r} is not one of: {listed}"
            await self._refuse(proposal, user, None, why)
            return None
        assert max_uses is not None
        ceiling = proposal.arguments[standing.ceiling]
        assert isinstance(ceiling, int | float) and proposal.rule_id is not None
        now = self._clock()
        grant = Grant(
            operation=proposal.operation,
            agent=proposal.agent,
            rule_id=proposal.rule_id,
            ceiling_field=standing.ceiling,
            ceiling=ceiling,
            arguments=bound_arguments(proposal.arguments, standing.varying),
            varying=standing.varying,
            max_uses=max_uses,
            created_by=user,
            created_from=proposal.id,
            created_at=now,
            expires_at=now + lasting,
        )
        standing_rule_id = new_standing_rule_id()
        result = await service.store.standing().claim_and_grant(
            proposal.id,
            actor=user,
            now=now,
            binding_hash=binding_hash(
                proposal.operation, proposal.arguments, proposal.preview.model_dump(mode="json")
            ),
            lease_until=service.lease_until(now),
            grant=grant,
            standing_rule_id=standing_rule_id,
        )
        if not isinstance(result, Transitioned):
            await service.not_claimed(result, user=user, channel=None)
            return None
        service.changed(result.proposal)
        formats = service.publisher.formats_of(grant.operation)
        text = render_standing.granted_text(standing_rule_id, grant, formats)
        await service.tell(result.proposal, None, user, text)
        return await service.execute(result.proposal)

    async def _checked(
        self, proposal_id: str, *, user: str, channel: str | None
    ) -> tuple[Proposal, StandingPolicy] | None:
        """The proposal and what may be granted, if ``user`` may approve it and grant one."""
        service = self._service
        proposal = await service.decidable(
            proposal_id, user=user, channel=channel, verb="approve_standing"
        )
        if proposal is None:
            return None
        formats = service.publisher.formats_of(proposal.operation)
        standing = offer(service.settings.policy, proposal, formats)
        if isinstance(standing, str):
            await self._refuse(proposal, user, channel, standing)
            return None
        members = await service.directory.role_members(service.settings.roles)
        if not any(user in members.get(role, frozenset()) for role in standing.admins):
            needed = ", ".join(sorted(standing.admins))
            why = f"allowing similar calls needs the role {needed}, which you do not hold"
            await self._refuse(proposal, user, channel, why)
            return None
        return proposal, standing

    async def _refuse(self, proposal: Proposal, user: str, channel: str | None, why: str) -> None:
        """Tell the clicker why, and audit it; nothing is approved or granted."""
        await self._service.refuse(
            proposal, user=user, channel=channel, verb="approve_standing", why=why
        )


def _whole_number(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 6 else None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
