"""Reminders before expiry: when each is due, and who the reminder mentions.

At submission the reminder's due time is fixed from the rule's ``remind_at`` (or the
``[approvals]`` default) and the expiry. The sweeper (bot/app.py) marks due reminders through the
store, which queues a slack.remind; the outbox worker then has the publisher post it in the
proposal's thread, built here at delivery time: it mentions everyone who may still approve, that
is, the members of the rule's approver roles as configured now who pass the same click-time
checks as an Approve click (not the requester, not the agent's owners, role, workspace, no bots
or guests unless allowed), minus anyone who already approved. A user group in a role is
mentioned as the group when at least one of its members may approve.

The items of a digest get one reminder in its thread (bot/digests/outbox.py): it speaks of the
digest's pending items together and mentions whoever may approve one of them (in a batch's
digest requested for several people, each may decide the others' items).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from bot.flow.extensions import ask_rule, extension_of
from bot.flow.ports import Directory
from bot.render.blocks import Message
from bot.render.reminders import digest_reminder_reply, reminder_reply
from bot.settings import Settings, is_user_group
from contracts.policy import Ask, Auto, Deny
from contracts.reminders import RemindAt, remind_time
from store.digests import DigestNotFound
from store.proposals import Proposal, Status
from store.protocol import Store

__all__ = ["Reminders", "due_time"]


def due_time(decision: Auto | Ask | Deny, default: RemindAt, now: datetime) -> datetime | None:
    """When the reminder of a proposal decided ``decision`` at ``now`` is due; None for none
    (only proposals that ask are reminded, and "off" sends none)."""
    if not isinstance(decision, Ask):
        return None
    setting = decision.remind_at if decision.remind_at is not None else default
    return remind_time(setting, created_at=now, expires_at=now + decision.expires_after)


class Deciders(Protocol):
    """What a reminder needs of the flow (bot/flow/service.py): its settings and directory, and
    who may decide a proposal now (bot/flow/checks.py)."""

    settings: Settings
    directory: Directory
    store: Store

    def deciding_roles(self, proposal: Proposal) -> tuple[str, ...]: ...

    async def refusal_for(self, proposal: Proposal, user: str) -> str | None: ...


class Reminders:
    """Builds the reminder the publisher posts for a slack.remind (its ``message`` is the
    ``reminder`` SlackPublisher is built with, bot/app.py)."""

    def __init__(self, service: Deciders, clock: Callable[[], datetime]) -> None:
        self._service = service
        self._clock = clock

    async def message(self, proposal: Proposal) -> Message:
        """The reminder for ``proposal`` as things are now; for an item of a digest, the
        digest's reminder for its pending items."""
        pending = await self._digest_pending(proposal)
        if len(pending) > 1:
            anyone: list[str] = []
            for item in pending:
                anyone += [a for a in await self.who_can_approve(item) if a not in anyone]
            return digest_reminder_reply(pending, now=self._clock(), approvers=anyone)
        return reminder_reply(
            proposal,
            now=self._clock(),
            approvers=await self.who_can_approve(proposal),
            extend_by=extension_of(self._service.settings.policy, proposal),
        )

    async def _digest_pending(self, proposal: Proposal) -> list[Proposal]:
        """The pending items of the digest ``proposal`` is listed in (none when it is not)."""
        if proposal.digest_id is None:
            return []
        try:
            digest = await self._service.store.digests().get_digest(proposal.digest_id)
        except DigestNotFound:
            return []
        return [item for item in digest.items if item.status is Status.PENDING]

    async def who_can_approve(self, proposal: Proposal) -> list[str]:
        """The people (user ids) and user groups (group ids) to mention, in role order."""
        settings = self._service.settings
        rule = ask_rule(settings.policy, proposal.rule_id)
        if rule is None:
            return []
        approved = {approval.approver for approval in proposal.approvals}
        mentions: list[str] = []
        for role in self._service.deciding_roles(proposal):  # backups too, once handed over
            members = settings.roles.get(role, frozenset())
            people = sorted(member for member in members if not is_user_group(member))
            groups = sorted(member for member in members if is_user_group(member))
            for person in people:
                if person not in mentions and await self._may_approve(proposal, person, approved):
                    mentions.append(person)
            for group in groups:
                if group not in mentions and await self._group_may_approve(
                    proposal, group, approved
                ):
                    mentions.append(group)
        return mentions

    async def _may_approve(self, proposal: Proposal, user: str, approved: set[str]) -> bool:
        if user in approved:
            return False
        return await self._service.refusal_for(proposal, user) is None

    async def _group_may_approve(self, proposal: Proposal, group: str, approved: set[str]) -> bool:
        for member in sorted(await self._service.directory.group_members(group)):
            if await self._may_approve(proposal, member, approved):
                return True
        return False
