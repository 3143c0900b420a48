"""Who may decide what, now: the checks every click takes before anything changes.

Every click that decides a proposal, in the flow and in the features (edits, standing rules,
digests), takes the same steps: decidable? (else refuse: tell and audit); the transition in the
store; changed; execute when claimed; tell the clicker. These are the checks and the refusals;
contracts.authority decides, as the policy and roles are configured now.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC

from bot.flow import deciders
from bot.flow.core import FlowCore
from bot.flow.lineage import editors_of
from bot.flow.sweeps import Sweeps
from bot.render import clicks as render
from contracts.authority import DECIDING
from contracts.policy import AskRule
from store.base import StoreUnavailable
from store.proposals import (
    AlreadyDecided,
    ApprovalCounted,
    NotApprovable,
    Proposal,
    ProposalNotFound,
    Status,
)
from store.proposals.approvals import already_approved

__all__ = ["Checks"]

log = logging.getLogger(__name__)

#: How a refusal for want of a deciding role begins (a backup approver is told when they may).
_NEEDS_ROLE = DECIDING.role.split("{", 1)[0]


class Checks:
    """The flow's checks: whether a person may decide a proposal now, and the refusals; over
    the core, and the sweeps (a click on an overdue proposal expires it first)."""

    def __init__(self, core: FlowCore, sweeps: Sweeps) -> None:
        self._core = core
        self._sweeps = sweeps

    async def decidable(
        self,
        proposal_id: str,
        *,
        user: str,
        channel: str | None,
        verb: str,
        expect: Status = Status.PENDING,
        made: Callable[[Proposal], bool] | None = None,
    ) -> Proposal | None:
        """The proposal if ``user`` may decide it now (its status is ``expect``, its operation
        still configured, and contracts.authority allows ``user``); otherwise None, having told
        ``user`` why and audited the refusal as ``<verb>_refused`` (a click on a proposal
        someone decided is told who did, unaudited; one on a withdrawn proposal is refused).
        ``made``: whether the proposal shows this very click's decision made already (by an
        earlier application of the same recorded click); then None, nothing told or audited."""
        try:
            proposal = await self._core.store.get_proposal(proposal_id)
        except ProposalNotFound:
            log.info("click on unknown proposal %r by %s", proposal_id, user)
            await self._core.tell(
                None, channel, user, render.refusal_text("this proposal does not exist")
            )
            return None
        except StoreUnavailable as error:  # not an answer about the proposal: nothing changed
            await self._core.store_away(proposal_id, user=user, channel=channel, error=error)
            return None
        if made is not None and made(proposal):  # the application that made it answered
            return None
        if proposal.status is Status.CANCELLED:
            withdrawn = render.withdrawn_reason(proposal)
            await self.refuse(proposal, user=user, channel=channel, verb=verb, why=withdrawn)
            return None
        if proposal.status is not expect:
            await self._tell_decided(proposal, user=user, channel=channel)
            return None
        why = await self._refusal(proposal, user)
        if why is None and proposal.operation not in self._core.settings.registry:
            why = f"operation {proposal.operation!r} is no longer configured"
        if why is None:
            return proposal
        await self.refuse(proposal, user=user, channel=channel, verb=verb, why=why)
        return None

    async def refuse(
        self, proposal: Proposal, *, user: str, channel: str | None, verb: str, why: str
    ) -> None:
        """Refuse ``user``'s click: audit it as ``<verb>_refused`` with ``why``, then tell them
        ``why`` (privately, see :meth:`FlowCore.tell`). Nothing else changes."""
        await self.audit_refusal(proposal, user=user, verb=verb, why=why)
        await self._core.tell(proposal, channel, user, render.refusal_text(why))

    async def audit_refusal(self, proposal: Proposal, *, user: str, verb: str, why: str) -> None:
        """A refused click, audited as ``<verb>_refused`` (as ``decidable`` audits its own
        refusals), telling nobody: for callers that answer in their own way (digests)."""
        log.info(
            "%s of %s by %s refused: %s",
            verb,
            proposal.id,
            user,
            why,
            extra={
                "event": f"proposal.{verb}_refused",
                "proposal_id": proposal.id,
                "agent": proposal.agent,
                "operation": proposal.operation,
                "user": user,
                "reason": why,
            },
        )
        await self._core.store.record_event(
            proposal.id,
            actor=user,
            event=f"{verb}_refused",
            detail={"user": user, "reason": why},
            now=self._core.now(),
        )

    async def refusal_for(self, proposal: Proposal, user: str) -> str | None:
        """Why ``user`` may not decide ``proposal`` now, or None (App Home lists only these)."""
        if proposal.operation not in self._core.settings.registry:
            return f"operation {proposal.operation!r} is no longer configured"
        return already_approved(proposal, user) or await self._refusal(proposal, user)

    async def item_refusal(self, proposal: Proposal, user: str) -> str | None:
        """Why ``user`` may not decide the pending ``proposal``: the checks ``decidable``
        makes (the operation still configured, contracts.authority), nothing audited."""
        if proposal.operation not in self._core.settings.registry:
            return f"operation {proposal.operation!r} is no longer configured"
        return await self._refusal(proposal, user)

    async def _refusal(self, proposal: Proposal, user: str) -> str | None:
        """Why ``user`` may not decide ``proposal`` now (bot/flow/deciders.py, with its rule's
        deciding roles and guests as configured now, and everyone behind it: its requester,
        its agent's owners, its editors), or None; a backup approver before the hand-over is
        told when they may."""
        rule = self._current_rule(proposal)
        refusal = await deciders.refusal(
            self._core.settings,
            self._core.directory,
            user,
            roles=self.deciding_roles(proposal),
            agent=proposal.agent,
            requested_by=proposal.requested_by,
            editors=await editors_of(self._core.store, proposal),
            allow_guests=rule.allow_guests if rule is not None else False,
        )
        waiting = proposal.backup_at is not None and self._core.now() < proposal.backup_at
        if refusal is None or not waiting or not refusal.startswith(_NEEDS_ROLE):
            return refusal
        backups = self.backup_roles(proposal)
        held = [
            r
            for r in backups
            if await deciders.holds(self._core.settings, self._core.directory, user, (r,))
        ]
        if not held:
            return refusal
        assert proposal.backup_at is not None
        moment = proposal.backup_at.astimezone(UTC).replace(microsecond=0).isoformat()
        return (
            f"you hold {', '.join(held)}, a backup role of this rule: its backup approvers "
            f"may decide it at {moment} if nobody has decided it by then"
        )

    def backup_roles(self, proposal: Proposal) -> tuple[str, ...]:
        """The backup approver roles of the proposal's rule as configured now (``then``)."""
        rule = self._current_rule(proposal)
        if rule is None or rule.then is None:
            return ()
        return rule.then.approvers

    def deciding_roles(self, proposal: Proposal) -> tuple[str, ...]:
        """The roles whose members may decide ``proposal`` now: its rule's approvers as
        configured now, and its backup approvers once nobody has decided by ``backup_at``."""
        rule = self._current_rule(proposal)
        if rule is None:
            return ()
        handed_over = proposal.backup_at is not None and self._core.now() >= proposal.backup_at
        return rule.approvers + (self.backup_roles(proposal) if handed_over else ())

    def _current_rule(self, proposal: Proposal) -> AskRule | None:
        """The proposal's rule as the policy is configured *now*, if it still asks."""
        for rule in self._core.settings.policy.rules:
            if rule.id == proposal.rule_id:
                return rule if isinstance(rule, AskRule) else None
        return None

    async def not_claimed(
        self,
        result: AlreadyDecided | NotApprovable | ApprovalCounted,
        *,
        user: str,
        channel: str | None,
    ) -> None:
        """The store did not make the transition a click asked for: tell the clicker why (already
        decided, or the store's reason; an overdue proposal is expired first)."""
        if isinstance(result, ApprovalCounted):  # only an approval answers so (approve())
            return
        if isinstance(result, AlreadyDecided):
            await self._tell_decided(result.proposal, user=user, channel=channel)
            return
        if (
            result.proposal.expires_at is not None
            and result.proposal.expires_at <= self._core.now()
        ):
            await self._sweeps.expire_due()
        await self._core.tell(result.proposal, channel, user, render.refusal_text(result.reason))

    async def _tell_decided(self, proposal: Proposal, *, user: str, channel: str | None) -> None:
        await self._core.tell(proposal, channel, user, render.already_decided_text(proposal))
