"""Listing and revoking standing rules: ``/countersign standing`` and its Revoke buttons.

Only admins see them: people holding a role named in some rule's ``standing.admins``. Each sees
the active standing rules they may revoke (those of rules they are an admin of, as configured
now; a standing rule whose policy rule no longer allows standing rules may be revoked by any
admin). A revocation is checked again at click time (the person's Slack profile as for any
decision, and the admin role), is a compare-and-set in the store, and is audited on the
proposal that granted it; a refused one is audited too.
"""

from __future__ import annotations

from typing import Any, Final

from bot.flow import deciders
from bot.render import clicks as render
from bot.render.standing import standing_list_blocks
from bot.standing.deciding import StandingDecisions
from contracts.authority import DECIDING
from contracts.policy import AskRule
from store.revocation import Revoked
from store.standing import StandingRule, StandingRuleNotFound

__all__ = ["StandingAdmin"]

Answer = tuple[str, list[dict[str, Any]]]

#: A revocation's refusals: a decision's, but for the role it needs.
REVOKING: Final = DECIDING.model_copy(
    update={"role": "revoking it needs the role {needed}, which you do not hold"}
)


class StandingAdmin(StandingDecisions):
    """``/countersign standing``'s list, and its Revoke clicks."""

    def _admin_roles(self, rule: StandingRule | None = None) -> frozenset[str]:
        """The roles that may revoke ``rule`` (every admin role when it is None, or when its
        policy rule allows standing rules no longer)."""
        every: set[str] = set()
        for policy_rule in self._service.settings.policy.rules:
            if isinstance(policy_rule, AskRule) and policy_rule.standing is not None:
                if rule is not None and policy_rule.id == rule.rule_id:
                    return frozenset(policy_rule.standing.admins)
                every |= set(policy_rule.standing.admins)
        return frozenset(every)

    async def _holds(self, user: str, roles: frozenset[str]) -> bool:
        return await deciders.holds(self._service.settings, self._service.directory, user, roles)

    async def listing(self, user: str) -> Answer:
        """``/countersign standing``: the active standing rules ``user`` may revoke."""
        roles = self._admin_roles()
        if not roles:
            return _plain("No policy rule allows standing rules.")
        if not await self._holds(user, roles):
            needed = ", ".join(sorted(roles))
            return _plain(f"Only people holding {needed} can list and revoke standing rules.")
        now = self._clock()
        active = await self._service.store.standing().active_standing_rules(now=now, limit=100)
        mine = [rule for rule in active if await self._holds(user, self._admin_roles(rule))]
        return f"{len(mine)} active standing rule(s)", standing_list_blocks(
            mine, now=now, formats_of=self._publisher.formats_of
        )

    async def revoke(self, standing_rule_id: str, *, user: str, channel: str | None) -> bool:
        """A Revoke click: check the clicker, revoke once, tell them (privately)."""
        service = self._service
        standing = service.store.standing()
        try:
            rule = await standing.get_standing_rule(standing_rule_id)
        except StandingRuleNotFound:
            await self._tell(channel, user, render.refusal_text("no such standing rule"))
            return False
        why = await self._refusal(rule, user)
        if why is not None:
            await service.store.record_event(
                rule.created_from,
                actor=user,
                event="revoke_standing_refused",
                detail={"user": user, "reason": why, "standing_rule_id": rule.id},
                now=self._clock(),
            )
            await self._tell(channel, user, render.refusal_text(why))
            return False
        result = await standing.revoke_standing_rule(rule.id, actor=user, now=self._clock())
        if isinstance(result, Revoked):
            await self._tell(
                channel,
                user,
                f":no_entry: Standing rule `{rule.id}` is revoked: similar calls are asked for "
                "again from now on.",
            )
            return True
        await self._tell(channel, user, render.refusal_text(result.reason))
        return False

    async def _refusal(self, rule: StandingRule, user: str) -> str | None:
        """The checks of any decision (bot/flow/deciders.py) with the rule's admin roles.
        Revoking only tightens the policy, so nobody behind the original call is excluded."""
        service = self._service
        return await deciders.refusal(
            service.settings,
            service.directory,
            user,
            roles=self._admin_roles(rule),
            agent=None,
            words=REVOKING,
        )

    async def _tell(self, channel: str | None, user: str, text: str) -> None:
        if channel is not None:
            await self._publisher.tell(None, channel, user, text)


def _plain(text: str) -> Answer:
    return text, [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]
