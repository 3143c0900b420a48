"""Standing rules: "Approve, and allow similar for a while", granted from Slack.

A rule with ``standing`` (contracts/standing.py) offers a third button on its proposals,
**Approve + allow similar…**. An admin's click opens a modal to pick how long; its submission is
checked like an Approve click (``Service.decidable``: separation of duties, approver role,
profile) plus the admin role, then the proposal is approved and the standing rule granted in one
transaction (``StandingStore.claim_and_grant``) and the proposal executes once, as any approval.
Which calls a standing rule then approves is the flow's rule (bot/flow/standing.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final, TypeVar

from bot.flow import deciders
from bot.flow.standing import new_standing_rule_id, offer
from bot.render import standing as render_standing
from bot.slack.publish import SlackPublisher
from contracts.canonical import binding_hash
from contracts.durations import format_duration, parse_duration
from contracts.standing import (
    Grant,
    StandingPolicy,
    bound_arguments,
    duration_choices,
    uses_choices,
)
from store.base import StoreUnavailable
from store.proposals import Proposal, Transitioned
from store.standing import RuleHistory

if TYPE_CHECKING:
    from bot.flow.service import Service

__all__ = ["StandingGrants"]

log = logging.getLogger(__name__)

#: How long the grant modal waits for the rule's history before opening without it, in
#: seconds: Slack accepts the modal only within 3 seconds of the click (its trigger_id).
HISTORY_WAIT: Final = 1.0


class StandingGrants:
    """The Slack side of granting: the button's modal and its submission."""

    def __init__(
        self, service: Service, clock: Callable[[], datetime], *, publisher: SlackPublisher
    ) -> None:
        self._service = service
        self._clock = clock
        self._publisher = publisher

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
                self._publisher.formats_of(proposal.operation),
                await self._history(proposal),
            )
            await self._publisher.open_view(proposal, trigger_id, modal)

    async def _history(self, proposal: Proposal) -> RuleHistory | None:
        """What people decided lately on the agent's calls this rule asked them about, read
        now; None when the store does not answer within :data:`HISTORY_WAIT` (the modal opens
        without it: it informs the admin, and the grant is checked on submit as always)."""
        if proposal.rule_id is None:
            return None
        try:
            async with asyncio.timeout(HISTORY_WAIT):
                return await self._service.store.standing().rule_history(
                    proposal.agent, proposal.rule_id, now=self._clock()
                )
        except (StoreUnavailable, TimeoutError) as error:
            log.warning(
                "grant modal for %s opens without the rule's history: the store did not "
                "answer in time (%s)",
                proposal.id,
                error or f"not within {HISTORY_WAIT:g} s",
            )
            return None

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
        lasting = _offered(
            _duration(duration), duration, duration_choices(standing.max), "the duration"
        )
        if isinstance(lasting, str):
            await self._refuse(proposal, user, None, lasting)
            return None
        number = standing.max_uses if uses is None else _whole_number(uses)
        max_uses = _offered(number, uses, uses_choices(standing.max_uses), "the number of uses")
        if isinstance(max_uses, str):
            await self._refuse(proposal, user, None, max_uses)
            return None
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
        formats = self._publisher.formats_of(grant.operation)
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
        formats = self._publisher.formats_of(proposal.operation)
        standing = offer(service.settings.policy, proposal, formats)
        if isinstance(standing, str):
            await self._refuse(proposal, user, channel, standing)
            return None
        if not await deciders.holds(service.settings, service.directory, user, standing.admins):
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


#: what a modal offers a choice of: a duration or a number of uses (never text)
Choice = TypeVar("Choice", timedelta, int)


def _offered(
    chosen: Choice | None, given: str | None, choices: Sequence[Choice], what: str
) -> Choice | str:
    """``chosen`` (read from the modal's ``given``) if it is one of the ``choices`` offered,
    else why not, naming ``what`` was chosen and listing the choices as the modal shows them."""
    if chosen is not None and chosen in choices:
        return chosen
    listed = ", ".join(
        format_duration(choice) if isinstance(choice, timedelta) else str(choice)
        for choice in choices
    )
    return f"{what} {given!r} is not one of: {listed}"


def _duration(text: str) -> timedelta | None:
    try:
        return parse_duration(text)
    except ValueError:
        return None


def _whole_number(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 6 else None
